/* SPDX-License-Identifier: MIT */
/*
 * group/group.h - the memory group object, shared by the files of group/.
 *
 *   group.c  - the tree: create, remove, lookup, iteration, references,
 *              thread context
 *   stock.c  - the per-CPU charge stock; mcg_charge / mcg_uncharge
 *   stat.c   - per-CPU statistics flushed on read; memory events
 *   text.c   - the cgroup v2 files
 *
 * Lifetime: `refcnt` counts the tree's reference (while online), the
 * caller's references, each child's reference to its parent, and each CPU
 * stock caching the group.  At zero the group is unlinked from its parent's
 * `children` list (under the tree lock), its statistics are folded into the
 * parent, and it is freed.  Removed ("dying") groups stay on the list until
 * then, marked offline; lookups and iteration skip them.
 *
 * Lock: the tree lock (MCG_RANK_GROUP_TREE) protects every `children` and
 * `sibling` list, `online`, the names, nr_descendants/nr_dying_descendants
 * and stat_dead.  The counters, events and per-CPU stats are lockless.
 */
#ifndef MCG_GROUP_GROUP_H
#define MCG_GROUP_GROUP_H

#include "base/list.h"
#include "base/lock.h"
#include "percpu/pcpu_stack.h" /* MCG_PCPU_GATE_UNIT */
#include "percpu/pcpu_word.h"
#include "group/objcg.h"
#include "group/page_counter.h"
#include "memcg/group.h"

/*
 * memory.events, in the kernel's order.  The kernel's oom_group_kill has no
 * counterpart: memcg has no memory.oom.group (an OOM policy picks one
 * victim group and the application kills it; nothing kills a whole group).
 */
enum mcg_group_event {
	MCG_EVENT_LOW,
	MCG_EVENT_HIGH,
	MCG_EVENT_MAX,
	MCG_EVENT_OOM,
	MCG_EVENT_OOM_KILL,
	MCG_NR_EVENTS
};

/* memory.stat items: per-CPU counters, summed over the subtree on read. */
enum mcg_group_stat {
	MCG_STAT_CHARGE_FORCED, /* charges forced over max (MCG_CHARGE_FORCE) */
	/* Reclaim (reclaim/vmscan.c), counted on the group whose objects it was:
	 * objects scanned by shrinkers, pages uncharged by them; by kind.
	 * memory.stat also prints the sums "pgscan" and "pgsteal". */
	MCG_STAT_PGSCAN_DIRECT,
	MCG_STAT_PGSCAN_KSWAPD,
	MCG_STAT_PGSCAN_PROACTIVE,
	MCG_STAT_PGSTEAL_DIRECT,
	MCG_STAT_PGSTEAL_KSWAPD,
	MCG_STAT_PGSTEAL_PROACTIVE,
	MCG_STAT_THROTTLE_MS, /* milliseconds charges slept over memory.high */
	MCG_NR_STATS          /* at most MCG_PCPU_STRIDE / 8 */
};

struct mcg_reclaim_info; /* reclaim/shrinker.h */

struct mcg_group {
	struct mcg_page_counter memory; /* memory.current/min/low/high/max/peak */
	void *pcpu_stat; /* per-CPU blocks of MCG_NR_STATS int64 (percpu/pcpu_word.h) */
	struct mcg_group *parent;
	long refcnt;                      /* atomic */
	int online;                       /* 1 until removed (written under the tree lock) */
	unsigned long id;                 /* unique, never reused; root 0 */
	long events[MCG_NR_EVENTS];       /* hierarchical (atomic) */
	long events_local[MCG_NR_EVENTS]; /* this group only (atomic) */
	long nr_descendants;              /* online descendants (tree lock) */
	long nr_dying_descendants;        /* removed, still referenced (tree lock) */
	int64_t stat_dead[MCG_NR_STATS];  /* stats of freed descendants (tree lock) */
	struct mcg_list children;         /* children, oldest first, dying ones too */
	struct mcg_list sibling;          /* in parent->children */
	/* reclaim/: per-group lists and shrinker marks, allocated on first
	 * use (atomic pointer), freed at release through the reclaim ops. */
	struct mcg_reclaim_info *reclaim;
	/* group/objcg.h: this group's own objcgs (one per kind, for its whole
	 * life), and every objcg whose charges go here: its own while online,
	 * and those inherited from removed descendants (tree lock). */
	struct mcg_objcg *objcg[MCG_NR_OBJCG_KINDS];
	struct mcg_list objcgs;
	/* Groups of this subtree (itself included) marked for some shrinker,
	 * and the tree of such groups: a group is on its parent's pop_children
	 * while populated > 0, so the reclaim walk visits only them.  All three
	 * under reclaim/shrinker.c's populated lock (populated also read racily). */
	long populated;
	struct mcg_list pop_children;
	struct mcg_list pop_sibling;
	/* The shared reclaim cursor of walks targeting this group: the last
	 * group visited (referenced) and the walk's generation; protected by
	 * reclaim/vmscan.c's cursor lock. */
	struct mcg_group *reclaim_pos;
	unsigned long reclaim_gen;
	/* pagecache/: this group's page-cache state (struct mcg_pcg), created
	 * on first use (atomic pointer), released through the file ops. */
	void *pagecache;
	/* memory.dirty_ratio / dirty_background_ratio (percent) and
	 * memory.dirty_bytes / dirty_background_bytes: -1 follows the
	 * process-wide options; copied from the parent at creation; writing
	 * one zeroes its twin (atomic). */
	int dirty_ratio, dirty_background_ratio;
	long dirty_bytes, dirty_background_bytes;
	struct mcg_group *name_next; /* group/names.c's chain, while online (tree lock) */
	uint8_t name_len;            /* strlen(name) */
	char name[MCG_GROUP_NAME_MAX + 1];
};

/*
 * The reclaim layer's entry points, installed by mcg_reclaim_init(): the
 * group layer is below reclaim/ and calls up only through these.
 */
struct mcg_group_reclaim_ops {
	/* Reclaim about @nr_pages from @g's subtree (MCG_RECLAIM_* flags) because a
	 * charge or a write met its memory.max: the goal is at least min(32,
	 * max / 128) pages; pages reclaimed. */
	unsigned long (*reclaim)(mcg_group_t *g, unsigned long nr_pages, unsigned flags);
	/* OOM in @over for @nr_pages: true when the policy killed a victim (retry). */
	bool (*oom)(mcg_group_t *over, unsigned long nr_pages);
	/* A charge of @nr_pages left @g or an ancestor over memory.high. */
	void (*over_high)(mcg_group_t *g, unsigned long nr_pages, bool can_sleep);
	/* memory.reclaim: 0, -EAGAIN or -EINTR. */
	int (*proactive)(mcg_group_t *g, unsigned long nr_pages);
	/* @g was taken offline: hand its objects to its parent. */
	void (*offline)(mcg_group_t *g);
	/* @g is being freed: free g->reclaim. */
	void (*release)(mcg_group_t *g);
	/* Extra memory.stat lines of the root (global pressure: which sources
	 * are in use): write at most @len bytes, NUL-terminated. */
	void (*root_stat)(char *buf, size_t len);
	/* A charge reached the page counters; the root's usage is now
	 * @root_pages (global pressure wakes its reclaimer over the high
	 * watermark: kswapd's wakeup).  Any context, no lock taken. */
	void (*root_charged)(long root_pages);
};

/*
 * The page cache's entry points (pagecache/), installed when it starts:
 * the group layer is below it and calls up only through these.
 */
struct mcg_group_file_ops {
	/* @g was taken offline (after its objcgs moved): reparent its pages. */
	void (*offline)(mcg_group_t *g);
	/* @g is being freed: drop its page-cache state. */
	void (*release)(mcg_group_t *g);
	/* Pages of file data charged to @g's subtree (memory.stat "file"). */
	long (*file_pages)(mcg_group_t *g);
	/* @g's memory.stat lines of the page cache: at most @len bytes, NUL-terminated. */
	void (*stat)(mcg_group_t *g, char *buf, size_t len);
};

/** The installed file ops, NULL before the page cache starts (atomic pointer). */
extern const struct mcg_group_file_ops *mcg_group_file_ops;

/** mcg_group_set_file_ops - install @ops (once, when the page cache starts). */
void mcg_group_set_file_ops(const struct mcg_group_file_ops *ops);

/** mcg_group_file_ops_get - the installed file ops or NULL (acquire load). */
static inline const struct mcg_group_file_ops *mcg_group_file_ops_get(void)
{
	return __atomic_load_n(&mcg_group_file_ops, __ATOMIC_ACQUIRE);
}

/** The installed reclaim ops, NULL before mcg_reclaim_init() (atomic pointer). */
extern const struct mcg_group_reclaim_ops *mcg_group_reclaim_ops;

/** mcg_group_set_reclaim_ops - install @ops (once, from mcg_reclaim_init()). */
void mcg_group_set_reclaim_ops(const struct mcg_group_reclaim_ops *ops);

/** mcg_group_reclaim_ops_get - the installed reclaim ops or NULL (acquire load). */
static inline const struct mcg_group_reclaim_ops *mcg_group_reclaim_ops_get(void)
{
	return __atomic_load_n(&mcg_group_reclaim_ops, __ATOMIC_ACQUIRE);
}

/*
 * Reclaim state of this thread while it runs shrinkers (the kernel's
 * current->reclaim_state): uncharges go straight to the page counters and
 * are counted here, and charges do not recurse into reclaim.
 */
struct mcg_reclaim_state {
	unsigned long reclaimed; /* pages uncharged meanwhile */
};
extern mcg_tls struct mcg_reclaim_state *mcg_reclaim_state_current;

/**
 * The accounted free's gate: MCG_PCPU_GATE_UNIT times the threads in the
 * reclaim state now.  The accounted free's push (slab/cache_fast.h,
 * mcg_rseq_stack_push_gated()) fails while it is nonzero - no test of its
 * own on the fast path - and only then does the slow path look at its
 * own thread's state (slab/account.c): a thread's own increment is seen
 * by its own frees.  A forked child counts its one thread again
 * (slab/cache.c).  A thread that exits inside a shrinker stays counted:
 * every accounted free then takes the slow path, which is correct, only
 * slower.
 */
extern mcg_hidden uint32_t mcg_reclaim_gate_;

/** mcg_reclaim_state_set - enter (@rs) or leave (NULL) the reclaim state. */
static inline void mcg_reclaim_state_set(struct mcg_reclaim_state *rs)
{
	struct mcg_reclaim_state *prev = mcg_reclaim_state_current;
	mcg_reclaim_state_current = rs;
	if (!prev != !rs)
		__atomic_fetch_add(&mcg_reclaim_gate_,
		                   rs ? MCG_PCPU_GATE_UNIT : -MCG_PCPU_GATE_UNIT, __ATOMIC_RELAXED);
}

/** This thread's group as mcg_group_enter() set it (NULL: the root). */
extern mcg_tls mcg_group_t *mcg_current_group_;
/** Its objcgs by kind, set with it (NULL: the root). */
extern mcg_tls struct mcg_objcg *mcg_current_objcg_[MCG_NR_OBJCG_KINDS];
/** The slot_bits of those objcgs, the root's (MCG_ROOT_SLOT_BITS) when none:
 *  the accounted allocation's one load, with no test (slab/account.h). */
extern mcg_tls uint64_t mcg_current_slot_bits_[MCG_NR_OBJCG_KINDS];
/** The root's objcgs have ids 1, 2, 3 by kind (created first; group.c
 *  checks), so a thread's slot_bits start as the root's at no cost. */
#define MCG_ROOT_SLOT_BITS(kind) MCG_OBJCG_SLOT_BITS((kind) + 1)

/** mcg_objcg_of - @g's objcg of @kind (NULL: the current group's); no reference taken. */
static inline struct mcg_objcg *mcg_objcg_of(mcg_group_t *g, enum mcg_objcg_kind kind)
{
	if (!g)
		g = mcg_current_group_;
	if (unlikely(!g))
		g = mcg_group_root();
	return g->objcg[kind];
}

/** The tree lock (group.c). */
extern mcg_lock_t mcg_group_tree_lock;

/* group/names.c: online groups by (parent, name), tree lock held for all. */
/** mcg_group_names_find_locked - the online child of @parent named @name (@len bytes), or NULL. */
struct mcg_group *mcg_group_names_find_locked(const struct mcg_group *parent, const char *name,
                                              size_t len);
/** mcg_group_names_add_locked - index @g (online, parent and name set). */
void mcg_group_names_add_locked(struct mcg_group *g);
/** mcg_group_names_del_locked - take @g out of the index (it goes offline). */
void mcg_group_names_del_locked(struct mcg_group *g);

/** mcg_group_init - set up the root and the stocks once (idempotent). */
void mcg_group_init(void);

/*
 * Fork: the slab layer's pthread_atfork handlers (slab/cache.c) call these
 * in lock-rank order, so that a child finds every group lock free and every
 * list consistent: the stock drain lock before the cache list, the tree
 * lock after it, the leaves (every objcg's spin lock, every CPU's stock
 * words) after the page allocator.  No-ops until mcg_group_init() ran.
 */
void mcg_group_fork_lock_drain(void);
void mcg_group_fork_unlock_drain(void);
void mcg_group_fork_lock_tree(void);
void mcg_group_fork_unlock_tree(void);
void mcg_group_fork_lock_leaves(void);
void mcg_group_fork_unlock_leaves(void);
/** objcg.c's part of the leaves: every objcg's spin lock (tree lock held). */
void mcg_objcg_fork_lock_all(bool lock);
/** stock.c's part of the leaves: every CPU's page and byte stock words. */
void mcg_stock_fork_lock_all(bool lock);
/** stock.c's drain lock (before the cache list). */
void mcg_stock_fork_lock_drain(bool lock);

/** mcg_group_tryget - take a reference unless the count already reached 0. */
bool mcg_group_tryget(mcg_group_t *g);

/** mcg_group_of_counter - the group whose `memory` counter is @c. */
static inline mcg_group_t *mcg_group_of_counter(struct mcg_page_counter *c)
{
	return mcg_container_of(c, struct mcg_group, memory);
}

/* ---- stat.c ---- */

/** mcg_group_stat_alloc - per-CPU stat blocks for a new group (zeroed), or NULL. */
void *mcg_group_stat_alloc(void);
/** mcg_group_stat_free - free what mcg_group_stat_alloc() returned. */
void mcg_group_stat_free(void *pcpu_stat);

/** mcg_group_stat_mod - add @delta to stat @item of @g on this CPU (lockless). */
static inline void mcg_group_stat_mod(mcg_group_t *g, enum mcg_group_stat item, int64_t delta)
{
	mcg_pcpu_add(g->pcpu_stat, (unsigned)item * 8, delta);
}

/** mcg_group_stat_local - @g's own value of @item (all CPUs; racy while running). */
int64_t mcg_group_stat_local(const mcg_group_t *g, enum mcg_group_stat item);

/**
 * mcg_group_stat_flush - @g's hierarchical values of every item (own, live
 * and dying descendants, freed descendants) into @out[MCG_NR_STATS].
 * Takes the tree lock.
 */
void mcg_group_stat_flush(mcg_group_t *g, int64_t *out);

/** mcg_group_stat_fold_locked - add @g's totals to its parent's stat_dead (tree lock held). */
void mcg_group_stat_fold_locked(mcg_group_t *g);

/** mcg_group_event - count @ev on @g (.local) and on @g and every ancestor. */
void mcg_group_event(mcg_group_t *g, enum mcg_group_event ev);

/** mcg_group_event_read - @g's hierarchical (@local false) or local count of @ev. */
long mcg_group_event_read(const mcg_group_t *g, enum mcg_group_event ev, bool local);

/** mcg_group_event_name - "low", "high", "max", "oom", "oom_kill". */
const char *mcg_group_event_name(enum mcg_group_event ev);

/** mcg_group_stat_name - the memory.stat key of @item; *@bytes: printed in bytes. */
const char *mcg_group_stat_name(enum mcg_group_stat item, bool *bytes);

/* ---- stock.c ---- */

/*
 * A charge that misses the stock and finds neither its group's entry nor an
 * empty one evicts an entry (round robin) once in this many such misses,
 * per thread: for the group's parent, or for the group once the parent's
 * entry serves it; the others go through the parent's entry or charge only
 * their own pages (group/stock.c).
 */
#define MCG_GROUP_STOCK_EVICT_EVERY 64u

/** mcg_stock_init - allocate the per-CPU stocks (once, from mcg_group_init()). */
void mcg_stock_init(void);

/** mcg_stock_drain_group - drain the stocks that hold @g (all of them, at once). */
void mcg_stock_drain_group(mcg_group_t *g);

/**
 * mcg_stock_cached - pages the stocks hold for @g right now (racy snapshot,
 * for tests and the benchmark's drift figure).
 */
long mcg_stock_cached(const mcg_group_t *g);

/**
 * mcg_stock_cached_subtree - pages the stocks hold for @g and its
 * descendants (racy snapshot; exact at rest).  Takes the tree lock.
 */
long mcg_stock_cached_subtree(const mcg_group_t *g);

/**
 * mcg_group_try_charge - charge @nr pages to @g through the stock, with
 * mcg_charge()'s reclaim and OOM handling (MCG_CHARGE_* @flags) but no
 * statistics (the caller counts them).  Return 0 or -ENOMEM.
 */
int mcg_group_try_charge(mcg_group_t *g, unsigned long nr, unsigned flags);
/** mcg_group_uncharge_pages - the pair of mcg_group_try_charge(). */
void mcg_group_uncharge_pages(mcg_group_t *g, unsigned long nr);
/**
 * mcg_group_uncharge_stocked - mcg_group_uncharge_pages()'s fast path only:
 * @nr pages into this CPU's stock entry for @g, if it has one with room
 * and no shrinker runs.  Takes no lock but a leaf one (locked mode), so a
 * caller may hold its own; the caller's hold on @g is enough (no reference
 * taken).  False: nothing done.
 */
bool mcg_group_uncharge_stocked(mcg_group_t *g, unsigned long nr);

/**
 * mcg_stock_drain_words - stop every CPU's @words (@nbanks banks of them,
 * mcg_pcpu_word_bank()), fence, take their words (all, or those of key
 * @only when nonzero), restart them, and pass each taken word to @drain with
 * no lock held.
 */
void mcg_stock_drain_words(struct mcg_pcpu_word *words, unsigned nbanks, uint64_t only,
                           void (*drain)(uint64_t));

/** mcg_group_charge_nostock - mcg_charge() without the stock: the counters only (benchmarks). */
int mcg_group_charge_nostock(mcg_group_t *g, unsigned long nr_pages, unsigned flags);
/** mcg_group_uncharge_nostock - pair of mcg_group_charge_nostock(). */
void mcg_group_uncharge_nostock(mcg_group_t *g, unsigned long nr_pages);

/** mcg_group_reclaim_hook_call - call the reclaim hook on @over (0 when none). */
unsigned long mcg_group_reclaim_hook_call(mcg_group_t *over, unsigned long nr_pages);

#endif /* MCG_GROUP_GROUP_H */
