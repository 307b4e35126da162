/* SPDX-License-Identifier: MIT */
/*
 * test_shim_threads.c - when the malloc shim's threads (the reaper, the
 * control socket's server) start (src/preload/threads.c).  The child is this
 * test re-executed under LD_PRELOAD of the shim (MCG_PRELOAD_LIB), or under
 * `memcg run`; it says how many threads it has and whether glibc still
 * counts it single-threaded:
 *
 *   - a short single-threaded program: its one thread, single-threaded for
 *     glibc (plain locks) - the reason the threads wait;
 *   - one that keeps allocating: both threads within a period or two, and
 *     its control socket answers `memcg stat`;
 *   - one with a thread of its own: both at its next slow paths, well
 *     within the period;
 *   - MCG_LAZY_THREADS=0, and `memcg run` (which sets it): both at once;
 *   - aging off and no control socket: none, however long it allocates;
 *   - a child forked while they wait starts none of its own.
 */
#include <dirent.h>
#include <pthread.h>
#include <sys/single_threaded.h>
#include <sys/wait.h>

#include "control.h"

/* The threads of this process (/proc/self/task). */
static int task_count(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;
	struct dirent *e;
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Allocations of every small class, a few kept: refills and flushes. */
static void churn(void **keep, int nkeep, unsigned *seed)
{
	for (int i = 0; i < 2000; i++) {
		int k = (int)(rand_r(seed) % (unsigned)nkeep);
		free(keep[k]);
		keep[k] = malloc(16 + rand_r(seed) % 4096);
	}
}

static void *sleeper(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

/*
 * The child: "start T S" (threads, glibc's single-threaded flag) at once,
 * then for "wait" (allocating for at most @secs until the count passes
 * @own, its own threads) "grown N after MS" or "not grown N"; then it
 * waits for its stdin to close.
 */
static int child(const char *mode, double secs)
{
	int own = 1;
	if (!strcmp(mode, "thread")) {
		pthread_t t;
		if (pthread_create(&t, NULL, sleeper, NULL))
			return 1;
		own = 2;
	}
	printf("start %d %d\n", task_count(), (int)__libc_single_threaded);
	fflush(stdout);
	static void *keep[512];
	unsigned seed = 7;
	double t0 = now_s();
	int n = task_count();
	while (n <= own && now_s() - t0 < secs) {
		churn(keep, 512, &seed);
		usleep(1000);
		n = task_count();
	}
	if (n > own)
		printf("grown %d after %.0f\n", n, (now_s() - t0) * 1000);
	else
		printf("not grown %d\n", n);
	fflush(stdout);
	if (!strcmp(mode, "fork")) { /* a child forked now allocates for 1.5 s */
		pid_t pid = fork();
		if (pid == 0) {
			double t1 = now_s();
			while (now_s() - t1 < 1.5)
				churn(keep, 512, &seed);
			_exit(task_count() == 1 ? 0 : 1);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		printf("forked %s\n", WIFEXITED(st) && !WEXITSTATUS(st) ? "alone" : "threaded");
		fflush(stdout);
	}
	char line[64];
	while (fgets(line, sizeof(line), stdin))
		;
	for (int i = 0; i < 512; i++)
		free(keep[i]);
	return 0;
}

static char self[4096];

/* Start the child in @mode (allocating for at most @secs) with @env, under
 * LD_PRELOAD of the shim, or under `memcg run` if @run. */
static bool start(struct child *c, const char *mode, const char *secs, char *const env[], bool run)
{
	static char pre[4200];
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", getenv("MCG_PRELOAD_LIB"));
	char *e[8];
	int n = 0;
	if (!run)
		e[n++] = pre;
	for (char *const *x = env; x && *x && n < 7; x++)
		e[n++] = *x;
	e[n] = NULL;
	char *plain[] = {self, "--child", (char *)mode, (char *)secs, NULL};
	char *memcg_run[] = {(char *)prog_memcg_bin(),
	                     "run",
	                     "-o",
	                     "/dev/null",
	                     "--",
	                     self,
	                     "--child",
	                     (char *)mode,
	                     (char *)secs,
	                     NULL};
	return child_start(c, run ? memcg_run : plain, e);
}

/* The child's first line: its threads and glibc's flag at the start. */
static void expect_start(struct child *c, int tasks, int single)
{
	char line[128];
	int t = -1, s = -1;
	if (child_line(c, 30000, line, sizeof(line)))
		sscanf(line, "start %d %d", &t, &s);
	CHECK_EQ(t, tasks);
	CHECK_EQ(s, single);
}

/* The child's second line: ms until its threads grew, -1 if they did not. */
static long grown_ms(struct child *c, int *tasks)
{
	char line[128];
	long ms = -1;
	*tasks = -1;
	if (!child_line(c, 30000, line, sizeof(line)))
		return -1;
	if (sscanf(line, "grown %d after %ld", tasks, &ms) == 2)
		return ms;
	sscanf(line, "not grown %d", tasks);
	return -1;
}

static void test_short_program_stays_single(void)
{
	struct child c;
	REQUIRE(start(&c, "wait", "0.2", NULL, false));
	expect_start(&c, 1, 1);
	int n;
	CHECK_EQ(grown_ms(&c, &n), -1); /* 0.2 s: under the period */
	CHECK_EQ(n, 1);
	CHECK_EQ(child_wait(&c, 30), 0);
}

static void test_allocating_program_gets_them(void)
{
	struct child c;
	char *env[] = {"MCG_REAP_MS=500", NULL};
	REQUIRE(start(&c, "wait", "20", env, false));
	expect_start(&c, 1, 1);
	int n;
	long ms = grown_ms(&c, &n);
	CHECK(ms >= 450 && ms < 10000); /* not before the period, soon after */
	CHECK_EQ(n, 3);                 /* the reaper and the control server */
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)c.pid);
	struct prog_result r = cli("stat", "-p", pid, "/", "memory.current", NULL);
	CHECK_EQ(r.status, 0);
	prog_result_free(&r);
	CHECK_EQ(child_wait(&c, 30), 0);
}

static void test_threaded_program_gets_them_at_once(void)
{
	struct child c;
	REQUIRE(start(&c, "thread", "20", NULL, false));
	expect_start(&c, 2, 0);
	int n;
	long ms = grown_ms(&c, &n);
	CHECK(ms >= 0 && ms < 900); /* under the 1 s period */
	CHECK_EQ(n, 4);
	CHECK_EQ(child_wait(&c, 30), 0);
}

static void test_at_once(void)
{
	struct child c;
	char *env[] = {"MCG_LAZY_THREADS=0", NULL};
	REQUIRE(start(&c, "wait", "0", env, false));
	expect_start(&c, 3, 0);
	CHECK_EQ(child_wait(&c, 30), 0);
	/* memcg run: a program run to be steered serves its socket at once */
	REQUIRE(start(&c, "wait", "0", NULL, true));
	expect_start(&c, 3, 0);
	CHECK_EQ(child_wait(&c, 30), 0);
	/* ... unless told otherwise */
	char *lazy[] = {"MCG_LAZY_THREADS=1", NULL};
	REQUIRE(start(&c, "wait", "0", lazy, true));
	expect_start(&c, 1, 1);
	CHECK_EQ(child_wait(&c, 30), 0);
}

static void test_none_without_aging_or_control(void)
{
	struct child c;
	char *env[] = {"MCG_REAP_MS=0", "MCG_CONTROL=0", NULL};
	REQUIRE(start(&c, "wait", "1.5", env, false));
	expect_start(&c, 1, 1);
	int n;
	CHECK_EQ(grown_ms(&c, &n), -1);
	CHECK_EQ(n, 1);
	CHECK_EQ(child_wait(&c, 30), 0);
	/* aging off, the control socket on: the server alone, after 1 s */
	char *ctl[] = {"MCG_REAP_MS=0", NULL};
	REQUIRE(start(&c, "wait", "20", ctl, false));
	expect_start(&c, 1, 1);
	long ms = grown_ms(&c, &n);
	CHECK(ms >= 950 && ms < 10000);
	CHECK_EQ(n, 2);
	CHECK_EQ(child_wait(&c, 30), 0);
}

static void test_forked_child_starts_none(void)
{
	struct child c;
	/* The parent forks at once and allocates no more; the child allocates
	 * for three periods, so it would start the threads were it armed. */
	char *env[] = {"MCG_REAP_MS=500", NULL};
	REQUIRE(start(&c, "fork", "0", env, false));
	expect_start(&c, 1, 1);
	int n;
	CHECK_EQ(grown_ms(&c, &n), -1);
	char line[64];
	CHECK(child_line(&c, 30000, line, sizeof(line)) && !strcmp(line, "forked alone"));
	CHECK_EQ(child_wait(&c, 30), 0);
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--child"))
		return child(argv[2], atof(argv[3]));
	const char *why = prog_shim_self(self, sizeof(self));
	if (why)
		return test_skip(why);
	RUN(test_short_program_stays_single);
	RUN(test_allocating_program_gets_them);
	RUN(test_threaded_program_gets_them_at_once);
	RUN(test_at_once);
	RUN(test_none_without_aging_or_control);
	RUN(test_forked_child_starts_none);
	return test_done();
}
