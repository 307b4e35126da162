/* SPDX-License-Identifier: MIT */
/*
 * slab/cache_fast.h - the fast paths, inline: one per-CPU stack operation.
 *
 * alloc: pop this CPU's array; only if it is empty (or stopped, or the cache
 *        is a debug cache, whose arrays are always stopped) go to the slow
 *        path, which refills a batch from the node's slabs.
 * free:  the pointer must be an object start of this cache (two loads and a
 *        multiply find out); push on this CPU's array; only if it is full go
 *        to the slow path, which flushes a batch back to the slabs.  A slab
 *        that ever held an accounted object has an objcg vector: its frees
 *        go through slab/account.c, which uncharges the accounted ones.
 */
#ifndef MCG_SLAB_CACHE_FAST_H
#define MCG_SLAB_CACHE_FAST_H

#include "slab/slab.h"

enum { MCG_FREE_UNCHECKED = 16, MCG_FREE_MISALIGNED = 17 };

/* Every exit is a return or a tail call: the fast path needs no stack frame. */
static mcg_always_inline void *mcg_cache_alloc_fast(struct mcg_cache *c)
{
	if (likely(mcg_percpu_use_rseq())) {
		void *obj = mcg_rseq_stack_pop(c->pcpu);
		if (likely(obj))
			return obj;
		return mcg_cache_alloc_slow(c);
	}
	return mcg_cache_alloc_locked(c);
}

/* Push @obj (a checked object of slab @s of @c) on this CPU's array; full: flush. */
static mcg_always_inline void mcg_cache_push(struct mcg_cache *c, struct mcg_slab *s, void *obj)
{
	if (likely(mcg_percpu_use_rseq())) {
		int r = mcg_rseq_stack_push(s->pcpu, obj);
		if (likely(r == MCG_PCPU_OK))
			return;
		mcg_cache_free_slow(c, obj, s, r);
		return;
	}
	mcg_cache_free_locked(c, s, obj);
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
	if (unlikely(__atomic_load_n(&s->objcgs, __ATOMIC_RELAXED))) {
		mcg_cache_free_account(c, s, obj, idx);
		return;
	}
	mcg_cache_push(c, s, obj);
}

#endif /* MCG_SLAB_CACHE_FAST_H */
