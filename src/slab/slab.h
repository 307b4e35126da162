/* SPDX-License-Identifier: MIT */
/*
 * slab/slab.h - the slab layer's internal types (memcg/slab.h is the API).
 *
 * Glossary
 *   cache  - hands out objects of one size (struct mcg_cache).
 *   slot   - the bytes one object occupies in a slab (size, alignment, and
 *            in debug caches a red zone).
 *   slab   - a span of units carved into slots; its descriptor lives in its
 *            chunk's header (struct mcg_slab), so a pointer finds it by
 *            masking.  A slab belongs to one cache and one NUMA node.
 *   node   - per cache per NUMA node: slab lists partial / full / empty.
 *   array  - per cache per CPU: a stack of free objects (percpu/pcpu_stack.h).
 *   inuse  - objects out of a slab: held by users or parked in arrays.
 *
 * Invariants
 *   - A slab is on exactly one of its node's lists: empty (inuse == 0),
 *     full (inuse == nobjs) or partial (otherwise).
 *   - Bit i of a slab's bitmap is set iff object i is out of the slab.
 *   - A slab keeps nothing inside its free objects: refill takes the lowest
 *     clear bits of the bitmap (from word `hint`, below which every word
 *     is full), so neither a free nor a refill touches an object's memory.
 *     Bits past nobjs in the last word are set for good.
 *   - Objects [carved, nobjs) were never handed out (their constructor is
 *     due); the lowest-first order hands them out in index order.
 *   - Debug caches (poison / red zone) have no CPU arrays: every operation
 *     checks its object under the node lock.
 *   - A purged page (slab/purge.c) lies wholly inside free slots: every
 *     object it overlaps is free in the bitmap, until a take hands one of
 *     them out and clears the page's bit first.
 *
 * Locks (docs/design.md has the whole order)
 *   cache list (MCG_RANK_CACHE_LIST) -> a CPU array's lock (MCG_RANK_PCPU)
 *   -> node lock (MCG_RANK_NODE): the slab lists, which list a slab is on
 *   -> slab lock (MCG_RANK_SLAB, a spin lock in the descriptor): the slab's
 *   bitmap, hint, inuse, carved, purged pages -> page allocator (MCG_RANK_PAGE).
 *   Freeing takes only slab locks (one per run of objects of one slab), so
 *   CPUs flushing into different slabs never meet; the node lock is taken
 *   only when a slab must change list (full -> partial, -> empty).  The
 *   freeing thread then drops the slab lock, takes node + slab and puts the
 *   slab where its state says; a `pinned` count keeps the slab from being
 *   released while a thread is between the two.
 */
#ifndef MCG_SLAB_SLAB_H
#define MCG_SLAB_SLAB_H

#include <stdbool.h>
#include <stdint.h>

#include "base/list.h"
#include "base/mm_const.h"
#include "base/lock.h"
#include "percpu/pcpu_stack.h"
#include "memcg/debug.h"
#include "memcg/slab.h"
#include "page/chunk.h"

#define MCG_CACHE_NAME_MAX 32
#define MCG_BATCH_MAX 64
#define MCG_RECIP_SHIFT 44

enum mcg_slab_list { MCG_SLAB_EMPTY = 1, MCG_SLAB_PARTIAL, MCG_SLAB_FULL };

/*
 * Descriptor of a slab: one per unit in the chunk header (head: the first).
 * Line 0 is the same in every unit's descriptor, so the fast
 * paths use the descriptor of the object's own unit (mcg_slab_unit()) and
 * never load head; a unit that holds no slab reads cache NULL, nobjs and
 * start_test 0.
 */
struct mcg_slab {
	/* Line 0: all a free reads (copies of the cache's fields included). */
	struct mcg_slab *head; /* first unit's descriptor; NULL: not a slab */
	struct mcg_cache *cache;
	char *base;                  /* object 0 */
	struct mcg_pcpu_stack *pcpu; /* cache->pcpu */
	uint64_t inv;                /* cache->inv */
	uint32_t shift;              /* cache->shift */
	uint32_t nobjs;
	/* Accounted objects' objcgs (slab/account.c), one atomic word: in
	 * the low 48 bits the vector, one id (mcg_objcg_id_t, 0: none) per
	 * object, entry i written by whoever owns object i (NULL until the
	 * slab's first accounted object); in the high 16 bits the id of the
	 * slab's sole objcg, or 0 (see `sole`).  mcg_slab_vector() and
	 * mcg_slab_sole_bits() take it apart. */
	uintptr_t objcgs;
	/* The object-start test (mcg_slab_index()) without a rotate, one
	 * load: after the multiply by inv, an object start has its low
	 * `shift` bits clear (the low half: 2^shift - 1) and lies below
	 * nobjs << shift (the high half: the limit; 0 in a unit that holds
	 * no slab).  mcg_slab_start_test() builds it. */
	uint64_t start_test;
	/* Line 1: the slow paths'. */
	uint64_t *bitmap;     /* one bit per object (slab lock) */
	uint32_t hint;        /* words [0, hint) of the bitmap are full (slab lock) */
	uint32_t inuse;       /* objects out of the slab (slab lock) */
	struct mcg_list link; /* on a node list (node lock) */
	uint32_t carved;      /* objects ever handed out: [0, carved) (slab lock) */
	uint16_t node;
	uint8_t list; /* enum mcg_slab_list (node lock) */
	uint8_t units;
	uint8_t sole; /* enum mcg_slab_sole (slab lock; atomic reads) */
	/* Purge visits (slab/purge.c): 0 touched since the last, 1 untouched
	 * since, 2 purged and untouched since (slab lock; a take from the slab
	 * or a flush into it clears it). */
	uint8_t cold;
	uint16_t purged;  /* in every unit's descriptor: bit p set = page p of
	                     that unit is purged (the head's slab lock) */
	uint32_t pinned;  /* list fix-ups pending: not releasable (slab lock) */
	mcg_spin_t lock;  /* zero when the descriptor is fresh: unlocked */
	uint16_t npurged; /* pages of the slab purged (slab lock) */
};
_Static_assert(__builtin_offsetof(struct mcg_slab, start_test) == 56, "a free reads line 0 only");
_Static_assert(sizeof(struct mcg_slab) <= MCG_UNIT_META_SIZE, "slab descriptor size");
#define MCG_UNIT_PAGES (MCG_UNIT_SIZE / MCG_PAGE_SIZE)
_Static_assert(MCG_UNIT_PAGES <= 16, "a unit's pages fit its descriptor's purged mask");

/* Byte a poisoned free object holds (MCG_CACHE_POISON). */
#define MCG_POISON_FREE 0x6b

struct mcg_cache_node {
	mcg_lock_t lock;
	struct mcg_list partial, full, empty;
	size_t nr_partial, nr_full, nr_empty;
	/* The partial slab the next purge visit looks at (the walk goes from
	 * the tail toward the head); NULL: start at the tail.  A slab that
	 * leaves the partial list moves it on (slab_set_list()).  Node lock. */
	struct mcg_slab *purge_next;
} mcg_cacheline_aligned;

struct mcg_cache {
	/* Read by every fast-path call. */
	struct mcg_pcpu_stack *pcpu; /* the per-CPU arrays */
	uint32_t slot_size;
	uint32_t flags;
	uint64_t recip; /* ceil(2^MCG_RECIP_SHIFT / slot_size) */
	uint64_t inv;   /* slot_size = odd << shift: odd's inverse mod 2^64 */
	uint32_t shift;
	uint8_t debug;         /* poison or red zone: no CPU arrays */
	uint8_t objcg_kind;    /* enum mcg_objcg_kind of accounted objects */
	uint32_t charge_units; /* MCG_OBJCG_UNITs an accounted object charges */
	/* Slow path. */
	uint32_t cpu_cap; /* array capacity */
	uint32_t batch;   /* objects per refill / flush */
	uint32_t objs_per_slab;
	uint32_t slab_units; /* units per slab, a power of two */
	size_t object_size;  /* as asked */
	size_t align;
	size_t redzone; /* red zone bytes after each object (MCG_CACHE_REDZONE) */
	mcg_ctor_t ctor;
	struct mcg_list link; /* global cache list */
	void **slot_mem;      /* all CPUs' slot arrays, one mapping */
	size_t slot_bytes;    /* bytes mapped at slot_mem */
	char name[MCG_CACHE_NAME_MAX];
	unsigned idle_steps; /* aging steps in a row with no busy array (0..2; relaxed) */
	size_t purged_pages; /* pages of its slabs purged and not handed out since (atomic) */
	unsigned nr_nodes;
	struct mcg_cache_node *nodes; /* nr_nodes entries */
};

/* ---- cache_head.c: heads (the cache, its nodes, its per-CPU headers) ---- */
/** A zeroed head of @size bytes (a multiple of MCG_PCPU_STRIDE, the same for
 *  every cache), aligned to MCG_PCPU_STRIDE; NULL if no memory.  Caller
 *  holds mcg_cache_list_lock. */
void *mcg_cache_head_alloc(size_t size);
/** Give back a head of mcg_cache_head_alloc() (mcg_cache_list_lock held). */
void mcg_cache_head_free(void *head);

/* ---- lookup ---- */

/** mcg_slab_of - the slab holding @p, or NULL if @p is in no slab of memcg. */
static inline struct mcg_slab *mcg_slab_of(const void *p)
{
	/* Every caller passes a pointer of memcg's chunks (kmalloc's checks
	 * mcg_chunk_of() first): no test can take this. */
	if (unlikely(!mcg_chunk_owned(p))) /* GCOVR_EXCL_LINE */
		return NULL;               /* GCOVR_EXCL_LINE */
	struct mcg_slab *d = (struct mcg_slab *)mcg_chunk_slab_desc(p);
	return __atomic_load_n(&d->head, __ATOMIC_ACQUIRE);
}

/**
 * mcg_slab_unit - the descriptor of the unit holding @p, in a chunk memcg
 * owns: its slab's line-0 fields (cache NULL if the unit holds no slab).
 * Good for the fast paths' reads only; the slab's own state is in head.
 */
static inline struct mcg_slab *mcg_slab_unit(const void *p)
{
	return (struct mcg_slab *)mcg_chunk_slab_desc(p);
}

/*
 * A slab of an MCG_CACHE_ACCOUNT cache (all of whose objects are accounted)
 * whose accounted objects out of it - handed out, or freed into a CPU
 * array still charged - are all charged to one objcg has that objcg's id
 * in the high bits of its `objcgs` word, in every unit's descriptor: the
 * free tags the object with it and need not read the vector (slab/account.c).
 */
enum mcg_slab_sole {
	MCG_SOLE_UNSET, /* no accounted object out since the slab was last empty */
	MCG_SOLE_ONE,   /* all of them charged to the objcg in the word */
	MCG_SOLE_MIXED, /* charged to two objcgs or more, until the slab is empty */
};

/** The vector in a slab's `objcgs` word (NULL: none yet). */
static inline uint16_t *mcg_slab_vector(uintptr_t w)
{
	return (uint16_t *)(w & (((uintptr_t)1 << 48) - 1));
}

/** The sole objcg's id in a slab's `objcgs` word, where a CPU array slot
 *  carries an id (MCG_SLOT_ID_SHIFT); 0: none (read the vector). */
static inline uintptr_t mcg_slab_sole_bits(uintptr_t w) { return w & ~(((uintptr_t)1 << 48) - 1); }

/** mcg_slab_set_objcgs - attach vector @v to slab @s, in every unit's
 *  descriptor that has none yet. */
void mcg_slab_set_objcgs(struct mcg_slab *s, uint16_t *v);

/** mcg_slab_store_objcgs - store @w in the `objcgs` word of every unit of
 *  @s: a sole objcg's bits changed (slab lock held), or the vector goes. */
void mcg_slab_store_objcgs(struct mcg_slab *s, uintptr_t w);

/** mcg_slab_set_sole - the sole objcg's @bits (or 0) beside @s's vector.  Slab lock held. */
static inline void mcg_slab_set_sole(struct mcg_slab *s, uintptr_t bits)
{
	uintptr_t v = (uintptr_t)mcg_slab_vector(__atomic_load_n(&s->objcgs, __ATOMIC_RELAXED));
	mcg_slab_store_objcgs(s, v | bits);
}

/*
 * The object index of a pointer and the test that it is an object start.
 * With slot_size = odd << shift and inv = odd^-1 mod 2^64, the product m =
 * (p - base) * inv rotated right by shift is (p - base) / slot_size when
 * slot_size divides it; otherwise it is at least 2^(64 - shift) / odd (a
 * low bit of the offset rotated up, or the divisibility test of Granlund
 * and Montgomery failing), far above any slab's object count; an offset
 * below object 0 (negative) falls there too.  Taken apart, with no rotate
 * by a variable count (two or three micro-ops, one of them for the flags):
 * the rotated product is below nobjs exactly when m's low shift bits are
 * clear and m is below nobjs << shift - two tests of one word in line 0
 * (start_test).  The index, m >> shift, only for a caller that uses it.
 */
static inline uint64_t mcg_slab_product(const struct mcg_slab *s, const void *p)
{
	return (uint64_t)((const char *)p - s->base) * s->inv;
}

/** Is @m (mcg_slab_product()) that of an object start? */
static inline bool mcg_slab_product_is_start(const struct mcg_slab *s, uint64_t m)
{
	uint64_t t = s->start_test;
	return likely(!((uint32_t)m & (uint32_t)t)) && likely(m < (t >> 32));
}

/** The start_test word of a slab of @nobjs objects of odd << @shift bytes. */
static inline uint64_t mcg_slab_start_test(uint32_t nobjs, uint32_t shift)
{
	return (uint64_t)nobjs << shift << 32 | ((1u << shift) - 1);
}

/** The object index of a start's product @m. */
static inline long mcg_slab_product_index(const struct mcg_slab *s, uint64_t m)
{
	return (long)(m >> s->shift);
}

/** mcg_slab_index - index of the object at @p, or -1 if @p is not an object start. */
static inline long mcg_slab_index(const struct mcg_slab *s, const void *p)
{
	uint64_t m = mcg_slab_product(s, p);
	if (unlikely(!mcg_slab_product_is_start(s, m)))
		return -1;
	return mcg_slab_product_index(s, m);
}

/* ---- slab.c: slabs and node lists ---- */
/** Take up to @n objects from @node's slabs (growing as needed); return the count.
 *  Bit i of *@fresh is set if objs[i] was never used (its constructor is due). */
unsigned mcg_node_take(struct mcg_cache *c, unsigned node, void **objs, unsigned n,
                       uint64_t *fresh);
/** Return @n objects to their slabs (any nodes), tagged or not; the charges
 *  of tagged ones leave with them (struct mcg_charges).  Double frees
 *  are reported.  @objs is scratch: it may be changed. */
void mcg_node_put(struct mcg_cache *c, void **objs, unsigned n);
/* mcg_node_put() that leaves the charges in @ch, for the caller to give
 * once it holds no lock (a CPU array's, say), and stops where one more
 * objcg would not fit in @ch.  Return: how many of @objs went back. */
struct mcg_charges;
unsigned mcg_node_put_gather(struct mcg_cache *c, void **objs, unsigned n, struct mcg_charges *ch);
/** Objects out of @node's slabs (held or in CPU arrays), summed over its
 *  slabs (node lock held): exact at rest, a snapshot while frees run. */
size_t mcg_node_objects_out(struct mcg_cache *c, unsigned node);
/** Release the node's empty slabs beyond @keep (at most @max); return bytes. */
size_t mcg_node_release_empty(struct mcg_cache *c, unsigned node, size_t keep, size_t max);
/** Run the constructor on the fresh objects of a batch. */
void mcg_construct_fresh(struct mcg_cache *c, void **objs, unsigned n, uint64_t fresh);

/* ---- purge.c: free pages inside partly used slabs back to the OS ---- */
#define MCG_PURGE_VISITS 32  /* partial slabs of a node an aging step looks at */
#define MCG_PURGE_PAGES 1024 /* pages of a node an aging step purges, at most */
/**
 * mcg_node_purge - one purge walk over @node's partial slabs: a slab
 * visited untouched since the last visit (or any, with @force) has the
 * pages that lie wholly inside its free slots given back to the OS.  At
 * most @max_visits slabs and about @max_pages pages per call.  No lock
 * held.  Return: bytes purged.
 */
size_t mcg_node_purge(struct mcg_cache *c, unsigned node, unsigned max_visits, size_t max_pages,
                      bool force);
/**
 * mcg_slab_unpurge - the @n objects @objs just taken out of @s (slab lock
 * held, s->npurged > 0): the purged pages they overlap are purged no more
 * (they fault back in as zero; a poisoned cache's are poisoned again).
 */
void mcg_slab_unpurge(struct mcg_cache *c, struct mcg_slab *s, void *const *objs, unsigned n);
/** mcg_slab_purge_forget - @s (off every list, no lock) goes back to the
 *  page allocator: its purged pages leave the cache's count. */
void mcg_slab_purge_forget(struct mcg_cache *c, struct mcg_slab *s);

/* ---- drain.c: remote draining of CPU arrays, aging ---- */
/**
 * mcg_slab_age_tick - from the slow paths (refill, flush), with no lock
 * held: now and then, when no reaper thread runs, one bounded aging step if
 * a period (MCG_REAP_MS) has passed since the last.
 */
void mcg_slab_age_tick(void);
/**
 * mcg_slab_tick_hook_set - have @fn called (no lock held) at each look at the
 * clock mcg_slab_age_tick() makes, in whichever thread makes it, whether or
 * not a reaper runs; NULL: no more calls (one may be under way).  The malloc
 * shim's lazy start of its threads (preload/threads.c).
 */
void mcg_slab_tick_hook_set(void (*fn)(void));
/** Flush every CPU array of @c to the slabs. */
void mcg_cache_drain_all(struct mcg_cache *c);

/* The reaper's part of the fork handlers (drain.c): prepare takes its lock
 * first; the parent releases it; the child releases it and has no reaper. */
void mcg_reaper_fork_prepare(void);
void mcg_reaper_fork_parent(void);
void mcg_reaper_fork_child(void);
/** Lock and stop @c's CPU arrays marked in @which (all when NULL), then one
 *  fence: they are the caller's until mcg_cache_arrays_start(c, @which). */
void mcg_cache_arrays_stop(struct mcg_cache *c, const uint8_t *which);
void mcg_cache_arrays_start(struct mcg_cache *c, const uint8_t *which);

/* ---- report.c: reports ---- */
/** Report @kind at @addr of @c (NULL: no cache) to the report handler (memcg/debug.h). */
void mcg_report(mcg_report_kind_t kind, const struct mcg_cache *c, const void *addr);

/* ---- slab.c: debug caches (poison, red zone), which bypass the CPU arrays ---- */
/** Allocate from debug cache @c: straight from its slabs, poison and red zone checked. */
void *mcg_debug_alloc(struct mcg_cache *c);
/** Free @obj of debug cache @c straight to its slab, poisoned. */
void mcg_debug_free(struct mcg_cache *c, void *obj);

/* ---- account.c: accounted objects ---- */
struct mcg_objcg;
/**
 * A CPU array slot: an object's address, and for an object whose slab has
 * an objcg vector (so it may still be charged, slab/account.h) the tag in
 * bit 0 and, in the bits above the address space, the id its vector entry
 * held when it was pushed (0: not charged).  While the object is in the
 * array its entry keeps that id (a drain rewrites both), so an accounted
 * allocation learns whose charge a popped object carries from the slot
 * alone, and a flush takes the charge without reading the entry.
 * Untagged slots are plain addresses (memcg's are below 2^47: page/chunk.h).
 */
#define MCG_SLOT_CHARGED ((uintptr_t)1)
#define MCG_SLOT_ID_SHIFT 48
_Static_assert(MCG_SLOT_ID_SHIFT == 48, "a slab's sole bits are a slot's id bits");
/** The slot of a tagged object @obj whose entry holds @id. */
static inline uintptr_t mcg_slot_tagged(void *obj, uint16_t id)
{
	/* + for |: the bits are apart, and one lea adds two of them */
	return (uintptr_t)obj + MCG_SLOT_CHARGED + ((uintptr_t)id << MCG_SLOT_ID_SHIFT);
}
/** The object of array slot @slot (tagged or not). */
static inline void *mcg_slot_obj(uintptr_t slot)
{
	return (void *)(slot & ((((uintptr_t)1) << MCG_SLOT_ID_SHIFT) - 1 - MCG_SLOT_CHARGED));
}
/** The objcg id array slot @slot carries (0: none). */
static inline uint16_t mcg_slot_id(uintptr_t slot) { return (uint16_t)(slot >> MCG_SLOT_ID_SHIFT); }
/** The rest of a plain allocation that popped a tagged @slot: its charge goes. */
__attribute__((returns_nonnull)) void *mcg_cache_alloc_uncharge(struct mcg_cache *c,
                                                                uintptr_t slot);
/** Free object @idx of @s (it has a vector) off the fast path: inside a
 *  shrinker uncharge it now; else (another thread's shrinker running, a
 *  TSan build) push it tagged, as the fast path does. */
void mcg_cache_free_charged_slow(struct mcg_cache *c, struct mcg_slab *s, void *obj, long idx);
/** The accounted free's push of tagged @slot (an object of @s) failed with
 *  @why: a shrinker running (the reclaim gate), else as mcg_cache_free_slow(). */
void mcg_cache_free_tagged_slow(struct mcg_cache *c, struct mcg_slab *s, void *slot, int why);
/**
 * Charges taken from objects' vector entries under a lock, per objcg, to
 * be given back after it: one give per objcg.  mcg_node_put() gathers
 * those of the objects it returns to their slabs (a slab's run stops early
 * if one more objcg would not fit); the drains and the stat scan those of
 * the freed objects in stopped CPU arrays (slab/account.c).  Only `n` needs
 * setting to start.
 */
#define MCG_CHARGES_MAX 64
#define MCG_CHARGES_MAP                                                                            \
	16 /* a direct-mapped index by id: a flush of many objcgs' objects                         \
	      finds each one's entry in one probe */
struct mcg_charges {
	unsigned n;
	uint16_t id[MCG_CHARGES_MAX];    /* objcg ids (group/objcg.h) */
	uint64_t units[MCG_CHARGES_MAX]; /* MCG_OBJCG_UNITs */
	uint8_t map[MCG_CHARGES_MAP];    /* id % MCG_CHARGES_MAP -> its entry + 1, a hint
	                                    (checked against id[], valid below n only) */
};

/* mcg_charges_slot()'s miss: search, else add an entry with no units. */
int mcg_charges_slot_slow(struct mcg_charges *ch, uint16_t id);

/** The entry of objcg @id in @ch (added with no units if missing); -1 if @ch has no room. */
static mcg_always_inline int mcg_charges_slot(struct mcg_charges *ch, uint16_t id)
{
	unsigned k = ch->map[id % MCG_CHARGES_MAP];
	/* gcov counts this test's branches once per inlined copy (four in
	 * slab.c, one in account.c), each seeing only its caller's cases;
	 * account.c's copy takes every outcome. */
	if (likely(k && k <= ch->n && ch->id[k - 1] == id)) /* GCOVR_EXCL_BR_LINE */
		return (int)k - 1;
	return mcg_charges_slot_slow(ch, id);
}

/** Add @units of objcg @id to @ch; false (nothing added) if it has no room. */
static inline bool mcg_charges_add(struct mcg_charges *ch, uint16_t id, uint64_t units)
{
	int k = mcg_charges_slot(ch, id);
	if (k < 0)
		return false;
	ch->units[k] += units;
	return true;
}

/** Give the charges in @ch back to their objcgs (no lock held); @ch is emptied. */
void mcg_charges_give(struct mcg_charges *ch);
/** Create the caches of objcg vectors (with kmalloc's).  0 or -ENOMEM. */
int mcg_slab_vectors_init(void);
/** Free slab @s's objcg vector (the slab is being released). */
void mcg_slab_free_objcgs(struct mcg_slab *s);
/** Give back the charges of the freed objects every cache's CPU arrays hold
 *  (group/objcg.c calls it in drains). */
void mcg_slab_drain_units(void);
/** Visit (objcg key, units) for the charged objects in the CPU arrays (group/objcg.c's stats). */
void mcg_slab_scan_units(void (*visit)(uint64_t key, uint64_t units, void *arg), void *arg);

/* ---- cache.c ---- */
/** Slow paths of the fast path (cache_fast.h), and its locked-mode versions. */
void *mcg_cache_alloc_slow(struct mcg_cache *c);
/** Refill this CPU's array of @c from the node's slabs; return one object
 *  more (untagged), or NULL with errno ENOMEM. */
void *mcg_cache_refill(struct mcg_cache *c);
/** mcg_null_einval - NULL with errno EINVAL (out of line: callers need no frame). */
void *mcg_null_einval(void);
void *mcg_cache_alloc_cpulock(struct mcg_cache *c);
/** Locked mode's pop: an object of this CPU's array of @c (its charge
 *  given back if its slot was tagged), or NULL if the array is empty and
 *  the caller refills (mcg_cache_alloc_cpulock(), kmalloc's slow path). */
static inline void *mcg_cache_pop_cpulock(struct mcg_cache *c)
{
	uintptr_t slot = (uintptr_t)mcg_cpulock_stack_pop(c->pcpu);
	if (slot & MCG_SLOT_CHARGED)
		return mcg_cache_alloc_uncharge(c, slot);
	return (void *)slot;
}
void mcg_cache_free_cpulock(struct mcg_cache *c, struct mcg_slab *s, void *obj);
void mcg_cache_free_slow(struct mcg_cache *c, void *obj, struct mcg_slab *s, int why);
/** The global cache list: lock, and iteration under it. */
extern mcg_lock_t mcg_cache_list_lock;
extern struct mcg_list mcg_cache_list;
/* ---- slabinfo.c ---- */
/** One cache's statistics with its name copied (valid after the cache is gone). */
struct mcg_slabinfo_row {
	char name[MCG_CACHE_NAME_MAX];
	mcg_cache_stats_t st; /* st.name is not set */
};
/**
 * mcg_slabinfo_collect - the statistics of up to @max caches, in slabinfo's
 * order, into @rows.  Takes the cache list lock (and each cache's node
 * locks briefly), allocates nothing.  Return: how many caches exist (more
 * than @max: call again with room for them).
 */
size_t mcg_slabinfo_collect(struct mcg_slabinfo_row *rows, size_t max);
/** The two header lines of slabinfo (version 2.1). */
extern const char mcg_slabinfo_header[];
/** mcg_slabinfo_format - one cache's slabinfo line, as snprintf(@buf, @len, ...). */
int mcg_slabinfo_format(char *buf, size_t len, const char *name, const mcg_cache_stats_t *st);
/** mcg_slab_init - initialise the slab layer (idempotent).  Return 0 or -errno. */
int mcg_slab_init(void);

/**
 * mcg_slab_set_fork_hooks - the locks of the layer above (the page
 * cache's), taken by @lock last in the fork handlers' prepare, after every
 * slab, page and group lock (their ranks are above all of those), and
 * given back by @unlock first in the parent and the child.  One pair: a
 * later call replaces it.
 */
void mcg_slab_set_fork_hooks(void (*lock)(void), void (*unlock)(void));
/** Create a cache without argument checks beyond the basics (kmalloc's). */
struct mcg_cache *mcg_cache_create_internal(const char *name, size_t size, size_t align,
                                            unsigned flags, mcg_ctor_t ctor);

#endif /* MCG_SLAB_SLAB_H */
