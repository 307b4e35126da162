/* SPDX-License-Identifier: MIT */
/*
 * test_stock_mt.c - the charge stock's miss policy under concurrency: more
 * groups than stock entries, so charges miss and go to the counters, through
 * their parent's entry, or evict; uncharges fill, trim or bypass entries.
 *
 *     root
 *      `- s
 *          |- p0 - l0 .. l15
 *          `- p1 - l16 .. l31   (l31: max 48 pages, charges fail now and then)
 *
 * Workers hold pages charged to random leaves (1-8 pages a charge, the
 * oldest given back first), hop CPUs now and then, and take SIGUSR1 all the
 * time (rseq sections aborted in flight); a drainer drains the stocks; half
 * way through, l5 is removed (the workers keep charging it, dying).
 * Checked at pauses (every worker between two operations, the pause lock):
 * every leaf's usage = its pages held + what the stocks hold for it; each
 * parent's and s's = the pages held below + what the stocks hold for its
 * subtree (its own entries serve its children); the stocks within their
 * slack (64 pages x 7 entries per CPU); some pause finds a parent's entry
 * holding pages.  At the end, before any drain:
 * l5 in no stock; every usage = what is stocked; after a drain every usage
 * is 0 and no group is left dying.  Runs natively, then with MCG_RSEQ=0;
 * under TSan (locks only) once.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "group/group.h"
#include "memcg/debug.h"
#include "stress.h"
#include "test.h"

#define NPARENTS 2
#define PER_PARENT 16
#define NLEAVES (NPARENTS * PER_PARENT)
#define WORKERS 4
#define HOLD 64 /* charges a worker holds */
#define LIMITED (NLEAVES - 1)
#define LIMIT 48
#define REMOVED 5

static mcg_group_t *s, *parents[NPARENTS], *leaves[NLEAVES];
static long held[NLEAVES]; /* pages held per leaf (under the pause lock's read side) */
static pthread_rwlock_t pause_lock;
static volatile int stop;
static pthread_t workers[WORKERS];
static unsigned long ops_total, enomem_total, hops_total, signals_total, pauses, drains;
static unsigned long parent_stocked; /* pauses that found pages in a parent's entry */

static void on_signal(int sig) { (void)sig; }

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u + 7;
	struct {
		int leaf;
		unsigned long n;
	} ring[HOLD];
	unsigned slot = 0, filled = 0;
	unsigned long ops = 0, enomem = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		pthread_rwlock_rdlock(&pause_lock);
		if (filled == HOLD) { /* give back the oldest */
			CHECK_EQ(mcg_uncharge(leaves[ring[slot].leaf], ring[slot].n), 0);
			__atomic_fetch_sub(&held[ring[slot].leaf], (long)ring[slot].n,
			                   __ATOMIC_RELAXED);
			filled--;
		}
		int leaf = (int)(stress_rnd(&seed) % NLEAVES);
		unsigned long n = 1 + stress_rnd(&seed) % 8;
		int r = mcg_charge(leaves[leaf], n, MCG_CHARGE_NORECLAIM);
		if (r == 0) {
			__atomic_fetch_add(&held[leaf], (long)n, __ATOMIC_RELAXED);
			ring[slot].leaf = leaf;
			ring[slot].n = n;
			slot = (slot + 1) % HOLD;
			filled++;
		} else {
			CHECK_EQ(r, -ENOMEM);
			CHECK_EQ(leaf, LIMITED);
			enomem++;
		}
		pthread_rwlock_unlock(&pause_lock);
		if (++ops % 512 == 0 && stress_hop(&seed))
			__atomic_fetch_add(&hops_total, 1, __ATOMIC_RELAXED);
	}
	/* Give everything back (oldest first, through the stock). */
	for (unsigned i = 0; i < filled; i++) {
		unsigned k = (slot + HOLD - filled + i) % HOLD;
		CHECK_EQ(mcg_uncharge(leaves[ring[k].leaf], ring[k].n), 0);
		__atomic_fetch_sub(&held[ring[k].leaf], (long)ring[k].n, __ATOMIC_RELAXED);
	}
	__atomic_fetch_add(&ops_total, ops, __ATOMIC_RELAXED);
	__atomic_fetch_add(&enomem_total, enomem, __ATOMIC_RELAXED);
	return NULL;
}

static void *drainer(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		/* A drain holds pages between taking them and giving them back:
		 * not at a pause. */
		pthread_rwlock_rdlock(&pause_lock);
		mcg_group_drain_stocks();
		pthread_rwlock_unlock(&pause_lock);
		drains++;
		usleep(3000);
	}
	return NULL;
}

static void *signaller(void *arg)
{
	unsigned seed = 99;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		pthread_kill(workers[stress_rnd(&seed) % WORKERS], SIGUSR1);
		__atomic_fetch_add(&signals_total, 1, __ATOMIC_RELAXED);
		usleep(20);
	}
	return NULL;
}

static long usage(mcg_group_t *g) { return mcg_page_counter_read(&g->memory); }

/* Everyone between operations: every count exact. */
static void check_exact(const char *when)
{
	long all = 0, stocked = 0;
	for (int p = 0; p < NPARENTS; p++) {
		long below = 0;
		for (int i = p * PER_PARENT; i < (p + 1) * PER_PARENT; i++) {
			long h = __atomic_load_n(&held[i], __ATOMIC_RELAXED);
			long c = mcg_stock_cached(leaves[i]);
			if (usage(leaves[i]) != h + c) {
				fprintf(stderr, "%s: l%d usage %ld, held %ld, stocked %ld\n", when,
				        i, usage(leaves[i]), h, c);
				CHECK(0);
			}
			below += h;
			stocked += c;
		}
		if (usage(parents[p]) != below + mcg_stock_cached_subtree(parents[p])) {
			fprintf(stderr, "%s: p%d usage %ld, held %ld, stocked %ld\n", when, p,
			        usage(parents[p]), below, mcg_stock_cached_subtree(parents[p]));
			CHECK(0);
		}
		stocked += mcg_stock_cached(parents[p]);
		parent_stocked += mcg_stock_cached(parents[p]) > 0;
		all += below;
	}
	CHECK_EQ(usage(s), all + mcg_stock_cached_subtree(s));
	CHECK(stocked + mcg_stock_cached(s) <= (long)MCG_GROUP_STOCK_SLACK_PAGES * mcg_nr_cpus());
	CHECK(usage(leaves[LIMITED]) <= LIMIT);
}

static void test_stock_mt(void)
{
	char name[16];
	REQUIRE(mcg_group_create(NULL, "s", &s) == 0);
	for (int p = 0; p < NPARENTS; p++) {
		snprintf(name, sizeof(name), "p%d", p);
		REQUIRE(mcg_group_create(s, name, &parents[p]) == 0);
		for (int i = p * PER_PARENT; i < (p + 1) * PER_PARENT; i++) {
			snprintf(name, sizeof(name), "l%d", i);
			REQUIRE(mcg_group_create(parents[p], name, &leaves[i]) == 0);
		}
	}
	mcg_page_counter_set_max(&leaves[LIMITED]->memory, LIMIT);
	stress_pause_lock_init(&pause_lock);
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
	sigaction(SIGUSR1, &sa, NULL);
	pthread_t dr, sig;
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&workers[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	pthread_create(&dr, NULL, drainer, NULL);
	pthread_create(&sig, NULL, signaller, NULL);
	double secs = stress_seconds(MCG_TSAN ? 3 : 2);
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	bool removed = false;
	for (;;) {
		usleep(20000);
		clock_gettime(CLOCK_MONOTONIC, &now);
		double el =
		        (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
		if (el >= secs)
			break;
		pthread_rwlock_wrlock(&pause_lock);
		check_exact("pause");
		pauses++;
		pthread_rwlock_unlock(&pause_lock);
		if (!removed && el >= secs / 2) {
			CHECK_EQ(mcg_group_remove(leaves[REMOVED]), 0);
			removed = true;
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(sig, NULL);
	pthread_join(dr, NULL);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(workers[i], NULL);
	fprintf(stderr,
	        "ops %lu, ENOMEM %lu, hops %lu, signals %lu, pauses %lu (%lu parent entries "
	        "with pages), drains %lu\n",
	        ops_total, enomem_total, hops_total, signals_total, pauses, parent_stocked, drains);
	CHECK(ops_total > 1000);
	CHECK(enomem_total > 0);
	CHECK(pauses > 10);
	CHECK(parent_stocked > 0); /* the parents' entries were in use */
	CHECK(removed);

	/* At rest, nothing held: usage is exactly what is stocked. */
	check_exact("at rest");
	CHECK_EQ(mcg_stock_cached(leaves[REMOVED]), 0); /* never stocked once removed */
	mcg_group_drain_stocks();
	CHECK_EQ(usage(s), 0);
	for (int i = 0; i < NLEAVES; i++)
		CHECK_EQ(usage(leaves[i]), 0);
	for (int i = 0; i < NLEAVES; i++) {
		if (i != REMOVED)
			CHECK_EQ(mcg_group_remove(leaves[i]), 0);
		mcg_group_put(leaves[i]);
	}
	for (int p = 0; p < NPARENTS; p++) {
		CHECK_EQ(mcg_group_remove(parents[p]), 0);
		mcg_group_put(parents[p]);
	}
	CHECK_EQ(s->nr_dying_descendants, 0);
	CHECK_EQ(mcg_group_remove(s), 0);
	mcg_group_put(s);
	CHECK_EQ(mcg_group_root()->nr_dying_descendants, 0);
	CHECK_EQ(mcg_page_counter_read(&mcg_group_root()->memory), 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	fprintf(stderr, "mode: %s\n", mcg_percpu_mode() == MCG_PERCPU_RSEQ ? "rseq" : "locked");
	RUN(test_stock_mt);
	int rc = test_done();
	if (!getenv("MCG_TEST_LOCKED") && !MCG_TSAN) {
		fprintf(stderr, "--- again with MCG_RSEQ=0 (locked path)\n");
		rc = rc || test_run_locked(argv);
	}
	return rc;
}
