/* SPDX-License-Identifier: MIT */
/*
 * preload/malloc.c - the malloc family of libmemcg-preload.so: the only code
 * in memcg that defines malloc, free and their kin.
 *
 * Each function maps to its mcg_ counterpart (memcg/kmalloc.h) with glibc's
 * semantics where C and POSIX leave room:
 *   - malloc(0) returns a unique pointer; free(NULL) does nothing;
 *   - realloc(p, 0) frees p and returns NULL (glibc's behaviour);
 *   - reallocarray and calloc fail with ENOMEM on multiplication overflow;
 *   - memalign rounds a non-power-of-two alignment up to the next power of
 *     two, valloc aligns to the page, pvalloc also rounds the size up to a
 *     whole number of pages (0 -> one page);
 *   - aligned_alloc rejects an alignment that is not a power of two (EINVAL),
 *     as C17 and glibc >= 2.38 do;
 *   - malloc_trim returns memcg's free memory to the OS (mcg_slab_shrink_all()).
 *
 * Invariants the shim relies on (they make it safe to preload):
 *   - Early process start: the library initialises lazily on the first call,
 *     with no heap of its own (os.c reads sysfs with open/read, options.c uses
 *     getenv, log.c formats on the stack), so the first malloc may come before
 *     any constructor and nothing recurses into malloc.
 *   - Fork: the slab layer registers pthread_atfork handlers when it
 *     initialises (slab/cache.c), so a child that mallocs after fork finds
 *     every lock free and every list consistent.
 *   - Thread exit: there are no thread caches, only per-CPU arrays, so a
 *     thread that exits leaves nothing behind and TLS destructors may free.
 *   - Heap accounting (memcg run --max/--high): preload/heap.c sets
 *     mcg_preload_heap in a constructor, before any thread exists; from then
 *     on the allocating calls charge it (slab/account.h).
 * No locks here; the slab layer's locks are described in slab/slab.h.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/auxv.h>

#include "base/compiler.h"
#include "memcg/kmalloc.h"
#include "memcg/slab.h"
#include "preload/heap.h"
#include "slab/account.h"
#include "slab/kmalloc_fast.h"

/* cfree is gone from glibc's headers; old programs may still call it. */
void cfree(void *ptr);

/* ------------------------------------------------------------ fast paths */

/* The slow paths of malloc: with a heap group (preload/heap.c) every
 * allocation is charged to it.  Up to KMALLOC_SMALL_MAX the group needs no
 * test on the fast path: heap.c empties the kmalloc table's arrays
 * (mcg_kmalloc_arrays_off()), so every such malloc comes here. */
static mcg_noinline void *malloc_small_slow(size_t size, struct mcg_kmalloc_entry *e)
{
	struct mcg_objcg *heap = mcg_preload_heap;
	if (heap)
		return mcg_kmalloc_objcg(size, heap);
	return mcg_kmalloc_entry_slow(size, e);
}

static mcg_noinline void *malloc_large(size_t size)
{
	struct mcg_objcg *heap = mcg_preload_heap;
	if (heap)
		return mcg_kmalloc_objcg(size, heap);
	return mcg_kmalloc_fast(size);
}

/* The fast path inlines (slab/kmalloc_fast.h): no call, no jump of memcg's. */
mcg_public mcg_entry_aligned void *malloc(size_t size)
{
	if (likely(size <= KMALLOC_SMALL_MAX))
		return mcg_kmalloc_small_fast(size, malloc_small_slow);
	return malloc_large(size);
}

mcg_public mcg_entry_aligned void free(void *ptr) { mcg_kfree_fast(ptr); }

/* ------------------------------------------------------------ the family */

mcg_public void cfree(void *ptr) { mcg_free(ptr); }

mcg_public void *calloc(size_t n, size_t size)
{
	return mcg_kcalloc_objcg(n, size, mcg_preload_heap);
}

/* A moved block stays charged where it was (mcg_realloc); a new one is the heap's. */
mcg_public void *realloc(void *ptr, size_t size)
{
	return ptr ? mcg_realloc(ptr, size) : malloc(size);
}

mcg_public void *reallocarray(void *ptr, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(ptr, total);
}

static void *heap_aligned(size_t align, size_t size)
{
	return mcg_kaligned_objcg(align, size, mcg_preload_heap);
}

mcg_public int posix_memalign(void **out, size_t align, size_t size)
{
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL; /* @out is declared nonnull by glibc's header */
	int saved = errno;
	void *p = heap_aligned(align, size);
	if (!p) {
		int e = errno;
		errno = saved;
		return e == EINVAL ? EINVAL : ENOMEM;
	}
	*out = p;
	return 0;
}

mcg_public void *aligned_alloc(size_t align, size_t size) { return heap_aligned(align, size); }

/* The page size, from the auxiliary vector (no syscall, no heap). */
static size_t page_size(void)
{
	unsigned long ps = getauxval(AT_PAGESZ);
	return ps ? (size_t)ps : 4096;
}

mcg_public void *memalign(size_t align, size_t size)
{
	if (align <= 16)
		return malloc(size);
	if (align & (align - 1)) {
		/* glibc rounds up to the next power of two. */
		if (align > ((size_t)1 << (sizeof(size_t) * 8 - 1))) {
			errno = EINVAL;
			return NULL;
		}
		align = (size_t)1 << (sizeof(size_t) * 8 - (size_t)__builtin_clzl(align));
	}
	return heap_aligned(align, size);
}

mcg_public void *valloc(size_t size) { return heap_aligned(page_size(), size); }

mcg_public void *pvalloc(size_t size)
{
	size_t ps = page_size();
	if (size > SIZE_MAX - ps) {
		errno = ENOMEM;
		return NULL;
	}
	size_t rounded = size ? MCG_ALIGN_UP(size, ps) : ps;
	return heap_aligned(ps, rounded);
}

mcg_public size_t malloc_usable_size(void *ptr) { return mcg_malloc_usable_size(ptr); }

/* Every free object back to its slab and every empty slab to the OS, as
 * glibc's malloc_trim(0) gives its free memory back (@pad has no meaning
 * here: memcg keeps no top of heap).  1 if memory was returned. */
mcg_public int malloc_trim(size_t pad) { return mcg_slab_shrink_all() > 0; }
