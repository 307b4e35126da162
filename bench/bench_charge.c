/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_charge.c - `memcg bench charge`: seed 002 side by side.
 *
 * Threads charge and uncharge one page at a time at the leaf of a 3-level
 * hierarchy (root -> a -> b -> c, so four counters), three ways:
 *   mutex  - a mutex per counter, taken level by level: the res_counter the
 *            seed replaced.  Contended acquisitions are counted as lock_stat
 *            does (a pthread_mutex_trylock failure before the lock).
 *   atomic - the lockless page counters, no stock (mcg_group_charge_nostock).
 *   stock  - mcg_charge / mcg_uncharge: the per-CPU stock, then the counters.
 *
 * Figure: wall ns per charge+uncharge pair per busy CPU, i.e. elapsed x
 * min(threads, CPUs) / pairs, so that oversubscribed runs (more threads than
 * CPUs) stay comparable.  Drift: a sampler reads the leaf's usage while the
 * stock variant runs; usage - pages in use is what the stocks hold; its
 * largest value must stay within 64 pages x CPUs.  Variants interleave
 * within each run; medians of --runs.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "group/group.h"
#include "harness.h"
#include "memcg/debug.h"

enum { V_MUTEX, V_ATOMIC, V_STOCK, NR_VARIANTS };
static const char *const variant_names[NR_VARIANTS] = {"mutex", "atomic", "stock"};

#define MAX_THREADS 64
#define LEVELS 4

/* The res_counter of 2009: a lock, a usage and a limit per level. */
struct res_counter {
	pthread_mutex_t lock;
	long usage, limit;
	struct res_counter *parent;
} __attribute__((aligned(64)));

static struct res_counter rc[LEVELS];
static mcg_group_t *leaf;

struct worker {
	pthread_t tid;
	int variant;
	long pairs;
	unsigned long contended;
	uint64_t t0, t1;      /* this thread's start and end */
	volatile long in_use; /* pages this thread holds now (0 or 1) */
	pthread_barrier_t *start;
} __attribute__((aligned(64)));

static struct worker workers[MAX_THREADS];
static volatile int sampling;
static long drift_max;
static int nthreads_now;

static void rc_lock(struct res_counter *c, unsigned long *contended)
{
	if (pthread_mutex_trylock(&c->lock) != 0) {
		(*contended)++;
		pthread_mutex_lock(&c->lock);
	}
}

static int rc_charge(unsigned long *contended)
{
	struct res_counter *c, *failed = NULL;
	for (c = &rc[LEVELS - 1]; c; c = c->parent) {
		rc_lock(c, contended);
		if (c->usage + 1 > c->limit) {
			pthread_mutex_unlock(&c->lock);
			failed = c;
			break;
		}
		c->usage++;
		pthread_mutex_unlock(&c->lock);
	}
	if (!failed)
		return 0;
	for (c = &rc[LEVELS - 1]; c != failed; c = c->parent) {
		rc_lock(c, contended);
		c->usage--;
		pthread_mutex_unlock(&c->lock);
	}
	return -1;
}

static void rc_uncharge(unsigned long *contended)
{
	for (struct res_counter *c = &rc[LEVELS - 1]; c; c = c->parent) {
		rc_lock(c, contended);
		c->usage--;
		pthread_mutex_unlock(&c->lock);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned long contended = 0;
	pthread_barrier_wait(w->start);
	w->t0 = bench_now_ns();
	for (long i = 0; i < w->pairs; i++) {
		switch (w->variant) {
		case V_MUTEX:
			if (rc_charge(&contended) == 0)
				rc_uncharge(&contended);
			break;
		case V_ATOMIC:
			if (mcg_group_charge_nostock(leaf, 1, 0) == 0)
				mcg_group_uncharge_nostock(leaf, 1);
			break;
		default:
			if (mcg_charge(leaf, 1, 0) == 0) {
				w->in_use = 1;
				w->in_use = 0;
				mcg_uncharge(leaf, 1);
			}
			break;
		}
	}
	w->t1 = bench_now_ns();
	w->contended = contended;
	return NULL;
}

/* Stock variant: usage minus pages in use is what the stocks hold. */
static void *sampler_main(void *arg)
{
	while (__atomic_load_n(&sampling, __ATOMIC_RELAXED)) {
		long usage = mcg_page_counter_read(&leaf->memory), in_use = 0;
		for (int i = 0; i < nthreads_now; i++)
			in_use += workers[i].in_use;
		long drift = usage - in_use;
		if (drift > drift_max)
			drift_max = drift;
		usleep(200);
	}
	return NULL;
}

/* One measurement: ns per pair per busy CPU; *contended for mutex. */
static double measure(int variant, int threads, long total_pairs, unsigned long *contended)
{
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
	nthreads_now = threads;
	pthread_t sampler;
	bool sample = variant == V_STOCK;
	if (sample) {
		sampling = 1;
		pthread_create(&sampler, NULL, sampler_main, NULL);
	}
	for (int i = 0; i < threads; i++) {
		workers[i] = (struct worker){
		        .variant = variant, .pairs = total_pairs / threads, .start = &start};
		pthread_create(&workers[i].tid, NULL, worker_main, &workers[i]);
	}
	pthread_barrier_wait(&start);
	uint64_t t0 = UINT64_MAX, t1 = 0;
	*contended = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(workers[i].tid, NULL);
		*contended += workers[i].contended;
		t0 = workers[i].t0 < t0 ? workers[i].t0 : t0;
		t1 = workers[i].t1 > t1 ? workers[i].t1 : t1;
	}
	if (sample) {
		sampling = 0;
		pthread_join(sampler, NULL);
	}
	pthread_barrier_destroy(&start);
	unsigned cpus = mcg_nr_cpus();
	double busy = threads < (int)cpus ? (double)threads : (double)cpus;
	return (double)(t1 - t0) * busy / (double)((total_pairs / threads) * threads);
}

static int setup(void)
{
	mcg_group_t *a, *b;
	if (mcg_group_create(NULL, "bench-charge-a", &a) || mcg_group_create(a, "b", &b) ||
	    mcg_group_create(b, "c", &leaf))
		return -1;
	mcg_group_put(a);
	mcg_group_put(b);
	for (int i = 0; i < LEVELS; i++) {
		pthread_mutex_init(&rc[i].lock, NULL);
		rc[i].limit = 1L << 40;
		rc[i].parent = i ? &rc[i - 1] : NULL;
	}
	return 0;
}

int bench_charge_main(int argc, char **argv)
{
	struct bench_opts o;
	if (bench_parse_opts(argc, argv, &o))
		return 2;
	if (setup()) {
		fprintf(stderr, "memcg bench charge: cannot create the groups\n");
		return 1;
	}
	int all_threads[] = {1, 2, 4, 8, 16};
	int nt = 5;
	if (o.threads > 0) {
		all_threads[0] = o.threads > MAX_THREADS ? MAX_THREADS : o.threads;
		nt = 1;
	} else if (o.smoke) {
		nt = 2;
	}
	long pairs = o.smoke ? 200000 : 2000000;
	unsigned cpus = mcg_nr_cpus();
	/* All charges go to one leaf: only its entry of each CPU's stock can
	 * hold pages of this hierarchy, so the drift is bounded by one entry
	 * per CPU (64 pages x CPUs, the target), not by the whole
	 * stock's slack (MCG_GROUP_STOCK_SLACK_PAGES x CPUs, for many groups). */
	long bound = (long)MCG_GROUP_STOCK_PAGES * cpus;
	double ns[5][NR_VARIANTS][64];
	double cont[5][64];
	long drift[5] = {0};
	bench_progress("charge: %ld pairs per measurement, %d run(s), %u CPUs, %s per-CPU path",
	               pairs, o.runs, cpus,
	               mcg_percpu_mode() == MCG_PERCPU_RSEQ ? "rseq" : "locked");
	int runs = o.runs > 64 ? 64 : o.runs;
	for (int r = 0; r < runs; r++) {
		for (int t = 0; t < nt; t++) {
			for (int v = 0; v < NR_VARIANTS; v++) {
				unsigned long c = 0;
				drift_max = 0;
				ns[t][v][r] = measure(v, all_threads[t], pairs, &c);
				if (v == V_MUTEX)
					cont[t][r] = (double)c;
				if (v == V_STOCK && drift_max > drift[t])
					drift[t] = drift_max;
			}
		}
	}
	mcg_group_drain_stocks();
	long rest = mcg_page_counter_read(&leaf->memory);

	if (!o.json) {
		printf("memcg bench charge: ns per charge+uncharge pair per busy CPU, "
		       "median of %d; 4 counter levels\n",
		       runs);
		printf("%7s %10s %10s %10s %12s %12s %14s\n", "threads", "mutex", "atomic", "stock",
		       "mutex/stock", "contentions", "drift (pages)");
	}
	bool ok = rest == 0;
	for (int t = 0; t < nt; t++) {
		double m[NR_VARIANTS];
		for (int v = 0; v < NR_VARIANTS; v++)
			m[v] = bench_median(ns[t][v], runs);
		double c = bench_median(cont[t], runs);
		if (drift[t] > bound)
			ok = false;
		if (o.json) {
			char extra[160];
			for (int v = 0; v < NR_VARIANTS; v++) {
				int n = snprintf(extra, sizeof(extra), "\"threads\":%d",
				                 all_threads[t]);
				if (v == V_MUTEX)
					snprintf(extra + n, sizeof(extra) - n,
					         ",\"contentions\":%.0f", c);
				if (v == V_STOCK)
					snprintf(extra + n, sizeof(extra) - n,
					         ",\"drift_pages\":%ld,\"drift_bound_pages\":%ld",
					         drift[t], bound);
				bench_emit_json("charge", variant_names[v], extra, m[v], "ns/pair");
			}
		} else {
			printf("%7d %10.1f %10.1f %10.1f %11.1fx %12.0f %7ld / %ld\n",
			       all_threads[t], m[V_MUTEX], m[V_ATOMIC], m[V_STOCK],
			       m[V_MUTEX] / m[V_STOCK], c, drift[t], bound);
		}
	}
	if (!o.json)
		printf("at rest after a drain: leaf usage %ld pages (must be 0)\n", rest);
	return ok ? 0 : 1;
}
