/* SPDX-License-Identifier: MIT */
/*
 * test.h - the tests' tiny harness.
 *
 *   static void test_something(void) { CHECK(x == 1); CHECK_EQ(a, b); }
 *   int main(void) { RUN(test_something); return test_done(); }
 *
 * CHECK records a failure with file:line and goes on; REQUIRE returns from
 * the test function.  A check counts wherever it runs: inside RUN() it fails
 * that test; outside every test (in main(), in a helper before or after the
 * tests) it fails the binary all the same, and the summary says so.
 *
 * Skips.  A test whose precondition is missing (one CPU, one NUMA node, a
 * program not installed, an option forced by the environment) says so with
 * SKIP("reason", ...) - test_skip() and return - and is listed as
 * "skip NAME: reason", never as "ok".  main() skips the whole binary with
 * `return test_skip("reason");` (before any RUN()).
 *
 * The rule for the exit status, test_done():
 *   1   a check failed anywhere (in a test, or outside every test), or no
 *       test ran and nothing was skipped (a binary that tests nothing);
 *   0   otherwise, when at least one test ran to its end; tests skipped
 *       beside it are listed and counted ("N passed, N failed, N skipped");
 *   77  otherwise: everything was skipped (TEST_SKIP, ctest's
 *       SKIP_RETURN_CODE: the test shows as skipped, not passed).
 * A binary that reruns itself (test_rerun, test_run_locked) merges the two
 * statuses with test_merge(): failed if either failed, skipped if both
 * skipped, passed otherwise.
 *
 * Checks may run on several threads (the failure count is atomic); RUN(),
 * SKIP() and test_done() belong to the main thread.
 */
#ifndef MCG_TEST_H
#define MCG_TEST_H

#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define TEST_SKIP 77 /* exit status of a skipped binary (ctest SKIP_RETURN_CODE) */

static int test_failed_checks;   /* every failed check, in or out of a test (atomic) */
static int test_failed_in_tests; /* those inside RUN() */
static int test_passed, test_failed, test_skipped;
static int test_skipped_binary; /* test_skip() outside RUN(): the binary skips */
static int test_skipping;       /* the running test called test_skip() */
static int test_in_run;
static const char *test_current = "main";

static inline void test_fail_check(void)
{
	__atomic_fetch_add(&test_failed_checks, 1, __ATOMIC_RELAXED);
}

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			test_fail_check();                                                         \
			fprintf(stderr, "%s:%d: %s: CHECK(%s) failed\n", __FILE__, __LINE__,       \
			        test_current, #cond);                                              \
		}                                                                                  \
	} while (0)

#define CHECK_EQ(a, b)                                                                             \
	do {                                                                                       \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		if (_a != _b) {                                                                    \
			test_fail_check();                                                         \
			fprintf(stderr, "%s:%d: %s: %s == %s failed: %lld vs %lld\n", __FILE__,    \
			        __LINE__, test_current, #a, #b, _a, _b);                           \
		}                                                                                  \
	} while (0)

#define REQUIRE(cond)                                                                              \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			test_fail_check();                                                         \
			fprintf(stderr, "%s:%d: %s: REQUIRE(%s) failed\n", __FILE__, __LINE__,     \
			        test_current, #cond);                                              \
			return;                                                                    \
		}                                                                                  \
	} while (0)

/*
 * test_skip - record that a precondition is missing, with a printf-style reason.
 * Inside RUN(): the running test is reported skipped (the caller returns from
 * it; SKIP() does both).  Outside: the binary is skipped.
 * Return: TEST_SKIP, so main() can `return test_skip(...)`.
 */
__attribute__((format(printf, 1, 2))) static inline int test_skip(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "skip %s: ", test_in_run ? test_current : "(all tests)");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (test_in_run)
		test_skipping = 1;
	else
		test_skipped_binary = 1;
	return TEST_SKIP;
}

/* SKIP - skip the running test (inside a test function returning void). */
#define SKIP(...)                                                                                  \
	do {                                                                                       \
		test_skip(__VA_ARGS__);                                                            \
		return;                                                                            \
	} while (0)

#define RUN(fn)                                                                                    \
	do {                                                                                       \
		int _before = __atomic_load_n(&test_failed_checks, __ATOMIC_RELAXED);              \
		test_current = #fn;                                                                \
		test_in_run = 1;                                                                   \
		test_skipping = 0;                                                                 \
		fn();                                                                              \
		test_in_run = 0;                                                                   \
		int _fails = __atomic_load_n(&test_failed_checks, __ATOMIC_RELAXED) - _before;     \
		test_failed_in_tests += _fails;                                                    \
		if (_fails) {                                                                      \
			test_failed++;                                                             \
			fprintf(stderr, "FAIL %s\n", #fn);                                         \
		} else if (test_skipping) {                                                        \
			test_skipped++;                                                            \
		} else {                                                                           \
			test_passed++;                                                             \
			fprintf(stderr, "ok   %s\n", #fn);                                         \
		}                                                                                  \
		test_current = "main";                                                             \
	} while (0)

/*
 * In a child that is expected to abort: abort() ends it through exit(), so
 * what it ran is written out like any process's (coverage counters are
 * written at exit, and a killed process writes none).  test_aborted() is
 * true of such a child's status (or of one killed by SIGABRT).
 */
#define TEST_ABORT_STATUS 134
static inline void test_abort_exits_(int sig)
{
	(void)sig;
	exit(TEST_ABORT_STATUS);
}
static inline void test_child_abort_exits(void) { signal(SIGABRT, test_abort_exits_); }
static inline int test_aborted(int status)
{
	return (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) ||
	       (WIFEXITED(status) && WEXITSTATUS(status) == TEST_ABORT_STATUS);
}

/*
 * test_rerun - run this test binary again with environment variable @var set
 * to @value and @marker set to "1" (so the child knows it is the rerun).
 * Return: the child's exit status (TEST_SKIP when it skipped everything).
 */
static inline int test_rerun(char **argv, const char *var, const char *value, const char *marker)
{
	fflush(stdout);
	fflush(stderr);
	/* posix_spawn, not fork: the child only execs, and a fork would run the
	 * library's atfork handlers, which hold every allocator lock at once -
	 * more locks than TSan's deadlock detector can track (64). */
	size_t n = 0, lv = strlen(var), lm = strlen(marker);
	while (environ[n])
		n++;
	char **env = calloc(n + 3, sizeof(*env));
	char *kv = malloc(lv + strlen(value) + 2), *km = malloc(lm + 3);
	int rc = 127;
	if (env && kv && km) {
		snprintf(kv, lv + strlen(value) + 2, "%s=%s", var, value);
		snprintf(km, lm + 3, "%s=1", marker);
		size_t k = 0;
		for (size_t i = 0; i < n; i++) {
			const char *e = environ[i];
			if ((!strncmp(e, var, lv) && e[lv] == '=') ||
			    (!strncmp(e, marker, lm) && e[lm] == '='))
				continue;
			env[k++] = environ[i];
		}
		env[k++] = kv;
		env[k++] = km;
		env[k] = NULL;
		/* the binary's own path: under valgrind /proc/self/exe is the
		 * tool, and readlink() of it says the program */
		char self[4096] = "/proc/self/exe";
		ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (len > 0)
			self[len] = '\0';
		pid_t pid;
		if (!posix_spawn(&pid, self, NULL, NULL, argv, env)) {
			int status = 0;
			waitpid(pid, &status, 0);
			rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		}
	}
	free(env);
	free(kv);
	free(km);
	return rc;
}

/* test_run_locked - rerun with MCG_RSEQ=0, the per-CPU lock path (the mode
 * is chosen once per process); the child sees MCG_TEST_LOCKED. */
static inline int test_run_locked(char **argv)
{
	return test_rerun(argv, "MCG_RSEQ", "0", "MCG_TEST_LOCKED");
}

/* test_slowdown - how many times slower than natively this test runs: the
 * MCG_TEST_SLOWDOWN environment variable (scripts/valgrind.sh sets it: memcheck
 * runs code tens of times slower), else 1.  Time bounds and periods that a
 * test checks against scale with it. */
static inline unsigned test_slowdown(void)
{
	const char *s = getenv("MCG_TEST_SLOWDOWN");
	int n = s ? atoi(s) : 1;
	return n > 1 ? (unsigned)n : 1;
}

/* test_merge - the status of two runs (this one and a rerun) together:
 * failed (1) if either failed, TEST_SKIP if both skipped, else 0. */
static inline int test_merge(int a, int b)
{
	if ((a && a != TEST_SKIP) || (b && b != TEST_SKIP))
		return 1;
	return a == TEST_SKIP && b == TEST_SKIP ? TEST_SKIP : 0;
}

/* test_done - print the summary and return the exit status (rule above). */
static inline int test_done(void)
{
	int all = __atomic_load_n(&test_failed_checks, __ATOMIC_RELAXED);
	int outside = all - test_failed_in_tests;
	printf("%d passed, %d failed, %d skipped\n", test_passed, test_failed, test_skipped);
	if (outside)
		printf("%d checks failed outside the tests\n", outside);
	fflush(stdout);
	if (outside)
		fprintf(stderr, "FAIL %d checks outside the tests\n", outside);
	if (all || test_failed)
		return 1;
	if (test_passed)
		return 0;
	if (test_skipped || test_skipped_binary)
		return TEST_SKIP;
	fprintf(stderr, "FAIL no test ran\n");
	return 1;
}

/* test_done_then_locked - test_done() for this run and, unless this is
 * the rerun, the same binary again with MCG_RSEQ=0 (the locked path): both
 * statuses merged. */
static inline int test_done_then_locked(char **argv)
{
	int rc = test_done();
	if (!getenv("MCG_TEST_LOCKED")) {
		fprintf(stderr, "--- again with MCG_RSEQ=0 (locked path)\n");
		rc = test_merge(rc, test_run_locked(argv));
	}
	return rc;
}

#endif /* MCG_TEST_H */
