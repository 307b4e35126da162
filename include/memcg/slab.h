/* SPDX-License-Identifier: MIT */
/*
 * memcg/slab.h - object caches (the kmem_cache of memcg).
 *
 * A cache hands out objects of one size.  Allocation and free go through a
 * per-CPU array of objects (an rseq critical section where glibc registered
 * rseq, a per-CPU lock otherwise); batches move between that array and the
 * slabs of the calling CPU's NUMA node.  Slabs are carved from page-allocator
 * chunks, so a pointer finds its slab in O(1).
 *
 * Thread safety: every call may be made from any thread, except that a cache
 * must not be used during or after its own mcg_cache_destroy().
 */
#ifndef MEMCG_SLAB_H
#define MEMCG_SLAB_H

#include <stddef.h>
#include <stdio.h>

#include "memcg/group.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An object cache.  Opaque. */
typedef struct mcg_cache mcg_cache_t;

/** Constructor run once on each object when its slab is created. */
typedef void (*mcg_ctor_t)(void *obj);

/* Cache flags (mcg_cache_create's @flags). */
/** Align objects to the hardware cache line (64 bytes). */
#define MCG_CACHE_HWCACHE_ALIGN 0x0001u
/** Objects are reclaimable (counted as such in statistics; shrinkable caches). */
#define MCG_CACHE_RECLAIMABLE 0x0002u
/** Fill free objects with a poison pattern and check it on allocation. */
#define MCG_CACHE_POISON 0x0004u
/** Put a red zone after each object and check it on free. */
#define MCG_CACHE_REDZONE 0x0008u
/**
 * Account every object: mcg_cache_alloc() charges it to the current memory
 * group (mcg_group_current(), memcg/group.h) until it is freed; it counts in
 * memory.stat as slab_unreclaimable, or slab_reclaimable with
 * MCG_CACHE_RECLAIMABLE.  Each accounted object charges its slot size plus
 * 2 bytes (its entry in the slab's objcg vector): mcg_cache_stats()'s
 * charge_size.  A freed object's charge may stay with it while it waits in
 * a CPU array for reuse (not counted as in use); mcg_group_drain_stocks()
 * gives such charges back.
 */
#define MCG_CACHE_ACCOUNT 0x0010u
/** All flags the library knows; any other bit is -EINVAL. */
#define MCG_CACHE_FLAGS_ALL 0x001fu

/**
 * mcg_cache_create - create an object cache.
 * @name:  cache name (copied; at most 31 characters are kept), not NULL.
 * @size:  object size in bytes, 1 .. MCG_CACHE_MAX_SIZE.
 * @align: object alignment: 0 (natural: 8, or 16 for sizes >= 16) or a power
 *         of two up to 4096.
 * @flags: MCG_CACHE_* flags.
 * @ctor:  optional constructor, run once per object when its slab is created
 *         (not on every allocation), as in the kernel.
 *
 * Return: the cache, or NULL with errno EINVAL (bad argument) or ENOMEM.
 * Pair with mcg_cache_destroy().
 */
mcg_cache_t *mcg_cache_create(const char *name, size_t size, size_t align, unsigned flags,
                              mcg_ctor_t ctor);

/** Largest object size a cache accepts (bytes). */
#define MCG_CACHE_MAX_SIZE (256u * 1024u)

/**
 * mcg_cache_destroy - destroy an empty cache and return its memory to the OS.
 *
 * Return: 0; -EBUSY if objects are still allocated (each is reported through
 * the report handler and the cache is left intact); -EINVAL for NULL.
 */
int mcg_cache_destroy(mcg_cache_t *cache);

/**
 * mcg_cache_alloc - allocate one object.
 *
 * Fast path: pop from this CPU's array.  Return: the object, or NULL with
 * errno ENOMEM.  Pair with mcg_cache_free().
 */
void *mcg_cache_alloc(mcg_cache_t *cache);

/**
 * mcg_cache_alloc_account - allocate one object charged to @g (NULL: the
 * current group), whatever the cache's flags (see MCG_CACHE_ACCOUNT).  Over
 * the group's memory.max it reclaims (memcg/reclaim.h), then fails.
 * Return: the object, or NULL with errno ENOMEM (nothing charged) or EINVAL
 * (@cache NULL).  Pair with mcg_cache_free(), which uncharges.
 */
void *mcg_cache_alloc_account(mcg_cache_t *cache, mcg_group_t *g);

/**
 * mcg_cache_free - free an object of @cache.  NULL is ignored.
 *
 * Any thread may free any object; an accounted object is uncharged from the
 * group it is charged to now (no lock on the fast path).  A pointer that is not a live object of
 * @cache (double free, foreign pointer, wrong cache) is reported through the
 * report handler and not freed.
 */
void mcg_cache_free(mcg_cache_t *cache, void *obj);

/**
 * mcg_cache_shrink - flush every CPU's array of @cache back to its slabs,
 * return every empty slab to the OS (madvise), and purge every partly used
 * one: the pages that lie wholly inside its free slots go back to the OS
 * too (not for a cache with a constructor, whose free objects keep their
 * constructed state).  So the resident set drops to about the live objects.
 *
 * Costly (stops every CPU's array): call it rarely.
 * Return: bytes returned to the OS, or -EINVAL for NULL.
 */
long mcg_cache_shrink(mcg_cache_t *cache);

/**
 * mcg_cache_reap - one step of periodic aging for @cache: a CPU array that
 * did not need its node since the last step gives all its objects back to
 * their slabs; empty slabs beyond a node's reserve go back to the OS (half
 * the surplus while the cache is busy, all of it once idle, the reserve too
 * after two idle steps); and of a few partly used slabs per node, one left
 * untouched since the last step looked at it gives back the pages that lie
 * wholly inside its free slots (as mcg_cache_shrink() purges).  Bounded
 * work: cheap enough to run every second.
 *
 * Return: bytes returned to the OS, or -EINVAL for NULL.
 */
long mcg_cache_reap(mcg_cache_t *cache);

/**
 * mcg_slab_reap_all - mcg_cache_reap() on every cache, then one aging step
 * of the page layer: empty chunks and the large blocks kept for reuse.
 * Return: bytes freed.
 */
long mcg_slab_reap_all(void);

/**
 * mcg_slab_shrink_all - mcg_cache_shrink() on every cache, the kmalloc
 * caches included: every free object goes back to its slab, every empty
 * slab, every free page inside a partly used one and every large block kept
 * for reuse to the OS (what malloc_trim(0) does for glibc).  Costly: stops
 * every CPU's array of every cache.  Return: bytes returned to the OS.
 */
long mcg_slab_shrink_all(void);

/**
 * mcg_reaper_start - start a background thread that calls
 * mcg_slab_reap_all() every @interval_ms milliseconds.
 * Return: 0, -EALREADY if running, -EINVAL if @interval_ms is 0, or -errno.
 * Pair with mcg_reaper_stop().  The thread does not survive fork(): a
 * forked child has no reaper until it starts one.
 */
int mcg_reaper_start(unsigned interval_ms);

/** mcg_reaper_stop - stop the reaper thread and wait for it.  Idempotent. */
void mcg_reaper_stop(void);

/** Statistics of one cache, as /proc/slabinfo reports them. */
typedef struct mcg_cache_stats {
	const char *name;     /**< cache name (valid while the cache lives) */
	size_t object_size;   /**< requested size */
	size_t slot_size;     /**< bytes per object slot, with alignment and red zone */
	size_t charge_size;   /**< bytes an accounted object charges: its slot and its
	                           2-byte objcg entry (a kmalloc block: its usable size + 2) */
	size_t active_objs;   /**< objects handed out to users */
	size_t cached_objs;   /**< free objects parked in per-CPU arrays */
	size_t num_objs;      /**< object slots in all slabs */
	size_t objs_per_slab; /**< object slots per slab */
	size_t slab_bytes;    /**< bytes per slab */
	size_t active_slabs;  /**< slabs holding at least one object */
	size_t num_slabs;     /**< all slabs, empty ones included */
	size_t cpu_limit;     /**< per-CPU array capacity */
	size_t batch;         /**< objects moved per refill/flush */
	unsigned flags;       /**< MCG_CACHE_* flags */
	size_t purged_bytes;  /**< bytes of pages inside free slots of partly used slabs
	                           given back to the OS (purged by aging or shrink) and
	                           not handed out since */
} mcg_cache_stats_t;

/** mcg_cache_stats - fill @st for @cache (exact at rest).  Return 0 or -EINVAL. */
int mcg_cache_stats(mcg_cache_t *cache, mcg_cache_stats_t *st);

/**
 * mcg_slabinfo_write - write every cache in /proc/slabinfo "version: 2.1"
 * format to the file descriptor @fd.  Uses no heap (safe inside the malloc
 * shim).  Return: 0 or -errno.
 */
int mcg_slabinfo_write(int fd);

#ifdef __cplusplus
}
#endif
#endif /* MEMCG_SLAB_H */
