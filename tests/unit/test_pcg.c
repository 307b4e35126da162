/* SPDX-License-Identifier: MIT */
/*
 * test_pcg.c - a group's page-cache state (pagecache/pcg.c) created on
 * first use with its ancestors': under a fault sweep each attempt either
 * fails cleanly (NULL, the group without one, whatever an ancestor got
 * kept and used by the next attempt) or gives the group's, linked to its
 * parent's; the throttle of a group whose state cannot be made counts its
 * writer in the root's domain.
 */
#include <errno.h>

#include "memcg/debug.h"
#include "memcg/memcg.h"
#include "pagecache/dirty.h"
#include "pagecache/pcg.h"
#include "test.h"

static void test_created_with_ancestors_under_faults(void)
{
	mcg_pcg_init();
	mcg_group_t *a, *b;
	REQUIRE(!mcg_group_create(NULL, "pcg-a", &a));
	REQUIRE(!mcg_group_create(a, "b", &b));
	REQUIRE(!mcg_pcg_peek(a) && !mcg_pcg_peek(b));
	int failed = 0, parent_failed = 0;
	struct mcg_pcg *p = NULL;
	for (unsigned long n = 1; n < 100 && !p; n++) {
		bool parent_had = mcg_pcg_peek(a) != NULL;
		mcg_fault_inject(n, 0);
		p = mcg_pcg_of(b);
		unsigned long hit = mcg_fault_failed();
		mcg_fault_inject(0, 0);
		if (hit) {
			failed++;
			parent_failed += !parent_had && !mcg_pcg_peek(a);
			CHECK(p == NULL);
			CHECK(mcg_pcg_peek(b) == NULL);
		} else {
			CHECK(p != NULL);
		}
	}
	REQUIRE(p);
	CHECK(failed >= 2);        /* the parent's and the child's allocations */
	CHECK(parent_failed >= 1); /* the child's attempt failed in its parent's */
	CHECK(mcg_pcg_peek(b) == p);
	CHECK(p->parent == mcg_pcg_peek(a));
	CHECK(mcg_pcg_peek(a)->parent == mcg_pcg_root());
	CHECK(mcg_pcg_of(b) == p); /* made once */
	mcg_group_remove(b);
	mcg_group_put(b);
	mcg_group_remove(a);
	mcg_group_put(a);
}

/* A writer's group whose state cannot be made (the first allocation
 * fails): the throttle looks at the root's domain, where nothing is dirty. */
static void test_throttle_without_state(void)
{
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "pcg-t", &g));
	uint64_t wait = 7;
	mcg_fault_inject(1, 0);
	int err = mcg_balance_dirty_pages_ratelimited(g, true, &wait);
	unsigned long hit = mcg_fault_failed();
	mcg_fault_inject(0, 0);
	CHECK_EQ(err, 0);
	CHECK_EQ(hit, 1);
	CHECK_EQ(wait, 7);
	CHECK(mcg_pcg_peek(g) == NULL);
	/* No group: the calling thread's (the root here). */
	CHECK_EQ(mcg_balance_dirty_pages_ratelimited(NULL, true, &wait), 0);
	CHECK_EQ(wait, 7);
	mcg_group_remove(g);
	mcg_group_put(g);
}

int main(void)
{
	mcg_options_use_env(0);
	RUN(test_created_with_ancestors_under_faults);
	RUN(test_throttle_without_state);
	return test_done();
}
