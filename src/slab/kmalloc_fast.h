/* SPDX-License-Identifier: MIT */
/*
 * slab/kmalloc_fast.h - the fast paths of the malloc family (slab/kmalloc.c),
 * inline: in mcg_malloc/mcg_free and in the malloc shim's malloc/free alike,
 * so that a program's malloc reaches the per-CPU pop with no call or jump of
 * memcg's own.
 *
 * mcg_kmalloc_fast(n): one table load for n <= 8 KiB (the cache by
 * (n + 15) / 16: its class's, or a fitted cache of exactly that granule -
 * slab/kmalloc.c), a count-leading-zeros above; then the cache's pop.  Until
 * the classes exist every table entry names a stub cache whose arrays are
 * always empty, so there is no test for "not initialised": the pop fails
 * and the slow path, which has the size, finds the stub.  The mode is
 * tested (this runs before mcg_percpu_init(), when a section's descriptor
 * store would land in the TCB).
 *
 * mcg_kfree_fast(p): the chunk map → the unit's descriptor → the index →
 * the cache fast path, with no test of the unit's cache (a unit that holds
 * no slab reads count 0, so the index fails and the slow path sorts out
 * large blocks and bad pointers) and no NULL test (chunk 0 is never memcg's).
 * The plain push is its straight line, the accounted free a branch away,
 * and the cache is loaded on the slow paths only (MCG_FREE_CACHE).
 */
#ifndef MCG_SLAB_KMALLOC_FAST_H
#define MCG_SLAB_KMALLOC_FAST_H

#include "slab/cache_fast.h"

#define KMALLOC_CLASSES 52
#define KMALLOC_SMALL_MAX 8192
#define KMALLOC_FIT_MAX 16 /* fitted caches at most (slab/kmalloc.c) */

/** The caches by class (NULL before initialisation), and by (size + 15) / 16
 *  up to KMALLOC_SMALL_MAX (the stub before initialisation; a fitted cache
 *  where one was made); the fitted caches in the order made (NULL past
 *  them; each entry written once, with a release store, never cleared). */
extern mcg_hidden struct mcg_cache *mcg_kmalloc_caches_[KMALLOC_CLASSES];
extern mcg_hidden struct mcg_cache *mcg_kmalloc_small_[KMALLOC_SMALL_MAX / 16 + 1];
extern mcg_hidden struct mcg_cache *mcg_kmalloc_fitted_[KMALLOC_FIT_MAX];
extern mcg_hidden struct mcg_cache mcg_kmalloc_stub_;

/* What mcg_kmalloc_large_cache() returns for sizes no cache serves (mapped directly). */
#define MCG_KMALLOC_TOO_LARGE ((struct mcg_cache *)1)

/** The class of @size (<= MCG_KMALLOC_MAX_CACHE_SIZE). */
static inline unsigned mcg_kmalloc_class(size_t size)
{
	if (size <= 128)
		return size ? (unsigned)((size + 15) >> 4) - 1 : 0;
	unsigned b = 63u - (unsigned)__builtin_clzl(size - 1); /* 2^b < size <= 2^(b+1) */
	unsigned k = (unsigned)((size - 1 - (1ul << b)) >> (b - 2));
	return 8 + (b - 7) * 4 + k;
}

/** The cache of @size up to KMALLOC_SMALL_MAX: the stub before initialisation. */
static inline struct mcg_cache *mcg_kmalloc_small_cache(size_t size)
{
	return __atomic_load_n(&mcg_kmalloc_small_[(size + 15) >> 4], __ATOMIC_ACQUIRE);
}

/** The cache of @size > KMALLOC_SMALL_MAX; NULL before initialisation,
 *  MCG_KMALLOC_TOO_LARGE past the classes (callers test both: <= 1). */
static inline struct mcg_cache *mcg_kmalloc_large_cache(size_t size)
{
	if (size <= MCG_KMALLOC_MAX_CACHE_SIZE)
		return __atomic_load_n(&mcg_kmalloc_caches_[mcg_kmalloc_class(size)],
		                       __ATOMIC_ACQUIRE);
	return MCG_KMALLOC_TOO_LARGE;
}

/** The slow paths (slab/kmalloc.c): past a failed pop of @c; any size; a
 *  pointer that is not an object start of a slab (NULL, large, bad). */
void *mcg_kmalloc_small_slow(size_t size, struct mcg_cache *c);
void *mcg_kmalloc_slow(size_t size);
void mcg_kfree_slow(void *p);

/** The fitted caches made so far (mcg_kmalloc_fitted_'s entries in use). */
unsigned mcg_kmalloc_fit_count(void);

/** mcg_malloc()'s body. */
static mcg_always_inline void *mcg_kmalloc_fast(size_t size)
{
	if (likely(size <= KMALLOC_SMALL_MAX)) {
		struct mcg_cache *c = mcg_kmalloc_small_cache(size);
		void *obj;
		if (likely(mcg_percpu_use_rseq()) && likely(obj = mcg_cache_pop(c)))
			return obj;
		return mcg_kmalloc_small_slow(size, c);
	}
	struct mcg_cache *c = mcg_kmalloc_large_cache(size);
	if (unlikely((uintptr_t)c <= 1))
		return mcg_kmalloc_slow(size);
	return mcg_cache_alloc_fast(c);
}

/** mcg_free()'s body. */
static mcg_always_inline void mcg_kfree_fast(void *p)
{
	if (likely(mcg_chunk_owned(p))) {
		struct mcg_slab *s = mcg_slab_unit(p);
		long idx = mcg_slab_index(s, p);
		if (likely(idx >= 0)) {
			/* The plain free on the straight line: a program's
			 * frees are plain unless it runs with a heap group. */
			if (likely(!__atomic_load_n(&s->objcgs, __ATOMIC_RELAXED)))
				mcg_cache_push(NULL, s, p);
			else
				mcg_cache_free_at(NULL, s, p,
				                  idx); /* s->cache, on the slow paths */
			return;
		}
	}
	mcg_kfree_slow(p);
}

#endif /* MCG_SLAB_KMALLOC_FAST_H */
