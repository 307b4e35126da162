/* SPDX-License-Identifier: MIT */
/*
 * reclaim/shrinker.h - shrinkers, their ids, and each group's reclaim info
 * (the kernel's shrinker_info): which shrinkers have objects in the group,
 * their deferred work per node, and the group's list_lru lists.
 *
 *   shrinker.c - the registry (ids, register/unregister with waiting),
 *                per-group info, do_shrink_slab's arithmetic, shrink_slab
 *   list_lru.c - list_lru, with lists per group per node hung off the info
 *   vmscan.c   - the reclaim driver (walk, priorities, protection, high)
 *   oom.c      - the OOM policy
 *
 * Ids: every shrinker, and every list_lru created without a shrinker, owns
 * one id in [0, MCG_SHRINKER_MAX).  A memcg-aware list_lru uses its
 * shrinker's id.  A group's info is indexed by id: bit `id` of map[nid]
 * says "this group may have objects for shrinker id on node nid" (the
 * kernel's shrinker_info per node; set on a list's first object; cleared
 * by reclaim when count_objects says MCG_SHRINK_EMPTY, then rechecked).
 * A shrinker that is not NUMA-aware is asked on node 0 only, about all
 * its objects: its marks are all in map[0] (mcg_shrinker_mark_nid()).
 * Chunk id / 64 holds the id's lists and deferred counts.  Chunks are allocated on first use and
 * published with a CAS; they live as long as the group.
 *
 * Locks: the registry lock (MCG_RANK_SHRINKER) protects the id table, the
 * registered flags and the refcounts' zero crossing; nothing is taken under
 * it.  Reclaim holds a reference on a shrinker (refcnt) while it calls it;
 * unregister waits for the references to go.
 */
#ifndef MCG_RECLAIM_SHRINKER_H
#define MCG_RECLAIM_SHRINKER_H

#include "base/lock.h"
#include "group/group.h"
#include "memcg/reclaim.h"

#define MCG_IDS_PER_CHUNK 64
#define MCG_NR_CHUNKS (MCG_SHRINKER_MAX / MCG_IDS_PER_CHUNK)

struct mcg_lru_memcg; /* list_lru.c: one list_lru's lists of one group */

/* One chunk of 64 ids of a group's info. */
struct mcg_reclaim_chunk {
	struct mcg_lru_memcg *lru[MCG_IDS_PER_CHUNK]; /* atomic pointers */
	long deferred[];                              /* [id % 64 * nr_nodes + nid], atomic */
};

/* A group's reclaim info (group->reclaim). */
struct mcg_reclaim_info {
	int dead;      /* the group went offline: new lists are reparented at once (atomic) */
	long nr_marks; /* bits set in all maps (atomic); 0 <-> 1 moves `populated` up the tree */
	struct mcg_reclaim_chunk *chunks[MCG_NR_CHUNKS]; /* atomic pointers */
	unsigned long map[][MCG_SHRINKER_MAX / 64];      /* [nid]: atomic bits */
};

struct mcg_shrinker {
	mcg_shrinker_ops_t ops;
	char name[32];
	int id;
	bool registered;   /* registry lock */
	long refcnt;       /* 1 while registered + reclaimers calling it (registry lock) */
	long *nr_deferred; /* per node: not memcg-aware, or the root's objects */
};

/** mcg_reclaim_info_get - @g's info, allocated if needed; NULL on -ENOMEM. */
struct mcg_reclaim_info *mcg_reclaim_info_get(mcg_group_t *g);

/** mcg_reclaim_info_peek - @g's info or NULL (no allocation). */
static inline struct mcg_reclaim_info *mcg_reclaim_info_peek(const mcg_group_t *g)
{
	return __atomic_load_n(&g->reclaim, __ATOMIC_ACQUIRE);
}

/** mcg_reclaim_chunk_get - chunk of @id in @info, allocated if needed; NULL on -ENOMEM. */
struct mcg_reclaim_chunk *mcg_reclaim_chunk_get(struct mcg_reclaim_info *info, int id);

/** mcg_reclaim_chunk_peek - chunk of @id in @info or NULL. */
static inline struct mcg_reclaim_chunk *mcg_reclaim_chunk_peek(const struct mcg_reclaim_info *info,
                                                               int id)
{
	return __atomic_load_n(&info->chunks[id / MCG_IDS_PER_CHUNK], __ATOMIC_ACQUIRE);
}

/** mcg_shrinker_mark - set bit @id in @g's map of node @nid (info exists). */
void mcg_shrinker_mark(mcg_group_t *g, int id, unsigned nid);

/** mcg_shrinker_mark_nid - the map an object of shrinker @id on node @nid marks:
 * @nid for a NUMA-aware shrinker, else 0. */
unsigned mcg_shrinker_mark_nid(int id, unsigned nid);

/** mcg_reclaim_info_marked - whether @g has a mark on node @nid (any node: @nid -1). */
bool mcg_reclaim_info_marked(const mcg_group_t *g, int nid);

/** The lock of every group's populated count and pop_children / pop_sibling. */
extern mcg_lock_t mcg_populated_lock;

/** mcg_shrinker_id_alloc / _free - an id for a list_lru without a shrinker. */
int mcg_shrinker_id_alloc(void);
void mcg_shrinker_id_free(int id);

/** mcg_shrinker_ids_in_use - ids held by shrinkers and list_lrus (for leak tests). */
int mcg_shrinker_ids_in_use(void);

/** mcg_reclaim_info_free - free @g's info at release (its lists are empty). */
void mcg_reclaim_info_free(mcg_group_t *g);

/** mcg_list_lru_reparent - move @g's objects of every list_lru to its parent (offline). */
void mcg_list_lru_reparent(mcg_group_t *g);

/** mcg_list_lru_free_group - free @g's lists (release; they are empty and dead). */
void mcg_list_lru_free_group(struct mcg_lru_memcg *m);

/* What the calling reclaimer wants: scanning stops once it has it. */
struct mcg_reclaim_goal {
	const struct mcg_reclaim_state *state; /* pages reclaimed so far */
	unsigned long nr_to_reclaim;
};

/*
 * mcg_shrink_slab - run the shrinkers of @g on node @nid at @priority (the
 * kernel's shrink_slab): memcg-aware ones with a mark in @g, and for the
 * root all the others too.  @protection (pages) and @size scale the
 * pressure (0: none).  Adds objects scanned and freed to *@scanned, *@freed.
 * @goal (NULL: none) stops scanning early once met.
 */
void mcg_shrink_slab(mcg_group_t *g, unsigned nid, int priority, unsigned long protection,
                     unsigned long size, unsigned long *scanned, unsigned long *freed,
                     const struct mcg_reclaim_goal *goal);

#endif /* MCG_RECLAIM_SHRINKER_H */
