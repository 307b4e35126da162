/* SPDX-License-Identifier: MIT */
/*
 * reclaim/pressure.h - the charge path's side of global pressure
 * (memcg/pressure.h): one relaxed load and a compare when the root's usage
 * is checked, a wakeup of the reclaimer only when it crosses the high
 * watermark.
 */
#ifndef MCG_RECLAIM_PRESSURE_H
#define MCG_RECLAIM_PRESSURE_H

#include "base/compiler.h"
#include "memcg/pressure.h"

/** The high watermark in pages while the reclaimer runs; LONG_MAX otherwise. */
extern long mcg_pressure_high_pages;

/** mcg_pressure_wake_slow - wake the reclaimer once per pass (see mcg_pressure_kick()). */
void mcg_pressure_wake_slow(void);

/**
 * mcg_pressure_kick - tell the reclaimer that the root group's usage is
 * @root_pages.  Wakes it when that is above the high watermark; otherwise
 * costs a load and a compare.  Any context; takes no lock.
 */
static inline void mcg_pressure_kick(long root_pages)
{
	if (unlikely(root_pages > __atomic_load_n(&mcg_pressure_high_pages, __ATOMIC_RELAXED)))
		mcg_pressure_wake_slow();
}

/**
 * mcg_pressure_root_stat - the root's memory.stat lines on global pressure:
 * whether the reclaimer runs, the budget and where it came from, how PSI is
 * watched, wakeups and bytes reclaimed (so a missing cgroup or PSI file
 * shows in the stats).  Writes at most @len bytes, NUL-terminated.
 */
void mcg_pressure_root_stat(char *buf, size_t len);

#endif /* MCG_RECLAIM_PRESSURE_H */
