/* SPDX-License-Identifier: MIT */
/*
 * test_run.c - `memcg run` itself, and the malloc family of the preload shim.
 *
 * The first half checks the command: the program's exit status and signals
 * pass through, its stdout is untouched, the report goes to its stderr or to
 * -o FILE, only the started process reports (not its children), LD_PRELOAD
 * is appended to, bad usage exits 2.
 *
 * The second half re-executes this test under `memcg run` ("--in-shim") and
 * checks, inside the shimmed process, the C/glibc contract of every function
 * the shim defines, thread exit with TLS destructors that free, and fork
 * while other threads allocate (a child that mallocs must not deadlock).
 */
#include <dlfcn.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>

#include "progs.h"

static char dir[64];

/* ============================================================ memcg run */

static void test_run_exit_status(void)
{
	char *argv[] = {"sh", "-c", "exit 7", NULL};
	struct prog_result r = prog_run_memcg(argv, NULL, NULL, NULL, NULL, 30);
	CHECK_EQ(r.status, 7);
	CHECK(prog_is_report(r.err)); /* exit() from sh: the report is there */
	prog_result_free(&r);
}

static void test_run_killed_by_signal(void)
{
	char *argv[] = {"sh", "-c", "kill -9 $$", NULL};
	struct prog_result r = prog_run_memcg(argv, NULL, NULL, NULL, NULL, 30);
	CHECK_EQ(r.status, 128 + 9);
	CHECK(strstr(r.err, "killed by signal 9") != NULL);
	prog_result_free(&r);
}

static void test_run_not_found(void)
{
	char *argv[] = {"memcg-no-such-program-xyz", NULL};
	struct prog_result r = prog_run_memcg(argv, NULL, NULL, NULL, NULL, 30);
	CHECK_EQ(r.status, 127);
	CHECK(strstr(r.err, "memcg-no-such-program-xyz") != NULL);
	prog_result_free(&r);
}

static void test_run_bad_usage(void)
{
	const char *bin = prog_memcg_bin();
	REQUIRE(bin);
	char *cases[][5] = {
	        {(char *)bin, "run", NULL},
	        {(char *)bin, "run", "--", NULL},
	        {(char *)bin, "run", "-o", NULL},
	        {(char *)bin, "run", "-x", "--", "true"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct prog_result r = prog_run(cases[i], NULL, NULL, NULL, 30);
		CHECK_EQ(r.status, 2);
		CHECK(strstr(r.err, "usage: memcg run") != NULL);
		CHECK_EQ(r.out_len, 0);
		prog_result_free(&r);
	}
	char *help[] = {(char *)bin, "run", "--help", NULL};
	struct prog_result r = prog_run(help, NULL, NULL, NULL, 30);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, "usage: memcg run") != NULL);
	prog_result_free(&r);
}

static void test_run_stdout_untouched(void)
{
	char *argv[] = {"sh", "-c", "printf 'a\\nb'; printf 'to-stderr\\n' >&2", NULL};
	struct prog_result r = prog_run_memcg(argv, NULL, NULL, NULL, NULL, 30);
	CHECK_EQ(r.status, 0);
	CHECK_EQ(r.out_len, 3);
	CHECK(strcmp(r.out, "a\nb") == 0);
	CHECK(strncmp(r.err, "to-stderr\n", 10) == 0);
	CHECK(prog_is_report(r.err));
	prog_result_free(&r);
}

static void test_run_children_do_not_report(void)
{
	/* sh forks ls twice and python once; all run on the shim, one reports. */
	char *argv[] = {"sh", "-c",
	                "ls / >/dev/null; ls / >/dev/null; python3 -c 'x=[str(i) for i in "
	                "range(9999)]'; echo done",
	                NULL};
	struct prog_result r = prog_run_memcg(argv, NULL, NULL, NULL, NULL, 60);
	CHECK_EQ(r.status, 0);
	CHECK(strcmp(r.out, "done\n") == 0);
	CHECK_EQ(prog_count(r.err, "slabinfo - version: 2.1"), 1);
	prog_result_free(&r);
}

static void test_run_program_closes_stderr(void)
{
	/* The report reaches the original stderr even if the program closed its
	 * fd 2 before exiting (coreutils' close_stdout does). */
	char *argv[] = {"sh", "-c", "exec 2>&-; echo closed", NULL};
	struct prog_result r = prog_run_memcg(argv, NULL, NULL, NULL, NULL, 30);
	CHECK_EQ(r.status, 0);
	CHECK(strcmp(r.out, "closed\n") == 0);
	CHECK(prog_is_report(r.err));
	prog_result_free(&r);
}

static void test_run_reused_descriptor_not_written(void)
{
	/* A program that closes every descriptor above 2 and opens its own file
	 * at each of those numbers must not find the report in its file. */
	char *argv[] = {"python3", "-c",
	                "import os\n"
	                "fds = [int(f) for f in os.listdir('/proc/self/fd') if int(f) > 2]\n"
	                "for f in fds:\n"
	                "    try: os.close(f)\n"
	                "    except OSError: pass\n"
	                "v = os.open('victim.txt', os.O_WRONLY | os.O_CREAT, 0o644)\n"
	                "for f in fds:\n"
	                "    if f != v: os.dup2(v, f, inheritable=False)\n"
	                "print(len(fds) > 0)\n",
	                NULL};
	struct prog_result r = prog_run_memcg(argv, NULL, dir, NULL, NULL, 30);
	CHECK_EQ(r.status, 0);
	CHECK(strcmp(r.out, "True\n") == 0);
	char path[128];
	snprintf(path, sizeof(path), "%s/victim.txt", dir);
	char *text = prog_read_file(path);
	CHECK(text && text[0] == 0);
	free(text);
	prog_result_free(&r);
}

static void test_run_exec_in_place_reports(void)
{
	/* sh execs the last command: the same pid, so the exec'd program reports. */
	char *argv[] = {"sh", "-c", "exec python3 -c 'import sys; sys.exit(5)'", NULL};
	struct prog_result r = prog_run_memcg(argv, NULL, NULL, NULL, NULL, 60);
	CHECK_EQ(r.status, 5);
	CHECK(prog_is_report(r.err));
	prog_result_free(&r);
}

static void test_run_report_file(void)
{
	/* A relative -o, and a program that changes directory before it exits. */
	char *argv[] = {"sh", "-c", "cd / && echo moved", NULL};
	struct prog_result r = prog_run_memcg(argv, "rep.txt", dir, NULL, NULL, 30);
	CHECK_EQ(r.status, 0);
	CHECK(strcmp(r.out, "moved\n") == 0);
	CHECK(strstr(r.err, "slabinfo") == NULL);
	char path[128];
	snprintf(path, sizeof(path), "%s/rep.txt", dir);
	char *text = prog_read_file(path);
	CHECK(text && prog_is_report(text));
	free(text);
	prog_result_free(&r);

	/* A report file that cannot be created: exit 2 and nothing runs. */
	char *touch[] = {"sh", "-c", "echo ran", NULL};
	r = prog_run_memcg(touch, "/nonexistent-dir/x/rep.txt", NULL, NULL, NULL, 30);
	CHECK_EQ(r.status, 2);
	CHECK_EQ(r.out_len, 0);
	prog_result_free(&r);
}

static void test_run_ld_preload_appended(void)
{
	const char *lib = getenv("MCG_PRELOAD_LIB");
	REQUIRE(lib);
	char real[4096];
	REQUIRE(realpath(lib, real));
	char *env[] = {"LD_PRELOAD=libm.so.6", NULL};
	char *argv[] = {"sh", "-c", "echo \"$LD_PRELOAD\"", NULL};
	struct prog_result r = prog_run_memcg(argv, NULL, NULL, env, NULL, 30);
	char want[4200];
	snprintf(want, sizeof(want), "libm.so.6:%s\n", real);
	CHECK_EQ(r.status, 0);
	CHECK(strcmp(r.out, want) == 0);
	prog_result_free(&r);
}

static void test_run_finds_preload(void)
{
	/* Without MCG_PRELOAD_LIB, the library next to the binary is found. */
	char *unset[] = {"MCG_PRELOAD_LIB=", NULL};
	char *argv[] = {"sh", "-c", "echo \"$LD_PRELOAD\"", NULL};
	struct prog_result r = prog_run_memcg(argv, NULL, NULL, unset, NULL, 30);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, "/libmemcg-preload.so\n") != NULL);
	CHECK(prog_is_report(r.err));
	prog_result_free(&r);

	char *bogus[] = {"MCG_PRELOAD_LIB=/nonexistent/libmemcg-preload.so", NULL};
	r = prog_run_memcg(argv, NULL, NULL, bogus, NULL, 30);
	CHECK_EQ(r.status, 2);
	CHECK(strstr(r.err, "MCG_PRELOAD_LIB") != NULL);
	CHECK_EQ(r.out_len, 0);
	prog_result_free(&r);
}

static void test_plain_preload_is_silent(void)
{
	/* LD_PRELOAD without memcg run: the allocator works, nothing is printed. */
	const char *lib = getenv("MCG_PRELOAD_LIB");
	REQUIRE(lib);
	char pre[4200];
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", lib);
	char *env[] = {pre, "MCG_REPORT_PID=", NULL};
	char *argv[] = {"python3", "-c", "print(len({str(i): i for i in range(50000)}))", NULL};
	struct prog_result r = prog_run(argv, NULL, env, NULL, 60);
	CHECK_EQ(r.status, 0);
	CHECK(strcmp(r.out, "50000\n") == 0);
	CHECK_EQ(r.err_len, 0);
	prog_result_free(&r);
}

/* ============================================================ the shim's environment */

/* `sh -c SCRIPT` under LD_PRELOAD of the shim alone (no `memcg run`), with
 * the extra environment @extra (NULL-terminated, may be NULL). */
static struct prog_result run_preloaded(const char *script, char *const extra[])
{
	static char pre[4200];
	const char *lib = getenv("MCG_PRELOAD_LIB");
	struct prog_result none = {.status = -1};
	if (!lib)
		return none;
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", lib);
	char *env[16];
	int n = 0;
	env[n++] = pre;
	env[n++] = "MCG_REPORT_PID=";
	for (int i = 0; extra && extra[i] && n < 15; i++)
		env[n++] = extra[i];
	env[n] = NULL;
	char *argv[] = {"sh", "-c", (char *)script, NULL};
	return prog_run(argv, dir, env, NULL, 30);
}

/* MCG_REPORT_PID names the process to report (sh's $$, kept by exec): only
 * a plain decimal of at most 9 digits counts, MCG_REPORT_FILE wins over
 * MCG_REPORT_FD unless it is too long for a path, and a descriptor the
 * process does not have reports nothing. */
static void test_shim_report_environment(void)
{
	struct prog_result r;
	/* Not a number, too many digits: no report. */
	r = run_preloaded("MCG_REPORT_PID=$$x MCG_REPORT_FD=2 exec sh -c :", NULL);
	CHECK_EQ(r.status, 0);
	CHECK_EQ(r.err_len, 0);
	prog_result_free(&r);
	r = run_preloaded("MCG_REPORT_PID=0000000000$$ MCG_REPORT_FD=2 exec sh -c :", NULL);
	CHECK_EQ(r.status, 0);
	CHECK_EQ(r.err_len, 0);
	prog_result_free(&r);
	/* The pid and descriptor 2: the report on stderr. */
	r = run_preloaded("MCG_REPORT_PID=$$ MCG_REPORT_FD=2 exec sh -c :", NULL);
	CHECK_EQ(r.status, 0);
	CHECK(prog_is_report(r.err));
	prog_result_free(&r);
	/* No descriptor, no file: nothing. */
	r = run_preloaded("MCG_REPORT_PID=$$ exec sh -c :", NULL);
	CHECK_EQ(r.status, 0);
	CHECK_EQ(r.err_len, 0);
	prog_result_free(&r);
	/* A descriptor the process does not have: nothing. */
	r = run_preloaded("MCG_REPORT_PID=$$ MCG_REPORT_FD=77 exec sh -c :", NULL);
	CHECK_EQ(r.status, 0);
	CHECK_EQ(r.err_len, 0);
	prog_result_free(&r);
	/* The program closed the private copy: nothing, and no crash. */
	r = run_preloaded("MCG_REPORT_PID=$$ MCG_REPORT_FD=2 exec python3 -c "
	                  "'import os; os.closerange(3, 65536); print(1)'",
	                  NULL);
	CHECK_EQ(r.status, 0);
	CHECK(strcmp(r.out, "1\n") == 0);
	CHECK_EQ(r.err_len, 0);
	prog_result_free(&r);
	/* Fewer than 1000 descriptors allowed: the private copy sits lower. */
	r = run_preloaded("ulimit -n 200 && MCG_REPORT_PID=$$ MCG_REPORT_FD=2 exec sh -c :", NULL);
	CHECK_EQ(r.status, 0);
	CHECK(prog_is_report(r.err));
	prog_result_free(&r);
	/* A file name longer than any path: the descriptor instead. */
	static char longname[PATH_MAX + 64];
	memcpy(longname, "MCG_REPORT_FILE=", 16);
	memset(longname + 16, 'a', PATH_MAX + 8);
	longname[16 + PATH_MAX + 8] = 0;
	char *env_long[] = {longname, NULL};
	r = run_preloaded("MCG_REPORT_PID=$$ MCG_REPORT_FD=2 exec sh -c :", env_long);
	CHECK_EQ(r.status, 0);
	CHECK(prog_is_report(r.err));
	prog_result_free(&r);
	/* A report file that cannot take the report: one line on stderr. */
	r = run_preloaded("MCG_REPORT_PID=$$ MCG_REPORT_FILE=/dev/full exec sh -c :", NULL);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.err, "cannot write the slabinfo report to /dev/full") != NULL);
	CHECK(!prog_is_report(r.err));
	prog_result_free(&r);
}

/* The shim's servers at start-up (MCG_LAZY_THREADS=0): a socket directory whose path leaves no
 * room for the socket's name says so on stderr and the program runs on; an
 * empty MCG_METRICS_LISTEN starts nothing, a malformed one says so. */
static void test_shim_servers_environment(void)
{
	char deep[PATH_MAX];
	int n = snprintf(deep, sizeof(deep), "%s/", dir);
	memset(deep + n, 'd', 110);
	deep[n + 110] = 0;
	REQUIRE(mkdir(deep, 0700) == 0);
	char xdg[PATH_MAX + 32];
	snprintf(xdg, sizeof(xdg), "XDG_RUNTIME_DIR=%s", deep);
	char *env_deep[] = {xdg, "MCG_CONTROL=1", "MCG_LAZY_THREADS=0", NULL};
	struct prog_result r = run_preloaded("echo ran", env_deep);
	CHECK_EQ(r.status, 0);
	CHECK(strcmp(r.out, "ran\n") == 0);
	CHECK(strstr(r.err, "control socket: not serving (File name too long)") != NULL);
	prog_result_free(&r);
	rmdir(deep);
	char *env_empty[] = {"MCG_METRICS_LISTEN=", "MCG_CONTROL=0", NULL};
	r = run_preloaded("echo ran", env_empty);
	CHECK_EQ(r.status, 0);
	CHECK(strcmp(r.out, "ran\n") == 0);
	CHECK_EQ(r.err_len, 0);
	prog_result_free(&r);
	char *env_bad[] = {"MCG_METRICS_LISTEN=nowhere", "MCG_CONTROL=0", NULL};
	r = run_preloaded("echo ran", env_bad);
	CHECK_EQ(r.status, 0);
	CHECK(strcmp(r.out, "ran\n") == 0);
	CHECK(strstr(r.err, "metrics: not serving nowhere (Invalid argument)") != NULL);
	prog_result_free(&r);
}

/* ============================================================ inside the shim */

static void test_shim_owns_malloc(void)
{
	size_t (*mcg_usable)(const void *) =
	        (size_t(*)(const void *))dlsym(RTLD_DEFAULT, "mcg_malloc_usable_size");
	REQUIRE(mcg_usable); /* exported by libmemcg-preload.so only */
	void *p = malloc(100);
	REQUIRE(p);
	CHECK_EQ(mcg_usable(p), malloc_usable_size(p));
	CHECK(malloc_usable_size(p) >= 100);
	free(p);
	char *s = strdup("inside libc"); /* libc's own calls come here too */
	CHECK(s && mcg_usable(s) >= 12);
	free(s);
}

static void test_shim_malloc_calloc_realloc(void)
{
	void *z1 = malloc(0), *z2 = malloc(0);
	CHECK(z1 && z2 && z1 != z2);
	free(z1);
	free(z2);
	volatile size_t huge = SIZE_MAX; /* volatile: no compile-time size warnings */
	errno = 0;
	CHECK(malloc(huge) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(malloc(huge / 2) == NULL && errno == ENOMEM);

	unsigned char *c = calloc(1000, 7);
	REQUIRE(c);
	bool zero = true;
	for (int i = 0; i < 7000; i++)
		zero &= c[i] == 0;
	CHECK(zero);
	errno = 0;
	CHECK(calloc(huge / 2, 3) == NULL && errno == ENOMEM);

	memset(c, 0x5a, 7000);
	unsigned char *g = realloc(c, 100000);
	REQUIRE(g);
	bool kept = true;
	for (int i = 0; i < 7000; i++)
		kept &= g[i] == 0x5a;
	CHECK(kept);
	unsigned char *s = realloc(g, 10);
	REQUIRE(s);
	CHECK(s[0] == 0x5a && s[9] == 0x5a);
	CHECK(realloc(s, 0) == NULL); /* glibc: frees */
	void *n = realloc(NULL, 33);
	CHECK(n && malloc_usable_size(n) >= 33);
	free(n);
	free(NULL);

	/* A large block: mapped directly, fully usable. */
	size_t big = 16u << 20;
	char *b = malloc(big);
	REQUIRE(b);
	memset(b, 1, big);
	CHECK(malloc_usable_size(b) >= big);
	free(b);
}

static void test_shim_reallocarray(void)
{
	char *p = reallocarray(NULL, 10, 10);
	REQUIRE(p);
	memset(p, 7, 100);
	volatile size_t huge = SIZE_MAX;
	errno = 0;
	char *fail = reallocarray(p, huge / 2, 3);
	CHECK(fail == NULL && errno == ENOMEM);
	char *q = fail ? fail : p; /* the old block is kept on failure */
	CHECK(q[99] == 7);
	q = reallocarray(q, 1000, 10);
	REQUIRE(q);
	CHECK(q[0] == 7 && q[99] == 7);
	free(q);
}

static bool aligned(const void *p, size_t a) { return p && ((uintptr_t)p & (a - 1)) == 0; }

static void test_shim_aligned_family(void)
{
	void *p = (void *)1;
	CHECK_EQ(posix_memalign(&p, 3, 10), EINVAL);
	CHECK_EQ(posix_memalign(&p, 4, 10), EINVAL); /* < sizeof(void *) */
	CHECK(p == (void *)1);                       /* unchanged on error */
	size_t aligns[] = {8, 16, 64, 256, 4096, 65536, 1u << 20};
	for (size_t i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++) {
		size_t sizes[] = {0, 1, 100, 5000, 300000};
		for (size_t j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
			void *q = NULL;
			CHECK_EQ(posix_memalign(&q, aligns[i], sizes[j]), 0);
			CHECK(aligned(q, aligns[i]));
			CHECK(malloc_usable_size(q) >= sizes[j]);
			if (q)
				memset(q, 0xab, sizes[j]);
			free(q);

			void *a = aligned_alloc(aligns[i], sizes[j]);
			CHECK(aligned(a, aligns[i]));
			free(a);
			void *m = memalign(aligns[i], sizes[j]);
			CHECK(aligned(m, aligns[i]));
			free(m);
		}
	}
	errno = 0;
	CHECK(aligned_alloc(24, 100) == NULL && errno == EINVAL);
	void *m = memalign(24, 100); /* glibc: rounded up to 32 */
	CHECK(aligned(m, 32));
	free(m);
	m = memalign(3, 100);
	CHECK(m != NULL);
	free(m);

	long ps = sysconf(_SC_PAGESIZE);
	void *v = valloc(10);
	CHECK(aligned(v, (size_t)ps));
	free(v);
	void *pv = pvalloc(1);
	CHECK(aligned(pv, (size_t)ps) && malloc_usable_size(pv) >= (size_t)ps);
	free(pv);
	pv = pvalloc(0);
	CHECK(aligned(pv, (size_t)ps) && malloc_usable_size(pv) >= (size_t)ps);
	free(pv);
	pv = pvalloc((size_t)ps + 1);
	CHECK(aligned(pv, (size_t)ps) && malloc_usable_size(pv) >= 2 * (size_t)ps);
	free(pv);
	errno = 0;
	volatile size_t huge = SIZE_MAX;
	CHECK(pvalloc(huge - 10) == NULL && errno == ENOMEM);
}

static pthread_key_t tls_key;
static __thread void *tls_block;

static void tls_destructor(void *p) { free(p); }

static void *exiting_thread(void *arg)
{
	void **shared = arg;
	/* Blocks freed by a TLS destructor after the thread's body returns. */
	pthread_setspecific(tls_key, malloc(200));
	tls_block = malloc(64);
	char *mine[64];
	for (int i = 0; i < 64; i++) {
		mine[i] = malloc((size_t)(16 << (i % 10)));
		memset(mine[i], i, 16);
	}
	for (int i = 0; i < 64; i += 2)
		free(mine[i]);
	/* Odd ones are freed by another thread (cross-thread free). */
	for (int i = 1; i < 64; i += 2)
		shared[i / 2] = mine[i];
	free(tls_block);
	return NULL;
}

static void test_shim_thread_exit(void)
{
	REQUIRE(pthread_key_create(&tls_key, tls_destructor) == 0);
	void *shared[32];
	for (int round = 0; round < 200; round++) {
		pthread_t t;
		REQUIRE(pthread_create(&t, NULL, exiting_thread, shared) == 0);
		pthread_join(t, NULL);
		for (int i = 0; i < 32; i++) {
			CHECK(((unsigned char *)shared[i])[0] == (unsigned char)(2 * i + 1));
			free(shared[i]);
		}
	}
	pthread_key_delete(tls_key);
}

static volatile int hammer_stop;

static void *hammer(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	void *held[128] = {0};
	while (!__atomic_load_n(&hammer_stop, __ATOMIC_RELAXED)) {
		seed = seed * 1103515245u + 12345u;
		unsigned i = (seed >> 8) % 128;
		free(held[i]);
		size_t sz = (seed >> 16) % 4 == 0 ? (seed >> 4) % 300000 : (seed >> 4) % 512;
		held[i] = malloc(sz);
		if (held[i] && sz)
			((char *)held[i])[sz - 1] = 1;
	}
	for (int i = 0; i < 128; i++)
		free(held[i]);
	return NULL;
}

static void test_shim_fork_while_allocating(void)
{
	pthread_t t[4];
	hammer_stop = 0;
	for (uintptr_t i = 0; i < 4; i++)
		REQUIRE(pthread_create(&t[i], NULL, hammer, (void *)(i + 1)) == 0);
	int bad = 0;
	for (int round = 0; round < 100; round++) {
		pid_t pid = fork();
		if (pid == 0) {
			alarm(20); /* a deadlock in the child shows as SIGALRM */
			char *ps[1000];
			for (int i = 0; i < 1000; i++) {
				ps[i] = malloc((size_t)(i % 700) + 1);
				ps[i][0] = (char)i;
			}
			for (int i = 0; i < 1000; i++)
				if (ps[i][0] != (char)i)
					_exit(3);
			for (int i = 0; i < 1000; i++)
				free(ps[i]);
			char *big = malloc(1 << 20);
			_exit(big ? 0 : 4);
		}
		REQUIRE(pid > 0);
		int st;
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "  fork child %d: status 0x%x\n", round, st);
			bad++;
		}
	}
	__atomic_store_n(&hammer_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(bad, 0);
}

/* Left allocated at exit, to be seen in the report: 1000 x kmalloc-2560. */
static void *volatile kept[1000]; /* volatile: the stores and mallocs stay */

static int in_shim_main(void)
{
	RUN(test_shim_owns_malloc);
	RUN(test_shim_malloc_calloc_realloc);
	RUN(test_shim_reallocarray);
	RUN(test_shim_aligned_family);
	RUN(test_shim_thread_exit);
	RUN(test_shim_fork_while_allocating);
	for (int i = 0; i < 1000; i++)
		kept[i] = malloc(2500);
	return test_done();
}

static void test_malloc_family_in_shim(void)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	REQUIRE(n > 0);
	self[n] = 0;
	char *argv[] = {self, "--in-shim", NULL};
	struct prog_result r = prog_run_memcg(argv, NULL, NULL, NULL, NULL, 120);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, " passed, 0 failed, 0 skipped\n") != NULL);
	CHECK(prog_is_report(r.err));
	CHECK(prog_report_active(r.err, "kmalloc-2560") >= 1000);
	if (r.status != 0 || prog_report_active(r.err, "kmalloc-2560") < 1000)
		prog_show_failure("the malloc family inside the shim", &r);
	prog_result_free(&r);
}

/* The same with the heap accounted to a group (memcg run --max): every call
 * then takes the accounted paths, fork and thread exit included. */
static void test_malloc_family_in_shim_accounted(void)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	REQUIRE(n > 0);
	self[n] = 0;
	const char *bin = prog_memcg_bin();
	REQUIRE(bin);
	char *argv[] = {(char *)bin, "run", "--max", "1G", "--", self, "--in-shim", NULL};
	struct prog_result r = prog_run(argv, NULL, NULL, NULL, 120);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, " passed, 0 failed, 0 skipped\n") != NULL);
	CHECK(strstr(r.err, "# memory.stat of the heap group") != NULL);
	if (r.status != 0)
		prog_show_failure("the malloc family inside the shim, accounted", &r);
	prog_result_free(&r);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--in-shim"))
		return in_shim_main();
	if (!prog_mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_run_exit_status);
	RUN(test_run_killed_by_signal);
	RUN(test_run_not_found);
	RUN(test_run_bad_usage);
	RUN(test_run_stdout_untouched);
	RUN(test_run_children_do_not_report);
	RUN(test_run_exec_in_place_reports);
	RUN(test_run_program_closes_stderr);
	RUN(test_run_reused_descriptor_not_written);
	RUN(test_run_report_file);
	RUN(test_run_ld_preload_appended);
	RUN(test_run_finds_preload);
	RUN(test_plain_preload_is_silent);
	RUN(test_shim_report_environment);
	RUN(test_shim_servers_environment);
	RUN(test_malloc_family_in_shim);
	RUN(test_malloc_family_in_shim_accounted);
	prog_rmtree(dir);
	return test_done();
}
