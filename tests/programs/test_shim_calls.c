/* SPDX-License-Identifier: MIT */
/*
 * test_shim_calls.c - the malloc shim's less common entry points and its
 * start-up and exit messages, in a program run under it (this binary,
 * re-executed with LD_PRELOAD): posix_memalign's EINVAL and ENOMEM,
 * memalign of an alignment that is not a power of two (rounded up) or too
 * large (EINVAL), valloc/pvalloc of too much, cfree, malloc_trim,
 * malloc_usable_size; _Exit writes the slabinfo report; an invalid
 * MCG_HEAP_MAX or MCG_HEAP_HIGH (an empty one is none), a metrics address that cannot be served and
 * a report file that cannot be written are each said on stderr, and the program runs on.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <sys/stat.h>

#include "progs.h"
#include "test.h"

static int child_calls(void)
{
	int bad = 0;
#define EXPECT(c)                                                                                  \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			printf("FAILED: %s\n", #c);                                                \
			bad++;                                                                     \
		}                                                                                  \
	} while (0)
	void *p = (void *)1;
	EXPECT(posix_memalign(&p, 3, 8) == EINVAL && p == (void *)1);
	EXPECT(posix_memalign(&p, 12, 8) == EINVAL);
	EXPECT(posix_memalign(&p, 64, SIZE_MAX - 4096) == ENOMEM && p == (void *)1);
	EXPECT(posix_memalign(&p, 64, 100) == 0 && (uintptr_t)p % 64 == 0);
	free(p);
	errno = 0;
	EXPECT(memalign(((size_t)1 << 63) + 1, 8) == NULL && errno == EINVAL);
	void *q = memalign(24, 100); /* rounded up to 32 */
	EXPECT(q && (uintptr_t)q % 32 == 0 && malloc_usable_size(q) >= 100);
	free(q);
	q = memalign(8, 10); /* small alignments are malloc's */
	EXPECT(q != NULL);
	/* glibc's old name for free: the shim still exports it (glibc no longer links it) */
	void (*cfree_fn)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "cfree");
	EXPECT(cfree_fn != NULL);
	if (cfree_fn)
		cfree_fn(q);
	errno = 0;
	EXPECT(pvalloc(SIZE_MAX - 100) == NULL && errno == ENOMEM);
	q = pvalloc(0); /* one page */
	EXPECT(q && (uintptr_t)q % 4096 == 0 && malloc_usable_size(q) >= 4096);
	free(q);
	q = valloc(10);
	EXPECT(q && (uintptr_t)q % 4096 == 0);
	free(q);
	EXPECT(malloc_usable_size(NULL) == 0);
	for (int i = 0; i < 1000; i++)
		free(malloc(64));
	int trimmed = malloc_trim(0);
	EXPECT(trimmed == 0 || trimmed == 1);
	printf("%s\n", bad ? "calls failed" : "calls ok");
	fflush(stdout);
	if (getenv("MCG_REPORT_PID"))
		_Exit(bad ? 1 : 0); /* the shim's _Exit: the report is written first */
	return bad ? 1 : 0;         /* exit(): the destructors run (coverage is written) */
}

static char self[4096];

static struct prog_result run_child(const char *mode, const char *extra1, const char *extra2)
{
	char preload[4200], marker[64];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", getenv("MCG_PRELOAD_LIB"));
	snprintf(marker, sizeof(marker), "MCG_TEST_SHIM_CHILD=%s", mode);
	char *env[] = {preload, marker, (char *)extra1, (char *)extra2, NULL};
	char *argv[] = {self, NULL};
	return prog_run(argv, NULL, env, NULL, 60);
}

static char dir[64];

static void test_calls_and_report(void)
{
	char report[128], rf[160];
	snprintf(report, sizeof(report), "%s/report", dir);
	snprintf(rf, sizeof(rf), "MCG_TEST_REPORT=%s", report);
	struct prog_result r = run_child("report", rf, NULL);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, "calls ok\n"));
	if (r.status)
		prog_show_failure("the calls", &r);
	char *text = prog_read_file(report);
	CHECK(text && prog_is_report(text));
	free(text);
	prog_result_free(&r);
}

static void test_messages(void)
{
	/* a heap limit that is no size, and a metrics address that is none */
	struct prog_result r =
	        run_child("calls", "MCG_HEAP_MAX=12x", "MCG_METRICS_LISTEN=no-such-host:99999");
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.err, "MCG_HEAP_MAX=12x: not a valid memory.max value"));
	CHECK(strstr(r.err, "metrics: not serving no-such-host:99999"));
	prog_result_free(&r);
	/* an empty heap limit is none; a high one that is no size */
	r = run_child("calls", "MCG_HEAP_MAX=", "MCG_HEAP_HIGH=1x");
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, "calls ok\n"));
	CHECK(strstr(r.err, "MCG_HEAP_HIGH=1x: not a valid memory.high value"));
	CHECK(!strstr(r.err, "MCG_HEAP_MAX"));
	prog_result_free(&r);
	/* a report that cannot be written */
	r = run_child("report", "MCG_TEST_REPORT=/nonexistent/dir/report", NULL);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.err, "cannot write the slabinfo report to /nonexistent/dir/report"));
	prog_result_free(&r);
}

int main(int argc, char **argv)
{
	const char *mode = getenv("MCG_TEST_SHIM_CHILD");
	if (mode && !strcmp(mode, "calls"))
		return child_calls();
	if (mode && !strcmp(mode, "report")) {
		/* once more, as the process the shim reports for (its own pid) */
		char pid[32];
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		setenv("MCG_REPORT_PID", pid, 1);
		setenv("MCG_REPORT_FILE", getenv("MCG_TEST_REPORT"), 1);
		setenv("MCG_TEST_SHIM_CHILD", "calls", 1);
		execv("/proc/self/exe", argv);
		return 127;
	}
	const char *why = prog_shim_self(self, sizeof(self));
	if (why)
		return test_skip(why);
	if (!prog_mkdtemp(dir))
		return test_skip("no temporary directory");
	RUN(test_calls_and_report);
	RUN(test_messages);
	prog_rmtree(dir);
	return test_done();
}
