/* SPDX-License-Identifier: MIT */
/*
 * test_slab_fault.c - allocation failure swept over N, SQLite style: make the
 * Nth call through the fault point fail (once, then sticky), run a sequence
 * (create a cache, grow it over several chunks, kmalloc small and large,
 * free, shrink, destroy) and require "correct result or clean error, no
 * leak" at every N, until the sequence runs with no failure injected.
 *
 * The kmalloc size classes are created on first use and live forever, so
 * their creation is swept first on its own, checking that every cache that
 * exists is whole; the main sweep starts after a warm-up run so that chunks
 * (kept mapped once created) are already there: mcg_os_mapped_bytes() must
 * then come back exactly to its start value after each run.
 */
#include <errno.h>
#include <stdint.h>

#include "memcg/debug.h"
#include "memcg/kmalloc.h"
#include "memcg/slab.h"
#include "os/os.h"
#include "page/large.h"
#include "page/pages.h"
#include "slab/slab.h"
#include "cache_rest.h"
#include "chunk_count.h"
#include "test.h"

static int reports;
static void on_report(const mcg_report_t *r)
{
	(void)r;
	reports++;
}

static size_t kmalloc_caches(void)
{
	size_t n = 0;
	mcg_lock(&mcg_cache_list_lock);
	mcg_list_for_each (pos, &mcg_cache_list) {
		struct mcg_cache *c = mcg_list_entry(pos, struct mcg_cache, link);
		n += strncmp(c->name, "kmalloc-", 8) == 0;
	}
	mcg_unlock(&mcg_cache_list_lock);
	return n;
}

static void test_kmalloc_init_sweep(void)
{
	int completed = 0;
	for (unsigned long n = 1; n < 200 && !completed; n++) {
		mcg_fault_inject(n, 0);
		errno = 0;
		void *p = mcg_malloc(100);
		unsigned long failed = mcg_fault_failed();
		mcg_fault_inject(0, 0);
		if (p) {
			memset(p, 1, 100);
			mcg_free(p);
		} else {
			CHECK_EQ(errno, ENOMEM);
			CHECK(failed >= 1);
		}
		if (p && failed == 0)
			completed = 1;
	}
	CHECK(completed);
	CHECK_EQ(kmalloc_caches(), 52);
	/* Every class works now. */
	for (size_t sz = 1; sz <= MCG_KMALLOC_MAX_CACHE_SIZE; sz = sz * 5 / 4 + 1) {
		void *p = mcg_malloc(sz);
		CHECK(p != NULL);
		mcg_free(p);
	}
}

/* The operation sequence.  Return 0 if it completed, -ENOMEM on a clean failure. */
static int sequence(void)
{
	enum { N = 1200 }; /* ~40 MiB: chunks beyond the warm-up ones */
	static void *objs[N];
	int err = 0;
	mcg_cache_t *c = mcg_cache_create("fault", 32768, 0, 0, NULL); /* 4-unit slabs */
	if (!c) {
		CHECK_EQ(errno, ENOMEM);
		return -ENOMEM;
	}
	int got = 0;
	for (; got < N; got++) {
		errno = 0;
		objs[got] = mcg_cache_alloc(c);
		if (!objs[got]) {
			CHECK_EQ(errno, ENOMEM);
			err = -ENOMEM;
			break;
		}
		memset(objs[got], got & 0xff, 64);
	}
	for (int i = 0; i < got; i++) {
		const unsigned char *b = objs[i];
		CHECK(b[0] == (unsigned char)(i & 0xff) && b[63] == (unsigned char)(i & 0xff));
	}
	void *small = mcg_malloc(200);
	void *large = mcg_malloc(1 << 20);
	void *al = mcg_aligned_alloc(1 << 16, 1 << 17);
	if (!small || !large || !al)
		err = -ENOMEM;
	if (large)
		memset(large, 2, 1 << 20);
	if (al)
		CHECK_EQ((uintptr_t)al % (1 << 16), 0);
	mcg_free(small);
	mcg_free(large);
	mcg_free(al);
	for (int i = 0; i < got; i++)
		mcg_cache_free(c, objs[i]);
	check_shrink_all_free(c);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	return err;
}

/* Every cache shrunk and the retained large blocks unmapped. */
static void shrink_all(void)
{
	mcg_lock(&mcg_cache_list_lock);
	mcg_list_for_each (pos, &mcg_cache_list)
		mcg_cache_shrink(mcg_list_entry(pos, struct mcg_cache, link));
	mcg_unlock(&mcg_cache_list_lock);
	mcg_large_flush();
}

/* @warm: run once first, so that every chunk the sequence needs exists;
 * otherwise chunk creation is swept too and new chunks may stay mapped. */
static void sweep(int sticky, int warm)
{
	if (warm)
		CHECK_EQ(sequence(), 0);
	shrink_all();
	size_t mapped0 = mcg_os_mapped_bytes(), chunks0 = chunks_mapped();
	size_t pages0 = mcg_pages_in_use();
	unsigned long n;
	int clean_failures = 0;
	for (n = 1; n < 10000; n++) {
		mcg_fault_inject(n, sticky);
		int r = sequence();
		unsigned long failed = mcg_fault_failed();
		mcg_fault_inject(0, 0);
		shrink_all();
		/* What is new is chunks (kept mapped), none when warm; no
		 * metadata, no large block left. */
		size_t chunks = chunks_mapped();
		CHECK(chunks >= chunks0);
		if (warm)
			CHECK_EQ(chunks, chunks0);
		CHECK_EQ(mcg_os_mapped_bytes(), mapped0 + (chunks - chunks0) * MCG_CHUNK_SIZE);
		CHECK_EQ(mcg_pages_in_use(), pages0);
		if (failed == 0) {
			CHECK_EQ(r, 0);
			break;
		}
		clean_failures += r != 0;
	}
	fprintf(stderr, "%s sweep: %lu points, %d ended in a clean error\n",
	        sticky ? "sticky" : "single", n, clean_failures);
	CHECK(n >= 3);
	CHECK(n < 10000);
	CHECK(clean_failures > 0);
}

static void test_sweep_single(void) { sweep(0, 0); }

static void test_sweep_sticky(void) { sweep(1, 1); }

static void test_sweep_single_warm(void) { sweep(0, 1); }

/* No run reported a double free, foreign pointer or leak. */
static void test_no_reports(void) { CHECK_EQ(reports, 0); }

int main(void)
{
	mcg_set_report_handler(on_report);
	RUN(test_kmalloc_init_sweep);
	RUN(test_sweep_single);
	RUN(test_sweep_sticky);
	RUN(test_sweep_single_warm);
	RUN(test_no_reports);
	return test_done();
}
