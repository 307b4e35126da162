/* SPDX-License-Identifier: MIT */
/*
 * test_kmalloc_fit_mt.c - a fitted kmalloc cache published while threads
 * allocate and free (slab/kmalloc.c): four threads malloc blocks of one hot
 * size (1072 B, class 1280) and of two others, keep some, free others
 * (some on another thread), while the fitted cache is made and its table
 * entry switched under them.  Every block keeps its bytes, every usable
 * size is the class's or the granule's, exactly one cache is made, and both
 * caches hand out nothing at rest.  Runs under TSan (the name's _mt).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "memcg/kmalloc.h"
#include "memcg/slab.h"
#include "slab/kmalloc_fast.h"
#include "slab/slab.h"
#include "test.h"

#define THREADS 4
#define ROUNDS 48
#define BATCH 128

/* Blocks handed from thread i to thread i+1 to free (one slot each). */
static void *handoff[THREADS];
static unsigned bad_bytes, bad_sizes;

static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg, bad = 0, badsz = 0;
	void *keep[BATCH / 8 * ROUNDS] = {0};
	unsigned nkeep = 0;
	for (unsigned r = 0; r < ROUNDS; r++) {
		void *b[BATCH];
		for (unsigned i = 0; i < BATCH; i++) {
			/* 760 and 880: granules that waste too little to be fitted */
			size_t sz = i % 4 != 3 ? 1072 : i % 8 == 3 ? 760 : 880;
			b[i] = mcg_malloc(sz);
			if (!b[i]) {
				bad++;
				continue;
			}
			size_t u = mcg_malloc_usable_size(b[i]);
			badsz += sz == 1072 ? u != 1072 && u != 1280 : u != 768 && u != 896;
			memset(b[i], (int)(id * 16 + i % 16), 64);
		}
		for (unsigned i = 0; i < BATCH; i++) {
			if (!b[i])
				continue;
			const unsigned char *c = b[i];
			bad += c[0] != (unsigned char)(id * 16 + i % 16) ||
			       c[63] != (unsigned char)(id * 16 + i % 16);
			if (i % 8 == 0 && nkeep < BATCH / 8 * ROUNDS)
				keep[nkeep++] = b[i]; /* live to the end: the class fills */
			else if (i % 8 == 1)
				mcg_free(__atomic_exchange_n(&handoff[(id + 1) % THREADS], b[i],
				                             __ATOMIC_ACQ_REL));
			else
				mcg_free(b[i]);
		}
	}
	for (unsigned i = 0; i < nkeep; i++)
		mcg_free(keep[i]);
	__atomic_add_fetch(&bad_bytes, bad, __ATOMIC_RELAXED);
	__atomic_add_fetch(&bad_sizes, badsz, __ATOMIC_RELAXED);
	return NULL;
}

/* Objects handed out by @c (its arrays drained first: exact at rest). */
static size_t active_objs(struct mcg_cache *c)
{
	mcg_cache_drain_all(c);
	mcg_cache_stats_t st;
	if (mcg_cache_stats(c, &st))
		return SIZE_MAX;
	return st.active_objs;
}

static void test_publish_under_load(void)
{
	pthread_t t[THREADS];
	for (unsigned i = 0; i < THREADS; i++)
		REQUIRE(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i) == 0);
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (unsigned i = 0; i < THREADS; i++)
		mcg_free(handoff[i]); /* NULL where nothing was handed */
	CHECK_EQ(bad_bytes, 0);
	CHECK_EQ(bad_sizes, 0);
	CHECK_EQ(mcg_kmalloc_fit_count(), 1);
	REQUIRE(mcg_kmalloc_fit_count() == 1);
	struct mcg_cache *f = mcg_kmalloc_fitted_[0];
	CHECK_EQ(f->object_size, 1072);
	CHECK(mcg_kmalloc_small_cache(1072) == f);
	CHECK(mcg_kmalloc_small_cache(1073) == mcg_kmalloc_caches_[mcg_kmalloc_class(1280)]);
	CHECK_EQ(active_objs(f), 0);
	CHECK_EQ(active_objs(mcg_kmalloc_caches_[mcg_kmalloc_class(1072)]), 0);
	CHECK_EQ(active_objs(mcg_kmalloc_caches_[mcg_kmalloc_class(768)]), 0);
	CHECK_EQ(active_objs(mcg_kmalloc_caches_[mcg_kmalloc_class(896)]), 0);
}

int main(void)
{
	RUN(test_publish_under_load);
	return test_done();
}
