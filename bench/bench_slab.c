/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_slab.c - `memcg bench slab`: the slab layer against the best
 * mallocs (issue 2; seeds 001 and 000).
 *
 * Cases
 *   pair       seed 001: alloc+free pairs, 1 or 4 objects in flight (4: a ring
 *              of live objects, each step frees the oldest and allocates
 *              anew), sizes 64, 256, 1024, 4096 B; ns per pair.
 *   free1m     seed 000 TEST #1 on a live cache: each of N threads (one per
 *              CPU, pinned) allocates 1M objects of 64..1024 B, then frees
 *              them all, timed; ms per thread, mean +- stddev.
 *   growshrink seed 001's slab grow+shrink: allocate one slab's worth of
 *              objects, free them, give the memory back (mcg_cache_shrink;
 *              a baseline's own release call), ns per cycle, and the same
 *              cycle without the release for comparison.
 *   rss        resident set growth with 1M live 64 B objects, and what is left
 *              after freeing them all and releasing.
 *
 * Method: every measurement is one worker child (baseline.h) for one
 * variant.  The single-threaded loops (pair, growshrink) are timed in the
 * thread's CPU time, so preemption on a busy machine does not count; free1m
 * is wall time per thread (as in the seed: lock waits count; its CPU time
 * goes to the JSON output too).  For each run the variants are visited in a
 * rotated order, and each figure is the median over the runs.  Targets (issue 2) are checked
 * and reported PASS / MISS; a MISS is a finding, not an error exit.
 *
 * The worker loops are written once (always-inline, over the kind of
 * variant) and instantiated per kind, so a measured loop has no indirect
 * calls of its own: memcg's are direct calls into the static library,
 * a baseline's go through the PLT to whichever malloc is loaded.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "baseline.h"
#include "harness.h"
#include "memcg/kmalloc.h"
#include "memcg/slab.h"
#include "slab/slab.h" /* mcg_slab_of(): which kmalloc cache to shrink */

#define W_INLINE static inline __attribute__((always_inline))
#define W_NOINLINE static __attribute__((noinline))

/* Sizes and shapes of the cases. */
static const size_t pair_sizes[] = {64, 256, 1024, 4096};
static const int pair_inflight[] = {1, 4};
static const size_t free1m_sizes[] = {64, 128, 256, 512, 1024};
static const size_t gs_sizes[] = {64, 4096};
#define NPAIR (4 * 2)
#define NFREE1M 5
#define NGS 2
#define MILLION (1u << 20)
#define MAX_THREADS 64
#define MAX_VALS (2 * MAX_THREADS + 2)

/* Full-mode time per timed loop; smoke mode uses fixed tiny counts instead. */
#define TARGET_NS 100000000.0

/* ================================================================ worker */

/* The one allocation API a worker loop uses, chosen by a constant @k. */
W_INLINE void *w_alloc(enum bench_kind k, mcg_cache_t *c, size_t size)
{
	if (k == BENCH_MCG_CACHE)
		return mcg_cache_alloc(c);
	if (k == BENCH_MCG_KMALLOC)
		return mcg_malloc(size);
	return malloc(size);
}

W_INLINE void w_free(enum bench_kind k, mcg_cache_t *c, void *p)
{
	if (k == BENCH_MCG_CACHE)
		mcg_cache_free(c, p);
	else if (k == BENCH_MCG_KMALLOC)
		mcg_free(p);
	else
		free(p);
}

/* One store into each object: the allocation is used, nothing is elided. */
W_INLINE void w_touch(void *p, uint64_t i) { *(volatile char *)p = (char)i; }

W_INLINE int pair_loop(enum bench_kind k, mcg_cache_t *c, size_t size, int inflight, uint64_t iters)
{
	if (inflight == 1) {
		for (uint64_t i = 0; i < iters; i++) {
			void *p = w_alloc(k, c, size);
			if (!p)
				return -1;
			w_touch(p, i);
			w_free(k, c, p);
		}
		return 0;
	}
	void *ring[4];
	for (int j = 0; j < 4; j++) {
		ring[j] = w_alloc(k, c, size);
		if (!ring[j])
			return -1;
	}
	for (uint64_t i = 0; i < iters; i++) {
		unsigned j = (unsigned)i & 3;
		w_free(k, c, ring[j]);
		void *p = w_alloc(k, c, size);
		if (!p)
			return -1;
		w_touch(p, i);
		ring[j] = p;
	}
	for (int j = 0; j < 4; j++)
		w_free(k, c, ring[j]);
	return 0;
}

W_NOINLINE int pair_mcg(mcg_cache_t *c, size_t size, int inflight, uint64_t iters)
{
	return pair_loop(BENCH_MCG_CACHE, c, size, inflight, iters);
}

W_NOINLINE int pair_kmalloc(mcg_cache_t *c, size_t size, int inflight, uint64_t iters)
{
	return pair_loop(BENCH_MCG_KMALLOC, c, size, inflight, iters);
}

W_NOINLINE int pair_libc(mcg_cache_t *c, size_t size, int inflight, uint64_t iters)
{
	return pair_loop(BENCH_LIBC, c, size, inflight, iters);
}

/* Time one pair loop; return ns per pair, or -1 on allocation failure. */
static double pair_time(enum bench_kind k, mcg_cache_t *c, size_t size, int inflight,
                        uint64_t iters)
{
	int (*fn)(mcg_cache_t *, size_t, int, uint64_t) = k == BENCH_MCG_CACHE     ? pair_mcg
	                                                  : k == BENCH_MCG_KMALLOC ? pair_kmalloc
	                                                                           : pair_libc;
	uint64_t t0 = bench_thread_cpu_ns();
	if (fn(c, size, inflight, iters))
		return -1;
	return (double)(bench_thread_cpu_ns() - t0) / (double)iters;
}

/* Iterations for about TARGET_NS, from a measured @ns_per step. */
static uint64_t calibrate(double ns_per, uint64_t lo, uint64_t hi)
{
	double n = TARGET_NS / (ns_per > 0.1 ? ns_per : 0.1);
	return n < (double)lo ? lo : n > (double)hi ? hi : (uint64_t)n;
}

/* pair: SIZE INFLIGHT ITERS (0: calibrate to TARGET_NS).  Prints ns per pair. */
static int worker_pair(enum bench_kind k, int argc, char **argv)
{
	if (argc < 3)
		return 2;
	size_t size = strtoul(argv[0], NULL, 0);
	int inflight = atoi(argv[1]);
	uint64_t iters = strtoull(argv[2], NULL, 0);
	mcg_cache_t *c = NULL;
	if (k == BENCH_MCG_CACHE && !(c = mcg_cache_create("bench-pair", size, 0, 0, NULL)))
		return 1;
	double ns;
	if (iters == 0) {
		if (pair_time(k, c, size, inflight, 200000) < 0) /* warm up */
			return 1;
		ns = pair_time(k, c, size, inflight, 1000000);
		iters = calibrate(ns, 1000000, 100000000);
	} else if (pair_time(k, c, size, inflight, iters / 10 + 1) < 0) {
		return 1;
	}
	ns = pair_time(k, c, size, inflight, iters);
	if (ns < 0)
		return 1;
	printf("%.4f\n", ns);
	if (c && mcg_cache_destroy(c))
		return 1;
	return 0;
}

/*
 * pair-ab: SIZE INFLIGHT BLOCK BLOCKS, run under a baseline (its malloc is
 * the process's).  mcg's pair (the cache API), mcg_malloc's and the
 * baseline's alternate in blocks of BLOCK pairs in this one process, the
 * order turned every block; prints the median over blocks of mcg /
 * baseline, then of mcg-kmalloc / baseline.  The VM's speed moves between
 * processes by more than the differences the target is about; inside one
 * process the three see the same machine.
 */
static int worker_pair_ab(enum bench_kind k, int argc, char **argv)
{
	if (argc < 4 || k != BENCH_LIBC)
		return 2;
	size_t size = strtoul(argv[0], NULL, 0);
	int inflight = atoi(argv[1]), blocks = atoi(argv[3]);
	uint64_t block = strtoull(argv[2], NULL, 0);
	if (size == 0 || inflight < 1 || block == 0 || blocks < 1 || blocks > 4096)
		return 2;
	static const enum bench_kind order[2][3] = {
	        {BENCH_MCG_CACHE, BENCH_MCG_KMALLOC, BENCH_LIBC},
	        {BENCH_LIBC, BENCH_MCG_KMALLOC, BENCH_MCG_CACHE}};
	mcg_cache_t *c = mcg_cache_create("bench-pair", size, 0, 0, NULL);
	double *rm = calloc((size_t)blocks, 2 * sizeof(double));
	if (!c || !rm)
		return 1;
	double *rk = rm + blocks, t[3];
	for (int j = 0; j < 3; j++) /* warm up */
		if (pair_time(order[0][j], c, size, inflight, block) < 0)
			return 1;
	for (int i = 0; i < blocks; i++) {
		for (int j = 0; j < 3; j++) {
			enum bench_kind kind = order[i % 2][j];
			if ((t[kind] = pair_time(kind, c, size, inflight, block)) < 0)
				return 1;
		}
		rm[i] = t[BENCH_MCG_CACHE] / t[BENCH_LIBC];
		rk[i] = t[BENCH_MCG_KMALLOC] / t[BENCH_LIBC];
	}
	printf("%.4f %.4f\n", bench_median(rm, blocks), bench_median(rk, blocks));
	free(rm);
	return mcg_cache_destroy(c) ? 1 : 0;
}

/* ---- free1m: threads that allocate N objects each, then free them, timed ---- */

struct f1_shared {
	enum bench_kind kind;
	mcg_cache_t *cache;
	size_t size, n;
	pthread_barrier_t ready;
};

struct f1_thread {
	struct f1_shared *sh;
	pthread_t tid;
	int cpu;
	int err;
	double ms, cpu_ms; /* the frees: wall and CPU time */
};

/* Pin the calling thread to @cpu (-1: leave it). */
W_INLINE int f1_body(enum bench_kind k, struct f1_thread *t, void **objs)
{
	struct f1_shared *sh = t->sh;
	int err = 0;
	for (size_t i = 0; i < sh->n; i++) {
		objs[i] = w_alloc(k, sh->cache, sh->size);
		if (!objs[i]) {
			err = -1;
			sh->n = i; /* racy but only on failure, which fails the run */
			break;
		}
		w_touch(objs[i], i);
	}
	pthread_barrier_wait(&sh->ready);
	uint64_t t0 = bench_now_ns(), c0 = bench_thread_cpu_ns();
	for (size_t i = 0; i < sh->n; i++)
		w_free(k, sh->cache, objs[i]);
	t->cpu_ms = (double)(bench_thread_cpu_ns() - c0) / 1e6;
	t->ms = (double)(bench_now_ns() - t0) / 1e6;
	return err;
}

W_NOINLINE int f1_mcg(struct f1_thread *t, void **objs)
{
	return f1_body(BENCH_MCG_CACHE, t, objs);
}

W_NOINLINE int f1_kmalloc(struct f1_thread *t, void **objs)
{
	return f1_body(BENCH_MCG_KMALLOC, t, objs);
}

W_NOINLINE int f1_libc(struct f1_thread *t, void **objs) { return f1_body(BENCH_LIBC, t, objs); }

static void *f1_thread_fn(void *arg)
{
	struct f1_thread *t = arg;
	bench_pin_to(t->cpu);
	/* The pointer array comes from mmap, not from the allocator measured. */
	size_t bytes = t->sh->n * sizeof(void *);
	void **objs = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (objs == MAP_FAILED) {
		t->err = -1;
		pthread_barrier_wait(&t->sh->ready);
		return NULL;
	}
	switch (t->sh->kind) {
	case BENCH_MCG_CACHE: t->err = f1_mcg(t, objs); break;
	case BENCH_MCG_KMALLOC: t->err = f1_kmalloc(t, objs); break;
	default: t->err = f1_libc(t, objs); break;
	}
	munmap(objs, bytes);
	return NULL;
}

/* One free1m measurement of kind @k: @nthr threads, @n objects of @size
 * each; each thread's wall and CPU ms in @ms and @cpu_ms.  Return 0 or 1
 * (failed). */
static int f1_run(enum bench_kind k, size_t size, int nthr, size_t n, double *ms, double *cpu_ms)
{
	struct f1_thread t[MAX_THREADS];
	struct f1_shared sh = {.kind = k, .size = size, .n = n};
	if (k == BENCH_MCG_CACHE &&
	    !(sh.cache = mcg_cache_create("bench-free1m", sh.size, 0, 0, NULL)))
		return 1;
	pthread_barrier_init(&sh.ready, NULL, (unsigned)nthr);
	for (int i = 0; i < nthr; i++) {
		t[i] = (struct f1_thread){.sh = &sh, .cpu = bench_thread_cpu(i)};
		bench_start_thread(&t[i].tid, f1_thread_fn, &t[i]);
	}
	int err = 0;
	for (int i = 0; i < nthr; i++) {
		pthread_join(t[i].tid, NULL);
		err |= t[i].err;
	}
	pthread_barrier_destroy(&sh.ready);
	if (err || (sh.cache && mcg_cache_destroy(sh.cache)))
		return 1;
	for (int i = 0; i < nthr; i++) {
		ms[i] = t[i].ms;
		cpu_ms[i] = t[i].cpu_ms;
	}
	return 0;
}

/* free1m: SIZE THREADS NOBJ.  Prints each thread's free time in ms: wall, then CPU. */
static int worker_free1m(enum bench_kind k, int argc, char **argv)
{
	struct bench_f1_args a;
	if (!bench_f1_args(argc, argv, MAX_THREADS, 0, &a))
		return 2;
	double ms[MAX_THREADS], cpu_ms[MAX_THREADS];
	if (f1_run(k, a.size, a.threads, a.n, ms, cpu_ms))
		return 1;
	bench_print_threads(ms, cpu_ms, a.threads);
	return 0;
}

/*
 * free1m-ab: mcg's frees (the cache API) and the baseline's alternating in
 * blocks in one process, for the reason pair-ab has, and within one run,
 * because every run of free1m maps fresh memory and a run's speed followed
 * it (a round's ratio moved by up to 2x when each had its own run).  Each
 * thread allocates @n objects of each, a block of each in turn; then the
 * threads free them a block at a time, all threads on the same kind between
 * two barriers, the order of the two turning every block.
 */
#define AB_BLOCKS 16

struct ab_shared {
	mcg_cache_t *cache;
	size_t size, n, block;
	pthread_barrier_t step;
};

struct ab_thread {
	struct ab_shared *sh;
	pthread_t tid;
	int cpu;
	int err;
	double cpu_ms[2]; /* mcg, the baseline */
};

static const enum bench_kind ab_kinds[2] = {BENCH_MCG_CACHE, BENCH_LIBC};

W_NOINLINE void ab_free_mcg(mcg_cache_t *c, void **objs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		w_free(BENCH_MCG_CACHE, c, objs[i]);
}

W_NOINLINE void ab_free_libc(mcg_cache_t *c, void **objs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		w_free(BENCH_LIBC, c, objs[i]);
}

static void *ab_thread_fn(void *arg)
{
	struct ab_thread *t = arg;
	struct ab_shared *sh = t->sh;
	bench_pin_to(t->cpu);
	size_t n = sh->n, block = sh->block, have[2] = {0, 0};
	size_t bytes = n * sizeof(void *);
	void **objs[2];
	bool ok = true;
	for (int j = 0; j < 2; j++) {
		objs[j] = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		               0);
		ok &= objs[j] != MAP_FAILED;
	}
	for (size_t at = 0; ok && at < n; at += block) {
		for (int j = 0; ok && j < 2; j++) {
			for (size_t i = at; i < n && i < at + block; i++) {
				if (!(objs[j][i] = w_alloc(ab_kinds[j], sh->cache, sh->size))) {
					ok = false;
					break;
				}
				w_touch(objs[j][i], i);
				have[j]++;
			}
		}
	}
	t->err = ok ? 0 : -1;
	/* Every thread waits at every step, whatever it holds. */
	for (size_t b = 0, at = 0; at < n; b++, at += block) {
		for (int i = 0; i < 2; i++) {
			int j = (int)(b % 2) ^ i;
			size_t end = have[j] < at + block ? have[j] : at + block;
			pthread_barrier_wait(&sh->step);
			uint64_t c0 = bench_thread_cpu_ns();
			if (end > at)
				(j ? ab_free_libc : ab_free_mcg)(sh->cache, objs[j] + at, end - at);
			t->cpu_ms[j] += (double)(bench_thread_cpu_ns() - c0) / 1e6;
		}
	}
	for (int j = 0; j < 2; j++)
		if (objs[j] != MAP_FAILED)
			munmap(objs[j], bytes);
	return NULL;
}

/* One round of free1m-ab: *@ratio = mcg / baseline of the threads' mean CPU
 * time.  Return 0 or 1 (failed). */
static int ab_run(size_t size, int nthr, size_t n, double *ratio)
{
	struct ab_thread t[MAX_THREADS];
	struct ab_shared sh = {.size = size, .n = n, .block = (n + AB_BLOCKS - 1) / AB_BLOCKS};
	if (!(sh.cache = mcg_cache_create("bench-free1m", size, 0, 0, NULL)))
		return 1;
	pthread_barrier_init(&sh.step, NULL, (unsigned)nthr);
	for (int i = 0; i < nthr; i++) {
		t[i] = (struct ab_thread){.sh = &sh, .cpu = bench_thread_cpu(i)};
		bench_start_thread(&t[i].tid, ab_thread_fn, &t[i]);
	}
	int err = 0;
	double q[2] = {0, 0};
	for (int i = 0; i < nthr; i++) {
		pthread_join(t[i].tid, NULL);
		err |= t[i].err;
		q[0] += t[i].cpu_ms[0];
		q[1] += t[i].cpu_ms[1];
	}
	pthread_barrier_destroy(&sh.step);
	if (err || mcg_cache_destroy(sh.cache))
		return 1;
	*ratio = q[0] / q[1];
	return 0;
}

/* free1m-ab: SIZE THREADS NOBJ ROUNDS, run under a baseline: each round's
 * ratio mcg / baseline. */
static int worker_free1m_ab(enum bench_kind k, int argc, char **argv)
{
	struct bench_f1_args a;
	if (k != BENCH_LIBC || !bench_f1_args(argc, argv, MAX_THREADS, 64, &a))
		return 2;
	for (int i = 0; i < a.rounds; i++) {
		double ratio;
		if (ab_run(a.size, a.threads, a.n, &ratio))
			return 1;
		printf("%.4f ", ratio);
	}
	printf("\n");
	return 0;
}

/* ---- growshrink: fill a fresh slab, empty it, give the memory back ---- */

/* Give free memory back: mcg_cache_shrink on @c for memcg, else the baseline's call. */
static void w_release(enum bench_kind k, mcg_cache_t *c, const char *variant)
{
	if (k == BENCH_LIBC)
		baseline_release(variant);
	else
		mcg_cache_shrink(c);
}

W_INLINE int gs_loop(enum bench_kind k, mcg_cache_t *c, size_t size, void **objs, size_t n,
                     uint64_t cycles, bool release, const char *variant)
{
	for (uint64_t cyc = 0; cyc < cycles; cyc++) {
		for (size_t i = 0; i < n; i++) {
			objs[i] = w_alloc(k, c, size);
			if (!objs[i])
				return -1;
			w_touch(objs[i], i);
		}
		for (size_t i = 0; i < n; i++)
			w_free(k, c, objs[i]);
		if (release)
			w_release(k, c, variant);
	}
	return 0;
}

W_NOINLINE int gs_mcg(mcg_cache_t *c, size_t size, void **objs, size_t n, uint64_t cycles,
                      bool release, const char *variant)
{
	return gs_loop(BENCH_MCG_CACHE, c, size, objs, n, cycles, release, variant);
}

W_NOINLINE int gs_kmalloc(mcg_cache_t *c, size_t size, void **objs, size_t n, uint64_t cycles,
                          bool release, const char *variant)
{
	return gs_loop(BENCH_MCG_KMALLOC, c, size, objs, n, cycles, release, variant);
}

W_NOINLINE int gs_libc(mcg_cache_t *c, size_t size, void **objs, size_t n, uint64_t cycles,
                       bool release, const char *variant)
{
	return gs_loop(BENCH_LIBC, c, size, objs, n, cycles, release, variant);
}

static double gs_time(enum bench_kind k, mcg_cache_t *c, size_t size, void **objs, size_t n,
                      uint64_t cycles, bool release, const char *variant)
{
	int (*fn)(mcg_cache_t *, size_t, void **, size_t, uint64_t, bool, const char *) =
	        k == BENCH_MCG_CACHE     ? gs_mcg
	        : k == BENCH_MCG_KMALLOC ? gs_kmalloc
	                                 : gs_libc;
	uint64_t t0 = bench_thread_cpu_ns();
	if (fn(c, size, objs, n, cycles, release, variant))
		return -1;
	return (double)(bench_thread_cpu_ns() - t0) / (double)cycles;
}

/* The kmalloc cache that serves @size (mcg_slab_of on a sample object), or NULL. */
static mcg_cache_t *kmalloc_cache_of(size_t size)
{
	void *p = mcg_malloc(size);
	struct mcg_slab *s = p ? mcg_slab_of(p) : NULL;
	mcg_cache_t *c = s ? s->cache : NULL;
	mcg_free(p);
	return c;
}

/*
 * growshrink: SIZE NOBJ CYCLES (0: calibrate).  Prints ns per cycle with the
 * release call, then ns per cycle without it.
 */
static int worker_growshrink(enum bench_kind k, const char *variant, int argc, char **argv)
{
	if (argc < 3)
		return 2;
	size_t size = strtoul(argv[0], NULL, 0);
	size_t n = strtoul(argv[1], NULL, 0);
	uint64_t cycles = strtoull(argv[2], NULL, 0);
	mcg_cache_t *c = NULL;
	if (k == BENCH_MCG_CACHE && !(c = mcg_cache_create("bench-grow", size, 0, 0, NULL)))
		return 1;
	if (k == BENCH_MCG_KMALLOC && !(c = kmalloc_cache_of(size)))
		return 1;
	void **objs = mmap(NULL, n * sizeof(void *), PROT_READ | PROT_WRITE,
	                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (objs == MAP_FAILED)
		return 1;
	double with, without;
	if (cycles == 0) {
		if ((with = gs_time(k, c, size, objs, n, 20, true, variant)) < 0)
			return 1;
		uint64_t cyc_with = calibrate(with, 20, 10000000);
		if ((without = gs_time(k, c, size, objs, n, 20, false, variant)) < 0)
			return 1;
		uint64_t cyc_without = calibrate(without, 20, 10000000);
		with = gs_time(k, c, size, objs, n, cyc_with, true, variant);
		without = gs_time(k, c, size, objs, n, cyc_without, false, variant);
	} else {
		with = gs_time(k, c, size, objs, n, cycles, true, variant);
		without = gs_time(k, c, size, objs, n, cycles, false, variant);
	}
	if (with < 0 || without < 0)
		return 1;
	printf("%.2f %.2f\n", with, without);
	munmap(objs, n * sizeof(void *));
	if (k == BENCH_MCG_CACHE && mcg_cache_destroy(c))
		return 1;
	return 0;
}

/* ---- rss: resident set with N live 64 B objects, and after free + release ---- */

W_INLINE int rss_fill(enum bench_kind k, mcg_cache_t *c, void **objs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		objs[i] = w_alloc(k, c, 64);
		if (!objs[i])
			return -1;
		w_touch(objs[i], i);
	}
	return 0;
}

W_INLINE void rss_empty(enum bench_kind k, mcg_cache_t *c, void **objs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		w_free(k, c, objs[i]);
}

/* rss: NOBJ.  Prints RSS in KiB at the start, with the objects live, and after. */
static int worker_rss(enum bench_kind k, const char *variant, int argc, char **argv)
{
	if (argc < 1)
		return 2;
	size_t n = strtoul(argv[0], NULL, 0);
	void **objs = mmap(NULL, n * sizeof(void *), PROT_READ | PROT_WRITE,
	                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (objs == MAP_FAILED)
		return 1;
	memset(objs, 0, n * sizeof(void *)); /* resident before the start figure */
	long start = bench_rss_kib();
	mcg_cache_t *c = NULL;
	if (k == BENCH_MCG_CACHE && !(c = mcg_cache_create("bench-rss", 64, 0, 0, NULL)))
		return 1;
	int err = 0;
	switch (k) {
	case BENCH_MCG_CACHE: err = rss_fill(BENCH_MCG_CACHE, c, objs, n); break;
	case BENCH_MCG_KMALLOC: err = rss_fill(BENCH_MCG_KMALLOC, c, objs, n); break;
	default: err = rss_fill(BENCH_LIBC, c, objs, n); break;
	}
	if (err)
		return 1;
	long live = bench_rss_kib();
	if (k == BENCH_MCG_KMALLOC) {
		struct mcg_slab *s = mcg_slab_of(objs[0]);
		c = s ? s->cache : NULL;
	}
	switch (k) {
	case BENCH_MCG_CACHE: rss_empty(BENCH_MCG_CACHE, c, objs, n); break;
	case BENCH_MCG_KMALLOC: rss_empty(BENCH_MCG_KMALLOC, c, objs, n); break;
	default: rss_empty(BENCH_LIBC, c, objs, n); break;
	}
	if (k != BENCH_LIBC && !c)
		return 1;
	w_release(k, c, variant);
	long after = bench_rss_kib();
	printf("%ld %ld %ld\n", start, live, after);
	if (k == BENCH_MCG_CACHE && mcg_cache_destroy(c))
		return 1;
	return 0;
}

/* `memcg bench slab --worker CASE VARIANT ARGS...`: one measurement; exit status 0 or not. */
static int worker_main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const char *cas = argv[0], *variant = argv[1];
	enum bench_kind k = !strcmp(variant, "mcg")           ? BENCH_MCG_CACHE
	                    : !strcmp(variant, "mcg-kmalloc") ? BENCH_MCG_KMALLOC
	                                                      : BENCH_LIBC;
	alarm(300); /* a hung worker dies rather than hanging the benchmark */
	if (baseline_check_self(variant))
		return 3;
	argc -= 2;
	argv += 2;
	if (!strcmp(cas, "probe")) {
		void *p = k == BENCH_LIBC ? malloc(64) : mcg_malloc(64);
		if (!p)
			return 1;
		w_touch(p, 1);
		if (k == BENCH_LIBC)
			free(p);
		else
			mcg_free(p);
		printf("1\n");
		return 0;
	}
	if (!strcmp(cas, "geometry")) { /* SIZE: objects per slab of an mcg cache */
		mcg_cache_stats_t st;
		mcg_cache_t *c = argc ? mcg_cache_create("bench-geometry",
		                                         strtoul(argv[0], NULL, 0), 0, 0, NULL)
		                      : NULL;
		if (!c || mcg_cache_stats(c, &st))
			return 1;
		printf("%zu\n", st.objs_per_slab);
		return mcg_cache_destroy(c) ? 1 : 0;
	}
	if (!strcmp(cas, "pair"))
		return worker_pair(k, argc, argv);
	if (!strcmp(cas, "pair-ab"))
		return worker_pair_ab(k, argc, argv);
	if (!strcmp(cas, "free1m"))
		return worker_free1m(k, argc, argv);
	if (!strcmp(cas, "free1m-ab"))
		return worker_free1m_ab(k, argc, argv);
	if (!strcmp(cas, "growshrink"))
		return worker_growshrink(k, variant, argc, argv);
	if (!strcmp(cas, "rss"))
		return worker_rss(k, variant, argc, argv);
	fprintf(stderr, "memcg bench slab: unknown worker case '%s'\n", cas);
	return 2;
}

/* ================================================================ parent */

/* All samples of one case: [config][variant][run][value]. */
struct matrix {
	int ncfg, nvar, runs;
	double *v;
	int *n;
};

static double *mat_at(struct matrix *m, int cfg, int var, int run)
{
	return m->v + (((size_t)cfg * m->nvar + var) * m->runs + run) * MAX_VALS;
}

static int *mat_n(struct matrix *m, int cfg, int var, int run)
{
	return m->n + ((size_t)cfg * m->nvar + var) * m->runs + run;
}

struct ctx {
	struct bench_opts o;
	struct bench_variant var[BENCH_MAX_VARIANTS];
	int nvar;
	int threads;
	size_t gs_objs[NGS];
	int met, missed;
};

/* Worker arguments of config @cfg of a case, into @a (strings in @buf). */
typedef int (*args_fn)(const struct ctx *x, int cfg, char buf[][32], const char **a);

/*
 * measure - run every config of a case for every variant and run, variants
 * rotated per run and config.  @want: values each worker must print.
 * Return 0, or -1 if a worker failed.
 */
static int measure(struct ctx *x, const char *name, int ncfg, int want, args_fn fill,
                   struct matrix *m)
{
	m->ncfg = ncfg;
	m->nvar = x->nvar;
	m->runs = x->o.runs;
	size_t cells = (size_t)ncfg * x->nvar * x->o.runs;
	m->v = calloc(cells * MAX_VALS, sizeof(double));
	m->n = calloc(cells, sizeof(int));
	if (!m->v || !m->n)
		return -1;
	for (int r = 0; r < x->o.runs; r++) {
		uint64_t t0 = bench_now_ns();
		for (int cfg = 0; cfg < ncfg; cfg++) {
			for (int j = 0; j < x->nvar; j++) {
				int vi = (j + r + cfg) % x->nvar;
				const struct bench_variant *v = &x->var[vi];
				char buf[8][32];
				const char *a[16] = {"bench", "slab", "--worker", name, v->name};
				int na = 5;
				na += fill(x, cfg, buf, a + na);
				a[na] = NULL;
				int got = bench_worker_run(v, a, mat_at(m, cfg, vi, r), MAX_VALS);
				if (got < want) {
					if (got >= 0)
						fprintf(stderr,
						        "memcg bench: %s/%s: %d values, want %d\n",
						        name, v->name, got, want);
					return -1;
				}
				*mat_n(m, cfg, vi, r) = got;
			}
		}
		if (!x->o.smoke)
			bench_progress("%s: run %d/%d done (%.1f s)", name, r + 1, x->o.runs,
			               (double)(bench_now_ns() - t0) / 1e9);
	}
	return 0;
}

/* Median over runs of value @idx (or, for idx < 0, of the mean of values [0, -idx)). */
static double mat_median(struct matrix *m, int cfg, int var, int idx)
{
	double tmp[1024];
	int n = 0;
	for (int r = 0; r < m->runs && n < 1024; r++) {
		double *v = mat_at(m, cfg, var, r);
		tmp[n++] = idx >= 0 ? v[idx] : bench_mean(v, -idx);
	}
	return bench_median(tmp, n);
}

static void mat_free(struct matrix *m)
{
	free(m->v);
	free(m->n);
}

/* The index of variant @name, or -1. */
static int var_index(const struct ctx *x, const char *name)
{
	for (int i = 0; i < x->nvar; i++)
		if (!strcmp(x->var[i].name, name))
			return i;
	return -1;
}

/* The baseline with the lowest @val[i]; -1 if none. */
static int best_baseline(const struct ctx *x, const double *val)
{
	int best = -1;
	for (int i = 0; i < x->nvar; i++)
		if (x->var[i].baseline && (best < 0 || val[i] < val[best]))
			best = i;
	return best;
}

/* Record a target: PASS/MISS string, counted, and a JSON line. */
static const char *target(struct ctx *x, const char *variant, const char *name, double ratio,
                          bool pass)
{
	if (pass)
		x->met++;
	else
		x->missed++;
	if (x->o.json) {
		char extra[160];
		snprintf(extra, sizeof(extra), "\"name\":\"%s\",\"pass\":%s", name,
		         pass ? "true" : "false");
		bench_emit_json("target", variant, extra, ratio, "ratio");
	}
	return pass ? "PASS" : "MISS";
}

static void print_variant_header(const struct ctx *x, int width)
{
	for (int i = 0; i < x->nvar; i++)
		printf(" %*s", width, x->var[i].name);
}

/* ---- pair ---- */

static int pair_args(const struct ctx *x, int cfg, char buf[][32], const char **a)
{
	snprintf(buf[0], 32, "%zu", pair_sizes[cfg / 2]);
	snprintf(buf[1], 32, "%d", pair_inflight[cfg % 2]);
	snprintf(buf[2], 32, "%d", x->o.smoke ? 20000 : 0);
	a[0] = buf[0];
	a[1] = buf[1];
	a[2] = buf[2];
	return 3;
}

/*
 * The pair-ab worker under every baseline, every config and run: @q[cfg][b]
 * [r][0, 1] = mcg / b and mcg-kmalloc / b, interleaved in one process.
 * Return 0, or -1 if a worker failed.
 */
static int measure_pair_ab(struct ctx *x, double *q)
{
	for (int r = 0; r < x->o.runs; r++) {
		for (int cfg = 0; cfg < NPAIR; cfg++) {
			for (int b = 0; b < x->nvar; b++) {
				if (!x->var[b].baseline)
					continue;
				char buf[4][32];
				snprintf(buf[0], 32, "%zu", pair_sizes[cfg / 2]);
				snprintf(buf[1], 32, "%d", pair_inflight[cfg % 2]);
				snprintf(buf[2], 32, "%d", x->o.smoke ? 2000 : 100000);
				snprintf(buf[3], 32, "%d", x->o.smoke ? 4 : 30);
				const char *a[] = {"bench",        "slab", "--worker", "pair-ab",
				                   x->var[b].name, buf[0], buf[1],     buf[2],
				                   buf[3],         NULL};
				double *v = q + (((size_t)cfg * x->nvar + b) * x->o.runs + r) * 2;
				if (bench_worker_run(&x->var[b], a, v, 2) < 2) {
					fprintf(stderr, "memcg bench: pair-ab/%s failed\n",
					        x->var[b].name);
					return -1;
				}
			}
		}
		if (!x->o.smoke)
			bench_progress("pair-ab: run %d/%d done", r + 1, x->o.runs);
	}
	return 0;
}

/* The worst over baselines of the median over runs of value @k of @q at @cfg
 * (mcg against the fastest baseline, each met in its own process); *@who: which. */
static double pair_ab_worst(const struct ctx *x, const double *q, int cfg, int k, int *who)
{
	double worst = 0;
	*who = -1;
	for (int b = 0; b < x->nvar; b++) {
		if (!x->var[b].baseline)
			continue;
		double tmp[1024];
		int n = 0;
		for (int r = 0; r < x->o.runs && n < 1024; r++)
			tmp[n++] = q[(((size_t)cfg * x->nvar + b) * x->o.runs + r) * 2 + k];
		double med = bench_median(tmp, n);
		if (*who < 0 || med > worst) {
			worst = med;
			*who = b;
		}
	}
	return worst;
}

static int case_pair(struct ctx *x)
{
	struct matrix m;
	double *q = calloc((size_t)NPAIR * x->nvar * x->o.runs * 2, sizeof(double));
	if (!q || measure(x, "pair", NPAIR, 1, pair_args, &m) || measure_pair_ab(x, q)) {
		free(q);
		return -1;
	}
	int im = var_index(x, "mcg"), ik = var_index(x, "mcg-kmalloc");
	if (!x->o.json) {
		printf("\n== pair: alloc+free pairs, ns per pair (median of %d run%s; lower is "
		       "better) ==\n",
		       x->o.runs, x->o.runs > 1 ? "s" : "");
		printf("%5s %8s", "size", "inflight");
		print_variant_header(x, 11);
		printf(" | %-9s %8s %8s | %-9s %8s %8s %s\n", "best", "mcg", "kmalloc", "worst",
		       "mcg", "kmalloc", "target");
	}
	for (int cfg = 0; cfg < NPAIR; cfg++) {
		size_t size = pair_sizes[cfg / 2];
		int inflight = pair_inflight[cfg % 2];
		double val[BENCH_MAX_VARIANTS];
		int b = -1, wm, wk;
		for (int i = 0; i < x->nvar; i++)
			val[i] = mat_median(&m, cfg, i, 0);
		b = best_baseline(x, val);
		double rm = val[im] / val[b], rk = val[ik] / val[b];
		double qm = pair_ab_worst(x, q, cfg, 0, &wm), qk = pair_ab_worst(x, q, cfg, 1, &wk);
		for (int i = 0; i < x->nvar && x->o.json; i++) {
			char extra[160], qi[48] = "";
			if (i == im || i == ik)
				snprintf(qi, sizeof(qi), ",\"ratio_interleaved\":%.4f",
				         i == im ? qm : qk);
			snprintf(extra, sizeof(extra), "\"size\":%zu,\"inflight\":%d,\"runs\":%d%s",
			         size, inflight, x->o.runs, qi);
			bench_emit_json("pair", x->var[i].name, extra, val[i], "ns");
		}
		char tname[48];
		snprintf(tname, sizeof(tname), "pair-%zu-%d", size, inflight);
		const char *tm = target(x, "mcg", tname, qm, qm <= 1.0);
		const char *tk = target(x, "mcg-kmalloc", tname, qk, qk <= 1.0);
		if (!x->o.json) {
			printf("%5zu %8d", size, inflight);
			for (int i = 0; i < x->nvar; i++)
				printf(" %11.2f", val[i]);
			printf(" | %-9s %8.2f %8.2f | %-9s %8.3f %8.3f %s/%s\n", x->var[b].name, rm,
			       rk, x->var[wm].name, qm, qk, tm, tk);
		}
	}
	if (!x->o.json)
		printf("target: mcg and mcg-kmalloc each <= every baseline (ratio <= 1.00), judged "
		       "interleaved: under each baseline's malloc, mcg's pairs, mcg_malloc's and "
		       "the baseline's alternate in blocks of pairs in one process; the ratio "
		       "judged is against the baseline mcg fares worst with (\"worst\"); \"best\": "
		       "the fastest baseline by the per-process medians, for information. "
		       "PASS/MISS is mcg/mcg-kmalloc\n");
	free(q);
	mat_free(&m);
	return 0;
}

/* ---- free1m ---- */

static size_t free1m_objs(const struct ctx *x) { return x->o.smoke ? 10000 : MILLION; }

static int free1m_args(const struct ctx *x, int cfg, char buf[][32], const char **a)
{
	snprintf(buf[0], 32, "%zu", free1m_sizes[cfg]);
	snprintf(buf[1], 32, "%d", x->threads);
	snprintf(buf[2], 32, "%zu", free1m_objs(x));
	a[0] = buf[0];
	a[1] = buf[1];
	a[2] = buf[2];
	return 3;
}

/* Mean and stddev of values [0, @nv) (every thread's wall time) over every run. */
static void pooled(struct matrix *m, int cfg, int var, int nv, double *mean, double *sd)
{
	double all[MAX_VALS * 64];
	int n = 0;
	for (int r = 0; r < m->runs; r++) {
		double *v = mat_at(m, cfg, var, r);
		for (int i = 0; i < nv && n < MAX_VALS * 64; i++)
			all[n++] = v[i];
	}
	*mean = bench_mean(all, n);
	*sd = bench_stddev(all, n);
}

#define F1_AB_ROUNDS 3

/*
 * free1m-ab under baseline @b at config @cfg, every run: the median of the
 * ratios mcg / @b of every round of every run, pooled; -1 if a worker failed.
 */
static double free1m_ab(struct ctx *x, int cfg, int b)
{
	double q[64 * F1_AB_ROUNDS];
	int n = 0;
	for (int r = 0; r < x->o.runs && n + F1_AB_ROUNDS <= 64 * F1_AB_ROUNDS; r++) {
		char buf[4][32];
		const char *a[10] = {"bench", "slab", "--worker", "free1m-ab", x->var[b].name};
		free1m_args(x, cfg, buf, a + 5);
		snprintf(buf[3], 32, "%d", F1_AB_ROUNDS);
		a[8] = buf[3];
		a[9] = NULL;
		if (bench_worker_run(&x->var[b], a, q + n, F1_AB_ROUNDS) < F1_AB_ROUNDS) {
			fprintf(stderr, "memcg bench: free1m-ab/%s failed\n", x->var[b].name);
			return -1;
		}
		n += F1_AB_ROUNDS;
	}
	return bench_median(q, n);
}

static int case_free1m(struct ctx *x)
{
	struct matrix m;
	if (measure(x, "free1m", NFREE1M, 2 * x->threads, free1m_args, &m))
		return -1;
	int im = var_index(x, "mcg"), ik = var_index(x, "mcg-kmalloc");
	/* The fastest baseline of each size by the per-process medians, then
	 * mcg against it interleaved in one process (judged). */
	double val[NFREE1M][BENCH_MAX_VARIANTS], qi[NFREE1M];
	int best[NFREE1M];
	for (int cfg = 0; cfg < NFREE1M; cfg++) {
		for (int i = 0; i < x->nvar; i++)
			val[cfg][i] = mat_median(&m, cfg, i, -x->threads);
		best[cfg] = best_baseline(x, val[cfg]);
		if ((qi[cfg] = free1m_ab(x, cfg, best[cfg])) < 0) {
			mat_free(&m);
			return -1;
		}
	}
	if (!x->o.json) {
		printf("\n== free1m: each of %d threads frees %zu objects, ms per thread "
		       "(median of %d run%s of the mean; +- stddev over all threads and runs) ==\n",
		       x->threads, free1m_objs(x), x->o.runs, x->o.runs > 1 ? "s" : "");
		printf("%5s", "size");
		print_variant_header(x, 13);
		printf(" | %-9s %8s %12s %11s %s\n", "best", "mcg/best", "kmalloc/best",
		       "interleaved", "target");
	}
	for (int cfg = 0; cfg < NFREE1M; cfg++) {
		size_t size = free1m_sizes[cfg];
		double mean, sd;
		int b = best[cfg];
		if (!x->o.json)
			printf("%5zu", size);
		for (int i = 0; i < x->nvar; i++) {
			pooled(&m, cfg, i, x->threads, &mean, &sd);
			if (x->o.json) {
				double cpu[1024];
				int nc = 0;
				for (int r = 0; r < m.runs && nc < 1024; r++)
					cpu[nc++] = bench_mean(mat_at(&m, cfg, i, r) + x->threads,
					                       x->threads);
				char extra[240], qs[64] = "";
				if (i == im)
					snprintf(qs, sizeof(qs),
					         ",\"ratio_interleaved\":%.4f,\"vs\":\"%s\"",
					         qi[cfg], x->var[b].name);
				snprintf(extra, sizeof(extra),
				         "\"size\":%zu,\"threads\":%d,\"objects\":%zu,\"runs\":%d,"
				         "\"stddev\":%.3f,\"cpu_ms\":%.3f%s",
				         size, x->threads, free1m_objs(x), x->o.runs, sd,
				         bench_median(cpu, nc), qs);
				bench_emit_json("free1m", x->var[i].name, extra, val[cfg][i], "ms");
			} else {
				char cell[32];
				snprintf(cell, sizeof(cell), "%.1f+-%.1f", val[cfg][i], sd);
				printf(" %13s", cell);
			}
		}
		double rm = val[cfg][im] / val[cfg][b], rk = val[cfg][ik] / val[cfg][b];
		char tname[48];
		snprintf(tname, sizeof(tname), "free1m-%zu", size);
		const char *tm = target(x, "mcg", tname, qi[cfg], qi[cfg] <= 1.0);
		if (!x->o.json)
			printf(" | %-9s %8.2f %12.2f %11.3f %s\n", x->var[b].name, rm, rk, qi[cfg],
			       tm);
	}
	if (!x->o.json)
		printf("target: mcg (the cache API, a live cache as in seed 000) <= the fastest "
		       "baseline, judged interleaved: under that baseline's malloc, mcg's frees "
		       "and the baseline's alternate in blocks of 1/%d of the objects in one "
		       "run (%d runs in each process), the median ratio of their CPU time over "
		       "every run; the per-process wall ratios and kmalloc/best are for "
		       "information\n",
		       AB_BLOCKS, F1_AB_ROUNDS);
	mat_free(&m);
	return 0;
}

/* ---- growshrink ---- */

static int gs_args(const struct ctx *x, int cfg, char buf[][32], const char **a)
{
	snprintf(buf[0], 32, "%zu", gs_sizes[cfg]);
	snprintf(buf[1], 32, "%zu", x->gs_objs[cfg]);
	snprintf(buf[2], 32, "%d", x->o.smoke ? 20 : 0);
	a[0] = buf[0];
	a[1] = buf[1];
	a[2] = buf[2];
	return 3;
}

static int case_growshrink(struct ctx *x)
{
	/*
	 * One slab's worth of objects, as mcg lays the slab out; the same count
	 * for all.  Asked of a worker: the parent keeps no allocator state.
	 */
	int im = var_index(x, "mcg");
	for (int cfg = 0; cfg < NGS; cfg++) {
		char size[32];
		snprintf(size, sizeof(size), "%zu", gs_sizes[cfg]);
		const char *a[] = {"bench", "slab", "--worker", "geometry", "mcg", size, NULL};
		double objs = 0;
		if (bench_worker_run(&x->var[im], a, &objs, 1) != 1 || objs < 1)
			return -1;
		x->gs_objs[cfg] = (size_t)objs;
	}
	struct matrix m;
	if (measure(x, "growshrink", NGS, 2, gs_args, &m))
		return -1;
	if (!x->o.json)
		printf("\n== growshrink: allocate one mcg slab's worth of objects, free them, "
		       "release; ns per cycle (median of %d run%s) ==\n",
		       x->o.runs, x->o.runs > 1 ? "s" : "");
	for (int cfg = 0; cfg < NGS; cfg++) {
		size_t size = gs_sizes[cfg];
		if (!x->o.json)
			printf("size %zu B, %zu objects per cycle:\n  %-12s %12s %14s %12s  %s\n",
			       size, x->gs_objs[cfg], "variant", "with release", "without",
			       "overhead", "release call");
		for (int i = 0; i < x->nvar; i++) {
			double with = mat_median(&m, cfg, i, 0),
			       without = mat_median(&m, cfg, i, 1);
			double d[1024];
			int n = 0;
			for (int r = 0; r < m.runs && n < 1024; r++) {
				double *v = mat_at(&m, cfg, i, r);
				d[n++] = v[0] - v[1];
			}
			double over = bench_median(d, n);
			const char *call = x->var[i].baseline
			                           ? baseline_release_name(x->var[i].name)
			                           : "mcg_cache_shrink()";
			if (x->o.json) {
				char extra[200];
				snprintf(extra, sizeof(extra),
				         "\"size\":%zu,\"objects\":%zu,\"runs\":%d,\"release\":\"%"
				         "s\","
				         "\"without_release\":%.1f,\"overhead\":%.1f",
				         size, x->gs_objs[cfg], x->o.runs, call, without, over);
				bench_emit_json("growshrink", x->var[i].name, extra, with, "ns");
			} else {
				printf("  %-12s %12.0f %14.0f %12.0f  %s\n", x->var[i].name, with,
				       without, over, call);
			}
		}
	}
	if (!x->o.json)
		printf("overhead = with - without: the cost of giving a slab back and growing "
		       "a new one (no target in issue 2; for information)\n");
	mat_free(&m);
	return 0;
}

/* ---- rss ---- */

static size_t rss_objs(const struct ctx *x) { return x->o.smoke ? 20000 : MILLION; }

static int rss_args(const struct ctx *x, int cfg, char buf[][32], const char **a)
{
	snprintf(buf[0], 32, "%zu", rss_objs(x));
	a[0] = buf[0];
	return 1;
}

static int case_rss(struct ctx *x)
{
	struct matrix m;
	if (measure(x, "rss", 1, 3, rss_args, &m))
		return -1;
	double grow[BENCH_MAX_VARIANTS], live[BENCH_MAX_VARIANTS], left[BENCH_MAX_VARIANTS];
	for (int i = 0; i < x->nvar; i++) {
		double g[1024], l[1024];
		int n = 0;
		for (int r = 0; r < m.runs && n < 1024; r++, n++) {
			double *v = mat_at(&m, 0, i, r);
			g[n] = (v[1] - v[0]) / 1024.0;
			l[n] = v[2] - v[0];
		}
		grow[i] = bench_median(g, n);
		left[i] = bench_median(l, n);
		live[i] = mat_median(&m, 0, i, 1) / 1024.0;
	}
	int b = best_baseline(x, grow);
	int im = var_index(x, "mcg"), ik = var_index(x, "mcg-kmalloc");
	if (!x->o.json) {
		printf("\n== rss: %zu live 64 B objects (median of %d run%s) ==\n", rss_objs(x),
		       x->o.runs, x->o.runs > 1 ? "s" : "");
		printf("  %-12s %10s %12s %10s %16s  %s\n", "variant", "RSS MiB", "growth MiB",
		       "vs leanest", "after free KiB", "release call");
	}
	for (int i = 0; i < x->nvar; i++) {
		const char *call = x->var[i].baseline ? baseline_release_name(x->var[i].name)
		                                      : "mcg_cache_shrink()";
		if (x->o.json) {
			char extra[200];
			snprintf(extra, sizeof(extra),
			         "\"size\":64,\"objects\":%zu,\"runs\":%d,\"metric\":\"%s\"",
			         rss_objs(x), x->o.runs, "growth");
			bench_emit_json("rss", x->var[i].name, extra, grow[i], "MiB");
			snprintf(extra, sizeof(extra),
			         "\"size\":64,\"objects\":%zu,\"runs\":%d,\"metric\":\"%s\"",
			         rss_objs(x), x->o.runs, "rss");
			bench_emit_json("rss", x->var[i].name, extra, live[i], "MiB");
			snprintf(extra, sizeof(extra),
			         "\"size\":64,\"objects\":%zu,\"runs\":%d,\"metric\":\"%s\","
			         "\"release\":\"%s\"",
			         rss_objs(x), x->o.runs, "after_release", call);
			bench_emit_json("rss", x->var[i].name, extra, left[i], "KiB");
		} else {
			printf("  %-12s %10.1f %12.1f %10.2f %16.0f  %s\n", x->var[i].name, live[i],
			       grow[i], grow[i] / grow[b], left[i], call);
		}
	}
	double r = grow[im] / grow[b];
	const char *t1 = target(x, "mcg", "rss-live", r, r <= 1.1);
	const char *t2 = target(x, "mcg", "rss-after-shrink", left[im], left[im] <= 1024);
	if (!x->o.json)
		printf("growth = RSS with the objects live - RSS at the start; after free = RSS "
		       "after free + release - RSS at the start\n"
		       "target: mcg growth <= 1.1x the leanest baseline (%s): %.2fx %s; "
		       "mcg back within 1024 KiB after free + shrink: %.0f KiB %s "
		       "(mcg-kmalloc: %.2fx, %.0f KiB, for information)\n",
		       x->var[b].name, r, t1, left[im], t2, grow[ik] / grow[b], left[ik]);
	mat_free(&m);
	return 0;
}

/* ================================================================ main */

int bench_slab_main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "--worker"))
		return worker_main(argc - 2, argv + 2);
	/* --case NAME runs one case; the rest of the flags are the common ones. */
	static const char *const cases[] = {"pair", "free1m", "growshrink", "rss", NULL};
	const char *only;
	char *args[64];
	int nargs = bench_take_case(argc, argv, "slab", cases, &only, args);
	if (nargs < 0)
		return 2;
	struct ctx *x = calloc(1, sizeof(*x));
	if (!x)
		return 1;
	int rc = bench_parse_opts(nargs, args, &x->o);
	if (rc) {
		free(x);
		return rc;
	}
	x->threads = bench_threads(&x->o, MAX_THREADS);
	const char *probe[] = {"bench", "slab", "--worker", "probe", NULL};
	x->nvar = bench_variants_find(x->var, probe);
	uint64_t t0 = bench_now_ns();
	if (!x->o.json) {
		printf("memcg bench slab%s: %d variants:",
		       x->o.smoke ? " (smoke: figures mean "
		                    "nothing)"
		                  : "",
		       x->nvar);
		for (int i = 0; i < x->nvar; i++)
			printf(" %s", x->var[i].name);
		printf("; each measurement in its own process, variants interleaved\n");
	}
#define WANT(name) (!only || !strcmp(only, name))
	rc = (WANT("pair") && case_pair(x)) || (WANT("free1m") && case_free1m(x)) ||
	     (WANT("growshrink") && case_growshrink(x)) || (WANT("rss") && case_rss(x));
#undef WANT
	if (!rc && !x->o.json)
		printf("\ntargets: %d met, %d missed (%.0f s)\n", x->met, x->missed,
		       (double)(bench_now_ns() - t0) / 1e9);
	free(x);
	return rc ? 1 : 0;
}
