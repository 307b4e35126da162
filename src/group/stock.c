/* SPDX-License-Identifier: MIT */
/*
 * group/stock.c - the per-CPU charge stock, and mcg_charge / mcg_uncharge.
 *
 * Fast path first: a charge of n pages consumes n pages this CPU's stock
 * holds for the same group (one rseq critical section, no shared cache
 * line); an uncharge puts them back.  Only when the stock holds too little
 * of the group, none, or would overflow, does the slow path (the miss)
 * touch the page counters.
 *
 * Each CPU's stock holds MCG_GROUP_STOCK_ENTRIES entries (the kernel's
 * NR_MEMCG_STOCK), each a 64-bit word: a group's address (its key, 44
 * bits) and its page count (20 bits, at most MCG_GROUP_STOCK_PAGES),
 * operated on by percpu/pcpu_word.h: consume and refill scan the entries for
 * the group.  So a thread that charges a few groups in turn keeps each
 * one's pages stocked.  An entry's pages are charged to its group and every
 * ancestor; an entry also serves the group's children: a child's charge
 * takes the pages at its own counter and from the entry (the levels above
 * took them already), so one entry serves a CPU that charges more siblings
 * than it has entries, and spares their shared levels, the busiest.
 *
 * The miss (charge_miss(), uncharge_miss()): a charge takes a batch of
 * MCG_GROUP_STOCK_PAGES (the kernel's MEMCG_CHARGE_BATCH) where its surplus
 * has an entry to go to without evicting (the group's own, an empty one);
 * else goes through the parent's entry; else charges its pages alone, as
 * the plain counters do; one miss in MCG_GROUP_STOCK_EVICT_EVERY evicts an
 * entry round robin, for the parent or, once the parent has one, for the
 * group.  An uncharge fills the group's entry (trimmed when full: the entry
 * keeps what comes, its pages go back), an empty one, or the parent's, and
 * never evicts.  The kernel evicts a random entry on every miss that
 * finds none free (refill_stock()); with more groups than entries that
 * costs a counter walk and a group get and put more than the plain
 * counters on nearly every call, and stocks pages that are evicted before
 * they are used.  Limits: the miss only tries the counters; where its batch
 * (or the group's own pages) would go over a max, the charge goes to the
 * plain counters, which reclaim, drain, fail or force and count the events
 * exactly as without a stock.  High is checked at the levels that took
 * pages; those above a serving entry took none, as on a hit.
 * A word that names a group holds a reference to it.  Whoever exchanges a
 * word out owns its pages and its reference, and returns both (drain_word()).
 * A group normally has at most one entry per CPU; a thread that moves CPU
 * between choosing and installing may give it a second one there, which is
 * harmless (the bound below counts entries, not groups) and goes on eviction.
 *
 * Invariant: for every group, usage = pages in use + pages in stock
 * entries for it and its descendants; a CPU's stock holds at most
 * MCG_GROUP_STOCK_SLACK_PAGES (= 64 x entries), so counters run ahead of use
 * by at most MCG_GROUP_STOCK_SLACK_PAGES x CPUs, and are exact after
 * mcg_group_drain_stocks().
 *
 * Remote drain (percpu/percpu.h), 32 CPUs at a time: lock each CPU's stock
 * (MCG_RANK_LEAF, in CPU order), stop it, one fence, then take its entries
 * (all, or the group's), start and unlock the CPU; then return their pages
 * and references with no lock held (that may take objcg and tree locks).
 * Full drains (mcg_group_drain_stocks()) run one at a time, from the first
 * word taken to the last charge returned (drain_lock, MCG_RANK_STOCK_DRAIN):
 * a charge that failed drains and retries, and when its drain returns, no
 * other drain may still hold charges it took out of the stocks - or the
 * charge fails, and the OOM policy kills, while the group is under its max
 * (test_oom_mt: test_drain_in_flight_no_false_oom).
 *
 * A removed group is drained from every stock (mcg_stock_drain_group()) and
 * never stocked again: a refill that raced with the removal sees `online`
 * cleared after installing its word and drains the group again, from every
 * CPU (the thread may have moved).
 */
#include <errno.h>

#include "base/mm_const.h"
#include "base/log.h"
#include "percpu/pcpu_word.h"
#include "group/group.h"
#include "group/objcg.h"
#include "os/os.h"

#define STOCK_PAGES MCG_GROUP_STOCK_PAGES
#define CHARGE_MAX (1ul << 40) /* pages: larger charges are rejected */
#define PROGRESS_RETRIES 256   /* bound on attempts after reclaim made progress */
#define ENTRIES MCG_GROUP_STOCK_ENTRIES

_Static_assert(MCG_PCPU_WORDS == MCG_GROUP_STOCK_ENTRIES, "one word per stock entry");

static struct mcg_pcpu_word *stocks;
static unsigned nr_stocks;
static mcg_lock_t drain_lock; /* one full drain at a time (banner) */
/* Per thread (hints): misses that could evict, and the next round-robin victim. */
static mcg_tls unsigned evict_tick, evict_next;

static struct {
	mcg_group_reclaim_fn reclaim;
	void *reclaim_arg;
	mcg_group_high_fn high;
	void *high_arg;
} hooks;

void mcg_stock_init(void)
{
	nr_stocks = mcg_os_nr_cpus();
	stocks = mcg_os_map(MCG_ALIGN_UP((size_t)nr_stocks << MCG_PCPU_SHIFT, MCG_PAGE_SIZE),
	                    MCG_PAGE_SIZE);
	if (!stocks)
		mcg_die("no memory for the charge stocks");
	mcg_pcpu_word_init(stocks, nr_stocks, MCG_RANK_LEAF);
	mcg_lock_init(&drain_lock, MCG_RANK_STOCK_DRAIN);
}

static inline uint64_t key_of(const mcg_group_t *g) { return mcg_pcpu_word_key_of(g); }

/* Return the pages and the reference a word held (no lock held). */
static void drain_word(uint64_t w)
{
	mcg_group_t *g = mcg_pcpu_word_ptr(mcg_pcpu_word_key(w));
	if (!g)
		return;
	uint32_t n = mcg_pcpu_word_count(w);
	if (n)
		mcg_page_counter_uncharge(&g->memory, n);
	mcg_group_put(g);
}

#define NO_KEY UINT64_MAX /* matches no word's key (keys have 44 bits) */

/* What this CPU's stock holds for a group and its parent: a racy look at
 * a CPU the thread may leave, so only a hint (every use of it is correct
 * whatever it says). */
struct stock_look {
	unsigned have;     /* the group's entry, or ENTRIES */
	unsigned up;       /* its parent's entry, or ENTRIES */
	unsigned empty;    /* the first empty entry, or ENTRIES */
	uint32_t count;    /* pages in entry `have` */
	uint32_t up_count; /* pages in entry `up` */
};

static mcg_always_inline struct stock_look stock_look(uint64_t key, uint64_t up_key)
{
	struct mcg_pcpu_word *w = mcg_pcpu_word_of(stocks, mcg_percpu_cpu());
	struct stock_look l = {ENTRIES, ENTRIES, ENTRIES, 0, 0};
	/* The first of each, as the fast path's scan; from the last entry
	 * down, without branches (the positions are random: mispredicted). */
	for (unsigned i = ENTRIES; i-- > 0;) {
		uint64_t v = __atomic_load_n(&w->words[i], __ATOMIC_RELAXED);
		uint64_t k = mcg_pcpu_word_key(v);
		uint32_t n = mcg_pcpu_word_count(v);
		l.count = k == key ? n : l.count;
		l.have = k == key ? i : l.have;
		l.up_count = k == up_key ? n : l.up_count;
		l.up = k == up_key ? i : l.up;
		l.empty = !v ? i : l.empty;
	}
	return l;
}

/* The next round-robin victim but @keep (an entry the caller relies on). */
static unsigned stock_victim(unsigned keep)
{
	unsigned i = evict_next++ % ENTRIES;
	return i != keep ? i : evict_next++ % ENTRIES;
}

/* Install (g, n pages already charged) as this CPU's entry @i, returning
 * what the entry held; or uncharge them (@g offline, or a drain running). */
static void stock_install(mcg_group_t *g, uint32_t n, unsigned i)
{
	uint64_t old;
	if (!__atomic_load_n(&g->online, __ATOMIC_ACQUIRE))
		goto direct;
	mcg_group_get(g);
	if (mcg_pcpu_word_exchange(stocks, i, mcg_pcpu_word_pack(key_of(g), n), &old) !=
	    MCG_PCPU_OK) {
		mcg_group_put(g);
		goto direct;
	}
	drain_word(old);
	/*
	 * Raced with mcg_group_remove()?  Then drain the group again, from
	 * every CPU (we may have moved since the commit; rare).  An RMW (a
	 * full barrier after the commit, and the latest value of `online`)
	 * rather than a fence, which TSan does not model.
	 */
	if (unlikely(!__atomic_fetch_or(&g->online, 0, __ATOMIC_SEQ_CST)))
		mcg_stock_drain_group(g);
	return;
direct:
	if (n)
		mcg_page_counter_uncharge(&g->memory, n);
}

/*
 * @n pages charged to @x given back while this CPU's entry @i for @x holds
 * @count, too many to take them (count + n > MCG_GROUP_STOCK_PAGES): the
 * entry keeps @n and the counters get @count back, in one operation on the
 * word, which keeps its group and reference (no get and put).  False if
 * the entry changed meanwhile: nothing done.
 */
static bool stock_trim(mcg_group_t *x, unsigned i, uint32_t count, uint32_t n)
{
	int r = count >= n ? mcg_pcpu_word_consume_at(stocks, i, key_of(x), count - n)
	                   : mcg_pcpu_word_refill_at(stocks, i, key_of(x), n - count, STOCK_PAGES);
	if (r != MCG_PCPU_OK)
		return false;
	if (count)
		mcg_page_counter_uncharge(&x->memory, count);
	return true;
}

/* CPUs stopped together by mcg_stock_drain_words(): one fence per batch. */
#define DRAIN_BATCH 32

void mcg_stock_drain_words(struct mcg_pcpu_word *words, unsigned nbanks, uint64_t only,
                           void (*drain)(uint64_t))
{
	/* One fence per batch of CPUs, every bank of each stopped. */
	unsigned per = nbanks < DRAIN_BATCH ? DRAIN_BATCH / nbanks : 1;
	uint64_t taken[DRAIN_BATCH * ENTRIES];
	for (unsigned first = 0; first < nr_stocks; first += per) {
		unsigned end = MCG_MIN(first + per, nr_stocks), nt = 0;
		for (unsigned c = first; c < end; c++)
			for (unsigned b = 0; b < nbanks; b++) {
				struct mcg_pcpu_word *w = mcg_pcpu_word_of(
				        mcg_pcpu_word_bank(words, nr_stocks, b), c);
				mcg_lock(&w->lock);
				mcg_pcpu_word_stop(w);
			}
		mcg_percpu_fence();
		for (unsigned c = first; c < end; c++)
			for (unsigned b = 0; b < nbanks; b++) {
				struct mcg_pcpu_word *w = mcg_pcpu_word_of(
				        mcg_pcpu_word_bank(words, nr_stocks, b), c);
				for (unsigned i = 0; i < ENTRIES; i++) {
					uint64_t old = MCG_READ_ONCE(w->words[i]);
					if (!old || (only && mcg_pcpu_word_key(old) != only))
						continue;
					MCG_WRITE_ONCE(w->words[i], 0);
					taken[nt++] = old;
				}
				mcg_pcpu_word_start(w); /* the emptied words published first */
				mcg_unlock(&w->lock);
			}
		/* With no stock lock held: draining takes objcg and tree locks. */
		for (unsigned i = 0; i < nt; i++)
			drain(taken[i]);
	}
}

mcg_public void mcg_group_drain_stocks(void)
{
	mcg_group_init();
	mcg_lock(&drain_lock);
	/* The byte stocks first: what they return may land in a page stock. */
	mcg_objcg_drain_stocks();
	mcg_stock_drain_words(stocks, 1, 0, drain_word);
	mcg_unlock(&drain_lock);
}

void mcg_stock_drain_group(mcg_group_t *g)
{
	mcg_group_init();
	mcg_stock_drain_words(stocks, 1, key_of(g), drain_word);
}

static void fork_lock_words(struct mcg_pcpu_word *words, unsigned nbanks, bool lock)
{
	for (unsigned c = 0; c < nr_stocks; c++)
		for (unsigned b = 0; b < nbanks; b++) {
			mcg_lock_t *l =
			        &mcg_pcpu_word_of(mcg_pcpu_word_bank(words, nr_stocks, b), c)->lock;
			if (lock)
				mcg_lock_raw(l);
			else
				mcg_unlock_raw(l);
		}
}

void mcg_stock_fork_lock_drain(bool lock)
{
	if (lock)
		mcg_lock_raw(&drain_lock);
	else
		mcg_unlock_raw(&drain_lock);
}

void mcg_stock_fork_lock_all(bool lock)
{
	/* The order of mcg_stock_drain_words(): CPU, then bank. */
	fork_lock_words(stocks, 1, lock);
	fork_lock_words(mcg_objcg_stocks, MCG_OBJCG_STOCK_BANKS, lock);
}

long mcg_stock_cached_subtree(const mcg_group_t *g)
{
	long sum = 0;
	mcg_lock(&mcg_group_tree_lock); /* parents stay put; stocked groups are referenced */
	for (unsigned c = 0; c < nr_stocks; c++) {
		struct mcg_pcpu_word *s = mcg_pcpu_word_of(stocks, c);
		for (unsigned i = 0; i < ENTRIES; i++) {
			uint64_t w = __atomic_load_n(&s->words[i], __ATOMIC_RELAXED);
			const mcg_group_t *h = mcg_pcpu_word_ptr(mcg_pcpu_word_key(w));
			while (h && h != g)
				h = h->parent;
			if (h)
				sum += mcg_pcpu_word_count(w);
		}
	}
	mcg_unlock(&mcg_group_tree_lock);
	return sum;
}

long mcg_stock_cached(const mcg_group_t *g)
{
	long sum = 0;
	for (unsigned c = 0; c < nr_stocks; c++) {
		struct mcg_pcpu_word *s = mcg_pcpu_word_of(stocks, c);
		for (unsigned i = 0; i < ENTRIES; i++) {
			uint64_t w = __atomic_load_n(&s->words[i], __ATOMIC_RELAXED);
			if (mcg_pcpu_word_key(w) == key_of(g))
				sum += mcg_pcpu_word_count(w);
		}
	}
	return sum;
}

/* ------------------------------------------------------------ hooks */

mcg_public void mcg_group_set_reclaim_hook(mcg_group_reclaim_fn fn, void *arg)
{
	__atomic_store_n(&hooks.reclaim_arg, arg, __ATOMIC_RELAXED);
	__atomic_store_n(&hooks.reclaim, fn, __ATOMIC_RELEASE);
}

mcg_public void mcg_group_set_high_hook(mcg_group_high_fn fn, void *arg)
{
	__atomic_store_n(&hooks.high_arg, arg, __ATOMIC_RELAXED);
	__atomic_store_n(&hooks.high, fn, __ATOMIC_RELEASE);
}

unsigned long mcg_group_reclaim_hook_call(mcg_group_t *over, unsigned long nr_pages)
{
	mcg_group_reclaim_fn fn = __atomic_load_n(&hooks.reclaim, __ATOMIC_ACQUIRE);
	if (!fn)
		return 0;
	return fn(over, nr_pages, __atomic_load_n(&hooks.reclaim_arg, __ATOMIC_RELAXED));
}

/*
 * After a charge reached the counters of @g and its ancestors up to @stop
 * (excluded; NULL: all of them): count "high" where usage is above high,
 * call the high hook, and let reclaim bring the groups back under high
 * (reclaim/vmscan.c: on this thread and throttled, or on the worker when
 * the caller cannot sleep).  The levels from @stop up took no pages (they
 * came from @stop's stock entry), as on a stock hit.
 */
static void check_high(mcg_group_t *g, mcg_group_t *stop, unsigned long nr_pages, unsigned flags)
{
	mcg_group_high_fn fn = NULL;
	bool over = false;
	long usage = 0;
	for (mcg_group_t *a = g; a != stop; a = a->parent) {
		struct mcg_page_counter *c = &a->memory;
		usage = mcg_page_counter_read(c); /* the root's, last */
		if (likely(usage <= mcg_page_counter_get(c, high)))
			continue;
		over = true;
		mcg_group_event(a, MCG_EVENT_HIGH);
		if (!fn)
			fn = __atomic_load_n(&hooks.high, __ATOMIC_ACQUIRE);
		if (fn)
			fn(a, nr_pages, __atomic_load_n(&hooks.high_arg, __ATOMIC_RELAXED));
	}
	const struct mcg_group_reclaim_ops *ops = mcg_group_reclaim_ops_get();
	if (ops && ops->root_charged && !stop)
		ops->root_charged(usage); /* global pressure's watermark */
	if (!over || mcg_reclaim_state_current || !ops)
		return; /* a shrinker's own charge does not recurse into reclaim */
	ops->over_high(g, nr_pages, !(flags & (MCG_CHARGE_NOWAIT | MCG_CHARGE_NORECLAIM)));
}

/* ------------------------------------------------------------ charging */

/*
 * The plain counters: charge @nr pages at @g and every ancestor; over max:
 * reclaim, drain, retry; then force or fail.  0 or -ENOMEM.
 */
static int charge_counters(mcg_group_t *g, unsigned long nr, unsigned flags)
{
	struct mcg_page_counter *fail;
	int retries = MCG_MAX_RECLAIM_RETRIES, progress_retries = PROGRESS_RETRIES;
	bool drained = false, passed_oom = false;
	/* A shrinker's own charge never recurses into reclaim (PF_MEMALLOC). */
	bool may_reclaim = !(flags & MCG_CHARGE_NORECLAIM) && !mcg_reclaim_state_current;
	const struct mcg_group_reclaim_ops *ops = may_reclaim ? mcg_group_reclaim_ops_get() : NULL;
	mcg_group_t *over;
retry:
	if (mcg_page_counter_try_charge(&g->memory, (long)nr, &fail))
		goto charged;
	over = mcg_group_of_counter(fail);
	mcg_group_event(over, MCG_EVENT_MAX);
	unsigned long progress = 0;
	if (may_reclaim) {
		if (ops) /* reclaim from the ancestor that failed */
			progress = ops->reclaim(over, nr, 0);
		progress += mcg_group_reclaim_hook_call(over, nr);
	}
	if (mcg_page_counter_margin(fail) >= (long)nr)
		goto retry;
	if (!drained) {
		drained = true; /* pages sitting in stocks count against max */
		mcg_group_drain_stocks();
		goto retry;
	}
	if (ops) {
		/* The kernel's try_charge_memcg: retry while reclaim makes
		 * progress, then MCG_MAX_RECLAIM_RETRIES more times without. */
		if (progress && progress_retries-- > 0)
			goto retry;
		if (retries-- > 0)
			goto retry;
	} else if (progress && retries-- > 0) {
		goto retry; /* no reclaim layer: only the hook's progress */
	}
	if (flags & MCG_CHARGE_FORCE) {
		mcg_page_counter_charge(&g->memory, (long)nr);
		mcg_group_stat_mod(g, MCG_STAT_CHARGE_FORCED, 1);
		goto charged;
	}
	if (passed_oom)
		return -ENOMEM; /* the victim's memory did not make room: one oom per charge */
	mcg_group_event(over, MCG_EVENT_OOM);
	if (ops && ops->oom(over, nr)) {
		/* A victim was killed: try again, with full retries. */
		passed_oom = true;
		retries = MCG_MAX_RECLAIM_RETRIES;
		drained = false;
		goto retry;
	}
	return -ENOMEM;
charged:
	check_high(g, NULL, nr, flags);
	return 0;
}

/*
 * Charge @nr pages at @g with the help of this CPU's entry @i for @x, @g
 * itself or its parent: the levels below @x (none when x == g) take @nr
 * pages exactly; then the entry gives @nr pages, or when it holds too few,
 * or is to be installed (@install: entry @i then goes to @x, its word
 * returned), a batch of MCG_GROUP_STOCK_PAGES goes to @x and every
 * ancestor and its surplus joins the entry.  Limits are only tried: false
 * if a level would go over its max, with nothing charged and no event
 * counted (the caller then takes the plain counters, which reclaim).
 */
static bool stock_charge(mcg_group_t *g, mcg_group_t *x, unsigned long nr, unsigned i, bool install,
                         unsigned flags)
{
	struct mcg_page_counter *fail;
	if (x != g) {
		if (!mcg_page_counter_try_charge_upto(&g->memory, &x->memory, (long)nr, &fail))
			return false;
		if (!install && mcg_pcpu_word_consume_at(stocks, i, key_of(x), nr) == MCG_PCPU_OK) {
			check_high(g, x, nr, flags);
			return true;
		}
	}
	if (!mcg_page_counter_try_charge(&x->memory, STOCK_PAGES, &fail)) {
		mcg_page_counter_uncharge_upto(&g->memory, &x->memory, (long)nr);
		return false;
	}
	check_high(g, NULL, STOCK_PAGES, flags);
	uint32_t surplus = STOCK_PAGES - (uint32_t)nr;
	if (!surplus)
		return true;
	if (install)
		stock_install(x, surplus, i);
	else if (mcg_pcpu_word_refill_at(stocks, i, key_of(x), surplus, STOCK_PAGES) != MCG_PCPU_OK)
		mcg_page_counter_uncharge(&x->memory, surplus); /* the entry changed (moved CPU) */
	return true;
}

/*
 * A charge of @nr pages that this CPU's stock could not serve.  In order:
 *  - @g's entry holds too few pages: a batch, its surplus joins them;
 *  - an empty entry: a batch, its surplus installed there for @g;
 *  - on one miss in MCG_GROUP_STOCK_EVICT_EVERY of those left (per thread),
 *    an entry is evicted (round robin) and installed with a batch: for @g
 *    when its parent's entry serves it already (@g recurs), else for the
 *    parent;
 *  - the parent's entry: @g's own counter (and nothing above it) takes the
 *    pages, the entry gives them - so one entry serves a CPU that charges
 *    more siblings than it has entries, and the levels the siblings share,
 *    the busiest, are left alone;
 *  - else the plain counters, @nr pages and no more, as without a stock.
 * Eviction is rare because each costs a counter walk to return the
 * victim's pages and a group get and put: more groups than entries, each
 * evicting on a miss (the kernel's refill_stock()), cost more than the
 * plain counters.  A limit that stops the stock's batch (or @g's pages)
 * sends the charge to the plain counters, which reclaim, drain and fail.
 */
static int charge_miss(mcg_group_t *g, unsigned long nr, unsigned flags)
{
	if (nr > STOCK_PAGES) /* larger charges bypass the stock */
		return charge_counters(g, nr, flags);
	mcg_group_t *p = g->parent;
	struct stock_look l = stock_look(key_of(g), p ? key_of(p) : NO_KEY);
	mcg_group_t *x = g;
	unsigned i;
	bool install = true;
	if (l.have < ENTRIES) {
		i = l.have; /* too few pages there */
		install = false;
	} else if (l.empty < ENTRIES) {
		i = l.empty;
	} else if (!(++evict_tick % MCG_GROUP_STOCK_EVICT_EVERY)) {
		if (p && l.up == ENTRIES)
			x = p;
		i = stock_victim(l.up);
	} else if (l.up < ENTRIES) {
		x = p;
		i = l.up;
		install = false;
	} else {
		return charge_counters(g, nr, flags);
	}
	if (install && !__atomic_load_n(&x->online, __ATOMIC_RELAXED))
		return charge_counters(g, nr, flags); /* a removed group is not stocked */
	if (stock_charge(g, x, nr, i, install, flags))
		return 0;
	return charge_counters(g, nr, flags);
}

int mcg_group_try_charge(mcg_group_t *g, unsigned long nr, unsigned flags)
{
	/* Locked mode's fast path (the rseq one is inline in mcg_charge). */
	if (nr <= STOCK_PAGES && mcg_pcpu_word_consume(stocks, key_of(g), nr) == MCG_PCPU_OK)
		return 0;
	return charge_miss(g, nr, flags);
}

#define CHARGE_FLAGS (MCG_CHARGE_FORCE | MCG_CHARGE_NORECLAIM | MCG_CHARGE_NOWAIT)

/* Everything but the fast path: argument checks, the current group, then
 * the miss (rseq mode, where mcg_charge() tried the stock) or the locked
 * mode's fast path and the miss (mcg_group_try_charge()). */
static mcg_noinline int charge_checked(mcg_group_t *g, unsigned long nr_pages, unsigned flags)
{
	if (nr_pages == 0 || nr_pages > CHARGE_MAX || (flags & ~CHARGE_FLAGS))
		return -EINVAL;
	if (g && mcg_percpu_use_rseq())
		return charge_miss(g, nr_pages, flags);
	if (!g)
		g = mcg_group_current();
	return mcg_group_try_charge(g, nr_pages, flags);
}

mcg_public int mcg_charge(mcg_group_t *g, unsigned long nr_pages, unsigned flags)
{
	/* Fast path: 1..64 pages of a group this CPU's stock holds enough of.
	 * One compare covers the page count, two rseq sections, a return;
	 * everything else is a tail call. */
	if (likely(g && nr_pages - 1 < STOCK_PAGES && !(flags & ~CHARGE_FLAGS) &&
	           mcg_percpu_use_rseq()) &&
	    likely(mcg_rseq_word_consume(stocks, key_of(g), nr_pages) == MCG_PCPU_OK))
		return 0;
	return charge_checked(g, nr_pages, flags);
}

bool mcg_group_uncharge_stocked(mcg_group_t *g, unsigned long nr)
{
	return !mcg_reclaim_state_current && nr <= STOCK_PAGES &&
	       mcg_pcpu_word_refill(stocks, key_of(g), nr, STOCK_PAGES) == MCG_PCPU_OK;
}

/*
 * An uncharge of @nr pages that this CPU's stock could not take.  @g's
 * entry is full: it keeps @nr, its pages go back (stock_trim()).  Else an
 * empty entry takes @g; else the parent's entry takes the pages, @g's own
 * counter giving them back (trimmed when full); else the plain counters.
 * An uncharge never evicts, as the kernel's uncharge of user pages never
 * stocks them: a thread that frees what others charged would otherwise
 * evict on every call.
 */
static void uncharge_miss(mcg_group_t *g, unsigned long nr)
{
	if (nr <= STOCK_PAGES) {
		mcg_group_t *p = g->parent;
		struct stock_look l = stock_look(key_of(g), p ? key_of(p) : NO_KEY);
		if (l.have < ENTRIES) {
			if (stock_trim(g, l.have, l.count, (uint32_t)nr))
				return;
		} else if (l.empty < ENTRIES) {
			stock_install(g, (uint32_t)nr, l.empty);
			return;
		} else if (l.up < ENTRIES) {
			if (mcg_pcpu_word_refill_at(stocks, l.up, key_of(p), nr, STOCK_PAGES) ==
			            MCG_PCPU_OK ||
			    stock_trim(p, l.up, l.up_count, (uint32_t)nr)) {
				mcg_page_counter_uncharge_upto(&g->memory, &p->memory, (long)nr);
				return;
			}
		}
	}
	mcg_page_counter_uncharge(&g->memory, (long)nr);
}

void mcg_group_uncharge_pages(mcg_group_t *g, unsigned long nr)
{
	/* Inside a shrinker: straight to the counters, counted as reclaimed. */
	struct mcg_reclaim_state *rs = mcg_reclaim_state_current;
	if (unlikely(rs)) {
		rs->reclaimed += nr;
		mcg_page_counter_uncharge(&g->memory, (long)nr);
		return;
	}
	if (mcg_group_uncharge_stocked(g, nr))
		return; /* locked mode's fast path, or the stock changed under us */
	uncharge_miss(g, nr);
}

/* Everything but the fast path: argument checks, the current group, then
 * the miss (rseq mode outside a shrinker, where mcg_uncharge() tried the
 * stock) or mcg_group_uncharge_pages(). */
static mcg_noinline int uncharge_checked(mcg_group_t *g, unsigned long nr_pages)
{
	if (nr_pages == 0 || nr_pages > CHARGE_MAX)
		return -EINVAL;
	if (g && mcg_percpu_use_rseq() && !mcg_reclaim_state_current) {
		uncharge_miss(g, nr_pages);
		return 0;
	}
	if (!g)
		g = mcg_group_current();
	mcg_group_uncharge_pages(g, nr_pages);
	return 0;
}

mcg_public int mcg_uncharge(mcg_group_t *g, unsigned long nr_pages)
{
	/* Fast path: back into this CPU's stock (not inside a shrinker, whose
	 * uncharges go straight to the counters: mcg_group_uncharge_pages()). */
	if (likely(g && nr_pages - 1 < STOCK_PAGES && mcg_percpu_use_rseq() &&
	           !mcg_reclaim_state_current) &&
	    likely(mcg_rseq_word_refill(stocks, key_of(g), nr_pages, STOCK_PAGES) == MCG_PCPU_OK))
		return 0;
	return uncharge_checked(g, nr_pages);
}

int mcg_group_charge_nostock(mcg_group_t *g, unsigned long nr_pages, unsigned flags)
{
	return charge_counters(g, nr_pages, flags);
}

void mcg_group_uncharge_nostock(mcg_group_t *g, unsigned long nr_pages)
{
	mcg_page_counter_uncharge(&g->memory, (long)nr_pages);
}
