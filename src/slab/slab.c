/* SPDX-License-Identifier: MIT */
/*
 * slab/slab.c - slabs and the node lists: taking objects out of slabs in
 * batches, putting them back, growing and releasing slabs.
 *
 * Everything here runs under the node lock of the slab concerned, except
 * slab_grow() (page allocator only) and the constructor calls.
 */
#include <errno.h>
#include <string.h>

#include "base/log.h"
#include "os/os.h"
#include "page/pages.h"
#include "slab/slab.h"

/* @s leaves the partial list: the purge walk's cursor moves on past it. */
static mcg_noinline void purge_cursor_skip(struct mcg_cache_node *cn, struct mcg_slab *s)
{
	struct mcg_list *prev = s->link.prev;
	cn->purge_next = prev == &cn->partial ? NULL : mcg_list_entry(prev, struct mcg_slab, link);
}

static void slab_set_list(struct mcg_cache_node *cn, struct mcg_slab *s, uint8_t list)
{
	if (unlikely(cn->purge_next == s))
		purge_cursor_skip(cn, s);
	switch (s->list) {
	case MCG_SLAB_EMPTY: MCG_WRITE_ONCE(cn->nr_empty, cn->nr_empty - 1); break;
	case MCG_SLAB_PARTIAL: MCG_WRITE_ONCE(cn->nr_partial, cn->nr_partial - 1); break;
	case MCG_SLAB_FULL: MCG_WRITE_ONCE(cn->nr_full, cn->nr_full - 1); break;
	default: break;
	}
	struct mcg_list *to = list == MCG_SLAB_EMPTY     ? &cn->empty
	                      : list == MCG_SLAB_PARTIAL ? &cn->partial
	                                                 : &cn->full;
	if (s->list)
		mcg_list_move(&s->link, to);
	else
		mcg_list_add(&s->link, to);
	s->list = list;
	switch (list) {
	case MCG_SLAB_EMPTY: MCG_WRITE_ONCE(cn->nr_empty, cn->nr_empty + 1); break;
	case MCG_SLAB_PARTIAL: MCG_WRITE_ONCE(cn->nr_partial, cn->nr_partial + 1); break;
	default: MCG_WRITE_ONCE(cn->nr_full, cn->nr_full + 1); break;
	}
}

/* A new slab of @c on @node, on no list yet.  No lock held. */
static struct mcg_slab *slab_grow(struct mcg_cache *c, unsigned node)
{
	char *span = mcg_pages_alloc(node, c->slab_units);
	if (!span)
		return NULL;
	struct mcg_chunk *ch = mcg_chunk_of(span);
	unsigned u = mcg_chunk_unit(ch, span);
	struct mcg_slab *s = (struct mcg_slab *)ch->meta[u];
	/* Every field but the lock, which is unlocked whenever nobody holds it
	 * (and zero, i.e. unlocked, in a fresh descriptor page), and the link,
	 * written as mcg_node_take() puts the slab on its list (list 0: none). */
	s->hint = 0;
	s->inuse = 0;
	s->carved = 0;
	s->list = 0;
	s->pinned = 0;
	s->sole = MCG_SOLE_UNSET;
	s->cold = 0;
	s->purged = 0;
	s->npurged = 0;
	s->objcgs = 0;
	s->lock.rank = MCG_RANK_SLAB;
	s->cache = c;
	s->pcpu = c->pcpu;
	s->inv = c->inv;
	s->shift = c->shift;
	s->base = span;
	s->bitmap = ch->bitmap[u];
	memset(s->bitmap, 0, (size_t)c->slab_units * MCG_UNIT_BITMAP_WORDS * 8);
	s->nobjs = c->objs_per_slab;
	s->start_test = mcg_slab_start_test(s->nobjs, c->shift);
	if (s->nobjs % 64) /* no objects there: never free */
		s->bitmap[s->nobjs / 64] = ~0ull << (s->nobjs % 64);
	s->node = (uint16_t)node;
	s->units = (uint8_t)c->slab_units;
	for (unsigned i = 1; i < c->slab_units; i++) {
		struct mcg_slab *d = (struct mcg_slab *)ch->meta[u + i];
		d->cache = c;
		d->base = span;
		d->pcpu = c->pcpu;
		d->inv = c->inv;
		d->shift = c->shift;
		d->nobjs = s->nobjs;
		d->start_test = s->start_test;
		d->objcgs = 0;
		d->purged = 0;
		__atomic_store_n(&d->head, s, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&s->head, s, __ATOMIC_RELEASE);
	return s;
}

/* The descriptor of unit @i of slab @s. */
static struct mcg_slab *slab_unit_desc(struct mcg_slab *s, unsigned i)
{
	struct mcg_chunk *ch = mcg_chunk_of(s->base);
	return (struct mcg_slab *)ch->meta[mcg_chunk_unit(ch, s->base) + i];
}

void mcg_slab_set_objcgs(struct mcg_slab *s, uint16_t *v)
{
	/* Only where there is none: a sole objcg already written stays. */
	for (unsigned i = 0; i < s->units; i++) {
		uintptr_t none = 0;
		__atomic_compare_exchange_n(&slab_unit_desc(s, i)->objcgs, &none, (uintptr_t)v,
		                            false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	}
}

void mcg_slab_store_objcgs(struct mcg_slab *s, uintptr_t w)
{
	for (unsigned i = 0; i < s->units; i++)
		__atomic_store_n(&slab_unit_desc(s, i)->objcgs, w, __ATOMIC_RELEASE);
}

/* Give slab @s (off every list) back to the page allocator.  No lock held. */
static void slab_release(struct mcg_slab *s)
{
	struct mcg_chunk *ch = mcg_chunk_of(s->base);
	unsigned u = mcg_chunk_unit(ch, s->base);
	unsigned units = s->units;
	char *base = s->base;
	if (s->npurged)
		mcg_slab_purge_forget(s->cache, s);
	mcg_slab_free_objcgs(s);
	for (unsigned i = 0; i < units; i++) {
		struct mcg_slab *d = (struct mcg_slab *)ch->meta[u + i];
		__atomic_store_n(&d->head, NULL, __ATOMIC_RELEASE);
		MCG_WRITE_ONCE(d->cache, NULL); /* a stale free finds no slab */
		MCG_WRITE_ONCE(d->nobjs, 0);
		MCG_WRITE_ONCE(d->start_test, 0); /* and fails the start test */
	}
	mcg_pages_free(base, units);
}

/*
 * Take up to @n objects out of @s into @objs, the lowest free ones first;
 * bit @at + i of *@fresh is set if objs[i] was never used (its constructor
 * is due).  Slab lock held.  Return: how many (fewer if @s ran out).  The
 * objects' memory is not touched (but a poisoned cache's purged pages are
 * poisoned again: slab/purge.c).
 */
static unsigned slab_take(struct mcg_cache *c, struct mcg_slab *s, void **objs, unsigned n,
                          uint64_t *fresh, unsigned at)
{
	const uint32_t words = (s->nobjs + 63) / 64, slot = c->slot_size;
	uint32_t wi = s->hint, carved = s->carved;
	unsigned got = 0;
	for (; wi < words && got < n; wi++) {
		uint64_t w = s->bitmap[wi];
		for (uint64_t clear = ~w; clear && got < n; clear &= clear - 1) {
			uint32_t idx = wi * 64 + (uint32_t)__builtin_ctzll(clear);
			w |= clear & -clear;
			if (idx >= carved) {
				*fresh |= 1ull << (at + got);
				carved = idx + 1;
			}
			objs[got++] = s->base + (size_t)idx * slot;
		}
		s->bitmap[wi] = w;
		if (~w)
			break; /* this word still has free objects: the hint stays */
	}
	s->hint = wi;
	s->carved = carved;
	s->inuse += got;
	s->cold = 0;
	if (unlikely(s->npurged))
		mcg_slab_unpurge(c, s, objs, got);
	return got;
}

/* The list @s belongs on, from its state.  Slab lock held. */
static uint8_t slab_wanted_list(const struct mcg_slab *s)
{
	if (s->inuse == 0)
		return MCG_SLAB_EMPTY;
	return s->inuse == s->nobjs ? MCG_SLAB_FULL : MCG_SLAB_PARTIAL;
}

unsigned mcg_node_take(struct mcg_cache *c, unsigned node, void **objs, unsigned n, uint64_t *fresh)
{
	struct mcg_cache_node *cn = &c->nodes[node];
	unsigned got = 0;
	*fresh = 0;
	mcg_lock(&cn->lock);
	while (got < n) {
		struct mcg_slab *s;
		if (!mcg_list_empty(&cn->partial)) {
			s = mcg_list_entry(cn->partial.next, struct mcg_slab, link);
		} else if (!mcg_list_empty(&cn->empty)) {
			s = mcg_list_entry(cn->empty.next, struct mcg_slab, link);
			slab_set_list(cn, s, MCG_SLAB_PARTIAL);
		} else {
			mcg_unlock(&cn->lock);
			s = slab_grow(c, node);
			mcg_lock(&cn->lock);
			if (!s)
				break; /* a new slab is on no list: put on its own below */
		}
		mcg_spin_lock(&s->lock);
		got += slab_take(c, s, objs + got, n - got, fresh, got);
		uint8_t want = slab_wanted_list(s);
		mcg_spin_unlock(&s->lock);
		if (want != s->list)
			slab_set_list(cn, s, want);
	}
	mcg_unlock(&cn->lock);
	return got;
}

void mcg_construct_fresh(struct mcg_cache *c, void **objs, unsigned n, uint64_t fresh)
{
	if (!c->ctor)
		return;
	for (unsigned i = 0; i < n; i++)
		if (fresh & (1ull << i))
			c->ctor(objs[i]);
}

static bool bytes_are(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* Put @obj (a checked object start of @s) back into @s.  Slab lock held.
 * Return: 1 if freed, 0 if reported and left alone. */
static unsigned slab_free_one(struct mcg_cache *c, struct mcg_slab *s, void *obj)
{
	long idx = mcg_slab_index(s, obj);
	uint64_t bit = 1ull << (idx & 63);
	if (unlikely(!(s->bitmap[idx >> 6] & bit))) {
		mcg_report(MCG_REPORT_DOUBLE_FREE, c, obj);
		return 0;
	}
	if (unlikely(c->debug)) {
		if ((c->flags & MCG_CACHE_REDZONE) &&
		    !bytes_are((unsigned char *)obj + c->object_size, c->redzone, 0xbb)) {
			mcg_report(MCG_REPORT_REDZONE_CORRUPT, c, obj);
			return 0;
		}
		if ((c->flags & MCG_CACHE_POISON) && !c->ctor)
			memset(obj, MCG_POISON_FREE, c->object_size);
	}
	s->bitmap[idx >> 6] &= ~bit;
	s->hint = MCG_MIN(s->hint, (uint32_t)(idx >> 6));
	s->inuse--;
	return 1;
}

/* Put slab @s (pinned by us) on the list its state asks for, then unpin it. */
static void slab_fix_list(struct mcg_cache *c, struct mcg_slab *s)
{
	struct mcg_cache_node *cn = &c->nodes[s->node];
	mcg_lock(&cn->lock);
	mcg_spin_lock(&s->lock);
	uint8_t want = slab_wanted_list(s);
	s->pinned--;
	mcg_spin_unlock(&s->lock);
	if (want != s->list)
		slab_set_list(cn, s, want);
	mcg_unlock(&cn->lock);
}

/*
 * Take the charge @id (0: none) of object @idx of @s, from its slot, into
 * @ch: its entry in vector @v cleared before the object is back in the
 * slab.  Slab lock held.  False if @ch has no room for its objcg: nothing done.
 */
static bool charge_take(uint16_t *v, long idx, uint16_t id, uint64_t units, struct mcg_charges *ch)
{
	if (!id)
		return true;
	if (!mcg_charges_add(ch, id, units))
		return false;
	v[idx] = 0;
	return true;
}

/* Clear bit @idx % 64 of *@w; return whether it was set (one btr on x86-64). */
static mcg_always_inline bool bit_test_clear(uint64_t *w, uint64_t idx)
{
#if defined(__x86_64__)
	bool was_set;
	__asm__("btrq %2, %0" : "+r"(*w), "=@ccc"(was_set) : "r"(idx) : "cc");
	return was_set;
#else
	uint64_t bit = 1ull << (idx & 63);
	bool was_set = *w & bit;
	*w &= ~bit;
	return was_set;
#endif
}

/*
 * The flush loops' bitmap cursor: the word of the last object stays in a
 * register until the objects move to another word (a flush's objects are
 * mostly neighbours, and clearing their bits in memory one by one is a
 * chain of stores and loads of one word).  A local, never addressed, so
 * its fields live in registers.
 */
struct bits_cursor {
	uint64_t *bitmap;
	uint64_t wi, wv, hint; /* the word held (UINT64_MAX: none), its bits, the new hint */
};

static mcg_always_inline struct bits_cursor bits_start(struct mcg_slab *s)
{
	return (struct bits_cursor){.bitmap = s->bitmap, .wi = UINT64_MAX, .hint = s->hint};
}

/* Clear object @idx's bit; false if it was clear already (a double free). */
static mcg_always_inline bool bits_clear(struct bits_cursor *bc, uint64_t idx)
{
	if (unlikely(idx >> 6 != bc->wi)) {
		if (bc->wi != UINT64_MAX)
			bc->bitmap[bc->wi] = bc->wv;
		bc->wi = idx >> 6;
		bc->wv = bc->bitmap[bc->wi];
		bc->hint = MCG_MIN(bc->hint, bc->wi);
	}
	return bit_test_clear(&bc->wv, idx);
}

/* Set object @idx's bit again, just cleared by bits_clear() (its word is held). */
static mcg_always_inline void bits_set_back(struct bits_cursor *bc, uint64_t idx)
{
	bc->wv |= 1ull << (idx & 63);
}

/* Write the held word back, and the slab's new hint. */
static mcg_always_inline void bits_done(struct bits_cursor *bc, struct mcg_slab *s)
{
	if (bc->wi != UINT64_MAX)
		bc->bitmap[bc->wi] = bc->wv;
	s->hint = (uint32_t)bc->hint;
}

/*
 * slab_free_one() unrolled for the common case, slab lock held: the whole
 * flush cost of an object is its bit, and, with @tagged (the slab has a
 * vector @v), the store that clears its entry.  Its memory is not touched.
 * Everything the loop needs is in locals (the stores could
 * alias the cache's fields), and the rare cases (another word, a double
 * free, another objcg) are out of the straight line.
 *
 * Without @tagged no slot is tagged (a slab gets its vector before any of
 * its objects is pushed tagged, and keeps it): an object's offset is its
 * slot minus the slab's base.  With it, the objects come in runs of one
 * objcg id (0: charged to none), and run_base is the base plus the run's
 * id where a slot has it (bits 48 and up): the slot, its tag bit cleared,
 * minus run_base is the object's offset - one subtraction, as without
 * tags - and a slot of another id lands far out of range, like an object
 * of another slab; the rare path tells the two apart and starts a run.
 *
 * Return how many of @objs[0, @k) were consumed, *@freed how many of those
 * were freed.
 */
static mcg_always_inline unsigned free_run_fast(struct mcg_cache *c, struct mcg_slab *s,
                                                void *const *objs, unsigned k,
                                                struct mcg_charges *ch, uint16_t *v, bool tagged,
                                                unsigned *freed)
{
	const uint64_t span = (uint64_t)s->units << MCG_UNIT_SHIFT, recip = c->recip;
	const uintptr_t base = (uintptr_t)s->base;
	struct bits_cursor bc = bits_start(s);
	const uint64_t units = c->charge_units;
	uintptr_t run_base = base; /* the run: id 0 to start with, */
	uint32_t run_n = 0;        /* its objects freed, */
	int run_k = -1;            /* its entry in @ch (-1: charged to none) */
	unsigned skipped = 0;
	void *const *p = objs, *const *end = objs + k;
	for (; p < end; p++) {
		uintptr_t slot = (uintptr_t)*p;
		uint64_t off = (tagged ? slot & ~(uintptr_t)MCG_SLOT_CHARGED : slot) - run_base;
		if (unlikely(off >= span)) {
			if (!tagged || (uintptr_t)mcg_slot_obj(slot) - base >= span)
				break; /* another slab */
			/* Another id: the run so far to @ch, and a new one. */
			uint16_t id = mcg_slot_id(slot);
			int slot_k = id ? mcg_charges_slot(ch, id) : -1;
			if (id && slot_k < 0)
				break; /* no room for its objcg: not consumed */
			if (run_k >= 0)
				ch->units[run_k] += (uint64_t)run_n * units;
			run_base = base + ((uintptr_t)id << MCG_SLOT_ID_SHIFT);
			run_k = slot_k;
			run_n = 0;
			off = (slot & ~(uintptr_t)MCG_SLOT_CHARGED) - run_base;
		}
		uint64_t idx = (off * recip) >> MCG_RECIP_SHIFT;
		if (unlikely(!bits_clear(&bc, idx))) {
			mcg_report(MCG_REPORT_DOUBLE_FREE, c, mcg_slot_obj(slot));
			skipped++;
			continue;
		}
		if (tagged) {
			run_n++;
			v[idx] = 0; /* an uncharged object's entry is 0 already */
		}
	}
	bits_done(&bc, s);
	if (run_k >= 0)
		ch->units[run_k] += (uint64_t)run_n * units;
	unsigned consumed = (unsigned)(p - objs);
	*freed = consumed - skipped;
	return consumed;
}

/*
 * free_run_mixed()'s tally of a run's charges: a bucket per id % TALLY_BUCKETS,
 * the id it counts (`id`), its objects (`n`) and its entry in the run's
 * struct mcg_charges (`k`).  A bucket no id claimed yet holds an id of
 * another bucket (tally_start()), so the loop's one compare sends an id's
 * first object, and an id whose bucket another id holds, to the rare path.
 */
#define TALLY_BUCKETS 64
struct tally {
	uint16_t id[TALLY_BUCKETS];
	uint32_t n[TALLY_BUCKETS];
	uint8_t k[TALLY_BUCKETS];
	uint64_t used; /* claimed buckets */
};

static mcg_always_inline void tally_start(struct tally *t)
{
	/* b ^ 1 is no id of bucket b; id 0 (charged to none) claims bucket 0 */
	static const uint16_t unclaimed[TALLY_BUCKETS] = {
#define T4(b) (b) ^ 1, (b + 1) ^ 1, (b + 2) ^ 1, (b + 3) ^ 1
#define T16(b) T4(b), T4(b + 4), T4(b + 8), T4(b + 12)
	        T16(0), T16(16), T16(32), T16(48)
#undef T16
#undef T4
	};
	memcpy(t->id, unclaimed, sizeof(t->id));
	t->used = 0;
}

/*
 * The rare path of free_run_mixed(): an object of objcg @id whose bucket
 * @b it does not hold.  Claim the bucket (its entry in @ch added now, so
 * the run's end has room for it) and count the object, or, when another id
 * holds it, add the object's units to @ch directly.  False if @ch has no
 * room for the objcg: the object is not consumed, nothing changed.
 */
static mcg_noinline bool tally_rare(struct tally *t, unsigned b, uint16_t id,
                                    struct mcg_charges *ch, uint64_t units)
{
	int k = id ? mcg_charges_slot(ch, id) : -1;
	if (id && k < 0)
		return false;
	if (!(t->used & (1ull << b))) {
		t->used |= 1ull << b;
		t->id[b] = id;
		t->n[b] = 1;
		t->k[b] = (uint8_t)k; /* id 0: never given */
	} else if (id) {
		ch->units[k] += units;
	}
	return true;
}

/* The run's counts into @ch. */
static mcg_always_inline void tally_end(struct tally *t, struct mcg_charges *ch, uint64_t units)
{
	for (uint64_t m = t->used; m; m &= m - 1) {
		unsigned b = (unsigned)__builtin_ctzll(m);
		if (t->id[b])
			ch->units[t->k[b]] += (uint64_t)t->n[b] * units;
	}
}

/*
 * free_run_fast() for a slab whose objects belong to many objcgs side by
 * side (a multi-tenant server's slabs), where runs of one id would break at
 * every object: each object counts in its objcg's bucket of a local tally
 * (one compare of the slot's id with the bucket's), added to @ch once at
 * the end.  Slab lock held; the same contract as free_run_fast(...,
 * tagged).
 */
static unsigned free_run_mixed(struct mcg_cache *c, struct mcg_slab *s, void *const *objs,
                               unsigned k, struct mcg_charges *ch, uint16_t *v, unsigned *freed)
{
	const uint64_t span = (uint64_t)s->units << MCG_UNIT_SHIFT, recip = c->recip;
	const uint64_t units = c->charge_units;
	const uintptr_t base = (uintptr_t)s->base;
	struct bits_cursor bc = bits_start(s);
	struct tally t;
	tally_start(&t);
	unsigned skipped = 0;
	void *const *p = objs, *const *end = objs + k;
	for (; p < end; p++) {
		uintptr_t slot = (uintptr_t)*p;
		uint64_t off = (uintptr_t)mcg_slot_obj(slot) - base;
		if (unlikely(off >= span))
			break; /* another slab */
		uint16_t id = mcg_slot_id(slot);
		unsigned b = id % TALLY_BUCKETS;
		uint64_t idx = (off * recip) >> MCG_RECIP_SHIFT;
		if (unlikely(!bits_clear(&bc, idx))) {
			mcg_report(MCG_REPORT_DOUBLE_FREE, c, mcg_slot_obj(slot));
			skipped++;
			continue;
		}
		if (likely(t.id[b] == id)) {
			t.n[b]++;
		} else if (unlikely(!tally_rare(&t, b, id, ch, units))) {
			bits_set_back(&bc, idx); /* no room for its objcg: not consumed */
			break;
		}
		v[idx] = 0;
	}
	bits_done(&bc, s);
	tally_end(&t, ch, units);
	unsigned consumed = (unsigned)(p - objs);
	*freed = consumed - skipped;
	return consumed;
}

/* Free the leading objects of @objs[0, @k) (tagged or not) that lie in slab
 * @s (at least the first), their charges into @ch.  Return: how many were
 * consumed (fewer when @ch filled up). */
static unsigned slab_free_run(struct mcg_cache *c, struct mcg_slab *s, void *const *objs,
                              unsigned k, struct mcg_charges *ch)
{
	size_t span = (size_t)s->units << MCG_UNIT_SHIFT;
	unsigned freed = 0, i = 0;
	uint16_t *v = mcg_slab_vector(__atomic_load_n(&s->objcgs, __ATOMIC_ACQUIRE));
	mcg_spin_lock(&s->lock);
	bool was_full = s->inuse == s->nobjs;
	s->cold = 0;
	if (likely(!c->debug)) {
		/* Objects of two objcgs first: a mixed slab, most likely. */
		if (v && k > 1 &&
		    mcg_slot_id((uintptr_t)objs[0]) != mcg_slot_id((uintptr_t)objs[1]))
			i = free_run_mixed(c, s, objs, k, ch, v, &freed);
		else if (v)
			i = free_run_fast(c, s, objs, k, ch, v, true, &freed);
		else
			i = free_run_fast(c, s, objs, k, ch, NULL, false, &freed);
		s->inuse -= freed;
	} else {
		for (; i < k; i++) {
			uintptr_t slot = (uintptr_t)objs[i];
			void *obj = mcg_slot_obj(slot);
			if ((uintptr_t)obj - (uintptr_t)s->base >= span)
				break;
			long idx = mcg_slab_index(s, obj); /* -1: slab_free_one() reports it */
			if (idx >= 0 && (s->bitmap[idx >> 6] & (1ull << (idx & 63))) &&
			    !charge_take(v, idx, mcg_slot_id(slot), c->charge_units, ch))
				break;
			freed += slab_free_one(c, s, obj);
		}
	}
	if (s->inuse == 0 && MCG_READ_ONCE(s->sole) != MCG_SOLE_UNSET) {
		/* No object out: the next ones may all be another objcg's. */
		mcg_slab_set_sole(s, 0);
		__atomic_store_n(&s->sole, MCG_SOLE_UNSET, __ATOMIC_RELEASE);
	}
	bool move = freed && (was_full || s->inuse == 0);
	if (move)
		s->pinned++;
	mcg_spin_unlock(&s->lock);
	if (move)
		slab_fix_list(c, s);
	return i;
}

unsigned mcg_node_put_gather(struct mcg_cache *c, void **objs, unsigned n, struct mcg_charges *ch)
{
	unsigned i = 0;
	while (i < n) {
		unsigned got = slab_free_run(c, mcg_slab_of(mcg_slot_obj((uintptr_t)objs[i])),
		                             objs + i, n - i, ch);
		if (!got)
			break; /* one more objcg would not fit in @ch */
		i += got;
	}
	return i;
}

void mcg_node_put(struct mcg_cache *c, void **objs, unsigned n)
{
	struct mcg_charges ch;
	ch.n = 0;
	for (unsigned i = 0; i < n;) {
		i += slab_free_run(c, mcg_slab_of(mcg_slot_obj((uintptr_t)objs[i])), objs + i,
		                   n - i, &ch);
		if (ch.n == MCG_CHARGES_MAX || i == n)
			mcg_charges_give(&ch);
	}
}

size_t mcg_node_objects_out(struct mcg_cache *c, unsigned node)
{
	/* No node-wide count: every flush and refill would write one line
	 * shared by all CPUs of the node.  Slabs cannot go while the node
	 * lock is held; each count is read under its slab's lock. */
	struct mcg_cache_node *cn = &c->nodes[node];
	struct mcg_list *lists[3] = {&cn->partial, &cn->full, &cn->empty};
	size_t out = 0;
	for (int l = 0; l < 3; l++) {
		mcg_list_for_each (pos, lists[l]) {
			struct mcg_slab *s = mcg_list_entry(pos, struct mcg_slab, link);
			mcg_spin_lock(&s->lock);
			out += s->inuse;
			mcg_spin_unlock(&s->lock);
		}
	}
	return out;
}

size_t mcg_node_release_empty(struct mcg_cache *c, unsigned node, size_t keep, size_t max)
{
	struct mcg_cache_node *cn = &c->nodes[node];
	struct mcg_list victims = MCG_LIST_INIT(victims);
	size_t bytes = 0;
	mcg_lock(&cn->lock);
	/* Oldest first: from the tail.  A pinned slab is about to move: skip it. */
	for (struct mcg_list *pos = cn->empty.prev, *prev; pos != &cn->empty; pos = prev) {
		prev = pos->prev;
		if (cn->nr_empty <= keep || max == 0)
			break;
		struct mcg_slab *s = mcg_list_entry(pos, struct mcg_slab, link);
		mcg_spin_lock(&s->lock);
		bool busy = s->pinned || s->inuse;
		mcg_spin_unlock(&s->lock);
		if (busy)
			continue;
		mcg_list_move(&s->link, &victims);
		s->list = 0;
		MCG_WRITE_ONCE(cn->nr_empty, cn->nr_empty - 1); /* read racily by reap */
		max--;
	}
	mcg_unlock(&cn->lock);
	mcg_list_for_each_safe (pos, tmp, &victims) {
		struct mcg_slab *s = mcg_list_entry(pos, struct mcg_slab, link);
		bytes += (size_t)s->units * MCG_UNIT_SIZE;
		mcg_list_del(&s->link);
		slab_release(s);
	}
	return bytes;
}

/* ------------------------------------------------------------ debug caches */

void *mcg_debug_alloc(struct mcg_cache *c)
{
	void *obj;
	uint64_t fresh;
	unsigned node = mcg_os_cpu_node(mcg_percpu_cpu());
	if (mcg_node_take(c, node, &obj, 1, &fresh) == 0) {
		errno = ENOMEM;
		return NULL;
	}
	if (fresh) {
		mcg_construct_fresh(c, &obj, 1, fresh);
	} else if ((c->flags & MCG_CACHE_POISON) && !c->ctor &&
	           !bytes_are(obj, c->object_size, MCG_POISON_FREE)) {
		mcg_report(MCG_REPORT_POISON_CORRUPT, c, obj);
	}
	if (c->flags & MCG_CACHE_REDZONE)
		memset((char *)obj + c->object_size, 0xbb, c->redzone);
	return obj;
}

void mcg_debug_free(struct mcg_cache *c, void *obj) { mcg_node_put(c, &obj, 1); }
