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
 *        go on the array tagged, still charged (slab/account.h), except
 *        inside a shrinker, whose frees uncharge at once (reclaim progress).
 */
#ifndef MCG_SLAB_CACHE_FAST_H
#define MCG_SLAB_CACHE_FAST_H

#include "group/group.h" /* mcg_reclaim_state_current */
#include "slab/slab.h"

enum { MCG_FREE_UNCHECKED = 16, MCG_FREE_MISALIGNED = 17 };

/* Every exit is a return or a tail call: the fast path needs no stack frame. */
static mcg_always_inline void *mcg_cache_alloc_fast(struct mcg_cache *c)
{
	if (likely(mcg_percpu_use_rseq())) {
		uintptr_t slot = (uintptr_t)mcg_rseq_stack_pop(c->pcpu);
		if (likely(slot) && likely(!(slot & MCG_SLOT_CHARGED)))
			return (void *)slot;
		if (slot)
			return mcg_cache_alloc_uncharge(c, slot);
		return mcg_cache_alloc_slow(c);
	}
	return mcg_cache_alloc_locked(c);
}

/*
 * Push @obj (a checked object of slab @s of @c, tagged or not) on this
 * CPU's array; full: flush.  With @e (a tagged object's vector entry; a
 * constant NULL otherwise) the push records it for the accounted
 * allocation that pops the object again (account.h).
 */
static mcg_always_inline void mcg_cache_push_rec(struct mcg_cache *c, struct mcg_slab *s, void *obj,
                                                 uint32_t *e)
{
	if (likely(mcg_percpu_use_rseq())) {
		int r = e ? mcg_rseq_stack_push_memo(s->pcpu, obj, e)
		          : mcg_rseq_stack_push(s->pcpu, obj);
		if (likely(r == MCG_PCPU_OK))
			return;
		mcg_cache_free_slow(c, obj, s, r);
		return;
	}
	mcg_cache_free_locked(c, s, obj);
}

static mcg_always_inline void mcg_cache_push(struct mcg_cache *c, struct mcg_slab *s, void *obj)
{
	mcg_cache_push_rec(c, s, obj, NULL);
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
	uint32_t *v = __atomic_load_n(&s->objcgs, __ATOMIC_RELAXED);
	if (likely(!v)) {
		mcg_cache_push(c, s, obj);
		return;
	}
	/* The flush that takes it back to its slab reads and clears its
	 * vector entry: the line is on its way by then. */
	__builtin_prefetch(&v[idx], 1);
	if (unlikely(mcg_reclaim_state_current)) {
		mcg_cache_free_reclaim(c, s, obj, idx);
		return;
	}
	mcg_cache_push_rec(c, s, (void *)((uintptr_t)obj | MCG_SLOT_CHARGED), &v[idx]);
}

#endif /* MCG_SLAB_CACHE_FAST_H */
