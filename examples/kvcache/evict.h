/* SPDX-License-Identifier: MIT */
/*
 * evict.h - eviction: one memcg-aware list_lru holding every entry on the
 * list of the group it is charged to, and the shrinker that reclaim calls
 * on a group over its memory.max (or memory.high, or under global
 * pressure).  Reclaim therefore evicts only the keys of the group it
 * reclaims from - a tenant at its limit loses its own least recently used
 * keys, never another tenant's.
 *
 * The order is a CLOCK approximation of LRU, as the kernel's dentry and
 * inode caches do: a read sets the entry's `referenced` bit instead of
 * moving it (which would take the list lock on every GET); the isolate
 * callback gives a referenced entry a second chance (rotates it to the
 * tail, clearing the bit) and evicts the others, oldest first.
 *
 * Locking: the isolate callback runs with the list_lru's list lock held
 * and only *tries* the entry's stripe lock (table.h); a busy stripe's
 * entry is skipped.  Entries are freed after the walk, with no lock held:
 * reclaim counts the pages their frees uncharge.
 */
#ifndef KV_EVICT_H
#define KV_EVICT_H

#include "memcg/group.h"
#include "memcg/reclaim.h"

struct kv_entry;

struct kv_evict {
	mcg_shrinker_t *shrinker;
	mcg_list_lru_t *lru;
};

/** kv_evict_create - the list_lru and its registered shrinker.  Return 0 or -errno. */
int kv_evict_create(struct kv_evict **out);

/** kv_evict_stop - unregister the shrinker: reclaim no longer calls it (before teardown). */
void kv_evict_stop(struct kv_evict *ev);

/** kv_evict_destroy - free it; every table using it is destroyed already.  NULL ignored. */
void kv_evict_destroy(struct kv_evict *ev);

/** kv_evict_add - put @e at the tail of @g's list (stripe lock held).  Return 0 or -ENOMEM. */
int kv_evict_add(struct kv_evict *ev, struct kv_entry *e, mcg_group_t *g);

/** kv_evict_del - take @e off @g's list (stripe lock held). */
void kv_evict_del(struct kv_evict *ev, struct kv_entry *e, mcg_group_t *g);

/**
 * kv_evict_some - evict @g's oldest unreferenced entries now, outside
 * reclaim (when an allocation failed even after reclaim): the walk visits
 * up to 2 x @nr entries (referenced ones rotate on the way).
 * Return: entries evicted.
 */
unsigned long kv_evict_some(struct kv_evict *ev, mcg_group_t *g, unsigned long nr);

#endif /* KV_EVICT_H */
