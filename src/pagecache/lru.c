/* SPDX-License-Identifier: MIT */
/*
 * pagecache/lru.c - the file LRU lists and the page cache's shrinker (see
 * lru.h for the moves and why).
 *
 * Reclaim isolates a batch from the inactive tail under the lruvec lock
 * (each page gets a reference and loses LRU), drops it, then decides page
 * by page under the page's mapping lock: a clean page that only the index
 * and reclaim hold leaves the index, and reclaim's reference is the last -
 * the page is freed and uncharged in the reclaiming thread, which is what
 * the reclaim driver counts.  Pages put back go to whichever lruvec holds
 * them now.
 *
 * Locks: lruvec (MCG_RANK_LRUVEC) inside the mapping lock (52 < 56), never
 * the other way: the scan drops the lruvec lock before it takes a mapping
 * lock.
 */
#include "pagecache/lru.h"

#include <errno.h>
#include <pthread.h>

#include "base/log.h"
#include "memcg/reclaim.h"
#include "pagecache/inode.h"
#include "pagecache/writeback.h"
#include "reclaim/shrinker.h"

static mcg_shrinker_t *shrinker;
static int shrinker_id = -1;

void mcg_lru_init(struct mcg_lruvec *lv, struct mcg_pcg *p, unsigned nid)
{
	mcg_lock_init(&lv->lock, MCG_RANK_LRUVEC);
	for (int l = 0; l < MCG_NR_LRU; l++) {
		mcg_list_init(&lv->lists[l]);
		lv->nr[l] = 0;
	}
	lv->dead = 0;
	lv->nid = nid;
	lv->pcg = p;
}

/*
 * The lruvec whose lists hold @page, locked.  Followed lruvec by lruvec from
 * the page's own pcg, not through mcg_pcg_resolve(): a removed group's pcg
 * forwards before its lists are spliced into the parent's, and until then
 * its pages are still on its own lists, under its own lock.  A lruvec is
 * dead once spliced (under its lock), and its pcg's forward was set before.
 */
struct mcg_lruvec *mcg_lru_lock_page(struct mcg_fpage *page)
{
	struct mcg_pcg *l = page->pcg;
	for (;;) {
		struct mcg_lruvec *lv = &l->lruvec[page->nid];
		mcg_lock(&lv->lock);
		if (!lv->dead)
			return lv;
		mcg_unlock(&lv->lock); /* spliced into the parent's */
		l = __atomic_load_n(&l->fwd, __ATOMIC_ACQUIRE);
	}
}

/* Mark @lv's group for the shrinker on its node (lruvec lock held, lv live). */
static void mark_group(struct mcg_lruvec *lv)
{
	struct mcg_pcg *p = lv->pcg;
	if (p == mcg_pcg_root() || shrinker_id < 0)
		return; /* the root's walk calls every shrinker */
	mcg_shrinker_mark(p->group, shrinker_id, mcg_shrinker_mark_nid(shrinker_id, lv->nid));
}

static void list_put(struct mcg_lruvec *lv, struct mcg_fpage *page, int l, bool tail)
{
	if (tail)
		mcg_list_add_tail(&page->lru, &lv->lists[l]);
	else
		mcg_list_add(&page->lru, &lv->lists[l]);
	MCG_WRITE_ONCE(lv->nr[l], lv->nr[l] + 1);
	mcg_pcg_mod(lv->pcg, l == MCG_LRU_ACTIVE ? MCG_PC_ACTIVE : MCG_PC_INACTIVE, 1);
}

static void list_take(struct mcg_lruvec *lv, struct mcg_fpage *page, int l)
{
	mcg_list_del(&page->lru);
	MCG_WRITE_ONCE(lv->nr[l], lv->nr[l] - 1);
	mcg_pcg_mod(lv->pcg, l == MCG_LRU_ACTIVE ? MCG_PC_ACTIVE : MCG_PC_INACTIVE, -1);
}

void mcg_lru_add(struct mcg_fpage *page)
{
	struct mcg_lruvec *lv = mcg_lru_lock_page(page);
	list_put(lv, page, MCG_LRU_INACTIVE, false);
	mcg_fpage_set(page, PG_LRU);
	mark_group(lv);
	mcg_unlock(&lv->lock);
}

void mcg_lru_del(struct mcg_fpage *page)
{
	if (!mcg_fpage_test(page, PG_LRU))
		return; /* isolated (reclaim has it) or never added */
	struct mcg_lruvec *lv = mcg_lru_lock_page(page);
	uint32_t f = mcg_fpage_flags(page);
	if (f & PG_LRU) {
		list_take(lv, page, (f & PG_ACTIVE) ? MCG_LRU_ACTIVE : MCG_LRU_INACTIVE);
		mcg_fpage_clear(page, PG_LRU | PG_ACTIVE);
	}
	mcg_unlock(&lv->lock);
}

void mcg_lru_mark_accessed(struct mcg_fpage *page)
{
	uint32_t f = mcg_fpage_flags(page);
	if (!(f & PG_REFERENCED)) {
		mcg_fpage_set(page, PG_REFERENCED);
		return;
	}
	if (f & PG_ACTIVE)
		return;
	/* Inactive and referenced: the second access activates it. */
	struct mcg_lruvec *lv = mcg_lru_lock_page(page);
	f = mcg_fpage_flags(page);
	if ((f & PG_LRU) && !(f & PG_ACTIVE)) {
		list_take(lv, page, MCG_LRU_INACTIVE);
		list_put(lv, page, MCG_LRU_ACTIVE, false);
		mcg_fpage_set(page, PG_ACTIVE);
		mcg_fpage_clear(page, PG_REFERENCED);
		mcg_pcg_mod(lv->pcg, MCG_PC_ACTIVATE, 1);
	}
	mcg_unlock(&lv->lock);
}

void mcg_lru_rotate_reclaimable(struct mcg_fpage *page)
{
	struct mcg_lruvec *lv = mcg_lru_lock_page(page);
	uint32_t f = mcg_fpage_flags(page);
	if ((f & PG_LRU) && !(f & PG_ACTIVE)) {
		list_take(lv, page, MCG_LRU_INACTIVE);
		list_put(lv, page, MCG_LRU_INACTIVE, true);
	}
	mcg_fpage_clear(page, PG_RECLAIM);
	mcg_unlock(&lv->lock);
}

/* Put an isolated @page back at the inactive head of the lruvec holding it now. */
static void putback(struct mcg_fpage *page)
{
	struct mcg_lruvec *lv = mcg_lru_lock_page(page);
	if (!mcg_fpage_test(page, PG_REMOVED)) { /* (removal is under the mapping lock) */
		list_put(lv, page, MCG_LRU_INACTIVE, false);
		mcg_fpage_set(page, PG_LRU);
		mark_group(lv);
	}
	mcg_unlock(&lv->lock);
}

/* Deactivate up to @nr pages while inactive < active (lruvec lock held). */
static void shrink_active_locked(struct mcg_lruvec *lv, unsigned long nr)
{
	while (nr-- && lv->nr[MCG_LRU_INACTIVE] < lv->nr[MCG_LRU_ACTIVE]) {
		struct mcg_fpage *page =
		        mcg_list_entry(lv->lists[MCG_LRU_ACTIVE].prev, struct mcg_fpage, lru);
		list_take(lv, page, MCG_LRU_ACTIVE);
		mcg_fpage_clear(page, PG_ACTIVE | PG_REFERENCED);
		list_put(lv, page, MCG_LRU_INACTIVE, false);
		mcg_pcg_mod(lv->pcg, MCG_PC_DEACTIVATE, 1);
	}
}

unsigned long mcg_lru_shrink(struct mcg_lruvec *lv, unsigned long nr_to_scan,
                             unsigned long *nr_dirty)
{
	struct mcg_list isolated;
	mcg_list_init(&isolated);
	*nr_dirty = 0;
	mcg_lock(&lv->lock);
	if (lv->dead) {
		mcg_unlock(&lv->lock);
		return 0;
	}
	shrink_active_locked(lv, nr_to_scan);
	for (unsigned long n = 0; n < nr_to_scan && !mcg_list_empty(&lv->lists[MCG_LRU_INACTIVE]);
	     n++) {
		struct mcg_fpage *page =
		        mcg_list_entry(lv->lists[MCG_LRU_INACTIVE].prev, struct mcg_fpage, lru);
		list_take(lv, page, MCG_LRU_INACTIVE);
		mcg_fpage_clear(page, PG_LRU);
		mcg_fpage_get(page); /* on a list, so in the index: refcnt >= 1 */
		mcg_list_add_tail(&page->lru, &isolated);
	}
	mcg_unlock(&lv->lock);

	unsigned long freed = 0;
	mcg_list_for_each_safe (pos, tmp, &isolated) {
		struct mcg_fpage *page = mcg_list_entry(pos, struct mcg_fpage, lru);
		struct mcg_inode *in = page->inode; /* the page's reference keeps it */
		mcg_list_del(&page->lru);
		struct mcg_list dispose;
		struct mcg_index_node *nodes = NULL;
		mcg_list_init(&dispose);
		bool back = false;
		mcg_lock(&in->lock);
		uint32_t f = mcg_fpage_flags(page);
		if (f & PG_REMOVED) {
			/* truncated meanwhile: ours is the last reference but one */
		} else if (f & (PG_DIRTY | PG_WRITEBACK)) {
			mcg_fpage_set(page, PG_RECLAIM);
			(*nr_dirty)++;
			back = true;
		} else if ((f & PG_LOCKED) ||
		           __atomic_load_n(&page->refcnt, __ATOMIC_ACQUIRE) != 2) {
			back = true; /* being read in, or in use */
		} else {
			mcg_inode_remove_locked(in, page, &dispose, &nodes);
		}
		mcg_unlock(&in->lock);
		mcg_index_free_nodes(nodes);
		mcg_fpage_dispose(&dispose); /* (empty: we hold a reference) */
		if (back) {
			putback(page);
			mcg_fpage_put(page);
			continue;
		}
		if (!(f & PG_REMOVED))
			freed++;
		mcg_fpage_put(page); /* the last: freed and uncharged here */
	}
	return freed;
}

/* ------------------------------------------------------------ the shrinker */

static unsigned long lru_count(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	struct mcg_pcg *p = mcg_pcg_peek(sc->group);
	if (!p || sc->nid >= p->nr_nodes)
		return MCG_SHRINK_EMPTY;
	struct mcg_lruvec *lv = &p->lruvec[sc->nid];
	long n = MCG_READ_ONCE(lv->nr[MCG_LRU_INACTIVE]) + MCG_READ_ONCE(lv->nr[MCG_LRU_ACTIVE]);
	return n > 0 ? (unsigned long)n : MCG_SHRINK_EMPTY;
}

static unsigned long lru_scan(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	struct mcg_pcg *p = mcg_pcg_peek(sc->group);
	if (!p || sc->nid >= p->nr_nodes)
		return 0;
	unsigned long dirty;
	unsigned long freed = mcg_lru_shrink(&p->lruvec[sc->nid], sc->nr_to_scan, &dirty);
	if (!freed && dirty) {
		/* Only dirty pages: have them written, and wait for some (bounded)
		 * rather than fail the charge that asked for memory. */
		mcg_wb_reclaim_wait(p, dirty, MCG_LRU_WAIT_MS);
	}
	return freed;
}

static pthread_once_t shrinker_once = PTHREAD_ONCE_INIT;
static int shrinker_err;

static void shrinker_init_once(void)
{
	mcg_shrinker_ops_t ops = {
	        .name = "pagecache",
	        .count_objects = lru_count,
	        .scan_objects = lru_scan,
	        .seeks = 4,  /* pressure = pages >> priority, the kernel's LRU scan */
	        .batch = 32, /* SWAP_CLUSTER_MAX */
	        .flags = MCG_SHRINKER_MEMCG_AWARE | MCG_SHRINKER_NUMA_AWARE,
	};
	shrinker_err = mcg_shrinker_create(&ops, &shrinker);
	if (shrinker_err)
		return;
	shrinker_id = shrinker->id;
	shrinker_err = mcg_shrinker_register(shrinker);
}

int mcg_lru_shrinker_init(void)
{
	pthread_once(&shrinker_once, shrinker_init_once);
	return shrinker_err;
}

/* ------------------------------------------------------------ reparenting */

void mcg_lru_reparent(struct mcg_pcg *child, struct mcg_pcg *parent)
{
	for (unsigned n = 0; n < child->nr_nodes; n++) {
		struct mcg_lruvec *c = &child->lruvec[n], *p = &parent->lruvec[n];
		mcg_lock(&c->lock); /* child before parent: equal ranks */
		mcg_lock(&p->lock);
		for (int l = 0; l < MCG_NR_LRU; l++) {
			mcg_list_splice_tail(&c->lists[l], &p->lists[l]);
			MCG_WRITE_ONCE(p->nr[l], p->nr[l] + c->nr[l]);
			MCG_WRITE_ONCE(c->nr[l], 0);
		}
		c->dead = 1;
		if (p->nr[MCG_LRU_INACTIVE] + p->nr[MCG_LRU_ACTIVE])
			mark_group(p);
		mcg_unlock(&p->lock);
		mcg_unlock(&c->lock);
	}
}
