/* SPDX-License-Identifier: MIT */
/*
 * test_page_counter.c - hierarchical page counters (group/page_counter.c):
 * charge at every level, try_charge reporting the failing ancestor with
 * nothing left charged, failcnt, watermark, forced charge, margin, the
 * propagated protected usage (children_min_usage / children_low_usage), and
 * charges and uncharges of the levels below an ancestor only (_upto).
 *
 *     root (unlimited)
 *      `- a (max 100)
 *          |- b (max 60)
 *          `- c (unlimited)
 */
#include <pthread.h>

#include "group/page_counter.h"
#include "test.h"

static struct mcg_page_counter root, a, b, c;

static void setup(void)
{
	mcg_page_counter_init(&root, NULL);
	mcg_page_counter_init(&a, &root);
	mcg_page_counter_init(&b, &a);
	mcg_page_counter_init(&c, &a);
	mcg_page_counter_set_max(&a, 100);
	mcg_page_counter_set_max(&b, 60);
}

static void test_charge_hierarchy(void)
{
	setup();
	struct mcg_page_counter *fail = NULL;
	CHECK(mcg_page_counter_try_charge(&b, 50, &fail));
	CHECK(mcg_page_counter_try_charge(&c, 30, &fail));
	CHECK_EQ(mcg_page_counter_read(&b), 50);
	CHECK_EQ(mcg_page_counter_read(&c), 30);
	CHECK_EQ(mcg_page_counter_read(&a), 80);
	CHECK_EQ(mcg_page_counter_read(&root), 80);
	/* b's own limit */
	CHECK(!mcg_page_counter_try_charge(&b, 11, &fail));
	CHECK(fail == &b);
	CHECK_EQ(mcg_page_counter_get(&b, failcnt), 1);
	/* a's limit, through c: c's charge was backed out */
	fail = NULL;
	CHECK(!mcg_page_counter_try_charge(&c, 21, &fail));
	CHECK(fail == &a);
	CHECK_EQ(mcg_page_counter_get(&a, failcnt), 1);
	CHECK_EQ(mcg_page_counter_get(&c, failcnt), 0);
	CHECK_EQ(mcg_page_counter_read(&c), 30);
	CHECK_EQ(mcg_page_counter_read(&a), 80);
	CHECK_EQ(mcg_page_counter_read(&root), 80);
	CHECK_EQ(mcg_page_counter_margin(&a), 20);
	CHECK_EQ(mcg_page_counter_margin(&b), 10);
	CHECK(mcg_page_counter_try_charge(&c, 20, &fail)); /* exactly to max */
	CHECK_EQ(mcg_page_counter_margin(&a), 0);
	/* forced: over max */
	mcg_page_counter_charge(&c, 5);
	CHECK_EQ(mcg_page_counter_read(&a), 105);
	CHECK_EQ(mcg_page_counter_margin(&a), 0);
	CHECK_EQ(mcg_page_counter_get(&a, watermark), 105);
	mcg_page_counter_uncharge(&c, 55);
	mcg_page_counter_uncharge(&b, 50);
	CHECK_EQ(mcg_page_counter_read(&a), 0);
	CHECK_EQ(mcg_page_counter_read(&root), 0);
	CHECK_EQ(mcg_page_counter_get(&a, watermark), 105); /* peak stays */
	CHECK_EQ(mcg_page_counter_get(&b, watermark), 50);
	CHECK_EQ(mcg_page_counter_get(&c, watermark), 55);
}

/* The levels below @stop only: the charge stock's charges through an ancestor's entry. */
static void test_upto(void)
{
	setup();
	struct mcg_page_counter *fail = NULL;
	CHECK(mcg_page_counter_try_charge_upto(&b, &a, 40, &fail));
	CHECK_EQ(mcg_page_counter_read(&b), 40);
	CHECK_EQ(mcg_page_counter_read(&a), 0); /* stop is excluded */
	CHECK_EQ(mcg_page_counter_read(&root), 0);
	CHECK_EQ(mcg_page_counter_get(&b, watermark), 40);
	/* b's max still holds; a's does not count (a is not charged) */
	CHECK(!mcg_page_counter_try_charge_upto(&b, &a, 21, &fail));
	CHECK(fail == &b);
	CHECK_EQ(mcg_page_counter_get(&b, failcnt), 1);
	CHECK_EQ(mcg_page_counter_read(&b), 40);
	mcg_page_counter_charge(&c, 95); /* a at 95 of 100: b's 20 more fit below a */
	CHECK(mcg_page_counter_try_charge_upto(&b, &a, 20, &fail));
	CHECK_EQ(mcg_page_counter_read(&b), 60);
	CHECK_EQ(mcg_page_counter_read(&a), 95);
	/* up to root: b and a, not root; a's max now counts */
	CHECK(!mcg_page_counter_try_charge_upto(&c, &root, 6, &fail));
	CHECK(fail == &a);
	CHECK_EQ(mcg_page_counter_read(&c), 95); /* backed out */
	CHECK(mcg_page_counter_try_charge_upto(&c, &root, 5, &fail));
	CHECK_EQ(mcg_page_counter_read(&a), 100);
	CHECK_EQ(mcg_page_counter_read(&root), 95);
	/* NULL: every level, as mcg_page_counter_try_charge */
	CHECK(!mcg_page_counter_try_charge_upto(&c, NULL, 1, &fail));
	CHECK(fail == &a);
	mcg_page_counter_uncharge_upto(&c, &root, 5);
	CHECK_EQ(mcg_page_counter_read(&c), 95);
	CHECK_EQ(mcg_page_counter_read(&a), 95);
	CHECK_EQ(mcg_page_counter_read(&root), 95);
	mcg_page_counter_uncharge_upto(&b, &a, 60);
	CHECK_EQ(mcg_page_counter_read(&b), 0);
	CHECK_EQ(mcg_page_counter_read(&a), 95);
	mcg_page_counter_uncharge_upto(&c, &c, 95); /* stop == c: nothing */
	CHECK_EQ(mcg_page_counter_read(&c), 95);
	mcg_page_counter_uncharge_upto(&c, NULL, 95);
	CHECK_EQ(mcg_page_counter_read(&c), 0);
	CHECK_EQ(mcg_page_counter_read(&a), 0);
	CHECK_EQ(mcg_page_counter_read(&root), 0);
}

static void test_set_max_below_usage(void)
{
	setup();
	struct mcg_page_counter *fail;
	CHECK(mcg_page_counter_try_charge(&c, 40, &fail));
	mcg_page_counter_set_max(&c, 10);
	CHECK_EQ(mcg_page_counter_read(&c), 40); /* usage stays; reclaim's job */
	CHECK(!mcg_page_counter_try_charge(&c, 1, &fail));
	CHECK(fail == &c);
	mcg_page_counter_uncharge(&c, 31);
	CHECK(mcg_page_counter_try_charge(&c, 1, &fail));
	mcg_page_counter_uncharge(&c, 10);
	CHECK_EQ(mcg_page_counter_read(&root), 0);
}

static void test_protected_usage(void)
{
	setup();
	struct mcg_page_counter *fail;
	mcg_page_counter_set_min(&b, 20);
	mcg_page_counter_set_low(&c, 30);
	CHECK_EQ(mcg_page_counter_get(&a, children_min_usage), 0);
	CHECK(mcg_page_counter_try_charge(&b, 10, &fail));
	CHECK_EQ(mcg_page_counter_get(&b, min_usage), 10);
	CHECK_EQ(mcg_page_counter_get(&a, children_min_usage), 10);
	CHECK(mcg_page_counter_try_charge(&b, 25, &fail));
	CHECK_EQ(mcg_page_counter_get(&a, children_min_usage), 20); /* capped at min */
	CHECK(mcg_page_counter_try_charge(&c, 40, &fail));
	CHECK_EQ(mcg_page_counter_get(&a, children_low_usage), 30);
	CHECK_EQ(mcg_page_counter_get(&a, children_min_usage), 20);
	mcg_page_counter_set_min(&b, 5); /* lowering min republishes */
	CHECK_EQ(mcg_page_counter_get(&a, children_min_usage), 5);
	mcg_page_counter_uncharge(&c, 35);
	CHECK_EQ(mcg_page_counter_get(&a, children_low_usage), 5);
	mcg_page_counter_uncharge(&c, 5);
	mcg_page_counter_uncharge(&b, 35);
	CHECK_EQ(mcg_page_counter_get(&a, children_min_usage), 0);
	CHECK_EQ(mcg_page_counter_get(&a, children_low_usage), 0);
}

/* Racing try_charges near max: never above max, exact at the end. */
static void *racer(void *arg)
{
	struct mcg_page_counter *fail;
	long held = 0;
	for (int i = 0; i < 200000; i++) {
		if ((i & 1) == 0 && mcg_page_counter_try_charge(arg, 3, &fail))
			held += 3;
		if ((i & 1) == 1 && held) {
			mcg_page_counter_uncharge(arg, 3);
			held -= 3;
		}
		CHECK(mcg_page_counter_read(&a) <= 100);
	}
	if (held)
		mcg_page_counter_uncharge(arg, held);
	return NULL;
}

static void test_racing_try_charge(void)
{
	setup();
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, racer, i & 1 ? &b : &c);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(mcg_page_counter_read(&a), 0);
	CHECK_EQ(mcg_page_counter_read(&root), 0);
	CHECK(mcg_page_counter_get(&a, watermark) <= 100);
}

int main(void)
{
	RUN(test_charge_hierarchy);
	RUN(test_upto);
	RUN(test_set_max_below_usage);
	RUN(test_protected_usage);
	RUN(test_racing_try_charge);
	return test_done();
}
