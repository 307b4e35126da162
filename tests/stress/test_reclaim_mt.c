/* SPDX-License-Identifier: MIT */
/*
 * test_reclaim_mt.c - reclaim under concurrency (runs under TSan too):
 *
 *   - tenants: threads filling shrinker-backed caches in groups under a
 *     parent with memory.max, so every thread reclaims (shared cursor);
 *   - a shrinker unregistered and destroyed while reclaim runs it (its
 *     callbacks are never entered after unregister returns);
 *   - groups created, filled and removed while others reclaim from their
 *     parent (their objects are reparented, then reclaimed).
 *
 * At rest: every object freed, every group's usage 0, the parent never
 * above max by more than the stock bound, no dying descendants left.
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "memcg/debug.h"
#include "memcg/group.h"
#include "memcg/reclaim.h"
#include "../conformance/pcache.h"
#include "test.h"

#define TENANTS 4
#define ROUNDS 1000
#define MAX_PAGES 2000

static mcg_group_t *parent;
static struct pcache pc;
static int stop_flag;

static long usage(mcg_group_t *g)
{
	char b[64];
	mcg_group_read(g, "memory.current", b, sizeof(b));
	return atol(b) / 4096;
}

static void *tenant(void *arg)
{
	long id = (long)arg;
	char name[16];
	snprintf(name, sizeof(name), "t%ld", id);
	mcg_group_t *g;
	if (mcg_group_create(parent, name, &g))
		return NULL;
	for (int r = 0; r < ROUNDS; r++)
		pc_fill(&pc, g, 16);
	mcg_group_remove(g);
	mcg_group_put(g);
	return NULL;
}

static void *churner(void *arg)
{
	(void)arg;
	for (int r = 0; !__atomic_load_n(&stop_flag, __ATOMIC_RELAXED) && r < 200; r++) {
		char name[16];
		snprintf(name, sizeof(name), "c%d", r);
		mcg_group_t *g;
		if (mcg_group_create(parent, name, &g))
			continue;
		pc_fill(&pc, g, 20);
		mcg_group_remove(g); /* objects go to the parent, still charged to g */
		mcg_group_put(g);
	}
	return NULL;
}

/* A second shrinker that counts calls after it was unregistered. */
static int gone;
static long late_calls;

static unsigned long x_count(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	(void)s;
	(void)sc;
	if (__atomic_load_n(&gone, __ATOMIC_ACQUIRE))
		__atomic_fetch_add(&late_calls, 1, __ATOMIC_RELAXED);
	return 100;
}

static unsigned long x_scan(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	(void)s;
	(void)sc;
	if (__atomic_load_n(&gone, __ATOMIC_ACQUIRE))
		__atomic_fetch_add(&late_calls, 1, __ATOMIC_RELAXED);
	usleep(50); /* be inside the callback when unregister comes */
	return 0;
}

static void *unregisterer(void *arg)
{
	(void)arg;
	for (int r = 0; r < 50 && !__atomic_load_n(&stop_flag, __ATOMIC_RELAXED); r++) {
		mcg_shrinker_t *s;
		mcg_shrinker_ops_t ops = {.count_objects = x_count,
		                          .scan_objects = x_scan,
		                          .flags = MCG_SHRINKER_TRIM_HALF,
		                          .batch = 8};
		/* Live before it is registered: the callbacks of the one just
		 * registered may run at once, and are not late. */
		__atomic_store_n(&gone, 0, __ATOMIC_RELEASE);
		if (mcg_shrinker_create(&ops, &s) || mcg_shrinker_register(s))
			break;
		usleep(500);
		mcg_shrinker_unregister(s);
		__atomic_store_n(&gone, 1, __ATOMIC_RELEASE);
		usleep(200);
		mcg_shrinker_destroy(s);
	}
	return NULL;
}

/* Global reclaim (the root: runs the global shrinker) in a loop. */
static void *global_reclaimer(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop_flag, __ATOMIC_RELAXED)) {
		mcg_reclaim(NULL, 32, MCG_RECLAIM_BACKGROUND);
		usleep(100);
	}
	return NULL;
}

static void test_concurrent_reclaim(void)
{
	REQUIRE(pc_init(&pc, 32) == 0);
	REQUIRE(mcg_group_create(NULL, "stress", &parent) == 0);
	char buf[32];
	snprintf(buf, sizeof(buf), "%d", MAX_PAGES * 4096);
	REQUIRE(mcg_group_write(parent, "memory.max", buf) == 0);
	pthread_t t[TENANTS], c, u, gr;
	for (long i = 0; i < TENANTS; i++)
		pthread_create(&t[i], NULL, tenant, (void *)i);
	pthread_create(&c, NULL, churner, NULL);
	pthread_create(&u, NULL, unregisterer, NULL);
	pthread_create(&gr, NULL, global_reclaimer, NULL);
	long peak = 0;
	for (int i = 0; i < 50; i++) {
		long now = usage(parent);
		peak = now > peak ? now : peak;
		usleep(1000);
	}
	for (int i = 0; i < TENANTS; i++)
		pthread_join(t[i], NULL);
	__atomic_store_n(&stop_flag, 1, __ATOMIC_RELAXED);
	pthread_join(c, NULL);
	pthread_join(u, NULL);
	pthread_join(gr, NULL);
	CHECK_EQ(late_calls, 0);
	/* try_charge adds, then backs out: a sample may see a racing charge. */
	CHECK(peak <= MAX_PAGES + 64 * (TENANTS + 1));
	char pk[64];
	mcg_group_read(parent, "memory.peak", pk, sizeof(pk));
	CHECK(atol(pk) / 4096 <= MAX_PAGES); /* what was really charged */
	char ev[256];
	mcg_group_read(parent, "memory.events", ev, sizeof(ev));
	CHECK(strstr(ev, "max 0\n") == NULL); /* reclaim was needed */
	pc_destroy(&pc);
	CHECK_EQ(pc.live, 0);
	mcg_group_drain_stocks();
	CHECK_EQ(usage(parent), 0);
	char st[128];
	mcg_group_read(parent, "cgroup.stat", st, sizeof(st));
	CHECK(strstr(st, "nr_dying_descendants 0") != NULL);
	mcg_group_remove(parent);
	mcg_group_put(parent);
}

int main(void)
{
	RUN(test_concurrent_reclaim);
	return test_done();
}
