/* SPDX-License-Identifier: MIT */
/*
 * page/pages.c - the page allocator (see pages.h).
 *
 * Each node keeps a list of its SLABS chunks that have a free unit.  A span
 * of 2^k units starts at a multiple of 2^k, found by testing the chunk's
 * free_units mask; unit 0 is the header and never free.
 */
#include "base/mm_const.h"
#include "page/pages.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "base/lock.h"
#include "base/log.h"
#include "os/os.h"
#include "page/large.h"

#define ALL_UNITS_FREE (~1ull) /* every unit but the header */

struct page_node {
	mcg_lock_t lock;
	struct mcg_list avail; /* chunks with a free unit */
} mcg_cacheline_aligned;

static struct page_node page_nodes[MCG_MAX_NODES];
static size_t pages_in_use;
static pthread_once_t pages_once = PTHREAD_ONCE_INIT;

static void pages_init_once(void)
{
	for (unsigned n = 0; n < MCG_MAX_NODES; n++) {
		mcg_lock_init(&page_nodes[n].lock, MCG_RANK_PAGE);
		mcg_list_init(&page_nodes[n].avail);
	}
}

int mcg_pages_init(void)
{
	pthread_once(&pages_once, pages_init_once);
	return 0;
}

static struct mcg_chunk *chunk_create(unsigned node)
{
	struct mcg_chunk *c = mcg_os_map(MCG_CHUNK_SIZE, MCG_CHUNK_SIZE);
	if (!c)
		return NULL;
	mcg_os_bind(c, MCG_CHUNK_SIZE, node);
	c->magic = MCG_CHUNK_MAGIC;
	c->node = (uint16_t)node;
	c->kind = MCG_CHUNK_SLABS;
	c->free_units = ALL_UNITS_FREE;
	c->map_size = MCG_CHUNK_SIZE;
	mcg_list_init(&c->link);
	mcg_chunk_register(c);
	return c;
}

/* The mask of a span of @units at unit 0: a span is at most half a chunk
 * (mcg_pages_alloc's check), so @units < 64 and the shift is defined. */
static inline uint64_t span_mask(unsigned units)
{
	_Static_assert(MCG_UNITS_PER_CHUNK / 2 < 64, "a span's mask fits a shift of 1ull");
	return (1ull << units) - 1;
}

/* First unit of a free aligned run of @units in @c, or 0 if none. */
static unsigned chunk_find_span(const struct mcg_chunk *c, unsigned units)
{
	uint64_t want = span_mask(units);
	for (unsigned u = units; u + units <= MCG_UNITS_PER_CHUNK; u += units) {
		uint64_t m = want << u;
		if ((c->free_units & m) == m)
			return u;
	}
	return 0;
}

void *mcg_pages_alloc(unsigned node, unsigned units)
{
	MCG_BUG_ON(units == 0 || units > MCG_UNITS_PER_CHUNK / 2 || (units & (units - 1)));
	struct page_node *pn = &page_nodes[node];
	struct mcg_chunk *c = NULL, *fresh = NULL;
	unsigned u = 0;

	mcg_lock(&pn->lock);
	for (;;) {
		mcg_list_for_each (pos, &pn->avail) {
			struct mcg_chunk *cand = mcg_list_entry(pos, struct mcg_chunk, link);
			u = chunk_find_span(cand, units);
			if (u) {
				c = cand;
				break;
			}
		}
		if (c || fresh)
			break;
		mcg_unlock(&pn->lock);
		fresh = chunk_create(node);
		mcg_lock(&pn->lock);
		if (!fresh)
			break;
		mcg_list_add_tail(&fresh->link, &pn->avail);
	}
	if (c) {
		uint64_t m = span_mask(units) << u;
		c->idle_steps = 0;
		c->free_units &= ~m;
		if (c->free_units == 0)
			mcg_list_del(&c->link);
	}
	mcg_unlock(&pn->lock);
	if (!c)
		return NULL;
	__atomic_add_fetch(&pages_in_use, (size_t)units << MCG_UNIT_SHIFT, __ATOMIC_RELAXED);
	return (char *)c + ((size_t)u << MCG_UNIT_SHIFT);
}

void mcg_pages_free(void *span, unsigned units)
{
	struct mcg_chunk *c = mcg_chunk_of(span);
	MCG_BUG_ON(!c || c->kind != MCG_CHUNK_SLABS);
	unsigned u = mcg_chunk_unit(c, span);
	struct page_node *pn = &page_nodes[c->node];

	/* The span is not yet free: nobody else can touch it while we madvise. */
	mcg_os_decommit(span, (size_t)units << MCG_UNIT_SHIFT);
	__atomic_sub_fetch(&pages_in_use, (size_t)units << MCG_UNIT_SHIFT, __ATOMIC_RELAXED);

	mcg_lock(&pn->lock);
	if (c->free_units == 0)
		mcg_list_add_tail(&c->link, &pn->avail);
	c->free_units |= span_mask(units) << u;
	bool all_free = c->free_units == ALL_UNITS_FREE;
	if (all_free) {
		/* Descriptor and bitmap pages: zero them and give them back. */
		char *meta = (char *)c->meta;
		size_t off = MCG_ALIGN_UP((uintptr_t)meta, MCG_PAGE_SIZE) - (uintptr_t)meta;
		memset(meta, 0, off);
		mcg_os_decommit(meta + off, sizeof(*c) - offsetof(struct mcg_chunk, meta) - off);
	}
	mcg_unlock(&pn->lock);
}

size_t mcg_pages_in_use(void) { return __atomic_load_n(&pages_in_use, __ATOMIC_RELAXED); }

size_t mcg_pages_age(unsigned keep)
{
	size_t bytes = 0;
	for (unsigned n = 0; n < mcg_os_nr_nodes(); n++) {
		struct page_node *pn = &page_nodes[n];
		struct mcg_list gone = MCG_LIST_INIT(gone);
		unsigned kept = 0;
		mcg_lock(&pn->lock);
		for (struct mcg_list *pos = pn->avail.next, *next; pos != &pn->avail; pos = next) {
			next = pos->next;
			struct mcg_chunk *c = mcg_list_entry(pos, struct mcg_chunk, link);
			if (c->free_units != ALL_UNITS_FREE)
				continue;
			if (c->idle_steps < 2)
				c->idle_steps++;
			if (c->idle_steps < 2 || kept < keep) {
				kept += c->idle_steps >= 2;
				continue;
			}
			/* No span of it is out, and it is off the list: nobody can reach it. */
			mcg_list_del(&c->link);
			mcg_list_add_tail(&c->link, &gone);
		}
		mcg_unlock(&pn->lock);
		while (gone.next != &gone) {
			struct mcg_chunk *c = mcg_list_entry(gone.next, struct mcg_chunk, link);
			mcg_list_del(&c->link);
			mcg_chunk_unregister(c);
			bytes += c->map_size;
			mcg_os_unmap(c, c->map_size);
		}
	}
	return bytes + mcg_large_age();
}

void mcg_pages_lock_all(void)
{
	for (unsigned n = 0; n < MCG_MAX_NODES; n++)
		mcg_lock_raw(&page_nodes[n].lock);
	mcg_large_lock_all();
}

void mcg_pages_unlock_all(void)
{
	mcg_large_unlock_all();
	for (unsigned n = 0; n < MCG_MAX_NODES; n++)
		mcg_unlock_raw(&page_nodes[n].lock);
}
