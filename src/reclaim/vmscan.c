/* SPDX-License-Identifier: MIT */
/*
 * reclaim/vmscan.c - the reclaim driver (the kernel's mm/vmscan.c for
 * memcg reclaim), memory.high handling, memory.reclaim, and the install
 * of the reclaim ops into the group layer.
 *
 * mcg_reclaim(target, n): priorities 12 down to 0; at each, walk the
 * target's subtree in pre-order (the kernel's mem_cgroup_iter with a
 * reclaim cookie): the walk resumes after the target's shared cursor, and
 * a walk ends when any walker wraps around (the cursor's generation moves
 * on), so concurrent reclaimers spread over the groups; direct and
 * proactive reclaim stop as soon as the goal is met (partial walks), the
 * background reclaimer always walks it all.  At each group: compute its
 * effective min/low top-down (effective_protection()); skip it at or below
 * min; at or below low, skip it in the first pass and note that, and in a
 * second pass (only if the first reclaimed nothing) reclaim it, counting a
 * "low" event; otherwise run its shrinkers (reclaim/shrinker.c) with the
 * pressure scaled by its usage above protection.
 *
 * Reclaimed = pages uncharged by this thread while it runs shrinkers
 * (mcg_reclaim_state_current, group/group.h).
 *
 * Over high (mem_cgroup_handle_over_high): reclaim the charged batch from
 * each group over high, then throttle quadratically in the overage
 * (calculate_high_delay), capped at 2 s; while reclaim makes progress (or
 * 16 retries), reclaim rather than sleep.  Callers that cannot sleep queue
 * the group for the worker thread.
 *
 * Locks: the cursor lock (MCG_RANK_LEAF) protects every group's
 * reclaim_pos / reclaim_gen; the cursor holds no reference (release
 * clears it); the tree lock to step the walk.  No lock is held while
 * shrinkers run.
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "base/mm_const.h"
#include "base/fault.h"
#include "base/log.h"
#include "base/options.h"
#include "memcg/kmalloc.h"
#include "os/os.h"
#include "reclaim/oom.h"
#include "reclaim/pressure.h"
#include "reclaim/shrinker.h"

#define DEF_PRIORITY 12
#define LIMIT_GOAL_SHIFT 7 /* reclaim at a limit: at most limit/128 (reclaim_at_limit) */
#define DELAY_PRECISION_SHIFT 20
#define DELAY_SCALING_SHIFT 14
#define HZ 1000ul               /* delays in milliseconds */
#define MAX_HIGH_DELAY (2 * HZ) /* 2 s */

static mcg_lock_t cursor_lock;

/* ------------------------------------------------------------ the walk */

/* The group after @pos in @root's subtree, pre-order, referenced (tree lock held). */
static mcg_group_t *pre_next_locked(mcg_group_t *root, mcg_group_t *pos)
{
	if (!pos)
		return mcg_group_tryget(root) ? root : NULL;
	/*
	 * Pre-order over the tree of populated groups only (pop_children:
	 * groups whose subtree holds objects of some shrinker), so empty
	 * groups cost nothing, however many there are.  If @pos left that
	 * tree since it was returned, go on after its parent: this round
	 * may miss some of its siblings, as a walk may miss groups created
	 * meanwhile.
	 */
	mcg_group_t *next = NULL;
	bool descend = true;
	mcg_lock(&mcg_populated_lock);
	for (;;) {
		next = NULL;
		if (descend && !mcg_list_empty(&pos->pop_children)) {
			next = mcg_list_entry(pos->pop_children.next, struct mcg_group,
			                      pop_sibling);
		} else {
			while (pos != root) {
				mcg_group_t *parent = pos->parent;
				bool linked = !mcg_list_empty(&pos->pop_sibling);
				if (linked && pos->pop_sibling.next != &parent->pop_children) {
					next = mcg_list_entry(pos->pop_sibling.next,
					                      struct mcg_group, pop_sibling);
					break;
				}
				pos = parent;
			}
		}
		if (!next || mcg_group_tryget(next))
			break;
		pos = next; /* being freed: go on after it */
		descend = false;
	}
	mcg_unlock(&mcg_populated_lock);
	return next;
}

struct cookie {
	unsigned long gen;
};

/*
 * The next group to reclaim from in @root's subtree after @prev (NULL:
 * start), referenced; the reference on @prev is dropped.  With @ck, walk
 * from the shared cursor and stop (NULL) when another walker completed
 * the round.
 */
static mcg_group_t *group_iter(mcg_group_t *root, mcg_group_t *prev, struct cookie *ck)
{
	mcg_group_t *pos = prev, *next;
	bool shared = ck && mcg_group_is_online(root);
	if (shared) {
		mcg_lock(&cursor_lock);
		if (!prev) {
			ck->gen = root->reclaim_gen;
		} else if (ck->gen != root->reclaim_gen) {
			mcg_unlock(&cursor_lock);
			mcg_group_put(prev);
			return NULL;
		}
		pos = root->reclaim_pos;
		if (pos && !mcg_group_tryget(pos))
			pos = NULL;
		mcg_unlock(&cursor_lock);
	}
	mcg_lock(&mcg_group_tree_lock);
	next = pre_next_locked(root, pos);
	/* A walker joining at the end of a round restarts from the top. */
	if (!next && !prev)
		next = pre_next_locked(root, NULL);
	mcg_unlock(&mcg_group_tree_lock);
	if (shared) {
		mcg_lock(&cursor_lock);
		if (root->reclaim_pos == pos)
			root->reclaim_pos = next;
		if (!next)
			root->reclaim_gen++;
		mcg_unlock(&cursor_lock);
		mcg_group_put(pos);
	}
	mcg_group_put(prev);
	return next;
}

/* A group is freed: no cursor may point at it any more. */
static void cursor_forget(mcg_group_t *g)
{
	mcg_lock(&cursor_lock);
	for (mcg_group_t *a = g; a; a = a->parent)
		if (a->reclaim_pos == g)
			a->reclaim_pos = NULL;
	mcg_unlock(&cursor_lock);
}

/* ------------------------------------------------------------ protection */

/*
 * The kernel's effective_protection() (mm/page_counter.c): what of
 * @setting a child using @usage keeps when its parent (using
 * @parent_usage) has @parent_effective to share among children claiming
 * @siblings_protected in all.  @recursive: cgroup2's memory_recursiveprot
 * (option memory_recursiveprot, MCG_RECURSIVEPROT).
 */
static long effective_protection(long usage, long parent_usage, long setting, long parent_effective,
                                 long siblings_protected, bool recursive)
{
	long protected = MCG_MIN(usage, setting);
	/* Overcommitted: shares in proportion to what each uses of its claim. */
	if (siblings_protected > parent_effective)
		return (long)((__int128)protected * parent_effective / siblings_protected);
	/* Within the parent's protection: what it claims and uses is protected. */
	long ep = protected;
	if (!recursive)
		return ep;
	/*
	 * memory_recursiveprot: the protection the children do not claim is
	 * shared among them in proportion to their unprotected usage, so a
	 * protected subtree is protected as a whole while its groups compete
	 * freely inside it.  Usage and parent usage are read apart: both are
	 * checked so that the division stays sane.
	 */
	if (parent_effective > siblings_protected && parent_usage > siblings_protected &&
	    usage > protected) {
		__int128 unclaimed = parent_effective - siblings_protected;
		unclaimed *= usage - protected;
		unclaimed /= parent_usage - siblings_protected;
		ep += (long)unclaimed;
	}
	return ep;
}

/* Compute @g's emin/elow for a reclaim of @root (the parent's are current). */
static void calculate_protection(mcg_group_t *root, mcg_group_t *g)
{
	struct mcg_page_counter *c = &g->memory, *p = c->parent;
	if (g == root)
		return; /* the target's own protection does not count */
	long usage = mcg_page_counter_read(c);
	if (!usage)
		return;
	if (p == &root->memory) {
		MCG_WRITE_ONCE(c->emin, mcg_page_counter_get(c, min));
		MCG_WRITE_ONCE(c->elow, mcg_page_counter_get(c, low));
		return;
	}
	long parent_usage = mcg_page_counter_read(p);
	bool recursive = mcg_option(MCG_OPT_RECURSIVEPROT);
	MCG_WRITE_ONCE(c->emin,
	               effective_protection(usage, parent_usage, mcg_page_counter_get(c, min),
	                                    MCG_READ_ONCE(p->emin),
	                                    MCG_READ_ONCE(p->children_min_usage), recursive));
	MCG_WRITE_ONCE(c->elow,
	               effective_protection(usage, parent_usage, mcg_page_counter_get(c, low),
	                                    MCG_READ_ONCE(p->elow),
	                                    MCG_READ_ONCE(p->children_low_usage), recursive));
}

static bool below_min(mcg_group_t *root, mcg_group_t *g)
{
	return g != root && mcg_page_counter_read(&g->memory) <= MCG_READ_ONCE(g->memory.emin);
}

static bool below_low(mcg_group_t *root, mcg_group_t *g)
{
	return g != root && mcg_page_counter_read(&g->memory) <= MCG_READ_ONCE(g->memory.elow);
}

mcg_public void mcg_reclaim_protection(mcg_group_t *root, mcg_group_t *g, unsigned long *emin,
                                       unsigned long *elow)
{
	mcg_reclaim_init();
	if (!root)
		root = mcg_group_root();
	mcg_group_t *chain[256];
	int n = 0;
	for (mcg_group_t *a = g; a && a != root && n < 256; a = a->parent)
		chain[n++] = a;
	while (n > 0)
		calculate_protection(root, chain[--n]);
	bool self = !g || g == root;
	if (emin)
		*emin = self ? 0 : (unsigned long)MCG_READ_ONCE(g->memory.emin);
	if (elow)
		*elow = self ? 0 : (unsigned long)MCG_READ_ONCE(g->memory.elow);
}

/* ------------------------------------------------------------ the driver */

struct scan_control {
	mcg_group_t *target;
	unsigned long nr_to_reclaim;
	unsigned long nr_scanned, nr_freed, groups;
	struct mcg_reclaim_state state; /* .reclaimed: pages */
	int priority;
	int nid; /* the node reclaimed, -1: all */
	unsigned flags;
	bool low_reclaim, low_skipped, low_reclaimed;
};

/* @g may hold objects on node @nid (-1: any) for some shrinker. */
static bool has_objects(mcg_group_t *g, int nid)
{
	if (g == mcg_group_root())
		return true; /* global shrinkers */
	return mcg_reclaim_info_marked(g, nid);
}

static void shrink_group(struct scan_control *sc, mcg_group_t *g)
{
	unsigned long protection = 0;
	if (g != sc->target) {
		long emin = MCG_READ_ONCE(g->memory.emin), elow = MCG_READ_ONCE(g->memory.elow);
		if (!sc->low_reclaim && elow > emin) {
			protection = (unsigned long)elow;
			sc->low_skipped = true; /* memory.low scaling: retry before OOM */
		} else {
			protection = (unsigned long)emin;
		}
	}
	unsigned long size = (unsigned long)mcg_page_counter_read(&g->memory);
	unsigned long scanned = 0, freed = 0, before = sc->state.reclaimed;
	unsigned nodes = mcg_os_nr_nodes();
	struct mcg_reclaim_goal goal = {&sc->state, sc->nr_to_reclaim};
	for (unsigned nid = 0; nid < nodes; nid++)
		if (sc->nid < 0 || nid == (unsigned)sc->nid)
			mcg_shrink_slab(g, nid, sc->priority, protection, size, &scanned, &freed,
			                &goal);
	unsigned long stolen = sc->state.reclaimed - before;
	sc->nr_scanned += scanned;
	sc->nr_freed += freed;
	sc->groups++;
	enum mcg_group_stat scan_item = MCG_STAT_PGSCAN_DIRECT,
	                    steal_item = MCG_STAT_PGSTEAL_DIRECT;
	if (sc->flags & MCG_RECLAIM_BACKGROUND) {
		scan_item = MCG_STAT_PGSCAN_KSWAPD;
		steal_item = MCG_STAT_PGSTEAL_KSWAPD;
	} else if (sc->flags & MCG_RECLAIM_PROACTIVE) {
		scan_item = MCG_STAT_PGSCAN_PROACTIVE;
		steal_item = MCG_STAT_PGSTEAL_PROACTIVE;
	}
	if (scanned)
		mcg_group_stat_mod(g, scan_item, (int64_t)scanned);
	if (stolen)
		mcg_group_stat_mod(g, steal_item, (int64_t)stolen);
}

/* One round over the target's subtree at sc->priority (shrink_node_memcgs). */
static void shrink_groups(struct scan_control *sc)
{
	struct cookie ck;
	struct cookie *partial = (sc->flags & MCG_RECLAIM_BACKGROUND) ? NULL : &ck;
	mcg_group_t *g = group_iter(sc->target, NULL, partial);
	while (g) {
		calculate_protection(sc->target, g);
		if (below_min(sc->target, g))
			goto next; /* hard protection */
		if (below_low(sc->target, g)) {
			if (!sc->low_reclaim) {
				sc->low_skipped =
				        true; /* soft protection, unless nothing else gives */
				goto next;
			}
			mcg_group_event(g, MCG_EVENT_LOW);
			sc->low_reclaimed = true;
		}
		if (has_objects(g, sc->nid))
			shrink_group(sc, g);
		if (partial && sc->state.reclaimed >= sc->nr_to_reclaim) {
			mcg_group_put(g); /* the goal is met: leave the cursor here */
			break;
		}
next:
		g = group_iter(sc->target, g, partial);
	}
}

/* do_try_to_free_pages for a group. */
static void do_try_to_free(struct scan_control *sc)
{
	sc->priority = DEF_PRIORITY;
retry:
	do {
		shrink_groups(sc);
		if (sc->state.reclaimed >= sc->nr_to_reclaim)
			return;
	} while (--sc->priority >= 0);
	sc->priority = 0;
	if (sc->state.reclaimed)
		return;
	/* Untapped protected memory: retry, ignoring memory.low. */
	if (sc->low_skipped && !sc->low_reclaim) {
		sc->low_reclaim = true;
		sc->low_skipped = false;
		sc->priority = DEF_PRIORITY;
		goto retry;
	}
}

/* Reclaim @nr_to_reclaim pages (exactly that goal) from @g's subtree. */
static unsigned long reclaim(mcg_group_t *g, int nid, unsigned long nr_to_reclaim, unsigned flags,
                             mcg_reclaim_result_t *res)
{
	mcg_reclaim_init();
	if (!g)
		g = mcg_group_root();
	struct scan_control sc = {
	        .target = g,
	        .nr_to_reclaim = nr_to_reclaim,
	        .nid = nid,
	        .flags = flags,
	};
	struct mcg_reclaim_state *prev = mcg_reclaim_state_current;
	mcg_reclaim_state_set(&sc.state);
	do_try_to_free(&sc);
	mcg_reclaim_state_set(prev);
	if (prev)
		prev->reclaimed += sc.state.reclaimed; /* nested: the outer one counts them too */
	if (res) {
		res->reclaimed = sc.state.reclaimed;
		res->scanned = sc.nr_scanned;
		res->freed = sc.nr_freed;
		res->groups = sc.groups;
		res->priority = sc.priority;
		res->low_reclaimed = sc.low_reclaimed;
	}
	return sc.state.reclaimed;
}

mcg_public unsigned long mcg_reclaim_ex(mcg_group_t *g, unsigned long nr_pages, unsigned flags,
                                        mcg_reclaim_result_t *res)
{
	return reclaim(g, -1, MCG_MAX(nr_pages, MCG_SWAP_CLUSTER_MAX), flags, res);
}

mcg_public unsigned long mcg_reclaim_node(mcg_group_t *g, unsigned nid, unsigned long nr_pages,
                                          unsigned flags, mcg_reclaim_result_t *res)
{
	if (nid >= mcg_os_nr_nodes()) {
		if (res)
			*res = (mcg_reclaim_result_t){.priority = DEF_PRIORITY};
		return 0;
	}
	return reclaim(g, (int)nid, MCG_MAX(nr_pages, MCG_SWAP_CLUSTER_MAX), flags, res);
}

mcg_public unsigned long mcg_reclaim(mcg_group_t *g, unsigned long nr_pages, unsigned flags)
{
	return mcg_reclaim_ex(g, nr_pages, flags, NULL);
}

/* ------------------------------------------------------------ memory.high */

/* (usage - high) / high in 1/2^20, 0 when not above (calculate_overage). */
static uint64_t overage(long usage, long high)
{
	if (usage <= high)
		return 0;
	high = MCG_MAX(high, 1l);
	return ((uint64_t)(usage - high) << DELAY_PRECISION_SHIFT) / (uint64_t)high;
}

static uint64_t max_overage(mcg_group_t *g)
{
	uint64_t m = 0;
	for (; g; g = g->parent)
		m = MCG_MAX(m, overage(mcg_page_counter_read(&g->memory),
		                       mcg_page_counter_get(&g->memory, high)));
	return m;
}

/* calculate_high_delay(), in ms, uncapped. */
static unsigned long high_delay(unsigned long nr_pages, uint64_t max_ov)
{
	if (!max_ov)
		return 0;
	unsigned __int128 p = (unsigned __int128)max_ov * max_ov * HZ;
	p >>= DELAY_PRECISION_SHIFT;
	p >>= DELAY_SCALING_SHIFT;
	/* Four N-page charges are throttled about as one 4N-page charge. */
	p = p * nr_pages / MCG_GROUP_STOCK_PAGES;
	return p > (unsigned __int128)ULONG_MAX / 2 ? ULONG_MAX / 2 : (unsigned long)p;
}

mcg_public unsigned long mcg_reclaim_high_delay_ms(mcg_group_t *g, unsigned long nr_pages)
{
	if (!g)
		g = mcg_group_current();
	unsigned long d = MCG_MIN(high_delay(nr_pages, max_overage(g)), MAX_HIGH_DELAY);
	return d <= HZ / 100 ? 0 : d;
}

/*
 * Reclaim @nr_pages from @g because a charge met @limit (its max or high).
 * The goal's floor is the kernel's MCG_SWAP_CLUSTER_MAX or 1/128 of the limit,
 * whichever is less (at least a page): reclaim overshoots its goal, so a
 * group at its limit saws between limit - goal and limit and holds
 * goal / 2 less than it may on average.  With a fixed 32 pages that is a
 * large share of a small group; many small tenants would hold less in all
 * than one group with the sum of their limits.
 */
static unsigned long reclaim_at_limit(mcg_group_t *g, unsigned long nr_pages, long limit,
                                      unsigned flags)
{
	unsigned long floor = limit > 0 ? (unsigned long)limit >> LIMIT_GOAL_SHIFT : 0;
	floor = MCG_MIN(MCG_MAX(floor, 1ul), MCG_SWAP_CLUSTER_MAX);
	return reclaim(g, -1, MCG_MAX(nr_pages, floor), flags, NULL);
}

/* reclaim_high(): @nr_pages from every group over high, @g and up. */
static unsigned long reclaim_high(mcg_group_t *g, unsigned long nr_pages)
{
	unsigned long reclaimed = 0;
	for (; g; g = g->parent) {
		long high = mcg_page_counter_get(&g->memory, high);
		if (mcg_page_counter_read(&g->memory) <= high)
			continue;
		reclaimed += reclaim_at_limit(g, nr_pages, high, MCG_RECLAIM_DIRECT);
	}
	return reclaimed;
}

/* mem_cgroup_handle_over_high(), in the charging thread. */
static void handle_over_high(mcg_group_t *g, unsigned long nr_pages)
{
	int retries = MCG_MAX_RECLAIM_RETRIES;
	bool in_retry = false;
	unsigned long delay;
	for (;;) {
		unsigned long reclaimed =
		        reclaim_high(g, in_retry ? MCG_SWAP_CLUSTER_MAX : nr_pages);
		delay = MCG_MIN(high_delay(nr_pages, max_overage(g)), MAX_HIGH_DELAY);
		if (delay <= HZ / 100)
			return; /* too little to be worth a sleep */
		/* Reclaim is making progress: encourage that rather than sleep. */
		if (reclaimed || retries-- > 0) {
			in_retry = true;
			continue;
		}
		break;
	}
	struct timespec ts = {(time_t)(delay / 1000), (long)(delay % 1000) * 1000000};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	mcg_group_stat_mod(g, MCG_STAT_THROTTLE_MS, (int64_t)delay);
}

/* The worker for callers that cannot sleep: a small queue of groups. */
#define HIGH_QUEUE 64
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool started;
	unsigned n;
	mcg_group_t *g[HIGH_QUEUE];
	unsigned long nr[HIGH_QUEUE];
} high_work = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0, {0}, {0}};

static void *high_worker(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&high_work.lock);
		while (!high_work.n)
			pthread_cond_wait(&high_work.cond, &high_work.lock);
		unsigned i = --high_work.n;
		mcg_group_t *g = high_work.g[i];
		unsigned long nr = high_work.nr[i];
		pthread_mutex_unlock(&high_work.lock);
		reclaim_high(g, nr);
		mcg_group_put(g);
	}
	return NULL;
}

static void queue_high(mcg_group_t *g, unsigned long nr_pages)
{
	mcg_group_get(g);
	pthread_mutex_lock(&high_work.lock);
	if (!high_work.started) {
		pthread_t t;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		/* The thread's stack is memory too: it passes the fault point. */
		high_work.started = !mcg_fault_should_fail() &&
		                    pthread_create(&t, &attr, high_worker, NULL) == 0;
		pthread_attr_destroy(&attr);
	}
	for (unsigned i = 0; i < high_work.n; i++) {
		if (high_work.g[i] == g) { /* already queued: ask for more */
			high_work.nr[i] += nr_pages;
			pthread_mutex_unlock(&high_work.lock);
			mcg_group_put(g);
			return;
		}
	}
	bool queued = high_work.started && high_work.n < HIGH_QUEUE;
	if (queued) {
		high_work.g[high_work.n] = g;
		high_work.nr[high_work.n++] = nr_pages;
		pthread_cond_signal(&high_work.cond);
	}
	pthread_mutex_unlock(&high_work.lock);
	if (!queued)
		mcg_group_put(g); /* full: the next charge over high asks again */
}

static void over_high(mcg_group_t *g, unsigned long nr_pages, bool can_sleep)
{
	if (can_sleep)
		handle_over_high(g, nr_pages);
	else
		queue_high(g, nr_pages);
}

/* ------------------------------------------------------------ memory.reclaim */

/* The kernel's memory_reclaim(): batches, 16 retries without progress, -EAGAIN. */
static int proactive(mcg_group_t *g, unsigned long nr_to_reclaim)
{
	unsigned long reclaimed = 0;
	int retries = MCG_MAX_RECLAIM_RETRIES;
	while (reclaimed < nr_to_reclaim) {
		unsigned long left = nr_to_reclaim - reclaimed;
		unsigned long batch = MCG_MIN(MCG_MAX(left / 4, MCG_SWAP_CLUSTER_MAX), left);
		unsigned long got = mcg_reclaim(g, batch, MCG_RECLAIM_PROACTIVE);
		if (!got && !retries--)
			return -EAGAIN;
		reclaimed += got;
	}
	return 0;
}

/* ------------------------------------------------------------ install */

static unsigned long ops_reclaim(mcg_group_t *g, unsigned long nr_pages, unsigned flags)
{
	return reclaim_at_limit(g, nr_pages, mcg_page_counter_get(&g->memory, max), flags);
}

static void ops_offline(mcg_group_t *g) { mcg_list_lru_reparent(g); }

static void ops_release(mcg_group_t *g)
{
	cursor_forget(g);
	mcg_reclaim_info_free(g);
}

static const struct mcg_group_reclaim_ops reclaim_ops = {
        .reclaim = ops_reclaim,
        .oom = mcg_oom_invoke,
        .over_high = over_high,
        .proactive = proactive,
        .offline = ops_offline,
        .release = ops_release,
        .root_stat = mcg_pressure_root_stat,
        .root_charged = mcg_pressure_kick,
};

static pthread_once_t reclaim_once = PTHREAD_ONCE_INIT;

static void reclaim_init_once(void)
{
	mcg_group_init();
	mcg_lock_init(&cursor_lock, MCG_RANK_LEAF);
	mcg_group_set_reclaim_ops(&reclaim_ops);
}

mcg_public void mcg_reclaim_init(void) { pthread_once(&reclaim_once, reclaim_init_once); }
