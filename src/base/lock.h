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
	MCG_RANK_CONTROL = 2,     /* starting and stopping the control and metrics servers */
	MCG_RANK_FILE_RW = 5,     /* one cached file: writers (shared) against truncate */
	MCG_RANK_FILE_WB = 7,     /* one cached file: one writeback at a time (backing I/O) */
	MCG_RANK_STOCK_DRAIN = 8, /* one full drain of the stocks at a time (group/stock.c) */
	MCG_RANK_CACHE_LIST = 10, /* global list of caches */
	MCG_RANK_GROUP_TREE = 15, /* group hierarchy (create/remove/iterate) */
	MCG_RANK_PCPU = 20,       /* one CPU's array of one cache */
	MCG_RANK_NODE = 30,       /* one cache's slab lists on one node */
	MCG_RANK_SLAB = 35,       /* one slab: bitmap, hint, inuse (spin) */
	MCG_RANK_PAGE = 40,       /* the page allocator of one node */
	MCG_RANK_LARGE = 42,      /* the retained large blocks (page/large.c) */
	MCG_RANK_OBJCG = 45,      /* one objcg: its group and charges (spin) */
	MCG_RANK_INODES = 50,     /* the page cache's table of files */
	MCG_RANK_MAPPING = 52,    /* one file's page index, tags, page state changes */
	MCG_RANK_WB = 54,         /* one writeback domain: its dirty files, bandwidth */
	MCG_RANK_LRUVEC = 56,     /* one group's file LRU on one node */
	MCG_RANK_PCG = 58,        /* one group's page-cache charges (spin) */
	MCG_RANK_PAGE_DATA = 60,  /* one cached page's bytes (rw spin) */
	MCG_RANK_FLUSHER = 62,    /* the flusher threads' work list */
	MCG_RANK_LRU = 80,        /* one list of a list_lru (child before parent on reparent) */
	MCG_RANK_POPULATED = 85,  /* the tree of groups holding reclaimable objects */
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

void mcg_lock_check_acquire_(int rank);
void mcg_lock_check_release_(int rank);

/** mcg_lock - acquire @l.  Pair with mcg_unlock(). */
static inline void mcg_lock(mcg_lock_t *l)
{
	if (mcg_config_debug)
		mcg_lock_check_acquire_(l->rank);
	pthread_mutex_lock(&l->mutex);
}

/** mcg_unlock - release @l. */
static inline void mcg_unlock(mcg_lock_t *l)
{
	if (mcg_config_debug)
		mcg_lock_check_release_(l->rank);
	pthread_mutex_unlock(&l->mutex);
}

/**
 * A spin lock with a rank, for short critical sections (one slab's objects).
 * Zero is unlocked, so zeroed memory holds a ready lock.  A waiter spins a
 * while, then yields the CPU (the holder may have been preempted).
 */
typedef struct mcg_spin {
	uint32_t locked;
	int rank;
} mcg_spin_t;

/** mcg_spin_init - initialise @l with @rank (or zero it and set the rank). */
static inline void mcg_spin_init(mcg_spin_t *l, int rank)
{
	l->locked = 0;
	l->rank = rank;
}

void mcg_spin_wait_(mcg_spin_t *l);

/** mcg_spin_lock - acquire @l.  Pair with mcg_spin_unlock(). */
static inline void mcg_spin_lock(mcg_spin_t *l)
{
	if (mcg_config_debug)
		mcg_lock_check_acquire_(l->rank);
	if (unlikely(__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE)))
		mcg_spin_wait_(l);
}

/** mcg_spin_unlock - release @l. */
static inline void mcg_spin_unlock(mcg_spin_t *l)
{
	if (mcg_config_debug)
		mcg_lock_check_release_(l->rank);
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

/** mcg_spin_lock_raw / mcg_spin_unlock_raw - without rank checks (fork handlers only). */
static inline void mcg_spin_lock_raw(mcg_spin_t *l)
{
	if (unlikely(__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE)))
		mcg_spin_wait_(l);
}
static inline void mcg_spin_unlock_raw(mcg_spin_t *l)
{
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

/**
 * A reader-writer lock with a rank (a pthread rwlock; waiters sleep).
 * Shared holders and the exclusive holder obey the same rank order.
 */
typedef struct mcg_rwlock {
	pthread_rwlock_t rw;
	int rank;
} mcg_rwlock_t;

/** mcg_rwlock_init - initialise @l with @rank.  Pair with mcg_rwlock_destroy(). */
void mcg_rwlock_init(mcg_rwlock_t *l, int rank);
/** mcg_rwlock_destroy - release the resources of an unlocked @l. */
void mcg_rwlock_destroy(mcg_rwlock_t *l);

/** mcg_rwlock_read - acquire @l shared.  Pair with mcg_rwlock_unlock(). */
static inline void mcg_rwlock_read(mcg_rwlock_t *l)
{
	if (mcg_config_debug)
		mcg_lock_check_acquire_(l->rank);
	pthread_rwlock_rdlock(&l->rw);
}

/** mcg_rwlock_write - acquire @l exclusive.  Pair with mcg_rwlock_unlock(). */
static inline void mcg_rwlock_write(mcg_rwlock_t *l)
{
	if (mcg_config_debug)
		mcg_lock_check_acquire_(l->rank);
	pthread_rwlock_wrlock(&l->rw);
}

/** mcg_rwlock_unlock - release @l (either mode). */
static inline void mcg_rwlock_unlock(mcg_rwlock_t *l)
{
	if (mcg_config_debug)
		mcg_lock_check_release_(l->rank);
	pthread_rwlock_unlock(&l->rw);
}

/** mcg_lock_raw / mcg_unlock_raw - without rank checks (fork handlers only). */
static inline void mcg_lock_raw(mcg_lock_t *l) { pthread_mutex_lock(&l->mutex); }
static inline void mcg_unlock_raw(mcg_lock_t *l) { pthread_mutex_unlock(&l->mutex); }

#endif /* MCG_BASE_LOCK_H */
