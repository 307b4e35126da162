/* SPDX-License-Identifier: MIT */
/*
 * pcache.h - a simulated page cache for the reclaim tests: objects of one
 * page each, charged to a group with mcg_charge() and kept on a memcg-aware
 * list_lru; its shrinker frees the oldest and uncharges them.  Plays the
 * role page cache plays in the kernel's test_memcontrol.c; mcg_charge()
 * without the cache plays anonymous memory (unreclaimable, no swap).
 */
#ifndef MCG_TEST_PCACHE_H
#define MCG_TEST_PCACHE_H

#include <errno.h>
#include <stdlib.h>

#include "memcg/group.h"
#include "memcg/reclaim.h"
#include "test.h"

struct pc_obj {
	mcg_lru_link_t link;
	mcg_group_t *g; /* charged to, referenced */
};

struct pcache {
	mcg_shrinker_t *shrinker;
	mcg_list_lru_t *lru;
	long live;  /* objects alive (atomic) */
	long freed; /* objects freed by the shrinker (atomic) */
};

static enum mcg_lru_status pc_isolate(mcg_lru_link_t *item, mcg_list_lru_one_t *list, void *arg)
{
	mcg_list_lru_isolate_move(list, item, arg);
	return MCG_LRU_REMOVED;
}

static unsigned long pc_count(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	struct pcache *pc = mcg_shrinker_private(s);
	return mcg_list_lru_shrink_count(pc->lru, sc);
}

/* Free every object on @dispose: uncharge, drop the group, free. */
static unsigned long pc_dispose(struct pcache *pc, mcg_lru_link_t *dispose)
{
	unsigned long n = 0;
	while (dispose->next != dispose) {
		mcg_lru_link_t *l = dispose->next;
		l->next->prev = l->prev;
		l->prev->next = l->next;
		struct pc_obj *o = (struct pc_obj *)l;
		mcg_uncharge(o->g, 1);
		mcg_group_put(o->g);
		free(o);
		n++;
	}
	__atomic_fetch_sub(&pc->live, (long)n, __ATOMIC_RELAXED);
	__atomic_fetch_add(&pc->freed, (long)n, __ATOMIC_RELAXED);
	return n;
}

static unsigned long pc_scan(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	struct pcache *pc = mcg_shrinker_private(s);
	mcg_lru_link_t dispose = {&dispose, &dispose};
	mcg_list_lru_shrink_walk(pc->lru, sc, pc_isolate, &dispose);
	return pc_dispose(pc, &dispose);
}

/* Set up @pc with a memcg-aware shrinker (@batch objects per call). */
static int pc_init(struct pcache *pc, unsigned long batch)
{
	pc->live = pc->freed = 0;
	mcg_shrinker_ops_t ops = {
	        .name = "pcache",
	        .count_objects = pc_count,
	        .scan_objects = pc_scan,
	        .seeks = MCG_DEFAULT_SEEKS,
	        .batch = batch,
	        .flags = MCG_SHRINKER_MEMCG_AWARE,
	        .private_data = pc,
	};
	int err = mcg_shrinker_create(&ops, &pc->shrinker);
	if (err)
		return err;
	err = mcg_list_lru_create(pc->shrinker, &pc->lru);
	if (err)
		return err;
	return mcg_shrinker_register(pc->shrinker);
}

/* Add @nr_pages objects to @g's cache; stop at the first failed charge. */
static int pc_fill(struct pcache *pc, mcg_group_t *g, long nr_pages)
{
	for (long i = 0; i < nr_pages; i++) {
		struct pc_obj *o = calloc(1, sizeof(*o));
		if (!o)
			return -ENOMEM;
		int err = mcg_charge(g, 1, 0);
		if (err) {
			free(o);
			return err;
		}
		mcg_group_get(g);
		o->g = g;
		__atomic_fetch_add(&pc->live, 1, __ATOMIC_RELAXED);
		mcg_list_lru_add(pc->lru, &o->link, 0, g);
	}
	return 0;
}

/* Free everything left and tear @pc down; an object still alive after
 * that (one the lists lost) is a failed check. */
static void pc_destroy(struct pcache *pc)
{
	mcg_shrinker_unregister(pc->shrinker);
	mcg_lru_link_t dispose = {&dispose, &dispose};
	mcg_list_lru_walk(pc->lru, pc_isolate, &dispose, ~0ul);
	pc_dispose(pc, &dispose);
	CHECK_EQ(pc->live, 0);
	mcg_list_lru_destroy(pc->lru);
	mcg_shrinker_destroy(pc->shrinker);
}

#endif /* MCG_TEST_PCACHE_H */
