/* SPDX-License-Identifier: MIT */
/*
 * memcg/reclaim.h - reclaim: memcg- and NUMA-aware LRU lists of objects an
 * application can drop (its cache entries), shrinkers that drop them, the
 * reclaim driver behind memory.high / memory.max / memory.reclaim with the
 * kernel's min/low protection, and the OOM policy.
 *
 * Glossary
 *   list_lru   a set of LRU lists, one per NUMA node per group, of objects
 *              that embed an mcg_lru_link_t.  Objects are added to the list
 *              of the group they are charged to.
 *   shrinker   count_objects/scan_objects callbacks that report and free
 *              reclaimable objects of one group on one node.  Freeing an
 *              object means: take it off its list_lru, free it, and
 *              mcg_uncharge() what it was charged (that is what reclaim
 *              counts as reclaimed).
 *   priority   12 (gentle: scan 1/4096 of the objects) down to 0 (all).
 *   protection memory.min (never reclaimed) and memory.low (reclaimed only
 *              when nothing else can give), effective top-down as in the
 *              kernel's effective_protection(); with the option
 *              memory_recursiveprot (MCG_RECURSIVEPROT, cgroup2's mount
 *              option; default off) a parent's protection that its
 *              children do not claim protects them in proportion to their
 *              unprotected usage, down to the leaves.
 *
 * Typical use (a cache whose entries are charged to their tenant's group):
 *
 *	mcg_shrinker_t *s;
 *	mcg_shrinker_create(&(mcg_shrinker_ops_t){ .name = "entries",
 *	        .count_objects = count, .scan_objects = scan,
 *	        .flags = MCG_SHRINKER_MEMCG_AWARE, .private_data = cache }, &s);
 *	mcg_list_lru_create(s, &cache->lru);
 *	mcg_shrinker_register(s);
 *	...
 *	mcg_charge(g, 1, 0); mcg_list_lru_add(cache->lru, &e->link, node, g);
 *	...
 *	count: return mcg_list_lru_shrink_count(cache->lru, sc);
 *	scan:  return mcg_list_lru_shrink_walk(cache->lru, sc, isolate, &dispose);
 *	       then free each entry on `dispose` and mcg_uncharge() its group.
 *
 * The reclaim machinery is installed on the first call of any function of
 * this header (mcg_reclaim_init()); from then on a charge over memory.max
 * reclaims, retries and calls the OOM policy, a charge over memory.high
 * reclaims and throttles, and "memory.reclaim" accepts writes.
 *
 * Every call is thread safe unless it says otherwise.  Calls return 0 or
 * -errno.
 */
#ifndef MEMCG_RECLAIM_H
#define MEMCG_RECLAIM_H

#include <stdbool.h>
#include <stddef.h>

#include "memcg/group.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * mcg_reclaim_init - install the reclaim machinery into the charge path and
 * the cgroup files (idempotent; every other call here does it too).  Before
 * it, groups behave as without reclaim: over max a charge only drains the
 * stocks (and calls mcg_group_set_reclaim_hook()'s hook) before failing.
 */
void mcg_reclaim_init(void);

/* ============================================================ list_lru */

/** The link an object embeds to sit on a list_lru.  Zero it, or mcg_lru_link_init(). */
typedef struct mcg_lru_link {
	struct mcg_lru_link *next, *prev;
} mcg_lru_link_t;

/** mcg_lru_link_init - mark @l as on no list (self-linked). */
static inline void mcg_lru_link_init(mcg_lru_link_t *l) { l->next = l->prev = l; }

/** mcg_lru_link_empty - true when @l is on no list (or was never added). */
static inline bool mcg_lru_link_empty(const mcg_lru_link_t *l)
{
	return l->next == l || l->next == NULL;
}

typedef struct mcg_list_lru mcg_list_lru_t;
typedef struct mcg_shrinker mcg_shrinker_t;
/** One list of a list_lru: one group, one node.  Opaque; passed to isolate callbacks. */
typedef struct mcg_list_lru_one mcg_list_lru_one_t;

/** Largest number of shrinkers plus list_lrus without a shrinker that may exist at once. */
#define MCG_SHRINKER_MAX 1024

/**
 * mcg_list_lru_create - a list_lru, memcg-aware when @shrinker (NULL: none)
 * was created with MCG_SHRINKER_MEMCG_AWARE: then each group has its own
 * lists, and adding the first object of a group marks the group for that
 * shrinker (reclaim visits only marked groups).  Otherwise there is one
 * list per node, whatever the group.  Create it before registering
 * @shrinker; destroy it after unregistering.
 * @out: receives the list_lru.
 * Return: 0; -EINVAL; -ENOMEM; -ENOSPC (MCG_SHRINKER_MAX reached).
 * Pair with mcg_list_lru_destroy().
 */
int mcg_list_lru_create(mcg_shrinker_t *shrinker, mcg_list_lru_t **out);

/**
 * mcg_list_lru_destroy - free @lru and all its lists.  It must be empty of
 * objects the caller still cares about (they are simply forgotten).
 * NULL is ignored.
 */
void mcg_list_lru_destroy(mcg_list_lru_t *lru);

/**
 * mcg_list_lru_add - put @item at the tail (most recent end) of the list of
 * @group (NULL: the current group; ignored by a non-memcg-aware list_lru)
 * on node @nid.  A removed group's objects go to its nearest online
 * ancestor's list.  Marks the group for the shrinker on its first object.
 * Return: 1 added; 0 already on a list (nothing done); -EINVAL (@nid out of
 * range); -ENOMEM (the group's lists could not be allocated).
 * Pair with mcg_list_lru_del() (same @nid and @group) or a walk that isolates it.
 */
int mcg_list_lru_add(mcg_list_lru_t *lru, mcg_lru_link_t *item, unsigned nid, mcg_group_t *group);

/**
 * mcg_list_lru_del - take @item off the list it was added to with @nid and
 * @group (found through ancestors if the group was removed meanwhile).
 * Return: 1 removed; 0 it was on no list.
 */
int mcg_list_lru_del(mcg_list_lru_t *lru, mcg_lru_link_t *item, unsigned nid, mcg_group_t *group);

/**
 * mcg_list_lru_count_one - objects on @group's list on node @nid (racy
 * snapshot).  A non-memcg-aware list_lru ignores @group.
 */
unsigned long mcg_list_lru_count_one(mcg_list_lru_t *lru, unsigned nid, mcg_group_t *group);

/** mcg_list_lru_count_node - objects on node @nid, all groups (racy snapshot). */
unsigned long mcg_list_lru_count_node(mcg_list_lru_t *lru, unsigned nid);

/** mcg_list_lru_count - objects on every list (racy snapshot). */
unsigned long mcg_list_lru_count(mcg_list_lru_t *lru);

/** What an isolate callback did with an item (never overloaded). */
enum mcg_lru_status {
	/** It took the item off with mcg_list_lru_isolate() or _isolate_move(). */
	MCG_LRU_REMOVED,
	/** Keep it, but move it to the tail (it was used recently: second chance). */
	MCG_LRU_ROTATE,
	/** Leave it where it is (busy); the walk goes on to the next one. */
	MCG_LRU_SKIP,
	/** It dropped and retook the list's lock (mcg_list_lru_one_unlock/lock): the walk restarts
	   from the head. */
	MCG_LRU_RETRY,
	/** It isolated the item and dropped and retook the lock: the walk restarts. */
	MCG_LRU_REMOVED_RETRY,
	/** Stop the walk now (the item stays where it is). */
	MCG_LRU_STOP,
};

/**
 * Isolate callback of a walk: decide about @item, on @list, whose lock is
 * held.  It must not charge, free through memcg or take the list's lock
 * again: move the item to a private list (mcg_list_lru_isolate_move()) and
 * free it after the walk.
 */
typedef enum mcg_lru_status (*mcg_lru_isolate_fn)(mcg_lru_link_t *item, mcg_list_lru_one_t *list,
                                                  void *arg);

/** mcg_list_lru_isolate - take @item off @list (inside an isolate callback). */
void mcg_list_lru_isolate(mcg_list_lru_one_t *list, mcg_lru_link_t *item);

/**
 * mcg_list_lru_isolate_move - take @item off @list and add it to the tail
 * of @dispose, a private list headed by an mcg_lru_link_t of the caller
 * (inside an isolate callback).
 */
void mcg_list_lru_isolate_move(mcg_list_lru_one_t *list, mcg_lru_link_t *item,
                               mcg_lru_link_t *dispose);

/** mcg_list_lru_one_unlock / _lock - drop and retake @list's lock inside a callback (then return a
 * *_RETRY status). */
void mcg_list_lru_one_unlock(mcg_list_lru_one_t *list);
void mcg_list_lru_one_lock(mcg_list_lru_one_t *list);

/**
 * mcg_list_lru_walk_one - call @isolate on the items of @group's list on
 * node @nid, oldest first, while *@nr_to_walk > 0 (decremented per item
 * visited).  The list's lock is held across callbacks.
 * Return: items removed (MCG_LRU_REMOVED / MCG_LRU_REMOVED_RETRY).
 */
unsigned long mcg_list_lru_walk_one(mcg_list_lru_t *lru, unsigned nid, mcg_group_t *group,
                                    mcg_lru_isolate_fn isolate, void *arg,
                                    unsigned long *nr_to_walk);

/**
 * mcg_list_lru_walk - mcg_list_lru_walk_one() over every node and every
 * group's lists (dying groups included), e.g. to empty a cache at teardown.
 * Return: items removed.
 */
unsigned long mcg_list_lru_walk(mcg_list_lru_t *lru, mcg_lru_isolate_fn isolate, void *arg,
                                unsigned long nr_to_walk);

/* ============================================================ shrinkers */

/** What a shrinker is asked about: one group (memcg-aware) on one node (NUMA-aware). */
typedef struct mcg_shrink_control {
	/** The node (0 unless MCG_SHRINKER_NUMA_AWARE). */
	unsigned nid;
	/** The group (the root unless MCG_SHRINKER_MEMCG_AWARE); referenced during the call. */
	mcg_group_t *group;
	/** scan_objects: how many objects to scan (at most the shrinker's batch). */
	unsigned long nr_to_scan;
	/** scan_objects: how many it did scan; preset to nr_to_scan, may be changed. */
	unsigned long nr_scanned;
} mcg_shrink_control_t;

/** count_objects: there are no objects at all (the group's mark is cleared); not "0 freeable". */
#define MCG_SHRINK_EMPTY (~0UL - 1)
/** scan_objects: stop, no progress is possible now (e.g. a lock is contended); not "freed 0". */
#define MCG_SHRINK_STOP (~0UL)

/** Shrinker flags (mcg_shrinker_ops_t.flags). */
enum mcg_shrinker_flags {
	/** Called per group, with the objects of sc->group only (use a memcg-aware list_lru). */
	MCG_SHRINKER_MEMCG_AWARE = 1u << 0,
	/**
	 * Called per node, with the objects of sc->nid only; a group is
	 * marked per node, so reclaim of one node skips groups with nothing
	 * there.  Without it: called on node 0 only, about every node's objects.
	 */
	MCG_SHRINKER_NUMA_AWARE = 1u << 1,
	/**
	 * Objects cost nothing to recreate: every pass scans half of what is
	 * freeable, whatever the priority (the kernel's seeks = 0).  The ops'
	 * seeks must then be 0.
	 */
	MCG_SHRINKER_TRIM_HALF = 1u << 2,
};

/** Default batch: objects per scan_objects call (the kernel's SHRINK_BATCH). */
#define MCG_SHRINK_BATCH 128
/** Default seeks: the cost of recreating an object (the kernel's DEFAULT_SEEKS). */
#define MCG_DEFAULT_SEEKS 2

/** A shrinker's description, copied by mcg_shrinker_create(). */
typedef struct mcg_shrinker_ops {
	/** For messages; copied (at most 31 bytes kept).  NULL: "shrinker". */
	const char *name;
	/**
	 * Objects that could be freed for @sc (group, node): a count (0 is
	 * allowed: objects exist but none is freeable now), or MCG_SHRINK_EMPTY.
	 * Must be cheap: no freeing.
	 */
	unsigned long (*count_objects)(mcg_shrinker_t *s, mcg_shrink_control_t *sc);
	/**
	 * Scan up to sc->nr_to_scan objects of @sc's group and node and free
	 * what can be freed (uncharging it).  Return: objects freed (0 is a
	 * valid answer), or MCG_SHRINK_STOP.  Sets sc->nr_scanned if it
	 * scanned a different number.
	 */
	unsigned long (*scan_objects)(mcg_shrinker_t *s, mcg_shrink_control_t *sc);
	/** Cost of recreating an object, as the kernel's seeks: each pass scans
	 *  (freeable >> priority) * 4 / seeks.  0: MCG_DEFAULT_SEEKS.  (Trimming
	 *  half of what is freeable every pass is MCG_SHRINKER_TRIM_HALF.) */
	unsigned seeks;
	/** Objects per scan_objects call; 0: MCG_SHRINK_BATCH. */
	unsigned long batch;
	/** MCG_SHRINKER_*. */
	unsigned flags;
	/** The owner's data: mcg_shrinker_private(). */
	void *private_data;
} mcg_shrinker_ops_t;

/**
 * mcg_shrinker_create - a shrinker from @ops (copied), not yet registered:
 * create its list_lrus now, then mcg_shrinker_register().
 * Return: 0; -EINVAL (no callback, bad flags, seeks with MCG_SHRINKER_TRIM_HALF);
 * -ENOMEM; -ENOSPC (more than
 * MCG_SHRINKER_MAX shrinkers).  Pair with mcg_shrinker_destroy().
 */
int mcg_shrinker_create(const mcg_shrinker_ops_t *ops, mcg_shrinker_t **out);

/**
 * mcg_shrinker_register - make @s visible to reclaim.
 * Return: 0; -EINVAL (NULL, or already registered).
 */
int mcg_shrinker_register(mcg_shrinker_t *s);

/**
 * mcg_shrinker_unregister - hide @s from reclaim and wait until no reclaimer
 * runs its callbacks any more: afterwards they are never called again.
 * Must not be called from @s's own callbacks.  Idempotent.
 */
void mcg_shrinker_unregister(mcg_shrinker_t *s);

/** mcg_shrinker_destroy - unregister (if registered) and free @s.  NULL is ignored. */
void mcg_shrinker_destroy(mcg_shrinker_t *s);

/** mcg_shrinker_private - the ops' private_data. */
void *mcg_shrinker_private(const mcg_shrinker_t *s);

/**
 * mcg_list_lru_shrink_count - count_objects for a shrinker over @lru:
 * the objects of @sc's group and node (every node when the shrinker is
 * not NUMA-aware), MCG_SHRINK_EMPTY when none.
 */
unsigned long mcg_list_lru_shrink_count(mcg_list_lru_t *lru, const mcg_shrink_control_t *sc);

/**
 * mcg_list_lru_shrink_walk - walk @sc's group and node list (every node
 * in turn when the shrinker is not NUMA-aware) for up to sc->nr_to_scan
 * items (mcg_list_lru_walk_one()).  Return: items removed.
 */
unsigned long mcg_list_lru_shrink_walk(mcg_list_lru_t *lru, mcg_shrink_control_t *sc,
                                       mcg_lru_isolate_fn isolate, void *arg);

/* ============================================================ the reclaim driver */

/** Flags of mcg_reclaim(): the kind (counted apart in memory.stat) and modifiers. */
enum mcg_reclaim_flags {
	/** Kind: a charge over a limit (default; memory.stat pgscan_direct/pgsteal_direct). */
	MCG_RECLAIM_DIRECT = 0,
	/** Kind: the background reclaimer (pgscan_kswapd/pgsteal_kswapd). */
	MCG_RECLAIM_BACKGROUND = 1u << 0,
	/** Kind: memory.reclaim or other proactive reclaim (pgscan_proactive/...); stop as soon as
	   the goal is met. */
	MCG_RECLAIM_PROACTIVE = 1u << 1,
};

/** Reclaim statistics of one mcg_reclaim_ex() call. */
typedef struct mcg_reclaim_result {
	unsigned long reclaimed; /**< pages uncharged by the shrinkers */
	unsigned long scanned;   /**< objects scanned by the shrinkers */
	unsigned long freed;     /**< objects the shrinkers said they freed */
	unsigned long groups;    /**< group visits (groups with objects, not protected) */
	int priority;            /**< the last priority used (12..0) */
	bool low_reclaimed;      /**< it had to reclaim below memory.low */
} mcg_reclaim_result_t;

/**
 * mcg_reclaim - reclaim about @nr_pages (at least 32, the kernel's
 * SWAP_CLUSTER_MAX) from @g's subtree (NULL: the root = global reclaim,
 * which also calls shrinkers that are not memcg-aware).  Groups are
 * visited in pre-order from a cursor shared by all reclaimers of @g, at
 * priorities 12 down to 0, until enough was reclaimed.  A group at or
 * below its effective memory.min is never touched; one at or below its
 * effective memory.low only in a second pass when the first freed too
 * little, which counts a "low" event on it.  Pressure on a group is scaled
 * by its usage above its protection.  Runs the shrinkers in the calling
 * thread; takes no memcg lock across them.
 * Return: pages reclaimed (uncharged while running the shrinkers).
 */
unsigned long mcg_reclaim(mcg_group_t *g, unsigned long nr_pages, unsigned flags);

/** mcg_reclaim_ex - mcg_reclaim() that also fills @res (may be NULL). */
unsigned long mcg_reclaim_ex(mcg_group_t *g, unsigned long nr_pages, unsigned flags,
                             mcg_reclaim_result_t *res);

/**
 * mcg_reclaim_node - mcg_reclaim_ex() on NUMA node @nid only (the
 * kernel's node reclaim): NUMA-aware shrinkers are asked about their
 * objects on @nid, the others only when @nid is 0, and a group that holds
 * nothing on @nid for any shrinker is skipped without calling one (marks
 * are per node per group).  @nid out of range: 0, nothing done.
 * Return: pages reclaimed.
 */
unsigned long mcg_reclaim_node(mcg_group_t *g, unsigned nid, unsigned long nr_pages, unsigned flags,
                               mcg_reclaim_result_t *res);

/**
 * mcg_reclaim_protection - @g's effective memory.min and memory.low in
 * pages, as a reclaim of @root's subtree (NULL: the root) computes them
 * top-down (the kernel's effective_protection(), with its
 * memory_recursiveprot branch when that option is on).  For tests and tools.
 */
void mcg_reclaim_protection(mcg_group_t *root, mcg_group_t *g, unsigned long *emin,
                            unsigned long *elow);

/* ============================================================ OOM policy */

/**
 * OOM policy: a charge of @nr_pages could not fit under @over's memory.max
 * even after reclaim.  The policy may choose a victim group in @over's
 * subtree and "kill" it: cancel that tenant's work so that it releases
 * memory (synchronously or soon).
 * Return: the victim (an "oom_kill" event is counted on it, and the charge
 * is retried once more with full reclaim), or NULL (the charge fails with
 * -ENOMEM).  Runs in the charging thread with no memcg lock held; it may
 * uncharge, but a charge from it fails rather than recursing into OOM.
 * There is no memory.oom.group (nor its oom_group_kill event): a policy
 * that treats a subtree as one workload kills all of it itself.
 */
typedef mcg_group_t *(*mcg_oom_policy_fn)(mcg_group_t *over, unsigned long nr_pages, void *arg);

/**
 * mcg_oom_set_policy - install @fn (NULL: none, charges just fail) with
 * @arg, process-wide.  Every OOM counts one "oom" event on @over, whether
 * or not a policy kills.
 */
void mcg_oom_set_policy(mcg_oom_policy_fn fn, void *arg);

/* ============================================================ high throttling */

/**
 * mcg_reclaim_high_delay_ms - the throttling delay, in milliseconds, that
 * a charge of @nr_pages would be given now in @g (the kernel's
 * calculate_high_delay(): quadratic in the largest relative overage of @g
 * and its ancestors above memory.high, scaled by @nr_pages / 64, capped at
 * 2000 ms; below 10 ms none is applied).  For tests and tools.
 */
unsigned long mcg_reclaim_high_delay_ms(mcg_group_t *g, unsigned long nr_pages);

#ifdef __cplusplus
}
#endif
#endif /* MEMCG_RECLAIM_H */
