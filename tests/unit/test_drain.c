/* SPDX-License-Identifier: MIT */
/*
 * test_drain.c - taking memory back (slab/drain.c): shrink returns every
 * empty slab and the resident set drops; an aging step gives back idle CPU
 * arrays and empty slabs (half the surplus of a busy cache, all of an idle
 * one's); steps run on the reaper thread, or inline in the slow paths.
 * Runs again with MCG_RSEQ=0.
 */
#include <errno.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memcg/debug.h"
#include "memcg/kmalloc.h"
#include "memcg/memcg.h"
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
	/* The array needed its node (refills, flushes) since the last step: hot, left alone. */
	mcg_cache_reap(c);
	CHECK_EQ(stats_of(c).cached_objs, cached);
	/* Untouched since: idle, everything goes back at once. */
	mcg_cache_reap(c);
	CHECK_EQ(stats_of(c).cached_objs, 0);
	/* Busy again (a refill from the node): the next step leaves it alone. */
	for (int i = 0; i < 10; i++)
		objs[i] = mcg_cache_alloc(c);
	for (int i = 0; i < 10; i++)
		mcg_cache_free(c, objs[i]);
	size_t after = stats_of(c).cached_objs;
	CHECK(after >= 10);
	mcg_cache_reap(c);
	CHECK_EQ(stats_of(c).cached_objs, after);
	/* Only the fast path ran since (no refill or flush): idle to aging. */
	for (int i = 0; i < 5; i++)
		objs[i] = mcg_cache_alloc(c);
	for (int i = 0; i < 5; i++)
		mcg_cache_free(c, objs[i]);
	mcg_cache_reap(c);
	mcg_cache_stats_t s = stats_of(c);
	CHECK_EQ(s.cached_objs, 0);
	CHECK_EQ(s.active_objs, 0);
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
	/* Busy (its arrays refilled and flushed): half the empty slabs beyond the
	 * reserve of 2 go back, rounded up; the array keeps its objects. */
	size_t slabs = stats_of(c).num_slabs, cached = stats_of(c).cached_objs;
	long bytes = mcg_cache_reap(c);
	size_t want = (empty - 2 + 1) / 2;
	CHECK_EQ(stats_of(c).num_slabs, slabs - want);
	CHECK_EQ(bytes, (long)(want * s.slab_bytes));
	CHECK_EQ(stats_of(c).cached_objs, cached);
	/* Idle one step: the array goes back to its slabs, and every empty slab
	 * beyond the reserve goes to the OS. */
	mcg_cache_reap(c);
	CHECK_EQ(stats_of(c).cached_objs, 0);
	CHECK_EQ(node_empty(c), 2);
	CHECK_EQ(stats_of(c).num_slabs, stats_of(c).active_slabs + 2);
	/* Idle two steps: the reserve too. */
	bytes = mcg_cache_reap(c);
	CHECK_EQ(bytes, (long)(2 * s.slab_bytes));
	CHECK_EQ(stats_of(c).num_slabs, 0);
	CHECK_EQ(mcg_cache_reap(c), 0); /* nothing left */
	/* Busy again: the reserve is kept again. */
	for (size_t i = 0; i < n; i++)
		objs[i] = mcg_cache_alloc(c);
	for (size_t i = 0; i < n; i++)
		mcg_cache_free(c, objs[i]);
	mcg_cache_reap(c);
	CHECK(node_empty(c) >= 2);
	check_shrink_all_free(c);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	free(objs);
	unpin();
}

/*
 * Aging by default, with no thread: a cache left alone gives its array
 * objects and empty slabs back within two periods, the steps running in
 * other allocations' slow paths; a busy one keeps its hot objects.
 */
static void test_age_inline(void)
{
	unsigned cpu = pin_here();
	CHECK_EQ(mcg_option_set("reap_ms", 20 * (int)test_slowdown()), 0);
	mcg_cache_t *idle = mcg_cache_create("age-idle", 256, 0, 0, NULL);
	mcg_cache_t *busy = mcg_cache_create("age-busy", 128, 0, 0, NULL);
	REQUIRE(idle && busy);
	size_t n = stats_of(idle).objs_per_slab * 20;
	void **objs = calloc(n, sizeof(void *));
	REQUIRE(objs);
	for (size_t i = 0; i < n; i++)
		objs[i] = mcg_cache_alloc(idle);
	for (size_t i = 0; i < n; i++)
		mcg_cache_free(idle, objs[i]);
	CHECK(stats_of(idle).num_slabs >= 20);
	CHECK(stats_of(idle).cached_objs > 0);
	/* The busy cache's slow paths run steps; its own array stays hot.  Each
	 * round takes twice an array's worth out and back: refills and flushes. */
	enum { HOT = 4096 };
	static void *hot[HOT];
	size_t m = 2 * stats_of(busy).cpu_limit;
	REQUIRE(m <= HOT);
	struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(busy->pcpu, cpu);
	for (unsigned round = 0; round < 200 * test_slowdown() && stats_of(idle).num_slabs > 0;
	     round++) {
		struct timespec ts = {0, 2 * 1000 * 1000};
		nanosleep(&ts, NULL);
		for (int k = 0; k < 8; k++) {
			for (size_t i = 0; i < m; i++)
				hot[i] = mcg_cache_alloc(busy);
			for (size_t i = 0; i < m; i++)
				mcg_cache_free(busy, hot[i]);
		}
	}
	CHECK_EQ(stats_of(idle).num_slabs, 0);
	CHECK_EQ(stats_of(idle).cached_objs, 0);
	CHECK(st->cur > 0); /* hot objects kept */
	/* Off: nothing ages. */
	CHECK_EQ(mcg_option_set("reap_ms", 0), 0);
	for (size_t i = 0; i < n; i++)
		objs[i] = mcg_cache_alloc(idle);
	for (size_t i = 0; i < n; i++)
		mcg_cache_free(idle, objs[i]);
	size_t slabs = stats_of(idle).num_slabs;
	for (int round = 0; round < 10; round++) {
		struct timespec ts = {0, 2 * 1000 * 1000};
		nanosleep(&ts, NULL);
		for (int k = 0; k < 8; k++) {
			for (size_t i = 0; i < m; i++)
				hot[i] = mcg_cache_alloc(busy);
			for (size_t i = 0; i < m; i++)
				mcg_cache_free(busy, hot[i]);
		}
	}
	CHECK_EQ(stats_of(idle).num_slabs, slabs);
	CHECK_EQ(mcg_option_set("reap_ms", -1), -EINVAL);
	CHECK(stats_of(idle).num_slabs > 0);
	check_shrink_all_free(idle);
	CHECK_EQ(mcg_cache_destroy(idle), 0);
	CHECK_EQ(mcg_cache_destroy(busy), 0);
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
	size_t slabs = stats_of(c).num_slabs, empty = node_empty(c);
	/* One step over every cache: this one was busy, half its surplus goes. */
	CHECK(mcg_slab_reap_all() >= (long)((empty - 2 + 1) / 2 * stats_of(c).slab_bytes));
	CHECK_EQ(stats_of(c).num_slabs, slabs - (empty - 2 + 1) / 2);
	CHECK_EQ(mcg_reaper_start(5), 0);
	CHECK_EQ(mcg_reaper_start(5), -EALREADY);
	/* The reaper ages it in the background, idle, down to nothing. */
	for (int i = 0; i < 400 && stats_of(c).num_slabs > 0; i++) {
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	CHECK_EQ(stats_of(c).num_slabs, 0);
	CHECK_EQ(stats_of(c).cached_objs, 0);
	mcg_reaper_stop();
	mcg_reaper_stop(); /* idempotent */
	CHECK_EQ(mcg_reaper_start(1000), 0);
	mcg_reaper_stop();
	CHECK_EQ(mcg_cache_shrink(c), 0); /* the reaper left nothing to shrink */
	CHECK_EQ(mcg_cache_destroy(c), 0);
	free(objs);
}

/* The reaper started again after a stop ages as it did the first time. */
static void test_reaper_restarts(void)
{
	mcg_cache_t *c = mcg_cache_create("restart", 4096, 0, 0, NULL);
	REQUIRE(c);
	CHECK_EQ(mcg_reaper_start(5), 0);
	mcg_reaper_stop();
	CHECK_EQ(mcg_reaper_start(5), 0);
	size_t n = stats_of(c).objs_per_slab * 4;
	void **objs = calloc(n, sizeof(void *));
	REQUIRE(objs);
	for (size_t i = 0; i < n; i++)
		REQUIRE((objs[i] = mcg_cache_alloc(c)));
	for (size_t i = 0; i < n; i++)
		mcg_cache_free(c, objs[i]);
	CHECK(stats_of(c).num_slabs > 0);
	for (int i = 0; i < 400 && stats_of(c).num_slabs > 0; i++) {
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	CHECK_EQ(stats_of(c).num_slabs, 0);
	mcg_reaper_stop();
	CHECK_EQ(mcg_cache_destroy(c), 0);
	free(objs);
}

/* Every cache at once, kmalloc's included: each keeps no object in its arrays and no slab. */
static void test_shrink_all(void)
{
	mcg_cache_t *c = mcg_cache_create("shrink-all", 256, 0, 0, NULL);
	REQUIRE(c);
	size_t n = stats_of(c).objs_per_slab * 8;
	void **objs = calloc(n, sizeof(void *)), **km = calloc(n, sizeof(void *));
	REQUIRE(objs && km);
	for (size_t i = 0; i < n; i++) {
		objs[i] = mcg_cache_alloc(c);
		km[i] = mcg_malloc(200);
	}
	mcg_cache_t *kc = mcg_slab_of(km[0])->cache;
	mcg_cache_stats_t before = stats_of(kc);
	for (size_t i = 0; i < n; i++) {
		mcg_cache_free(c, objs[i]);
		mcg_free(km[i]);
	}
	size_t slabs = stats_of(c).num_slabs;
	long bytes = mcg_slab_shrink_all();
	/* At least this cache's slabs went back; the kmalloc cache kept only slabs
	 * holding objects other code allocated before this test. */
	CHECK(bytes >= (long)(slabs * stats_of(c).slab_bytes));
	CHECK_EQ(stats_of(c).num_slabs, 0);
	CHECK_EQ(stats_of(c).cached_objs, 0);
	mcg_cache_stats_t after = stats_of(kc);
	CHECK_EQ(after.cached_objs, 0);
	CHECK_EQ(after.num_slabs, after.active_slabs);
	CHECK(after.num_slabs < before.num_slabs);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	free(objs);
	free(km);
}

int main(int argc, char **argv)
{
	(void)argc;
	RUN(test_shrink_rss);
	RUN(test_reap_arrays);
	RUN(test_reap_slabs_gradually);
	RUN(test_reap_all_and_reaper);
	RUN(test_reaper_restarts);
	RUN(test_shrink_all);
	RUN(test_age_inline);
	return test_done_then_locked(argv);
}
