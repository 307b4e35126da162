/* SPDX-License-Identifier: MIT */
/*
 * slab/account.h - the accounted allocation fast path, inline (account.c
 * has the rest).
 *
 * A charge travels with its object: freeing an accounted object leaves it
 * charged, and it goes on this CPU's array tagged, its slot carrying the
 * id its vector entry names (slab.h: MCG_SLOT_CHARGED).  Allocating for
 * objcg x pops an object; if its slot carries x's id, the charge is x's
 * already and nothing else is done: the alloc+free pair of one tenant
 * moves no charge and touches no vector.  Anything else - an
 * untagged object, another objcg's, locked mode - goes to the slow path,
 * which charges x through its byte stock (group/objcg.h) and gives the
 * previous objcg's charge back.  A charge leaves its object when the object
 * leaves the CPU arrays: an unaccounted allocation pops it, or it goes back
 * to its slab (mcg_node_put() takes it from the entry as it frees the object).
 */
#ifndef MCG_SLAB_ACCOUNT_H
#define MCG_SLAB_ACCOUNT_H

#include "group/group.h" /* mcg_reclaim_state_current */
#include "group/objcg.h"
#include "slab/cache_fast.h"

/** The slow half of mcg_cache_alloc_objcg(): @slot is what the fast path
 *  popped (0: nothing), tag included. */
void *mcg_cache_alloc_objcg_slow(struct mcg_cache *c, struct mcg_objcg *x, uintptr_t slot);

/** mcg_objcg_give - give @units back to @x: this CPU's stock, else the slow path. */
static mcg_always_inline void mcg_objcg_give(struct mcg_objcg *x, uint64_t units)
{
	/* Inside a shrinker frees must reach the counters (reclaim progress). */
	if (likely(!mcg_reclaim_state_current) && likely(mcg_objcg_refill(x, units) == MCG_PCPU_OK))
		return;
	mcg_objcg_uncharge(x, units);
}

/*
 * The accounted fast path: pop this CPU's top object of @c (rseq mode) and
 * return it if its slot carries *@bits (an objcg's slot_bits, read after
 * the pop): it is charged to that objcg already - take the tag and the id
 * off, and it is ours as it is.  NULL otherwise, *@slot then being what was
 * popped (0: nothing, or locked mode) for the slow path.
 */
static mcg_always_inline void *mcg_cache_pop_charged(struct mcg_cache *c, const uint64_t *bits,
                                                     uintptr_t *slot)
{
	*slot = 0; /* in locked mode the pop fails (mcg_percpu_sections()) */
	if (unlikely(!mcg_percpu_sections()) ||
	    unlikely(!(*slot = (uintptr_t)mcg_rseq_stack_pop(c->pcpu))))
		return NULL;
	uintptr_t obj = *slot - *bits;
	if (unlikely(obj >= ((uintptr_t)1 << MCG_SLOT_ID_SHIFT)))
		return NULL;
	if (!obj) /* an object: never NULL (lets callers skip a test); GCOVR_EXCL_BR_LINE */
		__builtin_unreachable(); /* GCOVR_EXCL_LINE: a hint to the compiler, no code */
	return (void *)obj;
}

/**
 * mcg_cache_alloc_objcg - allocate an object of @c charged to @x.
 * Return: the object, or NULL with errno ENOMEM (nothing charged).
 */
static mcg_always_inline void *mcg_cache_alloc_objcg(struct mcg_cache *c, struct mcg_objcg *x)
{
	uintptr_t slot;
	void *obj = mcg_cache_pop_charged(c, &x->slot_bits, &slot);
	return likely(obj) ? obj : mcg_cache_alloc_objcg_slow(c, x, slot);
}

/** The slow half of mcg_cache_alloc_current(): @slot as for
 *  mcg_cache_alloc_objcg_slow(); the current group's objcg, the root's
 *  when none (out of line). */
void *mcg_cache_alloc_current_slow(struct mcg_cache *c, uintptr_t slot);

/**
 * mcg_cache_alloc_current - mcg_cache_alloc_objcg() for the current group
 * (mcg_group_enter()), the root's when none: inline, and the objcg is not
 * loaded on the way - the thread's slot_bits for the cache's kind are
 * enough to recognise an object charged to it (the root's by default).
 */
static mcg_always_inline void *mcg_cache_alloc_current(struct mcg_cache *c)
{
	uintptr_t slot;
	void *obj = mcg_cache_pop_charged(c, &mcg_current_slot_bits_[c->objcg_kind], &slot);
	return likely(obj) ? obj : mcg_cache_alloc_current_slow(c, slot);
}

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
