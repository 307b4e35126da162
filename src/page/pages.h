/* SPDX-License-Identifier: MIT */
/*
 * page/pages.h - the page allocator: spans of units from per-node chunks
 * (large blocks, one per chunk, are page/large.h's).
 *
 * A span handed back is decommitted at once (madvise): memory the page
 * allocator holds is never resident, so the slab layer decides when memory
 * goes back to the OS (shrink, reap).  Chunks stay mapped once created (a
 * stale pointer still finds a header saying "not a slab"); a chunk that
 * becomes entirely free has its descriptor pages decommitted too.
 *
 * Locks: one per node (MCG_RANK_PAGE), protecting its chunk list and every
 * chunk's free_units.
 */
#ifndef MCG_PAGE_PAGES_H
#define MCG_PAGE_PAGES_H

#include <stddef.h>

#include "page/chunk.h"

/** mcg_pages_init - set up the nodes (idempotent).  Return 0 or -ENOMEM. */
int mcg_pages_init(void);

/**
 * mcg_pages_alloc - a span of @units (a power of two, 1..32) units on @node,
 * aligned to its size.  Its memory reads as zero on first touch only if it
 * was never used; callers initialise what they need.
 * Return: the span, or NULL (fault injected, or the OS refused).
 * Pair with mcg_pages_free().
 */
void *mcg_pages_alloc(unsigned node, unsigned units);

/** mcg_pages_free - give a span back (decommitted). */
void mcg_pages_free(void *span, unsigned units);

/** mcg_pages_in_use - bytes of spans handed out and not freed. */
size_t mcg_pages_in_use(void);

/**
 * mcg_pages_age - one aging step of the chunks: a chunk found with every
 * unit free at two steps in a row goes back to the OS (unmapped, its map
 * byte cleared), but for @keep such chunks per node, which stay for the
 * next allocations; and one of the retained large blocks (mcg_large_age()).
 * Return: bytes unmapped.
 */
size_t mcg_pages_age(unsigned keep);

/** mcg_pages_lock_all / unlock_all - for fork handlers (the large lock too). */
void mcg_pages_lock_all(void);
void mcg_pages_unlock_all(void);

#endif /* MCG_PAGE_PAGES_H */
