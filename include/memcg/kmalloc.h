/* SPDX-License-Identifier: MIT */
/*
 * memcg/kmalloc.h - the malloc family on top of memcg's slab caches.
 *
 * Sizes up to MCG_KMALLOC_MAX_CACHE_SIZE come from size-class caches named
 * "kmalloc-<size>"; larger blocks are mappings of their own, rounded to
 * the same classes up to 64 MiB, kept mapped for reuse when freed (within
 * a cap, given back by aging, mcg_slab_shrink_all() and malloc_trim) and
 * resized by mcg_realloc() without a copy.  Every call is thread safe and follows the C / POSIX
 * contract of its libc namesake (errno ENOMEM on failure, NULL and size 0
 * handled the same way).  A pointer not from this allocator, or freed twice,
 * is reported through the report handler (memcg/debug.h) and ignored.
 */
#ifndef MEMCG_KMALLOC_H
#define MEMCG_KMALLOC_H

#include <stddef.h>

#include "memcg/group.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest size served from a size-class cache; above it, a mapping per block. */
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

/*
 * Accounted allocations (the kernel's GFP_KERNEL_ACCOUNT): the block is
 * charged to a memory group (memcg/group.h) until it is freed, and shows in
 * its memory.current and memory.stat ("slab_unreclaimable", "kernel").  Over
 * memory.max the group reclaims, then the allocation fails (NULL, ENOMEM).
 * mcg_free() uncharges (a large block kept for reuse is charged to no
 * group); mcg_realloc() charges the new block where the old one was.  If
 * the group is removed meanwhile, its blocks are charged to its parent from
 * then on (they never keep a removed group alive).
 */
/** mcg_malloc_account - mcg_malloc() charged to @g (NULL: mcg_group_current()). */
void *mcg_malloc_account(size_t size, mcg_group_t *g);
/** mcg_calloc_account - mcg_calloc() charged to @g (NULL: mcg_group_current()). */
void *mcg_calloc_account(size_t n, size_t size, mcg_group_t *g);

/**
 * mcg_obj_group - the group the object or block at @ptr is charged to now
 * (an ancestor of the one it was charged to, if that was removed), with a
 * reference for the caller (mcg_group_put()).
 * Return: 0; -ENOENT (not accounted); -EINVAL (NULL or not from memcg).
 */
int mcg_obj_group(const void *ptr, mcg_group_t **out);

/** Large blocks (above MCG_KMALLOC_MAX_CACHE_SIZE): bytes mapped for them. */
struct mcg_large_stats {
	size_t in_use;   /**< blocks handed out, each with its 64 KiB header unit */
	size_t retained; /**< freed blocks kept for reuse: resident, charged to no group */
	size_t cap;      /**< the most retained allowed now: 4 MiB + half the recent peak in use */
};

/**
 * mcg_kmalloc_large_stats - the large blocks' bytes now.  Each field is
 * exact at rest; while other threads allocate, the three are read at
 * slightly different moments (no lock is taken).
 * @st: filled in.
 * Return: 0, or -EINVAL for NULL.  Any thread.
 */
int mcg_kmalloc_large_stats(struct mcg_large_stats *st);

#ifdef __cplusplus
}
#endif
#endif /* MEMCG_KMALLOC_H */
