/* SPDX-License-Identifier: MIT */
/*
 * test_shrinker.c - reclaim/shrinker.c: the kernel's do_shrink_slab
 * arithmetic (delta = (freeable >> priority) * 4 / seeks, batches,
 * deferred work capped at 2x freeable), MCG_SHRINK_EMPTY clearing the
 * group's mark, MCG_SHRINK_STOP, only marked groups visited, registry
 * errors.
 */
#include <errno.h>

#include "group/group.h"
#include "memcg/group.h"
#include "memcg/kmalloc.h"
#include "memcg/reclaim.h"
#include "memcg/slab.h"
#include "reclaim/shrinker.h"
#include "slab/kmalloc_fast.h"
#include "test.h"
#include "held.h"

/* A fake shrinker: a count per call; scans record what they were asked. */
static unsigned long fake_count = 1000, scans, scanned_total, counts;
static unsigned long scan_ret; /* what scan returns */

static unsigned long f_count(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	(void)s;
	(void)sc;
	counts++;
	return fake_count;
}

static unsigned long f_scan(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	(void)s;
	scans++;
	scanned_total += sc->nr_to_scan;
	return scan_ret;
}

static mcg_shrinker_t *mk(unsigned flags, unsigned seeks, unsigned long batch)
{
	mcg_shrinker_t *s = NULL;
	mcg_shrinker_ops_t ops = {.count_objects = f_count,
	                          .scan_objects = f_scan,
	                          .flags = flags,
	                          .seeks = seeks,
	                          .batch = batch};
	if (mcg_shrinker_create(&ops, &s) || mcg_shrinker_register(s))
		return NULL;
	return s;
}

static void reset(void)
{
	scans = scanned_total = counts = 0;
	scan_ret = 0;
}

static void test_arithmetic(void)
{
	mcg_shrinker_t *s = mk(0, 2, 128); /* global: run by the root's walk */
	REQUIRE(s);
	unsigned long scanned = 0, freed = 0;
	reset();
	fake_count = 1000;
	/* priority 12: delta = (1000 >> 12) * 4 / 2 = 0: nothing, nothing deferred */
	mcg_shrink_slab(mcg_group_root(), 0, 12, 0, 0, &scanned, &freed, NULL);
	CHECK_EQ(scans, 0);
	CHECK_EQ(s->nr_deferred[0], 0);
	/* priority 4: delta = 62 * 2 = 124 < batch 128 and < freeable: deferred */
	mcg_shrink_slab(mcg_group_root(), 0, 4, 0, 0, &scanned, &freed, NULL);
	CHECK_EQ(scans, 0);
	CHECK_EQ(s->nr_deferred[0], 124);
	/* priority 2: (124 >> 2) + 250 * 2 = 531: 4 batches of 128, 19 left */
	scan_ret = 10;
	mcg_shrink_slab(mcg_group_root(), 0, 2, 0, 0, &scanned, &freed, NULL);
	CHECK_EQ(scans, 4);
	CHECK_EQ(scanned_total, 512);
	CHECK_EQ(freed, 40);
	CHECK_EQ(scanned, 512);
	/* deferred: nr + delta - scanned = 124 + 500 - 512 = 112 */
	CHECK_EQ(s->nr_deferred[0], 112);
	/* The cap: deferred never above 2x freeable. */
	fake_count = 40;
	scan_ret = MCG_SHRINK_STOP; /* stop at once: all the work is deferred */
	reset();
	scan_ret = MCG_SHRINK_STOP;
	mcg_shrink_slab(mcg_group_root(), 0, 0, 0, 0, &scanned, &freed, NULL);
	CHECK_EQ(scans, 1);
	CHECK(s->nr_deferred[0] <= 80);
	/* MCG_SHRINKER_TRIM_HALF: half of freeable per pass, regardless of priority */
	mcg_shrinker_destroy(s);
	s = mk(MCG_SHRINKER_TRIM_HALF, 0, 10);
	REQUIRE(s);
	reset();
	fake_count = 100;
	mcg_shrink_slab(mcg_group_root(), 0, 12, 0, 0, &scanned, &freed, NULL);
	CHECK_EQ(scanned_total, 50);
	mcg_shrinker_destroy(s);
}

/* seeks left 0 is MCG_DEFAULT_SEEKS: the ordinary arithmetic, never the aggressive trim. */
static void test_seeks_zero_is_default(void)
{
	mcg_shrinker_t *s = mk(0, 0, 10);
	REQUIRE(s);
	unsigned long scanned = 0, freed = 0;
	reset();
	fake_count = 1000;
	/* priority 12: (1000 >> 12) * 4 / 2 = 0, where trimming half would scan 500 */
	mcg_shrink_slab(mcg_group_root(), 0, 12, 0, 0, &scanned, &freed, NULL);
	CHECK_EQ(scanned_total, 0);
	/* priority 6: (1000 >> 6) * 4 / 2 = 30: three batches of 10 */
	mcg_shrink_slab(mcg_group_root(), 0, 6, 0, 0, &scanned, &freed, NULL);
	CHECK_EQ(scanned_total, 30);
	mcg_shrinker_destroy(s);
}

static void test_small_cache_tight(void)
{
	/* Fewer objects than a batch: scanned when total_scan >= freeable. */
	mcg_shrinker_t *s = mk(0, 2, 128);
	REQUIRE(s);
	reset();
	fake_count = 20;
	unsigned long scanned = 0, freed = 0;
	mcg_shrink_slab(mcg_group_root(), 0, 0, 0, 0, &scanned, &freed, NULL); /* delta 40 >= 20 */
	CHECK_EQ(scans, 1);
	CHECK_EQ(scanned_total, 40);
	mcg_shrinker_destroy(s);
}

static void test_marks(void)
{
	mcg_shrinker_t *s = mk(MCG_SHRINKER_MEMCG_AWARE, 2, 128);
	REQUIRE(s);
	mcg_group_t *g;
	REQUIRE(mcg_group_create(NULL, "marks", &g) == 0);
	unsigned long scanned = 0, freed = 0;
	reset();
	/* Unmarked group: the shrinker is not even counted. */
	mcg_shrink_slab(g, 0, 0, 0, 0, &scanned, &freed, NULL);
	CHECK_EQ(counts, 0);
	REQUIRE(mcg_reclaim_info_get(g));
	mcg_shrinker_mark(g, s->id, 0);
	fake_count = MCG_SHRINK_EMPTY;
	mcg_shrink_slab(g, 0, 0, 0, 0, &scanned, &freed, NULL);
	CHECK_EQ(counts, 2); /* counted, cleared, counted again */
	CHECK(!(g->reclaim->map[0][s->id / 64] & (1ul << (s->id % 64))));
	reset();
	mcg_shrink_slab(g, 0, 0, 0, 0, &scanned, &freed, NULL);
	CHECK_EQ(counts, 0);
	/* 0 freeable is not empty: the mark stays. */
	mcg_shrinker_mark(g, s->id, 0);
	fake_count = 0;
	mcg_shrink_slab(g, 0, 0, 0, 0, &scanned, &freed, NULL);
	CHECK_EQ(counts, 1);
	CHECK(g->reclaim->map[0][s->id / 64] & (1ul << (s->id % 64)));
	/* Unregistered: never called again. */
	mcg_shrinker_unregister(s);
	reset();
	mcg_shrink_slab(g, 0, 0, 0, 0, &scanned, &freed, NULL);
	CHECK_EQ(counts, 0);
	mcg_shrinker_destroy(s);
	mcg_group_remove(g);
	mcg_group_put(g);
}

/* Entries of a pop_children list, walked at most @max steps (-1: the walk
 * did not come back to the head, the list is broken). */
static int pop_entries(mcg_group_t *parent, int max)
{
	int n = 0;
	for (struct mcg_list *it = parent->pop_children.next; it != &parent->pop_children;
	     it = it->next)
		if (++n > max)
			return -1;
	return n;
}

/* The populated tree: a group with marks is on its parent's pop_children
 * once, and so is each ancestor with populated descendants, however many
 * it has (a second populated child changes the count, not the lists). */
static void test_populated_tree(void)
{
	mcg_shrinker_t *s = mk(MCG_SHRINKER_MEMCG_AWARE, 2, 128);
	REQUIRE(s);
	mcg_group_t *p, *c1, *c2;
	REQUIRE(mcg_group_create(NULL, "pop", &p) == 0);
	REQUIRE(mcg_group_create(p, "c1", &c1) == 0);
	REQUIRE(mcg_group_create(p, "c2", &c2) == 0);
	int root_before = pop_entries(mcg_group_root(), 1000);
	REQUIRE(root_before >= 0);
	REQUIRE(mcg_reclaim_info_get(c1) && mcg_reclaim_info_get(c2));
	mcg_shrinker_mark(c1, s->id, 0);
	mcg_shrinker_mark(c2, s->id, 0);
	CHECK_EQ(p->populated, 2);
	CHECK_EQ(c1->populated, 1);
	CHECK_EQ(pop_entries(p, 10), 2);
	CHECK_EQ(pop_entries(mcg_group_root(), 1000), root_before + 1);
	mcg_shrinker_unregister(s);
	mcg_shrinker_destroy(s);
	mcg_group_t *v[] = {c1, c2, p};
	for (int i = 0; i < 3; i++) {
		mcg_group_remove(v[i]);
		mcg_group_put(v[i]);
	}
	CHECK_EQ(pop_entries(mcg_group_root(), 1000), root_before);
}

static void test_registry_errors(void)
{
	mcg_shrinker_t *s;
	mcg_shrinker_ops_t ops = {.count_objects = f_count};
	CHECK_EQ(mcg_shrinker_create(&ops, &s), -EINVAL);
	CHECK_EQ(mcg_shrinker_create(NULL, &s), -EINVAL);
	mcg_shrinker_ops_t no_count = {.scan_objects = f_scan};
	CHECK_EQ(mcg_shrinker_create(&no_count, &s), -EINVAL);
	ops.scan_objects = f_scan;
	ops.flags = 1u << 7;
	CHECK_EQ(mcg_shrinker_create(&ops, &s), -EINVAL);
	ops.flags = MCG_SHRINKER_TRIM_HALF; /* no seeks with it: it means "no cost" */
	ops.seeks = 2;
	CHECK_EQ(mcg_shrinker_create(&ops, &s), -EINVAL);
	ops.seeks = 0;
	ops.flags = 0;
	CHECK_EQ(mcg_shrinker_create(&ops, NULL), -EINVAL);
	REQUIRE(mcg_shrinker_create(&ops, &s) == 0);
	CHECK_EQ(mcg_shrinker_register(s), 0);
	CHECK_EQ(mcg_shrinker_register(s), -EINVAL);
	CHECK_EQ(mcg_shrinker_register(NULL), -EINVAL);
	mcg_shrinker_unregister(NULL);               /* nothing to do */
	CHECK_EQ(mcg_shrinker_register(s), -EINVAL); /* still registered */
	mcg_shrinker_unregister(s);
	mcg_shrinker_unregister(s); /* idempotent */
	mcg_shrinker_destroy(s);
	mcg_shrinker_destroy(NULL);
	/* Ids run out at MCG_SHRINKER_MAX. */
	static mcg_shrinker_t *all[MCG_SHRINKER_MAX + 1];
	int n = 0, err = 0, taken = mcg_shrinker_ids_in_use();
	while (n <= MCG_SHRINKER_MAX && !(err = mcg_shrinker_create(&ops, &all[n])))
		n++;
	CHECK_EQ(err, -ENOSPC);
	CHECK_EQ(n, MCG_SHRINKER_MAX - taken); /* every free id, and no more */
	CHECK_EQ(mcg_shrinker_ids_in_use(), MCG_SHRINKER_MAX);
	while (n > 0)
		mcg_shrinker_destroy(all[--n]);
	CHECK_EQ(mcg_shrinker_ids_in_use(), taken);
}

/* A create refused because the ids ran out gives back what it allocated. */
static void test_refused_create_keeps_nothing(void)
{
	mcg_shrinker_ops_t ops = {.count_objects = f_count, .scan_objects = f_scan};
	static mcg_shrinker_t *all[MCG_SHRINKER_MAX + 1];
	int n = 0;
	while (n <= MCG_SHRINKER_MAX && !mcg_shrinker_create(&ops, &all[n]))
		n++;
	mcg_shrinker_t *s = NULL;
	CHECK_EQ(mcg_shrinker_create(&ops, &s), -ENOSPC); /* warm */
	size_t before = held_kmalloc_objects();
	for (int i = 0; i < 16; i++)
		CHECK_EQ(mcg_shrinker_create(&ops, &s), -ENOSPC);
	CHECK_EQ(held_kmalloc_objects(), before);
	while (n > 0)
		mcg_shrinker_destroy(all[--n]);
}

int main(void)
{
	RUN(test_arithmetic);
	RUN(test_seeks_zero_is_default);
	RUN(test_small_cache_tight);
	RUN(test_marks);
	RUN(test_populated_tree);
	RUN(test_registry_errors);
	RUN(test_refused_create_keeps_nothing);
	return test_done();
}
