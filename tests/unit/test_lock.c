/* SPDX-License-Identifier: MIT */
/*
 * test_lock.c - ranked locks (base/lock.c): the rank check accepts
 * non-decreasing ranks and releases in any order, keeps counting past its
 * table's depth (and reads nothing past the table there), and dies loudly on a lower rank taken
 * under a higher one or an unlock with nothing held; adaptive mutexes and spin locks exclude each
 * other's holders, and a spin waiter that outlasts its spins yields. The checker is called
 * directly, so it is tested whether or not this build turns it on in mcg_lock().
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/lock.h"
#include "test.h"

/* Run @fn in a child; its exit: the signal that ended it, and its stderr in @err. */
static int in_child(void (*fn)(void), char *err, size_t len)
{
	int p[2];
	if (pipe(p))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 2);
		close(p[0]);
		test_child_abort_exits();
		fn();
		exit(0);
	}
	close(p[1]);
	size_t got = 0;
	ssize_t n;
	while (got + 1 < len && (n = read(p[0], err + got, len - 1 - got)) > 0)
		got += (size_t)n;
	err[got] = '\0';
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	return test_aborted(st) ? SIGABRT : WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

static void test_order_accepted(void)
{
	/* non-decreasing ranks, equal ones included; released out of order */
	mcg_lock_check_acquire_(MCG_RANK_CACHE_LIST);
	mcg_lock_check_acquire_(MCG_RANK_PCPU);
	mcg_lock_check_acquire_(MCG_RANK_PCPU);
	mcg_lock_check_acquire_(MCG_RANK_LEAF);
	mcg_lock_check_release_(MCG_RANK_PCPU);
	mcg_lock_check_release_(MCG_RANK_CACHE_LIST);
	/* what is left on top is LEAF: a lower rank now would be a violation,
	 * LEAF itself is fine */
	mcg_lock_check_acquire_(MCG_RANK_LEAF);
	mcg_lock_check_release_(MCG_RANK_LEAF);
	mcg_lock_check_release_(MCG_RANK_LEAF);
	mcg_lock_check_release_(MCG_RANK_PCPU);
	/* nothing held: any rank */
	mcg_lock_check_acquire_(MCG_RANK_NODE);
	mcg_lock_check_release_(MCG_RANK_NODE);
	CHECK(1);
}

static void deep(void)
{
	/* 70 locks of one rank: past the table's 64 entries, counted still */
	for (int i = 0; i < 70; i++)
		mcg_lock_check_acquire_(MCG_RANK_SLAB);
	for (int i = 0; i < 70; i++)
		mcg_lock_check_release_(MCG_RANK_SLAB);
	/* all released: a lower rank is fine now; one more release is not */
	mcg_lock_check_acquire_(MCG_RANK_CONTROL);
	mcg_lock_check_release_(MCG_RANK_CONTROL);
	mcg_lock_check_release_(MCG_RANK_CONTROL);
}

static void test_depth_past_table(void)
{
	char err[512];
	CHECK_EQ(in_child(deep, err, sizeof(err)), SIGABRT);
	CHECK(strstr(err, "memcg: FATAL") && strstr(err, "unlock of rank 2 with no lock held"));
}

static void violation(void)
{
	mcg_lock_check_acquire_(MCG_RANK_NODE);
	mcg_lock_check_acquire_(MCG_RANK_CACHE_LIST);
}

static void test_violation_dies(void)
{
	char err[512];
	CHECK_EQ(in_child(violation, err, sizeof(err)), SIGABRT);
	CHECK(strstr(err, "lock order violated: rank 10 taken while holding rank 30"));
}

static mcg_lock_t mutex;
static mcg_spin_t spin;
static volatile int inside, max_inside;
static volatile int holder_has_it;

static void *mutex_worker(void *arg)
{
	for (int i = 0; i < 20000; i++) {
		mcg_lock(&mutex);
		int n = ++inside;
		if (n > max_inside)
			max_inside = n;
		inside--;
		mcg_unlock(&mutex);
	}
	return arg;
}

static void test_mutex_excludes(void)
{
	mcg_lock_init(&mutex, MCG_RANK_NODE);
	CHECK_EQ(mutex.rank, MCG_RANK_NODE);
	pthread_t t[3];
	max_inside = 0;
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, mutex_worker, NULL);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(max_inside, 1);
	mcg_lock_destroy(&mutex);
}

static void *spin_holder(void *arg)
{
	mcg_spin_lock(&spin);
	holder_has_it = 1;
	usleep(50 * 1000); /* long past the waiter's 64 spins: it yields */
	inside = 7;
	mcg_spin_unlock(&spin);
	return arg;
}

static void test_spin_waits_and_yields(void)
{
	mcg_spin_init(&spin, MCG_RANK_SLAB);
	CHECK_EQ(spin.locked, 0);
	inside = 0;
	holder_has_it = 0;
	pthread_t t;
	pthread_create(&t, NULL, spin_holder, NULL);
	while (!holder_has_it)
		sched_yield();
	mcg_spin_lock(&spin); /* waits for the holder */
	CHECK_EQ(inside, 7);
	CHECK_EQ(spin.locked, 1);
	mcg_spin_unlock(&spin);
	CHECK_EQ(spin.locked, 0);
	pthread_join(t, NULL);
}

int main(void)
{
	RUN(test_order_accepted);
	RUN(test_depth_past_table);
	RUN(test_violation_dies);
	RUN(test_mutex_excludes);
	RUN(test_spin_waits_and_yields);
	return test_done();
}
