/* SPDX-License-Identifier: MIT */
/*
 * group/names.c - the index of online groups by (parent, name): what
 * mcg_group_create() checks for a duplicate and mcg_group_lookup() follows,
 * in O(1) however many siblings there are (a scan of the parent's children
 * would make creating N siblings cost O(N^2)).
 *
 * A chained hash table, grown by doubling when it holds more groups than
 * buckets.  It starts in a static array (no allocation for the first
 * groups); a larger one is mapped from the OS, and if that fails the table
 * stays as it is (longer chains, nothing lost).  Only online groups are in
 * it: a removed group leaves at once, so its name is free for a new group.
 *
 * Lock: the tree lock, for everything here.
 */
#include <string.h>

#include "base/mm_const.h"
#include "group/group.h"
#include "os/os.h"

#define INITIAL_BUCKETS 64

static struct mcg_group *initial[INITIAL_BUCKETS];
static struct mcg_group **buckets = initial;
static size_t nbuckets = INITIAL_BUCKETS; /* a power of two */
static size_t count;

static size_t name_hash(const struct mcg_group *parent, const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)(uintptr_t)parent; /* FNV-1a */
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 0x100000001b3ull;
	return (size_t)(h ^ (h >> 29));
}

static struct mcg_group **bucket_of(const struct mcg_group *g)
{
	return &buckets[name_hash(g->parent, g->name, g->name_len) & (nbuckets - 1)];
}

/* Twice the buckets, if the OS gives the memory. */
static void grow_locked(void)
{
	size_t n = nbuckets * 2;
	struct mcg_group **b = mcg_os_map(n * sizeof(*b), MCG_PAGE_SIZE);
	if (!b)
		return;
	struct mcg_group **old = buckets;
	size_t oldn = nbuckets;
	buckets = b;
	nbuckets = n;
	for (size_t i = 0; i < oldn; i++) {
		for (struct mcg_group *g = old[i], *next; g; g = next) {
			next = g->name_next;
			struct mcg_group **at = bucket_of(g);
			g->name_next = *at;
			*at = g;
		}
	}
	if (old != initial)
		mcg_os_unmap(old, oldn * sizeof(*old));
}

struct mcg_group *mcg_group_names_find_locked(const struct mcg_group *parent, const char *name,
                                              size_t len)
{
	size_t i = name_hash(parent, name, len) & (nbuckets - 1);
	for (struct mcg_group *g = buckets[i]; g; g = g->name_next)
		if (g->parent == parent && g->name_len == len && !memcmp(g->name, name, len))
			return g;
	return NULL;
}

void mcg_group_names_add_locked(struct mcg_group *g)
{
	if (count >= nbuckets)
		grow_locked();
	struct mcg_group **at = bucket_of(g);
	g->name_next = *at;
	*at = g;
	count++;
}

void mcg_group_names_del_locked(struct mcg_group *g)
{
	for (struct mcg_group **at = bucket_of(g); *at; at = &(*at)->name_next) {
		if (*at == g) {
			*at = g->name_next;
			g->name_next = NULL;
			count--;
			return;
		}
	}
}
