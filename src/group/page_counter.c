/* SPDX-License-Identifier: MIT */
/* group/page_counter.c - lockless hierarchical page counters (see page_counter.h). */
#include "group/page_counter.h"

#include <limits.h>

#include "base/log.h"

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

void mcg_page_counter_init(struct mcg_page_counter *c, struct mcg_page_counter *parent)
{
	STORE(c->usage, 0);
	STORE(c->min_usage, 0);
	STORE(c->low_usage, 0);
	STORE(c->children_min_usage, 0);
	STORE(c->children_low_usage, 0);
	STORE(c->emin, 0);
	STORE(c->elow, 0);
	STORE(c->watermark, 0);
	STORE(c->failcnt, 0);
	STORE(c->min, 0);
	STORE(c->low, 0);
	STORE(c->high, MCG_PAGE_COUNTER_MAX);
	STORE(c->max, MCG_PAGE_COUNTER_MAX);
	c->parent = parent;
}

/* Publish min(usage, min) and min(usage, low) to the parent's children_*_usage. */
static void propagate_protected_usage(struct mcg_page_counter *c, long usage)
{
	if (!c->parent)
		return;
	long prot = MCG_MIN(usage, LOAD(c->min));
	if (prot != LOAD(c->min_usage)) {
		long old = __atomic_exchange_n(&c->min_usage, prot, __ATOMIC_RELAXED);
		if (prot - old)
			__atomic_fetch_add(&c->parent->children_min_usage, prot - old,
			                   __ATOMIC_RELAXED);
	}
	prot = MCG_MIN(usage, LOAD(c->low));
	if (prot != LOAD(c->low_usage)) {
		long old = __atomic_exchange_n(&c->low_usage, prot, __ATOMIC_RELAXED);
		if (prot - old)
			__atomic_fetch_add(&c->parent->children_low_usage, prot - old,
			                   __ATOMIC_RELAXED);
	}
}

static inline void raise_watermark(struct mcg_page_counter *c, long usage)
{
	/* Racy, but we can live with some inaccuracy in the watermark. */
	if (usage > LOAD(c->watermark))
		STORE(c->watermark, usage);
}

void mcg_page_counter_cancel(struct mcg_page_counter *c, long nr)
{
	long now = __atomic_sub_fetch(&c->usage, nr, __ATOMIC_RELAXED);
	if (unlikely(now < 0)) {
		mcg_log("page counter underflow: usage %ld after uncharging %ld", now, nr);
		MCG_BUG_ON(mcg_config_debug);
	}
	propagate_protected_usage(c, now);
}

void mcg_page_counter_charge(struct mcg_page_counter *counter, long nr)
{
	for (struct mcg_page_counter *c = counter; c; c = c->parent) {
		long now = __atomic_add_fetch(&c->usage, nr, __ATOMIC_RELAXED);
		propagate_protected_usage(c, now);
		raise_watermark(c, now);
	}
}

static mcg_always_inline bool try_charge(struct mcg_page_counter *counter,
                                         struct mcg_page_counter *stop, long nr,
                                         struct mcg_page_counter **fail)
{
	struct mcg_page_counter *c;
	for (c = counter; c != stop; c = c->parent) {
		/*
		 * Add first, then check: two racing charges may both see the
		 * other's pages and both back out, but usage never stays
		 * above max (the kernel's reasoning, kept as is).
		 */
		long now = __atomic_add_fetch(&c->usage, nr, __ATOMIC_RELAXED);
		if (now > LOAD(c->max)) {
			__atomic_sub_fetch(&c->usage, nr, __ATOMIC_RELAXED);
			__atomic_fetch_add(&c->failcnt, 1, __ATOMIC_RELAXED);
			*fail = c;
			goto failed;
		}
		propagate_protected_usage(c, now);
		raise_watermark(c, now);
	}
	return true;
failed:
	for (c = counter; c != *fail; c = c->parent)
		mcg_page_counter_cancel(c, nr);
	return false;
}

bool mcg_page_counter_try_charge(struct mcg_page_counter *counter, long nr,
                                 struct mcg_page_counter **fail)
{
	return try_charge(counter, NULL, nr, fail);
}

bool mcg_page_counter_try_charge_upto(struct mcg_page_counter *counter,
                                      struct mcg_page_counter *stop, long nr,
                                      struct mcg_page_counter **fail)
{
	return try_charge(counter, stop, nr, fail);
}

void mcg_page_counter_uncharge(struct mcg_page_counter *counter, long nr)
{
	for (struct mcg_page_counter *c = counter; c; c = c->parent)
		mcg_page_counter_cancel(c, nr);
}

void mcg_page_counter_uncharge_upto(struct mcg_page_counter *counter, struct mcg_page_counter *stop,
                                    long nr)
{
	for (struct mcg_page_counter *c = counter; c != stop; c = c->parent)
		mcg_page_counter_cancel(c, nr);
}

long mcg_page_counter_margin(const struct mcg_page_counter *c)
{
	long max = LOAD(c->max), usage = LOAD(c->usage);
	return usage < max ? max - usage : 0;
}

void mcg_page_counter_set_max(struct mcg_page_counter *c, long nr) { STORE(c->max, nr); }

void mcg_page_counter_set_high(struct mcg_page_counter *c, long nr) { STORE(c->high, nr); }

void mcg_page_counter_set_min(struct mcg_page_counter *counter, long nr)
{
	STORE(counter->min, nr);
	for (struct mcg_page_counter *c = counter; c; c = c->parent)
		propagate_protected_usage(c, LOAD(c->usage));
}

void mcg_page_counter_set_low(struct mcg_page_counter *counter, long nr)
{
	STORE(counter->low, nr);
	for (struct mcg_page_counter *c = counter; c; c = c->parent)
		propagate_protected_usage(c, LOAD(c->usage));
}
