/* SPDX-License-Identifier: MIT */
/*
 * test_stock.c - the per-CPU charge stock and mcg_charge / mcg_uncharge
 * (group/stock.c): a charge takes a batch of 64 pages and stocks the rest;
 * charges and uncharges then stay in the stock; up to MCG_GROUP_STOCK_ENTRIES
 * groups stay stocked together, one more evicts one of them (its pages go
 * back); a full entry is returned; drains make usage exact; a removed group
 * leaves every stock; max fails after the reclaim hook and a
 * drain, with max and oom events; FORCE goes through; high calls its hook.
 * The thread is pinned to CPU 0.  Runs again with MCG_RSEQ=0.
 *
 *     root
 *      `- p (max 100 pages in test_max_and_force)
 *          |- s
 *          `- t
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

#include "group/group.h"
#include "test.h"

#define B MCG_GROUP_STOCK_PAGES

static mcg_group_t *p, *s, *t;

static long usage(mcg_group_t *g) { return mcg_page_counter_read(&g->memory); }

/* memory.stat's anon of @g, in pages (derived: usage less the stocked pages). */
static long anon_pages(mcg_group_t *g)
{
	char buf[2048];
	if (mcg_group_read(g, "memory.stat", buf, sizeof(buf)) < 0 || strncmp(buf, "anon ", 5))
		return -1;
	return atol(buf + 5) / MCG_GROUP_PAGE_SIZE;
}

static void setup(void)
{
	REQUIRE(mcg_group_create(NULL, "p", &p) == 0);
	REQUIRE(mcg_group_create(p, "s", &s) == 0);
	REQUIRE(mcg_group_create(p, "t", &t) == 0);
}

static void teardown(void)
{
	mcg_group_drain_stocks();
	CHECK_EQ(usage(mcg_group_root()), 0);
	mcg_group_remove(s), mcg_group_put(s);
	mcg_group_remove(t), mcg_group_put(t);
	mcg_group_remove(p), mcg_group_put(p);
	CHECK_EQ(mcg_group_root()->nr_dying_descendants, 0);
}

static void test_batch_and_fast_path(void)
{
	setup();
	CHECK_EQ(mcg_charge(s, 1, 0), 0);
	CHECK_EQ(usage(s), B); /* a batch */
	CHECK_EQ(usage(p), B);
	CHECK_EQ(mcg_stock_cached(s), B - 1);
	for (int i = 0; i < 1000; i++) {
		CHECK_EQ(mcg_charge(s, 3, 0), 0);
		CHECK_EQ(mcg_uncharge(s, 3), 0);
	}
	CHECK_EQ(usage(s), B); /* never touched the counter */
	CHECK_EQ(anon_pages(s), 1);
	CHECK_EQ(mcg_uncharge(s, 1), 0);
	CHECK_EQ(mcg_stock_cached(s), B);
	CHECK_EQ(mcg_uncharge(s, 0), -EINVAL);
	CHECK_EQ(mcg_charge(s, 0, 0), -EINVAL);
	CHECK_EQ(mcg_charge(s, 1, 0x100), -EINVAL);
	mcg_group_drain_stocks();
	CHECK_EQ(usage(s), 0);
	CHECK_EQ(usage(p), 0);
	CHECK_EQ(mcg_stock_cached(s), 0);
	teardown();
}

/* Groups charged in turn share the stock; one group more evicts one. */
static void test_entries_and_evict(void)
{
	enum { E = MCG_GROUP_STOCK_ENTRIES };
	mcg_group_t *g[E + 1];
	setup();
	for (int i = 0; i <= E; i++) {
		char name[16];
		snprintf(name, sizeof(name), "g%d", i);
		REQUIRE(mcg_group_create(p, name, &g[i]) == 0);
	}
	for (int i = 0; i < E; i++)
		CHECK_EQ(mcg_charge(g[i], 1, 0), 0);
	CHECK_EQ(usage(p), (long)B * E);
	for (int i = 0; i < E; i++) {
		CHECK_EQ(usage(g[i]), B); /* each kept its batch: none returned */
		CHECK_EQ(mcg_stock_cached(g[i]), B - 1);
	}
	for (int r = 0; r < 200; r++) {
		for (int i = 0; i < E; i++)
			CHECK_EQ(mcg_charge(g[i], 2, 0), 0);
		for (int i = 0; i < E; i++)
			CHECK_EQ(mcg_uncharge(g[i], 2), 0);
	}
	CHECK_EQ(usage(p), (long)B * E); /* all in the stock: never touched the counters */
	/* One group more: one of the others is evicted, its 63 pages go back. */
	CHECK_EQ(mcg_charge(g[E], 1, 0), 0);
	CHECK_EQ(mcg_stock_cached(g[E]), B - 1);
	int evicted = 0;
	for (int i = 0; i < E; i++) {
		if (mcg_stock_cached(g[i]) == 0) {
			evicted++;
			CHECK_EQ(usage(g[i]), 1);
		} else {
			CHECK_EQ(mcg_stock_cached(g[i]), B - 1);
		}
	}
	CHECK_EQ(evicted, 1);
	CHECK_EQ(usage(p), (long)B * E + 1);
	/* Uncharges install the evicted group again (evicting another): still exact. */
	for (int i = 0; i <= E; i++)
		CHECK_EQ(mcg_uncharge(g[i], 1), 0);
	long cached = 0;
	for (int i = 0; i <= E; i++)
		cached += mcg_stock_cached(g[i]);
	CHECK_EQ(usage(p), cached); /* nothing in use: usage is the stock */
	CHECK(cached <= (long)MCG_GROUP_STOCK_SLACK_PAGES);
	mcg_group_drain_stocks();
	CHECK_EQ(usage(p), 0);
	for (int i = 0; i <= E; i++) {
		CHECK_EQ(anon_pages(g[i]), 0);
		mcg_group_remove(g[i]), mcg_group_put(g[i]);
	}
	teardown();
}

static void test_overflow(void)
{
	setup();
	CHECK_EQ(mcg_charge(t, 2, 0), 0);
	mcg_group_drain_stocks();
	CHECK_EQ(usage(t), 2);
	CHECK_EQ(mcg_uncharge(t, 2), 0); /* an empty entry takes t with 2 */
	CHECK_EQ(usage(t), 2);
	CHECK_EQ(mcg_stock_cached(t), 2);
	/* large charges bypass the stock */
	CHECK_EQ(mcg_charge(t, B + 10, 0), 0);
	CHECK_EQ(usage(t), B + 12);
	CHECK_EQ(mcg_uncharge(t, B + 10), 0);
	CHECK_EQ(usage(t), 2);
	/* a full stock is returned */
	CHECK_EQ(mcg_charge(t, 30, 0), 0); /* 2 stocked < 30: a batch of 64, 34 more stocked */
	CHECK_EQ(mcg_stock_cached(t), 36);
	CHECK_EQ(mcg_uncharge(t, 30), 0); /* 66 > 64: t's entry restarts with these 30 */
	CHECK_EQ(mcg_stock_cached(t), 30);
	CHECK_EQ(usage(t), 30);
	CHECK_EQ(mcg_charge(t, 34, 0), 0); /* 30 < 34: batch, 30 more stocked */
	CHECK_EQ(mcg_stock_cached(t), 60);
	CHECK_EQ(usage(t), 94);
	CHECK_EQ(mcg_uncharge(t, 4), 0);
	CHECK_EQ(mcg_stock_cached(t), 64); /* full */
	CHECK_EQ(mcg_uncharge(t, 1), 0);   /* overflows: the 64 go back */
	CHECK_EQ(mcg_stock_cached(t), 1);
	CHECK_EQ(usage(t), 30);
	CHECK_EQ(mcg_uncharge(t, 29), 0);
	CHECK_EQ(usage(t), 30);
	CHECK_EQ(anon_pages(t), 0);
	teardown();
}

static mcg_group_t *reclaim_seen;
static unsigned long reclaim_calls;

static unsigned long reclaim_hook(mcg_group_t *over, unsigned long nr, void *arg)
{
	reclaim_seen = over;
	reclaim_calls++;
	return 0;
}

static mcg_group_t *high_seen;
static unsigned long high_calls;

static void high_hook(mcg_group_t *over, unsigned long nr, void *arg)
{
	high_seen = over;
	high_calls++;
}

static void test_max_and_force(void)
{
	setup();
	mcg_page_counter_set_max(&p->memory, 100);
	mcg_group_set_reclaim_hook(reclaim_hook, NULL);
	reclaim_calls = 0;
	CHECK_EQ(mcg_charge(s, 60, 0), 0); /* 64 charged, 4 stocked */
	CHECK_EQ(mcg_charge(t, 36, 0), 0); /* batch fails (128 > 100): just 36 */
	CHECK_EQ(usage(p), 100);           /* s's 4 stay stocked */
	CHECK_EQ(mcg_group_event_read(p, MCG_EVENT_MAX, true), 0); /* the fallback is no event */
	CHECK_EQ(mcg_charge(t, 5, 0), -ENOMEM); /* the drain returns s's 4: still short */
	CHECK(reclaim_seen == p);
	CHECK_EQ(reclaim_calls, 2);
	/* one max event per attempt, as the kernel's try_charge_memcg */
	CHECK_EQ(mcg_group_event_read(p, MCG_EVENT_MAX, true), 2);
	CHECK_EQ(mcg_group_event_read(p, MCG_EVENT_OOM, true), 1);
	CHECK_EQ(mcg_group_event_read(t, MCG_EVENT_MAX, false), 0);
	CHECK_EQ(mcg_group_event_read(mcg_group_root(), MCG_EVENT_MAX, false), 2);
	CHECK_EQ(usage(p), 96);
	CHECK_EQ(mcg_charge(t, 4, MCG_CHARGE_NORECLAIM), 0);
	CHECK_EQ(usage(p), 100);
	CHECK_EQ(mcg_charge(t, 7, MCG_CHARGE_FORCE), 0);
	CHECK_EQ(usage(p), 107);
	CHECK_EQ(mcg_group_stat_local(t, MCG_STAT_CHARGE_FORCED), 1);
	CHECK_EQ(mcg_group_event_read(p, MCG_EVENT_MAX, true), 4);
	CHECK_EQ(mcg_group_event_read(p, MCG_EVENT_OOM, true), 1); /* forced: no oom */
	mcg_uncharge(t, 47);
	mcg_uncharge(s, 60);
	mcg_group_set_reclaim_hook(NULL, NULL);
	teardown();
}

/* Stocked pages block a charge at max: the drain frees them. */
static void test_drain_before_fail(void)
{
	setup();
	mcg_page_counter_set_max(&s->memory, B + B / 2);
	CHECK_EQ(mcg_charge(s, 1, 0), 0); /* 64 charged, 63 stocked */
	CHECK_EQ(mcg_charge(t, 1, 0), 0); /* another entry: s's 63 stay */
	CHECK_EQ(usage(s), B);
	CHECK_EQ(mcg_charge(s, B, 0), 0); /* 63 < 64 stocked; 128 > 96: drain, 65 */
	CHECK_EQ(usage(s), B + 1);
	CHECK_EQ(mcg_stock_cached(s), 0);
	mcg_uncharge(s, B);
	mcg_uncharge(s, 1);
	mcg_uncharge(t, 1);
	teardown();
}

static void test_high_hook(void)
{
	setup();
	mcg_group_set_high_hook(high_hook, NULL);
	mcg_page_counter_set_high(&s->memory, 10);
	high_calls = 0;
	CHECK_EQ(mcg_charge(s, 1, 0), 0); /* batch of 64 > high 10 */
	CHECK_EQ(high_calls, 1);
	CHECK(high_seen == s);
	CHECK_EQ(mcg_group_event_read(s, MCG_EVENT_HIGH, true), 1);
	CHECK_EQ(mcg_group_event_read(p, MCG_EVENT_HIGH, true), 0);
	CHECK_EQ(mcg_group_event_read(p, MCG_EVENT_HIGH, false), 1);
	mcg_uncharge(s, 1);
	mcg_group_set_high_hook(NULL, NULL);
	teardown();
}

static void test_remove_drains(void)
{
	setup();
	mcg_group_t *d;
	REQUIRE(mcg_group_create(p, "d", &d) == 0);
	CHECK_EQ(mcg_charge(d, 1, 0), 0);
	CHECK_EQ(mcg_stock_cached(d), B - 1);
	CHECK_EQ(mcg_group_remove(d), 0);
	CHECK_EQ(mcg_stock_cached(d), 0);
	CHECK_EQ(usage(d), 1);
	/* charging a dying group works but never stocks it */
	CHECK_EQ(mcg_charge(d, 1, 0), 0);
	CHECK_EQ(mcg_stock_cached(d), 0);
	CHECK_EQ(usage(d), 2);
	CHECK_EQ(mcg_uncharge(d, 2), 0);
	CHECK_EQ(usage(d), 0);
	CHECK_EQ(p->nr_dying_descendants, 1);
	mcg_group_put(d);
	CHECK_EQ(p->nr_dying_descendants, 0);
	teardown();
}

static void test_current_group(void)
{
	setup();
	mcg_group_t *prev = mcg_group_enter(s);
	CHECK_EQ(mcg_charge(NULL, 5, 0), 0);
	CHECK_EQ(anon_pages(s), 5);
	CHECK_EQ(mcg_uncharge(NULL, 5), 0);
	mcg_group_leave(prev);
	CHECK_EQ(anon_pages(s), 0);
	teardown();
}

int main(int argc, char **argv)
{
	(void)argc;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	RUN(test_batch_and_fast_path);
	RUN(test_entries_and_evict);
	RUN(test_overflow);
	RUN(test_max_and_force);
	RUN(test_drain_before_fail);
	RUN(test_high_hook);
	RUN(test_remove_drains);
	RUN(test_current_group);
	int rc = test_done();
	if (!getenv("MCG_TEST_LOCKED")) {
		fprintf(stderr, "--- again with MCG_RSEQ=0 (locked path)\n");
		rc = test_merge(rc, test_run_locked(argv));
	}
	return rc;
}
