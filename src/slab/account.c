/* SPDX-License-Identifier: MIT */
/*
 * slab/account.c - accounted objects: the public accounted calls, the slow
 * half of accounted allocation, the charges that leave with objects, and
 * the per-slab objcg vectors.
 *
 * An accounted object charges its slot and its vector entry
 * (c->charge_units units of MCG_OBJCG_UNIT bytes) to an objcg (group/objcg.h)
 * and records the objcg's id in entry i of its slab's vector, 2 bytes per
 * object (the kernel's obj_exts holds 8-byte pointers), allocated on the slab's first
 * accounted object and freed with the slab.  Unaccounted objects leave
 * their entry 0.
 *
 * The charge travels with the object through the CPU arrays (account.h):
 * a free pushes the object tagged and still charged, its slot carrying the
 * id its entry holds (the one read of the vector on the way); an accounted
 * allocation whose popped slot carries its objcg's id moves no charge and
 * reads nothing more.  The charge leaves when the object leaves the arrays:
 * popped by an unaccounted allocation (mcg_cache_alloc_uncharge()), by
 * another objcg's (the slow path below), or flushed, drained or reaped back
 * to its slab (mcg_node_put(), slab.c: the slot's id says whose charge it
 * is, the entry is cleared in the loop that frees the object, next to its
 * bit; one give per objcg per batch, mcg_charges_give()).  Frees
 * inside a shrinker uncharge at once: reclaim must see its progress.  So a
 * CPU array holds at most its capacity of freed objects still charged - the
 * kernel's per-CPU stock bound in another form - and drains
 * (mcg_group_drain_stocks(), cache destruction) give them back exactly.
 * The same code runs whether the object's group is alive or was removed
 * (its objcg then points to an ancestor).
 *
 * Locks: the cache list lock (drain and scan of the arrays), the arrays'
 * locks while stopped; the objcg slow paths take an objcg's spin lock.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/fault.h"
#include "base/log.h"
#include "os/os.h"
#include "memcg/kmalloc.h"
#include "memcg/slab.h"
#include "slab/account.h"

_Static_assert(MCG_SLOT_ID_SHIFT == MCG_OBJCG_ID_SHIFT && MCG_SLOT_CHARGED == 1,
               "an objcg's slot_bits are the slot's tag and id");

/* The slab of @obj, an object of ours (in a CPU array or handed out). */
static inline struct mcg_slab *slab_of_own(void *obj)
{
	return __atomic_load_n(&((struct mcg_slab *)mcg_chunk_slab_desc(obj))->head,
	                       __ATOMIC_ACQUIRE);
}

/* The vector entry of object @obj of slab @s (which has a vector). */
static inline mcg_objcg_id_t *entry_of(struct mcg_slab *s, void *obj)
{
	mcg_objcg_id_t *v = mcg_slab_vector(__atomic_load_n(&s->objcgs, __ATOMIC_ACQUIRE));
	return &v[mcg_slab_index(s, obj)];
}

/* ------------------------------------------------------------ free */

void mcg_cache_free_charged_slow(struct mcg_cache *c, struct mcg_slab *s, void *obj, long idx)
{
	mcg_objcg_id_t *v = mcg_slab_vector(__atomic_load_n(&s->objcgs, __ATOMIC_ACQUIRE));
	mcg_objcg_id_t id = v[idx];
	if (!mcg_reclaim_state_current) { /* another thread's shrinker, or a TSan build */
		mcg_cache_push(c, s, (void *)mcg_slot_tagged(obj, id));
		return;
	}
	v[idx] = 0; /* before the object can be handed out again */
	mcg_cache_push(c, s, obj);
	if (id) /* to the counters: reclaimed */
		mcg_objcg_uncharge(mcg_objcg_from_id(id), c->charge_units);
}

mcg_noinline void mcg_cache_free_tagged_slow(struct mcg_cache *c, struct mcg_slab *s, void *slot,
                                             int why)
{
	/* Full, stopped or locked mode - or the gate closed: a shrinker runs. */
	if (why == MCG_PCPU_FAIL && MCG_READ_ONCE(mcg_reclaim_gate_)) {
		void *obj = mcg_slot_obj((uintptr_t)slot);
		mcg_cache_free_charged_slow(c, s, obj, mcg_slab_index(s, obj));
		return;
	}
	mcg_cache_free_slow(c, slot, s, why);
}

int mcg_charges_slot_slow(struct mcg_charges *ch, uint16_t id)
{
	unsigned k = ch->n;
	while (k-- > 0 && ch->id[k] != id)
		;
	if (k == UINT_MAX) { /* not there: a new entry */
		if (ch->n == MCG_CHARGES_MAX)
			return -1;
		k = ch->n++;
		ch->id[k] = id;
		ch->units[k] = 0;
	}
	ch->map[id % MCG_CHARGES_MAP] = (uint8_t)(k + 1);
	return (int)k;
}

void mcg_charges_give(struct mcg_charges *ch)
{
	for (unsigned k = 0; k < ch->n; k++)
		mcg_objcg_give(mcg_objcg_from_id(ch->id[k]), ch->units[k]);
	ch->n = 0;
}

/* ------------------------------------------------------------ alloc */

/* @s's vector, allocated on first use; NULL with nothing changed on failure. */
/*
 * The vectors come from caches of their own ("objcg-vec-<bytes>", powers of
 * two from 32 bytes, living as long as kmalloc's), in which nothing is ever accounted,
 * so a slab that holds vectors never has one.  From kmalloc, a slab could
 * hold the vector of a slab that holds its own (kmalloc-160's vector is 818
 * bytes, kmalloc-896's is 146): neither would ever be empty again, and each
 * such cycle kept its slabs for good.
 */
#define VEC_MIN_SHIFT 5
#define VEC_CLASSES 9 /* up to 8 KiB: a slab has at most 4096 objects (16-byte slots, one unit) */
static struct mcg_cache *vec_caches[VEC_CLASSES];
static pthread_mutex_t vec_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned vec_class(const struct mcg_slab *s)
{
	size_t bytes = (size_t)s->nobjs * sizeof(mcg_objcg_id_t);
	unsigned k = 0;
	while (((size_t)1 << (VEC_MIN_SHIFT + k)) < bytes)
		k++;
	MCG_BUG_ON(k >= VEC_CLASSES);
	return k;
}

/* The cache of vectors of class @k (made at kmalloc's initialisation, or
 * here if an accounted cache came first); NULL: -ENOMEM. */
static struct mcg_cache *vec_cache(unsigned k)
{
	struct mcg_cache *c = __atomic_load_n(&vec_caches[k], __ATOMIC_ACQUIRE);
	if (likely(c))
		return c;
	pthread_mutex_lock(&vec_lock);
	c = vec_caches[k];
	if (!c) {
		char name[MCG_CACHE_NAME_MAX];
		snprintf(name, sizeof(name), "objcg-vec-%zu", (size_t)1 << (VEC_MIN_SHIFT + k));
		c = mcg_cache_create_internal(name, (size_t)1 << (VEC_MIN_SHIFT + k), 0, 0, NULL);
		if (c)
			__atomic_store_n(&vec_caches[k], c, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&vec_lock);
	return c;
}

int mcg_slab_vectors_init(void)
{
	for (unsigned k = 0; k < VEC_CLASSES; k++)
		if (!vec_cache(k))
			return -ENOMEM;
	return 0;
}

static mcg_objcg_id_t *slab_objcgs(struct mcg_slab *s)
{
	mcg_objcg_id_t *v = mcg_slab_vector(__atomic_load_n(&s->objcgs, __ATOMIC_ACQUIRE));
	if (v)
		return v;
	if (mcg_fault_should_fail())
		return NULL;
	struct mcg_cache *vc = vec_cache(vec_class(s));
	if (!vc || !(v = mcg_cache_alloc(vc)))
		return NULL;
	memset(v, 0, (size_t)s->nobjs * sizeof(*v));
	uintptr_t none = 0;
	if (!__atomic_compare_exchange_n(&s->objcgs, &none, (uintptr_t)v, false, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE)) {
		mcg_cache_free(vc, v); /* another CPU attached one first */
		v = mcg_slab_vector(none);
	}
	/* Every unit's descriptor, before any object is charged: the winner
	 * and any loser both store it (the same pointer), so whoever returns
	 * first has it everywhere. */
	mcg_slab_set_objcgs(s, v);
	return v;
}

/* @slot is tagged: its slab has a vector. */
void *mcg_cache_alloc_uncharge(struct mcg_cache *c, uintptr_t slot)
{
	void *obj = mcg_slot_obj(slot);
	mcg_objcg_id_t id = mcg_slot_id(slot);
	if (id) {
		*entry_of(slab_of_own(obj), obj) = 0;
		mcg_objcg_give(mcg_objcg_from_id(id), c->charge_units);
	}
	return obj;
}

/*
 * An object of slab @s (an MCG_CACHE_ACCOUNT cache's) is charged to objcg
 * @id now, its entry written: keep the slab's sole objcg true before the
 * object is handed out.  The first accounted object since the slab was
 * last empty sets it; one of another objcg drops it (MIXED) until the slab
 * is empty again (slab_free_run(), slab.c).  Other caches never set one:
 * their unaccounted objects (entry 0) come and go without this path.
 */
static void slab_note_objcg(struct mcg_slab *s, mcg_objcg_id_t id)
{
	uintptr_t bits = (uintptr_t)id << MCG_SLOT_ID_SHIFT;
	/* MIXED is published after the words are cleared (acquire/release):
	 * an object handed out on seeing it can only be freed as mixed.
	 * Read before the words were cleared, a free of it could take the
	 * old objcg's id (test_sole_mt races for it). */
	if (likely(mcg_slab_sole_bits(__atomic_load_n(&s->objcgs, __ATOMIC_RELAXED)) == bits) ||
	    __atomic_load_n(&s->sole, __ATOMIC_ACQUIRE) == MCG_SOLE_MIXED)
		return;
	mcg_spin_lock(&s->lock);
	if (s->sole == MCG_SOLE_UNSET) {
		mcg_slab_set_sole(s, bits);
		__atomic_store_n(&s->sole, MCG_SOLE_ONE, __ATOMIC_RELEASE);
	} else if (s->sole == MCG_SOLE_ONE &&
	           mcg_slab_sole_bits(__atomic_load_n(&s->objcgs, __ATOMIC_RELAXED)) != bits) {
		mcg_slab_set_sole(s, 0);
		__atomic_store_n(&s->sole, MCG_SOLE_MIXED, __ATOMIC_RELEASE);
	}
	mcg_spin_unlock(&s->lock);
}

/* An object of @c, as its array slot (tagged or not); 0 if there is none. */
static uintptr_t slot_alloc(struct mcg_cache *c)
{
	void *slot = mcg_percpu_use_rseq() ? mcg_rseq_stack_pop(c->pcpu)
	                                   : mcg_cpulock_stack_pop(c->pcpu);
	return (uintptr_t)(slot ? slot : mcg_cache_refill(c)); /* fresh: untagged */
}

/* mcg_cache_alloc_objcg_slow() for everything but the retag below. */
static mcg_noinline void *alloc_objcg_general(struct mcg_cache *c, struct mcg_objcg *x,
                                              uintptr_t slot)
{
	if (!slot && !(slot = slot_alloc(c))) {
		errno = ENOMEM;
		return NULL;
	}
	void *obj = mcg_slot_obj(slot);
	struct mcg_slab *s = slab_of_own(obj);
	mcg_objcg_id_t *e = NULL, prev = mcg_slot_id(slot);
	if (slot & MCG_SLOT_CHARGED) {
		if (prev == x->id)
			return obj; /* already x's (locked mode: its fast path is here) */
		e = entry_of(s, obj);
	}
	/* x's charge first (the byte stock's fast path, else pages for it). */
	if (mcg_objcg_consume(x, c->charge_units) != MCG_PCPU_OK &&
	    mcg_objcg_charge(x, c->charge_units, 0))
		goto fail;
	if (!e) {
		mcg_objcg_id_t *v = slab_objcgs(s);
		if (!v) {
			mcg_objcg_give(x, c->charge_units);
			goto fail;
		}
		e = &v[mcg_slab_index(s, obj)];
	}
	*e = x->id;
	if (c->flags & MCG_CACHE_ACCOUNT)
		slab_note_objcg(s, x->id);
	if (prev) /* the object's previous charge goes back to its objcg */
		mcg_objcg_give(mcg_objcg_from_id(prev), c->charge_units);
	return obj;
fail:
	/* Back as it was, its slot unchanged: a free would tag a fresh object
	 * with the slab's sole objcg, whose charge it does not carry. */
	mcg_cache_push(c, s, (void *)slot);
	errno = ENOMEM;
	return NULL;
}

/* The retag's give of @prev's units that its stock word did not take. */
static mcg_noinline void *retag_uncharge(struct mcg_objcg *prev, uint64_t units, void *obj)
{
	mcg_objcg_uncharge(prev, units);
	return obj;
}

/*
 * The retag: an accounted allocation for @x popped (in an rseq section)
 * @slot, an object another objcg's charge came with - a tenant allocating
 * what another freed, the common miss of a multi-tenant server, whose
 * slabs hold many tenants' objects.  The charge moves from the one to the
 * other: x's units from its stock word, the object's entry, prev's units
 * back into its word.  Straight through, no stack frame: the object's
 * unit descriptor gives the vector and the index (the object came from a
 * CPU array, so it is an object start of a slab with a vector), the popped
 * slot proves the rseq mode (no mode tests), and every miss - a slab with
 * a sole objcg (its state changes, slab_note_objcg()), no units in x's
 * word, an id of x's own or none - leaves nothing changed and takes the
 * general path.
 */
void *mcg_cache_alloc_objcg_slow(struct mcg_cache *c, struct mcg_objcg *x, uintptr_t slot)
{
	mcg_objcg_id_t prev = mcg_slot_id(slot); /* 0: nothing popped, or not charged */
	if (unlikely(!prev) || unlikely(prev == x->id))
		return alloc_objcg_general(c, x, slot);
	void *obj = mcg_slot_obj(slot);
	struct mcg_slab *u = mcg_slab_unit(obj);
	uintptr_t w = __atomic_load_n(&u->objcgs, __ATOMIC_RELAXED);
	uint64_t units = c->charge_units;
	if (unlikely(mcg_slab_sole_bits(w)) ||
	    unlikely(mcg_objcg_consume_rseq(x, units) != MCG_PCPU_OK))
		return alloc_objcg_general(c, x, slot);
	mcg_slab_vector(w)[mcg_slab_product_index(u, mcg_slab_product(u, obj))] = x->id;
	struct mcg_objcg *p = mcg_objcg_from_id(prev);
	/* Inside a shrinker frees must reach the counters (mcg_objcg_give()). */
	if (likely(!mcg_reclaim_state_current) &&
	    likely(mcg_objcg_refill_rseq(p, units) == MCG_PCPU_OK))
		return obj;
	return retag_uncharge(p, units, obj);
}

/* ------------------------------------------------------------ draining */

/* Any charged object (a slot with an id) in a CPU array of @c?  Each
 * array's lock held: exact in locked mode; in rseq mode the owner runs on,
 * so a hint (exact at rest). */
static bool arrays_hold_charged(struct mcg_cache *c)
{
	unsigned ncpu = mcg_os_nr_cpus();
	bool any = false;
	for (unsigned cpu = 0; cpu < ncpu && !any; cpu++) {
		struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(c->pcpu, cpu);
		mcg_lock(&st->lock);
		uint32_t cur = MCG_MIN(MCG_READ_ONCE(st->cur), c->cpu_cap);
		for (uint32_t i = 0; i < cur && !any; i++)
			any = mcg_slot_id((uintptr_t)MCG_READ_ONCE(st->slots[i])) != 0;
		mcg_unlock(&st->lock);
	}
	return any;
}

/*
 * Walk the charged objects of @c's stopped arrays (no allocation here: an
 * array of a kmalloc cache may be among them): each one's charge into @r;
 * with @take, its entry cleared (its charge then belongs to @r).  Return
 * false if @r filled up first (@take: those not taken stay as they were).
 */
static bool arrays_gather(struct mcg_cache *c, struct mcg_charges *r, bool take)
{
	unsigned ncpu = mcg_os_nr_cpus();
	for (unsigned cpu = 0; cpu < ncpu; cpu++) {
		struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(c->pcpu, cpu);
		for (uint32_t i = 0; i < st->cur; i++) {
			uintptr_t slot = (uintptr_t)st->slots[i];
			mcg_objcg_id_t id = mcg_slot_id(slot);
			if (!id)
				continue;
			if (!mcg_charges_add(r, id, c->charge_units))
				return false;
			if (take) { /* entry and slot together; tagged still: a double
				     * free is still seen */
				void *obj = mcg_slot_obj(slot);
				*entry_of(slab_of_own(obj), obj) = 0;
				st->slots[i] = (void *)mcg_slot_tagged(obj, 0);
			}
		}
	}
	return true;
}

/* Give back the charges of the freed objects @c's CPU arrays hold (stop,
 * fence, clear their entries and slots' ids; the objects stay). */
static void cache_drain_charges(struct mcg_cache *c)
{
	if (c->debug || !arrays_hold_charged(c))
		return;
	bool done;
	do { /* the units go back with no lock held */
		struct mcg_charges r;
		r.n = 0;
		mcg_cache_arrays_stop(c, NULL);
		done = arrays_gather(c, &r, true);
		mcg_cache_arrays_start(c, NULL);
		for (unsigned i = 0; i < r.n; i++) /* taken: the objcgs stay */
			mcg_objcg_units_return(mcg_objcg_from_id(r.id[i]), r.units[i]);
	} while (!done);
}

void mcg_slab_scan_units(mcg_objcg_units_fn visit, void *arg)
{
	mcg_lock(&mcg_cache_list_lock);
	mcg_list_for_each (pos, &mcg_cache_list) {
		struct mcg_cache *c = mcg_list_entry(pos, struct mcg_cache, link);
		if (c->debug || !arrays_hold_charged(c))
			continue;
		struct mcg_charges r;
		r.n = 0;
		/* Slots are read safely only while the arrays are stopped, and
		 * ids name their objcgs only while those objects are charged: the
		 * visits too (they take no lock). */
		mcg_cache_arrays_stop(c, NULL);
		arrays_gather(c, &r, false); /* beyond MCG_CHARGES_MAX objcgs: a figure off */
		for (unsigned i = 0; i < r.n; i++)
			visit(mcg_objcg_key(mcg_objcg_from_id(r.id[i])), r.units[i], arg);
		mcg_cache_arrays_start(c, NULL);
	}
	mcg_unlock(&mcg_cache_list_lock);
}

void mcg_slab_drain_units(void)
{
	mcg_lock(&mcg_cache_list_lock);
	mcg_list_for_each (pos, &mcg_cache_list)
		cache_drain_charges(mcg_list_entry(pos, struct mcg_cache, link));
	mcg_unlock(&mcg_cache_list_lock);
}

void mcg_slab_free_objcgs(struct mcg_slab *s)
{
	mcg_objcg_id_t *v = mcg_slab_vector(s->objcgs);
	if (!v)
		return;
	mcg_slab_store_objcgs(s, 0);
	mcg_cache_free(vec_caches[vec_class(s)], v);
}

/* ------------------------------------------------------------ the API */

mcg_noinline void *mcg_cache_alloc_current_slow(struct mcg_cache *c, uintptr_t slot)
{
	struct mcg_objcg *x = mcg_current_objcg_[c->objcg_kind];
	if (!x) /* no group entered: the root's (mcg_group_root() initialises) */
		x = mcg_objcg_of(mcg_group_root(), c->objcg_kind);
	return mcg_cache_alloc_objcg_slow(c, x, slot);
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
