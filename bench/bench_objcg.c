/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_objcg.c - `memcg bench objcg`: what accounting an object to a
 * memory group costs, and what removing the group costs its frees (seed
 * 000, docs/seeds.md).
 *
 * Cases
 *   free1m  seed 000 TEST #1, reproduced: each of N threads (one per CPU,
 *           pinned) allocates 1M objects of 64..1024 B from one shared cache,
 *           then, after a barrier, frees them all, timed; ms per thread,
 *           mean +- stddev.  Variants: `unaccounted` (a plain cache),
 *           `alive` (an MCG_CACHE_ACCOUNT cache, each thread in a group
 *           (mcg_group_enter) while it allocates; the group stays),
 *           `removed` (the same, but the group is removed and its last
 *           reference put after the allocations, before the frees: seed
 *           000's "dead cache") and `mixed` (an MCG_CACHE_ACCOUNT cache
 *           whose objects are charged to 8 groups in turn, object by object,
 *           so every slab holds objects of 8 groups side by side - a
 *           multi-tenant server's slabs).
 *   pair    alloc+free pairs of 64 B in one thread, ns per pair: a plain
 *           cache against an accounted one (the current group, and an
 *           explicit group), mcg_malloc against mcg_malloc_account, and 8
 *           groups taking turns: a ring of 8 live objects, each step frees
 *           the oldest and allocates for another group than the freed
 *           object's (`accounted-mixed8`), against the same ring
 *           unaccounted (`unaccounted-ring8`).
 *   mem     1M live 64 B objects, accounted against unaccounted: the bytes
 *           per object accounting adds, from the resident set and from
 *           memory.stat (slab bytes - 64 x objects).
 *   tenants 1, 8, 16 or 64 groups take turns, one accounted 64 B object
 *           each: every step frees a group's object and allocates its next,
 *           ns per step.  More groups than a CPU's stock words (56,
 *           group/objcg.h) is the many-tenant case; no target, for information.
 *
 * Like with like: every variant is memcg through the same direct calls into
 * the static library, only the accounting differs.  Each measurement is one
 * worker child (baseline.h), the variants visited in a rotated order in
 * every run, each figure the median over the runs.  The targets are judged
 * in one process, where what moves this VM's speed between processes (up to
 * 2x) reaches every variant alike: the free1m variants' frees alternate in
 * blocks (`free1m-mix`), each accounted pair alternates with its
 * unaccounted counterpart (`pair-ab`).  Everything is timed in wall time,
 * so that waits on locks count; CPU time goes beside.  Every worker also
 * checks that the counters are exact at the end: after all frees and
 * mcg_group_drain_stocks() the root's memory.current and
 * nr_dying_descendants read 0; a worker that finds otherwise fails (exit
 * 1), the bench with it.  Verdicts are PASS / TIE (within 3 %) / MISS; a
 * MISS is a finding, not an error exit.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "baseline.h"
#include "harness.h"
#include "memcg/group.h"
#include "memcg/kmalloc.h"
#include "memcg/slab.h"

#define W_INLINE static inline __attribute__((always_inline))
#define W_NOINLINE static __attribute__((noinline))

static const size_t free1m_sizes[] = {64, 128, 256, 512, 1024};
#define NFREE1M 5
#define MILLION (1u << 20)
#define MAX_THREADS 64
#define MAX_VALS (2 * MAX_THREADS + 2)
#define PAIR_SIZE 64
#define MEM_SIZE 64

/* Full-mode time per timed pair loop. */
#define TARGET_NS 100000000.0

/* Targets. */
#define T_REMOVED_ALIVE 1.05 /* free1m: removed / alive, every size */
#define T_ALIVE_UNACC 1.3    /* free1m: alive / unaccounted, every size */
#define T_MIXED_UNACC 1.5    /* free1m: mixed / unaccounted, every size */
#define T_PAIR 1.3           /* pair: accounted / unaccounted */
#define T_PAIR_MIXED 1.5     /* pair: accounted-mixed8 / unaccounted-ring8 */
#define MIXED_GROUPS 8       /* the groups of the mixed variants */
#define T_BYTES 8.0          /* mem: bytes per object */

/* ================================================================ worker */

/* memory.current of @g in bytes, or -1. */
static long long current_of(mcg_group_t *g)
{
	char b[64];
	if (mcg_group_read(g, "memory.current", b, sizeof(b)) < 0)
		return -1;
	return atoll(b);
}

/*
 * The end-of-worker check: every object freed and every group gone, the
 * root's memory.current must read 0 once the stocks are drained, and no
 * removed group may linger.  Return 0, or 1 with a note on stderr.
 */
static int check_exact(const char *what)
{
	mcg_group_drain_stocks();
	long long cur = current_of(mcg_group_root());
	long long dying = bench_group_key(mcg_group_root(), "cgroup.stat", "nr_dying_descendants");
	if (cur == 0 && dying == 0)
		return 0;
	fprintf(stderr,
	        "memcg bench objcg: %s: at rest the root's memory.current is %lld and "
	        "nr_dying_descendants %lld (both must be 0)\n",
	        what, cur, dying);
	return 1;
}

/* Pin the calling thread to @cpu (-1: leave it). */
/* One store into each object: the allocation is used, nothing is elided. */
W_INLINE void w_touch(void *p, uint64_t i) { *(volatile char *)p = (char)i; }

/* An array of @n pointers from mmap (not from the allocator measured), resident. */
static void **ptr_array(size_t n)
{
	void **a = mmap(NULL, n * sizeof(void *), PROT_READ | PROT_WRITE,
	                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED)
		return NULL;
	memset(a, 0, n * sizeof(void *));
	return a;
}

/* ---- free1m ---- */

/* The variants. */
enum { F1_UNACC, F1_ALIVE, F1_REMOVED, F1_MIXED, F1_NR };

/* The groups of the mixed variants, created by mixed_groups_create(). */
static mcg_group_t *mixed_group[MIXED_GROUPS];

static int mixed_groups_create(void)
{
	for (int i = 0; i < MIXED_GROUPS; i++) {
		char name[32];
		snprintf(name, sizeof(name), "bench-mixed-%d", i);
		if (mcg_group_create(NULL, name, &mixed_group[i]))
			return -1;
	}
	return 0;
}

/* Remove the mixed groups; -1 if one still holds a charge or will not go. */
static int mixed_groups_remove(void)
{
	mcg_group_drain_stocks();
	int err = 0;
	for (int i = 0; i < MIXED_GROUPS; i++) {
		if (!mixed_group[i])
			continue;
		long long cur = current_of(mixed_group[i]);
		if (cur != 0) {
			fprintf(stderr,
			        "memcg bench objcg: mixed group %d holds %lld B after every "
			        "free (must be 0)\n",
			        i, cur);
			err = -1;
		}
		err |= mcg_group_remove(mixed_group[i]) ? -1 : 0;
		mcg_group_put(mixed_group[i]);
		mixed_group[i] = NULL;
	}
	return err;
}

/* Allocate object @i of a variant: a mixed one charged to the groups in turn. */
static void *f1_alloc(mcg_cache_t *c, bool mixed, size_t i)
{
	return mixed ? mcg_cache_alloc_account(c, mixed_group[i % MIXED_GROUPS])
	             : mcg_cache_alloc(c);
}

struct f1_shared {
	mcg_cache_t *cache;
	bool mixed;         /* objects charged to mixed_group[] in turn */
	mcg_group_t *group; /* NULL: unaccounted or mixed */
	size_t size, n;
	pthread_barrier_t allocated, go;
};

struct f1_thread {
	struct f1_shared *sh;
	pthread_t tid;
	int cpu;
	int err;
	double ms, cpu_ms; /* the frees: wall and CPU time */
};

/* The measured frees: one cache, a direct call each. */
W_NOINLINE void f1_free_all(mcg_cache_t *c, void **objs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		mcg_cache_free(c, objs[i]);
}

static void *f1_thread_fn(void *arg)
{
	struct f1_thread *t = arg;
	struct f1_shared *sh = t->sh;
	bench_pin_to(t->cpu);
	size_t n = sh->n;
	void **objs = ptr_array(n);
	if (!objs) {
		t->err = -1;
		n = 0;
	}
	/* Each thread allocates its own objects, in the group if there is one. */
	mcg_group_t *prev = sh->group ? mcg_group_enter(sh->group) : NULL;
	for (size_t i = 0; i < n; i++) {
		if (!(objs[i] = f1_alloc(sh->cache, sh->mixed, i))) {
			t->err = -1;
			n = i;
			break;
		}
		w_touch(objs[i], i);
	}
	if (sh->group)
		mcg_group_leave(prev);
	pthread_barrier_wait(&sh->allocated);
	/* (the main thread removes the group here, for `removed`) */
	pthread_barrier_wait(&sh->go);
	uint64_t t0 = bench_now_ns(), c0 = bench_thread_cpu_ns();
	f1_free_all(sh->cache, objs, n);
	t->cpu_ms = (double)(bench_thread_cpu_ns() - c0) / 1e6;
	t->ms = (double)(bench_now_ns() - t0) / 1e6;
	if (objs)
		munmap(objs, sh->n * sizeof(void *));
	return NULL;
}

/*
 * One free1m measurement: a cache of @size B (accounted unless @variant is
 * "unaccounted"), @nthr threads allocating @n objects each, the group
 * removed first for "removed", then the timed frees; each thread's wall and
 * CPU ms in @ms and @cpu_ms.  Checks that nothing stays charged.  Return 0, 1 (failed) or 2 (bad
 * variant).
 */
static int f1_run(const char *variant, size_t size, int nthr, size_t n, double *ms, double *cpu_ms)
{
	struct f1_thread t[MAX_THREADS];
	bool removed = !strcmp(variant, "removed"), mixed = !strcmp(variant, "mixed");
	bool accounted = removed || mixed || !strcmp(variant, "alive");
	if (!accounted && strcmp(variant, "unaccounted"))
		return 2;
	struct f1_shared sh = {.size = size, .n = n, .mixed = mixed};
	sh.cache = mcg_cache_create("bench-objcg", sh.size, 0, accounted ? MCG_CACHE_ACCOUNT : 0,
	                            NULL);
	if (!sh.cache)
		return 1;
	if (mixed && mixed_groups_create())
		return 1;
	if (accounted && !mixed && mcg_group_create(NULL, "bench-objcg", &sh.group))
		return 1;
	pthread_barrier_init(&sh.allocated, NULL, (unsigned)nthr + 1);
	pthread_barrier_init(&sh.go, NULL, (unsigned)nthr + 1);
	for (int i = 0; i < nthr; i++) {
		t[i] = (struct f1_thread){.sh = &sh, .cpu = bench_thread_cpu(i)};
		bench_start_thread(&t[i].tid, f1_thread_fn, &t[i]);
	}
	pthread_barrier_wait(&sh.allocated);
	int err = 0;
	if (removed) {
		/* The group goes offline and its last reference goes: the objects
		 * are charged to the root from now on. */
		err |= mcg_group_remove(sh.group) ? -1 : 0;
		mcg_group_put(sh.group);
		sh.group = NULL;
	}
	pthread_barrier_wait(&sh.go);
	for (int i = 0; i < nthr; i++) {
		pthread_join(t[i].tid, NULL);
		err |= t[i].err;
	}
	pthread_barrier_destroy(&sh.allocated);
	pthread_barrier_destroy(&sh.go);
	if (err)
		return 1;
	if (sh.group) {
		mcg_group_drain_stocks();
		long long cur = current_of(sh.group);
		if (cur != 0) {
			fprintf(stderr,
			        "memcg bench objcg: free1m: the group's memory.current is "
			        "%lld after every free (must be 0)\n",
			        cur);
			return 1;
		}
		if (mcg_group_remove(sh.group))
			return 1;
		mcg_group_put(sh.group);
	}
	if (mixed && mixed_groups_remove())
		return 1;
	if (mcg_cache_destroy(sh.cache) || check_exact("free1m"))
		return 1;
	for (int i = 0; i < nthr; i++) {
		ms[i] = t[i].ms;
		cpu_ms[i] = t[i].cpu_ms;
	}
	return 0;
}

/* free1m: SIZE THREADS NOBJ.  Prints each thread's free time in ms: wall, then CPU. */
static int worker_free1m(const char *variant, int argc, char **argv)
{
	struct bench_f1_args a;
	if (!bench_f1_args(argc, argv, MAX_THREADS, 0, &a))
		return 2;
	double ms[MAX_THREADS], cpu_ms[MAX_THREADS];
	int rc = f1_run(variant, a.size, a.threads, a.n, ms, cpu_ms);
	if (rc)
		return rc;
	bench_print_threads(ms, cpu_ms, a.threads);
	return 0;
}

/*
 * free1m-mix: the four variants in one process, their frees alternating in
 * blocks, so that what moves this VM's speed between processes and between
 * one run's memory and the next (a round's ratio anywhere from 0.6 to 2.2
 * at 1024 B when each variant had its own run) reaches all four alike.
 * Each thread allocates @n objects of each variant, a block of each in
 * turn: unaccounted from a plain cache, alive and removed from one
 * MCG_CACHE_ACCOUNT cache in two groups, mixed from another charged to 8
 * groups in turn; the `removed` group is removed and its last reference
 * put; then the threads free their objects a block at a time, all threads
 * on the same variant's block between two barriers, the variants' order
 * turning every block.  A thread's time in its blocks of a variant adds up
 * to that variant's free1m figure.
 */
#define MIX_BLOCKS 16

static size_t size_min(size_t a, size_t b) { return a < b ? a : b; }

struct mix_shared {
	mcg_cache_t *cache[F1_NR];
	mcg_group_t *group[F1_NR]; /* NULL for unaccounted and mixed */
	size_t n, block;
	pthread_barrier_t allocated, go, step;
};

struct mix_thread {
	struct mix_shared *sh;
	pthread_t tid;
	int cpu;
	int err;
	double ms[F1_NR][MIX_BLOCKS], cpu_ms[F1_NR][MIX_BLOCKS]; /* each block's frees */
};

static void *mix_thread_fn(void *arg)
{
	struct mix_thread *t = arg;
	struct mix_shared *sh = t->sh;
	bench_pin_to(t->cpu);
	size_t n = sh->n, block = sh->block, have[F1_NR] = {0};
	void **objs[F1_NR];
	bool ok = true;
	for (int v = 0; v < F1_NR; v++)
		ok &= (objs[v] = ptr_array(n)) != NULL;
	for (size_t at = 0; ok && at < n; at += block) {
		size_t end = size_min(at + block, n);
		for (int v = 0; ok && v < F1_NR; v++) {
			mcg_group_t *prev = sh->group[v] ? mcg_group_enter(sh->group[v]) : NULL;
			for (size_t i = at; i < end; i++) {
				if (!(objs[v][i] = f1_alloc(sh->cache[v], v == F1_MIXED, i))) {
					ok = false;
					break;
				}
				w_touch(objs[v][i], i);
				have[v]++;
			}
			if (sh->group[v])
				mcg_group_leave(prev);
		}
	}
	t->err = ok ? 0 : -1;
	pthread_barrier_wait(&sh->allocated);
	/* (the main thread removes the group of `removed` here) */
	pthread_barrier_wait(&sh->go);
	/* Every thread waits at every step, whatever it holds. */
	for (size_t b = 0, at = 0; at < n; b++, at += block) {
		for (int j = 0; j < F1_NR; j++) {
			int v = (int)((b + (size_t)j) % F1_NR);
			size_t end = size_min(at + block, have[v]);
			pthread_barrier_wait(&sh->step);
			uint64_t t0 = bench_now_ns(), c0 = bench_thread_cpu_ns();
			if (end > at)
				f1_free_all(sh->cache[v], objs[v] + at, end - at);
			t->cpu_ms[v][b] = (double)(bench_thread_cpu_ns() - c0) / 1e6;
			t->ms[v][b] = (double)(bench_now_ns() - t0) / 1e6;
		}
	}
	for (int v = 0; v < F1_NR; v++)
		if (objs[v])
			munmap(objs[v], n * sizeof(void *));
	return NULL;
}

/* The caches and groups of free1m-mix; false if one is missing. */
static bool mix_setup(struct mix_shared *sh, size_t size)
{
	sh->cache[F1_UNACC] = mcg_cache_create("bench-objcg", size, 0, 0, NULL);
	sh->cache[F1_ALIVE] =
	        mcg_cache_create("bench-objcg-acct", size, 0, MCG_CACHE_ACCOUNT, NULL);
	sh->cache[F1_REMOVED] = sh->cache[F1_ALIVE];
	sh->cache[F1_MIXED] =
	        mcg_cache_create("bench-objcg-mixed", size, 0, MCG_CACHE_ACCOUNT, NULL);
	return sh->cache[F1_UNACC] && sh->cache[F1_ALIVE] && sh->cache[F1_MIXED] &&
	       !mcg_group_create(NULL, "bench-alive", &sh->group[F1_ALIVE]) &&
	       !mcg_group_create(NULL, "bench-removed", &sh->group[F1_REMOVED]) &&
	       !mixed_groups_create();
}

/* What free1m-mix prints: three wall ratios, the same in CPU time (each the
 * median over blocks of the block's ratio), then each variant's wall ms. */
enum {
	MIX_AU,
	MIX_RA,
	MIX_MU,
	MIX_AU_CPU,
	MIX_RA_CPU,
	MIX_MU_CPU,
	MIX_MS,
	MIX_VALS = MIX_MS + F1_NR
};

/* free1m-mix: SIZE THREADS NOBJ.  Prints alive/unaccounted, removed/alive and
 * mixed/unaccounted in wall time, then in CPU time - each the median over
 * blocks of the ratio of the two variants' block times (the mean over
 * threads), which a thread preempted in one block does not move as it moves
 * a sum - then each variant's wall ms (the mean over threads of the sum). */
static int worker_free1m_mix(const char *variant, int argc, char **argv)
{
	struct bench_f1_args a;
	if (strcmp(variant, "all") || !bench_f1_args(argc, argv, MAX_THREADS, 0, &a))
		return 2;
	struct mix_shared sh = {.n = a.n, .block = (a.n + MIX_BLOCKS - 1) / MIX_BLOCKS};
	if (!mix_setup(&sh, a.size))
		return 1;
	struct mix_thread t[MAX_THREADS];
	int nthr = a.threads;
	pthread_barrier_init(&sh.allocated, NULL, (unsigned)nthr + 1);
	pthread_barrier_init(&sh.go, NULL, (unsigned)nthr + 1);
	pthread_barrier_init(&sh.step, NULL, (unsigned)nthr);
	for (int i = 0; i < nthr; i++) {
		t[i] = (struct mix_thread){.sh = &sh, .cpu = bench_thread_cpu(i)};
		bench_start_thread(&t[i].tid, mix_thread_fn, &t[i]);
	}
	pthread_barrier_wait(&sh.allocated);
	int err = mcg_group_remove(sh.group[F1_REMOVED]) ? -1 : 0;
	mcg_group_put(sh.group[F1_REMOVED]);
	pthread_barrier_wait(&sh.go);
	double w[F1_NR][MIX_BLOCKS], c[F1_NR][MIX_BLOCKS];
	double ms[F1_NR] = {0};
	int nb = (int)((a.n + sh.block - 1) / sh.block);
	memset(w, 0, sizeof(w));
	memset(c, 0, sizeof(c));
	for (int i = 0; i < nthr; i++) {
		pthread_join(t[i].tid, NULL);
		err |= t[i].err;
		for (int v = 0; v < F1_NR; v++) {
			for (int b = 0; b < nb; b++) {
				w[v][b] += t[i].ms[v][b] / nthr;
				c[v][b] += t[i].cpu_ms[v][b] / nthr;
				ms[v] += t[i].ms[v][b] / nthr;
			}
		}
	}
	pthread_barrier_destroy(&sh.allocated);
	pthread_barrier_destroy(&sh.go);
	pthread_barrier_destroy(&sh.step);
	mcg_group_drain_stocks();
	long long cur = current_of(sh.group[F1_ALIVE]);
	if (err || cur != 0) {
		fprintf(stderr, "memcg bench objcg: free1m-mix: %s\n",
		        err ? "an allocation or the removal failed"
		            : "the alive group's memory.current is not 0 after every free");
		return 1;
	}
	if (mcg_group_remove(sh.group[F1_ALIVE]))
		return 1;
	mcg_group_put(sh.group[F1_ALIVE]);
	if (mixed_groups_remove() || mcg_cache_destroy(sh.cache[F1_UNACC]) ||
	    mcg_cache_destroy(sh.cache[F1_ALIVE]) || mcg_cache_destroy(sh.cache[F1_MIXED]) ||
	    check_exact("free1m-mix"))
		return 1;
	printf("%.4f %.4f %.4f %.4f %.4f %.4f", bench_ratio_median(w[F1_ALIVE], w[F1_UNACC], nb),
	       bench_ratio_median(w[F1_REMOVED], w[F1_ALIVE], nb),
	       bench_ratio_median(w[F1_MIXED], w[F1_UNACC], nb),
	       bench_ratio_median(c[F1_ALIVE], c[F1_UNACC], nb),
	       bench_ratio_median(c[F1_REMOVED], c[F1_ALIVE], nb),
	       bench_ratio_median(c[F1_MIXED], c[F1_UNACC], nb));
	for (int v = 0; v < F1_NR; v++)
		printf(" %.4f", ms[v]);
	printf("\n");
	return 0;
}

/* ---- pair ---- */

/* How a pair variant allocates. */
enum pair_kind {
	PK_CACHE,           /* mcg_cache_alloc, a plain cache */
	PK_CACHE_ACCOUNT,   /* mcg_cache_alloc, MCG_CACHE_ACCOUNT, the current group */
	PK_CACHE_EXPLICIT,  /* mcg_cache_alloc_account(cache, group), a plain cache */
	PK_KMALLOC,         /* mcg_malloc */
	PK_KMALLOC_ACCOUNT, /* mcg_malloc_account(size, group) */
	PK_RING,            /* a ring of MIXED_GROUPS objects, a plain cache */
	PK_RING_MIXED,      /* the ring, each step charged to another group than the freed one's */
	NR_PK
};

static const char *const pair_names[NR_PK] = {
        "unaccounted",       "accounted",         "accounted-explicit", "kmalloc",
        "kmalloc-accounted", "unaccounted-ring8", "accounted-mixed8"};
/* The unaccounted variant each one is compared with. */
static const int pair_base[NR_PK] = {PK_CACHE,   PK_CACHE, PK_CACHE, PK_KMALLOC,
                                     PK_KMALLOC, PK_RING,  PK_RING};

/* mcg_malloc's size in the plain kmalloc pair (pair-ab: the next class). */
static size_t kmalloc_plain_size = PAIR_SIZE;

/*
 * The ring: MIXED_GROUPS live objects, each step frees the oldest and
 * allocates in its place.  Accounted (@mixed), the new object is charged to
 * the group after the freed one's: every allocation pops the slot of an
 * object another group freed, a multi-tenant server's request mix.
 */
W_INLINE int ring_loop(mcg_cache_t *c, bool mixed, uint64_t iters)
{
	void *ring[MIXED_GROUPS];
	for (int j = 0; j < MIXED_GROUPS; j++)
		if (!(ring[j] = mixed ? mcg_cache_alloc_account(c, mixed_group[j])
		                      : mcg_cache_alloc(c)))
			return -1;
	for (uint64_t i = 0; i < iters; i++) {
		unsigned j = (unsigned)i % MIXED_GROUPS;
		mcg_cache_free(c, ring[j]);
		/* slot j held round r's group (r + j), gets round r + 1's */
		unsigned grp = (unsigned)(i / MIXED_GROUPS + 1 + j) % MIXED_GROUPS;
		void *p = mixed ? mcg_cache_alloc_account(c, mixed_group[grp]) : mcg_cache_alloc(c);
		if (!p)
			return -1;
		w_touch(p, i);
		ring[j] = p;
	}
	for (int j = 0; j < MIXED_GROUPS; j++)
		mcg_cache_free(c, ring[j]);
	return 0;
}

W_INLINE int pair_loop(enum pair_kind k, mcg_cache_t *c, mcg_group_t *g, uint64_t iters)
{
	if (k == PK_RING || k == PK_RING_MIXED)
		return ring_loop(c, k == PK_RING_MIXED, iters);
	for (uint64_t i = 0; i < iters; i++) {
		void *p;
		if (k == PK_CACHE || k == PK_CACHE_ACCOUNT)
			p = mcg_cache_alloc(c);
		else if (k == PK_CACHE_EXPLICIT)
			p = mcg_cache_alloc_account(c, g);
		else if (k == PK_KMALLOC)
			p = mcg_malloc(kmalloc_plain_size);
		else
			p = mcg_malloc_account(PAIR_SIZE, g);
		if (!p)
			return -1;
		w_touch(p, i);
		if (k == PK_KMALLOC || k == PK_KMALLOC_ACCOUNT)
			mcg_free(p);
		else
			mcg_cache_free(c, p);
	}
	return 0;
}

W_NOINLINE int pair_cache(mcg_cache_t *c, mcg_group_t *g, uint64_t n)
{
	return pair_loop(PK_CACHE, c, g, n);
}
W_NOINLINE int pair_cache_account(mcg_cache_t *c, mcg_group_t *g, uint64_t n)
{
	return pair_loop(PK_CACHE_ACCOUNT, c, g, n);
}
W_NOINLINE int pair_cache_explicit(mcg_cache_t *c, mcg_group_t *g, uint64_t n)
{
	return pair_loop(PK_CACHE_EXPLICIT, c, g, n);
}
W_NOINLINE int pair_kmalloc(mcg_cache_t *c, mcg_group_t *g, uint64_t n)
{
	return pair_loop(PK_KMALLOC, c, g, n);
}
W_NOINLINE int pair_kmalloc_account(mcg_cache_t *c, mcg_group_t *g, uint64_t n)
{
	return pair_loop(PK_KMALLOC_ACCOUNT, c, g, n);
}
W_NOINLINE int pair_ring(mcg_cache_t *c, mcg_group_t *g, uint64_t n)
{
	return pair_loop(PK_RING, c, g, n);
}
W_NOINLINE int pair_ring_mixed(mcg_cache_t *c, mcg_group_t *g, uint64_t n)
{
	return pair_loop(PK_RING_MIXED, c, g, n);
}

static int (*const pair_fns[NR_PK])(mcg_cache_t *, mcg_group_t *, uint64_t) = {
        pair_cache,           pair_cache_account, pair_cache_explicit, pair_kmalloc,
        pair_kmalloc_account, pair_ring,          pair_ring_mixed};

/* Time @iters pairs of kind @k; wall ns per pair, or -1 on allocation failure. */
static double pair_time(enum pair_kind k, mcg_cache_t *c, mcg_group_t *g, uint64_t iters)
{
	uint64_t t0 = bench_now_ns();
	if (pair_fns[k](c, g, iters))
		return -1;
	return (double)(bench_now_ns() - t0) / (double)iters;
}

/* The pair kind named @variant, or NR_PK. */
static int pair_kind_of(const char *variant)
{
	int k = 0;
	while (k < NR_PK && strcmp(variant, pair_names[k]))
		k++;
	return k;
}

/* pair: ITERS (0: calibrate to TARGET_NS).  Prints ns per pair. */
static int worker_pair(const char *variant, int argc, char **argv)
{
	int k = pair_kind_of(variant);
	if (argc < 1 || k == NR_PK)
		return 2;
	uint64_t iters = strtoull(argv[0], NULL, 0);
	mcg_cache_t *c = mcg_cache_create("bench-objcg-pair", PAIR_SIZE, 0,
	                                  k == PK_CACHE_ACCOUNT ? MCG_CACHE_ACCOUNT : 0, NULL);
	mcg_group_t *g = NULL;
	if (!c || mcg_group_create(NULL, "bench-objcg", &g) || mixed_groups_create())
		return 1;
	/* Every variant runs in the group, so only the accounting differs. */
	mcg_group_t *prev = mcg_group_enter(g);
	double ns;
	if (iters == 0) {
		if (pair_time(k, c, g, 200000) < 0) /* warm up */
			return 1;
		ns = pair_time(k, c, g, 1000000);
		double n = TARGET_NS / (ns > 0.1 ? ns : 0.1);
		iters = n < 1e6 ? 1000000 : n > 1e8 ? 100000000 : (uint64_t)n;
	} else if (pair_time(k, c, g, iters / 10 + 1) < 0) {
		return 1;
	}
	ns = pair_time(k, c, g, iters);
	if (ns < 0)
		return 1;
	mcg_group_leave(prev);
	if (mcg_cache_destroy(c) || mcg_group_remove(g) || mixed_groups_remove())
		return 1;
	mcg_group_put(g);
	if (check_exact("pair"))
		return 1;
	printf("%.4f\n", ns);
	return 0;
}

/*
 * pair-ab: BLOCK BLOCKS.  The variant and its unaccounted counterpart in
 * one process, alternating blocks of BLOCK pairs (ABBA order); prints the
 * median of the per-block ratios, then the median ns per pair of each.
 * This VM's speed swings by 2x from one second to the next: process by
 * process, one run's ratio can land anywhere; blocks a millisecond apart
 * see the same machine.  Each variant has its own cache; the plain kmalloc
 * pair uses the next size class (80 B), because in a class that also holds
 * accounted objects every slab has an objcg vector, so plain frees push
 * tagged objects and plain allocations pop them - a real cost of mixing,
 * not of either pair (the one-process-per-variant `pair` has neither).
 */
static int worker_pair_ab(const char *variant, int argc, char **argv)
{
	int k = pair_kind_of(variant);
	if (argc < 2 || k == NR_PK || pair_base[k] == k)
		return 2;
	int b = pair_base[k];
	kmalloc_plain_size = PAIR_SIZE + 16;
	uint64_t block = strtoull(argv[0], NULL, 0);
	int blocks = atoi(argv[1]);
	if (block == 0 || blocks < 1 || blocks > 4096)
		return 2;
	mcg_cache_t *ck = mcg_cache_create("bench-objcg-pair", PAIR_SIZE, 0,
	                                   k == PK_CACHE_ACCOUNT ? MCG_CACHE_ACCOUNT : 0, NULL);
	mcg_cache_t *cb = mcg_cache_create("bench-objcg-base", PAIR_SIZE, 0, 0, NULL);
	mcg_group_t *g = NULL;
	double *ratio = calloc((size_t)blocks, 3 * sizeof(double));
	if (!ck || !cb || !ratio || mcg_group_create(NULL, "bench-objcg", &g) ||
	    mixed_groups_create())
		return 1;
	double *tk = ratio + blocks, *tb = tk + blocks;
	mcg_group_t *prev = mcg_group_enter(g); /* as in `pair`: only the accounting differs */
	if (pair_time(k, ck, g, block) < 0 || pair_time(b, cb, g, block) < 0) /* warm up */
		return 1;
	for (int i = 0; i < blocks; i++) {
		double x, y;
		if (i % 2) {
			x = pair_time(k, ck, g, block);
			y = pair_time(b, cb, g, block);
		} else {
			y = pair_time(b, cb, g, block);
			x = pair_time(k, ck, g, block);
		}
		if (x < 0 || y < 0)
			return 1;
		tk[i] = x;
		tb[i] = y;
		ratio[i] = x / y;
	}
	mcg_group_leave(prev);
	if (mcg_cache_destroy(ck) || mcg_cache_destroy(cb) || mcg_group_remove(g) ||
	    mixed_groups_remove())
		return 1;
	mcg_group_put(g);
	if (check_exact("pair-ab"))
		return 1;
	printf("%.4f %.4f %.4f\n", bench_median(ratio, blocks), bench_median(tk, blocks),
	       bench_median(tb, blocks));
	free(ratio);
	return 0;
}

/* ---- mem ---- */

/*
 * mem: NOBJ.  Prints RSS in KiB before and with the objects live, then the
 * group's memory.stat slab and memory.current in bytes (0 for unaccounted).
 */
static int worker_mem(const char *variant, int argc, char **argv)
{
	if (argc < 1)
		return 2;
	bool accounted = !strcmp(variant, "accounted");
	if (!accounted && strcmp(variant, "unaccounted"))
		return 2;
	size_t n = strtoul(argv[0], NULL, 0);
	void **objs = ptr_array(n);
	mcg_cache_t *c = mcg_cache_create("bench-objcg-mem", MEM_SIZE, 0,
	                                  accounted ? MCG_CACHE_ACCOUNT : 0, NULL);
	mcg_group_t *g = NULL;
	if (!objs || !c || mcg_group_create(NULL, "bench-objcg", &g))
		return 1;
	/* Both variants create the cache and the group, and run in the group. */
	mcg_group_t *prev = mcg_group_enter(g);
	long start = bench_rss_kib();
	for (size_t i = 0; i < n; i++) {
		if (!(objs[i] = mcg_cache_alloc(c)))
			return 1;
		w_touch(objs[i], i);
	}
	long live = bench_rss_kib();
	mcg_group_leave(prev);
	mcg_group_drain_stocks();
	long long slab = bench_group_key(g, "memory.stat", "slab"), cur = current_of(g);
	for (size_t i = 0; i < n; i++)
		mcg_cache_free(c, objs[i]);
	munmap(objs, n * sizeof(void *));
	if (mcg_cache_destroy(c) || mcg_group_remove(g))
		return 1;
	mcg_group_put(g);
	if (check_exact("mem"))
		return 1;
	printf("%ld %ld %lld %lld\n", start, live, slab, cur);
	return 0;
}

/* ---- tenants ---- */

#define MAX_TENANTS 64

/* tenants: VARIANT = the number of groups; ITERS.  Prints ns per step. */
static int worker_tenants(const char *variant, int argc, char **argv)
{
	int n = atoi(variant);
	if (argc < 1 || n < 1 || n > MAX_TENANTS)
		return 2;
	uint64_t iters = strtoull(argv[0], NULL, 0);
	mcg_cache_t *c = mcg_cache_create("bench-objcg-tenants", PAIR_SIZE, 0, 0, NULL);
	mcg_group_t *g[MAX_TENANTS];
	void *held[MAX_TENANTS] = {0};
	if (!c)
		return 1;
	for (int i = 0; i < n; i++) {
		char name[16];
		snprintf(name, sizeof(name), "tenant-%d", i);
		if (mcg_group_create(NULL, name, &g[i]))
			return 1;
	}
	double ns = 0;
	for (int pass = 0; pass < 2; pass++) { /* a warm-up, then the timed one */
		uint64_t steps = pass ? iters : iters / 10 + 1, t0 = bench_now_ns();
		for (uint64_t i = 0; i < steps; i++) {
			int t = (int)(i % (uint64_t)n);
			mcg_cache_free(c, held[t]);
			if (!(held[t] = mcg_cache_alloc_account(c, g[t])))
				return 1;
			w_touch(held[t], i);
		}
		ns = (double)(bench_now_ns() - t0) / (double)steps;
	}
	for (int i = 0; i < n; i++) {
		mcg_cache_free(c, held[i]);
		if (mcg_group_remove(g[i]))
			return 1;
		mcg_group_put(g[i]);
	}
	if (mcg_cache_destroy(c) || check_exact("tenants"))
		return 1;
	printf("%.4f\n", ns);
	return 0;
}

/* `memcg bench objcg --worker CASE VARIANT ARGS...`: one measurement. */
static int worker_main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const char *cas = argv[0], *variant = argv[1];
	alarm(300); /* a hung worker dies rather than hanging the benchmark */
	argc -= 2;
	argv += 2;
	if (!strcmp(cas, "free1m"))
		return worker_free1m(variant, argc, argv);
	if (!strcmp(cas, "free1m-mix"))
		return worker_free1m_mix(variant, argc, argv);
	if (!strcmp(cas, "pair"))
		return worker_pair(variant, argc, argv);
	if (!strcmp(cas, "pair-ab"))
		return worker_pair_ab(variant, argc, argv);
	if (!strcmp(cas, "mem"))
		return worker_mem(variant, argc, argv);
	if (!strcmp(cas, "tenants"))
		return worker_tenants(variant, argc, argv);
	fprintf(stderr, "memcg bench objcg: unknown worker case '%s'\n", cas);
	return 2;
}

/* ================================================================ parent */

/* All samples of one case: [config][variant][run][value]. */
struct matrix {
	int ncfg, nvar, runs;
	double *v;
};

static double *mat_at(const struct matrix *m, int cfg, int var, int run)
{
	return m->v + (((size_t)cfg * m->nvar + var) * m->runs + run) * MAX_VALS;
}

static void mat_free(struct matrix *m) { free(m->v); }

struct ctx {
	struct bench_opts o;
	int threads;
	int met, missed;
};

/* Worker arguments of config @cfg of a case, into @a (strings in @buf). */
typedef int (*args_fn)(const struct ctx *x, int cfg, char buf[][32], const char **a);

/*
 * measure - run every config of case @name for each of the @nvar variants
 * @names, in every run, the variants rotated per run and config.  @want:
 * values each worker must print.  Return 0, or -1 if a worker failed.
 */
static int measure(struct ctx *x, const char *name, const char *const *names, int nvar, int ncfg,
                   int want, args_fn fill, struct matrix *m)
{
	m->ncfg = ncfg;
	m->nvar = nvar;
	m->runs = x->o.runs;
	m->v = calloc((size_t)ncfg * nvar * x->o.runs * MAX_VALS, sizeof(double));
	if (!m->v)
		return -1;
	for (int r = 0; r < x->o.runs; r++) {
		uint64_t t0 = bench_now_ns();
		for (int cfg = 0; cfg < ncfg; cfg++) {
			for (int j = 0; j < nvar; j++) {
				int vi = (j + r + cfg) % nvar;
				/* Every variant is memcg in a plain worker: no preload. */
				struct bench_variant v = {.name = names[vi],
				                          .kind = BENCH_MCG_CACHE};
				char buf[8][32];
				const char *a[16] = {"bench", "objcg", "--worker", name, names[vi]};
				int na = 5;
				na += fill(x, cfg, buf, a + na);
				a[na] = NULL;
				int got = bench_worker_run(&v, a, mat_at(m, cfg, vi, r), MAX_VALS);
				if (got < want) {
					if (got >= 0)
						fprintf(stderr,
						        "memcg bench: %s/%s: %d values, want %d\n",
						        name, names[vi], got, want);
					mat_free(m);
					return -1;
				}
			}
		}
		if (!x->o.smoke)
			bench_progress("objcg %s: run %d/%d done (%.1f s)", name, r + 1, x->o.runs,
			               (double)(bench_now_ns() - t0) / 1e9);
	}
	return 0;
}

/* Median over runs of the mean of values [@first, @first + @count) of each run. */
static double mat_median(const struct matrix *m, int cfg, int var, int first, int count)
{
	double tmp[1024];
	int n = 0;
	for (int r = 0; r < m->runs && n < 1024; r++)
		tmp[n++] = bench_mean(mat_at(m, cfg, var, r) + first, count);
	return bench_median(tmp, n);
}

/* Record a target: its verdict, counted, and a JSON line with @value in @unit. */
static const char *target_in(struct ctx *x, const char *variant, const char *name, double value,
                             const char *unit, enum bench_verdict v)
{
	if (bench_verdict_met(v))
		x->met++;
	else
		x->missed++;
	if (x->o.json) {
		char extra[200];
		snprintf(extra, sizeof(extra), "\"name\":\"%s\",\"pass\":%s,\"verdict\":\"%s\"",
		         name, bench_verdict_met(v) ? "true" : "false", bench_verdict_name(v));
		bench_emit_json("target", variant, extra, value, unit);
	}
	return bench_verdict_name(v);
}

/* Record a target: its verdict, counted, and a JSON line (@value in "ratio" units). */
static const char *target(struct ctx *x, const char *variant, const char *name, double value,
                          enum bench_verdict v)
{
	return target_in(x, variant, name, value, "ratio", v);
}

/* ---- free1m ---- */

static const char *const f1_names[] = {"unaccounted", "alive", "removed", "mixed"};

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

/* Stddev of values [@first, @first + @nv) over every run (every thread's time). */
static double pooled_sd(const struct matrix *m, int cfg, int var, int first, int nv)
{
	double all[MAX_VALS * 64];
	int n = 0;
	for (int r = 0; r < m->runs; r++)
		for (int i = 0; i < nv && n < MAX_VALS * 64; i++)
			all[n++] = mat_at(m, cfg, var, r)[first + i];
	return bench_stddev(all, n);
}

/* Median over runs of the per-run ratio of variant @a to @b (values [first, first+nv)). */
static double run_ratio(const struct matrix *m, int cfg, int a, int b, int first, int nv)
{
	double q[1024];
	int n = 0;
	for (int r = 0; r < m->runs && n < 1024; r++)
		q[n++] = bench_mean(mat_at(m, cfg, a, r) + first, nv) /
		         bench_mean(mat_at(m, cfg, b, r) + first, nv);
	return bench_median(q, n);
}

/* free1m-mix's one variant: all four in one process. */
static const char *const f1_mix_names[] = {"all"};

static int case_free1m(struct ctx *x)
{
	struct matrix m, mix;
	int nt = x->threads;
	if (measure(x, "free1m", f1_names, F1_NR, NFREE1M, 2 * nt, free1m_args, &m))
		return -1;
	if (measure(x, "free1m-mix", f1_mix_names, 1, NFREE1M, MIX_VALS, free1m_args, &mix)) {
		mat_free(&m);
		return -1;
	}
	if (!x->o.json) {
		printf("\n== free1m (seed 000 TEST #1): each of %d threads frees %zu objects of "
		       "one cache; wall ms per thread\n   (median over %d run%s of the mean; +- "
		       "stddev over all threads and runs) ==\n",
		       nt, free1m_objs(x), x->o.runs, x->o.runs > 1 ? "s" : "");
		printf("%5s %13s %13s %13s %13s | %-20s | %-20s | %s\n", "size", "unaccounted",
		       "alive", "removed", "mixed", "interleaved, wall", "interleaved, cpu",
		       "target");
		printf("%5s %13s %13s %13s %13s | %6s %6s %6s | %6s %6s %6s |\n", "", "", "", "",
		       "", "r/a", "a/u", "m/u", "r/a", "a/u", "m/u");
	}
	for (int cfg = 0; cfg < NFREE1M; cfg++) {
		size_t size = free1m_sizes[cfg];
		/* The ratios judged: the median over runs of free1m-mix's, where the
		 * four variants' frees alternate in blocks in one process. */
		double au = mat_median(&mix, cfg, 0, MIX_AU, 1),
		       ra = mat_median(&mix, cfg, 0, MIX_RA, 1),
		       mu = mat_median(&mix, cfg, 0, MIX_MU, 1);
		double au_c = mat_median(&mix, cfg, 0, MIX_AU_CPU, 1),
		       ra_c = mat_median(&mix, cfg, 0, MIX_RA_CPU, 1),
		       mu_c = mat_median(&mix, cfg, 0, MIX_MU_CPU, 1);
		if (!x->o.json)
			printf("%5zu", size);
		for (int i = 0; i < F1_NR; i++) {
			double val = mat_median(&m, cfg, i, 0, nt),
			       sd = pooled_sd(&m, cfg, i, 0, nt);
			if (x->o.json) {
				char extra[320], qi[96] = "";
				if (i != F1_UNACC)
					snprintf(qi, sizeof(qi),
					         ",\"ratio_interleaved\":%.4f,\"cpu_ratio_"
					         "interleaved\":%.4f",
					         i == F1_ALIVE     ? au
					         : i == F1_REMOVED ? ra
					                           : mu,
					         i == F1_ALIVE     ? au_c
					         : i == F1_REMOVED ? ra_c
					                           : mu_c);
				snprintf(
				        extra, sizeof(extra),
				        "\"size\":%zu,\"threads\":%d,\"objects\":%zu,\"runs\":%d,"
				        "\"stddev\":%.3f,\"cpu_ms\":%.3f,\"interleaved_ms\":%.3f%s",
				        size, nt, free1m_objs(x), x->o.runs, sd,
				        mat_median(&m, cfg, i, nt, nt),
				        mat_median(&mix, cfg, 0, MIX_MS + i, 1), qi);
				bench_emit_json("free1m", f1_names[i], extra, val, "ms");
			} else {
				char cell[32];
				snprintf(cell, sizeof(cell), "%.1f+-%.1f", val, sd);
				printf(" %13s", cell);
			}
		}
		char tname[64];
		snprintf(tname, sizeof(tname), "free1m-%zu-removed/alive", size);
		const char *t1 =
		        target(x, "removed", tname, ra, bench_judge_le(ra, T_REMOVED_ALIVE));
		snprintf(tname, sizeof(tname), "free1m-%zu-alive/unaccounted", size);
		const char *t2 = target(x, "alive", tname, au, bench_judge_le(au, T_ALIVE_UNACC));
		snprintf(tname, sizeof(tname), "free1m-%zu-mixed/unaccounted", size);
		const char *t3 = target(x, "mixed", tname, mu, bench_judge_le(mu, T_MIXED_UNACC));
		if (!x->o.json)
			printf(" | %6.3f %6.3f %6.3f | %6.3f %6.3f %6.3f | %s/%s/%s\n", ra, au, mu,
			       ra_c, au_c, mu_c, t1, t2, t3);
	}
	if (!x->o.json)
		printf("targets: removed/alive <= %.2f, alive/unaccounted <= %.2f, "
		       "mixed/unaccounted <= %.2f at every size, judged on wall-time ratios "
		       "interleaved: the four variants' frees alternate in blocks of 1/%d of the "
		       "objects in one process (PASS/TIE/MISS in that order; TIE: within 3 %%); "
		       "the "
		       "per-process columns for information\n",
		       T_REMOVED_ALIVE, T_ALIVE_UNACC, T_MIXED_UNACC, MIX_BLOCKS);
	mat_free(&mix);
	mat_free(&m);
	return 0;
}

/* ---- pair ---- */

static int pair_args(const struct ctx *x, int cfg, char buf[][32], const char **a)
{
	snprintf(buf[0], 32, "%d", x->o.smoke ? 20000 : 0);
	a[0] = buf[0];
	return 1;
}

/* The accounted variants, each timed against its base in one process. */
static const char *const pair_ab_names[] = {"accounted", "accounted-explicit", "kmalloc-accounted",
                                            "accounted-mixed8"};
#define NR_PAIR_AB 4

static int pair_ab_args(const struct ctx *x, int cfg, char buf[][32], const char **a)
{
	snprintf(buf[0], 32, "%d", x->o.smoke ? 20000 : 100000); /* pairs per block */
	snprintf(buf[1], 32, "%d", x->o.smoke ? 6 : 60);         /* blocks */
	a[0] = buf[0];
	a[1] = buf[1];
	return 2;
}

static int case_pair(struct ctx *x)
{
	struct matrix m, ab;
	if (measure(x, "pair", pair_names, NR_PK, 1, 1, pair_args, &m))
		return -1;
	if (measure(x, "pair-ab", pair_ab_names, NR_PAIR_AB, 1, 3, pair_ab_args, &ab)) {
		mat_free(&m);
		return -1;
	}
	if (!x->o.json) {
		printf("\n== pair: alloc+free pairs of %d B, one thread, wall ns per pair (median "
		       "of %d "
		       "run%s) ==\n",
		       PAIR_SIZE, x->o.runs, x->o.runs > 1 ? "s" : "");
		printf("  %-20s %10s %12s  %-12s %12s\n", "variant", "ns/pair", "ratio", "vs",
		       "interleaved");
	}
	double val[NR_PK];
	for (int k = 0; k < NR_PK; k++)
		val[k] = mat_median(&m, 0, k, 0, 1);
	for (int k = 0; k < NR_PK; k++) {
		int b = pair_base[k];
		/* ratio: the median of the per-run ratios, each variant in its own
		 * process; interleaved: the median over runs of the median block
		 * ratio, variant and base alternating in one process (judged). */
		double q = b == k ? 1.0 : run_ratio(&m, 0, k, b, 0, 1), qi = 1.0;
		const char *t = "";
		if (b != k) {
			int j = 0;
			while (strcmp(pair_ab_names[j], pair_names[k]))
				j++;
			qi = mat_median(&ab, 0, j, 0, 1);
			char tname[48];
			snprintf(tname, sizeof(tname), "pair-%d-%s", PAIR_SIZE, pair_names[k]);
			double goal = k == PK_RING_MIXED ? T_PAIR_MIXED : T_PAIR;
			t = target(x, pair_names[k], tname, qi, bench_judge_le(qi, goal));
		}
		if (x->o.json) {
			char extra[128];
			snprintf(extra, sizeof(extra),
			         "\"size\":%d,\"threads\":1,\"runs\":%d,\"ratio\":%.4f,"
			         "\"ratio_interleaved\":%.4f",
			         PAIR_SIZE, x->o.runs, q, qi);
			bench_emit_json("pair", pair_names[k], extra, val[k], "ns");
		} else if (b == k) {
			printf("  %-20s %10.2f %12.3f\n", pair_names[k], val[k], q);
		} else {
			printf("  %-20s %10.2f %12.3f  %-12s %12.3f %s\n", pair_names[k], val[k], q,
			       pair_names[b], qi, t);
		}
	}
	if (!x->o.json)
		printf("target: each accounted pair <= %.1fx its unaccounted counterpart "
		       "(accounted-mixed8 <= %.1fx), judged interleaved on wall time: the two "
		       "alternate in blocks of pairs in one process (this VM's speed moves 2x "
		       "between processes); the plain kmalloc pair then uses the next size class; "
		       "TIE: within 3 %%\n",
		       T_PAIR, T_PAIR_MIXED);
	mat_free(&ab);
	mat_free(&m);
	return 0;
}

/* ---- mem ---- */

static const char *const mem_names[] = {"unaccounted", "accounted"};

static size_t mem_objs(const struct ctx *x) { return x->o.smoke ? 20000 : MILLION; }

static int mem_args(const struct ctx *x, int cfg, char buf[][32], const char **a)
{
	snprintf(buf[0], 32, "%zu", mem_objs(x));
	a[0] = buf[0];
	return 1;
}

static int case_mem(struct ctx *x)
{
	struct matrix m;
	if (measure(x, "mem", mem_names, 2, 1, 4, mem_args, &m))
		return -1;
	double n = (double)mem_objs(x);
	double grow[2][1024], d_rss[1024], d_stat[1024], d_cur[1024];
	int runs = m.runs < 1024 ? m.runs : 1024;
	for (int r = 0; r < runs; r++) {
		for (int i = 0; i < 2; i++) {
			double *v = mat_at(&m, 0, i, r);
			grow[i][r] = (v[1] - v[0]) * 1024.0; /* bytes */
		}
		double *a = mat_at(&m, 0, 1, r);
		d_rss[r] = (grow[1][r] - grow[0][r]) / n;
		d_stat[r] = (a[2] - MEM_SIZE * n) / n;
		d_cur[r] = (a[3] - MEM_SIZE * n) / n;
	}
	double g0 = bench_median(grow[0], runs), g1 = bench_median(grow[1], runs);
	double o_rss = bench_median(d_rss, runs), o_stat = bench_median(d_stat, runs),
	       o_cur = bench_median(d_cur, runs);
	if (x->o.json) {
		char extra[160];
		for (int i = 0; i < 2; i++) {
			snprintf(
			        extra, sizeof(extra),
			        "\"size\":%d,\"objects\":%zu,\"runs\":%d,\"metric\":\"rss_growth\"",
			        MEM_SIZE, mem_objs(x), x->o.runs);
			bench_emit_json("mem", mem_names[i], extra, (i ? g1 : g0) / 1048576.0,
			                "MiB");
		}
		const char *metric[] = {"overhead_rss", "overhead_stat_slab", "overhead_current"};
		double val[] = {o_rss, o_stat, o_cur};
		for (int i = 0; i < 3; i++) {
			snprintf(extra, sizeof(extra),
			         "\"size\":%d,\"objects\":%zu,\"runs\":%d,\"metric\":\"%s\"",
			         MEM_SIZE, mem_objs(x), x->o.runs, metric[i]);
			bench_emit_json("mem", "accounted", extra, val[i], "B/object");
		}
	}
	const char *t1 = target_in(x, "accounted", "mem-overhead-rss", o_rss, "B/object",
	                           bench_judge_le(o_rss, T_BYTES));
	const char *t2 = target_in(x, "accounted", "mem-overhead-stat", o_stat, "B/object",
	                           bench_judge_le(o_stat, T_BYTES));
	if (!x->o.json) {
		printf("\n== mem: %zu live %d B objects, accounted vs unaccounted (median of %d "
		       "run%s) ==\n",
		       mem_objs(x), MEM_SIZE, x->o.runs, x->o.runs > 1 ? "s" : "");
		printf("  RSS growth: unaccounted %.2f MiB, accounted %.2f MiB\n", g0 / 1048576.0,
		       g1 / 1048576.0);
		printf("  overhead per object, from the RSS difference:           %6.2f B  %s\n",
		       o_rss, t1);
		printf("  overhead per object, from memory.stat slab - %d x N:     %6.2f B  %s\n",
		       MEM_SIZE, o_stat, t2);
		printf("  overhead per object, from memory.current - %d x N:       %6.2f B  "
		       "(whole pages; for information)\n",
		       MEM_SIZE, o_cur);
		printf("target: <= %.0f B per object\n", T_BYTES);
	}
	mat_free(&m);
	return 0;
}

/* ---- tenants ---- */

static const char *const tenant_names[] = {"1", "8", "16", "64"};

static int tenants_args(const struct ctx *x, int cfg, char buf[][32], const char **a)
{
	(void)cfg;
	snprintf(buf[0], 32, "%u", x->o.smoke ? 20000u : 4000000u);
	a[0] = buf[0];
	return 1;
}

static int case_tenants(struct ctx *x)
{
	struct matrix m;
	if (measure(x, "tenants", tenant_names, 4, 1, 1, tenants_args, &m))
		return -1;
	if (!x->o.json) {
		printf("\n== tenants: N groups take turns, one accounted %d B object each; ns per "
		       "free+alloc step (wall time, median of %d run%s) ==\n",
		       PAIR_SIZE, m.runs, m.runs > 1 ? "s" : "");
		printf("  %-8s %10s %10s\n", "groups", "ns/step", "vs 1");
	}
	double one = mat_median(&m, 0, 0, 0, 1);
	for (int k = 0; k < 4; k++) {
		double v = mat_median(&m, 0, k, 0, 1);
		if (x->o.json) {
			char extra[96];
			snprintf(extra, sizeof(extra), "\"size\":%d,\"threads\":1,\"groups\":%s",
			         PAIR_SIZE, tenant_names[k]);
			bench_emit_json("tenants", tenant_names[k], extra, v, "ns");
		} else {
			printf("  %-8s %10.2f %10.2f\n", tenant_names[k], v, one > 0 ? v / one : 0);
		}
	}
	if (!x->o.json)
		printf("no target: a CPU's byte stock has a word for each of 56 objcgs; a freed "
		       "object's charge moves to the next objcg that pops it\n");
	mat_free(&m);
	return 0;
}

/* ================================================================ main */

int bench_objcg_main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "--worker"))
		return worker_main(argc - 2, argv + 2);
	/* --case NAME runs one case; the rest are the common flags. */
	static const char *const cases[] = {"free1m", "pair", "mem", "tenants", NULL};
	const char *only;
	char *args[64];
	int nargs = bench_take_case(argc, argv, "objcg", cases, &only, args);
	if (nargs < 0)
		return 2;
	struct ctx x = {0};
	int rc = bench_parse_opts(nargs, args, &x.o);
	if (rc)
		return rc;
	x.threads = bench_threads(&x.o, MAX_THREADS);
	uint64_t t0 = bench_now_ns();
	if (!x.o.json)
		printf("memcg bench objcg%s: accounted objects; each measurement in its own "
		       "process, variants interleaved\n",
		       x.o.smoke ? " (smoke: figures mean nothing)" : "");
#define WANT(name) (!only || !strcmp(only, name))
	rc = (WANT("free1m") && case_free1m(&x)) || (WANT("pair") && case_pair(&x)) ||
	     (WANT("mem") && case_mem(&x)) || (WANT("tenants") && case_tenants(&x));
#undef WANT
	if (!rc && !x.o.json)
		printf("\ntargets: %d met (PASS or TIE), %d missed (%.0f s)\n", x.met, x.missed,
		       (double)(bench_now_ns() - t0) / 1e9);
	return rc ? 1 : 0;
}
