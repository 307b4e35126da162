/* SPDX-License-Identifier: MIT */
/*
 * slab/purge.c - purging: the pages of a partly used slab that lie wholly
 * inside its free slots go back to the OS (madvise MADV_DONTNEED), so the
 * resident memory of a fragmented slab follows its live objects.  Nothing
 * is moved: live objects stay where they are, and a purged page faults
 * back in, reading zero, when an object on it is handed out again.
 *
 * Invariants
 *   - A page is purged only while every object slot it overlaps is free in
 *     the slab's bitmap (an object in a CPU array is out of its slab, so
 *     its pages are never purged).  slab_take() clears the purged bit of
 *     every page an object it hands out overlaps (mcg_slab_unpurge()), so
 *     a page stays purged exactly as long as its slots stay free.
 *   - Only object memory is purged: the descriptor and bitmap are in the
 *     chunk header, an objcg vector is an object of its own (live).
 *   - Pages past the last object ever handed out (`carved`) were never
 *     touched since the span was decommitted: they are not purged.
 *   - c->purged_pages is the sum of its slabs' npurged: exact at rest.
 *   - A cache with a constructor is not purged: its free objects keep
 *     their constructed state, which a purged page would lose.
 *   - A poisoned cache (MCG_CACHE_POISON) is purged: a page handed out
 *     again is checked (still zero, or a write after free is reported)
 *     and filled with poison again, as its free objects expect.
 *
 * When: each aging step (slab/drain.c) walks a few of each node's partial
 * slabs, from the tail (the slabs that went partial longest ago) toward
 * the head, and goes on where it stopped at the next step.  A slab's
 * `cold` says what the walk saw: 0, it was touched (a take or a free ran
 * since the last visit) - the visit marks it 1 and leaves it; 1, untouched
 * for a whole visit-to-visit interval (at least one aging period) - the
 * visit purges it and marks it 2; 2, purged and untouched since - nothing
 * new to purge.  mcg_cache_shrink() purges every partial slab (force).
 *
 * Why MADV_DONTNEED and not MADV_FREE: a page given back with MADV_FREE
 * stays resident and counted (RSS, the process's cgroup) until the kernel
 * is short of memory, so an idle program's footprint would not drop; and a
 * page it never reclaimed reads its old bytes, not zero.
 *
 * Locks: the node lock across the walk (the cursor and the lists stay
 * still; fork's handlers take node locks, so a child never inherits a slab
 * lock held across a madvise), and the slab lock of the slab purged, across
 * its madvise calls: a take that picks that slab waits until its pages are
 * gone.  The node lock is dropped between two slabs purged.
 */
#include <string.h>

#include "base/mm_const.h"
#include "os/os.h"
#include "slab/slab.h"

/* The descriptor of the unit holding page @p of @s, and that page's bit. */
static struct mcg_slab *page_unit(const struct mcg_slab *s, size_t p, uint16_t *bit)
{
	*bit = (uint16_t)(1u << (p % MCG_UNIT_PAGES));
	return mcg_slab_unit(s->base + (p << MCG_PAGE_SHIFT));
}

/* Are objects [@lo, @hi] all free in bitmap @bm? */
static bool objs_free(const uint64_t *bm, uint32_t lo, uint32_t hi)
{
	uint32_t wl = lo >> 6, wh = hi >> 6;
	uint64_t ml = ~0ull << (lo & 63), mh = ~0ull >> (63 - (hi & 63));
	if (wl == wh)
		return !(bm[wl] & ml & mh);
	if (bm[wl] & ml)
		return false;
	for (uint32_t w = wl + 1; w < wh; w++)
		if (bm[w])
			return false;
	return !(bm[wh] & mh);
}

/*
 * Purge the pages of @s that lie wholly in free slots and are not purged
 * yet, at most @budget of them.  Slab lock held.  Return: pages purged;
 * *@complete false if the budget stopped it.
 */
static size_t slab_purge(struct mcg_cache *c, struct mcg_slab *s, size_t budget, bool *complete)
{
	const size_t slot = c->slot_size, pages = (size_t)s->units * MCG_UNIT_PAGES;
	size_t done = 0, run = 0, run_len = 0; /* the run of pages to give back in one call */
	*complete = true;
	for (size_t p = 0; p < pages; p++) {
		size_t first = p << MCG_PAGE_SHIFT;
		uint32_t lo = (uint32_t)(first / slot);
		if (lo >= s->carved)
			break; /* never handed out from here on: not resident */
		uint32_t hi =
		        (uint32_t)MCG_MIN((first + MCG_PAGE_SIZE - 1) / slot, (size_t)s->nobjs - 1);
		uint16_t bit;
		struct mcg_slab *d = page_unit(s, p, &bit);
		if (!(d->purged & bit) && objs_free(s->bitmap, lo, hi)) {
			if (done == budget) {
				*complete = false;
				break;
			}
			d->purged |= bit;
			done++;
			if (!run_len)
				run = p;
			run_len++;
			continue;
		}
		if (run_len)
			mcg_os_decommit(s->base + (run << MCG_PAGE_SHIFT),
			                run_len << MCG_PAGE_SHIFT);
		run_len = 0;
	}
	if (run_len)
		mcg_os_decommit(s->base + (run << MCG_PAGE_SHIFT), run_len << MCG_PAGE_SHIFT);
	s->npurged = (uint16_t)(s->npurged + done);
	__atomic_add_fetch(&c->purged_pages, done, __ATOMIC_RELAXED);
	return done;
}

size_t mcg_node_purge(struct mcg_cache *c, unsigned node, unsigned max_visits, size_t max_pages,
                      bool force)
{
	if (c->ctor)
		return 0;
	struct mcg_cache_node *cn = &c->nodes[node];
	size_t pages = 0;
	mcg_lock(&cn->lock);
	size_t visits = MCG_MIN((size_t)max_visits, cn->nr_partial);
	for (size_t v = 0; v < visits && pages < max_pages; v++) {
		if (mcg_list_empty(&cn->partial))
			break;
		struct mcg_slab *s = cn->purge_next;
		if (!s)
			s = mcg_list_entry(cn->partial.prev, struct mcg_slab, link);
		struct mcg_list *prev = s->link.prev;
		cn->purge_next =
		        prev == &cn->partial ? NULL : mcg_list_entry(prev, struct mcg_slab, link);
		size_t got = 0;
		mcg_spin_lock(&s->lock);
		if (s->cold == 1 || (force && s->cold == 0)) {
			bool complete;
			got = slab_purge(c, s, max_pages - pages, &complete);
			s->cold = complete ? 2 : 1;
		} else if (s->cold == 0) {
			s->cold = 1;
		}
		mcg_spin_unlock(&s->lock);
		pages += got;
		if (got) { /* let the node's takes and list moves in */
			mcg_unlock(&cn->lock);
			mcg_lock(&cn->lock);
		}
	}
	mcg_unlock(&cn->lock);
	return pages << MCG_PAGE_SHIFT;
}

/* A poisoned cache's purged page @page of @s is handed out again: it must
 * still read zero (else something wrote to free memory), and its free
 * objects' poison comes back. */
static void page_repoison(struct mcg_cache *c, struct mcg_slab *s, unsigned char *page)
{
	for (size_t i = 0; i < MCG_PAGE_SIZE; i++) {
		if (page[i]) {
			size_t idx = (size_t)(page + i - (unsigned char *)s->base) / c->slot_size;
			mcg_report(MCG_REPORT_POISON_CORRUPT, c, s->base + idx * c->slot_size);
			break;
		}
	}
	memset(page, MCG_POISON_FREE, MCG_PAGE_SIZE);
}

void mcg_slab_unpurge(struct mcg_cache *c, struct mcg_slab *s, void *const *objs, unsigned n)
{
	const size_t slot = c->slot_size;
	const bool poison = (c->flags & MCG_CACHE_POISON) && !c->ctor;
	size_t gone = 0;
	for (unsigned i = 0; i < n && gone < s->npurged; i++) {
		size_t off = (size_t)((char *)objs[i] - s->base);
		size_t last = (off + slot - 1) >> MCG_PAGE_SHIFT;
		for (size_t p = off >> MCG_PAGE_SHIFT; p <= last; p++) {
			uint16_t bit;
			struct mcg_slab *d = page_unit(s, p, &bit);
			if (!(d->purged & bit))
				continue;
			d->purged &= (uint16_t)~bit;
			gone++;
			if (poison)
				page_repoison(c, s,
				              (unsigned char *)s->base + (p << MCG_PAGE_SHIFT));
		}
	}
	s->npurged = (uint16_t)(s->npurged - gone);
	__atomic_sub_fetch(&c->purged_pages, gone, __ATOMIC_RELAXED);
}

void mcg_slab_purge_forget(struct mcg_cache *c, struct mcg_slab *s)
{
	__atomic_sub_fetch(&c->purged_pages, (size_t)s->npurged, __ATOMIC_RELAXED);
	s->npurged = 0;
}
