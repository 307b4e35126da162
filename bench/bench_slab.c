/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_slab.c - `memcg bench slab`: the slab layer and the malloc
 * shim against the best mallocs (seeds 001 and 000; docs/seeds.md).
 *
 * Cases
 *   pair       seed 001: alloc+free pairs, 1 or 4 objects in flight (4: a ring
 *              of live objects, each step frees the oldest and allocates
 *              anew), sizes 64, 256, 1024, 4096 B; ns per pair.
 *   free1m     seed 000 TEST #1 on a live cache: each of N threads (one per
 *              CPU, pinned) allocates 1M objects of 64..1024 B, then frees
 *              them all, timed; ms per thread.  Then each allocator's call
 *              that returns free memory to the OS, timed, with the RSS it
 *              leaves.
 *   growshrink seed 001's slab grow+shrink: allocate one slab's worth of
 *              objects, free them, give the memory back, ns per cycle, and
 *              the same cycle without the release for comparison.
 *   rss        resident set growth with 1M live 64 B objects, and what is left
 *              after freeing them all and releasing.
 *
 * Like with like.  memcg is its malloc shim, libmemcg-preload.so - what a
 * program runs on - and every figure that is judged puts it beside every
 * baseline the same way:
 *   - in one process (inproc.h): the shim and each baseline's library
 *     loaded side by side, each one's own malloc and free called through
 *     function pointers by the same loop, in alternating blocks (pair), or
 *     the frees of memcg's objects and of one baseline's alternating in
 *     blocks between barriers (free1m, one process per baseline); judged on
 *     wall time, CPU time printed beside it;
 *   - in a process of its own under LD_PRELOAD, malloc reached through the
 *     PLT as a program reaches it (the per-process tables; RSS and
 *     growshrink, which need a process per allocator).
 * A target "memcg <= the baselines" is judged on the worst ratio over every
 * baseline.  memcg's direct APIs - mcg_cache_alloc/free (`mcg-cache`) and
 * mcg_malloc/free (`mcg_malloc`) called straight from the static library -
 * are printed beside, labelled direct: no program reaches memcg that way.
 * With MCG_BENCH_OTHER_SHIM=PATH (baseline.h), the pair's process also
 * loads another build of the shim, `memcg-other`, and prints memcg's time
 * against it: two builds compared like with like, not judged.
 * Verdicts are PASS / TIE (within 3 % of the target) / MISS; a MISS is a
 * finding, not an error exit.
 *
 * The worker loops are written once (always-inline, over the kind of call)
 * and instantiated per kind, so each measured loop makes exactly the calls
 * of its kind: direct ones into the static library, the PLT's to the
 * preloaded malloc, or indirect ones through function pointers.
 */
#include <dlfcn.h>
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
#include "inproc.h"
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
#define MAX_FP 8 /* allocators in one in-process worker */
#define MAX_VALS (4 * MAX_FP * 16)

/* Full-mode time per timed loop; smoke mode uses fixed tiny counts instead. */
#define TARGET_NS 100000000.0

/* ================================================================ worker */

/* How a worker loop reaches its allocator; the kind is a constant per loop. */
struct w_api {
	enum bench_kind kind;
	mcg_cache_t *cache;         /* BENCH_MCG_CACHE */
	void *(*malloc_fn)(size_t); /* BENCH_FP */
	void (*free_fn)(void *);    /* BENCH_FP */
	const char *name;
};

W_INLINE void *w_alloc(enum bench_kind k, const struct w_api *a, void *(*m)(size_t), size_t size)
{
	if (k == BENCH_MCG_CACHE)
		return mcg_cache_alloc(a->cache);
	if (k == BENCH_MCG_KMALLOC)
		return mcg_malloc(size);
	if (k == BENCH_FP)
		return m(size);
	return malloc(size);
}

W_INLINE void w_free(enum bench_kind k, const struct w_api *a, void (*f)(void *), void *p)
{
	if (k == BENCH_MCG_CACHE)
		mcg_cache_free(a->cache, p);
	else if (k == BENCH_MCG_KMALLOC)
		mcg_free(p);
	else if (k == BENCH_FP)
		f(p);
	else
		free(p);
}

/* One store into each object: the allocation is used, nothing is elided. */
W_INLINE void w_touch(void *p, uint64_t i) { *(volatile char *)p = (char)i; }

/* The function pointers in locals, so the loop keeps them in registers. */
#define W_FNS(a)                                                                                   \
	void *(*m)(size_t) = (a)->malloc_fn;                                                       \
	void (*f)(void *) = (a)->free_fn

W_INLINE int pair_loop(enum bench_kind k, const struct w_api *a, size_t size, int inflight,
                       uint64_t iters)
{
	W_FNS(a);
	if (inflight == 1) {
		for (uint64_t i = 0; i < iters; i++) {
			void *p = w_alloc(k, a, m, size);
			if (!p)
				return -1;
			w_touch(p, i);
			w_free(k, a, f, p);
		}
		return 0;
	}
	void *ring[4];
	for (int j = 0; j < 4; j++) {
		ring[j] = w_alloc(k, a, m, size);
		if (!ring[j])
			return -1;
	}
	for (uint64_t i = 0; i < iters; i++) {
		unsigned j = (unsigned)i & 3;
		w_free(k, a, f, ring[j]);
		void *p = w_alloc(k, a, m, size);
		if (!p)
			return -1;
		w_touch(p, i);
		ring[j] = p;
	}
	for (int j = 0; j < 4; j++)
		w_free(k, a, f, ring[j]);
	return 0;
}

typedef int (*pair_fn)(const struct w_api *, size_t, int, uint64_t);
#define PAIR_INSTANCE(fn, kind)                                                                    \
	W_NOINLINE int fn(const struct w_api *a, size_t size, int inflight, uint64_t iters)        \
	{                                                                                          \
		return pair_loop(kind, a, size, inflight, iters);                                  \
	}
PAIR_INSTANCE(pair_cache, BENCH_MCG_CACHE)
PAIR_INSTANCE(pair_kmalloc, BENCH_MCG_KMALLOC)
PAIR_INSTANCE(pair_libc, BENCH_LIBC)
PAIR_INSTANCE(pair_fp, BENCH_FP)
static const pair_fn pair_fns[] = {pair_cache, pair_kmalloc, pair_libc, pair_fp};

/* Wall and CPU time of one timed loop, per step. */
struct w_time {
	double wall, cpu;
};

/* Time one pair loop; ns per pair, or wall < 0 on allocation failure. */
static struct w_time pair_time(const struct w_api *a, size_t size, int inflight, uint64_t iters)
{
	uint64_t t0 = bench_now_ns(), c0 = bench_thread_cpu_ns();
	if (pair_fns[a->kind](a, size, inflight, iters))
		return (struct w_time){-1, -1};
	uint64_t c1 = bench_thread_cpu_ns(), t1 = bench_now_ns();
	return (struct w_time){(double)(t1 - t0) / (double)iters,
	                       (double)(c1 - c0) / (double)iters};
}

/* Iterations for about TARGET_NS, from a measured @ns_per step. */
static uint64_t calibrate(double ns_per, uint64_t lo, uint64_t hi)
{
	double n = TARGET_NS / (ns_per > 0.1 ? ns_per : 0.1);
	return n < (double)lo ? lo : n > (double)hi ? hi : (uint64_t)n;
}

/*
 * The w_api of variant @name in a worker: the direct kinds, an allocator
 * loaded for function pointers (@fp: BENCH_FP), or the process's malloc.
 * A cache for mcg-cache is created for objects of @size.  Return 0 or -1.
 */
static int w_api_of(const char *name, enum bench_kind kind, size_t size, struct w_api *a)
{
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->name = name;
	if (kind == BENCH_MCG_CACHE)
		return (a->cache = mcg_cache_create("bench-slab", size, 0, 0, NULL)) ? 0 : -1;
	if (kind != BENCH_FP)
		return 0;
	struct bench_fp fp;
	if (bench_fp_open(name, &fp))
		return -1;
	a->malloc_fn = fp.malloc_fn;
	a->free_fn = fp.free_fn;
	return 0;
}

/* In an in-process worker: the kind of call for variant @name. */
static enum bench_kind fp_kind(const char *name)
{
	return !strcmp(name, "mcg-cache")    ? BENCH_MCG_CACHE
	       : !strcmp(name, "mcg_malloc") ? BENCH_MCG_KMALLOC
	                                     : BENCH_FP;
}

static void w_api_done(struct w_api *a)
{
	if (a->cache && mcg_cache_destroy(a->cache))
		fprintf(stderr, "memcg bench slab: %s: objects left at destroy\n", a->name);
	a->cache = NULL;
}

/* pair: SIZE INFLIGHT ITERS (0: calibrate to TARGET_NS).  Prints wall and CPU ns per pair. */
static int worker_pair(const struct w_api *a, int argc, char **argv)
{
	if (argc < 3)
		return 2;
	size_t size = strtoul(argv[0], NULL, 0);
	int inflight = atoi(argv[1]);
	uint64_t iters = strtoull(argv[2], NULL, 0);
	struct w_time t;
	if (iters == 0) {
		if (pair_time(a, size, inflight, 200000).wall < 0) /* warm up */
			return 1;
		t = pair_time(a, size, inflight, 1000000);
		iters = calibrate(t.wall, 1000000, 100000000);
	} else if (pair_time(a, size, inflight, iters / 10 + 1).wall < 0) {
		return 1;
	}
	t = pair_time(a, size, inflight, iters);
	if (t.wall < 0)
		return 1;
	printf("%.4f %.4f\n", t.wall, t.cpu);
	return 0;
}

/*
 * pair-fp: SIZE INFLIGHT BLOCK BLOCKS NAME... - the allocators NAME (the
 * first is the subject, memcg) in this one process (inproc.h; mcg-cache and
 * mcg_malloc: the direct calls), alternating in blocks of BLOCK pairs, the
 * order turned every block.  Prints for each NAME: the median over blocks
 * of its wall and CPU ns per pair, then the median over blocks of the
 * subject's / its wall time and CPU time, block by block.
 */
static int worker_pair_fp(int argc, char **argv)
{
	if (argc < 5)
		return 2;
	size_t size = strtoul(argv[0], NULL, 0);
	int inflight = atoi(argv[1]), blocks = atoi(argv[3]), nv = argc - 4;
	uint64_t block = strtoull(argv[2], NULL, 0);
	if (size == 0 || inflight < 1 || block == 0 || blocks < 1 || blocks > 4096 || nv > MAX_FP)
		return 2;
	struct w_api a[MAX_FP];
	for (int i = 0; i < nv; i++)
		if (w_api_of(argv[4 + i], fp_kind(argv[4 + i]), size, &a[i]))
			return 1;
	double *wall = calloc((size_t)blocks * nv * 2, sizeof(double));
	if (!wall)
		return 1;
	double *cpu = wall + (size_t)blocks * nv;
	for (int i = 0; i < nv; i++) /* warm up */
		if (pair_time(&a[i], size, inflight, block).wall < 0)
			return 1;
	for (int b = 0; b < blocks; b++) {
		for (int j = 0; j < nv; j++) {
			int i = (j + b) % nv;
			struct w_time t = pair_time(&a[i], size, inflight, block);
			if (t.wall < 0)
				return 1;
			wall[(size_t)i * blocks + b] = t.wall;
			cpu[(size_t)i * blocks + b] = t.cpu;
		}
	}
	for (int i = 0; i < nv; i++) {
		double *w = wall + (size_t)i * blocks, *c = cpu + (size_t)i * blocks;
		printf("%.4f %.4f %.4f %.4f\n", bench_median(w, blocks), bench_median(c, blocks),
		       bench_ratio_median(wall, w, blocks), bench_ratio_median(cpu, c, blocks));
	}
	for (int i = 0; i < nv; i++)
		w_api_done(&a[i]);
	free(wall);
	return 0;
}

/* ---- free1m: threads that allocate N objects each, then free them, timed ---- */

struct f1_shared {
	const struct w_api *api;
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

W_INLINE int f1_body(enum bench_kind k, struct f1_thread *t, void **objs)
{
	struct f1_shared *sh = t->sh;
	const struct w_api *a = sh->api;
	W_FNS(a);
	int err = 0;
	size_t n = sh->n;
	for (size_t i = 0; i < n; i++) {
		objs[i] = w_alloc(k, a, m, sh->size);
		if (!objs[i]) {
			err = -1;
			n = i;
			break;
		}
		w_touch(objs[i], i);
	}
	pthread_barrier_wait(&sh->ready);
	uint64_t t0 = bench_now_ns(), c0 = bench_thread_cpu_ns();
	for (size_t i = 0; i < n; i++)
		w_free(k, a, f, objs[i]);
	t->cpu_ms = (double)(bench_thread_cpu_ns() - c0) / 1e6;
	t->ms = (double)(bench_now_ns() - t0) / 1e6;
	return err;
}

typedef int (*f1_fn)(struct f1_thread *, void **);
#define F1_INSTANCE(fn, kind)                                                                      \
	W_NOINLINE int fn(struct f1_thread *t, void **objs) { return f1_body(kind, t, objs); }
F1_INSTANCE(f1_cache, BENCH_MCG_CACHE)
F1_INSTANCE(f1_kmalloc, BENCH_MCG_KMALLOC)
F1_INSTANCE(f1_libc, BENCH_LIBC)
F1_INSTANCE(f1_fp, BENCH_FP)
static const f1_fn f1_fns[] = {f1_cache, f1_kmalloc, f1_libc, f1_fp};

/* @n pointers from mmap (not from the allocator measured), or NULL. */
static void **ptr_array(size_t n)
{
	void **p = mmap(NULL, n * sizeof(void *), PROT_READ | PROT_WRITE,
	                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void *f1_thread_fn(void *arg)
{
	struct f1_thread *t = arg;
	bench_pin_to(t->cpu);
	void **objs = ptr_array(t->sh->n);
	if (!objs) {
		t->err = -1;
		pthread_barrier_wait(&t->sh->ready);
		return NULL;
	}
	t->err = f1_fns[t->sh->api->kind](t, objs);
	munmap(objs, t->sh->n * sizeof(void *));
	return NULL;
}

/* One free1m measurement through @a: @nthr threads, @n objects of @size
 * each; each thread's wall and CPU ms in @ms and @cpu_ms.  Return 0 or 1. */
static int f1_run(const struct w_api *a, size_t size, int nthr, size_t n, double *ms,
                  double *cpu_ms)
{
	struct f1_thread t[MAX_THREADS];
	struct f1_shared sh = {.api = a, .size = size, .n = n};
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
	for (int i = 0; i < nthr; i++) {
		ms[i] = t[i].ms;
		cpu_ms[i] = t[i].cpu_ms;
	}
	return err ? 1 : 0;
}

/* Give free memory back through @a's own call; the name of the call. */
static const char *w_release(const struct w_api *a)
{
	switch (a->kind) {
	case BENCH_MCG_CACHE: mcg_cache_shrink(a->cache); return "mcg_cache_shrink()";
	case BENCH_MCG_KMALLOC: mcg_slab_shrink_all(); return "mcg_slab_shrink_all()";
	default: return baseline_release(a->name, RTLD_DEFAULT);
	}
}

/*
 * free1m: SIZE THREADS NOBJ.  Prints each thread's free time in ms, wall
 * then CPU; then the KiB of RSS over the start left after the frees, the
 * ms the allocator's release call took, and the KiB left after it.
 */
static int worker_free1m(const struct w_api *a, int argc, char **argv)
{
	struct bench_f1_args f;
	if (!bench_f1_args(argc, argv, MAX_THREADS, 0, &f))
		return 2;
	double ms[MAX_THREADS], cpu_ms[MAX_THREADS];
	long start = bench_rss_kib();
	if (f1_run(a, f.size, f.threads, f.n, ms, cpu_ms))
		return 1;
	long freed = bench_rss_kib();
	uint64_t t0 = bench_now_ns();
	w_release(a);
	double rel_ms = (double)(bench_now_ns() - t0) / 1e6;
	long released = bench_rss_kib();
	bench_print_threads(ms, cpu_ms, f.threads);
	printf("%ld %.3f %ld\n", freed - start, rel_ms, released - start);
	return 0;
}

/*
 * free1m-fp: memcg's frees and one baseline's in this one process
 * (inproc.h), alternating in blocks.  Each thread allocates @n objects
 * from each, a block of each in turn; then the threads free them a block
 * at a time, every thread on the same allocator between two barriers, the
 * order turning every block.  Wall time counts waits on locks, as the seed
 * timed it; CPU time goes beside.
 */
#define FP_BLOCKS 16

struct fp_shared {
	const struct w_api *api;
	int nv;
	size_t size, n, block;
	pthread_barrier_t step;
};

struct fp_thread {
	struct fp_shared *sh;
	pthread_t tid;
	int cpu;
	int err;
	double ms[MAX_FP][FP_BLOCKS], cpu_ms[MAX_FP][FP_BLOCKS]; /* each block's frees */
};

W_INLINE bool fp_alloc_run(enum bench_kind k, const struct w_api *a, size_t size, void **objs,
                           size_t from, size_t to)
{
	W_FNS(a);
	(void)f;
	for (size_t i = from; i < to; i++) {
		if (!(objs[i] = w_alloc(k, a, m, size)))
			return false;
		w_touch(objs[i], i);
	}
	return true;
}

W_INLINE void fp_free_run(enum bench_kind k, const struct w_api *a, void **objs, size_t n)
{
	W_FNS(a);
	(void)m;
	for (size_t i = 0; i < n; i++)
		w_free(k, a, f, objs[i]);
}

W_NOINLINE bool fp_alloc_cache(const struct w_api *a, size_t sz, void **o, size_t i, size_t j)
{
	return fp_alloc_run(BENCH_MCG_CACHE, a, sz, o, i, j);
}
W_NOINLINE bool fp_alloc_fp(const struct w_api *a, size_t sz, void **o, size_t i, size_t j)
{
	return fp_alloc_run(BENCH_FP, a, sz, o, i, j);
}
W_NOINLINE void fp_free_cache(const struct w_api *a, void **o, size_t n)
{
	fp_free_run(BENCH_MCG_CACHE, a, o, n);
}
W_NOINLINE void fp_free_fp(const struct w_api *a, void **o, size_t n)
{
	fp_free_run(BENCH_FP, a, o, n);
}

static void *fp_thread_fn(void *arg)
{
	struct fp_thread *t = arg;
	struct fp_shared *sh = t->sh;
	bench_pin_to(t->cpu);
	size_t n = sh->n, block = sh->block, have[MAX_FP] = {0};
	void **objs[MAX_FP];
	bool ok = true;
	for (int j = 0; j < sh->nv; j++)
		ok &= (objs[j] = ptr_array(n)) != NULL;
	for (size_t at = 0; ok && at < n; at += block) {
		size_t to = at + block < n ? at + block : n;
		for (int j = 0; ok && j < sh->nv; j++) {
			const struct w_api *a = &sh->api[j];
			ok = a->kind == BENCH_MCG_CACHE
			             ? fp_alloc_cache(a, sh->size, objs[j], at, to)
			             : fp_alloc_fp(a, sh->size, objs[j], at, to);
			if (ok)
				have[j] = to;
		}
	}
	t->err = ok ? 0 : -1;
	/* Every thread waits at every step, whatever it holds. */
	for (size_t b = 0, at = 0; at < n; b++, at += block) {
		for (int i = 0; i < sh->nv; i++) {
			int j = (int)((b + (size_t)i) % (size_t)sh->nv);
			const struct w_api *a = &sh->api[j];
			size_t end = have[j] < at + block ? have[j] : at + block;
			pthread_barrier_wait(&sh->step);
			uint64_t t0 = bench_now_ns(), c0 = bench_thread_cpu_ns();
			if (end > at) {
				if (a->kind == BENCH_MCG_CACHE)
					fp_free_cache(a, objs[j] + at, end - at);
				else
					fp_free_fp(a, objs[j] + at, end - at);
			}
			t->cpu_ms[j][b] = (double)(bench_thread_cpu_ns() - c0) / 1e6;
			t->ms[j][b] = (double)(bench_now_ns() - t0) / 1e6;
		}
	}
	for (int j = 0; j < sh->nv; j++)
		if (objs[j])
			munmap(objs[j], n * sizeof(void *));
	return NULL;
}

/*
 * One round.  @ms, @cpu_ms: each allocator's frees, the mean over threads
 * of their sum over blocks.  @ratio, @cpu_ratio (for allocators 1..): the
 * median over blocks of allocator 0's block time / this one's (each block
 * the mean over threads), which a thread preempted in one block does not
 * move as it moves a sum.
 */
static int fp_round(const struct w_api *api, int nv, size_t size, int nthr, size_t n, double *ms,
                    double *cpu_ms, double *ratio, double *cpu_ratio)
{
	struct fp_thread *t = calloc((size_t)nthr, sizeof(*t));
	if (!t)
		return 1;
	struct fp_shared sh = {.api = api, .nv = nv, .size = size, .n = n};
	sh.block = (n + FP_BLOCKS - 1) / FP_BLOCKS;
	pthread_barrier_init(&sh.step, NULL, (unsigned)nthr);
	for (int i = 0; i < nthr; i++) {
		t[i].sh = &sh;
		t[i].cpu = bench_thread_cpu(i);
		bench_start_thread(&t[i].tid, fp_thread_fn, &t[i]);
	}
	int err = 0;
	for (int i = 0; i < nthr; i++) {
		pthread_join(t[i].tid, NULL);
		err |= t[i].err;
	}
	pthread_barrier_destroy(&sh.step);
	int nb = (int)((n + sh.block - 1) / sh.block);
	double w[MAX_FP][FP_BLOCKS] = {{0}}, c[MAX_FP][FP_BLOCKS] = {{0}};
	for (int j = 0; j < nv; j++) {
		ms[j] = cpu_ms[j] = 0;
		for (int b = 0; b < nb; b++) {
			for (int i = 0; i < nthr; i++) {
				w[j][b] += t[i].ms[j][b] / nthr;
				c[j][b] += t[i].cpu_ms[j][b] / nthr;
			}
			ms[j] += w[j][b];
			cpu_ms[j] += c[j][b];
		}
		ratio[j] = bench_ratio_median(w[0], w[j], nb);
		cpu_ratio[j] = bench_ratio_median(c[0], c[j], nb);
	}
	free(t);
	return err ? 1 : 0;
}

/*
 * free1m-fp: SIZE THREADS NOBJ ROUNDS NAME...  Per round: each NAME's wall
 * ms and CPU ms, then for each NAME after the first the median block ratio
 * of the first to it, wall and CPU (fp_round()).
 */
static int worker_free1m_fp(int argc, char **argv)
{
	struct bench_f1_args f;
	if (!bench_f1_args(argc, argv, MAX_THREADS, 64, &f) || argc < 5 || argc - 4 > MAX_FP)
		return 2;
	int nv = argc - 4;
	struct w_api a[MAX_FP];
	for (int i = 0; i < nv; i++) {
		/* One loop per kind of call: the cache API, or function pointers. */
		enum bench_kind k = fp_kind(argv[4 + i]);
		if (k == BENCH_MCG_KMALLOC)
			return 2;
		if (w_api_of(argv[4 + i], k, f.size, &a[i]))
			return 1;
	}
	for (int r = 0; r < f.rounds; r++) {
		double ms[MAX_FP], cpu_ms[MAX_FP], q[MAX_FP], qc[MAX_FP];
		if (fp_round(a, nv, f.size, f.threads, f.n, ms, cpu_ms, q, qc))
			return 1;
		for (int i = 0; i < nv; i++)
			printf("%.4f %.4f ", ms[i], cpu_ms[i]);
		for (int i = 1; i < nv; i++)
			printf("%.4f %.4f ", q[i], qc[i]);
		printf("\n");
	}
	for (int i = 0; i < nv; i++)
		w_api_done(&a[i]);
	return 0;
}

/* ---- growshrink: fill a fresh slab, empty it, give the memory back ---- */

W_INLINE int gs_loop(enum bench_kind k, const struct w_api *a, size_t size, void **objs, size_t n,
                     uint64_t cycles, bool release)
{
	W_FNS(a);
	for (uint64_t cyc = 0; cyc < cycles; cyc++) {
		for (size_t i = 0; i < n; i++) {
			objs[i] = w_alloc(k, a, m, size);
			if (!objs[i])
				return -1;
			w_touch(objs[i], i);
		}
		for (size_t i = 0; i < n; i++)
			w_free(k, a, f, objs[i]);
		if (release)
			w_release(a);
	}
	return 0;
}

typedef int (*gs_fn)(const struct w_api *, size_t, void **, size_t, uint64_t, bool);
#define GS_INSTANCE(fn, kind)                                                                      \
	W_NOINLINE int fn(const struct w_api *a, size_t size, void **objs, size_t n,               \
	                  uint64_t cycles, bool release)                                           \
	{                                                                                          \
		return gs_loop(kind, a, size, objs, n, cycles, release);                           \
	}
GS_INSTANCE(gs_cache, BENCH_MCG_CACHE)
GS_INSTANCE(gs_kmalloc, BENCH_MCG_KMALLOC)
GS_INSTANCE(gs_libc, BENCH_LIBC)
static const gs_fn gs_fns[] = {gs_cache, gs_kmalloc, gs_libc};

/* Wall ns per cycle (CPU time would miss the release's page faults' waits). */
static double gs_time(const struct w_api *a, size_t size, void **objs, size_t n, uint64_t cycles,
                      bool release)
{
	uint64_t t0 = bench_now_ns();
	if (gs_fns[a->kind](a, size, objs, n, cycles, release))
		return -1;
	return (double)(bench_now_ns() - t0) / (double)cycles;
}

/*
 * growshrink: SIZE NOBJ CYCLES (0: calibrate).  Prints ns per cycle with the
 * release call, then ns per cycle without it.
 */
static int worker_growshrink(struct w_api *a, int argc, char **argv)
{
	if (argc < 3)
		return 2;
	size_t size = strtoul(argv[0], NULL, 0);
	size_t n = strtoul(argv[1], NULL, 0);
	uint64_t cycles = strtoull(argv[2], NULL, 0);
	void **objs = ptr_array(n);
	if (!objs)
		return 1;
	double with, without;
	if (cycles == 0) {
		if ((with = gs_time(a, size, objs, n, 20, true)) < 0)
			return 1;
		uint64_t cyc_with = calibrate(with, 20, 10000000);
		if ((without = gs_time(a, size, objs, n, 20, false)) < 0)
			return 1;
		uint64_t cyc_without = calibrate(without, 20, 10000000);
		with = gs_time(a, size, objs, n, cyc_with, true);
		without = gs_time(a, size, objs, n, cyc_without, false);
	} else {
		with = gs_time(a, size, objs, n, cycles, true);
		without = gs_time(a, size, objs, n, cycles, false);
	}
	if (with < 0 || without < 0)
		return 1;
	printf("%.2f %.2f\n", with, without);
	munmap(objs, n * sizeof(void *));
	return 0;
}

/* ---- rss: resident set with N live 64 B objects, and after free + release ---- */

W_INLINE int rss_fill(enum bench_kind k, const struct w_api *a, void **objs, size_t n, bool fill)
{
	W_FNS(a);
	for (size_t i = 0; i < n; i++) {
		if (!fill) {
			w_free(k, a, f, objs[i]);
			continue;
		}
		if (!(objs[i] = w_alloc(k, a, m, 64)))
			return -1;
		w_touch(objs[i], i);
	}
	return 0;
}

typedef int (*rss_fn)(const struct w_api *, void **, size_t, bool);
#define RSS_INSTANCE(fn, kind)                                                                     \
	W_NOINLINE int fn(const struct w_api *a, void **objs, size_t n, bool fill)                 \
	{                                                                                          \
		return rss_fill(kind, a, objs, n, fill);                                           \
	}
RSS_INSTANCE(rss_cache, BENCH_MCG_CACHE)
RSS_INSTANCE(rss_kmalloc, BENCH_MCG_KMALLOC)
RSS_INSTANCE(rss_libc, BENCH_LIBC)
static const rss_fn rss_fns[] = {rss_cache, rss_kmalloc, rss_libc};

/* rss: NOBJ.  Prints RSS in KiB at the start, with the objects live, and after. */
static int worker_rss(struct w_api *a, int argc, char **argv)
{
	if (argc < 1)
		return 2;
	size_t n = strtoul(argv[0], NULL, 0);
	void **objs = ptr_array(n);
	if (!objs)
		return 1;
	memset(objs, 0, n * sizeof(void *)); /* resident before the start figure */
	long start = bench_rss_kib();
	if (rss_fns[a->kind](a, objs, n, true))
		return 1;
	long live = bench_rss_kib();
	rss_fns[a->kind](a, objs, n, false);
	w_release(a);
	long after = bench_rss_kib();
	printf("%ld %ld %ld\n", start, live, after);
	return 0;
}

/* `memcg bench slab --worker CASE VARIANT ARGS...`: one measurement; exit status 0 or not.
 * VARIANT is "fp" for the in-process cases, whose allocators are named in ARGS. */
static int worker_main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const char *cas = argv[0], *variant = argv[1];
	alarm(600); /* a hung worker dies rather than hanging the benchmark */
	argc -= 2;
	argv += 2;
	if (!strcmp(cas, "pair-fp"))
		return worker_pair_fp(argc, argv);
	if (!strcmp(cas, "free1m-fp"))
		return worker_free1m_fp(argc, argv);
	enum bench_kind k = !strcmp(variant, "mcg-cache")    ? BENCH_MCG_CACHE
	                    : !strcmp(variant, "mcg_malloc") ? BENCH_MCG_KMALLOC
	                                                     : BENCH_LIBC;
	if (baseline_check_self(variant))
		return 3;
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
	/* Every other case: SIZE first (rss: 64 B objects). */
	size_t size = !strcmp(cas, "rss") ? 64 : argc ? strtoul(argv[0], NULL, 0) : 0;
	struct w_api a;
	if (size == 0 || w_api_of(variant, k, size, &a))
		return 2;
	int rc = 2;
	if (!strcmp(cas, "pair"))
		rc = worker_pair(&a, argc, argv);
	else if (!strcmp(cas, "free1m"))
		rc = worker_free1m(&a, argc, argv);
	else if (!strcmp(cas, "growshrink"))
		rc = worker_growshrink(&a, argc, argv);
	else if (!strcmp(cas, "rss"))
		rc = worker_rss(&a, argc, argv);
	else
		fprintf(stderr, "memcg bench slab: unknown worker case '%s'\n", cas);
	w_api_done(&a);
	return rc;
}

/* ================================================================ parent */

/* All samples of one per-process case: [config][variant][run][value]. */
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
	struct bench_variant var[BENCH_MAX_VARIANTS]; /* each in its own process */
	int nvar;
	const char *fp[MAX_FP]; /* in one process: memcg first, the baselines, the direct APIs */
	int nfp;
	int threads;
	size_t gs_objs[NGS];
	int met, missed;
};

/* Worker arguments of config @cfg of a case, into @a (strings in @buf). */
typedef int (*args_fn)(const struct ctx *x, int cfg, char buf[][32], const char **a);

/*
 * measure - run every config of a per-process case for every variant and
 * run, variants rotated per run and config.  @want: values each worker must
 * print.  Return 0, or -1 if a worker failed.
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

/* The index of per-process variant @name, or -1. */
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

/* Is in-process allocator @i a direct API of memcg's (mcg-cache, mcg_malloc)? */
static bool fp_is_direct(const struct ctx *x, int i)
{
	return !strcmp(x->fp[i], "mcg-cache") || !strcmp(x->fp[i], "mcg_malloc");
}

/* Is in-process allocator @i a baseline (not memcg's shim or another build
 * of it, not a direct API)? */
static bool fp_is_baseline(const struct ctx *x, int i)
{
	return i > 0 && !fp_is_direct(x, i) && strcmp(x->fp[i], BENCH_OTHER_SHIM);
}

/* Record a target: its verdict, counted, and a JSON line.  Return the verdict's name. */
static const char *target(struct ctx *x, const char *variant, const char *name, double value,
                          enum bench_verdict v)
{
	if (bench_verdict_met(v))
		x->met++;
	else
		x->missed++;
	if (x->o.json) {
		char extra[200];
		snprintf(extra, sizeof(extra), "\"name\":\"%s\",\"pass\":%s,\"verdict\":\"%s\"",
		         name, bench_verdict_met(v) ? "true" : "false", bench_verdict_name(v));
		bench_emit_json("target", variant, extra, value, "ratio");
	}
	return bench_verdict_name(v);
}

static void print_variant_header(const struct ctx *x, int width)
{
	for (int i = 0; i < x->nvar; i++)
		printf(" %*s", width, x->var[i].name);
}

/* A worker for the in-process cases: no preload, glibc is the process's malloc. */
static const struct bench_variant fp_worker = {"fp", BENCH_LIBC, NULL, false, false};

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

/* The in-process figures of the pairs: [cfg][run][allocator][4] as pair-fp prints them. */
static double *fp_at(const struct ctx *x, double *q, int cfg, int run, int i)
{
	return q + (((size_t)cfg * x->o.runs + run) * x->nfp + i) * 4;
}

/* Run pair-fp for every config and run.  Return 0, or -1 if a worker failed. */
static int measure_pair_fp(struct ctx *x, double *q)
{
	for (int r = 0; r < x->o.runs; r++) {
		for (int cfg = 0; cfg < NPAIR; cfg++) {
			char buf[4][32];
			snprintf(buf[0], 32, "%zu", pair_sizes[cfg / 2]);
			snprintf(buf[1], 32, "%d", pair_inflight[cfg % 2]);
			snprintf(buf[2], 32, "%d", x->o.smoke ? 2000 : 50000);
			snprintf(buf[3], 32, "%d", x->o.smoke ? 4 : 60);
			const char *a[24] = {"bench", "slab", "--worker", "pair-fp", "fp",
			                     buf[0],  buf[1], buf[2],     buf[3]};
			int na = 9;
			for (int i = 0; i < x->nfp; i++)
				a[na++] = x->fp[i];
			a[na] = NULL;
			double v[4 * MAX_FP];
			if (bench_worker_run(&fp_worker, a, v, 4 * MAX_FP) != 4 * x->nfp) {
				fprintf(stderr, "memcg bench: pair-fp failed\n");
				return -1;
			}
			for (int i = 0; i < x->nfp; i++)
				memcpy(fp_at(x, q, cfg, r, i), v + 4 * i, 4 * sizeof(double));
		}
		if (!x->o.smoke)
			bench_progress("pair-fp: run %d/%d done", r + 1, x->o.runs);
	}
	return 0;
}

/* Median over runs of value @k of allocator @i at @cfg. */
static double fp_median(const struct ctx *x, double *q, int cfg, int i, int k)
{
	double tmp[1024];
	int n = 0;
	for (int r = 0; r < x->o.runs && n < 1024; r++)
		tmp[n++] = fp_at(x, q, cfg, r, i)[k];
	return bench_median(tmp, n);
}

static void print_fp_header(const struct ctx *x)
{
	for (int i = 0; i < x->nfp; i++)
		printf(" %*s", i == 0 ? 7 : 10, x->fp[i]);
}

/* With another build of the shim loaded (baseline.h): memcg's time / its,
 * per configuration, for information. */
static void pair_other_summary(const struct ctx *x, double *q)
{
	for (int i = 0; i < x->nfp; i++) {
		if (strcmp(x->fp[i], BENCH_OTHER_SHIM))
			continue;
		printf("%s (%s, not judged): memcg's time / its, block by block, median over "
		       "processes:",
		       BENCH_OTHER_SHIM, baseline_lib(BENCH_OTHER_SHIM));
		for (int cfg = 0; cfg < NPAIR; cfg++)
			printf(" %zu/%d %.3f", pair_sizes[cfg / 2], pair_inflight[cfg % 2],
			       fp_median(x, q, cfg, i, 2));
		printf("\n");
	}
}

static int case_pair(struct ctx *x)
{
	struct matrix m;
	double *q = calloc((size_t)NPAIR * x->o.runs * x->nfp * 4, sizeof(double));
	if (!q || measure_pair_fp(x, q) || measure(x, "pair", NPAIR, 2, pair_args, &m)) {
		free(q);
		return -1;
	}
	int is = var_index(x, "memcg");
	if (!x->o.json) {
		printf("\n== pair: alloc+free pairs, wall ns per pair (median of %d process%s; "
		       "lower is better) ==\n",
		       x->o.runs, x->o.runs > 1 ? "es" : "");
		printf("in one process, every allocator through function pointers, alternating "
		       "blocks (judged; mcg-cache, mcg_malloc: direct calls, for information):\n");
		printf("%5s %8s", "size", "inflight");
		print_fp_header(x);
		printf(" | %6s %-9s %7s %s\n", "worst", "vs", "cpu", "target");
	}
	for (int cfg = 0; cfg < NPAIR; cfg++) {
		size_t size = pair_sizes[cfg / 2];
		int inflight = pair_inflight[cfg % 2];
		double ratio[MAX_FP], cpu_ratio[MAX_FP];
		bool use[MAX_FP];
		for (int i = 0; i < x->nfp; i++) {
			ratio[i] = fp_median(x, q, cfg, i, 2);
			cpu_ratio[i] = fp_median(x, q, cfg, i, 3);
			use[i] = fp_is_baseline(x, i);
			if (!x->o.json)
				continue;
			char extra[240];
			snprintf(extra, sizeof(extra),
			         "\"model\":\"inproc\",\"size\":%zu,\"inflight\":%d,\"runs\":%d,"
			         "\"cpu_ns\":%.4f,\"direct\":%s,\"ratio\":%.4f,\"cpu_ratio\":%.4f",
			         size, inflight, x->o.runs, fp_median(x, q, cfg, i, 1),
			         fp_is_direct(x, i) ? "true" : "false", ratio[i], cpu_ratio[i]);
			bench_emit_json("pair", x->fp[i], extra, fp_median(x, q, cfg, i, 0), "ns");
		}
		int who;
		double worst = bench_worst(ratio, use, x->nfp, &who);
		char tname[48];
		snprintf(tname, sizeof(tname), "pair-%zu-%d", size, inflight);
		const char *t = target(x, "memcg", tname, worst, bench_judge_le(worst, 1.0));
		if (!x->o.json) {
			printf("%5zu %8d", size, inflight);
			for (int i = 0; i < x->nfp; i++)
				printf(" %*.2f", i == 0 ? 7 : 10, fp_median(x, q, cfg, i, 0));
			printf(" | %6.3f %-9s %7.3f %s\n", worst, who >= 0 ? x->fp[who] : "-",
			       who >= 0 ? cpu_ratio[who] : 0, t);
		}
	}
	if (!x->o.json) {
		printf("target: memcg (its shim's malloc/free) <= every baseline: \"worst\" is the "
		       "median over processes of memcg's time / the baseline's, block by block, "
		       "for the baseline memcg fares worst with (\"cpu\": the same ratio in CPU "
		       "time); TIE: within 3 %%\n");
		pair_other_summary(x, q);
		printf("each allocator in its own process, malloc through the PLT (memcg: its "
		       "shim under LD_PRELOAD; mcg-cache, mcg_malloc: direct calls), for "
		       "information:\n%5s %8s",
		       "size", "inflight");
		print_variant_header(x, 10);
		printf(" | %-9s %s\n", "best", "memcg/best");
	}
	for (int cfg = 0; cfg < NPAIR; cfg++) {
		size_t size = pair_sizes[cfg / 2];
		int inflight = pair_inflight[cfg % 2];
		double val[BENCH_MAX_VARIANTS];
		for (int i = 0; i < x->nvar; i++) {
			val[i] = mat_median(&m, cfg, i, 0);
			if (!x->o.json)
				continue;
			char extra[200];
			snprintf(extra, sizeof(extra),
			         "\"model\":\"process\",\"size\":%zu,\"inflight\":%d,\"runs\":%d,"
			         "\"cpu_ns\":%.4f,\"direct\":%s",
			         size, inflight, x->o.runs, mat_median(&m, cfg, i, 1),
			         x->var[i].direct ? "true" : "false");
			bench_emit_json("pair", x->var[i].name, extra, val[i], "ns");
		}
		int b = best_baseline(x, val);
		if (!x->o.json) {
			printf("%5zu %8d", size, inflight);
			for (int i = 0; i < x->nvar; i++)
				printf(" %10.2f", val[i]);
			printf(" | %-9s %10.3f\n", b >= 0 ? x->var[b].name : "-",
			       is >= 0 && b >= 0 ? val[is] / val[b] : 0);
		}
	}
	free(q);
	mat_free(&m);
	return 0;
}

/* The call that gives per-process variant @i's free memory back. */
static const char *release_call(const struct ctx *x, int i)
{
	if (!x->var[i].direct)
		return baseline_release_name(x->var[i].name);
	return x->var[i].kind == BENCH_MCG_CACHE ? "mcg_cache_shrink()" : "mcg_slab_shrink_all()";
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

/* One free1m-fp process per run for memcg against in-process allocator @b at
 * size @cfg: the median over runs of the median block ratio memcg / @b in
 * wall (*@wall) and CPU (*@cpu) time.  Return 0, or -1 if a worker failed. */
static int free1m_fp(struct ctx *x, int cfg, int b, double *wall, double *cpu)
{
	double rw[64], rc[64];
	int n = 0;
	for (int r = 0; r < x->o.runs && n < 64; r++) {
		char buf[4][32];
		const char *a[12] = {"bench", "slab", "--worker", "free1m-fp", "fp"};
		free1m_args(x, cfg, buf, a + 5);
		a[8] = "1"; /* rounds */
		a[9] = x->fp[0];
		a[10] = x->fp[b];
		a[11] = NULL;
		double v[6];
		if (bench_worker_run(&fp_worker, a, v, 6) != 6) {
			fprintf(stderr, "memcg bench: free1m-fp/%s failed\n", x->fp[b]);
			return -1;
		}
		rw[n] = v[4];
		rc[n++] = v[5];
	}
	*wall = bench_median(rw, n);
	*cpu = bench_median(rc, n);
	return 0;
}

static int case_free1m(struct ctx *x)
{
	struct matrix m;
	int t = x->threads;
	if (measure(x, "free1m", NFREE1M, 2 * t + 3, free1m_args, &m))
		return -1;
	if (!x->o.json)
		printf("\n== free1m: each of %d threads frees %zu objects; memcg's frees against "
		       "each baseline's in one process, alternating in blocks of 1/%d, wall time "
		       "(judged; median of %d process%s) ==\n",
		       t, free1m_objs(x), FP_BLOCKS, x->o.runs, x->o.runs > 1 ? "es" : "");
	if (!x->o.json && x->nfp) {
		printf("%5s", "size");
		for (int i = 1; i < x->nfp; i++)
			if (fp_is_baseline(x, i))
				printf(" %15s", x->fp[i]);
		printf(" | %6s %-9s %s\n", "worst", "vs", "target");
	}
	for (int cfg = 0; cfg < NFREE1M && x->nfp; cfg++) {
		size_t size = free1m_sizes[cfg];
		double wall[MAX_FP], cpu[MAX_FP];
		bool use[MAX_FP];
		if (!x->o.json)
			printf("%5zu", size);
		for (int i = 0; i < x->nfp; i++) {
			use[i] = fp_is_baseline(x, i);
			wall[i] = cpu[i] = 0;
			if (!use[i])
				continue;
			if (free1m_fp(x, cfg, i, &wall[i], &cpu[i])) {
				mat_free(&m);
				return -1;
			}
			if (x->o.json) {
				char extra[200];
				snprintf(extra, sizeof(extra),
				         "\"model\":\"inproc\",\"size\":%zu,\"threads\":%d,"
				         "\"objects\":%zu,\"runs\":%d,\"vs\":\"%s\",\"cpu_ratio\":%"
				         ".4f",
				         size, t, free1m_objs(x), x->o.runs, x->fp[i], cpu[i]);
				bench_emit_json("free1m", "memcg", extra, wall[i], "ratio");
			} else {
				char cell[32];
				snprintf(cell, sizeof(cell), "%.3f (cpu %.3f)", wall[i], cpu[i]);
				printf(" %15s", cell);
			}
		}
		int who;
		double worst = bench_worst(wall, use, x->nfp, &who);
		char tname[48];
		snprintf(tname, sizeof(tname), "free1m-%zu", size);
		const char *tv = target(x, "memcg", tname, worst, bench_judge_le(worst, 1.0));
		if (!x->o.json)
			printf(" | %6.3f %-9s %s\n", worst, who >= 0 ? x->fp[who] : "-", tv);
	}
	if (!x->o.json) {
		printf("cells: memcg's wall time / the baseline's, the median over blocks of each "
		       "block's ratio (CPU time beside); target: memcg (its shim's free) <= every "
		       "baseline, judged on the worst; TIE: within 3 %%\n");
		printf("each allocator in its own process (memcg: its shim under LD_PRELOAD; "
		       "mcg-cache, mcg_malloc: direct calls), ms per thread, wall (median of the "
		       "mean; +- stddev over all threads and runs), for information:\n%5s",
		       "size");
		print_variant_header(x, 13);
		printf("\n");
	}
	for (int cfg = 0; cfg < NFREE1M; cfg++) {
		size_t size = free1m_sizes[cfg];
		if (!x->o.json)
			printf("%5zu", size);
		for (int i = 0; i < x->nvar; i++) {
			double mean, sd, val = mat_median(&m, cfg, i, -t);
			pooled(&m, cfg, i, t, &mean, &sd);
			double cpu[1024];
			int nc = 0;
			for (int r = 0; r < m.runs && nc < 1024; r++)
				cpu[nc++] = bench_mean(mat_at(&m, cfg, i, r) + t, t);
			if (x->o.json) {
				char extra[240];
				snprintf(extra, sizeof(extra),
				         "\"model\":\"process\",\"size\":%zu,\"threads\":%d,"
				         "\"objects\":%zu,\"runs\":%d,\"stddev\":%.3f,\"cpu_ms\":%."
				         "3f,"
				         "\"direct\":%s",
				         size, t, free1m_objs(x), x->o.runs, sd,
				         bench_median(cpu, nc),
				         x->var[i].direct ? "true" : "false");
				bench_emit_json("free1m", x->var[i].name, extra, val, "ms");
			} else {
				char cell[32];
				snprintf(cell, sizeof(cell), "%.1f+-%.1f", val, sd);
				printf(" %13s", cell);
			}
		}
		if (!x->o.json)
			printf("\n");
	}
	/* Memory back: what each allocator's release call costs and leaves, after the frees. */
	if (!x->o.json)
		printf("after the frees, each allocator's release call: ms it took / MiB of RSS "
		       "over the start before it / after it (median over runs):\n%5s",
		       "size");
	if (!x->o.json)
		print_variant_header(x, 19);
	if (!x->o.json)
		printf("\n");
	for (int cfg = 0; cfg < NFREE1M; cfg++) {
		size_t size = free1m_sizes[cfg];
		if (!x->o.json)
			printf("%5zu", size);
		for (int i = 0; i < x->nvar; i++) {
			double before = mat_median(&m, cfg, i, 2 * t) / 1024.0,
			       rel = mat_median(&m, cfg, i, 2 * t + 1),
			       after = mat_median(&m, cfg, i, 2 * t + 2) / 1024.0;
			const char *call = release_call(x, i);
			if (x->o.json) {
				char extra[240];
				snprintf(extra, sizeof(extra),
				         "\"model\":\"process\",\"size\":%zu,\"threads\":%d,"
				         "\"metric\":"
				         "\"release\",\"call\":\"%s\",\"rss_before_mib\":%.1f,"
				         "\"rss_after_mib\":%.1f",
				         size, t, call, before, after);
				bench_emit_json("free1m", x->var[i].name, extra, rel, "ms");
			} else {
				char cell[40];
				snprintf(cell, sizeof(cell), "%.1f / %.0f / %.0f", rel, before,
				         after);
				printf(" %19s", cell);
			}
		}
		if (!x->o.json)
			printf("\n");
	}
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
	int im = var_index(x, "mcg-cache");
	for (int cfg = 0; cfg < NGS; cfg++) {
		char size[32];
		snprintf(size, sizeof(size), "%zu", gs_sizes[cfg]);
		const char *a[] = {"bench",     "slab", "--worker", "geometry",
		                   "mcg-cache", size,   NULL};
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
		       "release; wall ns per cycle (median of %d run%s) ==\n",
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
			const char *call = release_call(x, i);
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
		       "a new one (no target; for information)\n");
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
	int im = var_index(x, "memcg"), ic = var_index(x, "mcg-cache");
	if (!x->o.json) {
		printf("\n== rss: %zu live 64 B objects (median of %d run%s) ==\n", rss_objs(x),
		       x->o.runs, x->o.runs > 1 ? "s" : "");
		printf("  %-12s %10s %12s %10s %16s  %s\n", "variant", "RSS MiB", "growth MiB",
		       "vs leanest", "after free KiB", "release call");
	}
	for (int i = 0; i < x->nvar; i++) {
		const char *call = release_call(x, i);
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
	if (im < 0) { /* no shim (a sanitizer build): the direct API stands in, labelled */
		im = ic;
	}
	double r = grow[im] / grow[b];
	const char *t1 = target(x, x->var[im].name, "rss-live", r, bench_judge_le(r, 1.1));
	const char *t2 = target(x, x->var[im].name, "rss-after-release", left[im],
	                        bench_judge_le(left[im], 1024));
	if (!x->o.json)
		printf("growth = RSS with the objects live - RSS at the start; after free = RSS "
		       "after free + release - RSS at the start\n"
		       "target: %s growth <= 1.1x the leanest baseline (%s): %.2fx %s; "
		       "back within 1024 KiB after free + release: %.0f KiB %s "
		       "(mcg-cache, direct: %.2fx, %.0f KiB, for information)\n",
		       x->var[im].name, x->var[b].name, r, t1, left[im], t2, grow[ic] / grow[b],
		       left[ic]);
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
	/* In one process: memcg's shim first, then every baseline, then the direct APIs. */
	if (var_index(x, "memcg") >= 0) {
		x->fp[x->nfp++] = "memcg";
		if (baseline_lib(BENCH_OTHER_SHIM))
			x->fp[x->nfp++] = BENCH_OTHER_SHIM;
		for (int i = 0; i < x->nvar && x->nfp < MAX_FP - 2; i++)
			if (x->var[i].baseline)
				x->fp[x->nfp++] = x->var[i].name;
		x->fp[x->nfp++] = "mcg-cache";
		x->fp[x->nfp++] = "mcg_malloc";
	} else {
		fprintf(stderr, "memcg bench slab: no memcg shim: the judged in-process "
		                "comparisons are skipped\n");
	}
	uint64_t t0 = bench_now_ns();
	if (!x->o.json) {
		printf("memcg bench slab%s: variants:",
		       x->o.smoke ? " (smoke: figures mean nothing)" : "");
		for (int i = 0; i < x->nvar; i++)
			printf(" %s%s", x->var[i].name, x->var[i].direct ? " (direct)" : "");
		printf("\n");
	}
#define WANT(name) (!only || !strcmp(only, name))
	rc = (WANT("pair") && case_pair(x)) || (WANT("free1m") && case_free1m(x)) ||
	     (WANT("growshrink") && case_growshrink(x)) || (WANT("rss") && case_rss(x));
#undef WANT
	if (!rc && !x->o.json)
		printf("\ntargets: %d met (PASS or TIE), %d missed (%.0f s)\n", x->met, x->missed,
		       (double)(bench_now_ns() - t0) / 1e9);
	free(x);
	return rc ? 1 : 0;
}
