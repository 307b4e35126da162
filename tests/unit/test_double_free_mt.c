/* SPDX-License-Identifier: MIT */
/*
 * test_double_free_mt.c - a double free across CPUs (slab/slab.c, the
 * flush): an object freed on one CPU and freed again on another sits in two
 * CPU arrays at once.  Neither push can see it (each array holds it once,
 * and only the top of one array is compared); the flush that takes the
 * second copy back to its slab finds its bit clear already and reports it.
 * So the double free is reported, exactly once, at the latest when the
 * arrays are drained - by shrink, by reap or by destroy - and nothing else
 * goes wrong: the object goes back to its slab once, is handed out once
 * afterwards, and an accounted object's charge is given back once (its
 * group's usage is 0 at rest, not below).
 *
 *   thread pinned to CPU A:  x = alloc(); free(x)     x in A's array
 *   thread pinned to CPU B:  free(x)                  x in B's array too
 *   no report yet; drain:    one double-free report, for x and its cache
 *
 * Victims: a plain cache (drained by shrink, by reap, by destroy), kmalloc,
 * an MCG_CACHE_ACCOUNT cache allocated inside a group, kmalloc accounted to
 * a group.  Needs two CPUs (skips with one).  Runs again with MCG_RSEQ=0
 * (the locked path); under TSan (locked only) once.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/compiler.h" /* MCG_TSAN */
#include "memcg/debug.h"
#include "memcg/group.h"
#include "memcg/kmalloc.h"
#include "memcg/memcg.h"
#include "memcg/slab.h"
#include "slab/slab.h"
#include "cache_rest.h"
#include "group_file.h"
#include "test.h"

static int cpu_a = -1, cpu_b = -1; /* two CPUs this process may run on */

/* ---- reports ---- */

static int nreports, report_kind;
static const void *report_addr;
static char report_cache[32];

static void on_report(const mcg_report_t *r)
{
	if (__atomic_fetch_add(&nreports, 1, __ATOMIC_RELAXED) == 0) {
		report_kind = (int)r->kind;
		report_addr = r->addr;
		snprintf(report_cache, sizeof(report_cache), "%s", r->cache);
	}
}

static void reports_reset(void)
{
	nreports = 0;
	report_kind = 0;
	report_addr = NULL;
	report_cache[0] = 0;
}

/* ---- running on one CPU ---- */

struct on_cpu {
	int cpu;
	void (*fn)(void *);
	void *arg;
	int ran_on; /* sched_getcpu() after pinning */
};

static void *on_cpu_main(void *p)
{
	struct on_cpu *o = p;
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(o->cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) == 0) {
		o->ran_on = sched_getcpu();
		o->fn(o->arg);
	}
	return NULL;
}

/* Run @fn(@arg) in a thread pinned to @cpu; REQUIRE-style result: 0 if it ran there. */
static int run_on(int cpu, void (*fn)(void *), void *arg)
{
	struct on_cpu o = {cpu, fn, arg, -1};
	pthread_t t;
	if (pthread_create(&t, NULL, on_cpu_main, &o))
		return -1;
	pthread_join(t, NULL);
	return o.ran_on == cpu ? 0 : -1;
}

/* ---- victims ---- */

enum kind { PLAIN, KMALLOC, ACCOUNT_CACHE, KMALLOC_ACCOUNT };
enum drain { SHRINK, REAP, DESTROY };

struct victim {
	enum kind kind;
	mcg_cache_t *cache; /* PLAIN, ACCOUNT_CACHE: created here; KMALLOC*: its class */
	mcg_group_t *g;     /* the accounted kinds */
	void *obj;
};

static void *victim_alloc(struct victim *v)
{
	switch (v->kind) {
	case PLAIN: return mcg_cache_alloc(v->cache);
	case KMALLOC: return mcg_malloc(100);
	case ACCOUNT_CACHE: {
		mcg_group_t *prev = mcg_group_enter(v->g);
		void *p = mcg_cache_alloc(v->cache);
		mcg_group_leave(prev);
		return p;
	}
	case KMALLOC_ACCOUNT: return mcg_malloc_account(100, v->g);
	}
	return NULL;
}

static void victim_free(struct victim *v, void *p)
{
	if (v->kind == PLAIN || v->kind == ACCOUNT_CACHE)
		mcg_cache_free(v->cache, p);
	else
		mcg_free(p);
}

static void alloc_and_free(void *arg)
{
	struct victim *v = arg;
	v->obj = victim_alloc(v);
	if (!v->obj)
		return;
	memset(v->obj, 0x5a, 100);
	victim_free(v, v->obj);
}

static void free_again(void *arg)
{
	struct victim *v = arg;
	victim_free(v, v->obj);
}

/* How many slots of @cpu's array of @c hold @obj (tagged or not). */
static int in_array(mcg_cache_t *c, int cpu, const void *obj)
{
	struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(c->pcpu, (unsigned)cpu);
	int n = 0;
	for (uint32_t i = 0; i < st->cur; i++)
		n += mcg_slot_obj((uintptr_t)st->slots[i]) == obj;
	return n;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

/* The object went back once: 256 allocations on CPU A are all distinct. */
static void no_object_twice(void *arg)
{
	struct victim *v = arg;
	enum { M = 256 };
	void *got[M];
	int n = 0;
	for (; n < M; n++)
		if (!(got[n] = victim_alloc(v)))
			break;
	CHECK_EQ(n, M);
	qsort(got, (size_t)n, sizeof(void *), cmp_ptr);
	int dup = 0;
	for (int i = 1; i < n; i++)
		dup += got[i] == got[i - 1];
	CHECK_EQ(dup, 0);
	for (int i = 0; i < n; i++)
		victim_free(v, got[i]);
}

/*
 * The scenario: x freed on A, again on B, then the arrays drained by
 * @drain.  @v->cache is the cache x belongs to (found after the allocation
 * for the kmalloc kinds).
 */
static void double_free_across(struct victim *v, enum drain drain)
{
	reports_reset();
	size_t active0 = 0;
	if (v->cache) {
		mcg_cache_stats_t st;
		CHECK_EQ(mcg_cache_stats(v->cache, &st), 0);
		active0 = st.active_objs;
	}
	REQUIRE(run_on(cpu_a, alloc_and_free, v) == 0);
	REQUIRE(v->obj);
	if (!v->cache)
		v->cache = mcg_slab_of(v->obj)->cache; /* its kmalloc class */
	REQUIRE(run_on(cpu_b, free_again, v) == 0);
	/* Both arrays hold it; neither push could tell. */
	CHECK_EQ(in_array(v->cache, cpu_a, v->obj), 1);
	CHECK_EQ(in_array(v->cache, cpu_b, v->obj), 1);
	CHECK_EQ(nreports, 0);

	char name[32];
	mcg_cache_stats_t st;
	CHECK_EQ(mcg_cache_stats(v->cache, &st), 0);
	snprintf(name, sizeof(name), "%s", st.name);
	if (drain == SHRINK) {
		mcg_cache_shrink(v->cache);
	} else if (drain == REAP) {
		/* Reap gives back a fifth of each untouched array per call. */
		for (int i = 0; i < 100 && (in_array(v->cache, cpu_a, v->obj) ||
		                            in_array(v->cache, cpu_b, v->obj));
		     i++)
			mcg_cache_reap(v->cache);
	} else {
		CHECK_EQ(mcg_cache_destroy(v->cache), 0); /* no object live: destroyed */
		v->cache = NULL;
	}
	CHECK_EQ(nreports, 1);
	CHECK_EQ(report_kind, MCG_REPORT_DOUBLE_FREE);
	CHECK(report_addr == v->obj);
	CHECK(strcmp(report_cache, name) == 0);
	if (!v->cache)
		return;
	CHECK_EQ(in_array(v->cache, cpu_a, v->obj), 0);
	CHECK_EQ(in_array(v->cache, cpu_b, v->obj), 0);
	CHECK_EQ(mcg_cache_stats(v->cache, &st), 0);
	CHECK_EQ(st.active_objs, active0); /* x is free, and counted free once */
	if (v->g) {
		/* Its charge went back once: nothing left, nothing below 0. */
		mcg_group_drain_stocks();
		CHECK_EQ(read_long(v->g, "memory.current"), 0);
		CHECK_EQ(read_key(v->g, "memory.stat", "slab"), 0);
		CHECK_EQ(read_key(v->g, "memory.stat", "kernel"), 0);
	}
	REQUIRE(run_on(cpu_a, no_object_twice, v) == 0);
	CHECK_EQ(nreports, 1);
}

static void plain_cache(enum drain drain)
{
	struct victim v = {PLAIN, mcg_cache_create("dfree-cpus", 64, 0, 0, NULL), NULL, NULL};
	REQUIRE(v.cache);
	double_free_across(&v, drain);
	if (v.cache) {
		check_shrink_all_free(v.cache);
		CHECK_EQ(mcg_cache_destroy(v.cache), 0);
	}
	CHECK_EQ(nreports, 1);
}

static void test_plain_shrink(void) { plain_cache(SHRINK); }

static void test_plain_reap(void) { plain_cache(REAP); }

static void test_plain_destroy(void) { plain_cache(DESTROY); }

static void test_kmalloc(void)
{
	struct victim v = {KMALLOC, NULL, NULL, NULL};
	double_free_across(&v, SHRINK);
}

static void accounted(enum kind kind)
{
	mcg_group_t *g;
	REQUIRE(mcg_group_create(NULL, "dfree-cpus", &g) == 0);
	struct victim v = {kind, NULL, g, NULL};
	if (kind == ACCOUNT_CACHE) {
		v.cache = mcg_cache_create("dfree-acct", 64, 0, MCG_CACHE_ACCOUNT, NULL);
		REQUIRE(v.cache);
	}
	double_free_across(&v, SHRINK);
	if (kind == ACCOUNT_CACHE) {
		check_shrink_all_free(v.cache);
		CHECK_EQ(mcg_cache_destroy(v.cache), 0);
	}
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(g, "memory.current"), 0);
	CHECK_EQ(mcg_group_remove(g), 0);
	mcg_group_put(g);
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(mcg_group_root(), "memory.current"), 0);
}

static void test_account_cache(void) { accounted(ACCOUNT_CACHE); }

static void test_kmalloc_account(void) { accounted(KMALLOC_ACCOUNT); }

int main(int argc, char **argv)
{
	(void)argc;
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
		for (int c = 0; c < CPU_SETSIZE && cpu_b < 0; c++)
			if (CPU_ISSET(c, &allowed))
				*(cpu_a < 0 ? &cpu_a : &cpu_b) = c;
	if (cpu_b < 0)
		return test_skip("one CPU: no second CPU to free on");
	/* No aging: it would drain the arrays at moments of its choosing, and
	 * the test says when they drain. */
	if (mcg_option_set("reap_ms", 0))
		return 1;
	fprintf(stderr, "per-CPU mode: %s; CPUs %d and %d\n",
	        mcg_percpu_mode() == MCG_PERCPU_RSEQ ? "rseq" : "locked", cpu_a, cpu_b);
	mcg_set_report_handler(on_report);
	RUN(test_plain_shrink);
	RUN(test_plain_reap);
	RUN(test_plain_destroy);
	RUN(test_kmalloc);
	RUN(test_account_cache);
	RUN(test_kmalloc_account);
	int rc = test_done();
	if (!getenv("MCG_TEST_LOCKED") && mcg_percpu_mode() == MCG_PERCPU_RSEQ) {
		fprintf(stderr, "--- again with MCG_RSEQ=0 (locked path)\n");
		rc = test_merge(rc, test_run_locked(argv));
	}
	return rc;
}
