/* SPDX-License-Identifier: MIT */
/*
 * test_list.c - the intrusive list (base/list.h): add at either end, delete,
 * move, splice (an empty list spliced changes nothing), iteration with and
 * without deletion.
 */
#include "base/list.h" /* alone: the header stands on its own */
#include "test.h"

struct node {
	int v;
	struct mcg_list link;
};

/* The values of @h in order, as a string of digits. */
static const char *order(struct mcg_list *h)
{
	static char s[32];
	int n = 0;
	mcg_list_for_each (pos, h)
		s[n++] = (char)('0' + mcg_list_entry(pos, struct node, link)->v);
	s[n] = '\0';
	return s;
}

static void test_list_ops(void)
{
	struct mcg_list a = MCG_LIST_INIT(a), b;
	mcg_list_init(&b);
	CHECK(mcg_list_empty(&a) && mcg_list_empty(&b));
	struct node n[6];
	for (int i = 0; i < 6; i++)
		n[i].v = i;
	mcg_list_add_tail(&n[1].link, &a);
	mcg_list_add_tail(&n[2].link, &a);
	mcg_list_add(&n[0].link, &a);
	CHECK(!strcmp(order(&a), "012"));
	mcg_list_del(&n[1].link);
	CHECK(!strcmp(order(&a), "02"));
	mcg_list_add_tail(&n[3].link, &b);
	mcg_list_move(&n[3].link, &a); /* to a's head */
	CHECK(!strcmp(order(&a), "302") && mcg_list_empty(&b));
	mcg_list_move_tail(&n[0].link, &b);
	CHECK(!strcmp(order(&a), "32") && !strcmp(order(&b), "0"));
	mcg_list_splice_tail(&b, &a); /* b's nodes after a's; b empty */
	CHECK(!strcmp(order(&a), "320") && mcg_list_empty(&b));
	mcg_list_splice_tail(&b, &a); /* an empty list: nothing */
	CHECK(!strcmp(order(&a), "320") && mcg_list_empty(&b));
	mcg_list_for_each_safe (pos, tmp, &a)
		if (mcg_list_entry(pos, struct node, link)->v == 2)
			mcg_list_del(pos);
	CHECK(!strcmp(order(&a), "30"));
}

int main(void)
{
	RUN(test_list_ops);
	return test_done();
}
