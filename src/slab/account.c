/* SPDX-License-Identifier: MIT */
/*
 * slab/account.c - accounted objects: the public accounted calls, the slow
 * half of accounted allocation, uncharging on free, and the per-slab objcg
 * vectors.
 *
 * An accounted object charges its slot and its vector entry
 * (c->charge_units units of MCG_OBJCG_UNIT bytes) to an objcg (group/objcg.h)
 * and records the objcg in entry i of its slab's vector, one pointer per
 * object (8 bytes: the kernel's obj_exts), allocated on the slab's first
 * accounted object and freed with the slab.  Unaccounted objects of the same
 * slab leave their entry NULL.  Free reads and clears the entry, then pushes
 * the object and gives its units back to the CPU array in one rseq section
 * (base/pcpu_acct.h): no lock on the fast path, and the same code whether
 * the object's group is alive or was removed (its objcg then points to an
 * ancestor).  A CPU array holds units for one objcg at a time: the slow
 * paths here move units between it and the objcg's byte stock, usually
 * leaving another objcg's units in place (tenants taking turns would evict
 * each other on every call) but taking the array over on one miss in 8 (a
 * quiet objcg must not keep it), and drain them (stop, fence, take) for
 * mcg_group_drain_stocks() and cache destruction.
 *
 * Locks: the cache list lock (drain and scan of the arrays' units), the
 * arrays' locks while stopped; the objcg slow paths take an objcg's spin
 * lock.
 */
#include <errno.h>

#include "base/fault.h"
#include "os/os.h"
#include "memcg/kmalloc.h"
#include "memcg/slab.h"
#include "slab/account.h"

/* ------------------------------------------------------------ free */

/* Misses on a foreign objcg's units that evict them: one in FOREIGN_EVICT_EVERY. */
#define FOREIGN_EVICT_EVERY 8
static mcg_tls unsigned foreign_tick; /* a thread-local hint */

/*
 * Should @key's units stay out of this CPU's array of @c, which holds units
 * of another objcg?  Yes on all but one such miss in FOREIGN_EVICT_EVERY:
 * objcgs taking turns would otherwise evict each other on every call, and
 * never evicting would let an objcg that stopped allocating here (a removed
 * tenant, the last variant of a benchmark) keep the array from every other
 * objcg for good, sending all of their frees to the slow path.
 */
static bool array_keeps_foreign(struct mcg_cache *c, uint64_t key)
{
	struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(c->pcpu, mcg_percpu_cpu());
	if (!MCG_READ_ONCE(st->units) || MCG_READ_ONCE(st->acct) == key)
		return false;
	return ++foreign_tick % FOREIGN_EVICT_EVERY != 0;
}

/* Make @x the objcg of this CPU's array of @c (the units there go back to
 * theirs) and add @units; else give them to @x's byte stock. */
static void array_units_switch(struct mcg_cache *c, struct mcg_objcg *x, uint64_t units)
{
	uint64_t key = mcg_objcg_key(x), old_key, old_word;
	if (mcg_rseq_acct_take(c->pcpu, &old_key, &old_word) == MCG_PCPU_OK && (old_word >> 32))
		mcg_objcg_give((struct mcg_objcg *)(uintptr_t)old_key, old_word >> 32);
	if (mcg_rseq_acct_set_key(c->pcpu, key) == MCG_PCPU_OK &&
	    mcg_rseq_acct_add(c->pcpu, key, units, MCG_ACCT_ARRAY_UNITS) == MCG_PCPU_OK)
		return;
	mcg_objcg_give(x, units); /* another thread's units came in between */
}

/*
 * Put @units charged to @x in this CPU's array of @c (rseq mode): add them
 * to @x's units there; if the array holds @x's units and is full, spill
 * them to the byte stock first; if it holds another objcg's, usually leave
 * those (array_keeps_foreign()) and give @units to @x's byte stock instead.
 */
static void array_units_put(struct mcg_cache *c, struct mcg_objcg *x, uint64_t units)
{
	uint64_t key = mcg_objcg_key(x);
	if (units > MCG_ACCT_ARRAY_UNITS) {
		mcg_objcg_give(x, units);
		return;
	}
	if (mcg_rseq_acct_add(c->pcpu, key, units, MCG_ACCT_ARRAY_UNITS) == MCG_PCPU_OK)
		return;
	if (array_keeps_foreign(c, key)) {
		mcg_objcg_give(x, units);
		return;
	}
	array_units_switch(c, x, units);
}

/* Move the units @x's byte stock holds on this CPU into this CPU's array of @c. */
static void array_units_prime(struct mcg_cache *c, struct mcg_objcg *x)
{
	uint64_t have = mcg_objcg_stocked_here(x);
	if (have < c->charge_units || array_keeps_foreign(c, mcg_objcg_key(x)))
		return;
	have = MCG_MIN(have, (uint64_t)MCG_ACCT_ARRAY_UNITS);
	if (mcg_objcg_consume(x, have) != MCG_PCPU_OK)
		return;
	if (mcg_rseq_acct_add(c->pcpu, mcg_objcg_key(x), have, MCG_ACCT_ARRAY_UNITS) != MCG_PCPU_OK)
		array_units_switch(c, x, have);
}

/* The rest of an accounted free: the object went nowhere yet (@r: why the
 * one-section push failed, or MCG_PCPU_FAIL when it was not tried).  Finds
 * its slab and cache again, so that the fast path keeps fewer values live. */
static mcg_noinline void free_account_slow(void *obj, struct mcg_objcg *x, int r)
{
	struct mcg_slab *s = mcg_slab_of(obj);
	struct mcg_cache *c = s->cache;
	if (r == MCG_PCPU_DOUBLE) { /* corrupt: charged, yet free already */
		mcg_cache_free_slow(c, obj, s, r);
		mcg_objcg_give(x, c->charge_units);
		return;
	}
	mcg_cache_push(c, s, obj);
	if (mcg_percpu_use_rseq() && !mcg_reclaim_state_current)
		array_units_put(c, x, c->charge_units);
	else
		mcg_objcg_give(x, c->charge_units); /* a shrinker's frees reach the counters */
}

void mcg_cache_free_account(struct mcg_cache *c, struct mcg_slab *s, void *obj, long idx)
{
	struct mcg_objcg **v = __atomic_load_n(&s->objcgs, __ATOMIC_RELAXED);
	struct mcg_objcg *x = v[idx];
	if (unlikely(!x)) { /* an unaccounted object of a slab with a vector */
		mcg_cache_push(c, s, obj);
		return;
	}
	v[idx] = NULL; /* before the object can be handed out again */
	/* The object and its charge back into this CPU's array at once (not
	 * inside a shrinker, whose frees must reach the counters). */
	int r = MCG_PCPU_FAIL;
	if (likely(mcg_percpu_use_rseq()) && likely(!mcg_reclaim_state_current)) {
		r = mcg_rseq_stack_push_acct(&s->pcpu, obj, mcg_objcg_key(x), &c->acct);
		if (likely(r == MCG_PCPU_OK))
			return;
	}
	free_account_slow(obj, x, r);
}

/* ------------------------------------------------------------ alloc */

/* @s's vector, allocated on first use; NULL with nothing changed on failure. */
static struct mcg_objcg **slab_objcgs(struct mcg_slab *s)
{
	struct mcg_objcg **v = __atomic_load_n(&s->objcgs, __ATOMIC_ACQUIRE);
	if (v)
		return v;
	if (mcg_fault_should_fail())
		return NULL;
	v = mcg_calloc(s->nobjs, sizeof(*v));
	if (!v)
		return NULL;
	struct mcg_objcg **none = NULL;
	if (!__atomic_compare_exchange_n(&s->objcgs, &none, v, false, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE)) {
		mcg_free(v); /* another CPU attached one first */
		v = none;
	}
	return v;
}

void *mcg_cache_alloc_objcg_slow(struct mcg_cache *c, struct mcg_objcg *x, int stage, void *obj)
{
	bool prime = false;
	if (stage == MCG_ACCT_UNCHARGED) {
		/* The byte stock's fast path, else pages for it. */
		if (mcg_objcg_consume(x, c->charge_units) != MCG_PCPU_OK &&
		    mcg_objcg_charge(x, c->charge_units, 0)) {
			errno = ENOMEM;
			return NULL;
		}
		obj = mcg_cache_alloc_fast(c);
		prime = mcg_percpu_use_rseq();
	}
	if (!obj)
		goto uncharge;
	struct mcg_slab *s = mcg_slab_of(obj);
	struct mcg_objcg **v = slab_objcgs(s);
	if (!v) {
		mcg_cache_free_fast(c, s, obj); /* unaccounted: its entry is NULL */
		goto uncharge;
	}
	v[mcg_slab_index(s, obj)] = x;
	if (prime) /* the next allocations take their charge with their object */
		array_units_prime(c, x);
	return obj;
uncharge:
	mcg_objcg_give(x, c->charge_units);
	errno = ENOMEM;
	return NULL;
}

/* ------------------------------------------------------------ draining */

#define DRAIN_BATCH 32 /* CPUs stopped together: one fence per batch */

void mcg_cache_drain_units(struct mcg_cache *c)
{
	unsigned ncpu = mcg_os_nr_cpus();
	bool any = false;
	for (unsigned cpu = 0; cpu < ncpu && !any; cpu++)
		any = MCG_READ_ONCE(mcg_pcpu_stack_of(c->pcpu, cpu)->units) != 0;
	if (!any || c->debug)
		return; /* a hint, exact at rest; debug caches never hold units */
	for (unsigned first = 0; first < ncpu; first += DRAIN_BATCH) {
		unsigned end = MCG_MIN(first + DRAIN_BATCH, ncpu), nt = 0;
		uint64_t keys[DRAIN_BATCH];
		uint32_t units[DRAIN_BATCH];
		for (unsigned cpu = first; cpu < end; cpu++) {
			struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(c->pcpu, cpu);
			mcg_lock(&st->lock);
			mcg_pcpu_stack_stop(st);
		}
		mcg_percpu_fence();
		for (unsigned cpu = first; cpu < end; cpu++) {
			struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(c->pcpu, cpu);
			units[nt] = mcg_pcpu_acct_take_stopped(st, &keys[nt]);
			nt += units[nt] != 0;
			mcg_pcpu_stack_start(st, c->cpu_cap);
			mcg_unlock(&st->lock);
		}
		for (unsigned i = 0; i < nt; i++)
			mcg_objcg_units_return((struct mcg_objcg *)(uintptr_t)keys[i], units[i]);
	}
}

void mcg_slab_scan_units(mcg_objcg_units_fn visit, void *arg)
{
	if (!mcg_percpu_use_rseq())
		return;
	unsigned ncpu = mcg_os_nr_cpus();
	mcg_lock(&mcg_cache_list_lock);
	mcg_list_for_each (pos, &mcg_cache_list) {
		struct mcg_cache *c = mcg_list_entry(pos, struct mcg_cache, link);
		for (unsigned cpu = 0; cpu < ncpu; cpu++) {
			struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(c->pcpu, cpu);
			uint32_t units = MCG_READ_ONCE(st->units); /* racy: a snapshot */
			if (units)
				visit(MCG_READ_ONCE(st->acct), units, arg);
		}
	}
	mcg_unlock(&mcg_cache_list_lock);
}

void mcg_slab_drain_units(void)
{
	if (!mcg_percpu_use_rseq())
		return; /* the arrays hold units in rseq mode only */
	mcg_lock(&mcg_cache_list_lock);
	mcg_list_for_each (pos, &mcg_cache_list)
		mcg_cache_drain_units(mcg_list_entry(pos, struct mcg_cache, link));
	mcg_unlock(&mcg_cache_list_lock);
}

void mcg_slab_free_objcgs(struct mcg_slab *s)
{
	struct mcg_objcg **v = s->objcgs;
	if (!v)
		return;
	s->objcgs = NULL;
	mcg_free(v);
}

/* ------------------------------------------------------------ the API */

/* The root's objcg when no group was entered: out of line, a call (needs a frame). */
static mcg_noinline void *alloc_in_root(struct mcg_cache *c)
{
	return mcg_cache_alloc_objcg(c, mcg_objcg_of(mcg_group_root(), c->objcg_kind));
}

void *mcg_cache_alloc_current(struct mcg_cache *c)
{
	mcg_group_t *g = mcg_current_group_;
	if (unlikely(!g))
		return alloc_in_root(c);
	return mcg_cache_alloc_objcg(c, mcg_objcg_of(g, c->objcg_kind));
}

mcg_public void *mcg_cache_alloc_account(mcg_cache_t *c, mcg_group_t *g)
{
	if (unlikely(!c))
		return mcg_null_einval();
	if (!g)
		return mcg_cache_alloc_current(c);
	return mcg_cache_alloc_objcg(c, mcg_objcg_of(g, c->objcg_kind));
}

mcg_public int mcg_obj_group(const void *p, mcg_group_t **out)
{
	if (!p || !out || !mcg_chunk_of(p))
		return -EINVAL;
	struct mcg_objcg *x = mcg_kmalloc_objcg_of(p);
	if (!x)
		return -ENOENT;
	*out = mcg_objcg_group_get(x);
	return 0;
}
