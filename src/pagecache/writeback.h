/* SPDX-License-Identifier: MIT */
/*
 * pagecache/writeback.h - dirtying pages and writing them back.
 *
 * Dirtying (mcg_wb_page_dirty()): the writer that sets a page's DIRTY bit
 * tags it in the index, counts it (DIRTY and DIRTIED of its live pcg, or
 * the root's with dirty_accounting 0; PG_ACCT records which) and the
 * file's nr_dirty, and attaches a file that was clean to its writeback
 * domain - the group of its first dirtier, for the file's life (the
 * kernel's inode_attach_wb) - at the tail of the domain's list, with the
 * time (dirtied_ms).  Rewriting a dirty page costs one atomic test.
 *
 * Writeback of a file (mcg_wb_write_file()), one at a time per file (its
 * wb_lock), with up to `writeback_io_depth` runs in flight:
 *   1. under the mapping lock, take a run of up to 1024 consecutive pages
 *      tagged DIRTY (TOWRITE for fsync) from the cursor on: for each, take
 *      the data lock alone, clear DIRTY, set WRITEBACK (counts move from
 *      dirty to writeback), pin it;
 *   2. with no lock but wb_lock, hand it to the writeback I/O pool
 *      (wbio.h), which writes it with one pwritev (full pages; O_DIRECT:
 *      then the backing file is cut back to the size); take the next run
 *      while fewer than the depth are out.  Before an O_DIRECT run goes
 *      past the backing file's end, the file is extended (fallocate) over
 *      the stretch of consecutive tagged pages from it: file systems run
 *      O_DIRECT writes inside a file concurrently, writes that extend it
 *      one at a time;
 *   3. as each run ends (in any order), under the mapping lock: a page
 *      fully written is clean (WRITTEN counts it); one that was not stays
 *      dirty: tagged and counted again, the error recorded in the file's
 *      errseq and wb_errno, retried later; WRITEBACK cleared, waiters
 *      woken, pages reclaim wanted moved to the inactive tail; a file with
 *      no dirty page leaves its domain's list.  Background writeback takes
 *      no new run after an error.
 * A writeback needs no memory to progress: its runs come from the heap
 * when several are wanted, else one lives on its stack and goes out at a
 * time.  With no pool thread running, the writeback's own thread writes
 * each run as it submits it.
 * A page written during its writeback cannot be: writers wait for
 * WRITEBACK to clear (stable pages), then dirty it again.
 *
 * Write-behind (mcg_wb_behind(), option dirty_write_behind): a handle
 * writing sequentially that completes an aligned chunk adds it to the
 * file's write-behind range (behind_from/behind_to, one range per file)
 * and queues its domain's flushers, which take the range and write its
 * DIRTY pages (MCG_WB_BEHIND, at most BEHIND_TURN pages a turn, the rest
 * queued again) - only while the writer's domains are under their
 * background thresholds (filemap.c), so that over them the throttle and
 * background writeback alone share the device between groups.
 *
 * fsync (mcg_wb_fsync()): under wb_lock (so after any writeback in flight
 * on the file), tag every DIRTY page TOWRITE, write the TOWRITE pages
 * (pages dirtied meanwhile are not tagged: they cannot starve it), then
 * fdatasync/fsync the backing file; every error goes to the errseq, and
 * the caller reports it to its handle (filemap.c).
 *
 * Locks: the file's wb_lock (MCG_RANK_FILE_WB) around a writeback; the
 * mapping lock for page state; a domain's wb.lock (MCG_RANK_WB) for its
 * list of files, taken under the mapping lock.  No page-cache lock is held
 * during backing I/O but wb_lock.
 */
#ifndef MCG_PAGECACHE_WRITEBACK_H
#define MCG_PAGECACHE_WRITEBACK_H

#include <stdbool.h>
#include <stdint.h>

#include "pagecache/inode.h"
#include "pagecache/pcg.h"

/** How a writeback picks pages. */
enum mcg_wb_mode {
	MCG_WB_BACKGROUND, /* DIRTY pages from the cursor on, wrapping; wb_lock tried, not waited */
	MCG_WB_SYNC,       /* TOWRITE pages, all of them; wb_lock waited for */
	MCG_WB_BEHIND,     /* DIRTY pages of the file's write-behind range; wb_lock tried */
};

/** Work a domain may have queued for the flushers (flusher.c). */
enum mcg_wb_work {
	MCG_WB_WORK_BACKGROUND = 1u << 0, /* over the background threshold */
	MCG_WB_WORK_PERIODIC = 1u << 1,   /* write what is older than the expiry */
	MCG_WB_WORK_RECLAIM = 1u << 2,    /* reclaim found only dirty pages */
	MCG_WB_WORK_BEHIND = 1u << 3,     /* files have write-behind ranges */
};

/**
 * mcg_wb_page_dirty - mark @page (in @in's index, referenced by the
 * caller, its data just written) dirty.  Return: true when it was clean
 * (the caller's thread counts it for throttling).  Takes the mapping lock
 * only when the page was clean.
 */
bool mcg_wb_page_dirty(struct mcg_inode *in, struct mcg_fpage *page);

/**
 * mcg_wb_page_undirty_locked - @page leaves the index dirty (truncate):
 * uncount it, untag it.  Mapping lock held.
 */
void mcg_wb_page_undirty_locked(struct mcg_inode *in, struct mcg_fpage *page);

/**
 * mcg_wb_write_file - write up to @nr_pages of @in's dirty pages (@mode).
 * *@written (may be NULL) gets the pages written.  No lock held.
 * Return: 0; the first error (the pages kept dirty, the errseq set);
 * -EBUSY (background: another writeback holds the file).
 */
int mcg_wb_write_file(struct mcg_inode *in, long nr_pages, enum mcg_wb_mode mode, long *written);

/**
 * mcg_wb_behind - a sequential writer of @in has completed pages
 * [@from, @to) (write-behind, option dirty_write_behind): add them to the
 * file's write-behind range and queue the flushers to write its dirty
 * pages, without waiting.  Takes the mapping lock.
 */
void mcg_wb_behind(struct mcg_inode *in, uint64_t from, uint64_t to);

/**
 * mcg_wb_flush - fsync's writing part: every page dirty now written, those
 * in flight waited for; no backing sync.  Return: 0 or the first error.
 */
int mcg_wb_flush(struct mcg_inode *in);

/**
 * mcg_wb_fsync - write every page dirty now and wait for those in flight,
 * then fdatasync (@datasync) or fsync the backing file.  Errors go to the
 * errseq (the caller reports them).  Return: 0 or the first error.
 */
int mcg_wb_fsync(struct mcg_inode *in, bool datasync);

/**
 * mcg_wb_wait_page_locked - wait until @page is not under writeback
 * (mapping lock held, released while waiting).
 */
void mcg_wb_wait_page_locked(struct mcg_inode *in, struct mcg_fpage *page);

/**
 * mcg_wb_reclaim_wait - reclaim of @p's pages found @nr_dirty dirty or
 * under writeback: queue writeback of the domain and wait until some
 * writeback ends, at most @ms.  No lock held.
 */
void mcg_wb_reclaim_wait(struct mcg_pcg *p, unsigned long nr_dirty, unsigned ms);

/**
 * mcg_wb_domain_write - one round of the flushers' work on domain @p:
 * write a chunk of each of its files (oldest dirtied first) for @work
 * (MCG_WB_WORK_*).  Return: the work still wanted afterwards.
 */
unsigned mcg_wb_domain_write(struct mcg_pcg *p, unsigned work);

/**
 * mcg_wb_set_run_pages - cut runs to @n pages (1..1024; anything else:
 * 1024, the default), so that tests get several runs in flight from small
 * files.  Process-wide.
 */
void mcg_wb_set_run_pages(int n);

/** mcg_wb_sync_all - fsync every cached file with dirty pages.  Return: 0 or the first error. */
int mcg_wb_sync_all(void);

#endif /* MCG_PAGECACHE_WRITEBACK_H */
