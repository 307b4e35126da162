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
 *     as C17 and glibc >= 2.38 do.
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
 * No locks here; the slab layer's locks are described in slab/slab.h.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/auxv.h>

#include "base/compiler.h"
#include "memcg/kmalloc.h"

/* cfree is gone from glibc's headers; old programs may still call it. */
void cfree(void *ptr);

/* ------------------------------------------------------------ fast paths */

mcg_public void *malloc(size_t size) { return mcg_malloc(size); }

mcg_public void free(void *ptr) { mcg_free(ptr); }

/* ------------------------------------------------------------ the family */

mcg_public void cfree(void *ptr) { mcg_free(ptr); }

mcg_public void *calloc(size_t n, size_t size) { return mcg_calloc(n, size); }

mcg_public void *realloc(void *ptr, size_t size) { return mcg_realloc(ptr, size); }

mcg_public void *reallocarray(void *ptr, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return mcg_realloc(ptr, total);
}

mcg_public int posix_memalign(void **out, size_t align, size_t size)
{
	return mcg_posix_memalign(out, align, size);
}

mcg_public void *aligned_alloc(size_t align, size_t size) { return mcg_aligned_alloc(align, size); }

/* The page size, from the auxiliary vector (no syscall, no heap). */
static size_t page_size(void)
{
	unsigned long ps = getauxval(AT_PAGESZ);
	return ps ? (size_t)ps : 4096;
}

mcg_public void *memalign(size_t align, size_t size)
{
	if (align <= 16)
		return mcg_malloc(size);
	if (align & (align - 1)) {
		/* glibc rounds up to the next power of two. */
		if (align > ((size_t)1 << (sizeof(size_t) * 8 - 1))) {
			errno = EINVAL;
			return NULL;
		}
		align = (size_t)1 << (sizeof(size_t) * 8 - (size_t)__builtin_clzl(align));
	}
	return mcg_aligned_alloc(align, size);
}

mcg_public void *valloc(size_t size) { return mcg_aligned_alloc(page_size(), size); }

mcg_public void *pvalloc(size_t size)
{
	size_t ps = page_size();
	if (size > SIZE_MAX - ps) {
		errno = ENOMEM;
		return NULL;
	}
	size_t rounded = size ? MCG_ALIGN_UP(size, ps) : ps;
	return mcg_aligned_alloc(ps, rounded);
}

mcg_public size_t malloc_usable_size(void *ptr) { return mcg_malloc_usable_size(ptr); }
