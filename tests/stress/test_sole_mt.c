/* SPDX-License-Identifier: MIT */
/*
 * test_sole_mt.c - a slab's sole objcg (slab/slab.h, enum mcg_slab_sole)
 * under concurrency.  Each worker charges a group of its own; all allocate
 * from one MCG_CACHE_ACCOUNT cache of small slabs and free each other's
 * objects, on CPUs they hop between, so slabs go from one objcg to mixed,
 * empty out and start afresh while other CPUs free into them.  A free that
 * tagged an object with the wrong objcg would move its charge to another
 * worker's group, so at every pause:
 *   - each group's memory.stat slab == its live objects x charge_size;
 *   - every live object whose slab names a sole objcg names its group's;
 * and at every free, what the free reads: a sole objcg is the object's.
 * and at the end every group reads 0 and none is left dying.  Every other
 * pause frees everything and flushes the CPU arrays, so that every slab
 * empties and starts afresh.  Both states (one objcg, mixed) must have
 * been met.
 *
 *     root
 *      `- t0 .. t3    one per worker (mcg_group_enter)
 *
 * Runs natively, then with MCG_RSEQ=0; under TSan (locks only) once, for
 * MCG_STRESS_SECONDS (default 2, 3 under TSan) each.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "base/compiler.h" /* MCG_TSAN */
#include "group/group.h"   /* mcg_objcg_of */
#include "group/objcg.h"
#include "memcg/debug.h"
#include "memcg/group.h"
#include "memcg/slab.h"
#include "slab/slab.h"
#include "group_file.h"
#include "stress.h"
#include "test.h"

#define WORKERS 4
#define LOCAL 300         /* objects a worker holds */
#define NSHARED 512       /* objects passed between workers */
#define OBJ_SIZE 4096     /* 16 objects a slab: they empty and refill often */
#define MAGIC 0x736f6c65u /* "sole" */

struct obj {
	uint32_t magic;
	uint32_t group; /* the worker whose group it is charged to */
};

static mcg_cache_t *k;
static mcg_group_t *groups[WORKERS];
static long live[WORKERS];    /* objects charged to each group (atomic) */
static void *shared[NSHARED]; /* atomic exchange */
static void *locals[WORKERS][LOCAL];
static int nlocal[WORKERS];
static pthread_rwlock_t pause_lock;
static volatile int stop;
static long charge;
static uintptr_t bits_of[WORKERS]; /* each group's objcg id, where a slab word has it */
static unsigned long seen_one, seen_mixed, allocs_total, frees_total, foreign_total, pauses_total,
        frees_sole;

static void obj_free(void *p, int me)
{
	struct obj *o = p;
	CHECK_EQ(o->magic, MAGIC);
	unsigned g = o->group;
	/* What the free is about to read: a sole objcg must be the object's. */
	uintptr_t bits =
	        mcg_slab_sole_bits(__atomic_load_n(&mcg_slab_unit(o)->objcgs, __ATOMIC_RELAXED));
	if (bits) {
		CHECK_EQ(bits, bits_of[g]);
		__atomic_fetch_add(&frees_sole, 1, __ATOMIC_RELAXED);
	}
	o->magic = 0;
	mcg_cache_free(k, p);
	__atomic_fetch_sub(&live[g], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&frees_total, 1, __ATOMIC_RELAXED);
	if ((int)g != me)
		__atomic_fetch_add(&foreign_total, 1, __ATOMIC_RELAXED);
}

static void *worker(void *arg)
{
	int me = (int)(uintptr_t)arg;
	unsigned seed = 0x9e3779b9u * (unsigned)(me + 1);
	mcg_group_enter(groups[me]);
	for (unsigned long op = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED); op++) {
		if (op % 300 == 0)
			stress_hop(&seed);
		pthread_rwlock_rdlock(&pause_lock);
		unsigned r = stress_rnd(&seed) % 100;
		int *n = &nlocal[me];
		if (r < 45 && *n < LOCAL) {
			struct obj *o = mcg_cache_alloc(k);
			CHECK(o != NULL);
			if (o) {
				o->magic = MAGIC;
				o->group = (uint32_t)me;
				__atomic_fetch_add(&live[me], 1, __ATOMIC_RELAXED);
				__atomic_fetch_add(&allocs_total, 1, __ATOMIC_RELAXED);
				locals[me][(*n)++] = o;
			}
		} else if (r < 55 && *n > 0) { /* pass one on, free what was there */
			void *old = __atomic_exchange_n(&shared[stress_rnd(&seed) % NSHARED],
			                                locals[me][--*n], __ATOMIC_ACQ_REL);
			if (old)
				obj_free(old, me);
		} else if (r < 97 && *n > 0) {
			unsigned i = stress_rnd(&seed) % (unsigned)*n;
			void *p = locals[me][i];
			locals[me][i] = locals[me][--*n];
			obj_free(p, me);
		} else { /* all of them: slabs empty out */
			while (*n > 0)
				obj_free(locals[me][--*n], me);
		}
		pthread_rwlock_unlock(&pause_lock);
	}
	mcg_group_leave(NULL);
	return NULL;
}

/* A live object: if its slab names a sole objcg, it is the object's group's. */
static void check_object(const struct obj *o)
{
	CHECK_EQ(o->magic, MAGIC);
	struct mcg_slab *s = mcg_slab_of(o);
	uintptr_t bits = mcg_slab_sole_bits(mcg_slab_unit(o)->objcgs);
	if (bits) {
		CHECK_EQ(bits, bits_of[o->group]);
		CHECK_EQ(s->sole, MCG_SOLE_ONE);
		seen_one++;
	} else {
		CHECK(s->sole == MCG_SOLE_MIXED); /* a live object's slab is never unset */
		seen_mixed++;
	}
}

/* Everyone is between operations: check what is exact now. */
static void check_paused(void)
{
	for (int w = 0; w < WORKERS; w++) {
		for (int i = 0; i < nlocal[w]; i++)
			check_object(locals[w][i]);
		CHECK_EQ(read_key(groups[w], "memory.stat", "slab"),
		         __atomic_load_n(&live[w], __ATOMIC_RELAXED) * charge);
	}
	for (int i = 0; i < NSHARED; i++)
		if (shared[i])
			check_object(shared[i]);
}

/* Paused (or at the end): free every live object, then flush the CPU
 * arrays back to the slabs. */
static void free_everything(void)
{
	for (int w = 0; w < WORKERS; w++)
		while (nlocal[w] > 0)
			obj_free(locals[w][--nlocal[w]], w);
	for (int i = 0; i < NSHARED; i++)
		if (shared[i])
			obj_free(shared[i], -1), shared[i] = NULL;
	mcg_cache_drain_all(k);
}

static void test_sole_mt(void)
{
	k = mcg_cache_create("sole-mt", OBJ_SIZE, 0, MCG_CACHE_ACCOUNT, NULL);
	REQUIRE(k);
	mcg_cache_stats_t st;
	mcg_cache_stats(k, &st);
	charge = (long)st.charge_size;
	for (int w = 0; w < WORKERS; w++) {
		char name[16];
		snprintf(name, sizeof(name), "t%d", w);
		REQUIRE(mcg_group_create(NULL, name, &groups[w]) == 0);
		bits_of[w] = (uintptr_t)mcg_objcg_of(groups[w], MCG_OBJCG_SLAB_UNRECLAIMABLE)->id
		             << MCG_SLOT_ID_SHIFT;
	}
	stress_pause_lock_init(&pause_lock);

	pthread_t t[WORKERS];
	for (int w = 0; w < WORKERS; w++)
		pthread_create(&t[w], NULL, worker, (void *)(uintptr_t)w);
	double total = stress_seconds(MCG_TSAN ? 3.0 : 2.0);
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		usleep(20 * 1000);
		pthread_rwlock_wrlock(&pause_lock);
		check_paused();
		if (++pauses_total % 2 == 0)
			free_everything(); /* every slab empties: they start afresh */
		pthread_rwlock_unlock(&pause_lock);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 <
	         total);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int w = 0; w < WORKERS; w++)
		pthread_join(t[w], NULL);
	pthread_rwlock_destroy(&pause_lock);
	check_paused();
	fprintf(stderr,
	        "%d workers: %lu allocs, %lu frees (%lu of another group's objects, %lu from "
	        "one-objcg slabs), %lu pauses; live objects seen in one-objcg slabs %lu, in mixed "
	        "ones %lu\n",
	        WORKERS, allocs_total, frees_total, foreign_total, frees_sole, pauses_total,
	        seen_one, seen_mixed);
	CHECK(frees_sole > 0 && seen_mixed > 0); /* both states met */

	free_everything();
	mcg_group_drain_stocks();
	for (int w = 0; w < WORKERS; w++) {
		CHECK_EQ(live[w], 0);
		CHECK_EQ(read_key(groups[w], "memory.stat", "slab"), 0);
		CHECK_EQ(read_long(groups[w], "memory.current"), 0);
		CHECK_EQ(mcg_group_remove(groups[w]), 0);
		mcg_group_put(groups[w]);
	}
	CHECK_EQ(mcg_cache_destroy(k), 0);
	mcg_group_drain_stocks();
	CHECK_EQ(read_key(mcg_group_root(), "cgroup.stat", "nr_dying_descendants"), 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	/* Small CPU arrays: allocations take fresh objects from the slabs
	 * often, a run of them one worker's, so slabs name one objcg as well
	 * as mixing (set before the first call reads the options). */
	setenv("MCG_CPU_OBJECTS", "8", 1);
	fprintf(stderr, "mode: %s\n", mcg_percpu_mode() == MCG_PERCPU_RSEQ ? "rseq" : "locked");
	RUN(test_sole_mt);
	int rc = test_done();
	if (!getenv("MCG_TEST_LOCKED") && mcg_percpu_mode() == MCG_PERCPU_RSEQ) {
		fprintf(stderr, "--- again with MCG_RSEQ=0 (locked path)\n");
		rc = test_merge(rc, test_run_locked(argv));
	}
	return rc;
}
