/* SPDX-License-Identifier: MIT */
/*
 * test_purge_mt.c - purging (slab/purge.c) racing allocation and free:
 * workers allocate, fill, check and free objects of a plain 8 KiB cache and
 * of a poisoned, red-zoned one, each keeping a long-lived set (every other
 * object of it freed at the start, so partial slabs go cold and are
 * purged) and pausing now and then, while an ager thread runs aging steps
 * (mcg_cache_reap, mcg_slab_reap_all) and shrinks back to back, and the
 * inline steps run too (MCG_REAP_MS=5 under ctest).  A purge that zeroed a
 * live object, or a poisoned slot handed out unpoisoned, fails a pattern
 * check or a report.  At the end: every object freed, nothing purged, no
 * slab left.  Bounded in time and count.  Runs again with MCG_RSEQ=0.
 */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "memcg/debug.h"
#include "memcg/slab.h"
#include "cache_rest.h"
#include "stress.h"
#include "test.h"

enum { THREADS = 3, KEEP = 48, SLOTS = 64, MAX_OPS = 200000 };
static const size_t sizes[2] = {8192, 3000};

static mcg_cache_t *caches[2];
static int stop;
static unsigned long bad, reports_seen, purges_seen;

static void on_report(const mcg_report_t *r)
{
	__atomic_add_fetch(&reports_seen, 1, __ATOMIC_RELAXED);
	fprintf(stderr, "unexpected report: %s of %p in %s\n", mcg_report_kind_name(r->kind),
	        r->addr, r->cache);
}

/* The word at @i of an object filled for @tag. */
static uint64_t word(uint64_t tag, size_t i) { return tag * 0x9e3779b97f4a7c15ull + i; }

/* Fill every 512th word of @o (@n bytes), the first and the last. */
static void fill(uint64_t *o, size_t n, uint64_t tag)
{
	size_t w = n / 8;
	for (size_t i = 0; i < w; i += 64)
		o[i] = word(tag, i);
	o[w - 1] = word(tag, w - 1);
}

static bool intact(const uint64_t *o, size_t n, uint64_t tag)
{
	size_t w = n / 8;
	for (size_t i = 0; i < w; i += 64)
		if (o[i] != word(tag, i))
			return false;
	return o[w - 1] == word(tag, w - 1);
}

struct obj {
	uint64_t *p;
	uint64_t tag;
	int c;
};

static void check_free(struct obj *o)
{
	if (!o->p)
		return;
	if (!intact(o->p, sizes[o->c], o->tag)) {
		__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
		fprintf(stderr, "object %p of %s lost its bytes\n", (void *)o->p,
		        o->c ? "poison" : "plain");
	}
	mcg_cache_free(caches[o->c], o->p);
	o->p = NULL;
}

static bool alloc_one(struct obj *o, int c, uint64_t tag)
{
	o->p = mcg_cache_alloc(caches[c]);
	if (!o->p)
		return false;
	o->c = c;
	o->tag = tag;
	fill(o->p, sizes[c], tag);
	return true;
}

static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg, seed = 0x9e3779b9u * (id + 1);
	uint64_t tag = (uint64_t)id << 40;
	struct obj keep[KEEP] = {0}, slots[SLOTS] = {0};
	for (int i = 0; i < KEEP; i++)
		if (!alloc_one(&keep[i], i & 1, ++tag))
			__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < KEEP; i += 4) { /* holes in the long-lived slabs */
		check_free(&keep[i]);
		check_free(&keep[i + 1]);
	}
	for (unsigned op = 0; op < MAX_OPS && !__atomic_load_n(&stop, __ATOMIC_RELAXED); op++) {
		struct obj *o = &slots[stress_rnd(&seed) % SLOTS];
		if (o->p)
			check_free(o);
		else if (!alloc_one(o, (int)(stress_rnd(&seed) & 1), ++tag))
			__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
		if (stress_rnd(&seed) % 4096 == 0) { /* quiet a while: slabs go cold */
			struct timespec ts = {0, 2 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
		if (stress_rnd(&seed) % 1024 == 0)
			stress_hop(&seed);
	}
	for (int i = 0; i < SLOTS; i++)
		check_free(&slots[i]);
	for (int i = 0; i < KEEP; i++)
		check_free(&keep[i]);
	return NULL;
}

static void *ager(void *arg)
{
	(void)arg;
	for (unsigned k = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED); k++) {
		for (int c = 0; c < 2; c++) {
			mcg_cache_reap(caches[c]);
			mcg_cache_stats_t st;
			if (mcg_cache_stats(caches[c], &st) == 0 && st.purged_bytes)
				__atomic_add_fetch(&purges_seen, 1, __ATOMIC_RELAXED);
		}
		if (k % 16 == 0)
			mcg_slab_reap_all();
		if (k % 64 == 0)
			mcg_cache_shrink(caches[k / 64 % 2]);
		struct timespec ts = {0, 200 * 1000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void test_purge_races(void)
{
	mcg_report_fn old = mcg_set_report_handler(on_report);
	caches[0] = mcg_cache_create("purge-mt", sizes[0], 0, 0, NULL);
	caches[1] = mcg_cache_create("purge-mt-debug", sizes[1], 0,
	                             MCG_CACHE_POISON | MCG_CACHE_REDZONE, NULL);
	REQUIRE(caches[0] && caches[1]);
	pthread_t th[THREADS], ag;
	for (unsigned i = 0; i < THREADS; i++)
		REQUIRE(pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i) == 0);
	REQUIRE(pthread_create(&ag, NULL, ager, NULL) == 0);
	double secs = stress_seconds(1.5);
	struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
	nanosleep(&ts, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_join(ag, NULL);
	CHECK_EQ(bad, 0);
	CHECK_EQ(reports_seen, 0);
	CHECK(purges_seen > 0); /* the ager saw purged pages: the race was run */
	fprintf(stderr, "aging steps that saw purged pages: %lu\n", purges_seen);
	for (int c = 0; c < 2; c++) {
		check_shrink_all_free(caches[c]);
		mcg_cache_stats_t st;
		CHECK_EQ(mcg_cache_stats(caches[c], &st), 0);
		CHECK_EQ(st.purged_bytes, 0);
		CHECK_EQ(mcg_cache_destroy(caches[c]), 0);
	}
	mcg_set_report_handler(old);
}

int main(int argc, char **argv)
{
	(void)argc;
	RUN(test_purge_races);
	return test_done_then_locked(argv);
}
