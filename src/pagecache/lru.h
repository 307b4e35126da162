/* SPDX-License-Identifier: MIT */
/*
 * pagecache/lru.h - the file LRU: per group per node an inactive and an
 * active list (the kernel's two-list scheme for file pages), and the
 * shrinker through which the reclaim driver (reclaim/vmscan.c) scans them
 * in proportion with every other shrinker, honouring min/low/high/max.
 *
 * Moves, as the kernel's:
 *   a new page             -> inactive head
 *   an access (hit)        -> REFERENCED; a second while inactive -> active head
 *   reclaim, inactive tail -> a clean, unused page is dropped (its charge
 *                             given back); a dirty or written page goes back
 *                             to the head marked RECLAIM, and its writeback
 *                             ends with it at the inactive tail;
 *                             a busy one (in use, being read) back to the head
 *   inactive low           -> active tail to inactive head (deactivate), while
 *                             inactive < active (small groups: the kernel's
 *                             inactive_ratio is 1 below 1 GiB)
 * Reclaim never writes a page: when what it scanned was dirty or under
 * writeback it asks the flushers to write the group's pages and waits for
 * one writeback to end, at most MCG_LRU_WAIT_MS, so a group full of dirty
 * data is throttled, not driven to OOM.
 *
 * The shrinker is memcg- and NUMA-aware, with seeks 4: its pressure is
 * (pages >> priority), the kernel's per-LRU scan count, where the
 * kernel's DEFAULT_SEEKS shrinkers see twice that.  A group is marked for
 * it on a node when a page goes on an empty lruvec there.
 *
 * Locks: the lruvec's (MCG_RANK_LRUVEC), taken under a file's mapping lock
 * or alone; never held while a mapping lock is taken.  A page's lruvec is
 * its live pcg's on the page's node (mcg_lru_lock_page() retries when
 * reparenting moved it meanwhile).
 */
#ifndef MCG_PAGECACHE_LRU_H
#define MCG_PAGECACHE_LRU_H

#include <stdbool.h>

#include "pagecache/page.h"
#include "pagecache/pcg.h"

/** How long reclaim waits for a writeback to end when it found only dirty pages. */
#define MCG_LRU_WAIT_MS 100

/** mcg_lru_lock_page - lock and return the lruvec @page belongs to now. */
struct mcg_lruvec *mcg_lru_lock_page(struct mcg_fpage *page);

/** mcg_lru_add - put a new @page at its lruvec's inactive head (mapping lock held). */
void mcg_lru_add(struct mcg_fpage *page);

/** mcg_lru_del - take @page off its list if it is on one (mapping lock held). */
void mcg_lru_del(struct mcg_fpage *page);

/** mcg_lru_mark_accessed - a read or write hit @page (no lock held). */
void mcg_lru_mark_accessed(struct mcg_fpage *page);

/** mcg_lru_rotate_reclaimable - @page's writeback ended and reclaim wanted it: inactive tail. */
void mcg_lru_rotate_reclaimable(struct mcg_fpage *page);

/**
 * mcg_lru_shrink - reclaim from @lv: deactivate while inactive is low,
 * then scan up to @nr_to_scan pages at the inactive tail.  *@nr_dirty gets
 * the pages found dirty or under writeback.  Return: pages dropped.
 * No lock held (it takes mapping locks).
 */
unsigned long mcg_lru_shrink(struct mcg_lruvec *lv, unsigned long nr_to_scan,
                             unsigned long *nr_dirty);

/** mcg_lru_shrinker_init - create and register the page cache's shrinker (idempotent). */
int mcg_lru_shrinker_init(void);

#endif /* MCG_PAGECACHE_LRU_H */
