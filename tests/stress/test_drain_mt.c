/* SPDX-License-Identifier: MIT */
/*
 * test_drain_mt.c - shrink, reap, stats and slabinfo running while other
 * threads allocate and free: the remote drain protocol (stop the arrays,
 * membarrier fence, drain, start) against live fast paths, with CPU hops.
 *
 * Ownership is checked as in test_migrate.c: an owner tag claimed by CAS.
 * At the end: no live object, every slab returned, pages back to start.
 * Runs in the native mode, then again with MCG_RSEQ=0.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memcg/debug.h"
#include "memcg/slab.h"
#include "page/pages.h"
#include "test.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

#define NCACHES 3
#define HELD 200

static mcg_cache_t *caches[NCACHES];
static volatile int stop;
static unsigned long errors, reports_seen, drains, allocs;

static void on_report(const mcg_report_t *r)
{
	__atomic_add_fetch(&reports_seen, 1, __ATOMIC_RELAXED);
	fprintf(stderr, "unexpected report: %s of %p in %s\n", mcg_report_kind_name(r->kind),
	        r->addr, r->cache);
}

static uint64_t rnd_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *worker(void *arg)
{
	uint64_t me = (uint64_t)(uintptr_t)arg + 1;
	uint64_t rs = me * 0x9e3779b97f4a7c15ull;
	struct {
		uint64_t *p;
		int c;
	} held[HELD];
	int nheld = 0;
	unsigned long n = 0;
	cpu_set_t allowed;
	sched_getaffinity(0, sizeof(allowed), &allowed);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		uint64_t r = rnd_next(&rs);
		if ((r & 1023) == 0) {
			int cpu = (int)((r >> 10) % CPU_SETSIZE);
			if (CPU_ISSET(cpu, &allowed)) {
				cpu_set_t one;
				CPU_ZERO(&one);
				CPU_SET(cpu, &one);
				sched_setaffinity(0, sizeof(one), &one);
			}
		}
		/* Bursts: fill up, then drain, so slabs empty and refill often. */
		bool fill = ((r >> 20) & 7) < (nheld < HELD / 2 ? 5u : 3u);
		if (fill && nheld < HELD) {
			int c = (int)((r >> 30) % NCACHES);
			uint64_t *p = mcg_cache_alloc(caches[c]);
			if (!p) {
				__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
				continue;
			}
			uint64_t e = 0;
			if (!__atomic_compare_exchange_n(&p[1], &e, me, false, __ATOMIC_ACQ_REL,
			                                 __ATOMIC_ACQUIRE))
				__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
			p[2] = (uint64_t)(uintptr_t)p ^ me;
			held[nheld].p = p;
			held[nheld++].c = c;
			n++;
		} else if (nheld > 0) {
			int i = (int)((r >> 40) % (uint64_t)nheld);
			uint64_t *p = held[i].p;
			if (p[1] != me || p[2] != ((uint64_t)(uintptr_t)p ^ me))
				__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
			__atomic_store_n(&p[1], 0, __ATOMIC_RELEASE);
			mcg_cache_free(caches[held[i].c], p);
			held[i] = held[--nheld];
		}
	}
	for (int i = 0; i < nheld; i++) {
		held[i].p[1] = 0;
		mcg_cache_free(caches[held[i].c], held[i].p);
	}
	__atomic_add_fetch(&allocs, n, __ATOMIC_RELAXED);
	return NULL;
}

static void *drainer(void *arg)
{
	int fd = open("/dev/null", O_WRONLY);
	uint64_t rs = 12345;
	unsigned long k = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		uint64_t r = rnd_next(&rs);
		mcg_cache_t *c = caches[r % NCACHES];
		mcg_cache_stats_t st;
		switch ((r >> 8) % 5) {
		case 0: mcg_cache_shrink(c); break;
		case 1: mcg_cache_reap(c); break;
		case 2: mcg_slab_reap_all(); break;
		case 3:
			mcg_cache_stats(c, &st);
			if (st.active_slabs > st.num_slabs)
				__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
			break;
		default: mcg_slabinfo_write(fd); break;
		}
		k++;
		if (SANITIZED) {
			struct timespec ts = {0, 200000};
			nanosleep(&ts, NULL);
		}
	}
	close(fd);
	__atomic_add_fetch(&drains, k, __ATOMIC_RELAXED);
	return NULL;
}

static void test_concurrent_drain(void)
{
	mcg_set_report_handler(on_report);
	size_t sizes[NCACHES] = {24, 200, 2000};
	for (int i = 0; i < NCACHES; i++) {
		caches[i] = mcg_cache_create("drain-mt", sizes[i], 0, 0, NULL);
		REQUIRE(caches[i]);
	}
	size_t pages0 = mcg_pages_in_use();
	cpu_set_t allowed;
	sched_getaffinity(0, sizeof(allowed), &allowed);
	int nworkers = MCG_MIN(16, 2 * CPU_COUNT(&allowed) + 1);
	if (SANITIZED)
		nworkers = MCG_MIN(nworkers, 4);
	pthread_t w[16], d[2];
	stop = 0;
	for (long t = 0; t < nworkers; t++)
		pthread_create(&w[t], NULL, worker, (void *)t);
	for (int t = 0; t < 2; t++)
		pthread_create(&d[t], NULL, drainer, NULL);
	const char *secs = getenv("MCG_STRESS_SECONDS");
	double s = secs ? atof(secs) : 4.0;
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	nanosleep(&ts, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int t = 0; t < nworkers; t++)
		pthread_join(w[t], NULL);
	for (int t = 0; t < 2; t++)
		pthread_join(d[t], NULL);
	fprintf(stderr, "%d workers: %lu allocations, %lu drain/reap/stat calls\n", nworkers,
	        allocs, drains);
	CHECK_EQ(errors, 0);
	CHECK_EQ(reports_seen, 0);
	CHECK(drains > 10);
	for (int i = 0; i < NCACHES; i++) {
		mcg_cache_stats_t st;
		mcg_cache_stats(caches[i], &st);
		CHECK_EQ(st.active_objs, 0);
		mcg_cache_shrink(caches[i]);
		mcg_cache_stats(caches[i], &st);
		CHECK_EQ(st.num_slabs, 0);
		CHECK_EQ(st.cached_objs, 0);
	}
	CHECK_EQ(mcg_pages_in_use(), pages0);
	for (int i = 0; i < NCACHES; i++)
		CHECK_EQ(mcg_cache_destroy(caches[i]), 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	fprintf(stderr, "per-CPU mode: %s\n",
	        mcg_percpu_mode() == MCG_PERCPU_RSEQ ? "rseq" : "locked");
	RUN(test_concurrent_drain);
	int rc = test_done();
	if (!getenv("MCG_TEST_LOCKED") && mcg_percpu_mode() == MCG_PERCPU_RSEQ) {
		fprintf(stderr, "--- again with MCG_RSEQ=0 (locked path)\n");
		rc = test_merge(rc, test_run_locked(argv));
	}
	return rc;
}
