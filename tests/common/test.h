/* SPDX-License-Identifier: MIT */
/*
 * test.h - the tests' tiny harness.
 *
 *   static void test_something(void) { CHECK(x == 1); CHECK_EQ(a, b); }
 *   int main(void) { RUN(test_something); return test_done(); }
 *
 * CHECK records a failure with file:line and goes on; REQUIRE returns from
 * the test function.  test_done() prints "N passed, N failed" (tests, not
 * checks) and returns the exit status.
 */
#ifndef MCG_TEST_H
#define MCG_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int test_failed_checks;
static int test_passed, test_failed;
static const char *test_current = "?";

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			test_failed_checks++;                                                      \
			fprintf(stderr, "%s:%d: %s: CHECK(%s) failed\n", __FILE__, __LINE__,       \
			        test_current, #cond);                                              \
		}                                                                                  \
	} while (0)

#define CHECK_EQ(a, b)                                                                             \
	do {                                                                                       \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		if (_a != _b) {                                                                    \
			test_failed_checks++;                                                      \
			fprintf(stderr, "%s:%d: %s: %s == %s failed: %lld vs %lld\n", __FILE__,    \
			        __LINE__, test_current, #a, #b, _a, _b);                           \
		}                                                                                  \
	} while (0)

#define REQUIRE(cond)                                                                              \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			test_failed_checks++;                                                      \
			fprintf(stderr, "%s:%d: %s: REQUIRE(%s) failed\n", __FILE__, __LINE__,     \
			        test_current, #cond);                                              \
			return;                                                                    \
		}                                                                                  \
	} while (0)

#define RUN(fn)                                                                                    \
	do {                                                                                       \
		int _before = test_failed_checks;                                                  \
		test_current = #fn;                                                                \
		fn();                                                                              \
		if (test_failed_checks == _before) {                                               \
			test_passed++;                                                             \
			fprintf(stderr, "ok   %s\n", #fn);                                         \
		} else {                                                                           \
			test_failed++;                                                             \
			fprintf(stderr, "FAIL %s\n", #fn);                                         \
		}                                                                                  \
	} while (0)

/*
 * test_rerun - run this test binary again with environment variable @var set
 * to @value and @marker set to "1" (so the child knows it is the rerun).
 * Return: the child's exit status.
 */
static inline int test_rerun(char **argv, const char *var, const char *value, const char *marker)
{
	pid_t pid = fork();
	if (pid == 0) {
		setenv(var, value, 1);
		setenv(marker, "1", 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* test_run_locked - rerun with MCG_RSEQ=0, the per-CPU lock path (the mode
 * is chosen once per process); the child sees MCG_TEST_LOCKED. */
static inline int test_run_locked(char **argv)
{
	return test_rerun(argv, "MCG_RSEQ", "0", "MCG_TEST_LOCKED");
}

static inline int test_done(void)
{
	printf("%d passed, %d failed\n", test_passed, test_failed);
	return test_failed ? 1 : 0;
}

#endif /* MCG_TEST_H */
