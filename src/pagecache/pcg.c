/* SPDX-License-Identifier: MIT */
/*
 * pagecache/pcg.c - a group's page-cache state: creation, references, the
 * charge of each page, the per-CPU counters, reparenting at removal, the
 * memory.stat lines, and the hooks the group layer calls (see pcg.h).
 *
 * Charging follows group/objcg.c: the group is read and referenced under
 * the pcg's lock, charged with no lock held, and the page is counted in
 * whichever live pcg holds the group's pages by then; if the group was
 * removed meanwhile, the levels it left give the page back at once.
 *
 * Locks: the pcg's spin lock (MCG_RANK_PCG); creation publishes with a
 * compare-and-swap; reparenting takes the child's pcg lock, then the
 * parent's, and the lruvec and wb locks one at a time (lru.c, writeback.c).
 */
#include "pagecache/pcg.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/fault.h"
#include "base/log.h"
#include "base/options.h"
#include "memcg/kmalloc.h"
#include "os/os.h"
#include "pagecache/lru.h"
#include "pagecache/writeback.h"
#include "reclaim/shrinker.h"

static struct mcg_pcg *root_pcg;
static pthread_once_t pcg_once = PTHREAD_ONCE_INIT;

struct mcg_pcg *mcg_pcg_root(void) { return root_pcg; }

/* A new pcg for @g under @parent (referenced by the caller), or NULL. */
static struct mcg_pcg *pcg_alloc(mcg_group_t *g, struct mcg_pcg *parent)
{
	unsigned nodes = mcg_os_nr_nodes(), cpus = mcg_os_nr_cpus();
	/* A fault point for each allocation (each failure has its own
	 * clean-up), except the root's: it cannot fail. */
	bool may_fail = g->parent != NULL;
	struct mcg_pcg *p =
	        may_fail && mcg_fault_should_fail()
	                ? NULL
	                : mcg_aligned_alloc(MCG_CACHELINE,
	                                    sizeof(*p) + nodes * sizeof(struct mcg_lruvec));
	if (!p)
		return NULL;
	memset(p, 0, sizeof(*p));
	size_t pcpu_size = (size_t)cpus << MCG_PCPU_SHIFT;
	p->pcpu = may_fail && mcg_fault_should_fail()
	                  ? NULL
	                  : mcg_aligned_alloc(MCG_PCPU_STRIDE, pcpu_size);
	if (!p->pcpu) {
		mcg_free(p);
		return NULL;
	}
	memset(p->pcpu, 0, pcpu_size);
	mcg_spin_init(&p->lock, MCG_RANK_PCG);
	p->group = g;
	p->parent = parent;
	p->refcnt = 1; /* the group's pointer */
	p->nr_nodes = nodes;
	mcg_wb_init(&p->wb);
	for (unsigned n = 0; n < nodes; n++)
		mcg_lru_init(&p->lruvec[n], p, n);
	return p;
}

static void pcg_free(struct mcg_pcg *p)
{
	for (unsigned n = 0; n < p->nr_nodes; n++)
		mcg_lock_destroy(&p->lruvec[n].lock);
	mcg_lock_destroy(&p->wb.lock);
	mcg_free(p->pcpu);
	mcg_free(p);
}

void mcg_pcg_put(struct mcg_pcg *p)
{
	while (p) {
		long now = __atomic_sub_fetch(&p->refcnt, 1, __ATOMIC_ACQ_REL);
		MCG_BUG_ON(now < 0);
		if (now)
			return;
		MCG_BUG_ON(p == root_pcg);
		struct mcg_pcg *parent = p->parent, *fwd = p->fwd;
		pcg_free(p);
		if (fwd)
			mcg_pcg_put(fwd); /* the forward's reference (depth: the tree's) */
		p = parent;               /* then the child's reference to its parent */
	}
}

/* ------------------------------------------------------------ the group hooks */

static long file_pages(mcg_group_t *g)
{
	struct mcg_pcg *p = mcg_pcg_peek(g);
	return p ? mcg_pcg_read(p, MCG_PC_FILE) : 0;
}

static void stat_lines(mcg_group_t *g, char *buf, size_t len)
{
	struct mcg_pcg *p = mcg_pcg_peek(g);
	long v[MCG_PC_NR] = {0};
	for (int i = 0; p && i < MCG_PC_NR; i++)
		v[i] = mcg_pcg_read(p, (enum mcg_pc_item)i);
	const long pg = MCG_GROUP_PAGE_SIZE;
	/* The kernel's names and order (active_file ... file_writeback in
	 * bytes, then events); file_dirtied / file_written are vmstat's
	 * nr_dirtied / nr_written per group, dirty_throttled_ms is the time
	 * writers slept in balance_dirty_pages. */
	snprintf(buf, len,
	         "active_file %ld\ninactive_file %ld\nfile_dirty %ld\nfile_writeback %ld\n"
	         "pgactivate %ld\npgdeactivate %ld\nfile_dirtied %ld\nfile_written %ld\n"
	         "file_readahead %ld\nfile_writeback_errors %ld\ndirty_throttled_ms %ld\n",
	         v[MCG_PC_ACTIVE] * pg, v[MCG_PC_INACTIVE] * pg,
	         MCG_MAX(v[MCG_PC_DIRTY_WB] - v[MCG_PC_WRITEBACK], 0l) * pg,
	         v[MCG_PC_WRITEBACK] * pg, v[MCG_PC_ACTIVATE], v[MCG_PC_DEACTIVATE],
	         v[MCG_PC_DIRTIED], v[MCG_PC_WRITTEN], v[MCG_PC_READAHEAD], v[MCG_PC_WB_ERRORS],
	         v[MCG_PC_THROTTLED]);
}

/*
 * @g was taken offline: its pcg goes dead and forwards to its parent's.
 * Its pages' charges leave @g's own counter level (the ancestors keep
 * them) and count in the parent's pcg; its counters' values move up the
 * same way (the ancestors already hold them); its LRU lists and dirty
 * files are spliced into the parent's.
 */
static void offline(mcg_group_t *g)
{
	struct mcg_pcg *p = mcg_pcg_peek(g);
	if (!p)
		return;
	struct mcg_pcg *parent = mcg_pcg_resolve(p->parent);
	mcg_spin_lock(&p->lock);
	if (p->dead) { /* done already (a pcg created while its group went offline) */
		mcg_spin_unlock(&p->lock);
		return;
	}
	mcg_spin_lock(&parent->lock);
	long moved = p->nr_pages;
	p->nr_pages = 0;
	parent->nr_pages += moved;
	mcg_page_counter_cancel(&g->memory, moved);
	__atomic_store_n(&p->dead, 1, __ATOMIC_RELEASE);
	mcg_pcg_get(parent); /* the forward's */
	__atomic_store_n(&p->fwd, parent, __ATOMIC_RELEASE);
	mcg_spin_unlock(&parent->lock);
	mcg_spin_unlock(&p->lock);
	/* New operations now go to the parent; move what is on the lists. */
	mcg_lru_reparent(p, parent);
	mcg_wb_reparent(p, parent);
	/* The dead pcg's own counters read zero: its values stay in the
	 * ancestors, where the pages' later changes will be counted. */
	for (int i = 0; i < MCG_PC_NR; i++) {
		if (i == MCG_PC_DIRTIED || i == MCG_PC_WRITTEN || i == MCG_PC_ACTIVATE ||
		    i == MCG_PC_DEACTIVATE || i == MCG_PC_WB_ERRORS || i == MCG_PC_THROTTLED ||
		    i == MCG_PC_READAHEAD)
			continue; /* events: history stays where it happened */
		int64_t v = mcg_pcg_read_raw(p, (enum mcg_pc_item)i);
		if (v)
			mcg_pcpu_add(p->pcpu, (unsigned)i * 8, -v);
	}
}

static void release(mcg_group_t *g)
{
	struct mcg_pcg *p = __atomic_exchange_n(&g->pagecache, NULL, __ATOMIC_ACQ_REL);
	if (p)
		mcg_pcg_put(p);
}

static const struct mcg_group_file_ops file_ops = {
        .offline = offline,
        .release = release,
        .file_pages = file_pages,
        .stat = stat_lines,
};

static void pcg_init_once(void)
{
	mcg_group_t *root = mcg_group_root();
	root_pcg = pcg_alloc(root, NULL);
	/* mcg_die() aborts, and an aborted process writes no coverage. */
	if (!root_pcg)                                                /* GCOVR_EXCL_BR_LINE */
		mcg_die("no memory for the root group's page cache"); /* GCOVR_EXCL_LINE */
	root_pcg->refcnt++;                                           /* never freed */
	__atomic_store_n(&root->pagecache, root_pcg, __ATOMIC_RELEASE);
	mcg_group_set_file_ops(&file_ops);
}

void mcg_pcg_init(void) { pthread_once(&pcg_once, pcg_init_once); }

struct mcg_pcg *mcg_pcg_of(mcg_group_t *g)
{
	/* A group with a pcg (the root's once initialised): no more to do. */
	struct mcg_pcg *p = mcg_pcg_peek(g ? g : mcg_group_root());
	if (likely(p))
		return p;
	mcg_pcg_init();
	if (!g)
		return root_pcg;
	if ((p = mcg_pcg_peek(g)))
		return p;
	struct mcg_pcg *parent = mcg_pcg_of(g->parent);
	if (!parent)
		return NULL;
	/* Reclaim must find the group's pages: its reclaim info exists before
	 * the first page can be marked (list_lru does the same). */
	if (!mcg_reclaim_info_get(g))
		return NULL;
	p = pcg_alloc(g, parent);
	if (!p)
		return NULL;
	mcg_pcg_get(parent);
	void *old = NULL; /* g->pagecache's own type (clang checks it) */
	if (!__atomic_compare_exchange_n(&g->pagecache, &old, (void *)p, false, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE)) {
		mcg_pcg_put(parent);
		pcg_free(p);
		return (struct mcg_pcg *)old;
	}
	/* Created while its group went offline, perhaps after the hook ran:
	 * forward now (offline() does it once). */
	if (!mcg_group_is_online(g))
		offline(g);
	return p;
}

/* ------------------------------------------------------------ charges */

/* Lock the live pcg @p resolves to; return it locked. */
static struct mcg_pcg *lock_live(struct mcg_pcg *p)
{
	for (;;) {
		p = mcg_pcg_resolve(p);
		mcg_spin_lock(&p->lock);
		if (!p->dead)
			return p;
		mcg_spin_unlock(&p->lock);
	}
}

mcg_group_t *mcg_pcg_group_get(struct mcg_pcg *p, struct mcg_pcg **live)
{
	struct mcg_pcg *l = lock_live(p);
	mcg_group_t *g = l->group;
	mcg_group_get(g);
	mcg_spin_unlock(&l->lock);
	if (live)
		*live = l;
	return g;
}

struct mcg_pcg *mcg_pcg_charge_page(struct mcg_pcg *p, unsigned flags)
{
	mcg_group_t *g = mcg_pcg_group_get(p, NULL);
	int err = mcg_group_try_charge(g, 1, flags);
	if (err) {
		mcg_group_put(g);
		return NULL;
	}
	struct mcg_pcg *l = lock_live(p);
	/* Removed meanwhile: the levels it left do not keep the page. */
	for (mcg_group_t *a = g; a != l->group; a = a->parent)
		mcg_page_counter_cancel(&a->memory, 1);
	l->nr_pages++;
	mcg_pcg_get(l); /* the page's */
	mcg_spin_unlock(&l->lock);
	mcg_group_put(g);
	mcg_pcg_mod(l, MCG_PC_FILE, 1);
	return l;
}

long mcg_pcg_margin(struct mcg_pcg *p)
{
	mcg_group_t *g = mcg_pcg_group_get(p, NULL);
	long m = LONG_MAX;
	for (mcg_group_t *a = g; a; a = a->parent)
		m = MCG_MIN(m, mcg_page_counter_margin(&a->memory));
	mcg_group_put(g);
	return m;
}

void mcg_pcg_uncharge_page(struct mcg_pcg *p)
{
	struct mcg_pcg *l = lock_live(p);
	l->nr_pages--;
	MCG_BUG_ON(l->nr_pages < 0);
	mcg_group_t *g = l->group;
	mcg_pcg_mod(l, MCG_PC_FILE, -1);
	/* Into this CPU's stock while the lock keeps g; else the long way. */
	if (mcg_group_uncharge_stocked(g, 1)) {
		mcg_spin_unlock(&l->lock);
	} else {
		mcg_group_get(g);
		mcg_spin_unlock(&l->lock);
		mcg_group_uncharge_pages(g, 1);
		mcg_group_put(g);
	}
	mcg_pcg_put(p); /* the page's */
}

/* ------------------------------------------------------------ counters */

int64_t mcg_pcg_read_raw(const struct mcg_pcg *p, enum mcg_pc_item item)
{
	return mcg_pcpu_sum(p->pcpu, (unsigned)item * 8, mcg_os_nr_cpus());
}

long mcg_pcg_read(const struct mcg_pcg *p, enum mcg_pc_item item)
{
	int64_t v = mcg_pcg_read_raw(p, item);
	return v > 0 ? (long)v : 0;
}
