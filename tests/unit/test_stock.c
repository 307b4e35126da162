/* SPDX-License-Identifier: MIT */
/*
 * test_stock.c - the per-CPU charge stock and mcg_charge / mcg_uncharge
 * (group/stock.c): a charge takes a batch of 64 pages and stocks the rest;
 * charges and uncharges then stay in the stock; up to MCG_GROUP_STOCK_ENTRIES
 * groups stay stocked together; a full entry keeps what is given back and
 * returns its pages; drains make usage exact; a removed group leaves every
 * stock; max fails after the reclaim hook and a drain, with max and oom
 * events; FORCE goes through; high calls its hook.
 *
 * The miss policy, step by step with the numbers worked out by hand: with
 * no entry of its own and none empty, a charge takes only its pages from
 * the counters, or goes through its parent's entry (its own counter takes
 * them, the entry gives them); one such miss in MCG_GROUP_STOCK_EVICT_EVERY
 * evicts the next entry round robin - for the parent when it has no entry,
 * else for the group, never the parent's; an uncharge never evicts.  Limits
 * and high at the levels below the parent's entry, removed groups, and at
 * every step usage = pages in use + pages stocked, per group and subtree.
 * The policy tests run on fresh threads (the eviction count and the
 * round-robin victim are per thread, starting at 0).
 * The thread is pinned to CPU 0.  Runs again with MCG_RSEQ=0.
 *
 *     root
 *      `- p (max 100 pages in test_max_and_force)
 *          |- s
 *          |- t
 *          `- the policy tests' groups
 */
#include <errno.h>
#include <pthread.h>
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

static mcg_group_t *reclaim_seen, *high_seen;
static unsigned long reclaim_calls, high_calls;
static unsigned long reclaim_hook(mcg_group_t *over, unsigned long nr, void *arg);
static void high_hook(mcg_group_t *over, unsigned long nr, void *arg);

/* Run @fn on a fresh thread (pinned to CPU 0, as this one): its per-thread
 * eviction count and round-robin victim start at 0. */
static void *thread_main(void *arg)
{
	((void (*)(void))arg)();
	return NULL;
}

static void on_fresh_thread(void (*fn)(void))
{
	pthread_t th;
	REQUIRE(pthread_create(&th, NULL, thread_main, (void *)fn) == 0);
	pthread_join(th, NULL);
}

#define K ((int)MCG_GROUP_STOCK_EVICT_EVERY)
_Static_assert(MCG_GROUP_STOCK_EVICT_EVERY == 64 && MCG_GROUP_STOCK_ENTRIES == 7,
               "the policy tests' numbers are worked out for these");
#define E ((int)MCG_GROUP_STOCK_ENTRIES)

/* The policy tests' groups, and the pages each has in use. */
#define NG 16
static mcg_group_t *g[NG];
static long inuse[NG];

static void make_groups(mcg_group_t *parent, int n)
{
	for (int i = 0; i < n; i++) {
		char name[16];
		snprintf(name, sizeof(name), "g%d", i);
		REQUIRE(mcg_group_create(parent, name, &g[i]) == 0);
		inuse[i] = 0;
	}
}

static void remove_groups(int n)
{
	for (int i = 0; i < n; i++)
		mcg_group_remove(g[i]), mcg_group_put(g[i]);
}

static void charge(int i, unsigned long n)
{
	CHECK_EQ(mcg_charge(g[i], n, 0), 0);
	inuse[i] += (long)n;
}

static void uncharge(int i, unsigned long n)
{
	CHECK_EQ(mcg_uncharge(g[i], n), 0);
	inuse[i] -= (long)n;
}

/*
 * Exact at every step: each group's usage is its pages in use and stocked;
 * @parent's, its subtree's in use and what the stock holds for it and its
 * descendants; no entry above 64 pages, the stock within its slack.
 */
static void check_exact(mcg_group_t *parent, int n, int line)
{
	long all = 0, stocked = mcg_stock_cached(parent);
	for (int i = 0; i < n; i++) {
		long c = mcg_stock_cached(g[i]);
		if (usage(g[i]) != inuse[i] + c || c > (long)B) {
			fprintf(stderr, "line %d: g%d usage %ld, in use %ld, stocked %ld\n", line,
			        i, usage(g[i]), inuse[i], c);
			CHECK(0);
		}
		all += inuse[i];
		stocked += c;
	}
	CHECK(mcg_stock_cached(parent) <= (long)B);
	CHECK(stocked <= (long)MCG_GROUP_STOCK_SLACK_PAGES);
	if (usage(parent) != all + mcg_stock_cached_subtree(parent)) {
		fprintf(stderr, "line %d: parent usage %ld, in use %ld, stocked %ld\n", line,
		        usage(parent), all, mcg_stock_cached_subtree(parent));
		CHECK(0);
	}
}
#define EXACT(parent, n) check_exact(parent, n, __LINE__)

/* Up to 7 groups charged in turn share the stock and never touch the counters. */
static void test_entries(void)
{
	setup();
	make_groups(p, E);
	for (int i = 0; i < E; i++)
		charge(i, 1);
	CHECK_EQ(usage(p), (long)B * E);
	for (int i = 0; i < E; i++) {
		CHECK_EQ(usage(g[i]), B); /* each kept its batch: none returned */
		CHECK_EQ(mcg_stock_cached(g[i]), B - 1);
	}
	for (int r = 0; r < 200; r++) {
		for (int i = 0; i < E; i++)
			charge(i, 2);
		for (int i = 0; i < E; i++)
			uncharge(i, 2);
	}
	CHECK_EQ(usage(p), (long)B * E); /* all in the stock: never touched the counters */
	for (int i = 0; i < E; i++)
		uncharge(i, 1);
	EXACT(p, E);
	mcg_group_drain_stocks();
	CHECK_EQ(usage(p), 0);
	for (int i = 0; i < E; i++)
		CHECK_EQ(anon_pages(g[i]), 0);
	remove_groups(E);
	teardown();
}

/*
 * The miss policy, on a fresh thread.  p's children g0..g14; entries are
 * numbered 0..6 on CPU 0.
 */
static void miss_policy(void)
{
	setup();
	make_groups(p, 15);
	/* 1. Empty entries: g0..g6 take entries 0..6, a batch each. */
	for (int i = 0; i < E; i++)
		charge(i, 1);
	CHECK_EQ(usage(p), 448);
	CHECK_EQ(mcg_stock_cached(g[6]), 63);
	/* 2. g7: no entry, none empty, none for p: the counters, 1 page each
	 * time, nothing evicted (misses 1..K-1). */
	for (int k = 1; k < K; k++)
		charge(7, 1);
	CHECK_EQ(usage(g[7]), K - 1);
	CHECK_EQ(mcg_stock_cached(g[7]), 0);
	CHECK_EQ(usage(p), 448 + K - 1);
	for (int i = 0; i < E; i++)
		CHECK_EQ(mcg_stock_cached(g[i]), 63);
	/* 3. Uncharges never evict (nor count as misses): g7's page goes to the
	 * counters; g0's to its entry, which is then full. */
	uncharge(7, 1);
	CHECK_EQ(usage(g[7]), K - 2);
	uncharge(0, 1);
	CHECK_EQ(mcg_stock_cached(g[0]), 64);
	CHECK_EQ(usage(g[0]), 64);
	for (int i = 1; i < E; i++)
		CHECK_EQ(mcg_stock_cached(g[i]), 63);
	EXACT(p, 15);
	/* 4. Miss K evicts entry 0 (g0's 64 pages back) for p, with a batch of
	 * 64 at p: g7's own counter takes its page, p's entry the other 63. */
	charge(7, 1);
	CHECK_EQ(mcg_stock_cached(g[0]), 0);
	CHECK_EQ(usage(g[0]), 0);
	CHECK_EQ(mcg_stock_cached(p), 63);
	CHECK_EQ(usage(g[7]), K - 1);
	CHECK_EQ(usage(p), 510); /* 448 + 62 - 64 (g0) + 64 (the batch) */
	for (int i = 1; i < E; i++)
		CHECK_EQ(mcg_stock_cached(g[i]), 63);
	EXACT(p, 15);
	/* 5. g0 charges through p's entry: g0's counter, not p's. */
	charge(0, 2);
	CHECK_EQ(usage(g[0]), 2);
	CHECK_EQ(mcg_stock_cached(p), 61);
	CHECK_EQ(usage(p), 510);
	/* 6. ... and gives back through it. */
	uncharge(0, 2);
	CHECK_EQ(usage(g[0]), 0);
	CHECK_EQ(mcg_stock_cached(p), 63);
	CHECK_EQ(usage(p), 510);
	/* 7. p's entry full: it keeps what comes, its 64 go back. */
	uncharge(7, 1);
	CHECK_EQ(mcg_stock_cached(p), 64);
	uncharge(7, 3);
	CHECK_EQ(mcg_stock_cached(p), 3);
	CHECK_EQ(usage(g[7]), K - 5);
	CHECK_EQ(usage(p), 446);
	EXACT(p, 15);
	/* 8. Too few in p's entry (3 < 5): a batch of 64 at p; 62 left. */
	charge(7, 5);
	CHECK_EQ(mcg_stock_cached(p), 62);
	CHECK_EQ(usage(g[7]), K);
	CHECK_EQ(usage(p), 510);
	EXACT(p, 15);
	/* 9. Misses K+3..2K-1 go through p's entry (61 pages); miss 2K evicts
	 * for g8 itself (p serves it: it recurs), the next victim, entry 1 (g1). */
	for (int k = K + 3; k < 2 * K; k++)
		charge(8, 1);
	CHECK_EQ(mcg_stock_cached(p), 62 - (long)(K - 3));
	CHECK_EQ(usage(g[8]), K - 3);
	charge(8, 1);
	CHECK_EQ(mcg_stock_cached(g[8]), 63);
	CHECK_EQ(usage(g[8]), K - 2 + 63);
	CHECK_EQ(mcg_stock_cached(g[1]), 0);
	CHECK_EQ(usage(g[1]), 1);
	CHECK_EQ(mcg_stock_cached(p), 62 - (long)(K - 3));
	EXACT(p, 15);
	/* 10. Five more rounds evict entries 2..6 for g9..g13; the sixth would
	 * take entry 0, p's, which the group charging relies on: entry 1 (g8)
	 * instead.  Each round's K-1 misses through p's entry leave it one
	 * page more than the last (it holds 1 after step 9). */
	for (int j = 9; j <= 14; j++) {
		for (int k = 0; k < K; k++)
			charge(j, 1);
		CHECK_EQ(mcg_stock_cached(g[j]), 63);
		EXACT(p, 15);
	}
	for (int i = 2; i <= 6; i++)
		CHECK_EQ(mcg_stock_cached(g[i]), 0);
	CHECK_EQ(mcg_stock_cached(g[8]), 0);
	for (int j = 9; j <= 14; j++)
		CHECK_EQ(mcg_stock_cached(g[j]), 63);
	CHECK_EQ(mcg_stock_cached(p), 7);
	/* At rest: everything given back, then drained: exact. */
	for (int i = 0; i < 15; i++)
		while (inuse[i])
			uncharge(i, inuse[i] > 64 ? 64 : (unsigned long)inuse[i]);
	EXACT(p, 15);
	mcg_group_drain_stocks();
	CHECK_EQ(usage(p), 0);
	for (int i = 0; i < 15; i++)
		CHECK_EQ(usage(g[i]), 0);
	remove_groups(15);
	teardown();
}

static void test_miss_policy(void) { on_fresh_thread(miss_policy); }

/*
 * Fill the stock (g0..g6 under p: entries 0..6), then K-1 misses of g8
 * (plain) and one more that evicts entry 0 for q, g8's parent.
 */
static mcg_group_t *q;

static void fill_and_stock_q(void)
{
	for (int i = 0; i < E; i++)
		charge(i, 1);
	for (int k = 0; k < K; k++)
		charge(8, 1);
	CHECK_EQ(mcg_stock_cached(q), 63);
	CHECK_EQ(mcg_stock_cached(g[0]), 0);
}

/* q's usage: its children's (g8, g9) pages in use and what is stocked for its subtree. */
#define EXACT_Q() CHECK_EQ(usage(q), inuse[8] + inuse[9] + mcg_stock_cached_subtree(q))

/* A batch that does not fit under a max evicts nothing and counts nothing. */
static void batch_over_max(void)
{
	setup();
	make_groups(p, E);
	REQUIRE(mcg_group_create(p, "q", &q) == 0);
	REQUIRE(mcg_group_create(q, "g8", &g[8]) == 0);
	inuse[8] = 0;
	mcg_page_counter_set_max(&q->memory, K + 6);
	for (int i = 0; i < E; i++)
		charge(i, 1);
	for (int k = 1; k < K; k++)
		charge(8, 1); /* the counters */
	CHECK_EQ(usage(q), K - 1);
	/* Miss K would evict entry 0 for q, but 64 more do not fit under
	 * q's max: g8's page alone, through the counters; no event. */
	charge(8, 1);
	CHECK_EQ(usage(q), K);
	CHECK_EQ(mcg_stock_cached(q), 0);
	for (int i = 0; i < E; i++)
		CHECK_EQ(mcg_stock_cached(g[i]), 63);
	CHECK_EQ(mcg_page_counter_get(&q->memory, failcnt), 1); /* the batch's try */
	CHECK_EQ(mcg_group_event_read(q, MCG_EVENT_MAX, true), 0);
	/* Up to max through the counters, then the plain path's failure:
	 * reclaim hook, drain, max events, oom, -ENOMEM. */
	mcg_group_set_reclaim_hook(reclaim_hook, NULL);
	reclaim_calls = 0;
	for (int k = 0; k < 6; k++)
		charge(8, 1);
	CHECK_EQ(usage(q), K + 6);
	CHECK_EQ(mcg_charge(g[8], 1, 0), -ENOMEM);
	CHECK(reclaim_seen == q);
	CHECK_EQ(reclaim_calls, 2);
	CHECK_EQ(mcg_group_event_read(q, MCG_EVENT_MAX, true), 2);
	CHECK_EQ(mcg_group_event_read(q, MCG_EVENT_OOM, true), 1);
	CHECK_EQ(mcg_group_event_read(g[8], MCG_EVENT_MAX, true), 0);
	for (int i = 0; i < E; i++)
		CHECK_EQ(mcg_stock_cached(g[i]), 0); /* the failing charge drained them */
	/* Stocked pages count against max: g8's freed pages go to an empty
	 * entry (10 of them), and hold q at max until the next drain. */
	for (int k = 0; k < 10; k++)
		uncharge(8, 1);
	CHECK_EQ(mcg_stock_cached(g[8]), 10);
	CHECK_EQ(usage(q), K + 6);
	REQUIRE(mcg_group_create(q, "g9", &g[9]) == 0);
	inuse[9] = 0;
	charge(9, 1); /* batch over max; the counters fail; drain; retry */
	CHECK_EQ(mcg_stock_cached(g[8]), 0);
	CHECK_EQ(usage(q), K - 3);
	CHECK_EQ(mcg_group_event_read(q, MCG_EVENT_MAX, true), 3);
	mcg_group_set_reclaim_hook(NULL, NULL);
	uncharge(9, 1);
	while (inuse[8])
		uncharge(8, 1);
	for (int i = 0; i < E; i++)
		uncharge(i, 1);
	mcg_group_drain_stocks();
	CHECK_EQ(usage(q), 0);
	mcg_group_remove(g[9]), mcg_group_put(g[9]);
	mcg_group_remove(g[8]), mcg_group_put(g[8]);
	mcg_group_remove(q), mcg_group_put(q);
	remove_groups(E);
	teardown();
}

static void test_batch_over_max(void) { on_fresh_thread(batch_over_max); }

/*
 * Through the parent's entry, the levels below it keep their limits: g9's
 * max fails there (the plain path: events, drain, -ENOMEM), FORCE goes
 * over; high is checked where pages were charged (g9), not where they came
 * from the entry (q), until q's entry runs out and q takes a batch.
 */
static void parent_entry_limits(void)
{
	setup();
	make_groups(p, E);
	REQUIRE(mcg_group_create(p, "q", &q) == 0);
	REQUIRE(mcg_group_create(q, "g8", &g[8]) == 0);
	REQUIRE(mcg_group_create(q, "g9", &g[9]) == 0);
	inuse[8] = inuse[9] = 0;
	fill_and_stock_q();
	mcg_page_counter_set_max(&g[9]->memory, 3);
	mcg_page_counter_set_high(&g[9]->memory, 2);
	mcg_page_counter_set_high(&q->memory, 1); /* already above: 64 + 63 */
	mcg_group_set_high_hook(high_hook, NULL);
	high_calls = 0;
	charge(9, 1);
	charge(9, 1);
	CHECK_EQ(high_calls, 0); /* q's pages came from its entry: q not checked */
	charge(9, 1);            /* g9 at 3 > high 2 */
	CHECK_EQ(high_calls, 1);
	CHECK(high_seen == g[9]);
	CHECK_EQ(mcg_group_event_read(g[9], MCG_EVENT_HIGH, true), 1);
	CHECK_EQ(mcg_group_event_read(q, MCG_EVENT_HIGH, true), 0);
	CHECK_EQ(mcg_stock_cached(q), 60);
	CHECK_EQ(usage(g[9]), 3);
	/* q's entry runs out: 60 pages, then a batch at q, which checks q. */
	charge(8, 60);
	CHECK_EQ(mcg_stock_cached(q), 0);
	CHECK_EQ(high_calls, 1);
	charge(8, 1);
	CHECK_EQ(mcg_stock_cached(q), 63);
	CHECK_EQ(high_calls, 2);
	CHECK(high_seen == q);
	CHECK_EQ(mcg_group_event_read(q, MCG_EVENT_HIGH, true), 1);
	mcg_group_set_high_hook(NULL, NULL);
	EXACT_Q();
	/* g9 at its max: through q's entry it fails at g9, then the plain
	 * path: two max events at g9, oom, every stock drained. */
	mcg_group_set_reclaim_hook(reclaim_hook, NULL);
	reclaim_calls = 0;
	CHECK_EQ(mcg_charge(g[9], 1, 0), -ENOMEM);
	CHECK(reclaim_seen == g[9]);
	CHECK_EQ(reclaim_calls, 2);
	CHECK_EQ(mcg_group_event_read(g[9], MCG_EVENT_MAX, true), 2);
	CHECK_EQ(mcg_group_event_read(g[9], MCG_EVENT_OOM, true), 1);
	CHECK_EQ(mcg_group_event_read(q, MCG_EVENT_MAX, false), 2);
	CHECK_EQ(mcg_group_event_read(q, MCG_EVENT_MAX, true), 0);
	CHECK_EQ(usage(g[9]), 3);
	CHECK_EQ(mcg_stock_cached(q), 0);
	CHECK_EQ(usage(q), inuse[8] + 3);
	/* FORCE: an empty entry now, g9's batch does not fit, the counters force 1. */
	CHECK_EQ(mcg_charge(g[9], 1, MCG_CHARGE_FORCE), 0);
	inuse[9]++;
	CHECK_EQ(usage(g[9]), 4);
	CHECK_EQ(mcg_stock_cached(g[9]), 0);
	CHECK_EQ(mcg_group_stat_local(g[9], MCG_STAT_CHARGE_FORCED), 1);
	mcg_group_set_reclaim_hook(NULL, NULL);
	while (inuse[9])
		uncharge(9, 1);
	while (inuse[8])
		uncharge(8, inuse[8] > 64 ? 64 : (unsigned long)inuse[8]);
	for (int i = 0; i < E; i++)
		while (inuse[i])
			uncharge(i, 1);
	mcg_group_drain_stocks();
	CHECK_EQ(usage(q), 0);
	CHECK_EQ(usage(p), 0);
	mcg_group_remove(g[9]), mcg_group_put(g[9]);
	mcg_group_remove(g[8]), mcg_group_put(g[8]);
	mcg_group_remove(q), mcg_group_put(q);
	remove_groups(E);
	teardown();
}

static void test_parent_entry_limits(void) { on_fresh_thread(parent_entry_limits); }

/*
 * Removed groups: a dying child still charges through its parent's entry
 * but is never stocked itself, even on an evicting miss; a removed parent
 * leaves every stock at once and is never stocked again; both are freed
 * once their charges are gone.
 */
static void parent_entry_remove(void)
{
	setup();
	make_groups(p, E);
	REQUIRE(mcg_group_create(p, "q", &q) == 0);
	REQUIRE(mcg_group_create(q, "g8", &g[8]) == 0);
	REQUIRE(mcg_group_create(q, "g9", &g[9]) == 0);
	inuse[8] = inuse[9] = 0;
	fill_and_stock_q(); /* misses 1..K */
	charge(9, 2);       /* miss K+1: through q */
	CHECK_EQ(mcg_stock_cached(q), 61);
	CHECK_EQ(mcg_group_remove(g[9]), 0);
	charge(9, 1); /* miss K+2, dying: still through q's entry */
	CHECK_EQ(usage(g[9]), 3);
	CHECK_EQ(mcg_stock_cached(q), 60);
	for (int k = K + 3; k < 2 * K; k++) /* 60 pages, then a batch at q */
		charge(8, 1);
	CHECK_EQ(mcg_stock_cached(q), 63);
	charge(9, 1); /* miss 2K would evict for g9: removed, so the counters */
	CHECK_EQ(mcg_stock_cached(g[9]), 0);
	CHECK_EQ(mcg_stock_cached(q), 63);
	for (int i = 1; i < E; i++)
		CHECK_EQ(mcg_stock_cached(g[i]), 63);
	EXACT_Q();
	uncharge(9, 4); /* into q's entry: over 64, it keeps the 4, its pages go back */
	CHECK_EQ(usage(g[9]), 0);
	CHECK_EQ(mcg_stock_cached(q), 4);
	EXACT_Q();
	/* q goes: its children first (g8 dying, with pages in use). */
	CHECK_EQ(mcg_group_remove(g[8]), 0);
	CHECK_EQ(mcg_group_remove(q), 0);
	CHECK_EQ(mcg_stock_cached(q), 0);
	CHECK_EQ(usage(q), inuse[8]);
	for (int k = 0; k < 2 * K; k++) { /* two evicting misses among them */
		charge(8, 1);
		CHECK_EQ(mcg_stock_cached(q), 0);
		CHECK_EQ(mcg_stock_cached(g[8]), 0);
	}
	for (int i = 1; i < E; i++)
		CHECK_EQ(mcg_stock_cached(g[i]), 63);
	while (inuse[8])
		uncharge(8, inuse[8] > 64 ? 64 : (unsigned long)inuse[8]);
	CHECK_EQ(usage(q), 0);
	CHECK_EQ(p->nr_dying_descendants, 3);
	mcg_group_put(g[9]);
	mcg_group_put(g[8]);
	mcg_group_put(q);
	CHECK_EQ(p->nr_dying_descendants, 0);
	for (int i = 0; i < E; i++)
		uncharge(i, 1);
	mcg_group_drain_stocks();
	CHECK_EQ(usage(p), 0);
	remove_groups(E);
	teardown();
}

static void test_parent_entry_remove(void) { on_fresh_thread(parent_entry_remove); }

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

static unsigned long reclaim_hook(mcg_group_t *over, unsigned long nr, void *arg)
{
	reclaim_seen = over;
	reclaim_calls++;
	return 0;
}

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

static unsigned long progress_hook(mcg_group_t *over, unsigned long nr, void *arg)
{
	reclaim_calls++;
	return 1; /* says it freed a page, and frees nothing */
}

/*
 * With no reclaim layer, a hook that reports progress is retried
 * MCG_MAX_RECLAIM_RETRIES times after the attempt and the drain's retry:
 * 2 + 16 calls, one max event each, then one oom and -ENOMEM.
 */
static void test_hook_progress(void)
{
	setup();
	REQUIRE(!mcg_group_reclaim_ops_get()); /* this binary never starts reclaim */
	mcg_page_counter_set_max(&p->memory, 10);
	CHECK_EQ(mcg_charge(s, 10, MCG_CHARGE_NOWAIT), 0);
	CHECK_EQ(mcg_group_event_read(p, MCG_EVENT_MAX, true), 0);
	mcg_group_set_reclaim_hook(progress_hook, NULL);
	reclaim_calls = 0;
	CHECK_EQ(mcg_charge(t, 1, 0), -ENOMEM);
	CHECK_EQ(reclaim_calls, 2 + MCG_MAX_RECLAIM_RETRIES);
	CHECK_EQ(mcg_group_event_read(p, MCG_EVENT_MAX, true), 2 + MCG_MAX_RECLAIM_RETRIES);
	CHECK_EQ(mcg_group_event_read(p, MCG_EVENT_OOM, true), 1);
	CHECK_EQ(usage(p), 10);
	mcg_group_set_reclaim_hook(NULL, NULL);
	mcg_uncharge(s, 10);
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
	RUN(test_entries);
	RUN(test_overflow);
	RUN(test_max_and_force);
	RUN(test_drain_before_fail);
	RUN(test_hook_progress);
	RUN(test_high_hook);
	RUN(test_remove_drains);
	RUN(test_current_group);
	RUN(test_miss_policy);
	RUN(test_batch_over_max);
	RUN(test_parent_entry_limits);
	RUN(test_parent_entry_remove);
	return test_done_then_locked(argv);
}
