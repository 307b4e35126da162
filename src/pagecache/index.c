/* SPDX-License-Identifier: MIT */
/*
 * pagecache/index.c - a file's page index: a radix tree with tags (see
 * index.h for the invariants and why).  A node at level l holds slots for
 * index digit l, (i >> 6l) & 63; leaves are level 0; the root is level
 * height - 1.  Changes run under the file's mapping lock, lookups under
 * it or in a read section (index.h); nothing here allocates, and nodes
 * are retired (rcu.h) from the freed chain outside the lock.
 */
#include "pagecache/index.h"

#include <errno.h>
#include <string.h>

#include "base/compiler.h"
#include "base/fault.h"
#include "base/log.h"
#include "memcg/kmalloc.h"
#include "pagecache/rcu.h"

#define SLOT_MASK ((uint64_t)MCG_INDEX_SLOTS - 1)

/* A node's range (its shift + MCG_INDEX_SHIFT bits) is below 2^64 at
 * every level, so the shifts by it below are defined. */
_Static_assert(MCG_INDEX_SHIFT *MCG_INDEX_MAX_HEIGHT < 64, "a node's range fits a shift");

/* The levels a tree needs to hold index @i. */
static unsigned levels_for(uint64_t i)
{
	unsigned h = 1;
	while (h < MCG_INDEX_MAX_HEIGHT && (i >> (MCG_INDEX_SHIFT * h)))
		h++;
	return h;
}

/* Does a tree of @height levels cover @i? */
static bool covers(unsigned height, uint64_t i)
{
	return height >= MCG_INDEX_MAX_HEIGHT || !(i >> (MCG_INDEX_SHIFT * height));
}

static unsigned digit(const struct mcg_index_node *n, uint64_t i)
{
	return (unsigned)((i >> n->shift) & SLOT_MASK);
}

/*
 * The walk takes each level's shift from the root's and counts down, so
 * the address of a node's slot depends on no load from the node itself:
 * a leaf costs the one line holding the slot (and its hint's, fetched
 * beside it), not its header first.
 */
static inline void *lookup_(const struct mcg_index *ix, uint64_t i, void **aux)
{
	const struct mcg_index_node *n = __atomic_load_n(&ix->root, __ATOMIC_SEQ_CST);
	if (!n)
		return NULL;
	unsigned shift = n->shift;
	if (i >> (shift + MCG_INDEX_SHIFT))
		return NULL;
	for (;;) {
		unsigned s = (unsigned)((i >> shift) & SLOT_MASK);
		if (!shift) {
			if (aux)
				*aux = __atomic_load_n(&n->slots[s].aux, __ATOMIC_RELAXED);
			return __atomic_load_n(&n->slots[s].p, __ATOMIC_SEQ_CST);
		}
		n = __atomic_load_n(&n->slots[s].p, __ATOMIC_SEQ_CST);
		if (!n)
			return NULL;
		shift -= MCG_INDEX_SHIFT;
	}
}

void *mcg_index_lookup(const struct mcg_index *ix, uint64_t i) { return lookup_(ix, i, NULL); }

void *mcg_index_lookup_aux(const struct mcg_index *ix, uint64_t i, void **aux)
{
	return lookup_(ix, i, aux);
}

/* The leaf holding @i's slot, or NULL. */
static struct mcg_index_node *leaf_of(const struct mcg_index *ix, uint64_t i)
{
	struct mcg_index_node *n = ix->root;
	if (!n || !covers(ix->height, i))
		return NULL;
	while (n && n->shift)
		n = n->slots[digit(n, i)].p;
	return n;
}

unsigned mcg_index_nodes_needed(const struct mcg_index *ix, uint64_t i)
{
	if (leaf_of(ix, i))
		return 0; /* (the common case: a neighbour's leaf) */
	if (!ix->root)
		return levels_for(i); /* a root and one node per level below */
	unsigned height = ix->height, top = MCG_MAX(height, levels_for(i));
	unsigned need = top - height; /* new levels above the old root (its slot-0 chain) */
	/* Below the top, down to the old root's level: the chain's nodes are on
	 * i's path only where i's higher digits are all zero - never, when i
	 * is what made the tree grow (it has a digit at the top's level), so
	 * each of those levels needs a node of its own. */
	if (top > height)
		need += top - 1 - height;
	const struct mcg_index_node *n = covers(height, i) ? ix->root : NULL;
	if (!n)
		need++; /* the path misses the old root: a new node at its level */
	for (int l = (int)height - 2; l >= 0; l--) {
		if (n)
			n = n->slots[(i >> (MCG_INDEX_SHIFT * (l + 1))) & SLOT_MASK].p;
		if (!n)
			need++;
	}
	return need;
}

int mcg_index_preload(struct mcg_index_preload *pl, unsigned n)
{
	MCG_BUG_ON(n > MCG_ARRAY_SIZE(pl->nodes)); /* (MCG_INDEX_PRELOAD_MAX) */
	while (pl->n < n) {
		struct mcg_index_node *node =
		        mcg_fault_should_fail() ? NULL : mcg_malloc(sizeof(*node));
		if (!node)
			return -ENOMEM;
		pl->nodes[pl->n++] = node;
	}
	return 0;
}

void mcg_index_preload_end(struct mcg_index_preload *pl)
{
	while (pl->n)
		mcg_free(pl->nodes[--pl->n]);
}

static struct mcg_index_node *node_take(struct mcg_index_preload *pl, unsigned level)
{
	struct mcg_index_node *n = pl->nodes[--pl->n];
	memset(n, 0, sizeof(*n));
	n->shift = (uint8_t)(level * MCG_INDEX_SHIFT);
	return n;
}

/* Store @p in slot @s of @n for the lockless readers (after @p's contents). */
static inline void slot_publish(struct mcg_index_node *n, unsigned s, void *p)
{
	__atomic_store_n(&n->slots[s].p, p, __ATOMIC_SEQ_CST);
}

/* Hang @child in slot @s of @parent, with its tags summarised. */
static void node_link(struct mcg_index_node *parent, unsigned s, struct mcg_index_node *child)
{
	child->parent = parent;
	child->offset = (uint8_t)s;
	for (int t = 0; t < MCG_NR_TAGS; t++)
		if (child->tags[t])
			parent->tags[t] |= 1ull << s;
	parent->used |= 1ull << s;
	parent->count++;
	slot_publish(parent, s, child); /* last: a reader may follow it at once */
}

int mcg_index_insert(struct mcg_index *ix, uint64_t i, void *item, struct mcg_index_preload *pl)
{
	return mcg_index_insert_aux(ix, i, item, NULL, pl);
}

int mcg_index_insert_aux(struct mcg_index *ix, uint64_t i, void *item, void *aux,
                         struct mcg_index_preload *pl)
{
	if (mcg_index_lookup(ix, i))
		return -EEXIST;
	if (pl->n < mcg_index_nodes_needed(ix, i))
		return -ENOMEM;
	unsigned want = levels_for(i);
	if (!ix->root) {
		ix->height = want;
		__atomic_store_n(&ix->root, node_take(pl, want - 1), __ATOMIC_SEQ_CST);
	}
	while (ix->height < want) { /* grow: the old root goes to slot 0 of a new one */
		struct mcg_index_node *top = node_take(pl, ix->height);
		node_link(top, 0, ix->root);
		ix->height++;
		__atomic_store_n(&ix->root, top, __ATOMIC_SEQ_CST);
	}
	struct mcg_index_node *n = ix->root;
	while (n->shift) {
		unsigned s = digit(n, i);
		if (!n->slots[s].p)
			node_link(n, s, node_take(pl, n->shift / MCG_INDEX_SHIFT - 1u));
		n = n->slots[s].p;
	}
	unsigned s = digit(n, i);
	__atomic_store_n(&n->slots[s].aux, aux, __ATOMIC_RELAXED);
	n->used |= 1ull << s;
	n->count++;
	ix->nr++;
	slot_publish(n, s, item);
	return 0;
}

/* Clear bit @s of @tag in @n, and upward while a node's word goes to 0. */
static void tag_clear_up(struct mcg_index_node *n, unsigned s, unsigned tag)
{
	while (n) {
		if (!(n->tags[tag] & (1ull << s)))
			return;
		n->tags[tag] &= ~(1ull << s);
		if (n->tags[tag])
			return;
		s = n->offset;
		n = n->parent;
	}
}

void *mcg_index_delete(struct mcg_index *ix, uint64_t i, struct mcg_index_node **freed)
{
	struct mcg_index_node *n = leaf_of(ix, i);
	unsigned s = n ? digit(n, i) : 0;
	if (!n || !n->slots[s].p)
		return NULL;
	void *item = n->slots[s].p;
	for (int t = 0; t < MCG_NR_TAGS; t++)
		tag_clear_up(n, s, (unsigned)t);
	slot_publish(n, s, NULL);
	__atomic_store_n(&n->slots[s].aux, NULL, __ATOMIC_RELAXED);
	n->used &= ~(1ull << s);
	n->count--;
	ix->nr--;
	/* Free nodes left empty, bottom up. */
	while (n && !n->count) {
		struct mcg_index_node *parent = n->parent;
		if (parent) {
			unsigned off = n->offset;
			slot_publish(parent, off, NULL);
			parent->used &= ~(1ull << off);
			parent->count--;
		} else {
			__atomic_store_n(&ix->root, NULL, __ATOMIC_SEQ_CST);
			ix->height = 0;
		}
		n->parent = *freed;
		*freed = n;
		n = parent;
	}
	/* Shrink: a root using only slot 0 gives way to its child. */
	while (ix->height > 1 && ix->root->used == 1) {
		struct mcg_index_node *old = ix->root;
		struct mcg_index_node *child = old->slots[0].p;
		child->parent = NULL;
		child->offset = 0;
		ix->height--;
		/* (a reader still in @old goes down its slot 0: it stays) */
		__atomic_store_n(&ix->root, child, __ATOMIC_SEQ_CST);
		old->parent = *freed;
		*freed = old;
	}
	return item;
}

static void node_free_rcu(struct mcg_rcu_head *h)
{
	mcg_free(mcg_container_of(h, struct mcg_index_node, rcu));
}

static struct mcg_rcu_kind node_rcu = {.free = node_free_rcu};

void mcg_index_free_nodes(struct mcg_index_node *freed)
{
	while (freed) {
		struct mcg_index_node *next = freed->parent;
		mcg_rcu_retire(&node_rcu, &freed->rcu);
		freed = next;
	}
}

void mcg_index_tag_set(struct mcg_index *ix, uint64_t i, enum mcg_index_tag tag)
{
	struct mcg_index_node *n = leaf_of(ix, i);
	MCG_BUG_ON(!n || !n->slots[digit(n, i)].p);
	unsigned s = digit(n, i);
	while (n && !(n->tags[tag] & (1ull << s))) {
		n->tags[tag] |= 1ull << s;
		s = n->offset;
		n = n->parent;
	}
}

void mcg_index_tag_clear(struct mcg_index *ix, uint64_t i, enum mcg_index_tag tag)
{
	struct mcg_index_node *n = leaf_of(ix, i);
	if (n)
		tag_clear_up(n, digit(n, i), tag);
}

bool mcg_index_tag_get(const struct mcg_index *ix, uint64_t i, enum mcg_index_tag tag)
{
	const struct mcg_index_node *n = leaf_of(ix, i);
	return n && (n->tags[tag] & (1ull << digit(n, i)));
}

void *mcg_index_next(const struct mcg_index *ix, uint64_t start, unsigned tag, uint64_t *at)
{
	const struct mcg_index_node *n = ix->root;
	if (!n || !covers(ix->height, start))
		return NULL;
	uint64_t i = start;
	while (n) {
		unsigned off = digit(n, i);
		uint64_t bits = (tag < MCG_NR_TAGS ? n->tags[tag] : n->used) & (~0ull << off);
		unsigned span = n->shift + MCG_INDEX_SHIFT; /* bits this node covers */
		if (!bits) {
			/* Nothing here at or after i: on after this node's range, in
			 * the nearest ancestor whose range goes on past it. */
			uint64_t old = i;
			i = ((i >> span) + 1) << span;
			bool wrapped = !i; /* (only from a start past the top level's range) */
			for (n = n->parent; n; n = n->parent) {
				unsigned pspan = n->shift + MCG_INDEX_SHIFT;
				if (!wrapped && (i >> pspan) == (old >> pspan))
					break;
			}
			continue;
		}
		unsigned s = (unsigned)__builtin_ctzll(bits);
		if (s != off) /* the start of slot s */
			i = ((i >> span) << span) | ((uint64_t)s << n->shift);
		if (!n->shift) {
			*at = i;
			return n->slots[s].p;
		}
		n = n->slots[s].p;
	}
	return NULL;
}

uint64_t mcg_index_tagged_span(const struct mcg_index *ix, uint64_t start, unsigned tag,
                               uint64_t max)
{
	uint64_t n = 0, i = start;
	while (n < max) {
		const struct mcg_index_node *leaf = leaf_of(ix, i);
		if (!leaf)
			break;
		unsigned s = digit(leaf, i);
		/* Zeros shifted in end it: the run is at most MCG_INDEX_SLOTS - s
		 * (all 64 only from slot 0 of a leaf tagged throughout). */
		uint64_t ahead = ~(leaf->tags[tag] >> s);
		unsigned run = ahead ? (unsigned)__builtin_ctzll(ahead) : MCG_INDEX_SLOTS;
		n += run;
		if (s + run < MCG_INDEX_SLOTS)
			break; /* the span ends in this leaf (indices stay below 2^54: no wrap) */
		i += run;
	}
	return MCG_MIN(n, max);
}
