/* SPDX-License-Identifier: MIT */
/*
 * test_purge.c - purging (slab/purge.c): a partly used slab left untouched
 * for an aging period gives the pages that lie wholly inside its free slots
 * back to the OS, and only those.  Each check holds the slab against a
 * model built from the test's own live objects (a page is purged iff no
 * byte of a live object is in it and a slot at or before it was ever handed
 * out), residency read with mincore(); live objects keep their bytes, a busy
 * slab waits, a purged slot is handed out again reading zero, poisoned and
 * red-zoned caches stay checked, a constructor's cache is left alone, and
 * purged_bytes is exact throughout.  Runs again with MCG_RSEQ=0.
 */
#include <sched.h>
#include <sys/mman.h>

#include "memcg/debug.h"
#include "memcg/kmalloc.h"
#include "memcg/memcg.h"
#include "memcg/slab.h"
#include "slab/slab.h"
#include "cache_rest.h"
#include "test.h"

#define PG 4096ul
#define MAXP 512 /* pages of the largest slab */

static cpu_set_t saved_affinity;

/* Pin to the CPU we run on: the CPU array used is then always the same. */
static void pin_here(void)
{
	sched_getaffinity(0, sizeof(saved_affinity), &saved_affinity);
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);
}

static void unpin(void) { sched_setaffinity(0, sizeof(saved_affinity), &saved_affinity); }

static mcg_cache_stats_t stats_of(mcg_cache_t *c)
{
	mcg_cache_stats_t st;
	CHECK_EQ(mcg_cache_stats(c, &st), 0);
	return st;
}

static size_t span_pages(const struct mcg_slab *s)
{
	return ((size_t)s->units << MCG_UNIT_SHIFT) / PG;
}

/* Is the page at @p resident? */
static bool resident(const void *p)
{
	unsigned char v = 0;
	CHECK_EQ(mincore((void *)p, PG, &v), 0);
	return v & 1;
}

/* Fill object @o (@n bytes) with the pattern of @seed; check it. */
static void fill(void *o, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i += 8)
		*(uint64_t *)((char *)o + i) = (uint64_t)seed * 0x9e3779b97f4a7c15ull + i;
}

static bool intact(const void *o, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i += 8)
		if (*(const uint64_t *)((const char *)o + i) !=
		    (uint64_t)seed * 0x9e3779b97f4a7c15ull + i)
			return false;
	return true;
}

static bool all_bytes(const void *o, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (((const unsigned char *)o)[i] != v)
			return false;
	return true;
}

/*
 * The model: mark in @free_pg the pages of @s a purge gives back - no byte
 * of any of the live objects @live[0, @n) (those of other slabs ignored),
 * and before the end of the last slot ever handed out.  Return how many.
 */
static size_t model(const struct mcg_slab *s, void *const *live, size_t n, bool *free_pg)
{
	size_t slot = s->cache->slot_size, pages = span_pages(s), count = 0;
	size_t carved_end = (size_t)s->carved * slot;
	for (size_t p = 0; p < pages; p++) {
		size_t a = p * PG, b = a + PG;
		bool f = a < carved_end;
		for (size_t i = 0; f && i < n; i++) {
			if (!live[i] || mcg_slab_of(live[i]) != s)
				continue;
			size_t o = (size_t)((char *)live[i] - s->base);
			if (o < b && o + slot > a)
				f = false;
		}
		free_pg[p] = f;
		count += f;
	}
	return count;
}

/* After a purge of @s: the model's pages are gone, every page with a live byte is in. */
static void check_purged(const struct mcg_slab *s, void *const *live, size_t n)
{
	bool free_pg[MAXP];
	model(s, live, n, free_pg);
	for (size_t p = 0; p < span_pages(s); p++) {
		bool in = resident(s->base + p * PG);
		if (free_pg[p] && in)
			fprintf(stderr, "page %zu of the slab at %p: free and resident\n", p,
			        s->base);
		CHECK(!(free_pg[p] && in));
	}
	for (size_t i = 0; i < n; i++) {
		if (!live[i] || mcg_slab_of(live[i]) != s)
			continue;
		size_t o = (size_t)((char *)live[i] - s->base);
		for (size_t a = o & ~(PG - 1); a < o + s->cache->slot_size; a += PG)
			CHECK(resident(s->base + a));
	}
}

/* The distinct slabs of @objs[0, @n) (NULLs skipped) into @out; how many. */
static size_t slabs_of(void *const *objs, size_t n, struct mcg_slab **out, size_t max)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (!objs[i])
			continue;
		struct mcg_slab *s = mcg_slab_of(objs[i]);
		size_t j = 0;
		while (j < k && out[j] != s)
			j++;
		if (j == k && k < max)
			out[k++] = s;
	}
	return k;
}

/* Pages the model gives back over the slabs of @live that are partial now. */
static size_t model_partial(void *const *live, size_t n)
{
	struct mcg_slab *sl[256];
	size_t k = slabs_of(live, n, sl, 256), pages = 0;
	bool free_pg[MAXP];
	for (size_t j = 0; j < k; j++)
		if (sl[j]->list == MCG_SLAB_PARTIAL)
			pages += model(sl[j], live, n, free_pg);
	return pages;
}

static int reports[MCG_REPORT_LEAK + 1];
static const void *report_addr;

static void capture(const mcg_report_t *r)
{
	reports[r->kind]++;
	report_addr = r->addr;
}

enum { SZ = 8192, NOBJ = 96 };

/*
 * An idle partial slab of 8 KiB objects: nothing at the first visit (the
 * drain that put the objects back touched it), its free slots' pages at the
 * second, exactly, the live objects' bytes untouched; then nothing new.
 */
static void test_idle_partial(void)
{
	pin_here();
	mcg_cache_t *c = mcg_cache_create("purge-idle", SZ, 0, 0, NULL);
	REQUIRE(c);
	static void *live[NOBJ], *gone[NOBJ];
	for (unsigned i = 0; i < NOBJ; i++) {
		live[i] = mcg_cache_alloc(c);
		REQUIRE(live[i]);
		fill(live[i], SZ, i);
	}
	/* Free runs of different lengths: single slots, pairs, a whole slab's worth. */
	for (unsigned i = 0; i < NOBJ; i++) {
		unsigned r = i % 24;
		if (r == 1 || r == 3 || r == 4 || (r >= 8 && r < 20)) {
			gone[i] = live[i];
			mcg_cache_free(c, live[i]);
			live[i] = NULL;
		}
	}
	mcg_cache_drain_all(c);
	for (unsigned i = 0; i < NOBJ; i++) /* written, freed: resident until purged */
		if (gone[i])
			CHECK(resident(gone[i]) && resident((char *)gone[i] + PG));
	size_t want = model_partial(live, NOBJ);
	CHECK(want >= NOBJ / 2);
	CHECK_EQ(stats_of(c).purged_bytes, 0);

	/* First visit: touched by the drain, marked only. */
	size_t slabs = stats_of(c).num_slabs;
	long bytes = mcg_cache_reap(c);
	CHECK_EQ(stats_of(c).purged_bytes, 0);
	CHECK_EQ(bytes, (long)((slabs - stats_of(c).num_slabs) * stats_of(c).slab_bytes));
	/* Second: untouched for a period, purged. */
	slabs = stats_of(c).num_slabs;
	bytes = mcg_cache_reap(c);
	CHECK_EQ(stats_of(c).purged_bytes, want * PG);
	CHECK_EQ(bytes,
	         (long)((slabs - stats_of(c).num_slabs) * stats_of(c).slab_bytes + want * PG));
	struct mcg_slab *sl[64];
	size_t k = slabs_of(live, NOBJ, sl, 64);
	for (size_t j = 0; j < k; j++)
		check_purged(sl[j], live, NOBJ);
	for (unsigned i = 0; i < NOBJ; i++)
		if (live[i])
			CHECK(intact(live[i], SZ, i));
	/* Third: purged and untouched since, nothing new (empty slabs may go). */
	slabs = stats_of(c).num_slabs;
	bytes = mcg_cache_reap(c);
	CHECK_EQ(bytes, (long)((slabs - stats_of(c).num_slabs) * stats_of(c).slab_bytes));
	CHECK_EQ(stats_of(c).purged_bytes, want * PG);

	/* At rest: every object freed, the slabs released, nothing purged left. */
	for (unsigned i = 0; i < NOBJ; i++)
		mcg_cache_free(c, live[i]);
	mcg_cache_drain_all(c);
	CHECK_EQ(stats_of(c).purged_bytes, want * PG); /* empty slabs keep their purged pages */
	check_shrink_all_free(c);
	CHECK_EQ(stats_of(c).purged_bytes, 0);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	unpin();
}

/*
 * 16-byte objects, 256 to a page: a page whose only live object sits in the
 * middle of its bitmap words (slot 128 of the page: neither the first nor
 * the last word of the page's four) stays resident; the pages with no live
 * object go.  As the model says, exactly.
 */
static void test_small_objects_middle_word(void)
{
	pin_here();
	enum { N = 2048 };
	mcg_cache_t *c = mcg_cache_create("purge-small", 16, 0, 0, NULL);
	REQUIRE(c);
	static void *live[N];
	for (unsigned i = 0; i < N; i++) {
		live[i] = mcg_cache_alloc(c);
		REQUIRE(live[i]);
		fill(live[i], 16, i);
	}
	size_t kept = 0;
	for (unsigned i = 0; i < N; i++) {
		struct mcg_slab *s = mcg_slab_of(live[i]);
		size_t in_page = ((size_t)((char *)live[i] - s->base) % PG) / 16;
		if (in_page == 128 && (i / 256) % 2 == 0) { /* every other page keeps one */
			kept++;
			continue;
		}
		mcg_cache_free(c, live[i]);
		live[i] = NULL;
	}
	CHECK(kept >= 2);
	mcg_cache_drain_all(c);
	size_t want = model_partial(live, N);
	CHECK(want >= 1);
	mcg_cache_reap(c); /* the first visit marks */
	mcg_cache_reap(c); /* the second purges */
	CHECK_EQ(stats_of(c).purged_bytes, want * PG);
	struct mcg_slab *sl[64];
	size_t k = slabs_of(live, N, sl, 64);
	for (size_t j = 0; j < k; j++)
		check_purged(sl[j], live, N);
	for (unsigned i = 0; i < N; i++)
		if (live[i])
			CHECK(intact(live[i], 16, i));
	for (unsigned i = 0; i < N; i++)
		mcg_cache_free(c, live[i]);
	mcg_cache_drain_all(c);
	check_shrink_all_free(c);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	unpin();
}

/* A slab touched between two visits is busy: it waits one more visit. */
static void test_busy_kept(void)
{
	pin_here();
	mcg_cache_t *c = mcg_cache_create("purge-busy", SZ, 0, 0, NULL);
	REQUIRE(c);
	enum { N = 32 };
	void *live[N];
	for (unsigned i = 0; i < N; i++) {
		live[i] = mcg_cache_alloc(c);
		REQUIRE(live[i]);
		fill(live[i], SZ, i);
	}
	for (unsigned i = 0; i < N; i += 2) {
		mcg_cache_free(c, live[i]);
		live[i] = NULL;
	}
	mcg_cache_drain_all(c);
	mcg_cache_reap(c); /* every partial slab marked */
	/* Touch the slab of live[1]: one of its objects freed back into it. */
	struct mcg_slab *busy = mcg_slab_of(live[1]);
	mcg_cache_free(c, live[1]);
	live[1] = NULL;
	mcg_cache_drain_all(c);
	bool free_pg[MAXP];
	size_t busy_pages = model(busy, live, N, free_pg);
	size_t all = model_partial(live, N);
	REQUIRE(busy_pages > 0 && busy_pages < all);
	mcg_cache_reap(c);
	CHECK_EQ(stats_of(c).purged_bytes, (all - busy_pages) * PG);
	for (size_t p = 0; p < span_pages(busy); p++)
		if (free_pg[p] && p < busy->carved * busy->cache->slot_size / PG)
			CHECK(resident(busy->base + p * PG)); /* all its slots were written */
	/* Untouched since the last visit: its turn. */
	mcg_cache_reap(c);
	CHECK_EQ(stats_of(c).purged_bytes, all * PG);
	check_purged(busy, live, N);
	for (unsigned i = 0; i < N; i++)
		if (live[i])
			CHECK(intact(live[i], SZ, i));
	for (unsigned i = 0; i < N; i++)
		mcg_cache_free(c, live[i]);
	check_shrink_all_free(c);
	CHECK_EQ(stats_of(c).purged_bytes, 0);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	unpin();
}

/*
 * A purged slot handed out again: it reads zero (its pages came back
 * fresh), takes a write, and leaves purged_bytes; shrink purges at once.
 */
static void test_reuse(void)
{
	pin_here();
	mcg_cache_t *c = mcg_cache_create("purge-reuse", SZ, 0, 0, NULL);
	REQUIRE(c);
	enum { N = 64 };
	void *live[N];
	unsigned freed = 0;
	for (unsigned i = 0; i < N; i++) {
		live[i] = mcg_cache_alloc(c);
		REQUIRE(live[i]);
		memset(live[i], 0xa5, SZ);
	}
	for (unsigned i = 0; i < N; i += 3, freed++) {
		mcg_cache_free(c, live[i]);
		live[i] = NULL;
	}
	mcg_cache_drain_all(c);
	size_t want = model_partial(live, N);
	CHECK(want > 0);
	/* Shrink needs no idle period: every partial slab, at once. */
	CHECK_EQ(mcg_cache_shrink(c), (long)(want * PG));
	CHECK_EQ(stats_of(c).purged_bytes, want * PG);
	/* The same slots again (lowest first: the partial slabs' free ones). */
	void *again[N];
	for (unsigned i = 0; i < freed; i++) {
		again[i] = mcg_cache_alloc(c);
		REQUIRE(again[i]);
		CHECK(all_bytes(again[i], SZ, 0)); /* not 0xa5: purged */
		fill(again[i], SZ, 1000 + i);
	}
	CHECK_EQ(stats_of(c).purged_bytes, 0);
	for (unsigned i = 0; i < freed; i++)
		CHECK(intact(again[i], SZ, 1000 + i));
	/* Free again, purged again: the same pages count once more. */
	for (unsigned i = 0; i < freed; i++)
		mcg_cache_free(c, again[i]);
	mcg_cache_drain_all(c);
	size_t want2 = model_partial(live, N);
	CHECK_EQ(want2, want);
	CHECK(mcg_cache_shrink(c) >= (long)(want2 * PG)); /* and the empty slab */
	CHECK_EQ(stats_of(c).purged_bytes, want2 * PG);
	for (unsigned i = 0; i < freed; i++) {
		again[i] = mcg_cache_alloc(c);
		REQUIRE(again[i]);
	}
	for (unsigned i = 0; i < N; i++)
		if (live[i])
			CHECK(all_bytes(live[i], SZ, 0xa5));
	for (unsigned i = 0; i < freed; i++)
		mcg_cache_free(c, again[i]);
	for (unsigned i = 0; i < N; i++)
		mcg_cache_free(c, live[i]);
	check_shrink_all_free(c);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	unpin();
}

/* kmalloc: a block on a purged page reads zero from malloc and from calloc. */
static void test_kmalloc_calloc(void)
{
	pin_here();
	enum { N = 64, KSZ = 8000 };
	void *blk[N];
	for (unsigned i = 0; i < N; i++) {
		blk[i] = mcg_malloc(KSZ);
		REQUIRE(blk[i]);
		memset(blk[i], 0xa5, KSZ);
	}
	mcg_cache_t *kc = mcg_slab_of(blk[0])->cache;
	REQUIRE(stats_of(kc).slot_size == SZ);
	for (unsigned i = 1; i < N; i += 2) {
		mcg_free(blk[i]);
		blk[i] = NULL;
	}
	mcg_slab_shrink_all(); /* purges every partial slab */
	size_t want = model_partial(blk, N);
	CHECK_EQ(stats_of(kc).purged_bytes, want * PG);
	CHECK(want >= N); /* two pages per freed block */
	for (unsigned i = 1; i < N; i += 2) {
		blk[i] = (i & 2) ? mcg_calloc(1, KSZ) : mcg_malloc(KSZ);
		REQUIRE(blk[i]);
		CHECK(all_bytes(blk[i], KSZ, 0));
	}
	CHECK_EQ(stats_of(kc).purged_bytes, 0);
	for (unsigned i = 0; i < N; i += 2)
		CHECK(all_bytes(blk[i], KSZ, 0xa5));
	for (unsigned i = 0; i < N; i++)
		mcg_free(blk[i]);
	mcg_slab_shrink_all();
	CHECK_EQ(stats_of(kc).purged_bytes, 0);
	unpin();
}

/*
 * A poisoned cache (no CPU arrays: each allocation carves one slot): its
 * free pages are purged, but none past the last slot handed out; a slot
 * handed out again is poisoned as before, and a write to a purged free
 * object is still reported when its page is handed out.
 */
static void test_poison(void)
{
	mcg_report_fn old = mcg_set_report_handler(capture);
	memset(reports, 0, sizeof(reports));
	mcg_cache_t *c = mcg_cache_create("purge-poison", PG, 0, MCG_CACHE_POISON, NULL);
	REQUIRE(c);
	REQUIRE(stats_of(c).slot_size == PG && stats_of(c).objs_per_slab > 8);
	void *o[5];
	for (int i = 0; i < 5; i++) {
		o[i] = mcg_cache_alloc(c);
		REQUIRE(o[i]);
		memset(o[i], i + 1, PG);
	}
	struct mcg_slab *s = mcg_slab_of(o[0]);
	REQUIRE(s->carved == 5);
	void *f1 = o[1], *f3 = o[3];
	mcg_cache_free(c, f1);
	mcg_cache_free(c, f3);
	o[1] = o[3] = NULL;
	CHECK(all_bytes(f1, PG, MCG_POISON_FREE));
	mcg_cache_reap(c);
	CHECK_EQ(stats_of(c).purged_bytes, 0);
	mcg_cache_reap(c);
	/* Two pages: those of o[1] and o[3]; the slots never handed out are not. */
	CHECK_EQ(stats_of(c).purged_bytes, 2 * PG);
	CHECK_EQ(model(s, o, 5, (bool[MAXP]){0}), 2);
	check_purged(s, o, 5);
	for (int i = 0; i < 5; i += 2)
		CHECK(all_bytes(o[i], PG, (unsigned char)(i + 1)));
	/* Handed out again: poisoned as every free object is, no report. */
	void *a = mcg_cache_alloc(c);
	CHECK(a == f1);
	CHECK(all_bytes(a, PG, MCG_POISON_FREE));
	CHECK_EQ(stats_of(c).purged_bytes, PG);
	CHECK_EQ(reports[MCG_REPORT_POISON_CORRUPT], 0);
	/* A write after free to a purged object: reported when it is handed out. */
	((char *)f3)[100] = 1;
	void *b = mcg_cache_alloc(c);
	CHECK(b == f3);
	CHECK_EQ(reports[MCG_REPORT_POISON_CORRUPT], 1);
	CHECK(report_addr == f3);
	CHECK_EQ(stats_of(c).purged_bytes, 0);
	mcg_cache_free(c, a);
	mcg_cache_free(c, b);
	for (int i = 0; i < 5; i++)
		mcg_cache_free(c, o[i]);
	CHECK_EQ(reports[MCG_REPORT_POISON_CORRUPT], 1);
	CHECK_EQ(reports[MCG_REPORT_DOUBLE_FREE], 0);
	check_shrink_all_free(c);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	mcg_set_report_handler(old);
}

/* A red-zoned cache: slots that do not start on a page; exactly the pages
 * wholly inside free slots go, and the red zones are still checked. */
static void test_redzone(void)
{
	mcg_report_fn old = mcg_set_report_handler(capture);
	memset(reports, 0, sizeof(reports));
	mcg_cache_t *c = mcg_cache_create("purge-redzone", SZ, 0, MCG_CACHE_REDZONE, NULL);
	REQUIRE(c);
	size_t slot = stats_of(c).slot_size, per = stats_of(c).objs_per_slab;
	REQUIRE(slot % PG != 0 && per >= 6);
	void *o[16] = {0};
	for (size_t i = 0; i < per; i++) {
		o[i] = mcg_cache_alloc(c);
		REQUIRE(o[i]);
		memset(o[i], 0x11, SZ);
	}
	struct mcg_slab *s = mcg_slab_of(o[0]);
	for (size_t i = 1; i < per; i += 3) { /* single slots, and the pair i + 1, i + 2 */
		mcg_cache_free(c, o[i]);
		o[i] = NULL;
	}
	mcg_cache_free(c, o[2]);
	o[2] = NULL;
	bool free_pg[MAXP];
	size_t want = model(s, o, per, free_pg);
	CHECK(want > 0);
	mcg_cache_reap(c);
	mcg_cache_reap(c);
	CHECK_EQ(stats_of(c).purged_bytes, want * PG);
	check_purged(s, o, per);
	for (size_t i = 0; i < per; i++)
		if (o[i])
			CHECK(all_bytes(o[i], SZ, 0x11));
	/* Handed out again, written within bounds, freed: no report. */
	void *a[16];
	size_t n = 0;
	while (stats_of(c).purged_bytes && n < 16) {
		a[n] = mcg_cache_alloc(c);
		REQUIRE(a[n]);
		memset(a[n], 0x22, SZ);
		n++;
	}
	CHECK_EQ(stats_of(c).purged_bytes, 0);
	for (size_t i = 0; i < n; i++)
		mcg_cache_free(c, a[i]);
	for (size_t i = 0; i < per; i++)
		mcg_cache_free(c, o[i]);
	CHECK_EQ(reports[MCG_REPORT_REDZONE_CORRUPT], 0);
	CHECK_EQ(reports[MCG_REPORT_DOUBLE_FREE], 0);
	check_shrink_all_free(c);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	mcg_set_report_handler(old);
}

static void ctor_fill(void *obj) { memset(obj, 0x5a, SZ); }

/* A constructor's cache keeps its free objects constructed: never purged. */
static void test_ctor_kept(void)
{
	pin_here();
	mcg_cache_t *c = mcg_cache_create("purge-ctor", SZ, 0, 0, ctor_fill);
	REQUIRE(c);
	enum { N = 32 };
	void *live[N];
	for (unsigned i = 0; i < N; i++) {
		live[i] = mcg_cache_alloc(c);
		REQUIRE(live[i]);
	}
	for (unsigned i = 0; i < N; i += 2) {
		mcg_cache_free(c, live[i]);
		live[i] = NULL;
	}
	mcg_cache_drain_all(c);
	CHECK(model_partial(live, N) > 0); /* a cache without a constructor would purge */
	for (int k = 0; k < 3; k++)
		mcg_cache_reap(c);
	CHECK_EQ(mcg_cache_shrink(c), 0);
	CHECK_EQ(stats_of(c).purged_bytes, 0);
	for (unsigned i = 0; i < N; i += 2) {
		live[i] = mcg_cache_alloc(c);
		REQUIRE(live[i]);
		CHECK(all_bytes(live[i], SZ, 0x5a));
	}
	for (unsigned i = 0; i < N; i++)
		mcg_cache_free(c, live[i]);
	check_shrink_all_free(c);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	unpin();
}

/*
 * Bounded work: a step looks at MCG_PURGE_VISITS partial slabs of a node,
 * going on where the last one stopped (from the tail toward the head).
 * With V + 8 partial slabs, all untouched: step 1 marks the V at the tail,
 * and the walk stops at X, the next.  X leaves the partial list (emptied):
 * the walk goes on from its neighbour, so step 2 marks the other 7, wraps
 * to the tail and purges V - 7; step 3 purges the rest.
 */
static void test_bounded_steps(void)
{
	pin_here();
	mcg_cache_t *c = mcg_cache_create("purge-steps", SZ, 0, 0, NULL);
	REQUIRE(c);
	size_t per = stats_of(c).objs_per_slab, nslabs = MCG_PURGE_VISITS + 8, n = nslabs * per;
	void **live = calloc(n, sizeof(void *));
	REQUIRE(live);
	for (size_t i = 0; i < n; i++) {
		live[i] = mcg_cache_alloc(c);
		REQUIRE(live[i]);
		memset(live[i], 1, SZ);
	}
	for (size_t i = 0; i < n; i += 2) { /* one slot in two: a page pair each */
		mcg_cache_free(c, live[i]);
		live[i] = NULL;
	}
	mcg_cache_drain_all(c);
	struct mcg_slab *sl[64];
	REQUIRE(slabs_of(live, n, sl, 64) == nslabs);
	size_t per_slab = (per / 2) * (SZ / PG);
	REQUIRE(model_partial(live, n) == nslabs * per_slab);
	struct mcg_cache_node *cn = &c->nodes[sl[0]->node];
	mcg_cache_reap(c);
	CHECK_EQ(stats_of(c).purged_bytes, 0);
	struct mcg_slab *x = cn->purge_next;
	REQUIRE(x && x->list == MCG_SLAB_PARTIAL);
	struct mcg_list *prev = x->link.prev;
	struct mcg_slab *next =
	        prev == &cn->partial ? NULL : mcg_list_entry(prev, struct mcg_slab, link);
	for (size_t i = 0; i < n; i++) {
		if (live[i] && mcg_slab_of(live[i]) == x) {
			mcg_cache_free(c, live[i]);
			live[i] = NULL;
		}
	}
	mcg_cache_drain_all(c);
	CHECK(x->list == MCG_SLAB_EMPTY);
	REQUIRE(cn->purge_next == next); /* else the walk would start off the list */
	mcg_cache_reap(c);
	CHECK_EQ(stats_of(c).purged_bytes, (MCG_PURGE_VISITS - 7) * per_slab * PG);
	mcg_cache_reap(c);
	CHECK_EQ(stats_of(c).purged_bytes, (nslabs - 1) * per_slab * PG);
	for (size_t j = 0; j < nslabs; j++)
		if (sl[j] != x)
			check_purged(sl[j], live, n);
	for (size_t i = 0; i < n; i++)
		mcg_cache_free(c, live[i]);
	check_shrink_all_free(c);
	CHECK_EQ(stats_of(c).purged_bytes, 0);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	free(live);
	unpin();
}

int main(int argc, char **argv)
{
	(void)argc;
	if (mcg_option_set("reap_ms", 0)) { /* steps only where a test runs them */
		fprintf(stderr, "reap_ms cannot be set to 0\n");
		return 1;
	}
	RUN(test_idle_partial);
	RUN(test_small_objects_middle_word);
	RUN(test_busy_kept);
	RUN(test_reuse);
	RUN(test_kmalloc_calloc);
	RUN(test_poison);
	RUN(test_redzone);
	RUN(test_ctor_kept);
	RUN(test_bounded_steps);
	return test_done_then_locked(argv);
}
