/* SPDX-License-Identifier: MIT */
/*
 * test_run_idle.c - memory goes back by itself: a program on the malloc
 * shim (`memcg run`) keeps a working set, has a burst of temporary
 * allocations (small objects and large request buffers, every size class),
 * frees the burst and then allocates nothing; within 10 s its resident set
 * must be back within 2 MiB + 5 % of its live bytes (the usable size of
 * what it holds, as malloc counts and jemalloc's stats.allocated), with no call of its
 * own - the shim's reaper ages idle CPU arrays and empty slabs by default.
 * With aging off (MCG_REAP_MS=0) the same program keeps the burst's memory:
 * the check can fail.
 *
 * The program is this test re-executed under `memcg run` ("--idle-child").
 */
#include <malloc.h>
#include <sys/mman.h>

#include "progs.h"

#define MIB (1024L * 1024)

/* This process's resident set in bytes (/proc/self/statm), or -1. */
static long rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size = 0, res = -1;
	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &size, &res) != 2)
		res = -1;
	fclose(f);
	return res < 0 ? -1 : res * sysconf(_SC_PAGESIZE);
}

/* A size from 16 B to 8 KiB, skewed small, and now and then a large buffer. */
static size_t burst_size(unsigned *seed)
{
	unsigned r = rand_r(seed);
	if (r % 64 == 0)
		return 64 * 1024 + r % (192 * 1024); /* a request buffer */
	unsigned shift = 4 + r % 10;                 /* 16 B .. 8 KiB */
	return ((size_t)1 << shift) + r % ((size_t)1 << shift);
}

/*
 * The child: prints "live N" and then either "back after MS" (the first
 * time RSS over the start came within 2 MiB + 5 % of the live bytes) or
 * "not back: rss R" after @wait_ms.
 */
static int idle_child(long wait_ms)
{
	enum { KEEP = 4000, BURST = 200000 };
	/* The test's own bookkeeping is resident before the start figure. */
	void **keep = mmap(NULL, (KEEP + BURST) * sizeof(void *), PROT_READ | PROT_WRITE,
	                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (keep == MAP_FAILED)
		return 1;
	memset(keep, 0, (KEEP + BURST) * sizeof(void *));
	void **burst = keep + KEEP;
	unsigned seed = 12345;
	long rss0 = rss_bytes(), live = 0;
	for (int i = 0; i < KEEP; i++) { /* the working set: ~8 MiB */
		size_t n = 512 + rand_r(&seed) % 3584;
		keep[i] = malloc(n);
		if (!keep[i])
			return 1;
		memset(keep[i], 1, n);
		live += (long)malloc_usable_size(keep[i]); /* what it holds, as malloc counts */
	}
	long peak = 0;
	for (int round = 0; round < 3; round++) { /* the burst, three times over */
		for (int i = 0; i < BURST; i++) {
			size_t n = burst_size(&seed);
			if (!(burst[i] = malloc(n)))
				return 1;
			memset(burst[i], 2, n < 256 ? n : 256);
		}
		long r = rss_bytes() - rss0;
		peak = r > peak ? r : peak;
		for (int i = 0; i < BURST; i++)
			free(burst[i]);
	}
	printf("live %ld peak %ld\n", live, peak);
	fflush(stdout);
	long goal = live + live / 20 + 2 * MIB;
	for (long ms = 0; ms <= wait_ms; ms += 100) {
		long r = rss_bytes() - rss0;
		if (r <= goal) {
			printf("back after %ld ms: rss %ld\n", ms, r);
			return 0;
		}
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	printf("not back: rss %ld\n", rss_bytes() - rss0);
	return 0; /* the working set stays: `memcg run`'s slabinfo at exit shows it */
}

/* Run the child (this binary) under `memcg run` with @env. */
static struct prog_result run_child(char *const env[], const char *wait_ms)
{
	static char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = 0;
	char *argv[] = {self, "--idle-child", (char *)wait_ms, NULL};
	return prog_run_memcg(argv, "/dev/null", NULL, env, NULL, 60);
}

static void test_idle_memory_returns(void)
{
	char *env[] = {"MCG_REAP_MS=1000", NULL}; /* the default, said out loud */
	struct prog_result r = run_child(env, "10000");
	CHECK_EQ(r.status, 0);
	long live = -1, peak = -1, ms = -1;
	const char *p = strstr(r.out, "live ");
	if (p)
		sscanf(p, "live %ld peak %ld", &live, &peak);
	p = strstr(r.out, "back after ");
	if (p)
		ms = atol(p + 11);
	CHECK(live > 4 * MIB);
	CHECK(peak > live + 64 * MIB); /* the burst was there */
	CHECK(ms >= 0 && ms <= 10000);
	if (ms < 0)
		prog_show_failure("idle child", &r);
	fprintf(stderr, "  %s", r.out);
	prog_result_free(&r);
}

static void test_idle_memory_stays_without_aging(void)
{
	char *env[] = {"MCG_REAP_MS=0", NULL};
	struct prog_result r = run_child(env, "3000");
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, "not back") != NULL);
	fprintf(stderr, "  %s", r.out);
	prog_result_free(&r);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--idle-child"))
		return idle_child(atol(argv[2]));
	RUN(test_idle_memory_returns);
	RUN(test_idle_memory_stays_without_aging);
	return test_done();
}
