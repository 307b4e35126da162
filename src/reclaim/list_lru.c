/* SPDX-License-Identifier: MIT */
/*
 * reclaim/list_lru.c - LRU lists of droppable objects, one per NUMA node
 * per group (memcg-aware) or one per node (not).
 *
 * A memcg-aware list_lru's lists of group g live in g's reclaim info,
 * chunk[id / 64]->lru[id % 64] (reclaim/shrinker.h), allocated on the first
 * add for g together with those of every ancestor (so reparenting never
 * allocates).  The list that gets a group's first object marks the group
 * for the shrinker (bit `id` of its map).
 *
 * Reparenting: when g goes offline its lists are spliced into its parent's
 * and marked dead (nr_items = -1); add and del on a dead list go to the
 * parent's (and further up if that one died too).  A list allocated for a
 * group that already went offline (info->dead) is reparented by its
 * allocator.
 *
 * Invariants: nr_items = the items on the list (>= 0), or -1 when dead
 * (then the list is empty).  An item is on at most one list.
 *
 * Locks: one per list (MCG_RANK_LRU); reparenting takes the child's, then
 * the parent's.  Isolate callbacks run under the list's lock.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "base/fault.h"
#include "base/log.h"
#include "memcg/kmalloc.h"
#include "os/os.h"
#include "reclaim/shrinker.h"

struct mcg_list_lru_one {
	mcg_lock_t lock;
	mcg_lru_link_t head;
	long nr_items; /* -1: dead (reparented) */
};

struct mcg_lru_memcg {
	unsigned nr_nodes;
	struct mcg_list_lru_one node[];
};

struct mcg_list_lru {
	int id;
	bool memcg_aware;
	bool numa_aware;              /* its shrinker is: asked per node, else on node 0 for all */
	bool own_id;                  /* created without a shrinker */
	struct mcg_lru_memcg *global; /* !memcg_aware: the lists */
};

/* nr_items changes under the list's lock, and is read racily by counts. */
static inline void nr_add(struct mcg_list_lru_one *l, long d)
{
	__atomic_store_n(&l->nr_items, l->nr_items + d, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------ link helpers */

static inline void link_del(mcg_lru_link_t *n)
{
	n->next->prev = n->prev;
	n->prev->next = n->next;
	n->next = n->prev = n;
}

static inline void link_add_tail(mcg_lru_link_t *n, mcg_lru_link_t *h)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static void link_splice_tail(mcg_lru_link_t *from, mcg_lru_link_t *to)
{
	if (from->next == from)
		return;
	mcg_lru_link_t *first = from->next, *last = from->prev;
	first->prev = to->prev;
	to->prev->next = first;
	last->next = to;
	to->prev = last;
	from->next = from->prev = from;
}

/* ------------------------------------------------------------ lists */

static struct mcg_lru_memcg *lists_alloc(void)
{
	unsigned n = mcg_os_nr_nodes();
	struct mcg_lru_memcg *m =
	        mcg_fault_should_fail() ? NULL : mcg_calloc(1, sizeof(*m) + n * sizeof(m->node[0]));
	if (!m)
		return NULL;
	m->nr_nodes = n;
	for (unsigned i = 0; i < n; i++) {
		mcg_lock_init(&m->node[i].lock, MCG_RANK_LRU);
		m->node[i].head.next = m->node[i].head.prev = &m->node[i].head;
	}
	return m;
}

void mcg_list_lru_free_group(struct mcg_lru_memcg *m)
{
	for (unsigned i = 0; i < m->nr_nodes; i++)
		mcg_lock_destroy(&m->node[i].lock);
	mcg_free(m);
}

/* @g's lists of @lru, or NULL if never allocated. */
static struct mcg_lru_memcg *lists_peek(const mcg_list_lru_t *lru, const mcg_group_t *g)
{
	if (!lru->memcg_aware)
		return lru->global;
	struct mcg_reclaim_info *info = mcg_reclaim_info_peek(g);
	struct mcg_reclaim_chunk *c = info ? mcg_reclaim_chunk_peek(info, lru->id) : NULL;
	return c ? __atomic_load_n(&c->lru[lru->id % MCG_IDS_PER_CHUNK], __ATOMIC_ACQUIRE) : NULL;
}

static void reparent_lists(mcg_list_lru_t *lru, struct mcg_lru_memcg *m, mcg_group_t *g);

/* @g's lists of @lru, allocated (with its ancestors' first) if needed; NULL: -ENOMEM. */
static struct mcg_lru_memcg *lists_get(mcg_list_lru_t *lru, mcg_group_t *g)
{
	struct mcg_lru_memcg *m = lists_peek(lru, g);
	if (likely(m))
		return m;
	if (g->parent && !lists_get(lru, g->parent))
		return NULL;
	struct mcg_reclaim_info *info = mcg_reclaim_info_get(g);
	struct mcg_reclaim_chunk *c = info ? mcg_reclaim_chunk_get(info, lru->id) : NULL;
	if (!c || !(m = lists_alloc()))
		return NULL;
	struct mcg_lru_memcg *old = NULL;
	if (!__atomic_compare_exchange_n(&c->lru[lru->id % MCG_IDS_PER_CHUNK], &old, m, false,
	                                 __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE)) {
		mcg_list_lru_free_group(m);
		return old;
	}
	/*
	 * Raced with the group's removal?  Then these lists die at once.
	 * mcg_group_remove() clears `online` (seq_cst) before its offline
	 * hook looks for lists: either it sees ours, or we see it offline
	 * (reparenting twice is harmless: a dead list is skipped).
	 */
	if (__atomic_load_n(&info->dead, __ATOMIC_SEQ_CST) ||
	    !__atomic_load_n(&g->online, __ATOMIC_SEQ_CST))
		reparent_lists(lru, m, g);
	return m;
}

/*
 * Lock the live list of @g (or its nearest ancestor whose list is alive)
 * on @nid; *@owner gets that group.  @alloc: allocate missing lists.
 * Return: the locked list, or NULL (none: not allocated, or -ENOMEM).
 */
static struct mcg_list_lru_one *lock_live(mcg_list_lru_t *lru, mcg_group_t *g, unsigned nid,
                                          bool alloc, mcg_group_t **owner)
{
	for (; g; g = g->parent) {
		struct mcg_lru_memcg *m = alloc ? lists_get(lru, g) : lists_peek(lru, g);
		if (!m)
			return NULL;
		struct mcg_list_lru_one *l = &m->node[nid];
		mcg_lock(&l->lock);
		if (l->nr_items >= 0) {
			*owner = g;
			return l;
		}
		mcg_unlock(&l->lock); /* dead: its items went to the parent */
		if (!lru->memcg_aware)
			return NULL;
	}
	return NULL;
}

/* Splice @g's lists @m into its parent's and mark them dead. */
static void reparent_lists(mcg_list_lru_t *lru, struct mcg_lru_memcg *m, mcg_group_t *g)
{
	for (unsigned nid = 0; nid < m->nr_nodes; nid++) {
		struct mcg_list_lru_one *l = &m->node[nid];
		mcg_lock(&l->lock);
		if (l->nr_items < 0) {
			mcg_unlock(&l->lock);
			continue;
		}
		mcg_group_t *owner = NULL;
		struct mcg_list_lru_one *p = NULL;
		if (l->nr_items > 0)
			p = lock_live(lru, g->parent, nid, false, &owner);
		if (p) {
			link_splice_tail(&l->head, &p->head);
			if (p->nr_items == 0)
				mcg_shrinker_mark(owner, lru->id,
				                  mcg_shrinker_mark_nid(lru->id, nid));
			nr_add(p, l->nr_items);
			mcg_unlock(&p->lock);
		} else if (l->nr_items > 0) {
			mcg_log("list_lru: %ld objects of a removed group have no live parent list",
			        l->nr_items);
		}
		__atomic_store_n(&l->nr_items, -1, __ATOMIC_RELAXED);
		mcg_unlock(&l->lock);
	}
}

void mcg_list_lru_reparent(mcg_group_t *g)
{
	/* No allocation here: without an info the group has no lists, and a
	 * list allocated later sees the group offline and dies itself. */
	struct mcg_reclaim_info *info = mcg_reclaim_info_peek(g);
	if (!info)
		return;
	__atomic_store_n(&info->dead, 1, __ATOMIC_SEQ_CST);
	for (int k = 0; k < MCG_NR_CHUNKS; k++) {
		struct mcg_reclaim_chunk *c = __atomic_load_n(&info->chunks[k], __ATOMIC_SEQ_CST);
		if (!c)
			continue;
		for (int i = 0; i < MCG_IDS_PER_CHUNK; i++) {
			struct mcg_lru_memcg *m = __atomic_load_n(&c->lru[i], __ATOMIC_SEQ_CST);
			if (m) {
				/* Only the id is needed; a stack list_lru stands for it. */
				mcg_list_lru_t tmp = {.id = k * MCG_IDS_PER_CHUNK + i,
				                      .memcg_aware = true};
				reparent_lists(&tmp, m, g);
			}
		}
	}
}

/* ------------------------------------------------------------ API */

mcg_public int mcg_list_lru_create(mcg_shrinker_t *shrinker, mcg_list_lru_t **out)
{
	mcg_reclaim_init();
	if (!out)
		return -EINVAL;
	struct mcg_list_lru *lru = mcg_fault_should_fail() ? NULL : mcg_calloc(1, sizeof(*lru));
	if (!lru)
		return -ENOMEM;
	lru->memcg_aware = shrinker && (shrinker->ops.flags & MCG_SHRINKER_MEMCG_AWARE);
	lru->numa_aware = !shrinker || (shrinker->ops.flags & MCG_SHRINKER_NUMA_AWARE);
	if (shrinker) {
		lru->id = shrinker->id;
	} else {
		lru->id = mcg_shrinker_id_alloc();
		lru->own_id = true;
		if (lru->id < 0) {
			int err = lru->id;
			mcg_free(lru);
			return err;
		}
	}
	if (!lru->memcg_aware && !(lru->global = lists_alloc())) {
		if (lru->own_id)
			mcg_shrinker_id_free(lru->id);
		mcg_free(lru);
		return -ENOMEM;
	}
	*out = lru;
	return 0;
}

/* Free @lru's lists in every group of @g's subtree, clear its deferred work (tree lock held). */
static void destroy_subtree_locked(mcg_list_lru_t *lru, mcg_group_t *g)
{
	struct mcg_reclaim_info *info = mcg_reclaim_info_peek(g);
	struct mcg_reclaim_chunk *c = info ? mcg_reclaim_chunk_peek(info, lru->id) : NULL;
	if (c) {
		int i = lru->id % MCG_IDS_PER_CHUNK;
		struct mcg_lru_memcg *m = __atomic_exchange_n(&c->lru[i], NULL, __ATOMIC_ACQ_REL);
		if (m)
			mcg_list_lru_free_group(m);
		unsigned n = mcg_os_nr_nodes();
		for (unsigned nid = 0; nid < n; nid++)
			__atomic_store_n(&c->deferred[i * n + nid], 0, __ATOMIC_RELAXED);
	}
	mcg_list_for_each (pos, &g->children)
		destroy_subtree_locked(lru, mcg_list_entry(pos, struct mcg_group, sibling));
}

mcg_public void mcg_list_lru_destroy(mcg_list_lru_t *lru)
{
	if (!lru)
		return;
	if (lru->memcg_aware) {
		mcg_lock(&mcg_group_tree_lock);
		destroy_subtree_locked(lru, mcg_group_root());
		mcg_unlock(&mcg_group_tree_lock);
	} else {
		mcg_list_lru_free_group(lru->global);
	}
	if (lru->own_id)
		mcg_shrinker_id_free(lru->id);
	mcg_free(lru);
}

mcg_public int mcg_list_lru_add(mcg_list_lru_t *lru, mcg_lru_link_t *item, unsigned nid,
                                mcg_group_t *group)
{
	if (!lru || !item || nid >= mcg_os_nr_nodes())
		return -EINVAL;
	if (!group)
		group = mcg_group_current();
	mcg_group_t *owner;
	struct mcg_list_lru_one *l = lock_live(lru, group, nid, true, &owner);
	if (!l)
		return -ENOMEM;
	int ret = 0;
	if (item->next == item || item->next == NULL) {
		link_add_tail(item, &l->head);
		nr_add(l, 1);
		if (l->nr_items == 1 && lru->memcg_aware)
			mcg_shrinker_mark(owner, lru->id, lru->numa_aware ? nid : 0);
		ret = 1;
	}
	mcg_unlock(&l->lock);
	return ret;
}

mcg_public int mcg_list_lru_del(mcg_list_lru_t *lru, mcg_lru_link_t *item, unsigned nid,
                                mcg_group_t *group)
{
	if (!lru || !item || nid >= mcg_os_nr_nodes())
		return 0;
	if (!group)
		group = mcg_group_current();
	mcg_group_t *owner;
	struct mcg_list_lru_one *l = lock_live(lru, group, nid, false, &owner);
	if (!l)
		return 0;
	int ret = 0;
	if (item->next != item && item->next != NULL) {
		link_del(item);
		nr_add(l, -1);
		ret = 1;
	}
	mcg_unlock(&l->lock);
	return ret;
}

mcg_public unsigned long mcg_list_lru_count_one(mcg_list_lru_t *lru, unsigned nid,
                                                mcg_group_t *group)
{
	if (!lru || nid >= mcg_os_nr_nodes())
		return 0;
	if (!group)
		group = mcg_group_current();
	struct mcg_lru_memcg *m = lists_peek(lru, group);
	if (!m)
		return 0;
	long n = __atomic_load_n(&m->node[nid].nr_items, __ATOMIC_RELAXED);
	return n > 0 ? (unsigned long)n : 0;
}

static unsigned long count_subtree_locked(mcg_list_lru_t *lru, mcg_group_t *g, unsigned nid)
{
	unsigned long sum = mcg_list_lru_count_one(lru, nid, g);
	mcg_list_for_each (pos, &g->children)
		sum += count_subtree_locked(lru, mcg_list_entry(pos, struct mcg_group, sibling),
		                            nid);
	return sum;
}

mcg_public unsigned long mcg_list_lru_count_node(mcg_list_lru_t *lru, unsigned nid)
{
	if (!lru || nid >= mcg_os_nr_nodes())
		return 0;
	if (!lru->memcg_aware)
		return mcg_list_lru_count_one(lru, nid, NULL);
	mcg_lock(&mcg_group_tree_lock);
	unsigned long n = count_subtree_locked(lru, mcg_group_root(), nid);
	mcg_unlock(&mcg_group_tree_lock);
	return n;
}

mcg_public unsigned long mcg_list_lru_count(mcg_list_lru_t *lru)
{
	unsigned long n = 0;
	for (unsigned nid = 0; nid < mcg_os_nr_nodes(); nid++)
		n += mcg_list_lru_count_node(lru, nid);
	return n;
}

mcg_public void mcg_list_lru_isolate(mcg_list_lru_one_t *list, mcg_lru_link_t *item)
{
	link_del(item);
	nr_add(list, -1);
}

mcg_public void mcg_list_lru_isolate_move(mcg_list_lru_one_t *list, mcg_lru_link_t *item,
                                          mcg_lru_link_t *dispose)
{
	link_del(item);
	nr_add(list, -1);
	if (dispose->next == NULL)
		dispose->next = dispose->prev = dispose;
	link_add_tail(item, dispose);
}

mcg_public void mcg_list_lru_one_unlock(mcg_list_lru_one_t *list) { mcg_unlock(&list->lock); }

mcg_public void mcg_list_lru_one_lock(mcg_list_lru_one_t *list) { mcg_lock(&list->lock); }

/* Walk one locked list (the kernel's __list_lru_walk_one). */
static unsigned long walk_list(struct mcg_list_lru_one *l, mcg_lru_isolate_fn isolate, void *arg,
                               unsigned long *nr_to_walk)
{
	unsigned long isolated = 0;
restart:
	for (mcg_lru_link_t *pos = l->head.next, *next; pos != &l->head; pos = next) {
		if (!*nr_to_walk)
			break;
		--*nr_to_walk;
		next = pos->next;
		switch (isolate(pos, l, arg)) {
		case MCG_LRU_REMOVED: isolated++; break;
		case MCG_LRU_REMOVED_RETRY: isolated++; goto restart;
		case MCG_LRU_ROTATE:
			link_del(pos);
			link_add_tail(pos, &l->head);
			break;
		case MCG_LRU_SKIP: break;
		case MCG_LRU_RETRY: goto restart;
		case MCG_LRU_STOP: return isolated;
		}
	}
	return isolated;
}

mcg_public unsigned long mcg_list_lru_walk_one(mcg_list_lru_t *lru, unsigned nid,
                                               mcg_group_t *group, mcg_lru_isolate_fn isolate,
                                               void *arg, unsigned long *nr_to_walk)
{
	if (!lru || !isolate || !nr_to_walk || nid >= mcg_os_nr_nodes())
		return 0;
	if (!group)
		group = mcg_group_current();
	struct mcg_lru_memcg *m = lists_peek(lru, group);
	if (!m)
		return 0;
	struct mcg_list_lru_one *l = &m->node[nid];
	mcg_lock(&l->lock);
	unsigned long n = l->nr_items > 0 ? walk_list(l, isolate, arg, nr_to_walk) : 0;
	mcg_unlock(&l->lock);
	return n;
}

/*
 * The group after @pos in pre-order over the whole tree (@pos NULL: the
 * root), referenced, or NULL at the end; drops the reference on @pos.  A
 * referenced group stays linked to its parent, so the walk needs no
 * allocation (it runs at teardown, when memory may be short).
 */
static mcg_group_t *walk_next(mcg_group_t *pos)
{
	mcg_group_t *next = NULL, *g = pos;
	mcg_lock(&mcg_group_tree_lock);
	if (!g) {
		next = mcg_group_root();
		if (!mcg_group_tryget(next))
			next = NULL;
		goto out;
	}
	bool descend = true;
	for (;;) {
		if (descend && !mcg_list_empty(&g->children)) {
			next = mcg_list_entry(g->children.next, struct mcg_group, sibling);
		} else {
			next = NULL;
			while (g->parent) {
				if (g->sibling.next != &g->parent->children) {
					next = mcg_list_entry(g->sibling.next, struct mcg_group,
					                      sibling);
					break;
				}
				g = g->parent;
			}
		}
		if (!next || mcg_group_tryget(next))
			break;
		g = next; /* being freed (its subtree is empty): go on after it */
		descend = false;
	}
out:
	mcg_unlock(&mcg_group_tree_lock);
	if (pos)
		mcg_group_put(pos);
	return next;
}

mcg_public unsigned long mcg_list_lru_walk(mcg_list_lru_t *lru, mcg_lru_isolate_fn isolate,
                                           void *arg, unsigned long nr_to_walk)
{
	if (!lru || !isolate)
		return 0;
	unsigned long isolated = 0;
	unsigned nodes = mcg_os_nr_nodes();
	if (!lru->memcg_aware) {
		for (unsigned nid = 0; nid < nodes && nr_to_walk; nid++)
			isolated +=
			        mcg_list_lru_walk_one(lru, nid, NULL, isolate, arg, &nr_to_walk);
		return isolated;
	}
	for (mcg_group_t *g = walk_next(NULL); g; g = walk_next(g))
		for (unsigned nid = 0; nid < nodes && nr_to_walk; nid++)
			isolated += mcg_list_lru_walk_one(lru, nid, g, isolate, arg, &nr_to_walk);
	return isolated;
}

mcg_public unsigned long mcg_list_lru_shrink_count(mcg_list_lru_t *lru,
                                                   const mcg_shrink_control_t *sc)
{
	if (!lru || !sc)
		return MCG_SHRINK_EMPTY;
	mcg_group_t *g = sc->group ? sc->group : mcg_group_root();
	struct mcg_lru_memcg *m = lists_peek(lru, g);
	long n = 0;
	if (m && lru->numa_aware) {
		if (sc->nid < m->nr_nodes)
			n = __atomic_load_n(&m->node[sc->nid].nr_items, __ATOMIC_RELAXED);
	} else if (m) {
		/* Its shrinker is asked once, on node 0, about every node. */
		for (unsigned nid = 0; nid < m->nr_nodes; nid++) {
			long k = __atomic_load_n(&m->node[nid].nr_items, __ATOMIC_RELAXED);
			n += k > 0 ? k : 0;
		}
	}
	return n > 0 ? (unsigned long)n : MCG_SHRINK_EMPTY;
}

mcg_public unsigned long mcg_list_lru_shrink_walk(mcg_list_lru_t *lru, mcg_shrink_control_t *sc,
                                                  mcg_lru_isolate_fn isolate, void *arg)
{
	if (!sc || !lru)
		return 0;
	unsigned long nr = sc->nr_to_scan, n = 0;
	mcg_group_t *g = sc->group ? sc->group : mcg_group_root();
	if (lru->numa_aware) {
		n = mcg_list_lru_walk_one(lru, sc->nid, g, isolate, arg, &nr);
	} else {
		unsigned nodes = mcg_os_nr_nodes();
		for (unsigned nid = 0; nid < nodes && nr; nid++)
			n += mcg_list_lru_walk_one(lru, nid, g, isolate, arg, &nr);
	}
	sc->nr_scanned = sc->nr_to_scan - nr;
	return n;
}
