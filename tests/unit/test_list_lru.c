/* SPDX-License-Identifier: MIT */
/*
 * test_list_lru.c - reclaim/list_lru.c: add/del/count per group and node,
 * walks with every isolate status, the shrinker mark on the first object,
 * reparenting on group removal, non-memcg-aware lists.
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

int main(void)
{
	mcg_options_use_env(0);
	mcg_option_set("numa_nodes", 2);
	RUN(test_add_del_count);
	RUN(test_walk);
	RUN(test_not_memcg_aware);
	RUN(test_reparent_chain);
	RUN(test_fake_numa);
	return test_done();
}
