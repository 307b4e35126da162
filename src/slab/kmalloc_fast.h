/* SPDX-License-Identifier: MIT */
/*
 * slab/kmalloc_fast.h - the fast paths of the malloc family (slab/kmalloc.c),
 * inline: in mcg_malloc/mcg_free and in the malloc shim's malloc/free alike,
 * so that a program's malloc reaches the per-CPU pop with no call or jump of
 * memcg's own.
 *
 * mcg_kmalloc_fast(n): one table load for n <= 8 KiB (the CPU arrays of
 * the cache by (n + 15) / 16: its class's, or a fitted cache of exactly
 * that granule - slab/kmalloc.c), a count-leading-zeros above; then the
 * pop.  Until the classes exist every table entry holds no arrays (NULL),
 * and that test is the only one for "not initialised": the slow path, which
 * has the size, finds the stub.  No mode test: in locked mode the pop fails.
 *
 * mcg_kfree_fast(p): the chunk map → the unit's descriptor → the index →
 * the cache fast path, with no test of the unit's cache (a unit that holds
 * no slab reads start_test 0, so the start test fails and the slow path sorts out
 * large blocks and bad pointers) and no NULL test (chunk 0 is never memcg's).
 * The plain push is its straight line, the accounted free a branch away,
 * and the cache is loaded on the slow paths only (MCG_FREE_CACHE).
 */
#ifndef MCG_SLAB_KMALLOC_FAST_H
#define MCG_SLAB_KMALLOC_FAST_H

#include "memcg/kmalloc.h" /* MCG_KMALLOC_MAX_CACHE_SIZE */
#include "slab/cache_fast.h"

#define KMALLOC_CLASSES 52
#define KMALLOC_SMALL_MAX 8192
#define KMALLOC_FIT_MAX 16 /* fitted caches at most (slab/kmalloc.c) */

/*
 * The cache of a size up to KMALLOC_SMALL_MAX, and its CPU arrays beside it,
 * so that malloc's pop loads the arrays from the table, not from the cache.
 * Entries are 16 bytes, so (size + 15) rounded down to 16 is an entry's
 * byte offset: no shift.  Before initialisation: the stub, and pcpu NULL
 * (the test malloc's fast path makes; a pop then would store its
 * descriptor where mcg_rseq_offset, still 0, points: the TCB).  An entry
 * changes (the stub -> its class's cache -> a fitted cache) pcpu first,
 * then cache, one writer at a time (slab/kmalloc.c); a reader may pair
 * either word with either state, and both caches serve the size.
 */
struct mcg_kmalloc_entry {
	struct mcg_pcpu_stack *pcpu; /* cache->pcpu, or NULL before initialisation */
	struct mcg_cache *cache;
};
_Static_assert(sizeof(struct mcg_kmalloc_entry) == 16, "an entry's offset is (size + 15) & ~15");

/** Nonzero while the table holds no arrays (mcg_kmalloc_arrays_off()). */
extern mcg_hidden int mcg_kmalloc_arrays_off_;

/** The caches by class (NULL before initialisation), and by (size + 15) / 16
 *  up to KMALLOC_SMALL_MAX (above); the fitted caches in the order made
 *  (NULL past them; each entry written once, with a release store, never
 *  cleared). */
extern mcg_hidden struct mcg_cache *mcg_kmalloc_caches_[KMALLOC_CLASSES];
extern mcg_hidden struct mcg_kmalloc_entry mcg_kmalloc_small_[KMALLOC_SMALL_MAX / 16 + 1];
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

/** The table entry of @size up to KMALLOC_SMALL_MAX. */
static inline struct mcg_kmalloc_entry *mcg_kmalloc_small_entry(size_t size)
{
	return (struct mcg_kmalloc_entry *)((char *)mcg_kmalloc_small_ +
	                                    ((size + 15) & ~(size_t)15));
}

/** The cache of @size up to KMALLOC_SMALL_MAX: the stub before initialisation. */
static inline struct mcg_cache *mcg_kmalloc_small_cache(size_t size)
{
	return __atomic_load_n(&mcg_kmalloc_small_entry(size)->cache, __ATOMIC_ACQUIRE);
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
 *  pointer that is not an object start of a slab (NULL, large, bad);
 *  mcg_kmalloc_small_slow() of entry @e's cache. */
void *mcg_kmalloc_small_slow(size_t size, struct mcg_cache *c);
void *mcg_kmalloc_slow(size_t size);
void mcg_kfree_slow(void *p);
void *mcg_kmalloc_entry_slow(size_t size, struct mcg_kmalloc_entry *e);

/**
 * mcg_kmalloc_arrays_off - keep every table entry's arrays NULL from now
 * on, so that each allocation up to KMALLOC_SMALL_MAX takes its slow path
 * (the caller's, mcg_kmalloc_small_fast()): the malloc shim's heap group
 * (preload/heap.c), which is then tested there and nowhere on the fast
 * path.  mcg_malloc() and memcg's own calls pop in their slow path.  Call
 * before any thread but the caller exists.
 */
void mcg_kmalloc_arrays_off(void);

/* The slow path of mcg_kmalloc_small_fast(): past a pop that found nothing
 * (arrays NULL, empty or stopped) for @size, of table entry @e. */
typedef void *mcg_kmalloc_small_slow_t(size_t size, struct mcg_kmalloc_entry *e);

/** The allocation of @size <= KMALLOC_SMALL_MAX: the entry's pop, else @slow. */
static mcg_always_inline void *mcg_kmalloc_small_fast(size_t size, mcg_kmalloc_small_slow_t *slow)
{
	struct mcg_kmalloc_entry *e = mcg_kmalloc_small_entry(size);
	struct mcg_pcpu_stack *pcpu = __atomic_load_n(&e->pcpu, __ATOMIC_ACQUIRE);
	void *obj;
	/* The entry may change after its arrays are read: no cache to pass. */
	if (likely(pcpu) && likely(obj = mcg_pcpu_pop(pcpu, NULL)))
		return obj;
	return slow(size, e);
}

/** The fitted caches made so far (mcg_kmalloc_fitted_'s entries in use). */
unsigned mcg_kmalloc_fit_count(void);

/** mcg_malloc()'s body. */
static mcg_always_inline void *mcg_kmalloc_fast(size_t size)
{
	if (likely(size <= KMALLOC_SMALL_MAX))
		return mcg_kmalloc_small_fast(size, mcg_kmalloc_entry_slow);
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
		uint64_t m = mcg_slab_product(s, p);
		if (likely(mcg_slab_product_is_start(s, m))) {
			/* The plain free on the straight line: a program's
			 * frees are plain unless it runs with a heap group. */
			if (likely(!__atomic_load_n(&s->objcgs, __ATOMIC_RELAXED)))
				mcg_cache_push(NULL, s, p);
			else /* s->cache, on the slow paths */
				mcg_cache_free_at(NULL, s, p, mcg_slab_product_index(s, m));
			return;
		}
	}
	mcg_kfree_slow(p);
}

#endif /* MCG_SLAB_KMALLOC_FAST_H */
