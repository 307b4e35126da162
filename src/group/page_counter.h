/* SPDX-License-Identifier: MIT */
/*
 * group/page_counter.h - lockless hierarchical page counters (the kernel's
 * mm/page_counter.c): a usage charged to a counter and all its ancestors,
 * limited at every level by `max`.
 *
 * Invariants: usage >= 0 at every level; a parent's usage is the sum of its
 * own charges and its children's.  try_charge never leaves usage above max
 * at any level (it adds, checks, and backs out); charge (forced) may.
 *
 * Protection (for effective min/low): each counter publishes the
 * part of its usage that its own min/low protect (min_usage, low_usage) and
 * adds the changes to its parent's children_min_usage/children_low_usage.
 *
 * Locks: none.  All fields are atomics; set_max/set_min/set_low/set_high
 * callers must serialize invocations on the same counter.  The watermark
 * and failcnt are updated racily: we can live with some inaccuracy there.
 */
#ifndef MCG_GROUP_PAGE_COUNTER_H
#define MCG_GROUP_PAGE_COUNTER_H

#include <limits.h>
#include <stdbool.h>

#include "base/compiler.h"
#include "base/mm_const.h"

/** Unlimited: the largest page count (bytes still fit a signed 64-bit). */
#define MCG_PAGE_COUNTER_MAX (LONG_MAX / (long)MCG_PAGE_SIZE)

struct mcg_page_counter {
	long usage mcg_cacheline_aligned; /* pages charged (atomic, hot) */
	long min_usage;                   /* min(usage, min), as published to the parent */
	long low_usage;                   /* min(usage, low), as published to the parent */
	long children_min_usage;          /* sum of the children's min_usage */
	long children_low_usage;          /* sum of the children's low_usage */
	long emin;      /* effective min, computed by reclaim (reclaim/vmscan.c) */
	long elow;      /* effective low, computed by reclaim (reclaim/vmscan.c) */
	long watermark; /* the highest usage seen (racy) */
	long failcnt;   /* try_charge failures at this level (racy) */

	long min mcg_cacheline_aligned; /* memory.min, pages */
	long low;                       /* memory.low, pages */
	long high;                      /* memory.high, pages */
	long max;                       /* memory.max, pages */
	struct mcg_page_counter *parent;
};

/** mcg_page_counter_init - zero usage, no protection, no limits, under @parent (may be NULL). */
void mcg_page_counter_init(struct mcg_page_counter *c, struct mcg_page_counter *parent);

/** mcg_page_counter_read - current usage in pages. */
static inline long mcg_page_counter_read(const struct mcg_page_counter *c)
{
	return __atomic_load_n(&c->usage, __ATOMIC_RELAXED);
}

/** mcg_page_counter_charge - add @nr pages at every level, ignoring max. */
void mcg_page_counter_charge(struct mcg_page_counter *c, long nr);

/**
 * mcg_page_counter_try_charge - add @nr pages at every level unless some
 * level would exceed its max.  On failure nothing stays charged, that
 * level's failcnt is incremented and *@fail points to it.
 * Return: true when charged.
 */
bool mcg_page_counter_try_charge(struct mcg_page_counter *c, long nr,
                                 struct mcg_page_counter **fail);

/** mcg_page_counter_uncharge - remove @nr pages at every level.  Pair with a charge. */
void mcg_page_counter_uncharge(struct mcg_page_counter *c, long nr);

/**
 * mcg_page_counter_try_charge_upto - mcg_page_counter_try_charge() at the
 * levels from @c up to @stop, @stop excluded (an ancestor of @c, or NULL:
 * every level).
 */
bool mcg_page_counter_try_charge_upto(struct mcg_page_counter *c, struct mcg_page_counter *stop,
                                      long nr, struct mcg_page_counter **fail);

/** mcg_page_counter_uncharge_upto - remove @nr pages from @c up to @stop, @stop excluded. */
void mcg_page_counter_uncharge_upto(struct mcg_page_counter *c, struct mcg_page_counter *stop,
                                    long nr);

/** mcg_page_counter_cancel - remove @nr pages from @c only (not its ancestors). */
void mcg_page_counter_cancel(struct mcg_page_counter *c, long nr);

/** mcg_page_counter_margin - pages that may still be charged to @c alone (0 if over). */
long mcg_page_counter_margin(const struct mcg_page_counter *c);

/** mcg_page_counter_set_max - set max (pages).  Usage may be above it afterwards. */
void mcg_page_counter_set_max(struct mcg_page_counter *c, long nr);
/** mcg_page_counter_set_high - set high (pages). */
void mcg_page_counter_set_high(struct mcg_page_counter *c, long nr);
/** mcg_page_counter_set_min - set min (pages) and republish protected usage upward. */
void mcg_page_counter_set_min(struct mcg_page_counter *c, long nr);
/** mcg_page_counter_set_low - set low (pages) and republish protected usage upward. */
void mcg_page_counter_set_low(struct mcg_page_counter *c, long nr);

/** mcg_page_counter_get - relaxed read of a field (limits, watermark, failcnt, ...). */
#define mcg_page_counter_get(c, field) __atomic_load_n(&(c)->field, __ATOMIC_RELAXED)

#endif /* MCG_GROUP_PAGE_COUNTER_H */
