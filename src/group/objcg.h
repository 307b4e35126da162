/* SPDX-License-Identifier: MIT */
/*
 * group/objcg.h - object cgroups: what an accounted object records instead
 * of its group (the kernel's obj_cgroup, 2020).
 *
 * An objcg is a small refcounted indirection to a group.  Each group has one
 * per kind of memory (enum mcg_objcg_kind); an accounted object records its
 * objcg's id in its slab's vector (slab/account.c).  Removing a group moves its
 * objcgs, and those it had inherited from removed children, to its parent
 * (reparenting): one pointer per objcg changes, no object is touched, and the
 * group itself is freed as soon as its last reference goes.  Freeing an
 * object of a removed group is the same code as any accounted free.  The
 * moved objcgs are dead: they give back their stock words and leftover at
 * the removal (mcg_objcg_offline()), keep no leftover beyond a page from
 * then on, and hold stock words only as any objcg does (bounded by the
 * stock's size, evicted in turn), so each is freed once its objects are
 * and its words are evicted.
 *
 * Charges are in units of MCG_OBJCG_UNIT bytes.  A freed object keeps its
 * charge while it sits in a cache's CPU array (slab/account.h); charges
 * not in any object are held ahead of use in a per-CPU byte stock, then in the objcg's own
 * `leftover` (1-2 pages kept, for objcgs without a word on the CPU).  The byte stock is
 * direct-mapped: MCG_OBJCG_STOCK_SLOTS words per CPU (percpu/pcpu_word.h, in
 * MCG_OBJCG_STOCK_BANKS banks), each objcg given one slot at creation, in
 * turn, so that as many objcgs as there are slots (tenants taking turns on
 * a CPU) each keep their own word; a word holds an objcg and the units
 * charged for it but not in use, at most MCG_OBJCG_STOCK_UNITS
 * (mcg_objcg_consume/refill: one rseq section each, no scan).  The slow paths here move whole pages
 * between an objcg and its group's page counters, through the group's page
 * stock (stock.c).
 *
 * Invariant, per objcg (exact whenever no slow path holds units in flight):
 *     charged x MCG_OBJCG_UNITS_PER_PAGE = units in live objects
 *                   + units in stock words + units of freed objects in
 *                     CPU arrays + leftover
 * so memory.stat derives each kind's bytes in use without any counting on
 * the fast paths (mcg_objcg_stat()).
 *
 * Lifetime: refcnt counts the owning group's pointer (dropped when that
 * group is freed), each stock word naming the objcg, and one while it holds
 * charges (charged or leftover nonzero).  A live object's units are part of
 * `charged`, so live objects keep their objcg.  At zero the objcg leaves its
 * group's list and is freed.  An objcg never holds a reference to its group:
 * it always points to an online group or to one being removed, whose
 * reparenting (under the objcg's lock) happens before the group can go.
 *
 * Locks: `lock` (MCG_RANK_OBJCG, a spin lock) guards group, charged and
 * leftover; the tree lock guards the groups' objcg lists and reparenting
 * (tree lock -> objcg lock; objcg lock -> a CPU's charge-stock word, a
 * leaf, when pages go back into it).  The fast paths take no lock.
 */
#ifndef MCG_GROUP_OBJCG_H
#define MCG_GROUP_OBJCG_H

#include "base/list.h"
#include "base/lock.h"
#include "percpu/pcpu_word.h"
#include "memcg/group.h"

/** Bytes per charge unit: slot sizes are multiples of it, and an objcg id is one. */
#define MCG_OBJCG_UNIT 2u
#define MCG_OBJCG_UNITS_PER_PAGE (MCG_GROUP_PAGE_SIZE / MCG_OBJCG_UNIT)
/**
 * Pages one stock word holds at most, and in units: 64 (the kernel's
 * MEMCG_CHARGE_BATCH), so that the flushes of 64 objects give their charges
 * back into the word - of objects of 1 KiB (16 pages a flush) three in a
 * row, of 256 B fifteen - and only the next one trims it (stock_put(),
 * objcg.c: the slow path, the objcg's lock, shared by every CPU freeing
 * into the objcg).  A word counts to 0xfffff and a refill adds at most
 * this much to at most this much, which must not carry out of the count
 * (percpu/pcpu_word.h).
 */
#define MCG_OBJCG_STOCK_PAGES 64
#define MCG_OBJCG_STOCK_UNITS (MCG_OBJCG_STOCK_PAGES * MCG_OBJCG_UNITS_PER_PAGE)
/** Banks of stock words per CPU, and the slots (words) they make. */
#define MCG_OBJCG_STOCK_BANKS 8
#define MCG_OBJCG_STOCK_SLOTS (MCG_OBJCG_STOCK_BANKS * MCG_PCPU_WORDS)

/** What an objcg's charges are, for memory.stat. */
enum mcg_objcg_kind {
	MCG_OBJCG_SLAB_UNRECLAIMABLE, /* accounted objects of ordinary caches */
	MCG_OBJCG_SLAB_RECLAIMABLE,   /* of MCG_CACHE_RECLAIMABLE caches */
	MCG_OBJCG_ANON,               /* the preload shim's heap */
	MCG_NR_OBJCG_KINDS
};

/**
 * An objcg's id: what a slab's vector records for an accounted object (2
 * bytes, a quarter of a pointer; the kernel's memcg ids are 16-bit too), and
 * what a CPU array slot carries for a freed object still charged (slab.h).
 * 0 names no objcg; ids are reused once their objcg is freed, which cannot
 * happen while any entry names it (an entry names a charged object, and
 * the charge holds the objcg).
 */
typedef uint16_t mcg_objcg_id_t;
_Static_assert(sizeof(mcg_objcg_id_t) == MCG_OBJCG_UNIT, "a vector entry is one unit");
_Static_assert(2 * MCG_OBJCG_STOCK_UNITS <= MCG_PCPU_WORD_COUNT_MAX,
               "a full word plus a full refill fits the count");
/** How many objcgs may exist at once, dying ones included (3 per group:
 *  21 845 groups); mcg_group_create() fails with -ENOSPC beyond. */
#define MCG_OBJCG_IDS (1u << 16)
/** Where slot_bits puts the id: above the address space (slab/slab.h). */
#define MCG_OBJCG_ID_SHIFT 48
/** The slot_bits of the objcg with id @id: the id above the address, bit 0 set. */
#define MCG_OBJCG_SLOT_BITS(id) (((uint64_t)(id) << MCG_OBJCG_ID_SHIFT) | 1)

struct mcg_objcg {
	mcg_spin_t lock;
	uint32_t kind;           /* enum mcg_objcg_kind */
	mcg_objcg_id_t id;       /* set once (its slot in mcg_objcg_table) */
	uint64_t slot_bits;      /* id << MCG_OBJCG_ID_SHIFT | 1: how a CPU array slot
	                            tags an object charged to it (slab/slab.h) */
	struct mcg_group *group; /* where charges go; moves up on removal (lock) */
	long refcnt;             /* atomic */
	long charged;            /* pages charged to group's counters (lock) */
	long leftover;           /* units charged, in no word, not in use: < 2 pages (lock) */
	int dead;                /* its group was removed: no leftover kept beyond a page
	                            (set once; lock) */
	struct mcg_list link;    /* on group->objcgs (tree lock) */
	struct mcg_pcpu_word *stock_bank; /* the bank of its stock slot (set once) */
	uint32_t stock_word;              /* its word in that bank */
};

/** Id -> objcg (objcg.c): MCG_OBJCG_IDS entries reserved, touched as used. */
extern mcg_hidden struct mcg_objcg **mcg_objcg_table;

/** mcg_objcg_from_id - the objcg @id names (0: NULL).  Valid while a charge holds it. */
static inline struct mcg_objcg *mcg_objcg_from_id(mcg_objcg_id_t id)
{
	return __atomic_load_n(&mcg_objcg_table[id], __ATOMIC_RELAXED);
}

/** The per-CPU byte stocks (objcg.c), keyed by objcg address: the first bank. */
extern mcg_hidden struct mcg_pcpu_word *mcg_objcg_stocks;

static inline uint64_t mcg_objcg_key(const struct mcg_objcg *x) { return mcg_pcpu_word_key_of(x); }

/**
 * mcg_objcg_consume - take @units from this CPU's stock for @x: the fast
 * path of charging.  Return MCG_PCPU_OK, or MCG_PCPU_FAIL (then
 * mcg_objcg_charge()).
 */
static mcg_always_inline int mcg_objcg_consume(struct mcg_objcg *x, uint64_t units)
{
	if (unlikely(units > MCG_OBJCG_STOCK_UNITS)) /* more than a word ever holds */
		return MCG_PCPU_FAIL;
	return mcg_pcpu_word_consume_at(x->stock_bank, x->stock_word, mcg_objcg_key(x), units);
}

/**
 * mcg_objcg_refill - give @units back to this CPU's stock for @x: the fast
 * path of uncharging.  Return MCG_PCPU_OK, or MCG_PCPU_FAIL (then
 * mcg_objcg_uncharge()).
 */
static mcg_always_inline int mcg_objcg_refill(struct mcg_objcg *x, uint64_t units)
{
	if (unlikely(units > MCG_OBJCG_STOCK_UNITS)) /* the word's limit, and the shift's */
		return MCG_PCPU_FAIL;
	return mcg_pcpu_word_refill_at(x->stock_bank, x->stock_word, mcg_objcg_key(x), units,
	                               MCG_OBJCG_STOCK_UNITS);
}

/**
 * mcg_objcg_consume_rseq / mcg_objcg_refill_rseq - mcg_objcg_consume() and
 * mcg_objcg_refill() without the mode test, for a caller that knows rseq
 * sections are in use (it has just popped an object in one; in locked mode
 * no pop succeeds).  Same returns.
 */
static mcg_always_inline int mcg_objcg_consume_rseq(struct mcg_objcg *x, uint64_t units)
{
	if (unlikely(units > MCG_OBJCG_STOCK_UNITS))
		return MCG_PCPU_FAIL;
	return mcg_rseq_word_consume_at(x->stock_bank, x->stock_word, mcg_objcg_key(x), units);
}

static mcg_always_inline int mcg_objcg_refill_rseq(struct mcg_objcg *x, uint64_t units)
{
	/* Its one caller (the retag) has consumed the same units first, which
	 * fails above the limit: this test never succeeds there. */
	if (unlikely(units > MCG_OBJCG_STOCK_UNITS)) /* GCOVR_EXCL_BR_LINE */
		return MCG_PCPU_FAIL;                /* GCOVR_EXCL_LINE */
	return mcg_rseq_word_refill_at(x->stock_bank, x->stock_word, mcg_objcg_key(x), units,
	                               MCG_OBJCG_STOCK_UNITS);
}

/**
 * mcg_objcg_charge - the slow path of charging @units to @x: pages from its
 * group (reclaim, OOM as mcg_charge(); @flags are MCG_CHARGE_*), the surplus
 * into this CPU's stock.  Return 0 or -ENOMEM.
 */
int mcg_objcg_charge(struct mcg_objcg *x, uint64_t units, unsigned flags);

/** mcg_objcg_stocked_here - units this CPU's byte stock holds for @x (a racy hint). */
uint64_t mcg_objcg_stocked_here(const struct mcg_objcg *x);

/**
 * mcg_objcg_units_return - give @units (not in use) back to @x's group at
 * once, whole pages, the rest kept as leftover (drains).  @x may be freed.
 */
void mcg_objcg_units_return(struct mcg_objcg *x, uint64_t units);

/** A visitor of (objcg key, units) pairs; see mcg_objcg_set_array_hooks(). */
typedef void (*mcg_objcg_units_fn)(uint64_t key, uint64_t units, void *arg);

/**
 * mcg_objcg_set_array_hooks - install the slab layer's hooks for the charges
 * of freed objects its CPU arrays hold (slab/account.c): @drain returns
 * them all (mcg_group_drain_stocks() calls it); @scan passes each (key,
 * units) held to its visitor (memory.stat subtracts them from the objects'
 * bytes), which runs with the arrays stopped: it may take no lock and
 * allocate nothing.
 * Both take the cache list lock: call them with no lock held.
 */
void mcg_objcg_set_array_hooks(void (*drain)(void),
                               void (*scan)(mcg_objcg_units_fn visit, void *arg));

/** mcg_objcg_uncharge - the slow path of giving @units back to @x. */
void mcg_objcg_uncharge(struct mcg_objcg *x, uint64_t units);

/**
 * mcg_objcg_charge_pages / mcg_objcg_uncharge_pages - whole pages, not
 * through the byte stock (blocks mapped directly).  0 or -ENOMEM.
 */
int mcg_objcg_charge_pages(struct mcg_objcg *x, unsigned long nr_pages, unsigned flags);
void mcg_objcg_uncharge_pages(struct mcg_objcg *x, unsigned long nr_pages);

/** mcg_objcg_group_get - @x's group now, with a reference (mcg_group_put()). */
mcg_group_t *mcg_objcg_group_get(struct mcg_objcg *x);

/* ---- for group.c and text.c ---- */

/** mcg_objcg_create_all - @g's objcgs, one per kind, on its list.  0 or -ENOMEM. */
int mcg_objcg_create_all(mcg_group_t *g);
/** mcg_objcg_put_all - drop @g's pointers to its own objcgs (it is being freed). */
void mcg_objcg_put_all(mcg_group_t *g);
/** mcg_objcg_reparent_locked - move every objcg of @g to its parent and mark
 *  them dead (tree lock held). */
void mcg_objcg_reparent_locked(mcg_group_t *g);
/**
 * mcg_objcg_offline - after @g's removal (no lock held): take its objcgs'
 * units out of every CPU's stock and return their leftover, so nothing
 * stays charged for a removed group beyond its objects (freed ones still in
 * CPU arrays included) and a sub-page remainder.
 */
void mcg_objcg_offline(mcg_group_t *g);
/** mcg_objcg_drain_stocks - return every CPU's stocked units (exact at rest). */
void mcg_objcg_drain_stocks(void);
/** mcg_objcg_init - reserve the id table, allocate the per-CPU byte stocks (mcg_group_init()). */
void mcg_objcg_init(void);

/** What mcg_objcg_stat() reports for a subtree, in bytes. */
struct mcg_objcg_stat {
	int64_t charged[MCG_NR_OBJCG_KINDS]; /* charged through objcgs of each kind */
	int64_t used[MCG_NR_OBJCG_KINDS];    /* in live objects */
};

/**
 * mcg_objcg_stat - sum over the objcgs of @g's subtree: exact at rest,
 * racy while running.  Takes the cache list lock (through the scan hook),
 * then the tree lock: call it with no lock held.  It scans the CPU arrays
 * for the charges of freed objects (stopping them, a membarrier per cache)
 * unless this thread holds a scan (mcg_objcg_stat_hold()).
 */
void mcg_objcg_stat(mcg_group_t *g, struct mcg_objcg_stat *st);

/** A scan of the CPU arrays: the (objcg key, units) pairs they hold charged. */
#define MCG_OBJCG_HELD_MAX 256
struct mcg_objcg_held {
	size_t n;
	uint64_t key[MCG_OBJCG_HELD_MAX], units[MCG_OBJCG_HELD_MAX];
};

/**
 * mcg_objcg_stat_hold - scan the CPU arrays once, into @h, and let this
 * thread's mcg_objcg_stat() calls (memory.stat reads) use that scan until
 * mcg_objcg_stat_release(): a snapshot of many groups' memory.stat stops
 * the arrays once, not once per group (iface/snapshot.c).  In between the
 * thread must allocate nothing (an allocation may move a charge the scan
 * saw in an array into a stock, and it would count twice).  Not nested.
 */
void mcg_objcg_stat_hold(struct mcg_objcg_held *h);

/** mcg_objcg_stat_release - back to a scan per mcg_objcg_stat().  Pair of mcg_objcg_stat_hold(). */
void mcg_objcg_stat_release(void);

#endif /* MCG_GROUP_OBJCG_H */
