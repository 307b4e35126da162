/* SPDX-License-Identifier: MIT */
/*
 * test_fork.c - fork() while the library works in other threads, and a
 * child that frees what its parent allocated.  The fork handlers
 * (slab/cache.c, group/group.c) take every lock in rank order, so the
 * child finds them free and every list whole; threads do not survive a
 * fork, so whatever they were doing must not be left half done.
 *
 * Fork while (a thread in the parent, allocating and freeing besides):
 *   - mcg_cache_shrink() runs on a plain and an accounted cache;
 *   - the reaper thread and mcg_cache_reap() / mcg_slab_reap_all() run;
 *   - groups holding accounted objects and pages are created and removed.
 * FORKS children each; every child works for real and exits 0: it
 * allocates and frees objects, kmalloc blocks (a large one too) and
 * accounted objects in a group it creates with a limit, charges and
 * uncharges pages, drains the stocks and finds its group at 0 exactly,
 * removes it, shrinks and reaps, and stops and (outside TSan, which does
 * not allow threads in the child of a threaded process) restarts the
 * reaper.  alarm() turns a deadlock into a failure (SIGALRM).
 *
 * A child that frees objects allocated before the fork (plain cache,
 * kmalloc small and large, accounted cache and accounted kmalloc in a
 * group, pages charged): afterwards, in the child, every counter is exact
 * at rest - the group's usage, slab and kernel 0 after a drain, the
 * caches' active objects back to what they were before the allocation,
 * mapped bytes back (the large block unmapped) - and the parent, freeing
 * its own copies afterwards, gets the same.
 *
 * Runs again with MCG_RSEQ=0 (the locked path); under TSan once, without
 * TSan's deadlock detector (see main()).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/compiler.h" /* MCG_TSAN */
#include "memcg/debug.h"
#include "memcg/group.h"
#include "memcg/kmalloc.h"
#include "memcg/slab.h"
#include "group_file.h"
#include "stress.h"
#include "test.h"

#define FORKS 50
#define CHILD_SECONDS 20 /* alarm: a child stuck this long is deadlocked */
#define PAGE 4096l

static mcg_cache_t *plain, *acache; /* 64 B; 200 B MCG_CACHE_ACCOUNT */
static mcg_group_t *top;            /* the background threads' groups live here */
static int stop;

/* ---- the child's work ---- */

/* Return 0, or the number of the step that went wrong. */
static int child_work(bool reaper)
{
	alarm(CHILD_SECONDS);
	enum { N = 1000, K = 300 };
	static void *o[N], *m[K];
	for (int i = 0; i < N; i++) {
		if (!(o[i] = mcg_cache_alloc(plain)))
			return 1;
		memset(o[i], i & 0xff, 64);
	}
	for (int i = 0; i < K; i++) {
		size_t sz = 1 + (size_t)i * 17 % 5000;
		if (!(m[i] = mcg_malloc(sz)))
			return 2;
		memset(m[i], (i + 1) & 0xff, sz);
	}
	char *big = mcg_malloc(1 << 20);
	if (!big)
		return 3;
	memset(big, 7, 1 << 20);
	for (int i = 0; i < N; i++)
		if (((unsigned char *)o[i])[63] != (i & 0xff))
			return 4;
	for (int i = 0; i < K; i++)
		if (((unsigned char *)m[i])[0] != ((i + 1) & 0xff))
			return 5;
	for (int i = 0; i < N; i++)
		mcg_cache_free(plain, o[i]);
	for (int i = 0; i < K; i++)
		mcg_free(m[i]);
	mcg_free(big);

	/* A group of its own, limited, with accounted objects and pages. */
	mcg_group_t *g;
	if (mcg_group_create(NULL, "forked", &g))
		return 6;
	if (mcg_group_write(g, "memory.max", "8M"))
		return 7;
	mcg_group_t *prev = mcg_group_enter(g);
	for (int i = 0; i < K; i++)
		if (!(o[i] = mcg_cache_alloc(acache)))
			return 8;
	mcg_group_leave(prev);
	for (int i = 0; i < K; i++)
		if (!(m[i] = mcg_malloc_account(100 + (size_t)i, g)))
			return 9;
	if (mcg_charge(g, 5, 0))
		return 10;
	for (int i = 0; i < K; i++) {
		mcg_cache_free(acache, o[i]);
		mcg_free(m[i]);
	}
	if (mcg_uncharge(g, 5))
		return 11;
	mcg_group_drain_stocks();
	if (read_long(g, "memory.current") != 0 || read_key(g, "memory.stat", "slab") != 0)
		return 12;
	if (mcg_group_remove(g))
		return 13;
	mcg_group_put(g);

	if (mcg_cache_shrink(plain) < 0 || mcg_cache_reap(acache) < 0 || mcg_slab_reap_all() < 0)
		return 14;
	if (reaper) {
		mcg_reaper_stop(); /* the parent's reaper thread did not come along */
		if (!MCG_TSAN) {
			if (mcg_reaper_start(2))
				return 15;
			usleep(10 * 1000);
			mcg_reaper_stop();
		}
	}
	return 0;
}

/* FORKS children, each child_work(); return how many did not exit 0 (the
 * first that does not ends the loop: a deadlock costs CHILD_SECONDS each). */
static int fork_children(const char *what, bool reaper)
{
	int bad = 0;
	for (int i = 0; i < FORKS && !bad; i++) {
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0)
			_exit(child_work(reaper));
		if (pid < 0) {
			bad++;
			continue;
		}
		int st = 0;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "  %s: child %d: %s %d\n", what, i,
			        WIFSIGNALED(st) ? "killed by signal" : "exit status",
			        WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
			bad++;
		}
		usleep(1000); /* let the threads get into their work again */
	}
	return bad;
}

/* ---- what the parent's threads do meanwhile ---- */

/* Allocate and free a few objects of both caches (the accounted ones in @g). */
static void churn_objects(mcg_group_t *g, unsigned *seed)
{
	void *p[64], *q[64];
	unsigned n = 1 + stress_rnd(seed) % 64;
	mcg_group_t *prev = mcg_group_enter(g);
	for (unsigned i = 0; i < n; i++) {
		p[i] = mcg_cache_alloc(plain);
		q[i] = mcg_cache_alloc(acache);
	}
	mcg_group_leave(prev);
	for (unsigned i = 0; i < n; i++) {
		mcg_cache_free(plain, p[i]);
		mcg_cache_free(acache, q[i]);
	}
}

static void *shrinker(void *arg)
{
	(void)arg;
	unsigned seed = 12345;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		churn_objects(top, &seed);
		stress_hop(&seed);
		mcg_cache_shrink(plain);
		mcg_cache_shrink(acache);
	}
	return NULL;
}

static void *reaper_helper(void *arg)
{
	(void)arg;
	unsigned seed = 777;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		churn_objects(top, &seed);
		stress_hop(&seed);
		mcg_cache_reap(plain);
		mcg_slab_reap_all();
	}
	return NULL;
}

static void *remover(void *arg)
{
	(void)arg;
	unsigned seed = 4242;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		mcg_group_t *g;
		if (mcg_group_create(top, "churn", &g)) {
			CHECK(0);
			break;
		}
		void *q[32];
		for (int i = 0; i < 32; i++)
			q[i] = mcg_cache_alloc_account(acache, g);
		CHECK_EQ(mcg_charge(g, 3, 0), 0);
		for (int i = 0; i < 16; i++)
			mcg_cache_free(acache, q[i]);
		CHECK_EQ(mcg_group_remove(g), 0); /* the rest are reparented to top */
		for (int i = 16; i < 32; i++)
			mcg_cache_free(acache, q[i]);
		CHECK_EQ(mcg_uncharge(g, 3), 0);
		mcg_group_put(g);
		stress_hop(&seed);
	}
	return NULL;
}

static void run_while(void *(*fn)(void *), const char *what, bool reaper)
{
	stop = 0;
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, fn, NULL) == 0);
	if (reaper)
		CHECK_EQ(mcg_reaper_start(1), 0);
	usleep(5 * 1000);
	CHECK_EQ(fork_children(what, reaper), 0);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	if (reaper)
		mcg_reaper_stop();
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(top, "memory.current"), 0);
}

static void test_fork_while_shrink(void) { run_while(shrinker, "shrink", false); }

static void test_fork_while_reap(void) { run_while(reaper_helper, "reap", true); }

static void test_fork_while_group_removal(void) { run_while(remover, "removal", false); }

/* ---- a child frees what the parent allocated ---- */

enum { PO = 400 };
static void *pre_plain[PO], *pre_kmalloc[PO], *pre_acct[PO], *pre_kacct[PO], *pre_big;

static size_t active_of(mcg_cache_t *c)
{
	mcg_cache_stats_t st;
	return mcg_cache_stats(c, &st) == 0 ? st.active_objs : (size_t)-1;
}

/* Free everything allocated before the fork; check every counter at rest. */
static int free_pre_fork(mcg_group_t *g, size_t plain0, size_t acct0, size_t mapped0)
{
	for (int i = 0; i < PO; i++) {
		mcg_cache_free(plain, pre_plain[i]);
		mcg_free(pre_kmalloc[i]);
		mcg_cache_free(acache, pre_acct[i]);
		mcg_free(pre_kacct[i]);
	}
	mcg_free(pre_big);
	if (mcg_uncharge(g, 7))
		return 1;
	mcg_group_drain_stocks();
	if (read_long(g, "memory.current") != 0)
		return 2;
	if (read_key(g, "memory.stat", "slab") != 0 || read_key(g, "memory.stat", "kernel") != 0 ||
	    read_key(g, "memory.stat", "anon") != 0)
		return 3;
	if (active_of(plain) != plain0 || active_of(acache) != acct0)
		return 4;
	mcg_slab_shrink_all(); /* the retained large block is unmapped too */
	if (mcg_os_mapped_bytes() != mapped0)
		return 5; /* the large block went back */
	if (read_long(mcg_group_root(), "memory.current") != 0)
		return 6;
	return 0;
}

static void test_child_frees_parent_objects(void)
{
	mcg_group_t *g;
	REQUIRE(mcg_group_create(NULL, "prefork", &g) == 0);
	size_t plain0 = active_of(plain), acct0 = active_of(acache);
	mcg_slab_shrink_all(); /* no large block retained from before */
	size_t mapped0 = mcg_os_mapped_bytes();
	mcg_group_t *prev = mcg_group_enter(g);
	for (int i = 0; i < PO; i++) {
		pre_plain[i] = mcg_cache_alloc(plain);
		pre_kmalloc[i] = mcg_malloc(1 + (size_t)i * 13 % 3000);
		pre_acct[i] = mcg_cache_alloc(acache);
		pre_kacct[i] = mcg_malloc_account(50 + (size_t)i * 7 % 2000, NULL);
		REQUIRE(pre_plain[i] && pre_kmalloc[i] && pre_acct[i] && pre_kacct[i]);
	}
	mcg_group_leave(prev);
	pre_big = mcg_malloc(600 * 1024);
	REQUIRE(pre_big);
	CHECK_EQ(mcg_charge(g, 7, 0), 0);
	mcg_group_drain_stocks();
	long charged = read_long(g, "memory.current");
	CHECK(charged > 7 * PAGE);
	CHECK_EQ(charged,
	         read_key(g, "memory.stat", "anon") + read_key(g, "memory.stat", "kernel"));
	CHECK_EQ(read_key(g, "memory.stat", "anon"), 7 * PAGE);

	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(CHILD_SECONDS);
		_exit(free_pre_fork(g, plain0, acct0, mapped0));
	}
	REQUIRE(pid > 0);
	int st = 0;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	/* The parent's copies are untouched by the child's frees. */
	CHECK_EQ(read_long(g, "memory.current"), charged);
	CHECK_EQ(free_pre_fork(g, plain0, acct0, mapped0), 0);
	CHECK_EQ(mcg_group_remove(g), 0);
	mcg_group_put(g);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (MCG_TSAN && !getenv("MCG_TEST_TSAN_FORK")) {
		/* TSan's deadlock detector holds at most 64 locks per thread, and
		 * the fork handlers hold them all (one per CPU per cache): run
		 * without it (the library's own rank checks still run). */
		char opts[1024];
		const char *old = getenv("TSAN_OPTIONS");
		snprintf(opts, sizeof(opts), "%s%sdetect_deadlocks=0", old ? old : "",
		         old && *old ? ":" : "");
		return test_rerun(argv, "TSAN_OPTIONS", opts, "MCG_TEST_TSAN_FORK");
	}
	plain = mcg_cache_create("fork-plain", 64, 0, 0, NULL);
	acache = mcg_cache_create("fork-acct", 200, 0, MCG_CACHE_ACCOUNT, NULL);
	if (!plain || !acache || mcg_group_create(NULL, "fork-top", &top))
		return 1;
	fprintf(stderr, "per-CPU mode: %s\n",
	        mcg_percpu_mode() == MCG_PERCPU_RSEQ ? "rseq" : "locked");
	RUN(test_child_frees_parent_objects);
	RUN(test_fork_while_shrink);
	RUN(test_fork_while_reap);
	RUN(test_fork_while_group_removal);
	int rc = test_done();
	if (!getenv("MCG_TEST_LOCKED") && mcg_percpu_mode() == MCG_PERCPU_RSEQ) {
		fprintf(stderr, "--- again with MCG_RSEQ=0 (locked path)\n");
		rc = test_merge(rc, test_run_locked(argv));
	}
	return rc;
}
