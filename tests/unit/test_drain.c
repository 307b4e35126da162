/* SPDX-License-Identifier: MIT */
/*
 * test_drain.c - taking memory back (slab/drain.c): shrink returns every
 * empty slab and the resident set drops; reap ages untouched CPU arrays and
 * frees surplus empty slabs a fifth at a time; the reaper thread.
 * Runs again with MCG_RSEQ=0.
 */
#include <errno.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memcg/debug.h"
#include "memcg/slab.h"
#include "os/os.h"
#include "page/pages.h"
#include "slab/slab.h"
#include "cache_rest.h"
#include "test.h"

static cpu_set_t saved_affinity;

/* Pin to the CPU we run on: the CPU arrays touched are then known. */
static unsigned pin_here(void)
{
	sched_getaffinity(0, sizeof(saved_affinity), &saved_affinity);
	int cpu = sched_getcpu();
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	sched_setaffinity(0, sizeof(one), &one);
	return (unsigned)cpu;
}

static void unpin(void) { sched_setaffinity(0, sizeof(saved_affinity), &saved_affinity); }

static mcg_cache_stats_t stats_of(mcg_cache_t *c)
{
	mcg_cache_stats_t st;
	CHECK_EQ(mcg_cache_stats(c, &st), 0);
	return st;
}

static size_t node_empty(mcg_cache_t *c)
{
	size_t e = 0;
	for (unsigned n = 0; n < c->nr_nodes; n++)
		e += c->nodes[n].nr_empty;
	return e;
}

static void test_shrink_rss(void)
{
	enum { N = 160000, SZ = 256 }; /* 40 MiB */
	static void *objs[N];
	mcg_cache_t *c = mcg_cache_create("rss", SZ, 0, 0, NULL);
	REQUIRE(c);
	size_t rss0 = mcg_os_rss_bytes();
	size_t pages0 = mcg_pages_in_use();
	for (int i = 0; i < N; i++) {
		objs[i] = mcg_cache_alloc(c);
		REQUIRE(objs[i]);
		memset(objs[i], 0x33, SZ);
	}
	size_t rss1 = mcg_os_rss_bytes();
	CHECK(rss1 >= rss0 + (size_t)N * SZ * 9 / 10);
	mcg_cache_stats_t st = stats_of(c);
	size_t slab_mem = st.num_slabs * st.slab_bytes;
	CHECK_EQ(mcg_pages_in_use() - pages0, slab_mem);
	for (int i = 0; i < N; i++)
		mcg_cache_free(c, objs[i]);
	CHECK_EQ(stats_of(c).active_objs, 0);
	long got = mcg_cache_shrink(c);
	CHECK_EQ(got, (long)slab_mem);
	size_t rss2 = mcg_os_rss_bytes();
	fprintf(stderr, "rss: before %zu KiB, live %zu KiB, after shrink %zu KiB\n", rss0 >> 10,
	        rss1 >> 10, rss2 >> 10);
	CHECK(rss2 + (size_t)N * SZ * 9 / 10 <= rss1);
	CHECK_EQ(mcg_pages_in_use(), pages0);
	st = stats_of(c);
	CHECK_EQ(st.num_slabs, 0);
	CHECK_EQ(st.cached_objs, 0);
	CHECK_EQ(mcg_cache_shrink(c), 0); /* nothing left */
	/* Memory is usable again after shrink. */
	for (int i = 0; i < 1000; i++) {
		objs[i] = mcg_cache_alloc(c);
		memset(objs[i], 1, SZ);
	}
	for (int i = 0; i < 1000; i++)
		mcg_cache_free(c, objs[i]);
	size_t mapped = mcg_os_mapped_bytes();
	CHECK_EQ(mcg_cache_destroy(c), 0);
	CHECK(mcg_os_mapped_bytes() < mapped); /* the cache's metadata went back */
	CHECK_EQ(mcg_pages_in_use(), pages0);
}

static void test_reap_arrays(void)
{
	unsigned cpu = pin_here();
	mcg_cache_t *c = mcg_cache_create("reap-arr", 64, 0, 0, NULL);
	REQUIRE(c);
	enum { K = 150 };
	void *objs[K];
	for (int i = 0; i < K; i++)
		objs[i] = mcg_cache_alloc(c);
	for (int i = 0; i < K; i++)
		mcg_cache_free(c, objs[i]);
	struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(c->pcpu, cpu);
	size_t cached = stats_of(c).cached_objs;
	CHECK_EQ(st->cur, cached); /* all in this CPU's array */
	CHECK(cached > 10);
	/* The array needed its node (refills) since the last reap: left alone. */
	mcg_cache_reap(c);
	CHECK_EQ(stats_of(c).cached_objs, cached);
	/* Untouched since: a fifth (rounded up) goes back per reap. */
	for (int step = 0; step < 4; step++) {
		mcg_cache_reap(c);
		size_t now = stats_of(c).cached_objs;
		CHECK_EQ(now, cached - (cached + 4) / 5);
		cached = now;
	}
	/* Touch it (a refill from the node): the next reap leaves it alone. */
	for (size_t i = 0; i <= cached; i++)
		objs[i] = mcg_cache_alloc(c);
	size_t after = stats_of(c).cached_objs;
	mcg_cache_reap(c);
	CHECK_EQ(stats_of(c).cached_objs, after);
	for (size_t i = 0; i <= cached; i++)
		mcg_cache_free(c, objs[i]);
	/* Enough reaps give everything back. */
	for (int i = 0; i < 60; i++)
		mcg_cache_reap(c);
	mcg_cache_stats_t s = stats_of(c);
	CHECK_EQ(s.cached_objs, 0);
	CHECK_EQ(s.active_objs, 0);
	CHECK(s.num_slabs <= 2); /* the node's reserve of empty slabs */
	CHECK_EQ(mcg_cache_destroy(c), 0);
	unpin();
}

static void test_reap_slabs_gradually(void)
{
	pin_here();
	mcg_cache_t *c = mcg_cache_create("reap-slabs", 4096, 0, 0, NULL);
	REQUIRE(c);
	mcg_cache_stats_t s = stats_of(c);
	size_t n = s.objs_per_slab * 40 + 3;
	void **objs = calloc(n, sizeof(void *));
	REQUIRE(objs);
	for (size_t i = 0; i < n; i++)
		objs[i] = mcg_cache_alloc(c);
	for (size_t i = 0; i < n; i++)
		mcg_cache_free(c, objs[i]);
	size_t empty = node_empty(c);
	CHECK(empty >= 30);
	/* The array was touched: only slabs go, a fifth of those beyond the reserve. */
	size_t slabs = stats_of(c).num_slabs;
	long bytes = mcg_cache_reap(c);
	size_t want = (empty - 2 + 4) / 5;
	CHECK_EQ(stats_of(c).num_slabs, slabs - want);
	CHECK_EQ(bytes, (long)(want * s.slab_bytes));
	/* Gradual: more reaps, fewer slabs each time, never below the reserve. */
	size_t prev = stats_of(c).num_slabs;
	int calls = 0;
	while (node_empty(c) > 2 && calls < 100) {
		mcg_cache_reap(c);
		size_t now = stats_of(c).num_slabs;
		CHECK(now <= prev);
		prev = now;
		calls++;
	}
	CHECK(calls >= 5); /* not all at once */
	for (int i = 0; i < 60; i++)
		mcg_cache_reap(c);
	CHECK_EQ(node_empty(c), 2);
	CHECK_EQ(stats_of(c).cached_objs, 0);
	CHECK_EQ(stats_of(c).num_slabs, 2); /* the reserve, nothing else */
	check_shrink_all_free(c);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	free(objs);
	unpin();
}

static void test_reap_all_and_reaper(void)
{
	CHECK_EQ(mcg_reaper_start(0), -EINVAL);
	mcg_cache_t *c = mcg_cache_create("reaper", 4096, 0, 0, NULL);
	REQUIRE(c);
	size_t n = stats_of(c).objs_per_slab * 30;
	void **objs = calloc(n, sizeof(void *));
	REQUIRE(objs);
	for (size_t i = 0; i < n; i++)
		objs[i] = mcg_cache_alloc(c);
	for (size_t i = 0; i < n; i++)
		mcg_cache_free(c, objs[i]);
	size_t slabs = stats_of(c).num_slabs;
	CHECK(mcg_slab_reap_all() > 0);
	CHECK(stats_of(c).num_slabs < slabs);
	slabs = stats_of(c).num_slabs;
	CHECK_EQ(mcg_reaper_start(5), 0);
	CHECK_EQ(mcg_reaper_start(5), -EALREADY);
	/* The reaper works in the background until only the reserve is left. */
	for (int i = 0; i < 400 && node_empty(c) > 2; i++) {
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	CHECK_EQ(node_empty(c), 2);
	CHECK(stats_of(c).num_slabs < slabs);
	mcg_reaper_stop();
	mcg_reaper_stop(); /* idempotent */
	CHECK_EQ(mcg_reaper_start(1000), 0);
	mcg_reaper_stop();
	check_shrink_all_free(c);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	free(objs);
}

int main(int argc, char **argv)
{
	(void)argc;
	RUN(test_shrink_rss);
	RUN(test_reap_arrays);
	RUN(test_reap_slabs_gradually);
	RUN(test_reap_all_and_reaper);
	int rc = test_done();
	if (!getenv("MCG_TEST_LOCKED")) {
		fprintf(stderr, "--- again with MCG_RSEQ=0 (locked path)\n");
		rc = test_merge(rc, test_run_locked(argv));
	}
	return rc;
}
