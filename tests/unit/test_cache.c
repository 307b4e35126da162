/* SPDX-License-Identifier: MIT */
/*
 * test_cache.c - object caches (slab/cache.c): arguments, alloc/free for
 * many sizes and alignments, constructors, exact statistics, cross-thread
 * frees, hardening reports, destroy with live objects.
 *
 * Runs twice: once in the mode chosen natively (rseq here), then re-executes
 * itself with MCG_RSEQ=0 so that every test also covers the locked path.
 * And once more in a fresh process whose first kmalloc calls find no
 * memory for the size classes.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memcg/debug.h"
#include "memcg/kmalloc.h"
#include "memcg/memcg.h"
#include "memcg/slab.h"
#include "slab/account.h"
#include "slab/slab.h"
#include "cache_rest.h"
#include "group_file.h"
#include "test.h"

/* ---- report capture ---- */

#define MAX_REPORTS 4096
static mcg_report_t reports[MAX_REPORTS];
static char report_names[MAX_REPORTS][32];
static int nreports;

static void capture(const mcg_report_t *r)
{
	int i = __atomic_fetch_add(&nreports, 1, __ATOMIC_RELAXED);
	if (i < MAX_REPORTS) {
		reports[i] = *r;
		snprintf(report_names[i], sizeof(report_names[i]), "%s", r->cache);
	}
}

static void reports_reset(void)
{
	nreports = 0;
	memset(reports, 0, sizeof(reports));
}

/* How many captured reports have @kind (and @addr, unless NULL). */
static int reports_of(mcg_report_kind_t kind, const void *addr)
{
	int n = 0;
	for (int i = 0; i < nreports && i < MAX_REPORTS; i++)
		if (reports[i].kind == kind && (!addr || reports[i].addr == addr))
			n++;
	return n;
}

/* ---- helpers ---- */

static mcg_cache_stats_t stats_of(mcg_cache_t *c)
{
	mcg_cache_stats_t st;
	memset(&st, 0xff, sizeof(st));
	int r = mcg_cache_stats(c, &st);
	CHECK_EQ(r, 0);
	return st;
}

/* ---- tests ---- */

static void test_bad_arguments(void)
{
	errno = 0;
	CHECK(mcg_cache_create(NULL, 64, 0, 0, NULL) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(mcg_cache_create("t", 0, 0, 0, NULL) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(mcg_cache_create("t", MCG_CACHE_MAX_SIZE + 1, 0, 0, NULL) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(mcg_cache_create("t", (size_t)-1, 0, 0, NULL) == NULL);
	CHECK_EQ(errno, EINVAL);
	size_t bad_align[] = {3, 6, 12, 24, 100, 8192, 1u << 20};
	for (size_t i = 0; i < MCG_ARRAY_SIZE(bad_align); i++) {
		errno = 0;
		CHECK(mcg_cache_create("t", 64, bad_align[i], 0, NULL) == NULL);
		CHECK_EQ(errno, EINVAL);
	}
	unsigned bad_flags[] = {0x20, 0x100, 0x80000000u, MCG_CACHE_FLAGS_ALL + 1};
	for (size_t i = 0; i < MCG_ARRAY_SIZE(bad_flags); i++) {
		errno = 0;
		CHECK(mcg_cache_create("t", 64, 0, bad_flags[i], NULL) == NULL);
		CHECK_EQ(errno, EINVAL);
	}
	CHECK_EQ(mcg_cache_destroy(NULL), -EINVAL);
	CHECK_EQ(mcg_cache_shrink(NULL), -EINVAL);
	CHECK_EQ(mcg_cache_reap(NULL), -EINVAL);
	mcg_cache_stats_t st;
	CHECK_EQ(mcg_cache_stats(NULL, &st), -EINVAL);
	errno = 0;
	CHECK(mcg_cache_alloc(NULL) == NULL);
	CHECK_EQ(errno, EINVAL);
	mcg_cache_free(NULL, NULL); /* ignored */

	/* The boundaries themselves are accepted. */
	mcg_cache_t *c =
	        mcg_cache_create("max", MCG_CACHE_MAX_SIZE, 4096, MCG_CACHE_FLAGS_ALL, NULL);
	REQUIRE(c);
	CHECK_EQ(mcg_cache_stats(c, NULL), -EINVAL);
	void *p = mcg_cache_alloc(c);
	CHECK(p && ((uintptr_t)p & 4095) == 0);
	if (p)
		memset(p, 1, MCG_CACHE_MAX_SIZE);
	mcg_cache_free(c, p);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	c = mcg_cache_create("one", 1, 1, 0, NULL);
	REQUIRE(c);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	/* A long name is cut at 31 characters. */
	c = mcg_cache_create("a-very-long-cache-name-that-goes-on-and-on", 8, 0, 0, NULL);
	REQUIRE(c);
	mcg_cache_stats_t s2 = stats_of(c);
	CHECK_EQ(strlen(s2.name), 31);
	CHECK(strncmp(s2.name, "a-very-long-cache-name-that-goe", 31) == 0);
	CHECK_EQ(mcg_cache_destroy(c), 0);
}

/* Allocate @n objects of a cache of (@size, @align, @flags) and check them. */
static void exercise(size_t size, size_t align, unsigned flags, unsigned n)
{
	mcg_cache_t *c = mcg_cache_create("exercise", size, align, flags, NULL);
	REQUIRE(c);
	size_t want = align ? align : (size >= 16 ? 16 : 8);
	if (flags & MCG_CACHE_HWCACHE_ALIGN)
		want = MCG_MAX(want, 64);
	void **objs = calloc(n, sizeof(void *));
	REQUIRE(objs);
	unsigned bad_align = 0, null = 0;
	for (unsigned i = 0; i < n; i++) {
		objs[i] = mcg_cache_alloc(c);
		if (!objs[i]) {
			null++;
			continue;
		}
		if ((uintptr_t)objs[i] % want)
			bad_align++;
		memset(objs[i], (int)(i & 0xff), size);
	}
	CHECK_EQ(null, 0);
	CHECK_EQ(bad_align, 0);
	/* Writes did not collide: every object still holds its own pattern. */
	unsigned collided = 0;
	for (unsigned i = 0; i < n; i++) {
		const unsigned char *b = objs[i];
		if (!b)
			continue;
		for (size_t k = 0; k < size; k++)
			if (b[k] != (unsigned char)(i & 0xff)) {
				collided++;
				break;
			}
	}
	CHECK_EQ(collided, 0);
	/* Objects are distinct and do not overlap: sort and compare neighbours. */
	for (unsigned i = 1; i < n; i++) {
		void *v = objs[i];
		unsigned j = i;
		while (j > 0 && (uintptr_t)objs[j - 1] > (uintptr_t)v) {
			objs[j] = objs[j - 1];
			j--;
		}
		objs[j] = v;
	}
	unsigned overlap = 0;
	for (unsigned i = 1; i < n; i++)
		if ((uintptr_t)objs[i] - (uintptr_t)objs[i - 1] < size)
			overlap++;
	CHECK_EQ(overlap, 0);

	mcg_cache_stats_t st = stats_of(c);
	CHECK_EQ(st.active_objs, n);
	CHECK(st.num_objs >= n);
	CHECK_EQ(st.num_objs, st.num_slabs * st.objs_per_slab);
	CHECK(st.slot_size >= size);
	CHECK_EQ(st.slot_size % want, 0);
	CHECK(st.objs_per_slab * st.slot_size <= st.slab_bytes);
	CHECK(st.active_slabs <= st.num_slabs);
	CHECK_EQ(st.object_size, size);
	for (unsigned i = 0; i < n; i++)
		mcg_cache_free(c, objs[i]);
	st = stats_of(c);
	CHECK_EQ(st.active_objs, 0);
	CHECK(st.cached_objs <= (size_t)mcg_nr_cpus() * st.cpu_limit);
	check_shrink_all_free(c);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	free(objs);
}

static void test_sizes_and_alignments(void)
{
	size_t sizes[] = {1,      7,
	                  8,      9,
	                  15,     16,
	                  17,     24,
	                  31,     32,
	                  33,     48,
	                  63,     64,
	                  65,     100,
	                  127,    128,
	                  129,    255,
	                  256,    257,
	                  500,    1000,
	                  1024,   1025,
	                  3000,   4096,
	                  4097,   10000,
	                  65536,  100000,
	                  200000, MCG_CACHE_MAX_SIZE};
	for (size_t i = 0; i < MCG_ARRAY_SIZE(sizes); i++) {
		unsigned n = sizes[i] > 60000 ? 40 : sizes[i] > 2000 ? 300 : 3000;
		exercise(sizes[i], 0, 0, n);
	}
	size_t aligns[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
	size_t asizes[] = {1, 24, 40, 100, 1000, 5000};
	for (size_t a = 0; a < MCG_ARRAY_SIZE(aligns); a++)
		for (size_t s = 0; s < MCG_ARRAY_SIZE(asizes); s++)
			exercise(asizes[s], aligns[a], 0, asizes[s] > 2000 ? 100 : 700);
	/* HWCACHE_ALIGN gives 64, whatever the size or the align asked. */
	exercise(1, 0, MCG_CACHE_HWCACHE_ALIGN, 1000);
	exercise(10, 8, MCG_CACHE_HWCACHE_ALIGN, 1000);
	exercise(100, 0, MCG_CACHE_HWCACHE_ALIGN, 1000);
	exercise(100, 256, MCG_CACHE_HWCACHE_ALIGN, 500);
	/* Debug caches go through the checked slow path for every object. */
	exercise(24, 0, MCG_CACHE_POISON | MCG_CACHE_REDZONE, 1000);
	exercise(100, 64, MCG_CACHE_REDZONE, 500);
	exercise(3000, 0, MCG_CACHE_POISON | MCG_CACHE_RECLAIMABLE, 100);
	exercise(64, 0, MCG_CACHE_RECLAIMABLE, 1000);
}

static int ctor_calls, ctor_twice;
#define CTOR_SET 65536 /* open addressing set of constructed addresses */
static uintptr_t ctor_set[CTOR_SET];

static void ctor_fill(void *obj)
{
	__atomic_add_fetch(&ctor_calls, 1, __ATOMIC_RELAXED);
	uintptr_t a = (uintptr_t)obj;
	size_t h = (a >> 4) * 0x9e3779b97f4a7c15ull >> 48;
	while (ctor_set[h % CTOR_SET] && ctor_set[h % CTOR_SET] != a)
		h++;
	if (ctor_set[h % CTOR_SET] == a)
		ctor_twice++; /* constructed twice without its slab going away */
	ctor_set[h % CTOR_SET] = a;
	memset(obj, 0x5a, 40);
}

static bool all_5a(const void *p)
{
	const unsigned char *b = p;
	for (int i = 0; i < 40; i++)
		if (b[i] != 0x5a)
			return false;
	return true;
}

static void test_constructor_once(void)
{
	enum { N = 5000 };
	static void *objs[N];
	ctor_calls = 0;
	ctor_twice = 0;
	memset(ctor_set, 0, sizeof(ctor_set));
	mcg_cache_t *c = mcg_cache_create("ctor", 40, 0, 0, ctor_fill);
	REQUIRE(c);
	for (int i = 0; i < N; i++) {
		objs[i] = mcg_cache_alloc(c);
		REQUIRE(objs[i]);
		CHECK(all_5a(objs[i]));
	}
	mcg_cache_stats_t st = stats_of(c);
	CHECK(ctor_calls >= N);
	CHECK(ctor_calls <= (int)st.num_objs);
	/* Free and reuse without shrink: nobody is constructed twice. */
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++)
			mcg_cache_free(c, objs[i]);
		for (int i = 0; i < N; i++) {
			objs[i] = mcg_cache_alloc(c);
			REQUIRE(objs[i]);
		}
	}
	st = stats_of(c);
	CHECK_EQ(ctor_twice, 0);
	CHECK(ctor_calls <= (int)st.num_objs);
	/* Free all but one (its slab stays), flush to the slabs, reuse. */
	for (int i = 1; i < N; i++)
		mcg_cache_free(c, objs[i]);
	mcg_cache_shrink(c);
	struct mcg_slab *kept = mcg_slab_of(objs[0]);
	memset(ctor_set, 0, sizeof(ctor_set)); /* released slabs may come back */
	int reused_ok = 0, reused = 0;
	for (int i = 1; i < N; i++) {
		objs[i] = mcg_cache_alloc(c);
		REQUIRE(objs[i]);
		/* A free object is never written: its constructed state is intact. */
		if (mcg_slab_of(objs[i]) == kept) {
			reused++;
			reused_ok += all_5a(objs[i]);
		}
	}
	CHECK(reused > 0);
	CHECK_EQ(reused_ok, reused);
	for (int i = 0; i < N; i++)
		mcg_cache_free(c, objs[i]);
	CHECK_EQ(mcg_cache_destroy(c), 0);
}

static void test_stats_exact(void)
{
	mcg_cache_t *c = mcg_cache_create("stats", 200, 0, MCG_CACHE_RECLAIMABLE, NULL);
	REQUIRE(c);
	mcg_cache_stats_t st = stats_of(c);
	CHECK(strcmp(st.name, "stats") == 0);
	CHECK_EQ(st.active_objs, 0);
	CHECK_EQ(st.num_objs, 0);
	CHECK_EQ(st.flags, MCG_CACHE_RECLAIMABLE);
	CHECK(st.batch >= 1 && st.batch <= st.cpu_limit);
	enum { N = 2000 };
	static void *objs[N];
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++)
			objs[i] = mcg_cache_alloc(c);
		for (int k = 0; k < N; k += 97) {
			st = stats_of(c);
			CHECK_EQ(st.active_objs, N - k);
			CHECK(st.active_objs + st.cached_objs <= st.num_objs);
			for (int i = k; i < k + 97 && i < N; i++)
				mcg_cache_free(c, objs[i]);
		}
		st = stats_of(c);
		CHECK_EQ(st.active_objs, 0);
		CHECK_EQ(st.num_objs, st.num_slabs * st.objs_per_slab);
	}
	CHECK(st.num_slabs > 0);
	check_shrink_all_free(c);
	CHECK_EQ(mcg_cache_destroy(c), 0);
}

/* ---- cross-thread frees ---- */

#define XT_THREADS 8
#define XT_OBJS 3000
static mcg_cache_t *xt_cache;
static void *xt_objs[XT_THREADS][XT_OBJS];
static int xt_errors;

static void *xt_alloc(void *arg)
{
	long t = (long)arg;
	for (int i = 0; i < XT_OBJS; i++) {
		uint64_t *p = mcg_cache_alloc(xt_cache);
		if (!p) {
			__atomic_add_fetch(&xt_errors, 1, __ATOMIC_RELAXED);
			continue;
		}
		p[0] = (uint64_t)t << 32 | (uint64_t)i;
		xt_objs[t][i] = p;
	}
	return NULL;
}

static void *xt_free(void *arg)
{
	long t = (long)arg;
	long from = (t + 1) % XT_THREADS; /* free another thread's objects */
	for (int i = 0; i < XT_OBJS; i++) {
		uint64_t *p = xt_objs[from][i];
		if (!p || p[0] != ((uint64_t)from << 32 | (uint64_t)i))
			__atomic_add_fetch(&xt_errors, 1, __ATOMIC_RELAXED);
		mcg_cache_free(xt_cache, p);
	}
	return NULL;
}

static void test_cross_thread_free(void)
{
	xt_cache = mcg_cache_create("xthread", 48, 0, 0, NULL);
	REQUIRE(xt_cache);
	xt_errors = 0;
	for (int round = 0; round < 3; round++) {
		pthread_t th[XT_THREADS];
		for (long t = 0; t < XT_THREADS; t++)
			pthread_create(&th[t], NULL, xt_alloc, (void *)t);
		for (int t = 0; t < XT_THREADS; t++)
			pthread_join(th[t], NULL);
		mcg_cache_stats_t st = stats_of(xt_cache);
		CHECK_EQ(st.active_objs, XT_THREADS * XT_OBJS);
		for (long t = 0; t < XT_THREADS; t++)
			pthread_create(&th[t], NULL, xt_free, (void *)t);
		for (int t = 0; t < XT_THREADS; t++)
			pthread_join(th[t], NULL);
		st = stats_of(xt_cache);
		CHECK_EQ(st.active_objs, 0);
	}
	CHECK_EQ(xt_errors, 0);
	CHECK(stats_of(xt_cache).num_slabs > 0);
	check_shrink_all_free(xt_cache);
	CHECK_EQ(mcg_cache_destroy(xt_cache), 0);
}

/* ---- hardening ---- */

static void test_double_free_consecutive(void)
{
	reports_reset();
	mcg_cache_t *c = mcg_cache_create("dfree", 64, 0, 0, NULL);
	REQUIRE(c);
	void *a = mcg_cache_alloc(c);
	REQUIRE(a);
	mcg_cache_free(c, a);
	CHECK_EQ(nreports, 0);
	mcg_cache_free(c, a); /* caught on the fast path: same top of array */
	CHECK_EQ(reports_of(MCG_REPORT_DOUBLE_FREE, a), 1);
	CHECK(strcmp(report_names[0], "dfree") == 0);
	/* The object was handed out only once afterwards. */
	void *x = mcg_cache_alloc(c), *y = mcg_cache_alloc(c);
	CHECK(x != y);
	mcg_cache_free(c, x);
	mcg_cache_free(c, y);
	CHECK_EQ(stats_of(c).active_objs, 0);
	CHECK_EQ(mcg_cache_destroy(c), 0);
}

static void test_double_free_flushed(void)
{
	reports_reset();
	mcg_cache_t *c = mcg_cache_create("dfree2", 64, 0, 0, NULL);
	REQUIRE(c);
	void *a = mcg_cache_alloc(c), *b = mcg_cache_alloc(c);
	void *keep = mcg_cache_alloc(c);
	REQUIRE(a && b && keep);
	mcg_cache_free(c, a);
	mcg_cache_free(c, b);
	mcg_cache_free(c, a); /* not consecutive: found when flushed */
	mcg_cache_shrink(c);
	CHECK_EQ(reports_of(MCG_REPORT_DOUBLE_FREE, a), 1);
	CHECK_EQ(nreports, 1);
	mcg_cache_stats_t st = stats_of(c);
	CHECK_EQ(st.active_objs, 1);
	/* Free after shrink: the slab bitmap sees it. */
	mcg_cache_free(c, b);
	mcg_cache_shrink(c);
	CHECK_EQ(reports_of(MCG_REPORT_DOUBLE_FREE, b), 1);
	mcg_cache_free(c, keep);
	CHECK_EQ(stats_of(c).active_objs, 0);
	CHECK_EQ(mcg_cache_destroy(c), 0);
}

static void test_foreign_pointers(void)
{
	reports_reset();
	mcg_cache_t *c = mcg_cache_create("foreign", 64, 0, 0, NULL);
	mcg_cache_t *d = mcg_cache_create("other", 64, 0, 0, NULL);
	REQUIRE(c && d);
	long on_stack[16];
	mcg_cache_free(c, on_stack);
	CHECK_EQ(reports_of(MCG_REPORT_FOREIGN_PTR, on_stack), 1);
	void *m = malloc(64);
	mcg_cache_free(c, m);
	CHECK_EQ(reports_of(MCG_REPORT_FOREIGN_PTR, m), 1);
	free(m);
	char *a = mcg_cache_alloc(c);
	REQUIRE(a);
	mcg_cache_free(c, a + 8);
	CHECK_EQ(reports_of(MCG_REPORT_MISALIGNED, a + 8), 1);
	mcg_cache_free(c, a + 1);
	CHECK_EQ(reports_of(MCG_REPORT_MISALIGNED, a + 1), 1);
	mcg_cache_free(d, a);
	CHECK_EQ(reports_of(MCG_REPORT_WRONG_CACHE, a), 1);
	mcg_cache_free(c, NULL); /* nothing, and no report (it takes the slow path) */
	mcg_cache_free(NULL, NULL);
	CHECK_EQ(nreports, 5);
	/* Reported frees did nothing: @a is still live and usable. */
	CHECK_EQ(stats_of(c).active_objs, 1);
	CHECK_EQ(stats_of(d).active_objs, 0);
	memset(a, 1, 64);
	mcg_cache_free(c, a);
	CHECK_EQ(nreports, 5);
	CHECK_EQ(stats_of(c).active_objs, 0);
	/* A pointer into a chunk's header unit, and into a slab no longer there. */
	mcg_cache_shrink(c);
	mcg_cache_free(c, a);
	CHECK_EQ(reports_of(MCG_REPORT_FOREIGN_PTR, a), 1);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	CHECK_EQ(mcg_cache_destroy(d), 0);
}

/*
 * A slab keeps nothing inside its free objects (its bitmap says which are
 * free): writes into freed objects, as a use after free does, cannot steer
 * the allocator.  Every object is handed out again, once, at an object
 * start of its own slab, and nothing is reported.
 */
static void test_use_after_free_cannot_steer(void)
{
	reports_reset();
	mcg_cache_t *c = mcg_cache_create("uaf", 64, 0, 0, NULL);
	REQUIRE(c);
	enum { N = 200 };
	void *objs[N];
	for (int i = 0; i < N; i++)
		REQUIRE((objs[i] = mcg_cache_alloc(c)) != NULL);
	/* Keep objs[0] live so its slab stays; the others go back to it. */
	for (int i = 1; i < N; i++)
		mcg_cache_free(c, objs[i]);
	mcg_cache_shrink(c);
	struct mcg_slab *s = mcg_slab_of(objs[0]);
	REQUIRE(s);
	int in_slab = 0;
	for (int i = 1; i < N; i++) {
		if (mcg_slab_of(objs[i]) != s)
			continue;
		memset(objs[i], 0x41, 64); /* every word a would-be link */
		*(void **)objs[i] = objs[1];
		in_slab++;
	}
	REQUIRE(in_slab > 8);
	void *got[N];
	int again = 0;
	for (int n = 0; n < N - 1; n++) {
		got[n] = mcg_cache_alloc(c);
		REQUIRE(got[n] != NULL);
		CHECK(mcg_slab_of(got[n]) != NULL);
		for (int k = 0; k < n; k++)
			CHECK(got[k] != got[n]);
		CHECK(got[n] != objs[0]);
		again += mcg_slab_of(got[n]) == s;
	}
	CHECK_EQ(again, in_slab);
	CHECK_EQ(nreports, 0);
	for (int n = 0; n < N - 1; n++)
		mcg_cache_free(c, got[n]);
	mcg_cache_free(c, objs[0]);
	CHECK_EQ(stats_of(c).active_objs, 0);
	CHECK_EQ(mcg_cache_destroy(c), 0);
}

static void test_poison(void)
{
	reports_reset();
	mcg_cache_t *c = mcg_cache_create("poison", 48, 0, MCG_CACHE_POISON, NULL);
	REQUIRE(c);
	char *a = mcg_cache_alloc(c), *b = mcg_cache_alloc(c);
	REQUIRE(a && b);
	memset(a, 1, 48);
	mcg_cache_free(c, a);
	CHECK_EQ(nreports, 0);
	a[47] = 'x';                      /* write after free */
	char *again = mcg_cache_alloc(c); /* LIFO: @a again */
	CHECK(again == a);
	CHECK_EQ(reports_of(MCG_REPORT_POISON_CORRUPT, a), 1);
	/* An untouched free object passes. */
	memset(b, 2, 48);
	mcg_cache_free(c, b);
	char *b2 = mcg_cache_alloc(c);
	CHECK(b2 == b);
	CHECK_EQ(nreports, 1);
	mcg_cache_free(c, again);
	mcg_cache_free(c, b2);
	CHECK_EQ(mcg_cache_destroy(c), 0);
}

/*
 * A debug cache, an object freed twice but not twice in a row: both frees
 * sit in the CPU array; flushed, the second finds the object's bit clear in
 * its slab - reported, nothing freed twice.
 */
static void test_debug_double_free_flushed(void)
{
	reports_reset();
	mcg_cache_t *c = mcg_cache_create("debug-df", 48, 0, MCG_CACHE_POISON, NULL);
	REQUIRE(c);
	char *a = mcg_cache_alloc(c), *b = mcg_cache_alloc(c);
	REQUIRE(a && b);
	mcg_cache_free(c, a);
	mcg_cache_free(c, b);
	mcg_cache_free(c, a);
	mcg_cache_shrink(c);
	CHECK_EQ(reports_of(MCG_REPORT_DOUBLE_FREE, a), 1);
	CHECK_EQ(nreports, 1);
	mcg_cache_stats_t st;
	REQUIRE(mcg_cache_stats(c, &st) == 0);
	CHECK_EQ(st.active_objs, 0);
	CHECK_EQ(mcg_cache_destroy(c), 0);
}

static void test_redzone(void)
{
	reports_reset();
	size_t sizes[] = {1, 8, 13, 64, 100};
	for (size_t k = 0; k < MCG_ARRAY_SIZE(sizes); k++) {
		size_t sz = sizes[k];
		mcg_cache_t *c = mcg_cache_create("redzone", sz, 0, MCG_CACHE_REDZONE, NULL);
		REQUIRE(c);
		reports_reset();
		int before = nreports;
		char *a = mcg_cache_alloc(c);
		REQUIRE(a);
		memset(a, 3, sz); /* in bounds: fine */
		mcg_cache_free(c, a);
		CHECK_EQ(nreports, before);
		a = mcg_cache_alloc(c);
		a[sz] = 3; /* one byte past the end */
		mcg_cache_free(c, a);
		CHECK_EQ(reports_of(MCG_REPORT_REDZONE_CORRUPT, a), 1);
		/* The free was refused: the object is still live. */
		CHECK_EQ(stats_of(c).active_objs, 1);
		CHECK_EQ(mcg_cache_destroy(c), -EBUSY);
		a[sz] = (char)0xbb; /* repair, then the free goes through */
		mcg_cache_free(c, a);
		CHECK_EQ(stats_of(c).active_objs, 0);
		CHECK_EQ(mcg_cache_destroy(c), 0);
	}
}

static void test_destroy_busy(void)
{
	reports_reset();
	mcg_cache_t *c = mcg_cache_create("busy", 100, 0, 0, NULL);
	REQUIRE(c);
	enum { N = 300, LIVE = 7 };
	void *objs[N];
	for (int i = 0; i < N; i++)
		objs[i] = mcg_cache_alloc(c);
	void *live[LIVE];
	for (int i = 0; i < N; i++) {
		if (i % 43 == 5 && i / 43 < LIVE)
			live[i / 43] = objs[i];
		else
			mcg_cache_free(c, objs[i]);
	}
	CHECK_EQ(mcg_cache_destroy(c), -EBUSY);
	CHECK_EQ(reports_of(MCG_REPORT_LEAK, NULL), LIVE);
	CHECK_EQ(nreports, LIVE);
	for (int i = 0; i < LIVE; i++)
		CHECK_EQ(reports_of(MCG_REPORT_LEAK, live[i]), 1);
	/* Still usable. */
	void *x = mcg_cache_alloc(c);
	CHECK(x != NULL);
	memset(x, 0, 100);
	mcg_cache_free(c, x);
	CHECK_EQ(stats_of(c).active_objs, LIVE);
	for (int i = 0; i < LIVE; i++)
		mcg_cache_free(c, live[i]);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	CHECK_EQ(nreports, LIVE);
}

static void test_report_kind_names(void)
{
	CHECK(strcmp(mcg_report_kind_name(MCG_REPORT_DOUBLE_FREE), "double-free") == 0);
	CHECK(strcmp(mcg_report_kind_name(MCG_REPORT_LEAK), "leak") == 0);
	CHECK(strcmp(mcg_report_kind_name((mcg_report_kind_t)0), "unknown") == 0);
	CHECK(strcmp(mcg_report_kind_name((mcg_report_kind_t)999), "unknown") == 0);
}

/* Run this binary again with MCG_RSEQ=0: the locked path. */
static void test_mode(void)
{
	bool locked = getenv("MCG_TEST_LOCKED") != NULL;
	fprintf(stderr, "per-CPU mode: %s\n",
	        mcg_percpu_mode() == MCG_PERCPU_RSEQ ? "rseq" : "locked");
	if (locked || MCG_TSAN || !MCG_HAVE_RSEQ_ASM)
		CHECK_EQ(mcg_percpu_mode(), MCG_PERCPU_LOCKED);
	else
		CHECK_EQ(mcg_percpu_mode(), MCG_PERCPU_RSEQ); /* glibc 2.36 registers rseq */
}

/*
 * In a fresh process (MCG_TEST_INIT_FAULT): kmalloc's first calls, before
 * its size classes exist, with no memory for them - each fails cleanly
 * (NULL, ENOMEM, nothing charged) and the next call tries again; with
 * memory, the classes are made.  Accounted calls use an objcg of no group:
 * a group's start-up would make the classes first.
 */
static void init_failed(void)
{
	static struct mcg_objcg none;
	static const size_t sizes[] = {100, 3000};
	mcg_percpu_mode();      /* chosen first, as by a group's start-up */
	mcg_fault_inject(1, 1); /* every allocation fails */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		errno = 0;
		CHECK(!mcg_kmalloc_objcg(sizes[i], &none));
		CHECK_EQ(errno, ENOMEM);
		errno = 0;
		CHECK(!mcg_malloc(sizes[i]));
		CHECK_EQ(errno, ENOMEM);
	}
	CHECK(mcg_fault_failed() >= 4); /* each call tried to make the classes */
	mcg_fault_inject(0, 0);
	CHECK_EQ(none.charged, 0);
	CHECK_EQ(none.leftover, 0);
	void *p = mcg_malloc(100), *q = mcg_malloc(3000);
	CHECK(p && q);
	CHECK_EQ(mcg_malloc_usable_size(p), 112);
	mcg_free(p);
	mcg_free(q);
}

static char **test_argv;

static void test_init_failure(void)
{
	CHECK_EQ(test_rerun(test_argv, "MCG_TEST_INIT_FAULT", "1", "MCG_TEST_INIT_FAULT_RUN"), 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (getenv("MCG_TEST_INIT_FAULT")) {
		RUN(init_failed);
		return test_done();
	}
	test_argv = argv;
	mcg_set_report_handler(capture);
	RUN(test_mode);
	RUN(test_bad_arguments);
	RUN(test_sizes_and_alignments);
	RUN(test_constructor_once);
	RUN(test_stats_exact);
	RUN(test_cross_thread_free);
	RUN(test_double_free_consecutive);
	RUN(test_double_free_flushed);
	RUN(test_foreign_pointers);
	RUN(test_use_after_free_cannot_steer);
	RUN(test_poison);
	RUN(test_debug_double_free_flushed);
	RUN(test_redzone);
	RUN(test_destroy_busy);
	RUN(test_report_kind_names);
	if (!getenv("MCG_TEST_LOCKED"))
		RUN(test_init_failure);
	int rc = test_done();
	if (!getenv("MCG_TEST_LOCKED")) {
		fprintf(stderr, "--- again with MCG_RSEQ=0 (locked path)\n");
		int rc2 = test_run_locked(argv);
		if (rc2 && rc2 != TEST_SKIP)
			fprintf(stderr, "locked-path run failed: %d\n", rc2);
		rc = test_merge(rc, rc2);
	}
	return rc;
}
