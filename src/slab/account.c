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
 * slab leave their entry NULL.  Free reads and clears the entry, pushes the
 * object, and gives the units back to this CPU's byte stock: no lock on the
 * fast path, and the same code whether the object's group is alive or was
 * removed (its objcg then points to an ancestor).
 *
 * Locks: none; the objcg slow paths take an objcg's spin lock.
 */
#include <errno.h>

#include "base/fault.h"
#include "memcg/kmalloc.h"
#include "memcg/slab.h"
#include "slab/account.h"

/* ------------------------------------------------------------ free */

void mcg_cache_free_account(struct mcg_cache *c, struct mcg_slab *s, void *obj, long idx)
{
	struct mcg_objcg **v = __atomic_load_n(&s->objcgs, __ATOMIC_RELAXED);
	struct mcg_objcg *x = v[idx];
	if (x)
		v[idx] = NULL; /* before the object can be handed out again */
	if (likely(mcg_percpu_use_rseq())) {
		int r = mcg_rseq_stack_push(s->pcpu, obj);
		if (unlikely(r != MCG_PCPU_OK))
			mcg_cache_free_slow(c, obj, s, r);
	} else {
		mcg_cache_free_locked(c, s, obj);
	}
	if (x)
		mcg_objcg_give(x, c->charge_units);
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
	if (stage == MCG_ACCT_UNCHARGED) {
		if (mcg_objcg_charge(x, c->charge_units, 0)) {
			errno = ENOMEM;
			return NULL;
		}
		obj = mcg_cache_alloc_fast(c);
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
	return obj;
uncharge:
	mcg_objcg_give(x, c->charge_units);
	errno = ENOMEM;
	return NULL;
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

mcg_public void *mcg_cache_alloc_account(mcg_cache_t *c, mcg_group_t *g)
{
	if (unlikely(!c)) {
		errno = EINVAL;
		return NULL;
	}
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
