/* SPDX-License-Identifier: MIT */
/*
 * test_report.c - corruption reports (slab/report.c): every kind's name
 * (and "unknown" outside the enum), a handler installed and swapped back,
 * and the default handler: a leak is printed and the program goes on,
 * anything else is printed and aborts.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memcg/debug.h"
#include "memcg/slab.h"
#include "test.h"

static void test_names(void)
{
	static const char *const want[] = {"?",
	                                   "double-free",
	                                   "foreign-pointer",
	                                   "wrong-cache",
	                                   "misaligned-pointer",
	                                   "freelist-corruption",
	                                   "poison-overwritten",
	                                   "redzone-overwritten",
	                                   "leak"};
	for (int k = MCG_REPORT_DOUBLE_FREE; k <= MCG_REPORT_LEAK; k++)
		CHECK(!strcmp(mcg_report_kind_name((mcg_report_kind_t)k), want[k]));
	CHECK(!strcmp(mcg_report_kind_name((mcg_report_kind_t)0), "unknown"));
	CHECK(!strcmp(mcg_report_kind_name((mcg_report_kind_t)99), "unknown"));
	CHECK(!strcmp(mcg_report_kind_name((mcg_report_kind_t)-1), "unknown"));
}

static int seen;
static mcg_report_t last;
static void mine(const mcg_report_t *r)
{
	seen++;
	last = *r;
}

static void test_handler(void)
{
	mcg_report_fn prev = mcg_set_report_handler(mine);
	CHECK(prev == NULL);
	mcg_cache_t *c = mcg_cache_create("reported", 64, 0, 0, NULL);
	REQUIRE(c);
	void *p = mcg_cache_alloc(c);
	mcg_cache_free(c, p);
	mcg_cache_free(c, p); /* the top of the CPU array: caught at once */
	CHECK_EQ(seen, 1);
	CHECK_EQ(last.kind, MCG_REPORT_DOUBLE_FREE);
	CHECK(!strcmp(last.cache, "reported") && last.addr == p);
	CHECK(mcg_set_report_handler(NULL) == mine);
	CHECK_EQ(mcg_cache_destroy(c), 0);
}

/* In a child with the default handler: destroy a cache that leaks, then free twice. */
static void leak_then_double_free(void)
{
	mcg_cache_t *c = mcg_cache_create("leaky", 64, 0, 0, NULL);
	void *p = mcg_cache_alloc(c);
	if (mcg_cache_destroy(c) != -EBUSY) /* printed, and on we go */
		exit(2);
	fprintf(stderr, "still running\n");
	mcg_cache_free(c, p);
	mcg_cache_free(c, p); /* printed, then abort */
	exit(0);
}

static void test_default_handler(void)
{
	int pfd[2];
	REQUIRE(pipe(pfd) == 0);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 2);
		test_child_abort_exits();
		leak_then_double_free();
	}
	close(pfd[1]);
	char out[2048];
	size_t got = 0;
	ssize_t n;
	while (got + 1 < sizeof(out) && (n = read(pfd[0], out + got, sizeof(out) - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(pfd[0]);
	int st;
	waitpid(pid, &st, 0);
	CHECK(test_aborted(st));
	CHECK(strstr(out, "memcg: leak of 0x") && strstr(out, "in cache 'leaky'"));
	CHECK(strstr(out, "still running\n"));
	CHECK(strstr(out, "memcg: double-free of 0x"));
}

int main(void)
{
	RUN(test_names);
	RUN(test_handler);
	RUN(test_default_handler);
	return test_done();
}
