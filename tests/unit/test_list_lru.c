/* SPDX-License-Identifier: MIT */
/*
 * test_list_lru.c - reclaim/list_lru.c: add/del/count per group and node,
 * walks with every isolate status, the shrinker mark on the first object,
 * reparenting on group removal, non-memcg-aware lists; bad arguments
 * (nothing done), mcg_list_lru_isolate() and REMOVED_RETRY, walks of the
 * current group and of non-memcg-aware lists, a fault at creation.
 */
#include <errno.h>
#include <stdlib.h>

#include "memcg/debug.h"
#include "memcg/group.h"
#include "memcg/memcg.h"
#include "memcg/reclaim.h"
#include "reclaim/shrinker.h"
#include "test.h"

static unsigned long count_cb(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	return mcg_list_lru_shrink_count(mcg_shrinker_private(s), sc);
}

static unsigned long scan_cb(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	(void)s;
	(void)sc;
	return 0;
}

struct item {
	mcg_lru_link_t link;
	int v;
};

static mcg_shrinker_t *mk_shrinker(unsigned flags)
{
	mcg_shrinker_t *s = NULL;
	mcg_shrinker_ops_t ops = {
	        .count_objects = count_cb, .scan_objects = scan_cb, .flags = flags};
	if (mcg_shrinker_create(&ops, &s))
		return NULL;
	return s;
}

static bool marked(mcg_group_t *g, const mcg_shrinker_t *s)
{
	struct mcg_reclaim_info *info = mcg_reclaim_info_peek(g);
	return info && (info->map[0][s->id / 64] & (1ul << (s->id % 64)));
}

static void test_add_del_count(void)
{
	mcg_shrinker_t *s = mk_shrinker(MCG_SHRINKER_MEMCG_AWARE | MCG_SHRINKER_NUMA_AWARE);
	REQUIRE(s);
	mcg_list_lru_t *lru;
	REQUIRE(mcg_list_lru_create(s, &lru) == 0);
	mcg_group_t *a, *b;
	REQUIRE(mcg_group_create(NULL, "lru-a", &a) == 0);
	REQUIRE(mcg_group_create(NULL, "lru-b", &b) == 0);
	struct item it[10] = {0};
	CHECK(!marked(a, s));
	for (int i = 0; i < 6; i++)
		CHECK_EQ(mcg_list_lru_add(lru, &it[i].link, 0, a), 1);
	CHECK(marked(a, s));
	CHECK(!marked(b, s));
	CHECK_EQ(mcg_list_lru_add(lru, &it[0].link, 0, a), 0); /* already on */
	for (int i = 6; i < 10; i++)
		CHECK_EQ(mcg_list_lru_add(lru, &it[i].link, 0, b), 1);
	CHECK_EQ(mcg_list_lru_count_one(lru, 0, a), 6);
	CHECK_EQ(mcg_list_lru_count_one(lru, 0, b), 4);
	CHECK_EQ(mcg_list_lru_count_node(lru, 0), 10);
	CHECK_EQ(mcg_list_lru_count(lru), 10);
	CHECK_EQ(mcg_list_lru_add(lru, &it[0].link, mcg_nr_nodes(), a), -EINVAL);
	CHECK_EQ(mcg_list_lru_del(lru, &it[3].link, 0, a), 1);
	CHECK_EQ(mcg_list_lru_del(lru, &it[3].link, 0, a), 0);
	CHECK_EQ(mcg_list_lru_count_one(lru, 0, a), 5);
	mcg_shrink_control_t sc = {.nid = 0, .group = b};
	CHECK_EQ(mcg_list_lru_shrink_count(lru, &sc), 4);
	sc.group = mcg_group_root();
	CHECK_EQ(mcg_list_lru_shrink_count(lru, &sc), MCG_SHRINK_EMPTY);

	/* Removal: a's objects go to the root's list; del through a still works. */
	mcg_group_remove(a);
	CHECK_EQ(mcg_list_lru_count_one(lru, 0, a), 0);
	CHECK_EQ(mcg_list_lru_count_one(lru, 0, mcg_group_root()), 5);
	CHECK(marked(mcg_group_root(), s));
	CHECK_EQ(mcg_list_lru_del(lru, &it[0].link, 0, a), 1);
	CHECK_EQ(mcg_list_lru_add(lru, &it[3].link, 0, a), 1); /* lands in the root's */
	CHECK_EQ(mcg_list_lru_count_one(lru, 0, mcg_group_root()), 5);
	mcg_group_put(a);
	mcg_list_lru_destroy(lru);
	mcg_shrinker_destroy(s);
	mcg_group_remove(b);
	mcg_group_put(b);
}

struct walk_arg {
	mcg_lru_link_t dispose;
	int calls;
};

static enum mcg_lru_status isolate_by_value(mcg_lru_link_t *l, mcg_list_lru_one_t *list, void *arg)
{
	struct walk_arg *w = arg;
	struct item *it = (struct item *)l;
	w->calls++;
	switch (it->v) {
	case 0: mcg_list_lru_isolate_move(list, l, &w->dispose); return MCG_LRU_REMOVED;
	case 1:
		it->v = 0; /* referenced: second chance */
		return MCG_LRU_ROTATE;
	case 2: return MCG_LRU_SKIP;
	case 3:
		it->v = 2;
		mcg_list_lru_one_unlock(list);
		mcg_list_lru_one_lock(list);
		return MCG_LRU_RETRY;
	default: return MCG_LRU_STOP;
	}
}

static void test_walk(void)
{
	mcg_shrinker_t *s = mk_shrinker(MCG_SHRINKER_MEMCG_AWARE);
	REQUIRE(s);
	mcg_list_lru_t *lru;
	REQUIRE(mcg_list_lru_create(s, &lru) == 0);
	mcg_group_t *g;
	REQUIRE(mcg_group_create(NULL, "walk", &g) == 0);
	struct item it[6] = {{.v = 0}, {.v = 1}, {.v = 2}, {.v = 3}, {.v = 0}, {.v = 9}};
	for (int i = 0; i < 6; i++)
		mcg_list_lru_add(lru, &it[i].link, 0, g);
	struct walk_arg w = {.dispose = {&w.dispose, &w.dispose}};
	unsigned long nr = 100;
	unsigned long n = mcg_list_lru_walk_one(lru, 0, g, isolate_by_value, &w, &nr);
	/* Order: 0 R, 1 rotate(v=0), 2 skip, 3 retry(v=2) -> restart: 2 skip, 3 skip, 4 R, 5 stop.
	 */
	CHECK_EQ(n, 2);
	CHECK_EQ(mcg_list_lru_count_one(lru, 0, g), 4);
	CHECK_EQ(w.calls, 8);
	CHECK_EQ(100 - nr, 8);
	nr = 2; /* the budget bounds the walk */
	w.calls = 0;
	mcg_list_lru_walk_one(lru, 0, g, isolate_by_value, &w, &nr);
	CHECK_EQ(nr, 0);
	CHECK_EQ(w.calls, 2);
	it[5].v = 0;
	CHECK_EQ(mcg_list_lru_walk(lru, isolate_by_value, &w, ~0ul), 2); /* 5 and rotated 1 */
	CHECK_EQ(mcg_list_lru_count(lru), 2);                            /* 2 and 3 skip */
	mcg_list_lru_destroy(lru);
	mcg_shrinker_destroy(s);
	mcg_group_remove(g);
	mcg_group_put(g);
}

static void test_not_memcg_aware(void)
{
	mcg_list_lru_t *lru;
	REQUIRE(mcg_list_lru_create(NULL, &lru) == 0);
	mcg_group_t *g;
	REQUIRE(mcg_group_create(NULL, "plain", &g) == 0);
	struct item it[3] = {0};
	for (int i = 0; i < 3; i++)
		CHECK_EQ(mcg_list_lru_add(lru, &it[i].link, 0, i ? g : NULL), 1);
	CHECK_EQ(mcg_list_lru_count_one(lru, 0, mcg_group_root()), 3); /* one list */
	mcg_group_remove(g);
	CHECK_EQ(mcg_list_lru_del(lru, &it[1].link, 0, g), 1);
	CHECK_EQ(mcg_list_lru_count(lru), 2);
	mcg_group_put(g);
	mcg_list_lru_destroy(lru);
}

static void test_reparent_chain(void)
{
	mcg_shrinker_t *s = mk_shrinker(MCG_SHRINKER_MEMCG_AWARE);
	REQUIRE(s);
	mcg_list_lru_t *lru;
	REQUIRE(mcg_list_lru_create(s, &lru) == 0);
	mcg_group_t *p, *c;
	REQUIRE(mcg_group_create(NULL, "rp", &p) == 0);
	REQUIRE(mcg_group_create(p, "rc", &c) == 0);
	struct item it[4] = {0};
	mcg_list_lru_add(lru, &it[0].link, 0, c);
	mcg_list_lru_add(lru, &it[1].link, 0, c);
	mcg_list_lru_add(lru, &it[2].link, 0, p);
	mcg_group_remove(c);
	CHECK_EQ(mcg_list_lru_count_one(lru, 0, p), 3);
	CHECK(marked(p, s));
	mcg_group_remove(p);
	CHECK_EQ(mcg_list_lru_count_one(lru, 0, mcg_group_root()), 3);
	CHECK_EQ(mcg_list_lru_del(lru, &it[0].link, 0, c), 1); /* two levels up */
	mcg_group_put(c);
	mcg_group_put(p);
	CHECK_EQ(mcg_list_lru_count(lru), 2);
	mcg_list_lru_destroy(lru);
	mcg_shrinker_destroy(s);
}

static void test_fake_numa(void)
{
	REQUIRE(mcg_nr_nodes() == 2); /* main() set numa_nodes 2 before the library started */
	mcg_shrinker_t *s = mk_shrinker(MCG_SHRINKER_MEMCG_AWARE | MCG_SHRINKER_NUMA_AWARE);
	REQUIRE(s);
	mcg_list_lru_t *lru;
	REQUIRE(mcg_list_lru_create(s, &lru) == 0);
	struct item it[3] = {0};
	mcg_list_lru_add(lru, &it[0].link, 0, NULL);
	mcg_list_lru_add(lru, &it[1].link, 1, NULL);
	mcg_list_lru_add(lru, &it[2].link, 1, NULL);
	CHECK_EQ(mcg_list_lru_count_node(lru, 0), 1);
	CHECK_EQ(mcg_list_lru_count_node(lru, 1), 2);
	mcg_list_lru_destroy(lru);
	mcg_shrinker_destroy(s);
}

static enum mcg_lru_status isolate_plain(mcg_lru_link_t *item, mcg_list_lru_one_t *l, void *arg)
{
	mcg_list_lru_isolate(l, item); /* off the list; the caller keeps it */
	++*(int *)arg;
	return *(int *)arg % 2 ? MCG_LRU_REMOVED_RETRY : MCG_LRU_REMOVED;
}

static void test_args_and_isolate(void)
{
	mcg_shrinker_t *s = mk_shrinker(MCG_SHRINKER_MEMCG_AWARE);
	REQUIRE(s);
	mcg_list_lru_t *lru;
	CHECK_EQ(mcg_list_lru_create(s, NULL), -EINVAL);
	REQUIRE(mcg_list_lru_create(s, &lru) == 0);
	struct item it[4] = {0};
	unsigned bad = mcg_nr_nodes();
	CHECK_EQ(mcg_list_lru_add(NULL, &it[0].link, 0, NULL), -EINVAL);
	CHECK_EQ(mcg_list_lru_add(lru, NULL, 0, NULL), -EINVAL);
	CHECK_EQ(mcg_list_lru_add(lru, &it[0].link, bad, NULL), -EINVAL);
	CHECK_EQ(mcg_list_lru_del(NULL, &it[0].link, 0, NULL), 0);
	CHECK_EQ(mcg_list_lru_del(lru, NULL, 0, NULL), 0);
	CHECK_EQ(mcg_list_lru_del(lru, &it[0].link, bad, NULL), 0);
	CHECK_EQ(mcg_list_lru_del(lru, &it[0].link, 0, NULL), 0); /* zeroed: on no list */
	CHECK_EQ(mcg_list_lru_count_one(NULL, 0, NULL), 0);
	CHECK_EQ(mcg_list_lru_count_one(lru, bad, NULL), 0);
	CHECK_EQ(mcg_list_lru_count_node(NULL, 0), 0);
	CHECK_EQ(mcg_list_lru_count_node(lru, bad), 0);
	unsigned long nr = 10;
	CHECK_EQ(mcg_list_lru_walk_one(NULL, 0, NULL, isolate_plain, NULL, &nr), 0);
	CHECK_EQ(mcg_list_lru_walk_one(lru, 0, NULL, NULL, NULL, &nr), 0);
	CHECK_EQ(mcg_list_lru_walk_one(lru, 0, NULL, isolate_plain, NULL, NULL), 0);
	CHECK_EQ(mcg_list_lru_walk_one(lru, bad, NULL, isolate_plain, NULL, &nr), 0);
	CHECK_EQ(mcg_list_lru_walk(NULL, isolate_plain, NULL, 10), 0);
	CHECK_EQ(mcg_list_lru_walk(lru, NULL, NULL, 10), 0);
	CHECK_EQ(mcg_list_lru_shrink_count(NULL, &(mcg_shrink_control_t){0}), MCG_SHRINK_EMPTY);
	CHECK_EQ(mcg_list_lru_shrink_count(lru, NULL), MCG_SHRINK_EMPTY);
	CHECK_EQ(mcg_list_lru_shrink_walk(NULL, &(mcg_shrink_control_t){0}, isolate_plain, NULL),
	         0);
	CHECK_EQ(mcg_list_lru_shrink_walk(lru, NULL, isolate_plain, NULL), 0);

	/* the current group's list (NULL), isolated in place, restarted after each retry */
	mcg_group_t *g;
	REQUIRE(mcg_group_create(NULL, "lru-current", &g) == 0);
	mcg_group_t *prev = mcg_group_enter(g);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(mcg_list_lru_add(lru, &it[i].link, 0, NULL), 1);
	CHECK_EQ(mcg_list_lru_count_one(lru, 0, g), 4);
	int calls = 0;
	nr = 10;
	CHECK_EQ(mcg_list_lru_walk_one(lru, 0, NULL, isolate_plain, &calls, &nr), 4);
	CHECK_EQ(calls, 4);
	CHECK_EQ(mcg_list_lru_count_one(lru, 0, g), 0);
	for (int i = 0; i < 4; i++) /* taken off by mcg_list_lru_isolate(): on no list */
		CHECK_EQ(mcg_list_lru_del(lru, &it[i].link, 0, NULL), 0);
	/* a shrink control with no group is the root's */
	mcg_shrink_control_t sc = {.nid = 0, .group = NULL, .nr_to_scan = 10};
	CHECK_EQ(mcg_list_lru_shrink_count(lru, &sc), MCG_SHRINK_EMPTY);
	mcg_group_leave(prev);
	mcg_list_lru_destroy(lru);
	mcg_shrinker_destroy(s);
	mcg_group_remove(g);
	mcg_group_put(g);

	/* a list that is not memcg aware: one walk over its nodes */
	REQUIRE(mcg_list_lru_create(NULL, &lru) == 0);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(mcg_list_lru_add(lru, &it[i].link, 0, NULL), 1);
	calls = 1; /* even: REMOVED each time */
	CHECK_EQ(mcg_list_lru_walk(lru, isolate_plain, &calls, ~0ul), 3);
	mcg_list_lru_destroy(lru);

	/* creation fails cleanly */
	mcg_fault_inject(1, 1);
	lru = (mcg_list_lru_t *)&calls;
	CHECK_EQ(mcg_list_lru_create(NULL, &lru), -ENOMEM);
	mcg_fault_inject(0, 0);
}

static enum mcg_lru_status isolate_to(mcg_lru_link_t *item, mcg_list_lru_one_t *l, void *arg)
{
	mcg_list_lru_isolate_move(l, item, arg);
	return MCG_LRU_REMOVED;
}

/*
 * The edges: a walk whose budget runs out on node 0 does not go on to
 * node 1 (memcg aware or not); a shrink count for a node the lists do not
 * have, or a group with no lists, is empty; a shrink walk with no group
 * walks the root's; a link that was never added is on no list; a zeroed
 * dispose head is made a list by the first move; and a list made without
 * a shrinker needs an id of its own - none left, it is refused.
 */
static void test_edges(void)
{
	mcg_shrinker_t *s = mk_shrinker(MCG_SHRINKER_MEMCG_AWARE | MCG_SHRINKER_NUMA_AWARE);
	REQUIRE(s);
	mcg_list_lru_t *lru, *plain;
	REQUIRE(mcg_list_lru_create(s, &lru) == 0);
	REQUIRE(mcg_list_lru_create(NULL, &plain) == 0);
	REQUIRE(mcg_nr_nodes() == 2);
	struct item it[4] = {0};
	CHECK_EQ(mcg_list_lru_add(lru, &it[0].link, 0, NULL), 1);
	CHECK_EQ(mcg_list_lru_add(lru, &it[1].link, 1, NULL), 1);
	CHECK_EQ(mcg_list_lru_add(plain, &it[2].link, 0, NULL), 1);
	CHECK_EQ(mcg_list_lru_add(plain, &it[3].link, 1, NULL), 1);
	mcg_lru_link_t dispose = {0}; /* zeroed: the first move makes it a list */
	CHECK_EQ(mcg_list_lru_walk(lru, isolate_to, &dispose, 1), 1);
	CHECK_EQ(mcg_list_lru_walk(plain, isolate_to, &dispose, 1), 1);
	CHECK_EQ(mcg_list_lru_count_node(lru, 1), 1); /* node 1 not reached */
	CHECK_EQ(mcg_list_lru_count_node(plain, 1), 1);
	CHECK(dispose.next == &it[0].link && it[0].link.next == &it[2].link &&
	      it[2].link.next == &dispose);
	/* a node beyond the lists' and a group with none: empty */
	mcg_shrink_control_t sc = {.nid = 5, .group = mcg_group_root(), .nr_to_scan = 10};
	CHECK_EQ(mcg_list_lru_shrink_count(lru, &sc), MCG_SHRINK_EMPTY);
	mcg_group_t *g;
	REQUIRE(mcg_group_create(NULL, "lru-none", &g) == 0);
	mcg_shrinker_t *flat = mk_shrinker(MCG_SHRINKER_MEMCG_AWARE);
	REQUIRE(flat);
	mcg_list_lru_t *flat_lru;
	REQUIRE(mcg_list_lru_create(flat, &flat_lru) == 0);
	sc.nid = 0;
	sc.group = g;
	CHECK_EQ(mcg_list_lru_shrink_count(flat_lru, &sc), MCG_SHRINK_EMPTY);
	/* a shrink walk with no group: the root's lists */
	sc.group = NULL;
	sc.nid = 1;
	mcg_lru_link_t dispose2 = {&dispose2, &dispose2};
	CHECK_EQ(mcg_list_lru_shrink_walk(lru, &sc, isolate_to, &dispose2), 1);
	CHECK(dispose2.next == &it[1].link);
	CHECK_EQ(mcg_list_lru_count(lru), 0);
	/* a link never added, in a group that has lists: on no list */
	mcg_lru_link_t never = {0};
	CHECK_EQ(mcg_list_lru_del(lru, &never, 0, mcg_group_root()), 0);
	CHECK_EQ(mcg_list_lru_del(plain, &it[3].link, 1, NULL), 1);
	CHECK_EQ(mcg_list_lru_count(plain), 0);
	mcg_list_lru_destroy(flat_lru);
	mcg_shrinker_destroy(flat);
	mcg_group_remove(g);
	mcg_group_put(g);
	mcg_list_lru_destroy(plain);

	/* every shrinker id taken: a list without a shrinker has none left */
	static mcg_shrinker_t *all[MCG_SHRINKER_MAX];
	int n = 0;
	while (n < MCG_SHRINKER_MAX && (all[n] = mk_shrinker(0)) != NULL)
		n++;
	CHECK_EQ(mcg_shrinker_ids_in_use(), MCG_SHRINKER_MAX);
	plain = (mcg_list_lru_t *)&dispose;
	CHECK_EQ(mcg_list_lru_create(NULL, &plain), -ENOSPC);
	CHECK(plain == (mcg_list_lru_t *)&dispose); /* untouched */
	CHECK_EQ(mcg_shrinker_ids_in_use(), MCG_SHRINKER_MAX);
	while (n > 0)
		mcg_shrinker_destroy(all[--n]);
	mcg_list_lru_destroy(lru);
	mcg_shrinker_destroy(s);
}

int main(void)
{
	mcg_options_use_env(0);
	mcg_option_set("numa_nodes", 2);
	RUN(test_add_del_count);
	RUN(test_walk);
	RUN(test_not_memcg_aware);
	RUN(test_reparent_chain);
	RUN(test_fake_numa);
	RUN(test_args_and_isolate);
	RUN(test_edges);
	return test_done();
}
