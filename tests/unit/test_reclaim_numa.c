/* SPDX-License-Identifier: MIT */
/*
 * test_reclaim_numa.c - per-node shrinker marks (the kernel's
 * shrinker_info per node): an object on node N marks its group on node N
 * for a NUMA-aware shrinker, so reclaim of node N (mcg_reclaim_node())
 * never asks a shrinker about a group that holds nothing there; a mark is
 * cleared per node when the node's list empties.  A shrinker that is not
 * NUMA-aware marks node 0 and is asked there about every node's objects.
 *
 * Needs two nodes or more: with fewer it reruns itself with fake ones
 * (MCG_NUMA_NODES=4).
 */
#include <errno.h>
#include <stdlib.h>

#include "memcg/debug.h"
#include "memcg/group.h"
#include "memcg/reclaim.h"
#include "reclaim/shrinker.h"
#include "test.h"

#define MAXG 4

struct obj {
	mcg_lru_link_t link;
	mcg_group_t *g;
};

static struct {
	mcg_list_lru_t *lru;
	mcg_group_t *groups[MAXG];
	long count_calls[MAXG][64]; /* [group][nid] */
	long live;
} t;

static int gidx(mcg_group_t *g)
{
	for (int i = 0; i < MAXG; i++)
		if (t.groups[i] == g)
			return i;
	return -1;
}

static unsigned long count_cb(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	(void)s;
	int i = gidx(sc->group);
	if (i >= 0 && sc->nid < 64)
		t.count_calls[i][sc->nid]++;
	return mcg_list_lru_shrink_count(t.lru, sc);
}

static enum mcg_lru_status isolate(mcg_lru_link_t *item, mcg_list_lru_one_t *list, void *arg)
{
	mcg_list_lru_isolate_move(list, item, arg);
	return MCG_LRU_REMOVED;
}

static unsigned long dispose(mcg_lru_link_t *d)
{
	unsigned long n = 0;
	while (d->next != d) {
		struct obj *o = (struct obj *)d->next;
		d->next = o->link.next;
		o->link.next->prev = d;
		mcg_uncharge(o->g, 1);
		mcg_group_put(o->g);
		free(o);
		t.live--;
		n++;
	}
	return n;
}

static unsigned long scan_cb(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	(void)s;
	mcg_lru_link_t d = {&d, &d};
	mcg_list_lru_shrink_walk(t.lru, sc, isolate, &d);
	return dispose(&d);
}

static void fill(mcg_group_t *g, unsigned nid, int n)
{
	for (int i = 0; i < n; i++) {
		struct obj *o = calloc(1, sizeof(*o));
		REQUIRE(o);
		REQUIRE(mcg_charge(g, 1, 0) == 0);
		mcg_group_get(g);
		o->g = g;
		t.live++;
		REQUIRE(mcg_list_lru_add(t.lru, &o->link, nid, g) == 1);
	}
}

static long usage(mcg_group_t *g)
{
	char b[64];
	mcg_group_drain_stocks();
	mcg_group_read(g, "memory.current", b, sizeof(b));
	return atol(b) / MCG_GROUP_PAGE_SIZE;
}

static bool marked(mcg_group_t *g, const mcg_shrinker_t *s, unsigned nid)
{
	struct mcg_reclaim_info *info = mcg_reclaim_info_peek(g);
	return info && (info->map[nid][s->id / 64] & (1ul << (s->id % 64)));
}

static long calls(int g, unsigned nid) { return t.count_calls[g][nid]; }

static void teardown(mcg_shrinker_t *s, int ngroups)
{
	mcg_shrinker_unregister(s);
	mcg_lru_link_t d = {&d, &d};
	mcg_list_lru_walk(t.lru, isolate, &d, ~0ul);
	dispose(&d);
	CHECK_EQ(t.live, 0);
	mcg_list_lru_destroy(t.lru);
	mcg_shrinker_destroy(s);
	for (int i = ngroups - 1; i >= 0; i--) {
		CHECK_EQ(usage(t.groups[i]), 0);
		CHECK_EQ(mcg_group_remove(t.groups[i]), 0);
		mcg_group_put(t.groups[i]);
	}
	memset(&t, 0, sizeof(t));
}

/*
 *   P
 *   ├─ A  40 objects on node 0
 *   └─ B  40 objects on node 1
 * Reclaim of node 1 visits B only: A's shrinker count is never called;
 * reclaim of node 0 the reverse.  Emptied, B loses its node-1 mark and
 * leaves the tree of populated groups.
 */
static void test_numa_aware(void)
{
	mcg_shrinker_t *s;
	mcg_shrinker_ops_t ops = {.count_objects = count_cb,
	                          .scan_objects = scan_cb,
	                          .batch = 8,
	                          .flags = MCG_SHRINKER_MEMCG_AWARE | MCG_SHRINKER_NUMA_AWARE};
	REQUIRE(mcg_shrinker_create(&ops, &s) == 0);
	REQUIRE(mcg_list_lru_create(s, &t.lru) == 0);
	REQUIRE(mcg_shrinker_register(s) == 0);
	mcg_group_t *p, *a, *b;
	REQUIRE(mcg_group_create(NULL, "numa-p", &p) == 0);
	REQUIRE(mcg_group_create(p, "a", &a) == 0);
	REQUIRE(mcg_group_create(p, "b", &b) == 0);
	t.groups[0] = p, t.groups[1] = a, t.groups[2] = b;
	fill(a, 0, 40);
	fill(b, 1, 40);
	CHECK(marked(a, s, 0) && !marked(a, s, 1));
	CHECK(marked(b, s, 1) && !marked(b, s, 0));
	CHECK(!mcg_reclaim_info_marked(p, -1));

	mcg_reclaim_result_t res;
	unsigned long got = mcg_reclaim_node(p, 1, 8, MCG_RECLAIM_PROACTIVE, &res);
	CHECK(got > 0);
	CHECK_EQ(calls(1, 0) + calls(1, 1), 0);
	CHECK(calls(2, 1) > 0);
	CHECK_EQ(calls(2, 0), 0);
	CHECK_EQ(usage(a), 40);
	CHECK_EQ(usage(b), 40 - (long)got);

	memset(t.count_calls, 0, sizeof(t.count_calls));
	got = mcg_reclaim_node(p, 0, 8, MCG_RECLAIM_PROACTIVE, &res);
	CHECK(got > 0);
	CHECK_EQ(calls(2, 0) + calls(2, 1), 0);
	CHECK_EQ(usage(a), 40 - (long)got);

	/* Whole-group reclaim asks each group about its own nodes only. */
	memset(t.count_calls, 0, sizeof(t.count_calls));
	mcg_reclaim(p, 8, MCG_RECLAIM_PROACTIVE);
	CHECK_EQ(calls(1, 1), 0);
	CHECK_EQ(calls(2, 0), 0);

	/*
	 * B also gets objects on node 0.  Empty its node-1 list: the next
	 * reclaim of node 1 clears its node-1 mark (a group using nothing is
	 * not visited at all, as in the kernel, so B must keep some usage).
	 */
	fill(b, 0, 10);
	CHECK(marked(b, s, 0));
	while (mcg_list_lru_count_one(t.lru, 1, b) > 0 &&
	       mcg_reclaim_node(p, 1, 64, MCG_RECLAIM_PROACTIVE, NULL))
		;
	CHECK_EQ(mcg_list_lru_count_one(t.lru, 1, b), 0);
	CHECK_EQ(usage(b), 10);
	mcg_reclaim_node(p, 1, 8, MCG_RECLAIM_PROACTIVE, NULL);
	CHECK(!marked(b, s, 1));
	CHECK(marked(b, s, 0));
	CHECK(!mcg_reclaim_info_marked(b, 1));
	CHECK(mcg_reclaim_info_marked(b, -1));
	memset(t.count_calls, 0, sizeof(t.count_calls));
	CHECK_EQ(mcg_reclaim_node(p, 1, 8, MCG_RECLAIM_PROACTIVE, &res), 0);
	CHECK_EQ(res.groups, 0);
	CHECK_EQ(calls(2, 1), 0); /* not asked again */
	CHECK_EQ(usage(b), 10);
	CHECK_EQ(mcg_reclaim_node(p, mcg_nr_nodes(), 8, 0, &res), 0);
	teardown(s, 3);
}

/*
 * Not NUMA-aware: objects on node 1 mark node 0 and are found there; a
 * reclaim of node 1 does not call it.
 */
static void test_not_numa_aware(void)
{
	mcg_shrinker_t *s;
	mcg_shrinker_ops_t ops = {.count_objects = count_cb,
	                          .scan_objects = scan_cb,
	                          .batch = 8,
	                          .flags = MCG_SHRINKER_MEMCG_AWARE};
	REQUIRE(mcg_shrinker_create(&ops, &s) == 0);
	REQUIRE(mcg_list_lru_create(s, &t.lru) == 0);
	REQUIRE(mcg_shrinker_register(s) == 0);
	mcg_group_t *c;
	REQUIRE(mcg_group_create(NULL, "numa-c", &c) == 0);
	t.groups[0] = c;
	fill(c, 1, 40);
	CHECK(marked(c, s, 0));
	CHECK(!marked(c, s, 1));
	mcg_shrink_control_t sc = {.nid = 0, .group = c};
	CHECK_EQ(mcg_list_lru_shrink_count(t.lru, &sc), 40);
	mcg_reclaim_result_t res;
	CHECK_EQ(mcg_reclaim_node(c, 1, 8, MCG_RECLAIM_PROACTIVE, &res), 0);
	CHECK_EQ(calls(0, 1), 0);
	unsigned long got = mcg_reclaim(c, 8, MCG_RECLAIM_PROACTIVE);
	CHECK(got > 0);
	CHECK_EQ(usage(c), 40 - (long)got);
	CHECK_EQ(calls(0, 1), 0);
	CHECK(calls(0, 0) > 0);
	/* the root's walk of node 1 does not call it either, for any group */
	long before = usage(c), calls0 = calls(0, 0);
	CHECK_EQ(mcg_reclaim_node(mcg_group_root(), 1, 8, MCG_RECLAIM_PROACTIVE, &res), 0);
	CHECK_EQ(calls(0, 1), 0);
	CHECK_EQ(calls(0, 0), calls0);
	CHECK_EQ(usage(c), before);
	teardown(s, 1);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (mcg_nr_nodes() < 2) {
		if (getenv("MCG_TEST_FAKE_NUMA")) {
			fprintf(stderr, "fake NUMA nodes not in effect\n");
			return 1;
		}
		fprintf(stderr, "--- %u node: again with MCG_NUMA_NODES=4\n", mcg_nr_nodes());
		return test_rerun(argv, "MCG_NUMA_NODES", "4", "MCG_TEST_FAKE_NUMA");
	}
	RUN(test_numa_aware);
	RUN(test_not_numa_aware);
	return test_done();
}
