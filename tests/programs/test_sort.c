/* SPDX-License-Identifier: MIT */
/*
 * test_sort.c - sort(1) on memcg's allocator through `memcg run`: 200 000
 * generated lines sorted numerically, by key and uniquely, with several
 * threads and a small buffer (so sort spills to temporary files and merges);
 * each output must equal the same sort on glibc's malloc.
 */
#include "progs.h"

static char dir[64];
static char input[128];

static bool make_input(void)
{
	snprintf(input, sizeof(input), "%s/input.txt", dir);
	FILE *f = fopen(input, "w");
	if (!f)
		return false;
	unsigned long x = 88172645463325252ul; /* xorshift64: a fixed sequence */
	for (int i = 0; i < 200000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		fprintf(f, "%lu %s-%05lu\t%lx\n", x % 1000003, i % 3 ? "beta" : "alpha",
		        (x >> 20) % 100000, x);
	}
	return fclose(f) == 0;
}

static void compare_sort(char *const args[])
{
	char *argv[16] = {"sort"};
	int n = 1;
	for (int i = 0; args[i] && n < 14; i++)
		argv[n++] = args[i];
	argv[n++] = input;
	argv[n] = NULL;
	char *env[] = {"LC_ALL=C", NULL};
	struct prog_result native = prog_run(argv, dir, env, NULL, 60);
	struct prog_result shim = prog_run_memcg(argv, NULL, dir, env, NULL, 60);
	CHECK_EQ(native.status, 0);
	CHECK_EQ(shim.status, 0);
	CHECK(native.out_len > 1000000);
	CHECK_EQ(shim.out_len, native.out_len);
	CHECK(shim.out_len == native.out_len && memcmp(shim.out, native.out, shim.out_len) == 0);
	CHECK(prog_is_report(shim.err));
	if (shim.status != 0 || !prog_is_report(shim.err))
		prog_show_failure(args[0], &shim);
	prog_result_free(&native);
	prog_result_free(&shim);
}

static void test_sort_lines(void) { compare_sort((char *[]){"--parallel=4", NULL}); }

static void test_sort_numeric_keys_spilling(void)
{
	/* A 1 MiB buffer: sort writes runs to temporary files and merges them. */
	char tmp[96];
	snprintf(tmp, sizeof(tmp), "--temporary-directory=%s", dir);
	compare_sort((char *[]){"-n", "-k1,1", "-k2,2r", "-S", "1M", tmp, NULL});
}

static void test_sort_unique_field(void)
{
	compare_sort((char *[]){"-u", "-t", "\t", "-k2,2", "--parallel=2", NULL});
}

int main(void)
{
	if (!prog_which("sort"))
		return test_skip("sort is not installed (Debian package coreutils)");
	if (!prog_mkdtemp(dir) || !make_input()) {
		perror("temporary input");
		return 1;
	}
	RUN(test_sort_lines);
	RUN(test_sort_numeric_keys_spilling);
	RUN(test_sort_unique_field);
	prog_rmtree(dir);
	return test_done();
}
