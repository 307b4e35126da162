/* SPDX-License-Identifier: MIT */
/*
 * evict.c - the list_lru and the shrinker (see evict.h).
 */
#include "evict.h"

#include <errno.h>
#include <stdlib.h>

#include "table.h"

static enum mcg_lru_status isolate(mcg_lru_link_t *item, mcg_list_lru_one_t *list, void *arg)
{
	struct kv_entry *e = (struct kv_entry *)item;
	if (__atomic_load_n(&e->referenced, __ATOMIC_RELAXED)) {
		__atomic_store_n(&e->referenced, 0, __ATOMIC_RELAXED);
		return MCG_LRU_ROTATE;
	}
	if (!kv_entry_try_unlink(e))
		return MCG_LRU_SKIP; /* its stripe is busy: the stripe's owner may be us */
	mcg_list_lru_isolate_move(list, item, arg);
	return MCG_LRU_REMOVED;
}

static unsigned long dispose(mcg_lru_link_t *dispose)
{
	unsigned long n = 0;
	for (mcg_lru_link_t *l = dispose->next, *next; l != dispose; l = next) {
		next = l->next;
		kv_entry_free((struct kv_entry *)l);
		n++;
	}
	return n;
}

static unsigned long count_objects(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	struct kv_evict *ev = mcg_shrinker_private(s);
	return mcg_list_lru_shrink_count(ev->lru, sc);
}

static unsigned long scan_objects(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	struct kv_evict *ev = mcg_shrinker_private(s);
	mcg_lru_link_t list;
	mcg_lru_link_init(&list);
	mcg_list_lru_shrink_walk(ev->lru, sc, isolate, &list);
	return dispose(&list);
}

int kv_evict_create(struct kv_evict **out)
{
	struct kv_evict *ev = calloc(1, sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	mcg_shrinker_ops_t ops = {
	        .name = "kvcache",
	        .count_objects = count_objects,
	        .scan_objects = scan_objects,
	        .seeks = MCG_DEFAULT_SEEKS,
	        .flags = MCG_SHRINKER_MEMCG_AWARE,
	        .private_data = ev,
	};
	int err = mcg_shrinker_create(&ops, &ev->shrinker);
	if (!err)
		err = mcg_list_lru_create(ev->shrinker, &ev->lru);
	if (!err)
		err = mcg_shrinker_register(ev->shrinker);
	if (err) {
		kv_evict_destroy(ev);
		return err;
	}
	*out = ev;
	return 0;
}

void kv_evict_stop(struct kv_evict *ev) { mcg_shrinker_unregister(ev->shrinker); }

void kv_evict_destroy(struct kv_evict *ev)
{
	if (!ev)
		return;
	mcg_shrinker_destroy(ev->shrinker); /* unregisters first */
	mcg_list_lru_destroy(ev->lru);
	free(ev);
}

int kv_evict_add(struct kv_evict *ev, struct kv_entry *e, mcg_group_t *g)
{
	int r = mcg_list_lru_add(ev->lru, &e->lru, 0, g);
	return r < 0 ? r : 0;
}

void kv_evict_del(struct kv_evict *ev, struct kv_entry *e, mcg_group_t *g)
{
	mcg_list_lru_del(ev->lru, &e->lru, 0, g);
}

unsigned long kv_evict_some(struct kv_evict *ev, mcg_group_t *g, unsigned long nr)
{
	mcg_lru_link_t list;
	mcg_lru_link_init(&list);
	/* Twice the budget: referenced entries rotate before anything goes. */
	unsigned long walk = 2 * nr;
	mcg_list_lru_walk_one(ev->lru, 0, g, isolate, &list, &walk);
	return dispose(&list);
}
