/* SPDX-License-Identifier: MIT */
/*
 * test_oom_mt.c - the OOM policy (reclaim/oom.c, the charge path in
 * group/stock.c) with several groups.  Sizes in pages; anon is mcg_charge().
 *
 *     root
 *      `- t        max 100
 *          |- a    charges 40, then one page more: t is over its max
 *          `- b
 *              `- b1   holds 60 (the victim's memory)
 *
 * - A victim other than the group over its limit: the policy is asked
 *   about t (not a, the charging group), kills b1 (its 60 pages are
 *   uncharged) and the charge then fits.  "oom" is counted on t (and its
 *   ancestors in memory.events), "oom_kill" on b1 and its ancestors b, t,
 *   root in memory.events, on b1 alone in memory.events.local.
 * - A policy that returns NULL: the charge fails with -ENOMEM, an
 *   accounted cache allocation and an accounted kmalloc return NULL with
 *   errno ENOMEM; each counts one "oom" and no "oom_kill", and nothing of
 *   theirs stays charged.
 * - A victim whose memory does not come back: one policy call, one kill,
 *   then -ENOMEM (one OOM per charge).
 * - The policy's own charge fails instead of recursing into the policy.
 * - Concurrent OOMs in sibling groups (test_sibling_ooms, two threads):
 *   s0 and s1 (max 48 each, under an unlimited t) each hold a 16-page
 *   ballast the policy may kill; a thread per group charges one page at a
 *   time until a charge fails, both starting at a barrier.  Per round and
 *   group, exactly: 48 pages charged, two OOMs (the first kills the
 *   ballast, the second finds none and fails), one kill.  Each failing
 *   charge drains the stocks while the other thread does too: a round that
 *   stops short of 48 is a charge that failed - and a kill the policy was
 *   asked for - while the other drain held this group's stocked pages
 *   (group/stock.c serialises full drains for this).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "memcg/group.h"
#include "memcg/kmalloc.h"
#include "memcg/reclaim.h"
#include "memcg/slab.h"
#include "group_file.h"
#include "test.h"

#define PAGE 4096l

static mcg_group_t *t, *a, *b, *b1;

static long pages(mcg_group_t *g)
{
	mcg_group_drain_stocks();
	return read_long(g, "memory.current") / PAGE;
}

static long ev(mcg_group_t *g, const char *key) { return read_key(g, "memory.events", key); }

static long ev_local(mcg_group_t *g, const char *key)
{
	return read_key(g, "memory.events.local", key);
}

/* The tree of the banner, a holding 40 pages and b1 60: t is full. */
static int setup(void)
{
	if (mcg_group_create(NULL, "oom-t", &t) || mcg_group_create(t, "a", &a) ||
	    mcg_group_create(t, "b", &b) || mcg_group_create(b, "b1", &b1))
		return -1;
	CHECK_EQ(mcg_group_write(t, "memory.max", "409600"), 0); /* 100 pages */
	CHECK_EQ(mcg_charge(b1, 60, 0), 0);
	mcg_group_drain_stocks(); /* stocked pages would count against t */
	for (int i = 0; i < 40; i++)
		CHECK_EQ(mcg_charge(a, 1, 0), 0);
	CHECK_EQ(pages(t), 100);
	return 0;
}

static void teardown(void)
{
	mcg_oom_set_policy(NULL, NULL);
	mcg_group_t *all[] = {b1, b, a, t};
	for (int i = 0; i < 4; i++) {
		if (!all[i])
			continue;
		CHECK_EQ(pages(all[i]), 0);
		CHECK_EQ(mcg_group_remove(all[i]), 0);
		mcg_group_put(all[i]);
	}
	t = a = b = b1 = NULL;
}

/* ---- the policies ---- */

static int calls;
static mcg_group_t *asked_over;
static unsigned long asked_nr;
static long b1_held; /* b1's pages, which a kill of b1 uncharges */

static mcg_group_t *kill_b1(mcg_group_t *over, unsigned long nr, void *arg)
{
	(void)arg;
	calls++;
	asked_over = over;
	asked_nr = nr;
	CHECK_EQ(mcg_uncharge(b1, (unsigned long)b1_held), 0);
	b1_held = 0;
	return b1;
}

static mcg_group_t *kill_none(mcg_group_t *over, unsigned long nr, void *arg)
{
	(void)arg;
	calls++;
	asked_over = over;
	asked_nr = nr;
	return NULL;
}

static mcg_group_t *kill_b1_in_vain(mcg_group_t *over, unsigned long nr, void *arg)
{
	(void)arg;
	(void)nr;
	asked_over = over;
	if (++calls > 1)
		return NULL; /* asked again for the same charge (a failure): stop */
	return b1;           /* "killed", but b1 frees nothing */
}

static int nested_result;

static mcg_group_t *charge_inside(mcg_group_t *over, unsigned long nr, void *arg)
{
	(void)nr;
	(void)arg;
	calls++;
	nested_result = mcg_charge(over, 1, 0); /* t is full: fails, no recursion */
	return NULL;
}

/* ---- tests ---- */

static void test_victim_elsewhere(void)
{
	REQUIRE(setup() == 0);
	long root_kill = ev(mcg_group_root(), "oom_kill");
	long root_oom = ev(mcg_group_root(), "oom");
	calls = 0;
	b1_held = 60;
	mcg_oom_set_policy(kill_b1, NULL);
	CHECK_EQ(mcg_charge(a, 1, 0), 0);
	CHECK_EQ(calls, 1);
	CHECK(asked_over == t); /* the group over its max, not the one charging */
	CHECK_EQ(asked_nr, 1);
	CHECK_EQ(pages(b1), 0); /* the victim's memory is gone, */
	CHECK_EQ(pages(a), 41); /* and the charge fit */
	CHECK_EQ(pages(t), 41);
	/* oom: on t, hierarchically up; nowhere below. */
	CHECK_EQ(ev_local(t, "oom"), 1);
	CHECK_EQ(ev(t, "oom"), 1);
	CHECK_EQ(ev(a, "oom"), 0);
	CHECK_EQ(ev(b1, "oom"), 0);
	CHECK_EQ(ev(mcg_group_root(), "oom"), root_oom + 1);
	/* oom_kill: on the victim and its ancestors; .local on the victim only. */
	CHECK_EQ(ev_local(b1, "oom_kill"), 1);
	CHECK_EQ(ev(b1, "oom_kill"), 1);
	CHECK_EQ(ev_local(b, "oom_kill"), 0);
	CHECK_EQ(ev(b, "oom_kill"), 1);
	CHECK_EQ(ev_local(t, "oom_kill"), 0);
	CHECK_EQ(ev(t, "oom_kill"), 1);
	CHECK_EQ(ev(a, "oom_kill"), 0);
	CHECK_EQ(ev(mcg_group_root(), "oom_kill"), root_kill + 1);
	CHECK_EQ(ev_local(mcg_group_root(), "oom_kill"), 0);
	CHECK_EQ(mcg_uncharge(a, 41), 0);
	teardown();
}

static void test_victim_null(void)
{
	REQUIRE(setup() == 0);
	mcg_cache_t *k = mcg_cache_create("oom-acct", 200, 0, MCG_CACHE_ACCOUNT, NULL);
	REQUIRE(k);
	long root_kill = ev(mcg_group_root(), "oom_kill");
	calls = 0;
	mcg_oom_set_policy(kill_none, NULL);
	CHECK_EQ(mcg_charge(a, 1, 0), -ENOMEM);
	CHECK_EQ(calls, 1);
	CHECK(asked_over == t);
	CHECK_EQ(ev(t, "oom"), 1);
	/* The allocators fail the same way: NULL, ENOMEM, one oom each. */
	errno = 0;
	CHECK(mcg_cache_alloc_account(k, a) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(calls, 2);
	errno = 0;
	mcg_group_t *prev = mcg_group_enter(a);
	CHECK(mcg_cache_alloc(k) == NULL);
	mcg_group_leave(prev);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(calls, 3);
	errno = 0;
	CHECK(mcg_malloc_account(3000, a) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(calls, 4);
	CHECK(asked_over == t);
	CHECK_EQ(ev_local(t, "oom"), 4);
	CHECK_EQ(ev(a, "oom"), 0);
	/* No kill anywhere. */
	CHECK_EQ(ev(t, "oom_kill"), 0);
	CHECK_EQ(ev(b1, "oom_kill"), 0);
	CHECK_EQ(ev(mcg_group_root(), "oom_kill"), root_kill);
	/* Nothing of the failed ones stays charged. */
	CHECK_EQ(pages(a), 40);
	CHECK_EQ(pages(t), 100);
	CHECK_EQ(read_key(a, "memory.stat", "slab"), 0);
	mcg_oom_set_policy(NULL, NULL);
	CHECK_EQ(mcg_uncharge(a, 40), 0);
	CHECK_EQ(mcg_uncharge(b1, 60), 0);
	CHECK_EQ(mcg_cache_destroy(k), 0);
	teardown();
}

static void test_kill_frees_nothing(void)
{
	REQUIRE(setup() == 0);
	calls = 0;
	mcg_oom_set_policy(kill_b1_in_vain, NULL);
	CHECK_EQ(mcg_charge(a, 1, 0), -ENOMEM);
	CHECK_EQ(calls, 1); /* one OOM per charge: no second policy call */
	CHECK(asked_over == t);
	CHECK_EQ(ev(t, "oom"), 1);
	CHECK_EQ(ev_local(b1, "oom_kill"), 1);
	CHECK_EQ(ev(t, "oom_kill"), 1);
	CHECK_EQ(pages(t), 100);
	mcg_oom_set_policy(NULL, NULL);
	CHECK_EQ(mcg_uncharge(a, 40), 0);
	CHECK_EQ(mcg_uncharge(b1, 60), 0);
	teardown();
}

static void test_policy_charge_does_not_recurse(void)
{
	REQUIRE(setup() == 0);
	calls = 0;
	nested_result = 1;
	mcg_oom_set_policy(charge_inside, NULL);
	CHECK_EQ(mcg_charge(a, 1, 0), -ENOMEM);
	CHECK_EQ(calls, 1);
	CHECK_EQ(nested_result, -ENOMEM);
	/* Two charges failed at t's max after reclaim: two OOMs, no kill. */
	CHECK_EQ(ev_local(t, "oom"), 2);
	CHECK_EQ(ev(t, "oom_kill"), 0);
	CHECK_EQ(pages(t), 100);
	mcg_oom_set_policy(NULL, NULL);
	CHECK_EQ(mcg_uncharge(a, 40), 0);
	CHECK_EQ(mcg_uncharge(b1, 60), 0);
	teardown();
}

/* ---- concurrent OOMs in sibling groups ---- */

#define SIBLINGS 2
#define SIB_MAX 48
#define BALLAST 16
#define ROUNDS 200

static mcg_group_t *sib[SIBLINGS];
static long ballast[SIBLINGS]; /* pages the policy may kill (atomic) */
static long sib_calls[SIBLINGS], sib_kills[SIBLINGS], sib_bad; /* atomic */
static long sib_held_wrong; /* rounds that did not reach max (atomic) */
static pthread_barrier_t sib_bar;

static mcg_group_t *kill_ballast(mcg_group_t *over, unsigned long nr, void *arg)
{
	(void)nr;
	(void)arg;
	for (int i = 0; i < SIBLINGS; i++) {
		if (over != sib[i])
			continue;
		__atomic_fetch_add(&sib_calls[i], 1, __ATOMIC_RELAXED);
		long held = __atomic_exchange_n(&ballast[i], 0, __ATOMIC_ACQ_REL);
		if (!held)
			return NULL; /* nothing left to kill: the charge fails */
		CHECK_EQ(mcg_uncharge(over, (unsigned long)held), 0);
		__atomic_fetch_add(&sib_kills[i], 1, __ATOMIC_RELAXED);
		return over;
	}
	__atomic_fetch_add(&sib_bad, 1, __ATOMIC_RELAXED); /* an OOM outside the siblings */
	return NULL;
}

static void *sibling(void *arg)
{
	int i = (int)(intptr_t)arg;
	for (int round = 0; round < ROUNDS; round++) {
		CHECK_EQ(mcg_charge(sib[i], BALLAST, 0), 0);
		__atomic_store_n(&ballast[i], BALLAST, __ATOMIC_RELEASE);
		pthread_barrier_wait(&sib_bar); /* both press on their max at once */
		long held = 0;
		while (mcg_charge(sib[i], 1, 0) == 0)
			held++;
		/* The ballast went to the first OOM; the second failed. */
		if (held != SIB_MAX) {
			__atomic_fetch_add(&sib_held_wrong, 1, __ATOMIC_RELAXED);
			fprintf(stderr, "  s%d round %d: %ld pages charged, usage %ld\n", i, round,
			        held, read_long(sib[i], "memory.current") / PAGE);
		}
		if (held)
			CHECK_EQ(mcg_uncharge(sib[i], (unsigned long)held), 0);
		long left = __atomic_exchange_n(&ballast[i], 0, __ATOMIC_ACQ_REL);
		if (left)
			CHECK_EQ(mcg_uncharge(sib[i], (unsigned long)left), 0);
	}
	return NULL;
}

static void test_sibling_ooms(void)
{
	REQUIRE(mcg_group_create(NULL, "oom-sib", &t) == 0);
	for (int i = 0; i < SIBLINGS; i++) {
		char name[8];
		snprintf(name, sizeof(name), "s%d", i);
		REQUIRE(mcg_group_create(t, name, &sib[i]) == 0);
		char max[32];
		snprintf(max, sizeof(max), "%ld", SIB_MAX * PAGE);
		CHECK_EQ(mcg_group_write(sib[i], "memory.max", max), 0);
		ballast[i] = sib_calls[i] = sib_kills[i] = 0;
	}
	sib_bad = sib_held_wrong = 0;
	mcg_oom_set_policy(kill_ballast, NULL);
	pthread_barrier_init(&sib_bar, NULL, SIBLINGS);
	pthread_t th[SIBLINGS];
	for (int i = 0; i < SIBLINGS; i++)
		REQUIRE(pthread_create(&th[i], NULL, sibling, (void *)(intptr_t)i) == 0);
	for (int i = 0; i < SIBLINGS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&sib_bar);
	mcg_oom_set_policy(NULL, NULL);
	fprintf(stderr, "siblings: %ld + %ld policy calls, %ld + %ld kills, %ld rounds short\n",
	        sib_calls[0], sib_calls[1], sib_kills[0], sib_kills[1], sib_held_wrong);
	CHECK_EQ(sib_bad, 0);
	CHECK_EQ(sib_held_wrong, 0);
	for (int i = 0; i < SIBLINGS; i++) {
		CHECK_EQ(sib_calls[i], 2 * ROUNDS);
		CHECK_EQ(sib_kills[i], ROUNDS);
		CHECK_EQ(ev_local(sib[i], "oom"), 2 * ROUNDS);
		CHECK_EQ(ev_local(sib[i], "oom_kill"), ROUNDS);
		CHECK_EQ(pages(sib[i]), 0);
	}
	CHECK_EQ(ev(t, "oom"), 2 * ROUNDS * SIBLINGS);
	CHECK_EQ(ev(t, "oom_kill"), ROUNDS * SIBLINGS);
	CHECK_EQ(ev_local(t, "oom"), 0);
	CHECK_EQ(ev_local(t, "oom_kill"), 0);
	CHECK_EQ(pages(t), 0);
	for (int i = 0; i < SIBLINGS; i++) {
		CHECK_EQ(mcg_group_remove(sib[i]), 0);
		mcg_group_put(sib[i]);
	}
	CHECK_EQ(mcg_group_remove(t), 0);
	mcg_group_put(t);
	t = NULL;
	CHECK_EQ(pages(mcg_group_root()), 0);
}

int main(void)
{
	RUN(test_victim_elsewhere);
	RUN(test_victim_null);
	RUN(test_kill_frees_nothing);
	RUN(test_policy_charge_does_not_recurse);
	RUN(test_sibling_ooms);
	return test_done();
}
