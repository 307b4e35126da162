/* SPDX-License-Identifier: MIT */
/*
 * reclaim/shrinker.c - the shrinker registry, per-group reclaim info, and
 * the kernel's shrink_slab / do_shrink_slab arithmetic.
 *
 * Registry: a table of ids (MCG_SHRINKER_MAX) under the registry lock
 * (MCG_RANK_LEAF: nothing is taken under it).  A reclaimer takes a
 * reference on a registered shrinker under the lock, calls it with no lock
 * held, and drops the reference; mcg_shrinker_unregister() clears
 * `registered`, drops the registration's reference and waits on a
 * condition variable until the count reaches zero.
 *
 * do_shrink_slab (per shrinker, group, node, priority):
 *   freeable = count_objects (MCG_SHRINK_EMPTY: none at all)
 *   nr       = deferred work taken (exchanged to 0)
 *   delta    = (freeable >> priority) * 4 / seeks   (TRIM_HALF: freeable / 2)
 *   total    = min((nr >> priority) + delta, 2 * freeable)
 *   scan batches while total >= batch or total >= freeable (and the
 *   reclaimer has not met its goal: then the rest is deferred too)
 *   deferred += min(max(nr + delta - scanned, 0), 2 * freeable)
 * Deferred work lives per node in the shrinker (not memcg-aware, or the
 * root group) or per node per group in the group's info.
 */
#include "reclaim/shrinker.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/fault.h"
#include "base/log.h"
#include "memcg/kmalloc.h"
#include "os/os.h"

static mcg_lock_t registry_lock;
static pthread_cond_t registry_cond = PTHREAD_COND_INITIALIZER;
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;
/* id -> shrinker, or RESERVED for a list_lru without one (registry lock). */
static struct mcg_shrinker *ids[MCG_SHRINKER_MAX];
static int nr_ids; /* highest id in use + 1 (registry lock; read racily by reclaim) */
#define RESERVED ((struct mcg_shrinker *)1)
/* Per id: its shrinker is NUMA-aware (written at create, before any list is used). */
static bool id_numa[MCG_SHRINKER_MAX];

static void registry_init_once(void) { mcg_lock_init(&registry_lock, MCG_RANK_LEAF); }

static void registry_init(void) { pthread_once(&registry_once, registry_init_once); }

/* Take a free id for @s (registry lock held).  Return the id or -ENOSPC. */
static int id_alloc_locked(struct mcg_shrinker *s)
{
	for (int i = 0; i < MCG_SHRINKER_MAX; i++) {
		if (!ids[i]) {
			ids[i] = s;
			if (i >= nr_ids)
				__atomic_store_n(&nr_ids, i + 1, __ATOMIC_RELEASE);
			return i;
		}
	}
	return -ENOSPC;
}

static void id_free_locked(int id)
{
	ids[id] = NULL;
	int n = nr_ids;
	while (n > 0 && !ids[n - 1])
		n--;
	__atomic_store_n(&nr_ids, n, __ATOMIC_RELEASE);
}

int mcg_shrinker_id_alloc(void)
{
	registry_init();
	mcg_lock(&registry_lock);
	int id = id_alloc_locked(RESERVED);
	if (id >= 0)
		__atomic_store_n(&id_numa[id], false, __ATOMIC_RELAXED);
	mcg_unlock(&registry_lock);
	return id;
}

void mcg_shrinker_id_free(int id)
{
	mcg_lock(&registry_lock);
	id_free_locked(id);
	mcg_unlock(&registry_lock);
}

int mcg_shrinker_ids_in_use(void)
{
	registry_init();
	int n = 0;
	mcg_lock(&registry_lock);
	for (int i = 0; i < nr_ids; i++)
		n += ids[i] != NULL;
	mcg_unlock(&registry_lock);
	return n;
}

/* ------------------------------------------------------------ per-group info */

struct mcg_reclaim_info *mcg_reclaim_info_get(mcg_group_t *g)
{
	struct mcg_reclaim_info *info = mcg_reclaim_info_peek(g);
	if (likely(info))
		return info;
	info = mcg_fault_should_fail()
	               ? NULL
	               : mcg_calloc(1, sizeof(*info) + mcg_os_nr_nodes() * sizeof(info->map[0]));
	if (!info)
		return NULL;
	struct mcg_reclaim_info *old = NULL;
	if (!__atomic_compare_exchange_n(&g->reclaim, &old, info, false, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE)) {
		mcg_free(info);
		return old;
	}
	return info;
}

struct mcg_reclaim_chunk *mcg_reclaim_chunk_get(struct mcg_reclaim_info *info, int id)
{
	struct mcg_reclaim_chunk *c = mcg_reclaim_chunk_peek(info, id);
	if (likely(c))
		return c;
	size_t size = sizeof(*c) + sizeof(long) * MCG_IDS_PER_CHUNK * mcg_os_nr_nodes();
	c = mcg_fault_should_fail() ? NULL : mcg_calloc(1, size);
	if (!c)
		return NULL;
	struct mcg_reclaim_chunk *old = NULL;
	if (!__atomic_compare_exchange_n(&info->chunks[id / MCG_IDS_PER_CHUNK], &old, c, false,
	                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		mcg_free(c);
		return old;
	}
	return c;
}

mcg_lock_t mcg_populated_lock = {PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP, MCG_RANK_POPULATED};

/* Add @delta to `populated` of @g and every ancestor; a group whose count
 * leaves or reaches 0 joins or leaves its parent's pop_children. */
static void populated_add(mcg_group_t *g, long delta)
{
	mcg_lock(&mcg_populated_lock);
	for (; g; g = g->parent) {
		long old = g->populated;
		__atomic_store_n(&g->populated, old + delta, __ATOMIC_RELAXED);
		if (!g->parent)
			continue;
		if (old <= 0 && old + delta > 0)
			mcg_list_add_tail(&g->pop_sibling, &g->parent->pop_children);
		else if (old > 0 && old + delta <= 0)
			mcg_list_del(&g->pop_sibling);
	}
	mcg_unlock(&mcg_populated_lock);
}

/* A shrinker bit of @g went from clear to set (@set) or back. */
static void marks_changed(mcg_group_t *g, struct mcg_reclaim_info *info, bool set)
{
	if (set) {
		if (__atomic_fetch_add(&info->nr_marks, 1, __ATOMIC_ACQ_REL) == 0)
			populated_add(g, 1);
	} else {
		if (__atomic_fetch_sub(&info->nr_marks, 1, __ATOMIC_ACQ_REL) == 1)
			populated_add(g, -1);
	}
}

void mcg_reclaim_info_free(mcg_group_t *g)
{
	struct mcg_reclaim_info *info = g->reclaim;
	if (!info)
		return;
	if (__atomic_load_n(&info->nr_marks, __ATOMIC_ACQUIRE) > 0)
		populated_add(g, -1); /* leaves the tree: its marks no longer count */
	for (int k = 0; k < MCG_NR_CHUNKS; k++) {
		struct mcg_reclaim_chunk *c = info->chunks[k];
		if (!c)
			continue;
		for (int i = 0; i < MCG_IDS_PER_CHUNK; i++)
			if (c->lru[i])
				mcg_list_lru_free_group(c->lru[i]);
		mcg_free(c);
	}
	mcg_free(info);
	g->reclaim = NULL;
}

unsigned mcg_shrinker_mark_nid(int id, unsigned nid)
{
	return __atomic_load_n(&id_numa[id], __ATOMIC_RELAXED) ? nid : 0;
}

bool mcg_reclaim_info_marked(const mcg_group_t *g, int nid)
{
	struct mcg_reclaim_info *info = mcg_reclaim_info_peek(g);
	if (!info)
		return false;
	unsigned n = mcg_os_nr_nodes();
	for (unsigned node = 0; node < n; node++) {
		if (nid >= 0 && node != (unsigned)nid)
			continue;
		for (size_t i = 0; i < MCG_ARRAY_SIZE(info->map[0]); i++)
			if (__atomic_load_n(&info->map[node][i], __ATOMIC_RELAXED))
				return true;
	}
	return false;
}

void mcg_shrinker_mark(mcg_group_t *g, int id, unsigned nid)
{
	struct mcg_reclaim_info *info = mcg_reclaim_info_peek(g);
	unsigned long bit = 1ul << (id % 64);
	unsigned long *w = &info->map[nid][id / 64];
	/* Set it only when clear: most adds find it set (no shared write). */
	if (!(__atomic_load_n(w, __ATOMIC_RELAXED) & bit) &&
	    !(__atomic_fetch_or(w, bit, __ATOMIC_SEQ_CST) & bit))
		marks_changed(g, info, true);
}

/* ------------------------------------------------------------ registry */

mcg_public int mcg_shrinker_create(const mcg_shrinker_ops_t *ops, mcg_shrinker_t **out)
{
	mcg_reclaim_init();
	if (!ops || !out || !ops->count_objects || !ops->scan_objects ||
	    (ops->flags & ~(unsigned)(MCG_SHRINKER_MEMCG_AWARE | MCG_SHRINKER_NUMA_AWARE |
	                              MCG_SHRINKER_TRIM_HALF)) ||
	    ((ops->flags & MCG_SHRINKER_TRIM_HALF) && ops->seeks))
		return -EINVAL;
	struct mcg_shrinker *s = mcg_fault_should_fail() ? NULL : mcg_calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->nr_deferred =
	        mcg_fault_should_fail() ? NULL : mcg_calloc(mcg_os_nr_nodes(), sizeof(long));
	if (!s->nr_deferred) {
		mcg_free(s);
		return -ENOMEM;
	}
	s->ops = *ops;
	if (!s->ops.batch)
		s->ops.batch = MCG_SHRINK_BATCH;
	if (!s->ops.seeks && !(s->ops.flags & MCG_SHRINKER_TRIM_HALF))
		s->ops.seeks = MCG_DEFAULT_SEEKS;
	snprintf(s->name, sizeof(s->name), "%s", ops->name ? ops->name : "shrinker");
	s->ops.name = s->name;
	registry_init();
	mcg_lock(&registry_lock);
	s->id = id_alloc_locked(s);
	if (s->id >= 0)
		__atomic_store_n(&id_numa[s->id], !!(ops->flags & MCG_SHRINKER_NUMA_AWARE),
		                 __ATOMIC_RELAXED);
	mcg_unlock(&registry_lock);
	if (s->id < 0) {
		int err = s->id;
		mcg_free(s->nr_deferred);
		mcg_free(s);
		return err;
	}
	*out = s;
	return 0;
}

mcg_public int mcg_shrinker_register(mcg_shrinker_t *s)
{
	if (!s)
		return -EINVAL;
	int err = 0;
	mcg_lock(&registry_lock);
	if (s->registered || s->refcnt)
		err = -EINVAL;
	else {
		s->refcnt = 1;
		__atomic_store_n(&s->registered, true, __ATOMIC_RELEASE);
	}
	mcg_unlock(&registry_lock);
	return err;
}

mcg_public void mcg_shrinker_unregister(mcg_shrinker_t *s)
{
	if (!s)
		return;
	mcg_lock(&registry_lock);
	if (s->registered) {
		__atomic_store_n(&s->registered, false, __ATOMIC_RELEASE);
		s->refcnt--;
	}
	while (s->refcnt) /* reclaimers still in its callbacks */
		pthread_cond_wait(&registry_cond, &registry_lock.mutex);
	mcg_unlock(&registry_lock);
}

mcg_public void mcg_shrinker_destroy(mcg_shrinker_t *s)
{
	if (!s)
		return;
	mcg_shrinker_unregister(s);
	mcg_lock(&registry_lock);
	id_free_locked(s->id);
	mcg_unlock(&registry_lock);
	mcg_free(s->nr_deferred);
	mcg_free(s);
}

mcg_public void *mcg_shrinker_private(const mcg_shrinker_t *s)
{
	return s ? s->ops.private_data : NULL;
}

/* The registered shrinker with @id, referenced; NULL if none. */
static struct mcg_shrinker *shrinker_tryget(int id)
{
	struct mcg_shrinker *s;
	mcg_lock(&registry_lock);
	s = ids[id];
	if (s == RESERVED || (s && !s->registered))
		s = NULL;
	if (s)
		s->refcnt++;
	mcg_unlock(&registry_lock);
	return s;
}

static void shrinker_put(struct mcg_shrinker *s)
{
	mcg_lock(&registry_lock);
	if (--s->refcnt == 0)
		pthread_cond_broadcast(&registry_cond);
	mcg_unlock(&registry_lock);
}

/* ------------------------------------------------------------ do_shrink_slab */

/* The deferred-work slot of @s for @sc's group and node. */
static long *deferred_slot(struct mcg_shrinker *s, const mcg_shrink_control_t *sc)
{
	if ((s->ops.flags & MCG_SHRINKER_MEMCG_AWARE) && sc->group != mcg_group_root()) {
		struct mcg_reclaim_info *info = mcg_reclaim_info_peek(sc->group);
		struct mcg_reclaim_chunk *c = info ? mcg_reclaim_chunk_get(info, s->id) : NULL;
		if (c)
			return &c->deferred[(s->id % MCG_IDS_PER_CHUNK) * mcg_os_nr_nodes() +
			                    sc->nid];
	}
	return &s->nr_deferred[sc->nid];
}

/*
 * One shrinker, one group, one node (the kernel's do_shrink_slab).
 * Return: objects freed, or MCG_SHRINK_EMPTY when it has none.
 */
static unsigned long do_shrink_slab(struct mcg_shrinker *s, mcg_shrink_control_t *sc, int priority,
                                    unsigned long protection, unsigned long size,
                                    unsigned long *scanned_out, const struct mcg_reclaim_goal *goal)
{
	unsigned long freeable = s->ops.count_objects(s, sc);
	if (freeable == 0 || freeable == MCG_SHRINK_EMPTY)
		return freeable;
	/*
	 * Pressure proportional to the usage above protection (the kernel's
	 * apply_proportional_protection(), here on the objects): a group
	 * using twice its protection sees half its objects as the pool.
	 * At least 32 (SWAP_CLUSTER_MAX) keep reclaim moving.
	 */
	if (protection) {
		unsigned long sz = MCG_MAX(size, protection);
		unsigned long pool = freeable - (unsigned long)((unsigned __int128)freeable *
		                                                protection / (sz + 1));
		freeable = MCG_MAX(pool, MCG_MIN(freeable, 32ul));
	}
	long *slot = deferred_slot(s, sc);
	long nr = __atomic_exchange_n(slot, 0, __ATOMIC_RELAXED);
	unsigned long delta;
	if (s->ops.flags & MCG_SHRINKER_TRIM_HALF) {
		delta = freeable / 2; /* cheap to recreate: trim aggressively */
	} else {
		delta = freeable >> priority;
		delta *= 4;
		delta /= s->ops.seeks;
	}
	unsigned long total_scan = ((unsigned long)nr >> priority) + delta;
	total_scan = MCG_MIN(total_scan, 2 * freeable);
	unsigned long batch = s->ops.batch, freed = 0, scanned = 0;
	/*
	 * Not less than a batch per call, unless there are fewer objects
	 * than a batch and we are tight (total_scan >= freeable).
	 */
	while (total_scan >= batch || total_scan >= freeable) {
		unsigned long n = MCG_MIN(batch, total_scan);
		sc->nr_to_scan = n;
		sc->nr_scanned = n;
		unsigned long ret = s->ops.scan_objects(s, sc);
		if (ret == MCG_SHRINK_STOP)
			break;
		freed += ret;
		unsigned long done = MCG_MIN(sc->nr_scanned, total_scan);
		if (!done)
			done = MCG_MIN(n, total_scan); /* never loop without progress */
		total_scan -= done;
		scanned += done;
		if (!total_scan)
			break;
		/* The reclaimer has what it asked for: the rest is deferred. */
		if (goal && goal->state->reclaimed >= goal->nr_to_reclaim)
			break;
	}
	/* New work not done is deferred, old deferred work done is dropped; cap 2x freeable. */
	long next = (long)((unsigned long)nr + delta) - (long)scanned;
	if (next < 0)
		next = 0;
	next = MCG_MIN(next, (long)(2 * freeable));
	if (next)
		__atomic_fetch_add(slot, next, __ATOMIC_RELAXED);
	*scanned_out += scanned;
	return freed;
}

/* Call shrinker @id for @sc; handle the mark of a memcg-aware one. */
static void shrink_one(int id, mcg_shrink_control_t *sc, int priority, bool memcg_call,
                       unsigned long protection, unsigned long size, unsigned long *scanned,
                       unsigned long *freed, const struct mcg_reclaim_goal *goal)
{
	struct mcg_shrinker *s = shrinker_tryget(id);
	if (!s)
		return;
	bool aware = s->ops.flags & MCG_SHRINKER_MEMCG_AWARE;
	if (memcg_call && !aware)
		goto out; /* only the root's walk calls global shrinkers */
	unsigned nid = sc->nid;
	if (!(s->ops.flags & MCG_SHRINKER_NUMA_AWARE)) {
		if (sc->nid != 0)
			goto out;
	}
	sc->nid = nid;
	unsigned long ret = do_shrink_slab(s, sc, priority, protection, size, scanned, goal);
	if (ret == MCG_SHRINK_EMPTY && aware) {
		/*
		 * Nothing at all (on this node, for a NUMA-aware shrinker):
		 * clear the mark, then look again, in case an object was added
		 * meanwhile (its add set the bit before ours was cleared, or
		 * sees it clear and sets it after).
		 */
		struct mcg_reclaim_info *info = mcg_reclaim_info_peek(sc->group);
		if (info) {
			if (__atomic_fetch_and(&info->map[sc->nid][id / 64], ~(1ul << (id % 64)),
			                       __ATOMIC_SEQ_CST) &
			    (1ul << (id % 64)))
				marks_changed(sc->group, info, false);
			ret = do_shrink_slab(s, sc, priority, protection, size, scanned, goal);
			if (ret != MCG_SHRINK_EMPTY)
				mcg_shrinker_mark(sc->group, id, sc->nid);
		}
	}
	if (ret != MCG_SHRINK_EMPTY)
		*freed += ret;
out:
	shrinker_put(s);
}

void mcg_shrink_slab(mcg_group_t *g, unsigned nid, int priority, unsigned long protection,
                     unsigned long size, unsigned long *scanned, unsigned long *freed,
                     const struct mcg_reclaim_goal *goal)
{
	registry_init();
	mcg_shrink_control_t sc = {.nid = nid, .group = g};
	int n = __atomic_load_n(&nr_ids, __ATOMIC_ACQUIRE);
	if (g == mcg_group_root()) {
		/* The root: every shrinker (memcg-aware ones for the root's own lists). */
		for (int id = 0; id < n; id++) {
			sc.nid = nid;
			shrink_one(id, &sc, priority, false, protection, size, scanned, freed,
			           goal);
		}
		return;
	}
	struct mcg_reclaim_info *info = mcg_reclaim_info_peek(g);
	if (!info)
		return;
	/* Only the shrinkers with objects of @g on @nid (others mark node 0). */
	for (int w = 0; w * 64 < n; w++) {
		unsigned long bits = __atomic_load_n(&info->map[nid][w], __ATOMIC_ACQUIRE);
		while (bits) {
			int id = w * 64 + __builtin_ctzl(bits);
			bits &= bits - 1;
			sc.nid = nid;
			shrink_one(id, &sc, priority, true, protection, size, scanned, freed, goal);
		}
	}
}
