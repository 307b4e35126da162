/* SPDX-License-Identifier: MIT */
/*
 * pagecache/flusher.h - the flusher threads: background and periodic
 * writeback, and the writeback reclaim asks for, scheduled per domain.
 *
 * MCG_FLUSHER_THREADS threads, started by the first mcg_file_open() (and
 * again in a forked child that opens a file).  Work is queued per writeback
 * domain (a group's pcg: pcg.h): a domain on the work list is taken by one
 * thread at a time, which writes one chunk of each of its files for the
 * work queued (writeback.c: mcg_wb_domain_write()) and puts it back at the
 * tail if work remains - domains take turns, so one group's backlog (or a
 * file whose writes hang) holds up at most one thread, never the others'
 * writeback.  Every dirty_writeback_centisecs (an option; 0: never) each
 * domain with dirty files gets periodic work: write files dirty for longer
 * than dirty_expire_centisecs, and background work if it is over its
 * background threshold (writers kick it only when they pass the throttle,
 * so one that stops just above the threshold kicks no one).  Writers queue background work
 * (dirty.c), reclaim queues reclaim work (lru.c).
 *
 * Every writeback that ends bumps a generation and wakes those waiting for
 * one (reclaim's bounded wait).
 *
 * Locks: the flusher lock (MCG_RANK_FLUSHER) guards the work list, the
 * list of domains with dirty files, each domain's work/busy, and the
 * generation; nothing is taken under it.  A queued or listed domain holds a
 * reference on its pcg.
 */
#ifndef MCG_PAGECACHE_FLUSHER_H
#define MCG_PAGECACHE_FLUSHER_H

#include <stdbool.h>
#include <stdint.h>

#include "pagecache/pcg.h"

#define MCG_FLUSHER_THREADS 2

/** mcg_flusher_start - start the threads if they are not running (idempotent). */
void mcg_flusher_start(void);

/** mcg_flusher_running - whether flusher threads run (starting them failed otherwise). */
bool mcg_flusher_running(void);

/** mcg_flusher_queue - queue @work (MCG_WB_WORK_*) on @p's live domain and wake a thread. */
void mcg_flusher_queue(struct mcg_pcg *p, unsigned work);

/**
 * mcg_flusher_domain_dirty - @p's domain has dirty files now: list it for
 * periodic writeback (its wb.lock held, @p live).
 */
void mcg_flusher_domain_dirty(struct mcg_pcg *p);

/**
 * mcg_flusher_next_dirty - the domain with dirty files after @prev (NULL:
 * the first) on the flushers' list, referenced (mcg_pcg_put()); NULL at the
 * end.  For writing other domains' files when a domain's dirty pages sit in
 * files attached elsewhere.
 */
struct mcg_pcg *mcg_flusher_next_dirty(struct mcg_pcg *prev);

/** mcg_flusher_gen - the writeback generation now. */
uint64_t mcg_flusher_gen(void);

/** mcg_flusher_written - a writeback ended: next generation, wake the waiters. */
void mcg_flusher_written(void);

/** mcg_flusher_wait_gen - wait until the generation moved past @gen, at most @ms. */
void mcg_flusher_wait_gen(uint64_t gen, unsigned ms);

#endif /* MCG_PAGECACHE_FLUSHER_H */
