/* SPDX-License-Identifier: MIT */
/*
 * test_run_heap.c - `memcg run --max SIZE --high SIZE`: the program's heap
 * is charged to a group (src/preload/heap.c).  Over max its mallocs fail
 * (python3 raises MemoryError and carries on); over high it is throttled,
 * not failed; at exit the report ends with the group's memory.current,
 * memory.stat and memory.events (stderr or -o FILE), never in the program's
 * stdout, and memory.current = anon + kernel there (the stocks drained).
 * Bad sizes are usage errors (exit 2).  Without the options nothing is
 * accounted (no heap group in the report).
 */
#include "progs.h"

/* `memcg run [--max MAX] [--high HIGH] [-o OUT] -- python3 -c CODE`. */
static struct prog_result run_heap(const char *max, const char *high, const char *out,
                                   const char *code, int timeout_s)
{
	const char *bin = prog_memcg_bin();
	char *argv[16];
	int n = 0;
	argv[n++] = (char *)bin;
	argv[n++] = "run";
	if (max)
		argv[n++] = "--max", argv[n++] = (char *)max;
	if (high)
		argv[n++] = "--high", argv[n++] = (char *)high;
	if (out)
		argv[n++] = "-o", argv[n++] = (char *)out;
	argv[n++] = "--";
	argv[n++] = "python3";
	argv[n++] = "-c";
	argv[n++] = (char *)code;
	argv[n] = NULL;
	return prog_run(argv, NULL, NULL, NULL, timeout_s);
}

/* The value after "# FILE of the heap group\n" ... "KEY " in @text, or -1. */
static long heap_value(const char *text, const char *file, const char *key)
{
	char head[96];
	snprintf(head, sizeof(head), "# %s of the heap group\n", file);
	const char *p = strstr(text, head);
	if (!p)
		return -1;
	p += strlen(head);
	if (!key)
		return atol(p);
	size_t kl = strlen(key);
	while (*p && *p != '#') {
		if (!strncmp(p, key, kl) && p[kl] == ' ')
			return atol(p + kl + 1);
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
	return -1;
}

/* Blocks of 1 MiB go through malloc (python's small-object arenas do not). */
static const char *grow_code = "import sys\n"
                               "chunks = []\n"
                               "try:\n"
                               "    for i in range(1000):\n"
                               "        chunks.append(bytearray(1 << 20))\n"
                               "except MemoryError:\n"
                               "    print('MemoryError at', len(chunks))\n"
                               "    del chunks\n"
                               "    print('still running', sum(range(10)))\n";

static void test_max_fails_mallocs(void)
{
	struct prog_result r = run_heap("32M", NULL, NULL, grow_code, 60);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, "MemoryError at") != NULL);
	CHECK(strstr(r.out, "still running 45") != NULL);
	long at = strstr(r.out, "MemoryError at") ? atol(strstr(r.out, "at ") + 3) : -1;
	CHECK(at > 8 && at < 32);                   /* 32 MiB less python's own heap */
	CHECK(strstr(r.out, "heap group") == NULL); /* the report is not in stdout */
	CHECK_EQ(heap_value(r.err, "memory.max", NULL), 32l << 20);
	CHECK(heap_value(r.err, "memory.peak", NULL) <= 32l << 20);
	CHECK(heap_value(r.err, "memory.peak", NULL) > 16l << 20);
	CHECK(heap_value(r.err, "memory.events", "max") > 0);
	CHECK(heap_value(r.err, "memory.events", "oom") > 0);
	CHECK_EQ(heap_value(r.err, "memory.current", NULL),
	         heap_value(r.err, "memory.stat", "anon") +
	                 heap_value(r.err, "memory.stat", "kernel"));
	if (r.status != 0 || !strstr(r.out, "MemoryError"))
		prog_show_failure("--max 32M", &r);
	prog_result_free(&r);
}

/*
 * ~11 MiB in 1280-byte slots (1200 bytes and python's header: too near the
 * slot for a fitted cache), a little over 12M with python's own heap:
 * throttled a little (the kernel's quadratic delay), never failed.  @code
 * makes 9000 such blocks and prints their count.
 */
static void check_high_throttles(const char *code, const char *what)
{
	struct prog_result r = run_heap(NULL, "12M", NULL, code, 120);
	CHECK_EQ(r.status, 0);
	CHECK(!strcmp(r.out, "9000\n"));
	CHECK(heap_value(r.err, "memory.events", "high") > 0);
	CHECK_EQ(heap_value(r.err, "memory.events", "max"), 0);
	CHECK_EQ(heap_value(r.err, "memory.events", "oom"), 0);
	CHECK(heap_value(r.err, "memory.stat", "throttled_ms") > 0);
	CHECK(heap_value(r.err, "memory.peak", NULL) > 12l << 20);
	if (r.status != 0)
		prog_show_failure(what, &r);
	prog_result_free(&r);
}

/* bytes(n) is zeroed: calloc. */
static void test_high_throttles(void)
{
	check_high_throttles("l = [bytes(1200) for i in range(9000)]\nprint(len(l))\n",
	                     "--high 12M");
}

/*
 * The same through malloc: a repeated bytes object is not zeroed.  The
 * shim's malloc up to 8 KiB tests the heap group on its slow path only (in
 * heap mode the kmalloc table holds no CPU arrays): every such block must
 * be charged.
 */
static void test_small_mallocs_charged(void)
{
	check_high_throttles("l = [b'x' * (1200 + i % 2) for i in range(9000)]\nprint(len(l))\n",
	                     "--high 12M (malloc)");
}

static void test_report_to_file(void)
{
	char dir[64];
	REQUIRE(prog_mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/report", dir);
	struct prog_result r = run_heap("1G", "512M", path, "print(sum(range(100)))", 60);
	CHECK_EQ(r.status, 0);
	CHECK(!strcmp(r.out, "4950\n"));
	CHECK(strstr(r.err, "heap group") == NULL);
	char *rep = prog_read_file(path);
	REQUIRE(rep);
	CHECK(prog_is_report(rep));
	CHECK_EQ(heap_value(rep, "memory.max", NULL), 1l << 30);
	CHECK_EQ(heap_value(rep, "memory.high", NULL), 512l << 20);
	CHECK(heap_value(rep, "memory.stat", "anon") > 0); /* python's heap is charged */
	CHECK_EQ(heap_value(rep, "memory.events", "max"), 0);
	free(rep);
	prog_rmtree(dir);
	prog_result_free(&r);
}

static void test_no_options_no_group(void)
{
	struct prog_result r = run_heap(NULL, NULL, NULL, "print(1)", 60);
	CHECK_EQ(r.status, 0);
	CHECK(prog_is_report(r.err));
	CHECK(strstr(r.err, "heap group") == NULL);
	prog_result_free(&r);
}

static void test_bad_sizes(void)
{
	const char *bad[] = {"12Q", "-1", "", "1.5M", "max1"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct prog_result r = run_heap(bad[i], NULL, NULL, "print(1)", 30);
		CHECK_EQ(r.status, 2);
		CHECK_EQ(r.out_len, 0);
		CHECK(strstr(r.err, "--max") != NULL);
		prog_result_free(&r);
	}
	struct prog_result r = run_heap(NULL, "lots", NULL, "print(1)", 30);
	CHECK_EQ(r.status, 2);
	CHECK(strstr(r.err, "--high") != NULL);
	prog_result_free(&r);
	/* an option without its value */
	const char *bin = prog_memcg_bin();
	char *argv[] = {(char *)bin, "run", "--max", NULL};
	r = prog_run(argv, NULL, NULL, NULL, 30);
	CHECK_EQ(r.status, 2);
	CHECK(strstr(r.err, "usage: memcg run") != NULL);
	prog_result_free(&r);
}

int main(void)
{
	if (!prog_which("python3"))
		return test_skip("python3 is not installed (scripts/deps.sh installs python3)");
	RUN(test_max_fails_mallocs);
	RUN(test_high_throttles);
	RUN(test_small_mallocs_charged);
	RUN(test_report_to_file);
	RUN(test_no_options_no_group);
	RUN(test_bad_sizes);
	return test_done();
}
