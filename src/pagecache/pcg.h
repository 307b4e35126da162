/* SPDX-License-Identifier: MIT */
/*
 * pagecache/pcg.h - a group's page-cache state ("pcg"): what its file pages
 * are charged through, its per-CPU page-state counters, its file LRU on
 * every node, and its writeback domain.
 *
 *   pcg.c       - pcgs: creation, references, charging, counters,
 *                 reparenting, memory.stat lines, the group hooks
 *   lru.c       - the file LRU and its shrinker (lru.h)
 *   dirty.c     - dirty limits and writer throttling (dirty.h)
 *   writeback.c - writing dirty pages (writeback.h)
 *
 * A pcg is created for a group on first use (mcg_pcg_of()), its ancestors'
 * first.  Every page records the pcg it was charged through (page->pcg,
 * with a reference) and never changes it.  When the group is removed its
 * pcg becomes dead and forwards (`fwd`) to its parent's: its LRU lists and
 * dirty files are spliced into the parent's, the pages' charges are
 * cancelled from the removed group's own counter level (the ancestors keep
 * them) and counted in the parent's pcg - the objcg scheme (group/objcg.h)
 * applied to file pages.  mcg_pcg_resolve() follows `fwd` to the live pcg
 * that holds a page now; every operation on a page's accounting, LRU or
 * writeback goes there.  Nothing is lost and no page is touched.
 *
 * Counters are per CPU (percpu/pcpu_word.h: mcg_pcpu_add(), an rseq add) and
 * hierarchical: a change is added to the pcg and to every ancestor, so a
 * group's value (memory.stat, its dirty domain) is one sum over the CPUs,
 * with no lock and no walk of the subtree.  The root's are the process's.
 * With the option dirty_accounting 0, dirty/writeback/dirtied/written go to
 * the root only (a page records which way it was counted: PG_ACCT).
 * Readers clamp gauges at 0 (a sum read while CPUs update may be short).
 *
 * Lifetime: refcnt counts the group's pointer (dropped when the group is
 * freed), each page charged through it, each child pcg, a forward pointing
 * at it, each file whose writeback it was attached to, and transient users
 * (the flushers).  A live pcg's `group` is online: removal makes it dead
 * (under `lock`) before the tree drops its reference.
 *
 * Locks: `lock` (MCG_RANK_PCG, spin) guards dead and nr_pages, and keeps
 * `group` valid while held; each lruvec's lock (MCG_RANK_LRUVEC) its lists
 * (lru.h); wb.lock (MCG_RANK_WB) the domain's dirty files and rates.
 * Reparenting takes a child's lock before its parent's (equal ranks).
 */
#ifndef MCG_PAGECACHE_PCG_H
#define MCG_PAGECACHE_PCG_H

#include <stdbool.h>
#include <stdint.h>

#include "base/list.h"
#include "base/lock.h"
#include "percpu/pcpu_word.h"
#include "group/group.h"

/* The per-CPU counters of a pcg (8 bytes each, one MCG_PCPU_STRIDE block). */
enum mcg_pc_item {
	MCG_PC_FILE,       /* pages charged (memory.stat file) */
	MCG_PC_INACTIVE,   /* on an inactive list */
	MCG_PC_ACTIVE,     /* on an active list */
	MCG_PC_DIRTY_WB,   /* dirty + under writeback, what the limits count, in one
	                      counter so that a reader never counts a page twice as it
	                      moves (PG_ACCT: group levels; else the root only) */
	MCG_PC_WRITEBACK,  /* under writeback (likewise); dirty = DIRTY_WB - WRITEBACK */
	MCG_PC_DIRTIED,    /* pages that became dirty, cumulative: the dirty rate */
	MCG_PC_WRITTEN,    /* pages written back, cumulative: the write bandwidth */
	MCG_PC_ACTIVATE,   /* pgactivate */
	MCG_PC_DEACTIVATE, /* pgdeactivate */
	MCG_PC_WB_ERRORS,  /* pages whose writeback failed (kept dirty, retried) */
	MCG_PC_THROTTLED,  /* milliseconds writers slept in balance_dirty_pages */
	MCG_PC_READAHEAD,  /* pages read ahead */
	MCG_PC_NR
};
_Static_assert(MCG_PC_NR * 8 <= MCG_PCPU_STRIDE, "counters fit one per-CPU block");

/* Which lists of an lruvec. */
enum { MCG_LRU_INACTIVE, MCG_LRU_ACTIVE, MCG_NR_LRU };

struct mcg_pcg;

/* One group's file LRU on one node (the kernel's lruvec, file lists only). */
struct mcg_lruvec {
	mcg_lock_t lock;                   /* MCG_RANK_LRUVEC */
	struct mcg_list lists[MCG_NR_LRU]; /* head: most recent; tail: reclaimed first */
	long nr[MCG_NR_LRU];               /* pages on each (lock; read racily) */
	int dead;                          /* spliced into the parent's (lock) */
	unsigned nid;
	struct mcg_pcg *pcg;
} mcg_cacheline_aligned;

/* A group's writeback domain (the kernel's bdi_writeback of a memcg). */
struct mcg_wb {
	mcg_lock_t lock;       /* MCG_RANK_WB: files, dead, and the rates below */
	struct mcg_list files; /* files attached here with dirty pages, oldest dirtied first */
	long nr_files;         /* on files (written under the lock, read racily) */
	int dead;              /* spliced into the parent's (written under the lock, read racily) */
	/* The flusher's (flusher.c, its lock): */
	struct mcg_list work_link;  /* on the work list while work is queued */
	struct mcg_list dirty_link; /* on the list of domains with dirty files */
	unsigned work;              /* MCG_WB_WORK_* queued */
	bool busy;                  /* a flusher works on it now */
	/* Rates (dirty.c), in pages per second, updated every 200 ms under
	 * the lock and read racily by writers: */
	uint64_t bw_time_stamp;            /* ms of the last update (0: never) */
	long dirtied_stamp, written_stamp; /* MCG_PC_DIRTIED / WRITTEN then */
	unsigned long write_bw;            /* measured write bandwidth */
	unsigned long avg_write_bw;        /* write_bw smoothed once more */
	unsigned long dirty_ratelimit;     /* the rate a writer is given at the setpoint */
	unsigned long balanced_dirty_ratelimit;
	unsigned long dirty_limit; /* the domain's limit following thresh down slowly */
	int dirty_exceeded;        /* dirty was above thresh at the last check */
};

struct mcg_pcg {
	mcg_spin_t lock;        /* MCG_RANK_PCG */
	int dead;               /* its group was removed (lock; read racily) */
	mcg_group_t *group;     /* valid while !dead, or under lock */
	struct mcg_pcg *parent; /* the parent group's pcg (referenced); NULL: the root */
	struct mcg_pcg *fwd;    /* atomic: after removal, the pcg its pages went to */
	long refcnt;            /* atomic */
	long nr_pages;          /* pages charged at group's level through this pcg (lock) */
	void *pcpu;             /* per-CPU counters: MCG_PC_NR int64 per CPU block */
	struct mcg_wb wb;
	unsigned nr_nodes;
	struct mcg_lruvec lruvec[]; /* one per node */
};

/** mcg_pcg_init - create the root's pcg and install the group hooks (idempotent). */
void mcg_pcg_init(void);

/** mcg_pcg_root - the root group's pcg (after mcg_pcg_init()). */
struct mcg_pcg *mcg_pcg_root(void);

/**
 * mcg_pcg_of - @g's pcg (NULL: the root's), created with its ancestors' on
 * first use; no reference taken (the group's pointer holds it while @g is
 * referenced).  Return: the pcg, or NULL (-ENOMEM: fault injected or no
 * memory).  No lock held.
 */
struct mcg_pcg *mcg_pcg_of(mcg_group_t *g);

/** mcg_pcg_peek - @g's pcg if it has one, else NULL. */
static inline struct mcg_pcg *mcg_pcg_peek(const mcg_group_t *g)
{
	return __atomic_load_n(&g->pagecache, __ATOMIC_ACQUIRE);
}

/** mcg_pcg_resolve - the live pcg that holds @p's pages now (@p itself unless removed). */
static inline struct mcg_pcg *mcg_pcg_resolve(struct mcg_pcg *p)
{
	struct mcg_pcg *f;
	while ((f = __atomic_load_n(&p->fwd, __ATOMIC_ACQUIRE)))
		p = f;
	return p;
}

/** mcg_pcg_get - take a reference to @p (one the caller already has or a holder keeps). */
static inline void mcg_pcg_get(struct mcg_pcg *p)
{
	__atomic_fetch_add(&p->refcnt, 1, __ATOMIC_RELAXED);
}

/** mcg_pcg_put - drop a reference; the last frees @p.  No lock held above MCG_RANK_PAGE. */
void mcg_pcg_put(struct mcg_pcg *p);

/**
 * mcg_pcg_group_get - the group of the live pcg @p resolves to, with a
 * reference (mcg_group_put()); *@live gets that pcg.
 */
mcg_group_t *mcg_pcg_group_get(struct mcg_pcg *p, struct mcg_pcg **live);

/**
 * mcg_pcg_charge_page - charge one page to the group of @p (resolved),
 * with reclaim and OOM as mcg_charge() (MCG_CHARGE_* @flags), and count it
 * (MCG_PC_FILE).  Return: the live pcg it is charged through, with a
 * reference for the page; or NULL (-ENOMEM).  No lock held.
 */
struct mcg_pcg *mcg_pcg_charge_page(struct mcg_pcg *p, unsigned flags);

/**
 * mcg_pcg_margin - pages that @p's group could be charged now without
 * reaching memory.max at any level (a racy snapshot).
 */
long mcg_pcg_margin(struct mcg_pcg *p);

/** mcg_pcg_uncharge_page - the pair of mcg_pcg_charge_page() for a page charged through @p. */
void mcg_pcg_uncharge_page(struct mcg_pcg *p);

/** mcg_pcg_mod - add @delta to @item of @p and every ancestor (this CPU; no lock). */
static inline void mcg_pcg_mod(struct mcg_pcg *p, enum mcg_pc_item item, int64_t delta)
{
	for (; p; p = p->parent)
		mcg_pcpu_add(p->pcpu, (unsigned)item * 8, delta);
}

/** mcg_pcg_read - @p's value of @item (hierarchical): a racy sum, gauges clamped at 0. */
long mcg_pcg_read(const struct mcg_pcg *p, enum mcg_pc_item item);

/** mcg_pcg_read_raw - the sum as it is (for tests of exactness at rest). */
int64_t mcg_pcg_read_raw(const struct mcg_pcg *p, enum mcg_pc_item item);

/**
 * mcg_pcg_dirty_target - where a page's dirty and writeback counts go: the
 * page's live pcg (@acct) or the root's.
 */
static inline struct mcg_pcg *mcg_pcg_dirty_target(struct mcg_pcg *live, bool acct)
{
	return acct ? live : mcg_pcg_root();
}

/* lru.h (lru.c): called by pcg.c at reparenting and release. */
void mcg_lru_reparent(struct mcg_pcg *child, struct mcg_pcg *parent);
void mcg_lru_init(struct mcg_lruvec *lv, struct mcg_pcg *p, unsigned nid);
/* writeback.h (writeback.c): move @child's dirty files to @parent's domain. */
void mcg_wb_reparent(struct mcg_pcg *child, struct mcg_pcg *parent);
/* dirty.h (dirty.c): a new domain's initial rates. */
void mcg_wb_init(struct mcg_wb *wb);

#endif /* MCG_PAGECACHE_PCG_H */
