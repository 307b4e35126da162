/* SPDX-License-Identifier: MIT */
/*
 * test_group_churn.c - charging under group churn, migration and signals.
 *
 *     root
 *      `- s (max 600 pages: charges fail now and then)
 *          |- c0 .. c15   removed and re-created all the time
 *
 * Chargers look groups up by path (taking a reference), charge 1-16 pages,
 * hold up to 32 charges, and uncharge and put them later - often after the
 * group was removed (a dying group).  Every few hundred operations a charger
 * hops to another CPU (sched_setaffinity); a signaller sends SIGUSR1 to
 * random chargers all the time, aborting rseq sections in flight.  Churners
 * remove and re-create c0..c15; a drainer drains the stocks now and then.
 *
 * Checked while running: s never above its max by more than the batches
 * in flight.  At rest: every usage is 0
 * after a drain, memory.stat anon is 0, nr_dying_descendants is 0.
 * Runs natively, then with MCG_RSEQ=0 (TSan builds always use locks).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "group/group.h"
#include "memcg/debug.h"
#include "stress.h"
#include "test.h"

#define NGROUPS 16
#define CHARGERS 6
#define HELD 32
#define MAX_PAGES 600

static mcg_group_t *s;
static volatile int stop;
static pthread_t chargers[CHARGERS];
static unsigned long ops_total, enomem_total, hops_total, signals_total, churn_total;
static long over_max;

static void on_signal(int sig) { (void)sig; }

static void hop(unsigned *seed)
{
	if (stress_hop(seed))
		__atomic_fetch_add(&hops_total, 1, __ATOMIC_RELAXED);
}

static void *charger(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u + 1;
	struct {
		mcg_group_t *g;
		unsigned long n;
	} held[HELD] = {{0}};
	unsigned long ops = 0, enomem = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		unsigned i = stress_rnd(&seed) % HELD;
		if (held[i].g) {
			CHECK_EQ(mcg_uncharge(held[i].g, held[i].n), 0);
			mcg_group_put(held[i].g);
			held[i].g = NULL;
		} else {
			char path[16];
			snprintf(path, sizeof(path), "s/c%u", stress_rnd(&seed) % NGROUPS);
			mcg_group_t *g;
			if (mcg_group_lookup(NULL, path, &g) == 0) {
				unsigned long n = 1 + stress_rnd(&seed) % 16;
				int r = mcg_charge(g, n, MCG_CHARGE_NORECLAIM);
				if (r == 0) {
					held[i].g = g;
					held[i].n = n;
				} else {
					CHECK_EQ(r, -ENOMEM);
					enomem++;
					mcg_group_put(g);
				}
			}
		}
		long u = mcg_page_counter_read(&s->memory);
		/* try_charge adds, then checks and backs out: racing readers may
		 * see each in-flight charger's batch above max, never more. */
		if (u > MAX_PAGES + CHARGERS * (long)MCG_GROUP_STOCK_PAGES)
			__atomic_store_n(&over_max, u, __ATOMIC_RELAXED);
		if (++ops % 256 == 0)
			hop(&seed);
	}
	for (unsigned i = 0; i < HELD; i++) {
		if (held[i].g) {
			CHECK_EQ(mcg_uncharge(held[i].g, held[i].n), 0);
			mcg_group_put(held[i].g);
		}
	}
	__atomic_fetch_add(&ops_total, ops, __ATOMIC_RELAXED);
	__atomic_fetch_add(&enomem_total, enomem, __ATOMIC_RELAXED);
	return NULL;
}

static void *churner(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg + 77;
	unsigned long n = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		char name[8];
		snprintf(name, sizeof(name), "c%u", stress_rnd(&seed) % NGROUPS);
		mcg_group_t *g;
		char path[16];
		snprintf(path, sizeof(path), "s/%s", name);
		if (mcg_group_lookup(NULL, path, &g) == 0) {
			int r = mcg_group_remove(g);
			CHECK(r == 0 || r == -ENOENT); /* the other churner may win */
			mcg_group_put(g);
		} else {
			int r = mcg_group_create(s, name, &g);
			CHECK(r == 0 || r == -EEXIST);
			if (r == 0)
				mcg_group_put(g); /* the tree keeps it */
		}
		n++;
		if (stress_rnd(&seed) % 64 == 0)
			mcg_group_drain_stocks();
		usleep(50);
	}
	__atomic_fetch_add(&churn_total, n, __ATOMIC_RELAXED);
	return NULL;
}

static void *signaller(void *arg)
{
	unsigned seed = 99;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		pthread_kill(chargers[stress_rnd(&seed) % CHARGERS], SIGUSR1);
		__atomic_fetch_add(&signals_total, 1, __ATOMIC_RELAXED);
		usleep(20);
	}
	return NULL;
}

static void test_churn(void)
{
	REQUIRE(mcg_group_create(NULL, "s", &s) == 0);
	char max[32];
	snprintf(max, sizeof(max), "%u", MAX_PAGES * MCG_GROUP_PAGE_SIZE);
	CHECK_EQ(mcg_group_write(s, "memory.max", max), 0);
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
	sigaction(SIGUSR1, &sa, NULL);
	pthread_t churners[2], sig;
	for (int i = 0; i < CHARGERS; i++)
		pthread_create(&chargers[i], NULL, charger, (void *)(uintptr_t)i);
	for (int i = 0; i < 2; i++)
		pthread_create(&churners[i], NULL, churner, (void *)(uintptr_t)i);
	pthread_create(&sig, NULL, signaller, NULL);
	struct timespec ts = {MCG_TSAN ? 3 : 2, 0};
	nanosleep(&ts, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(sig, NULL);
	for (int i = 0; i < CHARGERS; i++)
		pthread_join(chargers[i], NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(churners[i], NULL);
	fprintf(stderr, "ops %lu, ENOMEM %lu, hops %lu, signals %lu, churn %lu\n", ops_total,
	        enomem_total, hops_total, signals_total, churn_total);
	CHECK(ops_total > 1000);
	CHECK(churn_total > 100);
	CHECK(enomem_total > 0);
	CHECK_EQ(over_max, 0);

	/* at rest */
	mcg_group_drain_stocks();
	CHECK_EQ(mcg_page_counter_read(&s->memory), 0);
	CHECK_EQ(mcg_page_counter_read(&mcg_group_root()->memory), 0);
	char buf[256];
	mcg_group_read(s, "memory.stat", buf, sizeof(buf));
	CHECK(!strncmp(buf, "anon 0\n", 7));
	mcg_group_t *c = NULL;
	while ((c = mcg_group_next_child(s, c))) {
		CHECK_EQ(mcg_page_counter_read(&c->memory), 0);
		mcg_group_remove(c);
	}
	CHECK_EQ(s->nr_dying_descendants, 0);
	CHECK_EQ(s->nr_descendants, 0);
	CHECK_EQ(mcg_group_remove(s), 0);
	mcg_group_put(s);
	CHECK_EQ(mcg_group_root()->nr_dying_descendants, 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	fprintf(stderr, "mode: %s\n", mcg_percpu_mode() == MCG_PERCPU_RSEQ ? "rseq" : "locked");
	RUN(test_churn);
	int rc = test_done();
	if (!getenv("MCG_TEST_LOCKED") && !MCG_TSAN) {
		fprintf(stderr, "--- again with MCG_RSEQ=0 (locked path)\n");
		rc = test_merge(rc, test_run_locked(argv));
	}
	return rc;
}
