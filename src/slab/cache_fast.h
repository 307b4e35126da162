/* SPDX-License-Identifier: MIT */
/*
 * slab/cache_fast.h - the fast paths, inline: one per-CPU stack operation.
 *
 * alloc: pop this CPU's array; only if it is empty (or stopped, or the cache
 *        is a debug cache, whose arrays are always stopped) go to the slow
 *        path, which refills a batch from the node's slabs.  An object
 *        tagged MCG_SLOT_CHARGED may still carry an accounted object's
 *        charge: slab/account.c gives it back first.
 * free:  the pointer must be an object start of this cache (two loads and a
 *        multiply find out); push on this CPU's array; only if it is full go
 *        to the slow path, which flushes a batch back to the slabs.  A slab
 *        that ever held an accounted object has an objcg vector: its objects
 *        go on the array tagged, still charged, their slot carrying the id
 *        of their objcg (slab.h, slab/account.h) - except inside a
 *        shrinker, whose frees uncharge at once (reclaim progress): a
 *        global gate, nonzero while any thread runs a shrinker, makes the
 *        push fail.
 */
#ifndef MCG_SLAB_CACHE_FAST_H
#define MCG_SLAB_CACHE_FAST_H

#include "group/group.h" /* mcg_reclaim_gate_ */
#include "slab/slab.h"

/* mcg_cache_free_slow()'s reasons beyond a push's result (MCG_PCPU_*):
 * a pointer not checked yet, one that is no object start, and a locked
 * push that found the array full. */
enum { MCG_FREE_UNCHECKED = 16, MCG_FREE_MISALIGNED = 17, MCG_FREE_FLUSH = 18 };

/* This CPU's top object of the arrays at @pcpu, those of cache @c, its
 * charge given back if it carried one; NULL if the array is empty or
 * stopped (always, in locked mode).  @c NULL: the caller read the arrays
 * elsewhere (kmalloc's table) and a charged object's own slab names its
 * cache. */
static mcg_always_inline void *mcg_pcpu_pop(struct mcg_pcpu_stack *pcpu, struct mcg_cache *c)
{
	uintptr_t slot = (uintptr_t)mcg_rseq_stack_pop(pcpu);
	if (likely(slot) && likely(!(slot & MCG_SLOT_CHARGED)))
		return (void *)slot;
	if (slot)
		return mcg_cache_alloc_uncharge(c ? c : mcg_slab_unit(mcg_slot_obj(slot))->cache,
		                                slot);
	return NULL;
}

/* mcg_pcpu_pop() of cache @c's arrays. */
static mcg_always_inline void *mcg_cache_pop(struct mcg_cache *c)
{
	return mcg_pcpu_pop(c->pcpu, c);
}

/* Every exit is a return or a tail call: the fast path needs no stack
 * frame.  No mode test: in locked mode the pop fails (mcg_percpu_sections())
 * and the slow path takes the locked one. */
static mcg_always_inline void *mcg_cache_alloc_fast(struct mcg_cache *c)
{
	if (likely(mcg_percpu_sections())) {
		void *obj = mcg_cache_pop(c);
		return likely(obj) ? obj : mcg_cache_alloc_slow(c);
	}
	return mcg_cache_alloc_cpulock(c);
}

/* The cache of a free's slab @s: @c, or where the caller passed NULL (it
 * had no cache at hand), s->cache - read on the slow paths only, so that
 * the fast path spends no load on it. */
#define MCG_FREE_CACHE(c, s) ((c) ? (c) : (s)->cache)

/* Push @slot (a checked object of slab @s of @c, tagged or not) on this
 * CPU's array; full: flush.  No mode test, as for the allocation. */
static mcg_always_inline void mcg_cache_push(struct mcg_cache *c, struct mcg_slab *s, void *slot)
{
	if (likely(mcg_percpu_sections())) {
		int r = mcg_rseq_stack_push(s->pcpu, slot);
		if (likely(r == MCG_PCPU_OK))
			return;
		mcg_cache_free_slow(MCG_FREE_CACHE(c, s), slot, s, r);
		return;
	}
	/* GCOVR_EXCL_START: no sections - TSan builds only */
	mcg_cache_free_cpulock(MCG_FREE_CACHE(c, s), s, slot);
	/* GCOVR_EXCL_STOP */
}

/* Free @obj, object @idx of slab @s of cache @c (checked; NULL: s->cache). */
static mcg_always_inline void mcg_cache_free_at(struct mcg_cache *c, struct mcg_slab *s, void *obj,
                                                long idx)
{
	uintptr_t w = __atomic_load_n(&s->objcgs, __ATOMIC_RELAXED);
	/* No hint: both kinds of slab are common, and without one GCC lays
	 * the tagged push out first, on the straight line of the accounted
	 * free, where the plain free can spare the taken branch. */
	if (!w) {
		mcg_cache_push(c, s, obj);
		return;
	}
	if (unlikely(!mcg_percpu_sections())) { /* no sections (TSan) */
		/* GCOVR_EXCL_START: TSan builds only */
		mcg_cache_free_charged_slow(MCG_FREE_CACHE(c, s), s, obj, idx);
		return;
		/* GCOVR_EXCL_STOP */
	}
	/* Tagged, with the id its entry holds: the entry stays as it is.  A
	 * slab whose objects are all one objcg's says so in its word, and
	 * the vector is not read (slab.h: enum mcg_slab_sole).  The push
	 * fails while any thread runs a shrinker (the reclaim gate: a
	 * shrinker's frees uncharge at once), and in locked mode. */
	uintptr_t sole = mcg_slab_sole_bits(w);
	void *slot = (void *)(sole ? (uintptr_t)obj + sole + MCG_SLOT_CHARGED
	                           : mcg_slot_tagged(obj, mcg_slab_vector(w)[idx]));
	int r = mcg_rseq_stack_push_gated(s->pcpu, slot, &mcg_reclaim_gate_);
	if (unlikely(r != MCG_PCPU_OK))
		mcg_cache_free_tagged_slow(MCG_FREE_CACHE(c, s), s, slot, r);
}

/* Free @obj, known to lie in slab @s of cache @c. */
static mcg_always_inline void mcg_cache_free_fast(struct mcg_cache *c, struct mcg_slab *s,
                                                  void *obj)
{
	long idx = mcg_slab_index(s, obj);
	if (unlikely(idx < 0)) {
		mcg_cache_free_slow(c, obj, s, MCG_FREE_MISALIGNED);
		return;
	}
	mcg_cache_free_at(c, s, obj, idx);
}

#endif /* MCG_SLAB_CACHE_FAST_H */
