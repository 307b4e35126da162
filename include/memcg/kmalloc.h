/* SPDX-License-Identifier: MIT */
/*
 * memcg/kmalloc.h - the malloc family on top of memcg's slab caches.
 *
 * Sizes up to MCG_KMALLOC_MAX_CACHE_SIZE come from size-class caches named
 * "kmalloc-<size>"; larger blocks are mapped from the OS directly and
 * unmapped when freed.  Every call is thread safe and follows the C / POSIX
 * contract of its libc namesake (errno ENOMEM on failure, NULL and size 0
 * handled the same way).  A pointer not from this allocator, or freed twice,
 * is reported through the report handler (memcg/debug.h) and ignored.
 */
#ifndef MEMCG_KMALLOC_H
#define MEMCG_KMALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Largest size served from a size-class cache; above it, direct mapping. */
#define MCG_KMALLOC_MAX_CACHE_SIZE (256u * 1024u)

/** mcg_malloc - allocate @size bytes (16-byte aligned).  Pair with mcg_free(). */
void *mcg_malloc(size_t size);
/** mcg_free - free a block from any mcg_ allocator call.  NULL is ignored. */
void mcg_free(void *ptr);
/** mcg_calloc - allocate @n * @size zeroed bytes; NULL/ENOMEM on overflow. */
void *mcg_calloc(size_t n, size_t size);
/** mcg_realloc - resize @ptr (NULL: malloc) to @size; the old block is kept on failure. */
void *mcg_realloc(void *ptr, size_t size);
/** mcg_aligned_alloc - @size bytes aligned to @align (a power of two), else NULL/EINVAL. */
void *mcg_aligned_alloc(size_t align, size_t size);
/** mcg_posix_memalign - as posix_memalign(): 0, EINVAL or ENOMEM; *@out unchanged on error. */
int mcg_posix_memalign(void **out, size_t align, size_t size);
/** mcg_malloc_usable_size - bytes usable at @ptr (0 for NULL). */
size_t mcg_malloc_usable_size(const void *ptr);

#ifdef __cplusplus
}
#endif
#endif /* MEMCG_KMALLOC_H */
