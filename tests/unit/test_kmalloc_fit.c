/* SPDX-License-Identifier: MIT */
/*
 * test_kmalloc_fit.c - fitted kmalloc caches (slab/kmalloc.c): a request
 * size that dominates its class gets a cache of exactly its size (usable
 * size, slabinfo, realloc, counters exact at rest, accounted blocks); a
 * mixed class, a class that wastes little and the option off get none; a
 * forked child keeps them and makes its own; at most KMALLOC_FIT_MAX are
 * made.  The tests run in this order in one
 * process (fitted caches are never destroyed).  Runs again with MCG_RSEQ=0.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memcg/debug.h"
#include "memcg/group.h"
#include "memcg/kmalloc.h"
#include "memcg/memcg.h"
#include "memcg/slab.h"
#include "slab/kmalloc_fast.h"
#include "slab/slab.h"
#include "slabinfo_line.h"
#include "test.h"

#define K 1024ul
#define MAXP 8192

static void *ptrs[MAXP];

/* REQUIRE() for helpers that return a value: a failed check ends the binary. */
#define MUST(cond)                                                                                 \
	do {                                                                                       \
		CHECK(cond);                                                                       \
		if (!(cond))                                                                       \
			exit(1);                                                                   \
	} while (0)

/* @n blocks of @size, each filled with its index; at least @bytes of them
 * (n = 0) or exactly n.  Returns how many. */
static size_t alloc_n(size_t size, size_t bytes, size_t n)
{
	if (!n)
		n = bytes / size + 1;
	MUST(n <= MAXP);
	for (size_t i = 0; i < n; i++) {
		ptrs[i] = mcg_malloc(size);
		MUST(ptrs[i]);
		memset(ptrs[i], (int)(i & 0xff), size);
	}
	return n;
}

/* Check the first @n blocks' bytes, then free them. */
static void free_n(size_t size, size_t n)
{
	unsigned bad = 0;
	for (size_t i = 0; i < n; i++) {
		const unsigned char *b = ptrs[i];
		bad += b[0] != (unsigned char)i || b[size - 1] != (unsigned char)i;
		mcg_free(ptrs[i]);
	}
	CHECK_EQ(bad, 0);
}

/* The fitted cache named kmalloc-@size, or NULL. */
static struct mcg_cache *fitted(size_t size)
{
	char name[32];
	snprintf(name, sizeof(name), "kmalloc-%zu", size);
	for (unsigned i = 0; i < mcg_kmalloc_fit_count(); i++)
		if (!strcmp(mcg_kmalloc_fitted_[i]->name, name))
			return mcg_kmalloc_fitted_[i];
	return NULL;
}

/* Is there a line for cache @name in slabinfo? */
static bool in_slabinfo(const char *name) { return slabinfo_line(name) != NULL; }

/* Objects handed out by @c (exact at rest: its arrays drained first). */
static size_t active_objs(struct mcg_cache *c)
{
	mcg_cache_drain_all(c);
	mcg_cache_stats_t st;
	MUST(mcg_cache_stats(c, &st) == 0);
	return st.active_objs;
}

/* The option off: 2 MiB of one hot size, and no cache is made. */
static void test_option_off(void)
{
	REQUIRE(mcg_option_set("kmalloc_fit", 0) == 0);
	size_t n = alloc_n(1072, 2 * K * K, 0);
	CHECK_EQ(mcg_malloc_usable_size(ptrs[n - 1]), 1280);
	CHECK_EQ(mcg_kmalloc_fit_count(), 0);
	free_n(1072, n);
	REQUIRE(mcg_option_set("kmalloc_fit", 1) == 0);
}

/* 2 MiB spread evenly over the 16 sizes of class 2560 (2064..2560 by 32:
 * every granule an eighth of the samples at most): no fitted cache. */
static void test_mixed_none(void)
{
	size_t n = 2 * K * K / 2300;
	for (size_t i = 0; i < n; i++) {
		ptrs[i] = mcg_malloc(2064 + 32 * (i % 16));
		REQUIRE(ptrs[i]);
	}
	CHECK_EQ(mcg_kmalloc_fit_count(), 0);
	unsigned off = 0;
	for (size_t i = 0; i < n; i++) {
		off += mcg_malloc_usable_size(ptrs[i]) != 2560;
		mcg_free(ptrs[i]);
	}
	CHECK_EQ(off, 0);
}

/* A hot size whose class wastes little - 1168 B in kmalloc-1280 (112
 * bytes, under 1/8 of the slot) - gets no cache. */
static void test_little_waste_none(void)
{
	size_t n = alloc_n(1168, 2 * K * K, 0);
	CHECK_EQ(mcg_malloc_usable_size(ptrs[n - 1]), 1280);
	CHECK_EQ(mcg_kmalloc_fit_count(), 0);
	free_n(1168, n);
}

/* A hot size above 4 KiB (the table's reach): 4368 B, served by kmalloc-5k
 * at first, then by kmalloc-4368; usable size, slabinfo, realloc within and
 * out of it, and every counter back to zero after the frees. */
static void test_hot_fits(void)
{
	size_t n = alloc_n(4368, 2 * K * K, 0);
	CHECK_EQ(mcg_kmalloc_fit_count(), 1);
	struct mcg_cache *f = fitted(4368);
	REQUIRE(f);
	CHECK_EQ(f->object_size, 4368);
	CHECK_EQ(f->slot_size, 4368);
	CHECK_EQ(f->objs_per_slab, 15); /* one 64 KiB unit: 16 bytes left */
	CHECK(in_slabinfo("kmalloc-4368"));
	CHECK_EQ(mcg_malloc_usable_size(ptrs[n - 1]), 4368);
	/* The first blocks came from the class, the later ones from f. */
	size_t from_f = 0;
	for (size_t i = 0; i < n; i++)
		from_f += mcg_malloc_usable_size(ptrs[i]) == 4368;
	CHECK(from_f > n / 2);
	CHECK_EQ(mcg_malloc_usable_size(ptrs[0]), 5120);
	CHECK_EQ(active_objs(f), from_f);
	/* Sizes of the granule (4353..4368) go to f; 4369 to the class. */
	void *a = mcg_malloc(4353), *b = mcg_malloc(4369);
	REQUIRE(a && b);
	CHECK_EQ(mcg_malloc_usable_size(a), 4368);
	CHECK_EQ(mcg_malloc_usable_size(b), 5120);
	mcg_free(b);
	/* realloc: within f's size it stays; past it the block moves, its
	 * bytes kept. */
	memset(a, 0x5a, 4353);
	CHECK(mcg_realloc(a, 4368) == a);
	char *c = mcg_realloc(a, 4400);
	REQUIRE(c);
	CHECK_EQ(mcg_malloc_usable_size(c), 5120);
	CHECK(c[0] == 0x5a && c[4352] == 0x5a);
	mcg_free(c);
	free_n(4368, n);
	CHECK_EQ(active_objs(f), 0);
	CHECK_EQ(active_objs(mcg_kmalloc_caches_[mcg_kmalloc_class(4368)]), 0);
	/* Empty slabs go back as any cache's. */
	mcg_slab_shrink_all();
	mcg_cache_stats_t st;
	REQUIRE(mcg_cache_stats(f, &st) == 0);
	CHECK_EQ(st.num_slabs, 0);
}

/* Accounted blocks of a fitted size: from the fitted cache, charged its
 * slot and vector entry, uncharged to zero when freed. */
static void test_accounted(void)
{
	struct mcg_cache *f = fitted(4368);
	REQUIRE(f);
	mcg_group_t *g;
	REQUIRE(mcg_group_create(NULL, "fit", &g) == 0);
	enum { N = 64 };
	void *p[N];
	for (int i = 0; i < N; i++) {
		p[i] = mcg_malloc_account(4360, g);
		REQUIRE(p[i]);
		memset(p[i], i, 4360);
	}
	unsigned in_f = 0;
	for (int i = 0; i < N; i++)
		in_f += mcg_malloc_usable_size(p[i]) == 4368;
	CHECK_EQ(in_f, N);
	mcg_group_t *o = NULL;
	CHECK_EQ(mcg_obj_group(p[0], &o), 0);
	CHECK(o == g);
	mcg_group_put(o);
	CHECK_EQ(active_objs(f), N);
	mcg_group_drain_stocks();
	char cur[32];
	CHECK(mcg_group_read(g, "memory.current", cur, sizeof(cur)) > 0 && atol(cur) > 0);
	for (int i = 0; i < N; i++)
		mcg_free(p[i]);
	CHECK_EQ(active_objs(f), 0);
	mcg_group_drain_stocks();
	CHECK(mcg_group_read(g, "memory.current", cur, sizeof(cur)) > 0 && !strcmp(cur, "0\n"));
	CHECK_EQ(mcg_group_remove(g), 0);
	mcg_group_put(g);
}

/* fork: the child inherits the fitted caches (its blocks of 4368 B come from
 * kmalloc-4368) and can make one of its own (2608 B, class 3072); the
 * parent's are unchanged. */
static void test_fork(void)
{
	unsigned before = mcg_kmalloc_fit_count();
	REQUIRE(fitted(4368));
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		void *p = mcg_malloc(4368);
		int bad = !p || mcg_malloc_usable_size(p) != 4368;
		mcg_free(p);
		size_t n = alloc_n(2608, 2 * K * K, 0);
		bad |= mcg_kmalloc_fit_count() != before + 1 || !fitted(2608);
		bad |= mcg_malloc_usable_size(ptrs[n - 1]) != 2608;
		free_n(2608, n);
		_exit(bad || test_failed_checks ? 1 : 0);
	}
	int st = 0;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(mcg_kmalloc_fit_count(), before);
	CHECK(!fitted(2608));
}

/* The bound: the two lowest granules of every class from 160 B to 8 KiB
 * that leave more than 1/8 of its slot empty, each hot in turn (its blocks
 * kept; the second of a class outweighs the first's samples): exactly
 * KMALLOC_FIT_MAX fitted caches in all, and the sizes past the bound are
 * served by their classes. */
static void test_bound(void)
{
	static void *held[2 * KMALLOC_CLASSES][4096];
	size_t nheld[2 * KMALLOC_CLASSES] = {0}, size[2 * KMALLOC_CLASSES];
	unsigned nhot = 0, made = 0, before = mcg_kmalloc_fit_count();
	for (unsigned cls = 8; cls < KMALLOC_CLASSES; cls++) {
		size_t cs = 0, lo = 0;
		/* the class's size and lowest granule, by probing the class function */
		for (size_t s = 16; s <= KMALLOC_SMALL_MAX; s += 16) {
			if (mcg_kmalloc_class(s) == cls && !cs)
				lo = s;
			if (mcg_kmalloc_class(s) == cls)
				cs = s;
		}
		for (size_t j = 0; j < 2 && cs && lo != 2064; j++) { /* 2064: mixed above */
			size_t g = lo + 16 * j;
			if (cs - g <= cs / 8 || fitted(g))
				continue;
			size[nhot] = g;
			size_t want = MCG_MIN(4096, (512 + 256 * j) * K / g + 1);
			unsigned had = mcg_kmalloc_fit_count();
			for (size_t i = 0; i < want; i++) {
				held[nhot][i] = mcg_malloc(g);
				REQUIRE(held[nhot][i]);
			}
			nheld[nhot++] = want;
			made += mcg_kmalloc_fit_count() > had;
		}
	}
	CHECK(nhot > KMALLOC_FIT_MAX - before); /* the bound is reached */
	CHECK_EQ(mcg_kmalloc_fit_count(), KMALLOC_FIT_MAX);
	CHECK_EQ(made, KMALLOC_FIT_MAX - before);
	unsigned fit = 0;
	for (unsigned i = 0; i < nhot; i++) {
		fit += mcg_malloc_usable_size(held[i][nheld[i] - 1]) == size[i];
		for (size_t j = 0; j < nheld[i]; j++)
			mcg_free(held[i][j]);
	}
	CHECK_EQ(fit, made);
	/* Past the bound nothing more is made. */
	size_t n = alloc_n(1072, 2 * K * K, 0);
	CHECK_EQ(mcg_kmalloc_fit_count(), KMALLOC_FIT_MAX);
	CHECK_EQ(mcg_malloc_usable_size(ptrs[n - 1]), 1280);
	free_n(1072, n);
	for (unsigned i = 0; i < KMALLOC_FIT_MAX; i++)
		CHECK_EQ(active_objs(mcg_kmalloc_fitted_[i]), 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	RUN(test_option_off);
	RUN(test_mixed_none);
	RUN(test_little_waste_none);
	RUN(test_hot_fits);
	RUN(test_accounted);
	RUN(test_fork);
	RUN(test_bound);
	return test_done_then_locked(argv);
}
