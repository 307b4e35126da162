/* SPDX-License-Identifier: MIT */
/*
 * group/objcg.c - object cgroups: their life, reparenting, the slow paths of
 * the per-CPU byte stock, and the statistics derived from them.
 *
 * The fast paths are in objcg.h (one rseq section each).  Here, in order:
 * moving pages between an objcg and its group (the only code that reads
 * objcg->group), the stock's slow paths, draining, life and reparenting,
 * statistics.  objcg.h states the invariant and the lifetime rules.
 *
 * Reparenting and the page counters.  An objcg's pages were charged to the
 * group it pointed to then, and to every ancestor.  When it moves up, its
 * pages are cancelled from the old group's own level (the ancestors keep
 * them), so every counter stays exact.  A slow path that read the old group
 * and charged or uncharged it just before the move is fixed up under the
 * objcg's lock: a charge that lands after the move cancels itself from the
 * levels it no longer belongs to; an uncharge already left `charged`, so the
 * move did not cancel it.
 */
#include "base/mm_const.h"
#include "group/objcg.h"

#include <errno.h>
#include <string.h>

#include "base/fault.h"
#include "base/log.h"
#include "group/group.h"
#include "memcg/kmalloc.h"
#include "os/os.h"

#define UNITS_PER_PAGE MCG_OBJCG_UNITS_PER_PAGE

mcg_hidden struct mcg_pcpu_word *mcg_objcg_stocks;
static unsigned nr_cpus;

/* ------------------------------------------------------------ ids */

/*
 * The id table: a reservation of MCG_OBJCG_IDS pointers, so a lookup is
 * one load.  Ids are handed out from 1 up; a freed id goes on a free list
 * threaded through the table (its entry holds the next free id, shifted
 * and tagged with bit 0: never read as an objcg, as no entry names a
 * freed id).  Tree lock held for both.
 */
mcg_hidden struct mcg_objcg **mcg_objcg_table;
static uint32_t ids_next = 1; /* up to MCG_OBJCG_IDS: wider than an id */
static mcg_objcg_id_t ids_free;

static mcg_objcg_id_t id_alloc_locked(struct mcg_objcg *x)
{
	mcg_objcg_id_t id = ids_free;
	if (id)
		ids_free = (mcg_objcg_id_t)((uintptr_t)mcg_objcg_table[id] >> 1);
	else if (ids_next < MCG_OBJCG_IDS)
		id = (mcg_objcg_id_t)ids_next++;
	else
		return 0;
	__atomic_store_n(&mcg_objcg_table[id], x, __ATOMIC_RELEASE);
	return id;
}

static void id_free_locked(mcg_objcg_id_t id)
{
	__atomic_store_n(&mcg_objcg_table[id], (struct mcg_objcg *)(((uintptr_t)ids_free << 1) | 1),
	                 __ATOMIC_RELAXED);
	ids_free = id;
}

/* ------------------------------------------------------------ references */

static void objcg_get(struct mcg_objcg *x) { __atomic_fetch_add(&x->refcnt, 1, __ATOMIC_RELAXED); }

static void objcg_put(struct mcg_objcg *x)
{
	long now = __atomic_sub_fetch(&x->refcnt, 1, __ATOMIC_ACQ_REL);
	MCG_BUG_ON(now < 0);
	if (now)
		return;
	MCG_BUG_ON(x->charged || x->leftover);
	mcg_lock(&mcg_group_tree_lock);
	mcg_list_del(&x->link);
	id_free_locked(x->id);
	mcg_unlock(&mcg_group_tree_lock);
	mcg_free(x);
}

/* Does @x hold charges (and so the reference for them)?  Lock held. */
static bool holds_charges(const struct mcg_objcg *x) { return x->charged || x->leftover; }

/*
 * Lock @x and take a reference to its group, which cannot go while it is
 * x->group and we hold the lock (reparenting takes it).
 */
static mcg_group_t *lock_group(struct mcg_objcg *x)
{
	mcg_spin_lock(&x->lock);
	mcg_group_t *g = x->group;
	mcg_group_get(g);
	return g;
}

mcg_group_t *mcg_objcg_group_get(struct mcg_objcg *x)
{
	mcg_group_t *g = lock_group(x);
	mcg_spin_unlock(&x->lock);
	return g;
}

/* ------------------------------------------------------------ pages */

/*
 * Pages @g charged for @x became x->charged (lock held).  If @x moved up
 * meanwhile, the levels it left do not keep them.
 */
static void add_charged_locked(struct mcg_objcg *x, mcg_group_t *g, long pages)
{
	for (mcg_group_t *a = g; a != x->group; a = a->parent)
		mcg_page_counter_cancel(&a->memory, pages);
	if (!holds_charges(x) && pages)
		objcg_get(x);
	x->charged += pages;
}

int mcg_objcg_charge_pages(struct mcg_objcg *x, unsigned long nr_pages, unsigned flags)
{
	mcg_group_t *g = lock_group(x);
	mcg_spin_unlock(&x->lock);
	int err = mcg_group_try_charge(g, nr_pages, flags);
	if (!err) {
		mcg_spin_lock(&x->lock);
		add_charged_locked(x, g, (long)nr_pages);
		mcg_spin_unlock(&x->lock);
	}
	mcg_group_put(g);
	return err;
}

/*
 * Give back @units (live or stocked until now) to @x: whole pages to its
 * group, the rest kept as leftover - less than a page when @all_pages,
 * else between one and two pages once it reaches two (hysteresis: an objcg
 * without a stock word whose frees and allocations take turns would
 * otherwise uncharge and charge a page on every call).  @x may be freed on
 * return.
 */
static void units_back(struct mcg_objcg *x, uint64_t units, bool all_pages)
{
	mcg_spin_lock(&x->lock);
	uint64_t all = (uint64_t)x->leftover + units;
	long pages = (long)(all / UNITS_PER_PAGE);
	if (!all_pages && !x->dead)
		pages = pages >= 2 ? pages - 1 : 0;
	x->leftover = (long)(all - (uint64_t)pages * UNITS_PER_PAGE);
	if (!pages) {
		mcg_spin_unlock(&x->lock);
		return; /* a partial page at most: charged still covers it */
	}
	mcg_group_t *g = x->group;
	x->charged -= pages;
	MCG_BUG_ON(x->charged < 0);
	bool dropped = !holds_charges(x);
	/* Into this CPU's page stock while x's lock keeps g (no reference:
	 * the CPUs giving back into x would all share g's count), else the
	 * whole way with a reference and no lock held. */
	if (mcg_group_uncharge_stocked(g, (unsigned long)pages)) {
		mcg_spin_unlock(&x->lock);
	} else {
		mcg_group_get(g);
		mcg_spin_unlock(&x->lock);
		mcg_group_uncharge_pages(g, (unsigned long)pages);
		mcg_group_put(g);
	}
	if (dropped)
		objcg_put(x);
}

void mcg_objcg_units_return(struct mcg_objcg *x, uint64_t units) { units_back(x, units, true); }

void mcg_objcg_uncharge_pages(struct mcg_objcg *x, unsigned long nr_pages)
{
	mcg_objcg_units_return(x, (uint64_t)nr_pages * UNITS_PER_PAGE);
}

/* ------------------------------------------------------------ the byte stock */

/* Return what a stock word held: its units (whole pages when @all_pages)
 * and its reference. */
static void word_back(uint64_t w, bool all_pages)
{
	struct mcg_objcg *x = mcg_pcpu_word_ptr(mcg_pcpu_word_key(w));
	if (!x)
		return;
	uint32_t n = mcg_pcpu_word_count(w);
	if (n)
		units_back(x, n, all_pages);
	objcg_put(x);
}

static void drain_word(uint64_t w) { word_back(w, true); }

/* Take @x's word out of every CPU's stock (its bank only). */
static void drain_objcg_words(struct mcg_objcg *x)
{
	mcg_stock_drain_words(x->stock_bank, 1, mcg_objcg_key(x), drain_word);
}

/* Misses that evict another objcg's word: one in EVICT_EVERY (a thread-local hint). */
#define EVICT_EVERY 8
static mcg_tls unsigned evict_tick;

/* @x's word on CPU @cpu. */
static uint64_t *stock_word_of(const struct mcg_objcg *x, unsigned cpu)
{
	return &mcg_pcpu_word_of(x->stock_bank, cpu)->words[x->stock_word];
}

/*
 * x's word here is full (it held @count when looked at), or @units are more
 * than it holds: give back the whole pages of both together and leave the
 * word the rest, less than a page (the kernel's obj stock keeps no more:
 * refill_obj_stock()), so that the next gives fit again - trimming only
 * the word's pages left it nearly full, and every flush of 64 objects of
 * 512 B trimmed.  One operation on the word, which stays installed with its
 * reference: no objcg get and put, whose count the CPUs giving back into x
 * would all share.  False if the word changed meanwhile (nothing done).
 */
static bool stock_trim(struct mcg_objcg *x, uint64_t count, uint64_t units)
{
	uint64_t keep = (count + units) % UNITS_PER_PAGE;
	int r = keep <= count ? mcg_objcg_consume(x, count - keep)
	                      : mcg_objcg_refill(x, keep - count);
	if (r != MCG_PCPU_OK) /* another CPU's word now, or a drain took it */
		return false;
	units_back(x, count + units - keep, false);
	return true;
}

/*
 * Put @units (charged to @x, not in use) in this CPU's stock: into x's
 * word.  When another objcg holds that slot (more objcgs than slots take
 * turns), take it over only on one miss in EVICT_EVERY, and otherwise keep
 * the units with @x (its leftover, whole pages back to its group): two
 * objcgs sharing a slot would otherwise evict each other on every call.
 * x's own word full: stock_trim().  Over the word's limit, or if the stock
 * is being drained, they go back to @x too.
 */
static void stock_put(struct mcg_objcg *x, uint64_t units)
{
	if (!units || mcg_objcg_refill(x, units) == MCG_PCPU_OK)
		return;
	uint64_t keep = units < MCG_OBJCG_STOCK_UNITS ? units : MCG_OBJCG_STOCK_UNITS;
	uint64_t old, key = mcg_objcg_key(x);
	uint64_t there = __atomic_load_n(stock_word_of(x, mcg_percpu_cpu()), __ATOMIC_RELAXED);
	if (mcg_pcpu_word_key(there) == key && stock_trim(x, mcg_pcpu_word_count(there), units))
		return;
	if (mcg_pcpu_word_key(there) && mcg_pcpu_word_key(there) != key &&
	    ++evict_tick % EVICT_EVERY) {
		units_back(x, units, false);
		return;
	}
	objcg_get(x); /* the new word's */
	if (mcg_pcpu_word_exchange(x->stock_bank, x->stock_word,
	                           mcg_pcpu_word_pack(key, (uint32_t)keep), &old) != MCG_PCPU_OK) {
		objcg_put(x); /* x holds charges (ours): it stays */
		units_back(x, units, false);
		return;
	}
	if (units > keep)
		units_back(x, units - keep, false);
	word_back(old, false);
}

int mcg_objcg_charge(struct mcg_objcg *x, uint64_t units, unsigned flags)
{
	/* Use the leftover first, then whole pages (the group's page stock
	 * batches them); the surplus goes to this CPU's stock. */
	mcg_spin_lock(&x->lock);
	if ((uint64_t)x->leftover >= units) { /* an objcg without a stock word */
		x->leftover -= (long)units;
		mcg_spin_unlock(&x->lock);
		return 0;
	}
	uint64_t have = (uint64_t)x->leftover;
	x->leftover = 0; /* holds_charges() unchanged: leftover implies charged */
	mcg_spin_unlock(&x->lock);
	unsigned long pages = 0;
	if (units > have) {
		pages = (unsigned long)((units - have + UNITS_PER_PAGE - 1) / UNITS_PER_PAGE);
		int err = mcg_objcg_charge_pages(x, pages, flags);
		if (err) {
			mcg_spin_lock(&x->lock);
			x->leftover += (long)have; /* charged still covers it */
			mcg_spin_unlock(&x->lock);
			return err;
		}
	}
	stock_put(x, have + pages * UNITS_PER_PAGE - units);
	return 0;
}

void mcg_objcg_uncharge(struct mcg_objcg *x, uint64_t units)
{
	if (unlikely(mcg_reclaim_state_current)) {
		mcg_objcg_units_return(x, units); /* a shrinker's frees are progress now */
		return;
	}
	/* x's word is full, or there is none: a word of x's own (the full one
	 * is returned), or x's leftover. */
	stock_put(x, units);
}

/* slab/account.c's hooks (atomic pointers, set once). */
static void (*array_drain)(void);
static void (*array_scan)(mcg_objcg_units_fn visit, void *arg);

void mcg_objcg_set_array_hooks(void (*drain)(void), void (*scan)(mcg_objcg_units_fn, void *))
{
	__atomic_store_n(&array_scan, scan, __ATOMIC_RELEASE);
	__atomic_store_n(&array_drain, drain, __ATOMIC_RELEASE);
}

#define FLUSH_BATCH 64

/* Collect (referenced) up to FLUSH_BATCH objcgs of @g's subtree holding a
 * page or more of leftover (tree lock held). */
static unsigned leftovers_locked(mcg_group_t *g, struct mcg_objcg **out, unsigned n)
{
	mcg_list_for_each (pos, &g->objcgs) {
		if (n == FLUSH_BATCH)
			return n;
		struct mcg_objcg *x = mcg_list_entry(pos, struct mcg_objcg, link);
		mcg_spin_lock(&x->lock);
		if (x->leftover >= (long)UNITS_PER_PAGE) {
			objcg_get(x);
			out[n++] = x;
		}
		mcg_spin_unlock(&x->lock);
	}
	mcg_list_for_each (pos, &g->children)
		n = leftovers_locked(mcg_list_entry(pos, struct mcg_group, sibling), out, n);
	return n;
}

/* Give every objcg's whole pages of leftover back (drains: exact at rest). */
static void flush_leftovers(void)
{
	struct mcg_objcg *batch[FLUSH_BATCH];
	unsigned n;
	do {
		mcg_lock(&mcg_group_tree_lock);
		n = leftovers_locked(mcg_group_root(), batch, 0);
		mcg_unlock(&mcg_group_tree_lock);
		for (unsigned i = 0; i < n; i++) {
			units_back(batch[i], 0, true);
			objcg_put(batch[i]);
		}
	} while (n == FLUSH_BATCH);
}

void mcg_objcg_drain_stocks(void)
{
	void (*fn)(void) = __atomic_load_n(&array_drain, __ATOMIC_ACQUIRE);
	if (fn)
		fn(); /* the CPU arrays' units, then the byte stocks, then leftovers */
	mcg_stock_drain_words(mcg_objcg_stocks, MCG_OBJCG_STOCK_BANKS, 0, drain_word);
	flush_leftovers();
}

uint64_t mcg_objcg_stocked_here(const struct mcg_objcg *x)
{
	uint64_t v = __atomic_load_n(stock_word_of(x, mcg_percpu_cpu()), __ATOMIC_RELAXED);
	return mcg_pcpu_word_key(v) == mcg_objcg_key(x) ? mcg_pcpu_word_count(v) : 0;
}

void mcg_objcg_init(void)
{
	mcg_objcg_table = mcg_os_map(MCG_OBJCG_IDS * sizeof(*mcg_objcg_table), MCG_PAGE_SIZE);
	if (!mcg_objcg_table)
		mcg_die("no memory for the objcg ids");
	nr_cpus = mcg_os_nr_cpus();
	size_t bytes = MCG_ALIGN_UP(((size_t)nr_cpus * MCG_OBJCG_STOCK_BANKS) << MCG_PCPU_SHIFT,
	                            MCG_PAGE_SIZE);
	mcg_objcg_stocks = mcg_os_map(bytes, MCG_PAGE_SIZE);
	if (!mcg_objcg_stocks)
		mcg_die("no memory for the byte stocks");
	for (unsigned b = 0; b < MCG_OBJCG_STOCK_BANKS; b++)
		mcg_pcpu_word_init(mcg_pcpu_word_bank(mcg_objcg_stocks, nr_cpus, b), nr_cpus,
		                   MCG_RANK_LEAF);
}

/* Give @x the next stock slot in turn. */
static void stock_slot_assign(struct mcg_objcg *x)
{
	static unsigned next; /* atomic */
	unsigned slot = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) % MCG_OBJCG_STOCK_SLOTS;
	x->stock_bank = mcg_pcpu_word_bank(mcg_objcg_stocks, nr_cpus, slot / MCG_PCPU_WORDS);
	x->stock_word = slot % MCG_PCPU_WORDS;
}

/* ------------------------------------------------------------ life */

/* Give @g's new objcgs their ids, all or none (tree lock held).  0 or
 * -ENOSPC (MCG_OBJCG_IDS objcgs exist). */
static int ids_assign_locked(mcg_group_t *g)
{
	for (int k = 0; k < MCG_NR_OBJCG_KINDS; k++) {
		struct mcg_objcg *x = g->objcg[k];
		x->id = id_alloc_locked(x);
		if (!x->id) {
			while (k-- > 0)
				id_free_locked(g->objcg[k]->id);
			return -ENOSPC;
		}
		x->slot_bits = MCG_OBJCG_SLOT_BITS(x->id);
	}
	return 0;
}

int mcg_objcg_create_all(mcg_group_t *g)
{
	mcg_list_init(&g->objcgs);
	int k, err = 0;
	for (k = 0; k < MCG_NR_OBJCG_KINDS; k++) {
		struct mcg_objcg *x = NULL;
		if (!g->parent || !mcg_fault_should_fail()) /* the root cannot fail */
			x = mcg_aligned_alloc(MCG_CACHELINE, sizeof(*x));
		if (!x)
			break;
		MCG_BUG_ON(!mcg_pcpu_word_keyable(x)); /* its stock words' key */
		memset(x, 0, sizeof(*x));
		mcg_spin_init(&x->lock, MCG_RANK_OBJCG);
		x->kind = (uint32_t)k;
		x->group = g;
		x->refcnt = 1; /* g's pointer */
		stock_slot_assign(x);
		g->objcg[k] = x;
	}
	if (k == MCG_NR_OBJCG_KINDS) {
		mcg_lock(&mcg_group_tree_lock);
		err = ids_assign_locked(g);
		mcg_unlock(&mcg_group_tree_lock);
	}
	if (k < MCG_NR_OBJCG_KINDS || err) {
		while (k-- > 0)
			mcg_free(g->objcg[k]);
		return err ? err : -ENOMEM;
	}
	for (k = 0; k < MCG_NR_OBJCG_KINDS; k++)
		mcg_list_add_tail(&g->objcg[k]->link, &g->objcgs);
	return 0;
}

void mcg_objcg_put_all(mcg_group_t *g)
{
	for (int k = 0; k < MCG_NR_OBJCG_KINDS; k++)
		objcg_put(g->objcg[k]);
}

void mcg_objcg_reparent_locked(mcg_group_t *g)
{
	mcg_group_t *parent = g->parent;
	mcg_list_for_each (pos, &g->objcgs) {
		struct mcg_objcg *x = mcg_list_entry(pos, struct mcg_objcg, link);
		mcg_spin_lock(&x->lock);
		long moved = x->charged;
		x->group = parent;
		x->dead = 1;
		mcg_page_counter_cancel(&g->memory, moved); /* the parent keeps them */
		mcg_spin_unlock(&x->lock);
	}
	mcg_list_splice_tail(&g->objcgs, &parent->objcgs);
}

void mcg_objcg_offline(mcg_group_t *g)
{
	/* g's pointers keep its own objcgs; those it inherited were taken out
	 * when their own groups went. */
	for (int k = 0; k < MCG_NR_OBJCG_KINDS; k++) {
		struct mcg_objcg *x = g->objcg[k];
		drain_objcg_words(x);
		units_back(x, 0, true); /* the leftover's whole pages */
	}
}

/* ------------------------------------------------------------ fork */

static void fork_lock_subtree(mcg_group_t *g, bool lock)
{
	mcg_list_for_each (pos, &g->objcgs) {
		struct mcg_objcg *x = mcg_list_entry(pos, struct mcg_objcg, link);
		if (lock)
			mcg_spin_lock_raw(&x->lock);
		else
			mcg_spin_unlock_raw(&x->lock);
	}
	mcg_list_for_each (pos, &g->children)
		fork_lock_subtree(mcg_list_entry(pos, struct mcg_group, sibling), lock);
}

void mcg_objcg_fork_lock_all(bool lock) { fork_lock_subtree(mcg_group_root(), lock); }

/* ------------------------------------------------------------ statistics */

static uint64_t units_stocked(const struct mcg_objcg *x)
{
	uint64_t sum = 0;
	for (unsigned c = 0; c < nr_cpus; c++) {
		uint64_t v = __atomic_load_n(stock_word_of(x, c), __ATOMIC_RELAXED);
		if (mcg_pcpu_word_key(v) == mcg_objcg_key(x))
			sum += mcg_pcpu_word_count(v);
	}
	return sum;
}

/*
 * The (key, units) pairs the CPU arrays hold, collected before the tree
 * lock.  No allocation between the scan and the reading of the stocks: a
 * plain allocation may pop a charged object and move its charge into a
 * stock, which would then be counted twice.
 */
/* This thread's held scan (mcg_objcg_stat_hold), or NULL. */
static mcg_tls struct mcg_objcg_held *held_now;

static void held_add(uint64_t key, uint64_t units, void *arg)
{
	struct mcg_objcg_held *h = arg;
	for (size_t i = 0; i < h->n; i++) {
		if (h->key[i] == key) {
			h->units[i] += units;
			return;
		}
	}
	if (h->n == MCG_OBJCG_HELD_MAX)
		return; /* the figure is off by these units, no more */
	h->key[h->n] = key;
	h->units[h->n++] = units;
}

static uint64_t held_of(const struct mcg_objcg_held *h, uint64_t key)
{
	for (size_t i = 0; i < h->n; i++)
		if (h->key[i] == key)
			return h->units[i];
	return 0;
}

static void stat_group_locked(mcg_group_t *g, const struct mcg_objcg_held *h,
                              struct mcg_objcg_stat *st)
{
	mcg_list_for_each (pos, &g->objcgs) {
		struct mcg_objcg *x = mcg_list_entry(pos, struct mcg_objcg, link);
		mcg_spin_lock(&x->lock);
		int64_t charged = (int64_t)x->charged * UNITS_PER_PAGE;
		int64_t idle = x->leftover;
		mcg_spin_unlock(&x->lock);
		idle += (int64_t)(units_stocked(x) + held_of(h, mcg_objcg_key(x)));
		st->charged[x->kind] += charged * MCG_OBJCG_UNIT;
		/* Racy while running (a slow path holds units in flight). */
		st->used[x->kind] += charged > idle ? (charged - idle) * MCG_OBJCG_UNIT : 0;
	}
	mcg_list_for_each (pos, &g->children)
		stat_group_locked(mcg_list_entry(pos, struct mcg_group, sibling), h, st);
}

/* Scan the CPU arrays into @h. */
static void held_scan(struct mcg_objcg_held *h)
{
	h->n = 0;
	void (*scan)(mcg_objcg_units_fn, void *) = __atomic_load_n(&array_scan, __ATOMIC_ACQUIRE);
	if (scan)
		scan(held_add, h);
}

void mcg_objcg_stat(mcg_group_t *g, struct mcg_objcg_stat *st)
{
	struct mcg_objcg_held mine, *h = held_now;
	if (!h) {
		held_scan(&mine);
		h = &mine;
	}
	memset(st, 0, sizeof(*st));
	mcg_lock(&mcg_group_tree_lock);
	stat_group_locked(g, h, st);
	mcg_unlock(&mcg_group_tree_lock);
}

void mcg_objcg_stat_hold(struct mcg_objcg_held *h)
{
	held_scan(h);
	held_now = h;
}

void mcg_objcg_stat_release(void) { held_now = NULL; }
