/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_charge.c - `memcg bench charge`: seed 002 side by side.
 *
 * The hierarchy: root -> a -> b -> 64 leaves, so a charge at a leaf
 * touches four counters.  Four variants charge and uncharge pages there:
 *   spin   - the res_counter of 2009: a lock, a usage and a limit per
 *            level, taken level by level (res_counter_charge), the lock a
 *            test-and-test-and-set spin lock whose waiter yields after 64
 *            spins (the kernel's holder runs with irqs off and is never
 *            preempted; a user-space holder can be, as memcg's own mcg_spin
 *            allows for);
 *   mutex  - the same with an adaptive mutex per level (as memcg's locks);
 *   atomic - the lockless page counters, no stock (mcg_group_charge_nostock);
 *   stock  - mcg_charge / mcg_uncharge: the per-CPU stock, then the counters.
 * Two workloads, each run by every variant:
 *   pair - charge one page at leaf 0 and uncharge it at once: the stock's
 *          best case (it never misses);
 *   held - each thread holds HOLD pages charged to leaves chosen at random:
 *          a step charges a page to a random leaf and uncharges the
 *          thread's oldest page; 64 groups against the stock's 7 entries
 *          per CPU, so the stock misses on most steps.
 * Every variant does the same work (the random numbers are the same
 * sequence, the held-page bookkeeping the same stores) through its own
 * charge call, on the same threads and clock.
 *
 * Within a round, for each thread count, one pool of threads (thread i
 * pinned to the (i mod CPUs)-th CPU allowed) runs every (workload,
 * variant) in turn, the variants' order rotating from round to round.  Figures: wall ns per
 * charge+uncharge pair per busy CPU (elapsed x min(threads, CPUs) / pairs: oversubscribed runs stay
 * comparable), and CPU ns per pair beside it; medians over rounds, ratios round by round
 * (bench_ratio_median).  Contentions: the spin lock counts in its slow
 * path (the exchange that failed is the acquisition attempt itself); the
 * mutex's are counted in one extra untimed run per case with a trylock
 * before the lock, so the timed mutex path is pthread_mutex_lock alone.
 *
 * Checks (a failure is an exit status of 1): while each variant runs, a
 * sampler reads every leaf's usage less the pages the threads hold: at most
 * 64 pages x CPUs (one stock entry per CPU), 64 x threads when there are
 * more threads than CPUs (drift_bound()); with the threads stopped and
 * their pages still held, a leaf's usage less pages held equals what the
 * stocks hold for it exactly (0 without a stock) and is at most 64 x CPUs,
 * and so does a level's, with what they hold for its subtree (its own
 * entries serve its children); after every run,
 * with all pages uncharged and the stocks drained, every counter of every
 * variant reads 0.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "group/group.h"
#include "harness.h"
#include "memcg/debug.h"

enum { V_SPIN, V_MUTEX, V_ATOMIC, V_STOCK, NR_VARIANTS };
static const char *const variant_names[NR_VARIANTS] = {"spin", "mutex", "atomic", "stock"};

enum { W_PAIR, W_HELD, NR_WORKLOADS };
static const char *const workload_names[NR_WORKLOADS] = {"pair", "held"};

#define MAX_THREADS 64
#define NGROUPS 64 /* leaves of the held workload (a power of two) */
#define HOLD 256   /* pages each thread holds in the held workload */
#define LEVELS 3   /* root, a, b: the leaves' ancestors */
#define MAX_ROUNDS 64
#define NTHREADS_MAX 5 /* thread counts per invocation */

/* The res_counter of 2009: a lock, a usage and a limit per level. */
struct res_counter {
	uint32_t spin;         /* spin variant: 0 free, 1 held */
	pthread_mutex_t mutex; /* mutex variant (adaptive) */
	long usage, limit;     /* under the lock; usage also read racily by the sampler */
	struct res_counter *parent;
} __attribute__((aligned(64)));

/* [0] spin, [1] mutex: levels 0..2 (root, a, b), then leaf g at LEVELS + g. */
static struct res_counter rcs[2][LEVELS + NGROUPS];
static mcg_group_t *grp_a, *grp_b, *leaves[NGROUPS];

/* How a res_counter lock is taken: the spin lock, the mutex, the mutex with a
 * counting trylock (the untimed run); K_NONE: no res_counter. */
enum { K_NONE, K_SPIN, K_MUTEX, K_MUTEX_COUNTED };

struct worker {
	pthread_t tid;
	int idx;
	long held[NGROUPS]; /* pages held per leaf (relaxed atomics: the sampler reads) */
	unsigned char ring[HOLD];
	uint64_t t0, t1, c0, c1; /* wall and CPU clocks around the timed loop */
	unsigned long contended;
} __attribute__((aligned(64)));

static struct worker workers[MAX_THREADS];

/* The job the pool runs next (written by the main thread between barriers). */
static struct {
	int workload, variant, kind, threads;
	long pairs; /* per thread */
	int quit;
} job;
static pthread_barrier_t bar;

/* ------------------------------------------------------------ res_counter */

static mcg_noinline void spin_wait(uint32_t *l, unsigned long *contended)
{
	(*contended)++;
	for (unsigned spins = 0;; spins++) {
		if (!__atomic_load_n(l, __ATOMIC_RELAXED) &&
		    !__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
			return;
		if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#endif
		} else {
			sched_yield();
		}
	}
}

static inline __attribute__((always_inline)) void rc_lock(struct res_counter *c, int kind,
                                                          unsigned long *contended)
{
	if (kind == K_SPIN) {
		if (unlikely(__atomic_exchange_n(&c->spin, 1, __ATOMIC_ACQUIRE)))
			spin_wait(&c->spin, contended);
	} else if (kind == K_MUTEX) {
		pthread_mutex_lock(&c->mutex);
	} else if (pthread_mutex_trylock(&c->mutex)) {
		(*contended)++;
		pthread_mutex_lock(&c->mutex);
	}
}

static inline __attribute__((always_inline)) void rc_unlock(struct res_counter *c, int kind)
{
	if (kind == K_SPIN)
		__atomic_store_n(&c->spin, 0, __ATOMIC_RELEASE);
	else
		pthread_mutex_unlock(&c->mutex);
}

static inline __attribute__((always_inline)) void rc_add(struct res_counter *c, long d)
{
	__atomic_store_n(&c->usage, c->usage + d, __ATOMIC_RELAXED);
}

/* res_counter_charge: each level's lock in turn, from the leaf up; undo on failure. */
static inline __attribute__((always_inline)) int rc_charge(struct res_counter *leaf, int kind,
                                                           unsigned long *contended)
{
	struct res_counter *c, *failed = NULL;
	for (c = leaf; c; c = c->parent) {
		rc_lock(c, kind, contended);
		if (c->usage + 1 > c->limit)
			failed = c;
		else
			rc_add(c, 1);
		rc_unlock(c, kind);
		if (failed)
			break;
	}
	if (likely(!failed))
		return 0;
	for (c = leaf; c != failed; c = c->parent) {
		rc_lock(c, kind, contended);
		rc_add(c, -1);
		rc_unlock(c, kind);
	}
	return -1;
}

static inline __attribute__((always_inline)) void rc_uncharge(struct res_counter *leaf, int kind,
                                                              unsigned long *contended)
{
	for (struct res_counter *c = leaf; c; c = c->parent) {
		rc_lock(c, kind, contended);
		rc_add(c, -1);
		rc_unlock(c, kind);
	}
}

/* ------------------------------------------------------------ the workers */

static inline __attribute__((always_inline)) void charge(int v, int kind, unsigned g,
                                                         unsigned long *contended)
{
	switch (v) {
	case V_SPIN:
	case V_MUTEX:
		if (rc_charge(&rcs[v][LEVELS + g], kind, contended))
			abort(); /* no limit is set: a charge cannot fail */
		break;
	case V_ATOMIC:
		if (mcg_group_charge_nostock(leaves[g], 1, 0))
			abort();
		break;
	default:
		if (mcg_charge(leaves[g], 1, 0))
			abort();
		break;
	}
}

static inline __attribute__((always_inline)) void uncharge(int v, int kind, unsigned g,
                                                           unsigned long *contended)
{
	switch (v) {
	case V_SPIN:
	case V_MUTEX: rc_uncharge(&rcs[v][LEVELS + g], kind, contended); break;
	case V_ATOMIC: mcg_group_uncharge_nostock(leaves[g], 1); break;
	default: mcg_uncharge(leaves[g], 1); break;
	}
}

static inline void held_add(struct worker *w, unsigned g, long d)
{
	__atomic_store_n(&w->held[g], w->held[g] + d, __ATOMIC_RELAXED);
}

static inline unsigned rnd(uint64_t *s)
{
	*s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
	return (unsigned)(*s >> 32);
}

/* The timed loop, specialised for each (workload, variant, kind) by inlining. */
static inline __attribute__((always_inline)) void loop(struct worker *w, int wl, int v, int kind,
                                                       long pairs, uint64_t *rng)
{
	unsigned long contended = 0;
	if (wl == W_PAIR) {
		for (long i = 0; i < pairs; i++) {
			charge(v, kind, 0, &contended);
			held_add(w, 0, 1);
			uncharge(v, kind, 0, &contended);
			held_add(w, 0, -1);
		}
	} else {
		unsigned slot = 0;
		for (long i = 0; i < pairs; i++) {
			unsigned g = rnd(rng) & (NGROUPS - 1), old = w->ring[slot];
			charge(v, kind, g, &contended);
			held_add(w, g, 1);
			w->ring[slot] = (unsigned char)g;
			uncharge(v, kind, old, &contended);
			held_add(w, old, -1);
			slot = slot + 1 == HOLD ? 0 : slot + 1;
		}
	}
	w->contended = contended;
}

static mcg_noinline void run_timed(struct worker *w, uint64_t *rng)
{
	long n = job.pairs;
#define CASE(wl, v, k)                                                                             \
	if (job.workload == (wl) && job.variant == (v) && job.kind == (k)) {                       \
		loop(w, wl, v, k, n, rng);                                                         \
		return;                                                                            \
	}
	CASE(W_PAIR, V_SPIN, K_SPIN)
	CASE(W_PAIR, V_MUTEX, K_MUTEX)
	CASE(W_PAIR, V_MUTEX, K_MUTEX_COUNTED)
	CASE(W_PAIR, V_ATOMIC, K_NONE)
	CASE(W_PAIR, V_STOCK, K_NONE)
	CASE(W_HELD, V_SPIN, K_SPIN)
	CASE(W_HELD, V_MUTEX, K_MUTEX)
	CASE(W_HELD, V_MUTEX, K_MUTEX_COUNTED)
	CASE(W_HELD, V_ATOMIC, K_NONE)
	CASE(W_HELD, V_STOCK, K_NONE)
#undef CASE
	abort();
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	bench_pin_to(bench_thread_cpu(w->idx));
	for (;;) {
		pthread_barrier_wait(&bar); /* go */
		if (job.quit)
			return NULL;
		int v = job.variant, kind = job.kind;
		unsigned long dummy = 0;
		/* The same random sequence for every variant. */
		uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(w->idx + 1);
		memset(w->held, 0, sizeof(w->held));
		if (job.workload == W_HELD) /* untimed: take the pages to hold */
			for (unsigned i = 0; i < HOLD; i++) {
				unsigned g = rnd(&rng) & (NGROUPS - 1);
				charge(v, kind, g, &dummy);
				held_add(w, g, 1);
				w->ring[i] = (unsigned char)g;
			}
		pthread_barrier_wait(&bar); /* filled */
		w->c0 = bench_thread_cpu_ns();
		w->t0 = bench_now_ns();
		run_timed(w, &rng);
		w->t1 = bench_now_ns();
		w->c1 = bench_thread_cpu_ns();
		pthread_barrier_wait(&bar); /* done: the main thread checks */
		pthread_barrier_wait(&bar); /* checked */
		if (job.workload == W_HELD)
			for (unsigned i = 0; i < HOLD; i++) {
				uncharge(v, kind, w->ring[i], &dummy);
				held_add(w, w->ring[i], -1);
			}
		pthread_barrier_wait(&bar); /* released */
	}
}

/* ------------------------------------------------------------ the checks */

/* Usage of leaf @g (level -1: the leaf; else level 0..2) under variant @v. */
static long usage_of(int v, int level, unsigned g)
{
	if (v == V_SPIN || v == V_MUTEX) {
		int i = level < 0 ? LEVELS + (int)g : level;
		return __atomic_load_n(&rcs[v][i].usage, __ATOMIC_RELAXED);
	}
	mcg_group_t *grp = level < 0    ? leaves[g]
	                   : level == 0 ? mcg_group_root()
	                   : level == 1 ? grp_a
	                                : grp_b;
	return mcg_page_counter_read(&grp->memory);
}

static long held_sum(unsigned g)
{
	long s = 0;
	for (int t = 0; t < job.threads; t++)
		s += __atomic_load_n(&workers[t].held[g], __ATOMIC_RELAXED);
	return s;
}

static struct {
	int on, quit;
	long drift_max;
} sampler;

/*
 * Usage less pages held, per leaf, while the threads run.  Held counts
 * rise after a charge returns and fall after an uncharge returns; they
 * are read before and after the usage, and the larger taken, so that a
 * page in flight between the reads counts as held.
 */
static void *sampler_main(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&sampler.quit, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&sampler.on, __ATOMIC_ACQUIRE)) {
			unsigned n = job.workload == W_PAIR ? 1 : NGROUPS;
			for (unsigned g = 0; g < n; g++) {
				long a = held_sum(g), u = usage_of(job.variant, -1, g),
				     b = held_sum(g);
				long d = u - (a > b ? a : b);
				if (d > sampler.drift_max)
					__atomic_store_n(&sampler.drift_max, d, __ATOMIC_RELAXED);
			}
		}
		usleep(200);
	}
	return NULL;
}

static long root_usage0; /* the root's usage before the benchmark charged anything */
static int ncpus;        /* CPUs this process may run on; worker i runs on the (i mod ncpus)-th */

/*
 * The most a leaf's usage may exceed the pages held: 64 pages (one stock
 * entry) per CPU, and, on a CPU that runs k > 1 threads, 64 more for each
 * thread beyond the first - one preempted inside the slow path holds a
 * batch it charged and has not stocked yet, or an entry it evicted and has
 * not uncharged yet.  So 64 x max(threads, CPUs) with threads pinned in
 * turn; plus a page per thread, which may take and release a page between
 * the sampler's reads of the held counts (they are not one snapshot).
 */
static long drift_bound(int threads)
{
	return (long)MCG_GROUP_STOCK_PAGES * (threads > ncpus ? threads : ncpus) + threads;
}

/* Threads stopped, pages held: usage - held == stocked, exactly, at every level. */
static bool check_quiescent(void)
{
	int v = job.variant;
	unsigned n = job.workload == W_PAIR ? 1 : NGROUPS;
	long all_extra = 0, all_held = 0;
	bool ok = true;
	for (unsigned g = 0; g < n; g++) {
		long held = held_sum(g), extra = usage_of(v, -1, g) - held;
		long stocked = v == V_STOCK ? mcg_stock_cached(leaves[g]) : 0;
		if (extra != stocked || stocked > (long)MCG_GROUP_STOCK_PAGES * ncpus) {
			fprintf(stderr,
			        "memcg bench charge: %s/%s leaf %u: usage %ld, held %ld, stocked "
			        "%ld\n",
			        workload_names[job.workload], variant_names[v], g, extra + held,
			        held, stocked);
			ok = false;
		}
		all_extra += extra;
		all_held += held;
	}
	for (int level = 1; level < LEVELS; level++) {
		/* A level's usage: the pages held below it, and what the stocks
		 * hold for it and its descendants (the leaves' entries, and its
		 * own, which serve charges of its children). */
		long u = usage_of(v, level, 0), want = all_held + all_extra;
		if (v == V_STOCK)
			want = all_held + mcg_stock_cached_subtree(level == 1 ? grp_a : grp_b);
		if (u != want) {
			fprintf(stderr,
			        "memcg bench charge: %s/%s level %d: usage %ld, expected %ld\n",
			        workload_names[job.workload], variant_names[v], level, u, want);
			ok = false;
		}
	}
	return ok;
}

/* Everything uncharged (and the stocks drained): every counter reads 0. */
static bool check_rest(void)
{
	bool ok = true;
	for (int v = 0; v < NR_VARIANTS; v++) {
		for (int level = 0; level < LEVELS; level++) {
			long want = v >= V_ATOMIC && level == 0 ? root_usage0 : 0;
			if (usage_of(v, level, 0) != want)
				ok = false;
		}
		for (unsigned g = 0; g < NGROUPS; g++)
			if (usage_of(v, -1, g) != 0)
				ok = false;
	}
	if (!ok)
		fprintf(stderr, "memcg bench charge: after %s/%s, a counter is not 0 at rest\n",
		        workload_names[job.workload], variant_names[job.variant]);
	return ok;
}

/* ------------------------------------------------------------ measuring */

struct sample {
	double wall, cpu; /* ns per pair: wall per busy CPU, CPU */
	double contended;
	long drift;
};

/* Run the current job on the pool; check it. */
static bool run_job(struct sample *s)
{
	bool ok;
	int threads = job.threads;
	sampler.drift_max = 0;
	pthread_barrier_wait(&bar); /* go */
	__atomic_store_n(&sampler.on, 1, __ATOMIC_RELEASE);
	pthread_barrier_wait(&bar); /* filled */
	pthread_barrier_wait(&bar); /* done */
	__atomic_store_n(&sampler.on, 0, __ATOMIC_RELEASE);
	usleep(500); /* let a sample in progress finish */
	ok = check_quiescent();
	pthread_barrier_wait(&bar); /* checked */
	pthread_barrier_wait(&bar); /* released */
	mcg_group_drain_stocks();
	ok = check_rest() && ok;
	uint64_t t0 = UINT64_MAX, t1 = 0, cpu = 0;
	unsigned long contended = 0;
	for (int i = 0; i < threads; i++) {
		t0 = workers[i].t0 < t0 ? workers[i].t0 : t0;
		t1 = workers[i].t1 > t1 ? workers[i].t1 : t1;
		cpu += workers[i].c1 - workers[i].c0;
		contended += workers[i].contended;
	}
	double busy = threads < ncpus ? threads : ncpus, pairs = (double)job.pairs * threads;
	s->wall = (double)(t1 - t0) * busy / pairs;
	s->cpu = (double)cpu / pairs;
	s->contended = (double)contended;
	s->drift = __atomic_load_n(&sampler.drift_max, __ATOMIC_RELAXED);
	return ok;
}

static void pool_start(int threads)
{
	job.threads = threads;
	job.quit = 0;
	pthread_barrier_init(&bar, NULL, (unsigned)threads + 1);
	for (int i = 0; i < threads; i++) {
		workers[i].idx = i;
		bench_start_thread(&workers[i].tid, worker_main, &workers[i]);
	}
}

static void pool_stop(void)
{
	job.quit = 1;
	pthread_barrier_wait(&bar);
	for (int i = 0; i < job.threads; i++)
		pthread_join(workers[i].tid, NULL);
	pthread_barrier_destroy(&bar);
}

static int setup(void)
{
	char name[16];
	if (mcg_group_create(NULL, "bench-charge-a", &grp_a) ||
	    mcg_group_create(grp_a, "b", &grp_b))
		return -1;
	for (unsigned g = 0; g < NGROUPS; g++) {
		snprintf(name, sizeof(name), "c%u", g);
		if (mcg_group_create(grp_b, name, &leaves[g]))
			return -1;
	}
	pthread_mutexattr_t attr;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < LEVELS + NGROUPS; i++) {
			struct res_counter *c = &rcs[k][i];
			pthread_mutex_init(&c->mutex, &attr);
			c->limit = 1L << 40;
			c->parent = i == 0       ? NULL
			            : i < LEVELS ? &rcs[k][i - 1]
			                         : &rcs[k][LEVELS - 1];
		}
	pthread_mutexattr_destroy(&attr);
	root_usage0 = mcg_page_counter_read(&mcg_group_root()->memory);
	return 0;
}

/* ------------------------------------------------------------ targets */

/* The targets, judged at 2 threads and more on the wall-time ratios. */
enum { T_STOCK_ATOMIC, T_ATOMIC_RC, T_STOCK_RC, NR_TARGETS };
static const char *const target_names[NR_TARGETS] = {"stock<=atomic", "atomic<=res_counter",
                                                     "stock<=res_counter"};

int bench_charge_main(int argc, char **argv)
{
	struct bench_opts o;
	if (bench_parse_opts(argc, argv, &o))
		return 2;
	if (setup()) {
		fprintf(stderr, "memcg bench charge: cannot create the groups\n");
		return 1;
	}
	int tcount[NTHREADS_MAX] = {1, 2, 4, 8, 16}, nt = NTHREADS_MAX;
	if (o.threads > 0) {
		tcount[0] = o.threads > MAX_THREADS ? MAX_THREADS : o.threads;
		nt = 1;
	} else if (o.smoke) {
		nt = 2;
	}
	long pairs[NR_WORKLOADS] = {o.smoke ? 100000 : 2000000, o.smoke ? 50000 : 1000000};
	int runs = o.runs > MAX_ROUNDS ? MAX_ROUNDS : o.runs;
	int cpus[CPU_SETSIZE];
	ncpus = bench_allowed_cpus(cpus, CPU_SETSIZE);
	if (ncpus < 1)
		ncpus = 1;
	bench_progress("charge: %ld / %ld pairs per measurement (pair / held), %d round(s), %d "
	               "CPUs, %s per-CPU path",
	               pairs[W_PAIR], pairs[W_HELD], runs, ncpus,
	               mcg_percpu_mode() == MCG_PERCPU_RSEQ ? "rseq" : "locked");
	static struct sample smp[NR_WORKLOADS][NTHREADS_MAX][NR_VARIANTS][MAX_ROUNDS];
	static double mutex_cont[NR_WORKLOADS][NTHREADS_MAX];
	bool ok = true;
	pthread_t sampler_tid;
	bench_start_thread(&sampler_tid, sampler_main, NULL);
	for (int r = 0; r < runs; r++) {
		for (int t = 0; t < nt; t++) {
			pool_start(tcount[t]);
			for (int w = 0; w < NR_WORKLOADS; w++) {
				job.workload = w;
				job.pairs = pairs[w] / tcount[t];
				for (int i = 0; i < NR_VARIANTS; i++) {
					int v = (i + r) % NR_VARIANTS;
					job.variant = v;
					job.kind = v == V_SPIN    ? K_SPIN
					           : v == V_MUTEX ? K_MUTEX
					                          : K_NONE;
					ok = run_job(&smp[w][t][v][r]) && ok;
				}
				if (r == runs - 1) { /* the mutex's contentions, untimed */
					struct sample s;
					job.variant = V_MUTEX;
					job.kind = K_MUTEX_COUNTED;
					ok = run_job(&s) && ok;
					mutex_cont[w][t] = s.contended;
				}
			}
			pool_stop();
		}
	}
	__atomic_store_n(&sampler.quit, 1, __ATOMIC_RELEASE);
	pthread_join(sampler_tid, NULL);

	int met = 0, judged = 0;
	for (int w = 0; w < NR_WORKLOADS; w++) {
		if (!o.json)
			printf("%s%s: %s; wall ns per charge+uncharge pair per busy CPU (CPU ns), "
			       "median of %d\n",
			       w ? "\n" : "", workload_names[w],
			       w == W_PAIR ? "one page charged and uncharged at once at one leaf"
			                   : "each thread holds 256 pages over 64 leaves at random",
			       runs);
		if (!o.json)
			printf("%7s %15s %15s %15s %15s %7s %7s %7s %11s %11s %9s\n", "threads",
			       "spin", "mutex", "atomic", "stock", "st/at", "at/rc", "st/rc",
			       "cont spin", "cont mutex", "drift");
		for (int t = 0; t < nt; t++) {
			double wall[NR_VARIANTS], cpu[NR_VARIANTS], v1[MAX_ROUNDS], v2[MAX_ROUNDS];
			long drift = 0, bound = drift_bound(tcount[t]);
			for (int v = 0; v < NR_VARIANTS; v++) {
				for (int r = 0; r < runs; r++) {
					v1[r] = smp[w][t][v][r].wall;
					v2[r] = smp[w][t][v][r].cpu;
					if (smp[w][t][v][r].drift > drift)
						drift = smp[w][t][v][r].drift;
				}
				wall[v] = bench_median(v1, runs);
				cpu[v] = bench_median(v2, runs);
			}
			for (int r = 0; r < runs; r++)
				v1[r] = smp[w][t][V_SPIN][r].contended;
			double spin_cont = bench_median(v1, runs);
			if (drift > bound) {
				fprintf(stderr, "memcg bench charge: drift %ld pages > %ld\n",
				        drift, bound);
				ok = false;
			}
			/* Round-by-round ratios of wall time. */
			double num[NR_VARIANTS][MAX_ROUNDS];
			for (int v = 0; v < NR_VARIANTS; v++)
				for (int r = 0; r < runs; r++)
					num[v][r] = smp[w][t][v][r].wall;
			double st_at = bench_ratio_median(num[V_STOCK], num[V_ATOMIC], runs);
			double rc_ratio[2][2]; /* [atomic/stock][spin/mutex] */
			bool use[2] = {true, true};
			int who[2];
			for (int k = 0; k < 2; k++) {
				rc_ratio[0][k] = bench_ratio_median(num[V_ATOMIC], num[k], runs);
				rc_ratio[1][k] = bench_ratio_median(num[V_STOCK], num[k], runs);
			}
			double at_rc = bench_worst(rc_ratio[0], use, 2, &who[0]);
			double st_rc = bench_worst(rc_ratio[1], use, 2, &who[1]);
			double ratio[NR_TARGETS] = {st_at, at_rc, st_rc};
			const char *against[NR_TARGETS] = {"atomic", variant_names[who[0]],
			                                   variant_names[who[1]]};
			bool judge = tcount[t] >= 2;
			enum bench_verdict vd[NR_TARGETS];
			for (int k = 0; k < NR_TARGETS; k++) {
				vd[k] = bench_judge_le(ratio[k], 1.0);
				if (judge) {
					judged++;
					met += bench_verdict_met(vd[k]);
				}
			}
			if (o.json) {
				char extra[256];
				for (int v = 0; v < NR_VARIANTS; v++) {
					int n = snprintf(extra, sizeof(extra),
					                 "\"workload\":\"%s\",\"threads\":%d,\"cpu_"
					                 "ns\":%.2f",
					                 workload_names[w], tcount[t], cpu[v]);
					if (v == V_SPIN || v == V_MUTEX)
						snprintf(extra + n, sizeof(extra) - (size_t)n,
						         ",\"contentions\":%.0f",
						         v == V_SPIN ? spin_cont
						                     : mutex_cont[w][t]);
					if (v == V_STOCK)
						snprintf(extra + n, sizeof(extra) - (size_t)n,
						         ",\"drift_pages\":%ld,\"drift_bound_"
						         "pages\":%ld",
						         drift, bound);
					bench_emit_json("charge", variant_names[v], extra, wall[v],
					                "ns/pair");
				}
				for (int k = 0; judge && k < NR_TARGETS; k++) {
					snprintf(extra, sizeof(extra),
					         "\"workload\":\"%s\",\"threads\":%d,\"against\":"
					         "\"%s\","
					         "\"target\":1.0,\"verdict\":\"%s\",\"pass\":%s",
					         workload_names[w], tcount[t], against[k],
					         bench_verdict_name(vd[k]),
					         bench_verdict_met(vd[k]) ? "true" : "false");
					bench_emit_json("charge-target", target_names[k], extra,
					                ratio[k], "x");
				}
			} else {
				printf("%7d", tcount[t]);
				for (int v = 0; v < NR_VARIANTS; v++)
					printf(" %6.1f (%6.1f)", wall[v], cpu[v]);
				printf(" %6.2fx %6.2fx %6.2fx %11.0f %11.0f %4ld/%-4ld\n", st_at,
				       at_rc, st_rc, spin_cont, mutex_cont[w][t], drift, bound);
			}
			if (!o.json && judge)
				printf("        targets: stock <= atomic %s, atomic <= res_counter "
				       "(worst: %s) %s, stock <= res_counter (worst: %s) %s\n",
				       bench_verdict_name(vd[0]), against[1],
				       bench_verdict_name(vd[1]), against[2],
				       bench_verdict_name(vd[2]));
		}
	}
	if (!o.json)
		printf("\ntargets met (PASS or TIE, 3 %% band), at 2 threads and more: %d of %d\n"
		       "counters: drift within its bound while running, exact with the threads "
		       "stopped, 0 at rest after every run: %s\n",
		       met, judged, ok ? "yes" : "NO");
	return ok ? 0 : 1;
}
