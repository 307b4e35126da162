/* SPDX-License-Identifier: MIT */
/*
 * test_cache_head.c - caches' heads (slab/cache_head.c): cut one after
 * another from shared blocks, a destroyed cache's head reused (last freed,
 * first reused) and found as new, a create/destroy loop that maps nothing
 * more.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memcg/slab.h"
#include "os/os.h"
#include "slab/slab.h"
#include "test.h"

/* Bytes of one head: the cache, its nodes, its per-CPU headers. */
static size_t head_size(const struct mcg_cache *c)
{
	return (size_t)((const char *)c->pcpu - (const char *)c) +
	       (size_t)mcg_os_nr_cpus() * MCG_PCPU_STRIDE;
}

static mcg_cache_t *make(const char *name)
{
	mcg_cache_t *c = mcg_cache_create(name, 48, 0, 0, NULL);
	if (!c) {
		fprintf(stderr, "FATAL: mcg_cache_create(%s) failed\n", name);
		exit(1);
	}
	return c;
}

static void test_packed(void)
{
	mcg_cache_t *a = make("head-a"), *b = make("head-b");
	size_t size = head_size(a);
	CHECK_EQ(size % MCG_PCPU_STRIDE, 0);
	CHECK_EQ((uintptr_t)a % MCG_PCPU_STRIDE, 0);
	/* The next one in the block, or the first of a new block. */
	CHECK((char *)b == (char *)a + size || (uintptr_t)b % 4096 == 0);
	CHECK_EQ(mcg_cache_destroy(b), 0);
	CHECK_EQ(mcg_cache_destroy(a), 0);
}

static void test_reused_as_new(void)
{
	mcg_cache_t *a = make("head-used");
	void *objs[300];
	for (int i = 0; i < 300; i++)
		REQUIRE((objs[i] = mcg_cache_alloc(a)) != NULL);
	for (int i = 0; i < 300; i++)
		mcg_cache_free(a, objs[i]);
	CHECK_EQ(mcg_cache_destroy(a), 0);

	mcg_cache_t *b = mcg_cache_create("head-fresh", 200, 64, 0, NULL);
	REQUIRE(b != NULL);
	CHECK(b == a); /* the last head freed is the first reused */
	mcg_cache_stats_t st;
	CHECK_EQ(mcg_cache_stats(b, &st), 0);
	CHECK_EQ(strcmp(st.name, "head-fresh"), 0);
	CHECK_EQ(st.object_size, 200);
	CHECK_EQ(st.active_objs, 0);
	CHECK_EQ(st.cached_objs, 0);
	CHECK_EQ(st.num_slabs, 0);
	for (unsigned cpu = 0; cpu < mcg_os_nr_cpus(); cpu++)
		CHECK_EQ(mcg_pcpu_stack_of(b->pcpu, cpu)->cur, 0);
	void *p = mcg_cache_alloc(b);
	REQUIRE(p != NULL);
	CHECK_EQ((uintptr_t)p % 64, 0);
	CHECK_EQ(mcg_cache_stats(b, &st), 0);
	CHECK_EQ(st.active_objs, 1);
	mcg_cache_free(b, p);
	CHECK_EQ(mcg_cache_destroy(b), 0);
}

static void test_lifo_and_bounded(void)
{
	mcg_cache_t *a = make("head-1"), *b = make("head-2");
	CHECK_EQ(mcg_cache_destroy(a), 0);
	CHECK_EQ(mcg_cache_destroy(b), 0);
	mcg_cache_t *c = make("head-3"), *d = make("head-4");
	CHECK(c == b);
	CHECK(d == a);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	CHECK_EQ(mcg_cache_destroy(d), 0);
	/* Create and destroy many: the same two heads come back each time. */
	for (int i = 0; i < 2000; i++) {
		mcg_cache_t *x = make("head-loop"), *y = make("head-loop2");
		REQUIRE((x == c || x == d) && (y == c || y == d) && x != y);
		CHECK_EQ(mcg_cache_destroy(y), 0);
		CHECK_EQ(mcg_cache_destroy(x), 0);
	}
}

int main(void)
{
	RUN(test_packed);
	RUN(test_reused_as_new);
	RUN(test_lifo_and_bounded);
	return test_done();
}
