/* SPDX-License-Identifier: MIT */
/*
 * slab/account.h - the accounted allocation fast path, inline (account.c
 * has the rest): in one rseq section pop an object and take its charge from
 * the units this CPU's array holds for the objcg (base/pcpu_acct.h), then
 * record the objcg in the slab's vector.  Everything else - another objcg's
 * units in the array, too few, locked mode - goes to the slow path, which
 * charges through the objcg's byte stock (group/objcg.h) and refills the
 * array's units from it.
 */
#ifndef MCG_SLAB_ACCOUNT_H
#define MCG_SLAB_ACCOUNT_H

#include "group/group.h" /* mcg_reclaim_state_current */
#include "base/pcpu_acct.h"
#include "group/objcg.h"
#include "slab/cache_fast.h"

/** Units a CPU array holds for its objcg at most (8 pages' worth). */
#define MCG_ACCT_ARRAY_UNITS (8 * MCG_OBJCG_UNITS_PER_PAGE)

/* Where mcg_cache_alloc_objcg() left its fast path. */
enum { MCG_ACCT_UNCHARGED, MCG_ACCT_NO_VECTOR };

/** The slow half of mcg_cache_alloc_objcg(), from @stage: charge, allocate, record, or undo. */
void *mcg_cache_alloc_objcg_slow(struct mcg_cache *c, struct mcg_objcg *x, int stage, void *obj);

/** mcg_objcg_give - give @units back to @x: this CPU's stock, else the slow path. */
static mcg_always_inline void mcg_objcg_give(struct mcg_objcg *x, uint64_t units)
{
	/* Inside a shrinker frees must reach the counters (reclaim progress). */
	if (likely(!mcg_reclaim_state_current) && likely(mcg_objcg_refill(x, units) == MCG_PCPU_OK))
		return;
	mcg_objcg_uncharge(x, units);
}

/**
 * mcg_cache_alloc_objcg - allocate an object of @c charged to @x.
 * Return: the object, or NULL with errno ENOMEM (nothing charged).
 */
static mcg_always_inline void *mcg_cache_alloc_objcg(struct mcg_cache *c, struct mcg_objcg *x)
{
	void *obj;
	if (unlikely(!mcg_percpu_use_rseq()) ||
	    unlikely(!(obj = mcg_rseq_stack_pop_acct(&c->pcpu, mcg_objcg_key(x), &c->acct))))
		return mcg_cache_alloc_objcg_slow(c, x, MCG_ACCT_UNCHARGED, NULL);
	/* Our own object: its chunk is ours, and it starts a slot. */
	struct mcg_slab *s = ((struct mcg_slab *)mcg_chunk_slab_desc(obj))->head;
	struct mcg_objcg **v = __atomic_load_n(&s->objcgs, __ATOMIC_ACQUIRE);
	if (unlikely(!v))
		return mcg_cache_alloc_objcg_slow(c, x, MCG_ACCT_NO_VECTOR, obj);
	v[((uint64_t)((char *)obj - s->base) * s->recip) >> MCG_RECIP_SHIFT] = x;
	return obj;
}

/** mcg_cache_alloc_current - mcg_cache_alloc_objcg() for the current group (mcg_group_enter()). */
void *mcg_cache_alloc_current(struct mcg_cache *c);

/*
 * The malloc family charged to an objcg (NULL: not accounted), for the
 * preload shim's heap and the public *_account calls (slab/kmalloc.c).
 * Return NULL with errno ENOMEM (or EINVAL for a bad alignment).
 */
void *mcg_kmalloc_objcg(size_t size, struct mcg_objcg *x);
void *mcg_kcalloc_objcg(size_t n, size_t size, struct mcg_objcg *x);
void *mcg_kaligned_objcg(size_t align, size_t size, struct mcg_objcg *x);
/** mcg_kmalloc_objcg_of - the objcg block @p is charged to, or NULL (valid while @p lives). */
struct mcg_objcg *mcg_kmalloc_objcg_of(const void *p);

#endif /* MCG_SLAB_ACCOUNT_H */
