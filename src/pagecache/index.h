/* SPDX-License-Identifier: MIT */
/*
 * pagecache/index.h - a file's page index: a radix tree of 64-way nodes
 * mapping a page index (file offset / 4096) to an item (a cached page),
 * with three tags per entry (the kernel's xarray marks): DIRTY, WRITEBACK,
 * TOWRITE.
 *
 * Why a radix tree and not a hash: writeback walks a file's dirty pages in
 * file order (runs of contiguous pages become one backing write), fsync
 * tags the dirty pages it must write (TOWRITE) and then walks only those,
 * and truncate removes a range - all "next entry with tag T at or after
 * index i" questions, which a node's tag word answers for 64 slots at a
 * time (one bit per slot, set in a node iff some entry below that slot has
 * the tag).  A lookup is `height` dependent loads (3 up to 1 GiB, 4 up to
 * 64 GiB); a hash would be one or two, but would need a second structure
 * for the ordered, tagged walks.
 *
 * Invariants: the root covers indices [0, 64^height); every node but the
 * root has count > 0 (empty nodes are freed at once, and the height shrinks
 * while the root has only slot 0 used); a tag bit of a node is set iff a
 * tag bit (or a tagged entry) below that slot is.
 *
 * Locks: none of its own.  The owner (pagecache/inode.h: the file's mapping
 * lock) serialises every change; mcg_index_lookup() and _lookup_aux() may
 * also run with no lock inside a read section (rcu.h): slots and the root
 * are stored atomically after what they point to is built, and nodes
 * removed are retired, not freed, so such a walk sees an old or a new
 * tree, never freed or half-built memory.  Nothing here allocates: an insert that
 * needs nodes takes them from a preload the caller filled before taking its
 * lock (mcg_index_preload()), and deletion hands emptied nodes back on a
 * list the caller hands to mcg_index_free_nodes() after dropping it
 * (allocation and freeing take slab locks, which rank below the mapping
 * lock).
 */
#ifndef MCG_PAGECACHE_INDEX_H
#define MCG_PAGECACHE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pagecache/rcu.h"

#define MCG_INDEX_SHIFT 6
#define MCG_INDEX_SLOTS (1u << MCG_INDEX_SHIFT)
/** Levels enough for every page index of a 64-bit file offset (2^52 pages). */
#define MCG_INDEX_MAX_HEIGHT 9

enum mcg_index_tag {
	MCG_TAG_DIRTY,     /* the page holds data newer than the backing file */
	MCG_TAG_WRITEBACK, /* the page is being written */
	MCG_TAG_TOWRITE,   /* fsync must write it (tagged at fsync's start) */
	MCG_NR_TAGS
};

struct mcg_index_node {
	struct mcg_index_node *parent;
	uint8_t shift;  /* index bits below each slot: 0 in leaves */
	uint8_t offset; /* this node's slot in its parent */
	uint16_t count; /* slots in use */
	uint32_t pad_;
	uint64_t used; /* bit s: slots[s].p is in use */
	uint64_t tags[MCG_NR_TAGS];
	/* Children, or items in leaves, each beside its hint (leaves), so a
	 * lookup reads one line of a leaf for both (atomic stores). */
	struct {
		void *p;
		void *aux;
	} slots[MCG_INDEX_SLOTS];
	struct mcg_rcu_head rcu; /* freed: waiting for the readers */
};

struct mcg_index {
	struct mcg_index_node *root; /* NULL when empty */
	unsigned height;             /* 0 when empty */
	unsigned long nr;            /* entries */
};

/*
 * The most nodes one insert needs (mcg_index_nodes_needed()): under a root
 * of height h < MCG_INDEX_MAX_HEIGHT, an index at the top of the range
 * takes MCG_INDEX_MAX_HEIGHT - h new levels above the old root and a new
 * node at every level of its own path below them, 2 MCG_INDEX_MAX_HEIGHT
 * - 1 - h in all: at most 2 MCG_INDEX_MAX_HEIGHT - 2, for h = 1.
 */
#define MCG_INDEX_PRELOAD_MAX (2 * MCG_INDEX_MAX_HEIGHT - 2)

/** Nodes an insert may need, taken before the caller's lock. */
struct mcg_index_preload {
	unsigned n;
	struct mcg_index_node *nodes[MCG_INDEX_PRELOAD_MAX];
};

/** mcg_index_init - an empty index. */
static inline void mcg_index_init(struct mcg_index *ix)
{
	ix->root = NULL;
	ix->height = 0;
	ix->nr = 0;
}

/** mcg_index_lookup - the item at @i, or NULL. */
void *mcg_index_lookup(const struct mcg_index *ix, uint64_t i);

/**
 * mcg_index_lookup_aux - the item at @i, or NULL; *@aux gets the hint
 * stored with it (mcg_index_insert_aux()).  The leaf's slot and hint share
 * a line, so a caller can start on what the hint points at while it reads
 * the item.
 */
void *mcg_index_lookup_aux(const struct mcg_index *ix, uint64_t i, void **aux);

/**
 * mcg_index_nodes_needed - how many nodes inserting at @i needs now
 * (0 when the leaf exists; at most MCG_INDEX_PRELOAD_MAX).
 */
unsigned mcg_index_nodes_needed(const struct mcg_index *ix, uint64_t i);

/**
 * mcg_index_preload - allocate @n (at most MCG_INDEX_PRELOAD_MAX) nodes
 * into @pl, counting those it holds already (no lock held).
 * Return: 0, or -ENOMEM (fault injected or no memory; @pl keeps what it got).
 * Pair with mcg_index_preload_end().
 */
int mcg_index_preload(struct mcg_index_preload *pl, unsigned n);

/** mcg_index_preload_end - free the nodes @pl still holds (no lock held). */
void mcg_index_preload_end(struct mcg_index_preload *pl);

/**
 * mcg_index_insert - store @item (not NULL) at @i, with no tags.
 * Return: 0; -EEXIST (@i holds an item: nothing changed); -ENOMEM (the
 * preload holds fewer nodes than mcg_index_nodes_needed(): nothing changed).
 */
int mcg_index_insert(struct mcg_index *ix, uint64_t i, void *item, struct mcg_index_preload *pl);

/** mcg_index_insert_aux - mcg_index_insert() with a hint @aux stored beside @item. */
int mcg_index_insert_aux(struct mcg_index *ix, uint64_t i, void *item, void *aux,
                         struct mcg_index_preload *pl);

/**
 * mcg_index_delete - remove the item at @i and its tags.  Nodes left empty
 * are chained on *@freed (through their parent field) for the caller to
 * free with mcg_index_free_nodes() after dropping its lock.
 * Return: the item removed, or NULL (none at @i).
 */
void *mcg_index_delete(struct mcg_index *ix, uint64_t i, struct mcg_index_node **freed);

/**
 * mcg_index_free_nodes - retire a chain built by mcg_index_delete(): each
 * node is freed once no read section can be walking it (no lock held).
 */
void mcg_index_free_nodes(struct mcg_index_node *freed);

/** mcg_index_tag_set - tag the entry at @i (which must exist). */
void mcg_index_tag_set(struct mcg_index *ix, uint64_t i, enum mcg_index_tag tag);

/** mcg_index_tag_clear - clear @tag of the entry at @i (nothing if none). */
void mcg_index_tag_clear(struct mcg_index *ix, uint64_t i, enum mcg_index_tag tag);

/** mcg_index_tag_get - whether the entry at @i has @tag. */
bool mcg_index_tag_get(const struct mcg_index *ix, uint64_t i, enum mcg_index_tag tag);

/** mcg_index_tagged - whether any entry has @tag. */
static inline bool mcg_index_tagged(const struct mcg_index *ix, enum mcg_index_tag tag)
{
	return ix->root && ix->root->tags[tag];
}

/**
 * mcg_index_next - the first item at an index >= @start (*@at gets it),
 * with @tag when @tag < MCG_NR_TAGS, any item when @tag == MCG_NR_TAGS.
 * Return: the item, or NULL (none).
 */
void *mcg_index_next(const struct mcg_index *ix, uint64_t start, unsigned tag, uint64_t *at);

/**
 * mcg_index_tagged_span - how many entries from @start on, one after
 * another with no gap, have @tag (< MCG_NR_TAGS); at most @max.  One
 * leaf per 64 entries.
 */
uint64_t mcg_index_tagged_span(const struct mcg_index *ix, uint64_t start, unsigned tag,
                               uint64_t max);

#endif /* MCG_PAGECACHE_INDEX_H */
