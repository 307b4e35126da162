/* SPDX-License-Identifier: MIT */
/*
 * pagecache/pgdata.h - the cached pages' data: 4 KiB pages carved from
 * 2 MiB blocks the OS may back with one huge page each.
 *
 * Why not a slab cache: a cached read copies a page the index names at
 * random; with 4 KiB mappings each copy of a working set beyond the TLB's
 * reach first walks the page tables (and evicts the entries of the index
 * leaves and descriptors it needs next), where the kernel's page cache
 * copies from its direct map (huge pages).  A block is mapped 2 MiB-aligned
 * and marked MADV_HUGEPAGE, so one TLB entry covers 511 pages of data.
 *
 * A block's first 4 KiB is its header (the free pages, a stack of page
 * numbers); the other 511 are data.  Blocks with free pages are on one
 * list; a page is taken from the first, a block that gets one back goes
 * to the tail.  A page freed stays resident in its block while the block is
 * less than half free (giving back 4 KiB of a huge page splits it); once
 * half of it or more is free, its free pages are given back (MADV_DONTNEED)
 * and so is each page freed into it after, so reclaim that scatters its
 * frees over many blocks still returns memory; such a block is marked
 * MADV_NOHUGEPAGE, or khugepaged could fill it back to a whole huge page.  A block whose pages are
 * all free is unmapped at once, so with no cached pages nothing is mapped.
 * Memory held beyond the pages in use is therefore at most the free pages
 * of blocks more than half used: under one page of free data per page in
 * use.
 *
 * Locks: one (MCG_RANK_LEAF), held for a push or a pop; blocks are mapped
 * and unmapped with it dropped.  The page cache's fork hooks take it.
 */
#ifndef MCG_PAGECACHE_PGDATA_H
#define MCG_PAGECACHE_PGDATA_H

#include <stddef.h>

/**
 * mcg_pgdata_alloc - 4 KiB of page data, 4 KiB-aligned, not initialised.
 * Return: the page, or NULL (fault injected, or no memory).  No page-cache
 * lock held.  Pair with mcg_pgdata_free().
 */
void *mcg_pgdata_alloc(void);

/** mcg_pgdata_free - give back a page mcg_pgdata_alloc() returned (no lock held). */
void mcg_pgdata_free(void *data);

/** mcg_pgdata_blocks - blocks mapped now (tests). */
size_t mcg_pgdata_blocks(void);

/** mcg_pgdata_fork_lock / unlock - the allocator's lock around fork (file.c's fork hooks). */
void mcg_pgdata_fork_lock(void);
void mcg_pgdata_fork_unlock(void);

#endif /* MCG_PAGECACHE_PGDATA_H */
