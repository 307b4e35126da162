/* SPDX-License-Identifier: MIT */
/*
 * test_objcg_mt.c - accounted objects under concurrency: allocated in
 * random groups, freed by other threads, their groups removed under them.
 *
 *     root
 *      `- s                    slab == the slots of every live object, exact
 *          |- g0 .. g7         at every pause; current == anon + kernel after
 *                              a drain; at the end 0 and no dying group
 *
 * Workers look a random group up (or use s), allocate an accounted object of
 * a random kind (an ACCOUNT cache through mcg_group_enter(), an
 * ACCOUNT|RECLAIMABLE cache with an explicit group, kmalloc and kcalloc
 * accounted, mixed sizes), stamp it, check that mcg_obj_group() says its
 * group or s (if the group was removed meanwhile), and publish it in a
 * shared array of slots; whatever the slot held before (another thread's
 * object, often of a removed group) is checked and freed.  Other operations
 * free a random slot.  Every few hundred operations a worker hops to another
 * CPU.  A churner removes and re-creates g0..g7 all the time; a drainer
 * drains every stock and reads memory.stat (slab <= kernel at any time).
 *
 * The main thread pauses everyone now and then (a writer-preferring rwlock;
 * every operation is a read section), and checks at that quiescent point:
 *   s slab                == the live slots (a counter the workers keep)
 *   |current - (anon + kernel)| <= MCG_GROUP_STOCK_SLACK_PAGES x CPUs
 *   after a drain: current == anon + kernel, exactly.
 *
 * test_vector_attach_race first: a REPRODUCER of a core race (see there).
 *
 * Runs natively, then with MCG_RSEQ=0; under TSan (locks only) once, for
 * MCG_STRESS_SECONDS (default 2, 3 under TSan) each.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/compiler.h" /* MCG_TSAN */
#include "group/objcg.h"   /* the byte stock's size */
#include "memcg/debug.h"
#include "memcg/kmalloc.h"
#include "memcg/slab.h"
#include "group_file.h"
#include "stress.h"
#include "test.h"

#if MCG_TSAN
#define WORKERS 4
#else
#define WORKERS 6
#endif
#define NGROUPS 8
#define NSLOTS 2048
#define MAGIC 0x6f626a63u /* "objc" */
#define PAGE 4096l

static mcg_group_t *s;
static mcg_cache_t *kacct, *krecl;
static long slot_acct, slot_recl;
static long entry; /* a vector entry: what a kmalloc block charges beyond its size */
static void *slots[NSLOTS];
static long live_bytes; /* charges of the objects in slots[] (atomic) */
static pthread_rwlock_t pause_lock;
static volatile int stop;
static unsigned long allocs_total, frees_total, foreign_total, churn_total, drains_total,
        pauses_total, owner_parent_total;
static long worst_gap;

/* What every object starts with. */
struct hdr {
	uint32_t magic;
	uint16_t kind; /* 0: kacct, 1: krecl, 2: kmalloc */
	uint16_t thread;
	long charge;
};

static const size_t sizes[] = {16, 24, 64, 100, 250, 512, 1000, 2048, 3000, 8192};

/* Check and free an object some thread published. */
static void obj_free(void *p)
{
	struct hdr *h = p;
	long charge = h->charge;
	CHECK_EQ(h->magic, MAGIC);
	h->magic = 0;
	if (h->kind == 0)
		mcg_cache_free(kacct, p);
	else if (h->kind == 1)
		mcg_cache_free(krecl, p);
	else
		mcg_free(p);
	__atomic_fetch_sub(&live_bytes, charge, __ATOMIC_RELAXED);
}

/* A random group of s (a reference), or s itself. */
static mcg_group_t *pick_group(unsigned *seed)
{
	char path[16];
	snprintf(path, sizeof(path), "s/g%u", stress_rnd(seed) % (NGROUPS + 2));
	mcg_group_t *g;
	if (mcg_group_lookup(NULL, path, &g) == 0)
		return g;
	mcg_group_get(s);
	return s;
}

static void *obj_alloc(mcg_group_t *g, unsigned *seed, uint16_t thread)
{
	unsigned r = stress_rnd(seed);
	uint16_t kind = (uint16_t)(r % 4 < 2 ? r % 4 : 2);
	void *p;
	long charge;
	if (kind == 0) {
		mcg_group_t *prev = mcg_group_enter(g);
		p = mcg_cache_alloc(kacct);
		mcg_group_leave(prev);
		charge = slot_acct;
	} else if (kind == 1) {
		p = mcg_cache_alloc_account(krecl, g);
		charge = slot_recl;
	} else {
		size_t sz = sizes[(r >> 8) % (sizeof(sizes) / sizeof(sizes[0]))];
		if ((r >> 16) & 1) {
			p = mcg_malloc_account(sz, g);
		} else {
			mcg_group_t *prev = mcg_group_enter(g);
			p = mcg_calloc_account(1, sz, NULL);
			mcg_group_leave(prev);
		}
		charge = p ? (long)mcg_malloc_usable_size(p) + entry : 0;
	}
	if (!p)
		return NULL;
	struct hdr *h = p;
	*h = (struct hdr){MAGIC, kind, thread, charge};
	__atomic_fetch_add(&live_bytes, charge, __ATOMIC_RELAXED);
	return p;
}

static void *worker(void *arg)
{
	uint16_t id = (uint16_t)(uintptr_t)arg;
	unsigned seed = (unsigned)id * 2654435761u + 17;
	unsigned long ops = 0, allocs = 0, frees = 0, foreign = 0, parent = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		pthread_rwlock_rdlock(&pause_lock);
		unsigned i = stress_rnd(&seed) % NSLOTS;
		if (stress_rnd(&seed) % 2) {
			mcg_group_t *g = pick_group(&seed);
			void *p = obj_alloc(g, &seed, id);
			CHECK(p != NULL);
			if (p && stress_rnd(&seed) % 8 == 0) {
				mcg_group_t *owner = NULL;
				CHECK_EQ(mcg_obj_group(p, &owner), 0);
				/* g, or s if g was removed since */
				CHECK(owner == g || owner == s);
				parent += owner != g;
				mcg_group_put(owner);
			}
			mcg_group_put(g);
			allocs += p != NULL;
			void *old = __atomic_exchange_n(&slots[i], p, __ATOMIC_ACQ_REL);
			if (old) {
				foreign += ((struct hdr *)old)->thread != id;
				obj_free(old);
				frees++;
			}
		} else {
			void *old = __atomic_exchange_n(&slots[i], NULL, __ATOMIC_ACQ_REL);
			if (old) {
				foreign += ((struct hdr *)old)->thread != id;
				obj_free(old);
				frees++;
			}
		}
		pthread_rwlock_unlock(&pause_lock);
		if (++ops % 256 == 0)
			stress_hop(&seed);
	}
	__atomic_fetch_add(&allocs_total, allocs, __ATOMIC_RELAXED);
	__atomic_fetch_add(&frees_total, frees, __ATOMIC_RELAXED);
	__atomic_fetch_add(&foreign_total, foreign, __ATOMIC_RELAXED);
	__atomic_fetch_add(&owner_parent_total, parent, __ATOMIC_RELAXED);
	return NULL;
}

static void *churner(void *arg)
{
	(void)arg;
	unsigned seed = 4711;
	unsigned long n = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		pthread_rwlock_rdlock(&pause_lock);
		char name[8], path[16];
		snprintf(name, sizeof(name), "g%u", stress_rnd(&seed) % NGROUPS);
		snprintf(path, sizeof(path), "s/%s", name);
		mcg_group_t *g;
		if (mcg_group_lookup(NULL, path, &g) == 0) {
			CHECK_EQ(mcg_group_remove(g), 0);
			mcg_group_put(g);
		} else {
			CHECK_EQ(mcg_group_create(s, name, &g), 0);
			mcg_group_put(g); /* the tree keeps it */
		}
		pthread_rwlock_unlock(&pause_lock);
		n++;
		usleep(100);
	}
	churn_total = n;
	return NULL;
}

/*
 * The most s can be charged while the workers run: every object they can
 * hold (the slots, and one in each worker's hands) at the largest charge,
 * each objcg's partial pages (< 2 pages of leftover and the last page of
 * its objects: the live groups' three kinds, and a removed group's while
 * one of its objects lives), every CPU's byte stock words and page stock.
 */
static long current_bound(void)
{
	long ncpu = (long)mcg_nr_cpus(), objs = NSLOTS + WORKERS;
	long biggest = MCG_MAX(MCG_MAX(slot_acct, slot_recl), 8192 + entry);
	long objcgs = 3 * (NGROUPS + 1) + objs;
	return objs * biggest + objcgs * 3 * PAGE +
	       ncpu *
	               ((long)MCG_OBJCG_STOCK_SLOTS * MCG_OBJCG_STOCK_PAGES +
	                (long)MCG_GROUP_STOCK_SLACK_PAGES) *
	               PAGE;
}

static void *drainer(void *arg)
{
	(void)arg;
	unsigned long n = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		pthread_rwlock_rdlock(&pause_lock);
		mcg_group_drain_stocks();
		char buf[4096];
		CHECK(mcg_group_read(s, "memory.stat", buf, sizeof(buf)) > 0);
		pthread_rwlock_unlock(&pause_lock);
		/* one read, racy against the workers: used <= charged per objcg */
		long slab = key_of(buf, "slab"), kernel = key_of(buf, "kernel");
		CHECK(slab != -1 && kernel != -1); /* both lines there */
		CHECK(slab >= 0 && slab <= kernel && kernel % PAGE == 0);
		/* Whole pages, and no more than the objects and the stocks can hold
		 * (an uncharge too many would read as a huge or negative value). */
		long cur = read_long(s, "memory.current");
		CHECK(cur >= 0 && cur % PAGE == 0 && cur <= current_bound());
		n++;
		usleep(300);
	}
	drains_total = n;
	return NULL;
}

/* Everyone is between operations: check what is exact now. */
static void check_paused(void)
{
	const long slack = (long)MCG_GROUP_STOCK_SLACK_PAGES * mcg_nr_cpus() * PAGE;
	long live = __atomic_load_n(&live_bytes, __ATOMIC_RELAXED);
	CHECK_EQ(read_key(s, "memory.stat", "slab"), live);
	long parts = read_key(s, "memory.stat", "anon") + read_key(s, "memory.stat", "kernel");
	long gap = labs(read_long(s, "memory.current") - parts);
	CHECK(gap <= slack);
	if (gap > worst_gap)
		worst_gap = gap;
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(s, "memory.current"),
	         read_key(s, "memory.stat", "anon") + read_key(s, "memory.stat", "kernel"));
	CHECK_EQ(read_key(s, "memory.stat", "slab"), live);
	CHECK(read_key(s, "memory.stat", "kernel") >= live);
	CHECK_EQ(read_key(s, "memory.stat", "anon"), 0);
}

static void test_objcg_mt(void)
{
	REQUIRE(mcg_group_create(NULL, "s", &s) == 0);
	kacct = mcg_cache_create("objcg-mt-acct", 120, 0, MCG_CACHE_ACCOUNT, NULL);
	krecl = mcg_cache_create("objcg-mt-recl", 48, 0, MCG_CACHE_ACCOUNT | MCG_CACHE_RECLAIMABLE,
	                         NULL);
	REQUIRE(kacct && krecl);
	mcg_cache_stats_t st;
	mcg_cache_stats(kacct, &st);
	slot_acct = (long)st.charge_size;
	entry = (long)(st.charge_size - st.slot_size); /* a kmalloc block's too */
	mcg_cache_stats(krecl, &st);
	slot_recl = (long)st.charge_size;

	stress_pause_lock_init(&pause_lock);

	pthread_t w[WORKERS], ch, dr;
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&w[i], NULL, worker, (void *)(uintptr_t)i);
	pthread_create(&ch, NULL, churner, NULL);
	pthread_create(&dr, NULL, drainer, NULL);

	double total = stress_seconds(MCG_TSAN ? 3.0 : 2.0);
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		usleep(50 * 1000);
		pthread_rwlock_wrlock(&pause_lock);
		check_paused();
		pauses_total++;
		pthread_rwlock_unlock(&pause_lock);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 <
	         total);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(w[i], NULL);
	pthread_join(ch, NULL);
	pthread_join(dr, NULL);
	pthread_rwlock_destroy(&pause_lock);
	fprintf(stderr,
	        "%d workers: %lu allocs, %lu frees (%lu of another thread's objects), "
	        "%lu owners already reparented, %lu group churns, %lu drains, %lu pauses, "
	        "worst |current - (anon + kernel)| %ld pages\n",
	        WORKERS, allocs_total, frees_total, foreign_total, owner_parent_total, churn_total,
	        drains_total, pauses_total, worst_gap / PAGE);
	CHECK(allocs_total > 1000);
	CHECK(foreign_total > 100);
	CHECK(churn_total > 20);
	CHECK(pauses_total > 5);

	/* at rest: free what is left, everything back to 0 */
	for (int i = 0; i < NSLOTS; i++)
		if (slots[i])
			obj_free(slots[i]), slots[i] = NULL;
	CHECK_EQ(live_bytes, 0);
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(s, "memory.current"), 0);
	CHECK_EQ(read_key(s, "memory.stat", "slab"), 0);
	CHECK_EQ(read_key(s, "memory.stat", "kernel"), 0);
	mcg_group_t *c = NULL;
	while ((c = mcg_group_next_child(s, c))) {
		CHECK_EQ(read_long(c, "memory.current"), 0);
		CHECK_EQ(mcg_group_remove(c), 0);
	}
	CHECK_EQ(read_key(s, "cgroup.stat", "nr_dying_descendants"), 0);
	CHECK_EQ(read_key(s, "cgroup.stat", "nr_descendants"), 0);
	CHECK_EQ(mcg_group_remove(s), 0);
	mcg_group_put(s);
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(mcg_group_root(), "memory.current"), 0);
	CHECK_EQ(read_key(mcg_group_root(), "cgroup.stat", "nr_dying_descendants"), 0);
	mcg_cache_stats(kacct, &st);
	CHECK_EQ(st.active_objs, 0);
	CHECK_EQ(mcg_cache_destroy(kacct), 0);
	CHECK_EQ(mcg_cache_destroy(krecl), 0);
}

/*
 * REPRODUCER (core race, found by this file under TSan, reported to the
 * lead): slab/account.c mcg_cache_free_account() reads s->objcgs with a plain
 * load while slab_objcgs() on another thread may be doing its
 * compare-exchange on it (it lost the race to attach a vector to a fresh
 * slab: TSan counts a CAS as a write, failed or not).  Two threads allocate
 * and free accounted objects of a fresh cache at once, many times; TSan
 * reports "data race ... account.c in slab_objcgs" until the free path loads
 * the pointer atomically.
 */
static pthread_barrier_t attach_bar;
static mcg_cache_t *attach_cache;

static void *attach_and_free(void *arg)
{
	(void)arg;
	for (int round = 0; round < 200; round++) {
		pthread_barrier_wait(&attach_bar); /* a fresh cache */
		for (int i = 0; i < 4; i++) {
			void *p = mcg_cache_alloc_account(attach_cache, s);
			CHECK(p != NULL);
			mcg_cache_free(attach_cache, p);
		}
		pthread_barrier_wait(&attach_bar); /* done with it */
	}
	return NULL;
}

static void test_vector_attach_race(void)
{
	REQUIRE(mcg_group_create(NULL, "s", &s) == 0);
	pthread_barrier_init(&attach_bar, NULL, 3);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, attach_and_free, NULL);
	for (int round = 0; round < 200; round++) {
		attach_cache = mcg_cache_create("objcg-attach", 64, 0, MCG_CACHE_ACCOUNT, NULL);
		pthread_barrier_wait(&attach_bar);
		pthread_barrier_wait(&attach_bar);
		CHECK_EQ(mcg_cache_destroy(attach_cache), 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&attach_bar);
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(s, "memory.current"), 0);
	CHECK_EQ(mcg_group_remove(s), 0);
	mcg_group_put(s);
	s = NULL;
}

static int reports;
static void on_report(const mcg_report_t *r)
{
	(void)r;
	__atomic_fetch_add(&reports, 1, __ATOMIC_RELAXED);
}

static void test_no_reports(void) { CHECK_EQ(reports, 0); }

int main(int argc, char **argv)
{
	(void)argc;
	fprintf(stderr, "mode: %s\n", mcg_percpu_mode() == MCG_PERCPU_RSEQ ? "rseq" : "locked");
	mcg_set_report_handler(on_report);
	RUN(test_vector_attach_race);
	RUN(test_objcg_mt);
	RUN(test_no_reports);
	int rc = test_done();
	if (!getenv("MCG_TEST_LOCKED") && mcg_percpu_mode() == MCG_PERCPU_RSEQ) {
		fprintf(stderr, "--- again with MCG_RSEQ=0 (locked path)\n");
		rc = test_merge(rc, test_run_locked(argv));
	}
	return rc;
}
