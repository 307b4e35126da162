/* SPDX-License-Identifier: MIT */
/*
 * pagecache/dirty.h - dirty limits and writer throttling: the kernel's
 * IO-less balance_dirty_pages (mm/page-writeback.c) with a memcg domain per
 * group.  Units: pages, milliseconds (HZ = 1000), rates in pages per second.
 *
 * Two domains are checked for a writer: the global one (the process: its
 * budget's free memory plus its file pages, the options' ratios or bytes)
 * and its group's (file pages + min(headroom under max/high of the group
 * and its ancestors, other clean memory); the group's memory.dirty_* or,
 * where it follows the options, the global ratios, bytes converted to a
 * ratio of the global available memory as the kernel does).  "Dirty" is
 * dirty + writeback for throttling, dirty only for the background check.
 *
 * Per domain: thresh, bg_thresh (bg >= thresh: thresh / 2),
 *   freerun  = (thresh + bg) / 2           below it in both: no pause
 *   limit    = max(thresh, dirty_limit)    dirty_limit follows thresh up at
 *              once, down by 1/32 of the gap per 200 ms, never below dirty
 *   setpoint = (freerun + limit) / 2
 *   pos_ratio = 1 + ((setpoint - dirty) / (limit - setpoint))^3 in [0, 2]
 *              (0 at or above the limit), << 10 fixed point
 * The stricter (lower pos_ratio) domain throttles:
 *   task_ratelimit = dirty_ratelimit * pos_ratio
 *   pause = pages_dirtied / task_ratelimit - time since the last pause,
 *   at most max_pause = min(200, dirty / (write_bw / 8)) ms; shorter than
 *   min_pause (about half the target pause of 10 ms + 10 ms per doubling of
 *   write_bw / dirty_ratelimit) is carried as debt (forgotten past -1 s);
 *   at the limit (task_ratelimit 0) the writer sleeps max_pause and looks
 *   again, until dirty is below the limit.
 * Rates, every 200 ms, per group domain:
 *   write_bw = (bw_now * elapsed + write_bw * (3 s - elapsed)) / 3 s (pages
 *   of the group's written back: WRITTEN), smoothed again into avg_write_bw;
 *   balanced = task_ratelimit * write_bw / dirty_rate (DIRTIED), at most
 *   write_bw: with N writers dirty_rate = N * task_ratelimit, so each
 *   converges to write_bw / N; dirty_ratelimit steps toward it by 1/8 of
 *   the gap (less when close), only in the direction task_ratelimit agrees.
 * A thread looks at all this only after dirtying nr_dirtied_pause pages
 * (per thread; about sqrt(thresh - dirty) below freerun, from the target
 * pause above it but at most 32, 8 while a domain is over its thresh), or
 * after the CPU's threads together dirtied thresh / (CPUs * 32) (at least
 * 16): N writers pass a limit by at most 32 N pages.
 *
 * Locks: none held while sleeping; a domain's rates are updated under its
 * wb.lock (pcg.h), the global dirty_limit under its own leaf lock.
 */
#ifndef MCG_PAGECACHE_DIRTY_H
#define MCG_PAGECACHE_DIRTY_H

#include <stdbool.h>
#include <stdint.h>

#include "memcg/group.h"
#include "pagecache/pcg.h"

#define MCG_DIRTY_HZ 1000                             /* time unit: ms */
#define MCG_DIRTY_MAX_PAUSE 200                       /* ms */
#define MCG_DIRTY_BANDWIDTH_INTERVAL 200              /* ms */
#define MCG_DIRTY_RATELIMIT_SHIFT 10                  /* pos_ratio fixed point */
#define MCG_DIRTY_POLL_THRESH 32                      /* pages */
#define MCG_DIRTY_INIT_BW (100u * 1024 * 1024 / 4096) /* 100 MB/s in pages/s */

/** One domain's view at one moment (the kernel's dirty_throttle_control). */
struct mcg_dtc {
	unsigned long avail;      /* dirtyable memory */
	unsigned long dirty;      /* dirty + writeback */
	unsigned long dirty_only; /* dirty */
	unsigned long thresh, bg_thresh;
	unsigned long freerun, limit, setpoint;
	long pos_ratio; /* << MCG_DIRTY_RATELIMIT_SHIFT */
	bool dirty_exceeded;
};

/* ---- the arithmetic (pure; tests/unit/test_dirty.c) ---- */

/** mcg_dirty_freerun - (thresh + bg) / 2. */
static inline unsigned long mcg_dirty_freerun(unsigned long thresh, unsigned long bg)
{
	return (thresh + bg) / 2;
}

/**
 * mcg_dirty_thresholds - fill @d's thresh and bg_thresh from its avail.
 * @ratio, @bg_ratio: percent; @bytes, @bg_bytes: bytes (0: use the ratio).
 * @bytes_global, @bg_bytes_global: those bytes are the options' applied to
 * a group domain: the kernel turns them into a ratio of @global_avail.
 */
void mcg_dirty_thresholds(struct mcg_dtc *d, long ratio, long bytes, bool bytes_global,
                          long bg_ratio, long bg_bytes, bool bg_bytes_global,
                          unsigned long global_avail);

/**
 * mcg_dirty_memcg_avail - a group domain's available memory: @file +
 * min(@headroom, other clean memory), other clean = (global avail - global
 * dirty) - (file - group dirty), never negative.
 */
unsigned long mcg_dirty_memcg_avail(unsigned long file, unsigned long dirty, unsigned long headroom,
                                    unsigned long global_avail, unsigned long global_dirty);

/** mcg_dirty_pos_ratio - the control line (pos_ratio_polynom), 0 at or above @limit. */
long mcg_dirty_pos_ratio(unsigned long setpoint, unsigned long dirty, unsigned long limit);

/** mcg_dirty_setpoint_limits - @d's freerun, limit (from @dom_limit), setpoint, pos_ratio. */
void mcg_dirty_position(struct mcg_dtc *d, unsigned long dom_limit);

/** mcg_dirty_limit_update - the domain's dirty_limit after 200 ms (follows thresh). */
unsigned long mcg_dirty_limit_update(unsigned long dom_limit, unsigned long thresh,
                                     unsigned long dirty);

/** mcg_dirty_poll_interval - pages before the next look below freerun: 2^(ilog2(thresh - dirty) /
 * 2). */
unsigned long mcg_dirty_poll_interval(unsigned long dirty, unsigned long thresh);

/** mcg_dirty_update_write_bw - wb_update_write_bandwidth: @written pages in @elapsed ms. */
void mcg_dirty_update_write_bw(struct mcg_wb *wb, unsigned long elapsed, long written);

/**
 * mcg_dirty_update_ratelimit - wb_update_dirty_ratelimit for domain @d:
 * @dirtied pages in @elapsed ms.
 */
void mcg_dirty_update_ratelimit(struct mcg_wb *wb, const struct mcg_dtc *d, long dirtied,
                                unsigned long elapsed);

/** mcg_dirty_max_pause - wb_max_pause for @wb_dirty pages (ms, 1..200). */
long mcg_dirty_max_pause(const struct mcg_wb *wb, unsigned long wb_dirty);

/**
 * mcg_dirty_min_pause - wb_min_pause: the shortest pause worth a sleep
 * (ms); *@nr_dirtied_pause gets the pages to dirty before the next look.
 */
long mcg_dirty_min_pause(const struct mcg_wb *wb, long max_pause, unsigned long task_ratelimit,
                         unsigned long dirty_ratelimit, int *nr_dirtied_pause);

/* ---- the domains now ---- */

/** mcg_dirty_global - the global domain now (pages; thresholds from the options). */
void mcg_dirty_global(struct mcg_dtc *gd);

/** mcg_dirty_fork_lock / unlock - the global bandwidth lock around fork
 *  (the fork handlers, after every other lock: it is a leaf). */
void mcg_dirty_fork_lock(void);
void mcg_dirty_fork_unlock(void);

/**
 * mcg_dirty_group - @p's group domain now, given the global one.
 * Return: false when @p is the root's or dirty accounting is off (no group domain).
 */
bool mcg_dirty_group(struct mcg_pcg *p, const struct mcg_dtc *gd, struct mcg_dtc *md);

/** mcg_dirty_over_bg - whether @p's domain or the global one is over its background threshold. */
bool mcg_dirty_over_bg(struct mcg_pcg *p);

/** mcg_dirty_writeback_done - the flushers wrote for @p's domain: refresh its write bandwidth. */
void mcg_dirty_writeback_done(struct mcg_pcg *p);

/** mcg_dirty_expired - whether periodic writeback should write a file dirtied at @dirtied_ms. */
bool mcg_dirty_expired(uint64_t dirtied_ms, uint64_t now_ms);

/** mcg_dirty_now_ms - the clock (CLOCK_MONOTONIC, ms). */
uint64_t mcg_dirty_now_ms(void);

/* ---- the throttle ---- */

/** mcg_dirty_note - this thread dirtied @pages pages (it was the one that set DIRTY). */
void mcg_dirty_note(unsigned pages);

/**
 * mcg_dirty_due - whether this thread should pass the throttle now, writing
 * for @p (the group's pcg): it dirtied its interval's pages, or 8 while
 * the domain is over its limit.  A thread-local compare and one load.
 */
static inline bool mcg_dirty_due(struct mcg_pcg *p);

/**
 * mcg_balance_dirty_pages_ratelimited - throttle this thread if its dirtying
 * calls for it: look at the domains of @g (NULL: the current group) when
 * the thread or its CPU dirtied enough since the last look, and sleep as
 * balance_dirty_pages says.  With @nowait, return -EAGAIN instead of
 * sleeping, *@wait_ns set to the pause.  Never called with a lock held.
 * Return: 0 or -EAGAIN.
 */
int mcg_balance_dirty_pages_ratelimited(mcg_group_t *g, bool nowait, uint64_t *wait_ns);

/** What a pause looked like (for `memcg bench dirty` and its plot). */
struct mcg_dirty_trace {
	mcg_group_t *group;  /* the writer's group (NULL: root) */
	bool group_domain;   /* the group's domain was the stricter */
	unsigned long dirty; /* in that domain */
	unsigned long setpoint, limit, thresh, bg_thresh;
	unsigned long task_ratelimit, dirty_ratelimit, write_bw; /* pages/s */
	long pause_ms;                                           /* slept (0: none) */
};

/** mcg_dirty_set_trace - call @fn on every pause decision above freerun (NULL: none). */
void mcg_dirty_set_trace(void (*fn)(const struct mcg_dirty_trace *t, void *arg), void *arg);

/* The writer's state (dirty.c), for mcg_dirty_due(). */
struct mcg_bdp {
	int nr_dirtied;       /* pages this thread dirtied since its last look */
	int nr_dirtied_pause; /* look again after this many */
	uint64_t paused_when; /* ms: when its last pause ended (0: never) */
};
extern mcg_tls struct mcg_bdp mcg_bdp_;

static inline bool mcg_dirty_due(struct mcg_pcg *p)
{
	int n = mcg_bdp_.nr_dirtied;
	if (likely(n < 8))
		return false;
	return n >= mcg_bdp_.nr_dirtied_pause ||
	       __atomic_load_n(&mcg_pcg_resolve(p)->wb.dirty_exceeded, __ATOMIC_RELAXED);
}

#endif /* MCG_PAGECACHE_DIRTY_H */
