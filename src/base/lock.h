/* SPDX-License-Identifier: MIT */
/*
 * base/lock.h - mutexes with a rank.
 *
 * Every lock has a rank; a thread takes locks in non-decreasing rank order.
 * Debug builds (mcg_config_debug) check the order on every acquisition and die
 * on a violation.  The table of ranks is the lock order of docs/design.md.
 */
#ifndef MCG_BASE_LOCK_H
#define MCG_BASE_LOCK_H

#include <pthread.h>

#include "base/compiler.h"

/* The lock order: lower ranks are taken first. */
enum mcg_lock_rank {
	MCG_RANK_CACHE_LIST = 10, /* global list of caches */
	MCG_RANK_GROUP_TREE = 15, /* group hierarchy (create/remove/iterate) */
	MCG_RANK_PCPU = 20,       /* one CPU's array of one cache */
	MCG_RANK_NODE = 30,       /* one cache's slab lists on one node */
	MCG_RANK_PAGE = 40,       /* the page allocator of one node */
	MCG_RANK_LEAF = 90,       /* leaf locks: nothing is taken under them */
};

typedef struct mcg_lock {
	pthread_mutex_t mutex;
	int rank;
} mcg_lock_t;

/** mcg_lock_init - initialise @l with @rank. */
void mcg_lock_init(mcg_lock_t *l, int rank);
/** mcg_lock_destroy - release the resources of an unlocked lock. */
void mcg_lock_destroy(mcg_lock_t *l);

void mcg_lock_check_acquire_(const mcg_lock_t *l);
void mcg_lock_check_release_(const mcg_lock_t *l);

/** mcg_lock - acquire @l.  Pair with mcg_unlock(). */
static inline void mcg_lock(mcg_lock_t *l)
{
	if (mcg_config_debug)
		mcg_lock_check_acquire_(l);
	pthread_mutex_lock(&l->mutex);
}

/** mcg_unlock - release @l. */
static inline void mcg_unlock(mcg_lock_t *l)
{
	if (mcg_config_debug)
		mcg_lock_check_release_(l);
	pthread_mutex_unlock(&l->mutex);
}

/** mcg_lock_raw / mcg_unlock_raw - without rank checks (fork handlers only). */
static inline void mcg_lock_raw(mcg_lock_t *l) { pthread_mutex_lock(&l->mutex); }
static inline void mcg_unlock_raw(mcg_lock_t *l) { pthread_mutex_unlock(&l->mutex); }

#endif /* MCG_BASE_LOCK_H */
