/* SPDX-License-Identifier: MIT */
/*
 * page/large.h - large blocks: one LARGE chunk (page/chunk.h) per block,
 * mapped from the OS, and kept mapped for reuse when freed.
 *
 * Sizes: a block's usable size is its request rounded up to a large class
 * (four per power of two, as kmalloc's classes: at most 25 % slack) up to
 * MCG_LARGE_CLASS_MAX, to the page above.  The block starts MCG_UNIT_SIZE
 * into its mapping (or at its alignment, when that is larger).
 *
 * The retained cache: a freed block of a class size at MCG_UNIT_SIZE stays
 * mapped, resident and registered, in a bin of its class, for the next
 * large block: the newest of its class, else the smallest up to four
 * times its size handed out whole, else the largest smaller one grown
 * (mremap), else a larger one cut down (its tail unmapped): a retained
 * block's resident pages serve the next large block whatever its class.
 * It is charged to no group while retained: a block's pages are charged
 * while it is handed out (slab/kmalloc.c).  Bounded: the retained bytes (whole mappings) stay
 * under a cap of MCG_LARGE_RETAIN_FLOOR plus half the most bytes of large
 * blocks in use at once over the last one or two aging steps; a block that
 * would pass it pushes the oldest out.  Aged: one step (mcg_large_age(),
 * from mcg_pages_age()) unmaps every block that was already retained at
 * the step before, so an idle process keeps none after two steps;
 * mcg_large_flush() unmaps them all.  A retained block's memory holds
 * what its last user wrote: callers that need zeros test large_zero.
 *
 * Invariants: large_cached is 1 exactly while the chunk is in a bin and on
 * the age list; the retained bytes are the sum of their map_size.
 * Locks: one (MCG_RANK_LARGE), over the bins, the age list, the retained
 * bytes and every retained chunk's header; a handed-out block's header
 * belongs to its owner.  Nothing is taken under it; the OS is called with
 * it released.
 */
#ifndef MCG_PAGE_LARGE_H
#define MCG_PAGE_LARGE_H

#include <stdbool.h>
#include <stddef.h>

#include "page/chunk.h"

/* The largest class size; larger blocks are page-rounded and never retained. */
#define MCG_LARGE_CLASS_MAX ((size_t)64 << 20)
/* The retained bytes allowed whatever the recent use. */
#define MCG_LARGE_RETAIN_FLOOR ((size_t)4 << 20)

/**
 * mcg_large_usable - the usable size of a block asked for @size bytes:
 * its class up to MCG_LARGE_CLASS_MAX, its pages above.  Return: the size,
 * or 0 if it would overflow.
 */
size_t mcg_large_usable(size_t size);

/**
 * mcg_large_alloc - a block of at least @size bytes aligned to @align (a
 * power of two up to MCG_CHUNK_SIZE / 2): a retained one (the rule above;
 * only for an alignment up to MCG_UNIT_SIZE), else a new mapping.  Its header's large_ptr and
 * large_size are set, large_objcg is NULL, large_zero says whether it reads zero. Return: the
 * block, or NULL (fault injected or the OS refused). Pair with mcg_large_free().  Thread safe.
 */
void *mcg_large_alloc(size_t size, size_t align);

/**
 * mcg_large_free - give the block of LARGE chunk @c back: retained for
 * reuse, or unmapped (not of a class size, over the cap).
 * Return: 0, or -EALREADY if @c is retained already (a double free:
 * nothing changed).  Thread safe.
 */
int mcg_large_free(struct mcg_chunk *c);

/**
 * mcg_large_resize - resize the block of LARGE chunk @c, handed out to the
 * caller, to the usable size of @size (> 0) in place or by moving its
 * mapping (mremap: no copy), keeping its contents and its objcg.
 * Return: its chunk (@c, or where it moved), or NULL (fault injected, the
 * OS refused, or @size too large: @c is untouched).
 */
struct mcg_chunk *mcg_large_resize(struct mcg_chunk *c, size_t size);

/**
 * mcg_large_age - one aging step of the retained blocks: those already
 * retained at the last step are unmapped, the cap follows recent use.
 * Return: bytes unmapped.  Thread safe.
 */
size_t mcg_large_age(void);

/** mcg_large_flush - unmap every retained block.  Return: bytes unmapped. */
size_t mcg_large_flush(void);

/** mcg_large_retained - bytes mapped in retained blocks (racy read). */
size_t mcg_large_retained(void);

/** mcg_large_in_use - bytes mapped in blocks handed out (racy read). */
size_t mcg_large_in_use(void);

/** mcg_large_cap - the retained bytes allowed now (racy read). */
size_t mcg_large_cap(void);

/** mcg_large_lock_all / unlock_all - for fork handlers (after the page locks). */
void mcg_large_lock_all(void);
void mcg_large_unlock_all(void);

#endif /* MCG_PAGE_LARGE_H */
