/* SPDX-License-Identifier: MIT */
/*
 * progs.h - helpers for the real-program tests: run a command (directly or
 * through `memcg run`) with its stdout and stderr captured separately, find
 * programs on PATH, make and remove temporary directories.
 *
 * The tests read MCG_BIN (the memcg binary) from the environment, as ctest
 * sets it (tests/CMakeLists.txt).  A test whose program is not installed
 * skips (exit 77, test.h: ctest lists it as skipped, never passed);
 * scripts/deps.sh installs the programs they use.
 */
#ifndef MCG_TEST_PROGS_H
#define MCG_TEST_PROGS_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

/** What a finished command left: its output and its shell-style status. */
struct prog_result {
	char *out; /* stdout, NUL-terminated (malloc'd) */
	size_t out_len;
	char *err; /* stderr, NUL-terminated (malloc'd) */
	size_t err_len;
	int status; /* exit status, 128 + signal if killed, -1 if not run */
	bool timed_out;
};

static inline void prog_result_free(struct prog_result *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

static inline void buf_append(char **buf, size_t *len, size_t *cap, const char *data, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t ncap = *cap ? *cap : 4096;
		while (*len + n + 1 > ncap)
			ncap *= 2;
		char *nb = realloc(*buf, ncap);
		if (!nb)
			abort();
		*buf = nb;
		*cap = ncap;
	}
	memcpy(*buf + *len, data, n);
	*len += n;
	(*buf)[*len] = 0;
}

/**
 * prog_run - run @argv (PATH searched) in @cwd (NULL: here) with extra
 * environment @env ("NAME=value" strings, NULL-terminated, may be NULL),
 * stdin from @in_path (NULL: /dev/null); kill it after @timeout_s seconds.
 */
static inline struct prog_result prog_run(char *const argv[], const char *cwd, char *const env[],
                                          const char *in_path, int timeout_s)
{
	struct prog_result r = {.status = -1};
	size_t out_cap = 0, err_cap = 0;
	int po[2], pe[2];
	if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC))
		return r;
	buf_append(&r.out, &r.out_len, &out_cap, "", 0);
	buf_append(&r.err, &r.err_len, &err_cap, "", 0);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return r;
	if (pid == 0) {
		int in = open(in_path ? in_path : "/dev/null", O_RDONLY);
		if (in < 0 || dup2(in, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0)
			_exit(125);
		if (cwd && chdir(cwd))
			_exit(125);
		for (char *const *e = env; e && *e; e++)
			putenv(*e);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	struct pollfd pfd[2] = {{.fd = po[0], .events = POLLIN}, {.fd = pe[0], .events = POLLIN}};
	time_t deadline = time(NULL) + timeout_s;
	int open_fds = 2;
	while (open_fds > 0) {
		int left = (int)(deadline - time(NULL));
		if (left <= 0) {
			kill(pid, SIGKILL);
			r.timed_out = true;
			break;
		}
		if (poll(pfd, 2, left * 1000) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2; i++) {
			if (pfd[i].fd < 0 || !pfd[i].revents)
				continue;
			char buf[65536];
			ssize_t n = read(pfd[i].fd, buf, sizeof(buf));
			if (n > 0) {
				if (i == 0)
					buf_append(&r.out, &r.out_len, &out_cap, buf, (size_t)n);
				else
					buf_append(&r.err, &r.err_len, &err_cap, buf, (size_t)n);
			} else if (n == 0 || errno != EINTR) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
				open_fds--;
			}
		}
	}
	for (int i = 0; i < 2; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	r.status = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
	if (r.timed_out)
		fprintf(stderr, "  %s: timed out after %d s\n", argv[0], timeout_s);
	return r;
}

/** prog_memcg_bin - $MCG_BIN, or NULL with a message. */
static inline const char *prog_memcg_bin(void)
{
	const char *bin = getenv("MCG_BIN");
	if (!bin || !*bin)
		fprintf(stderr, "  MCG_BIN is not set (run the tests through ctest)\n");
	return bin;
}

/**
 * prog_run_memcg - `memcg run [-o @report] -- @argv...`, as prog_run.
 * Returns status -1 if MCG_BIN is unknown.
 */
static inline struct prog_result prog_run_memcg(char *const argv[], const char *report,
                                                const char *cwd, char *const env[],
                                                const char *in_path, int timeout_s)
{
	const char *bin = prog_memcg_bin();
	char *full[64];
	int n = 0;
	if (!bin) {
		struct prog_result r = {.status = -1};
		return r;
	}
	full[n++] = (char *)bin;
	full[n++] = "run";
	if (report) {
		full[n++] = "-o";
		full[n++] = (char *)report;
	}
	full[n++] = "--";
	for (int i = 0; argv[i] && n < 63; i++)
		full[n++] = argv[i];
	full[n] = NULL;
	return prog_run(full, cwd, env, in_path, timeout_s);
}

/** prog_which - whether @name is an executable on PATH. */
static inline bool prog_which(const char *name)
{
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/bin:/bin";
	char buf[4096];
	while (*path) {
		size_t n = strcspn(path, ":");
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, name);
		if (access(buf, X_OK) == 0)
			return true;
		path += n;
		if (*path == ':')
			path++;
	}
	return false;
}

/** prog_count - occurrences of @needle in @hay. */
static inline int prog_count(const char *hay, const char *needle)
{
	int n = 0;
	size_t len = strlen(needle);
	for (const char *p = hay; p && (p = strstr(p, needle)); p += len)
		n++;
	return n;
}

/** prog_is_report - whether @text holds exactly one slabinfo report with kmalloc caches. */
static inline bool prog_is_report(const char *text)
{
	return prog_count(text, "slabinfo - version: 2.1\n") == 1 &&
	       strstr(text, "\nkmalloc-16 ") != NULL && strstr(text, "\nkmalloc-256k ") != NULL;
}

/**
 * prog_report_active - active_objs of cache @name in slabinfo @text, or -1.
 */
static inline long prog_report_active(const char *text, const char *name)
{
	char key[64];
	snprintf(key, sizeof(key), "\n%s ", name);
	const char *p = strstr(text, key);
	if (!p)
		return -1;
	return strtol(p + strlen(key), NULL, 10);
}

/**
 * prog_shim_self - why a test of the shim cannot run here (NULL: it can),
 * and this test's own path in @self (@len bytes), to run it again as a
 * child under the shim.
 */
static inline const char *prog_shim_self(char *self, size_t len)
{
	if (!getenv("MCG_PRELOAD_LIB"))
		return "MCG_PRELOAD_LIB is not set (run it from ctest)";
	ssize_t n = readlink("/proc/self/exe", self, len - 1);
	if (n <= 0)
		return "no /proc/self/exe";
	self[n] = '\0';
	return NULL;
}

/** prog_mkdtemp - a fresh directory /tmp/memcg-test-XXXXXX into @buf (64 bytes). */
static inline bool prog_mkdtemp(char *buf)
{
	strcpy(buf, "/tmp/memcg-test-XXXXXX");
	return mkdtemp(buf) != NULL;
}

static inline int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/** prog_rmtree - remove @dir and everything below it. */
static inline void prog_rmtree(const char *dir) { nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

/** prog_write_file - write @text to @dir/@name; false on error. */
static inline bool prog_write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		return false;
	bool ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok;
}

/** prog_read_file - the contents of @path (malloc'd, NUL-terminated) or NULL. */
static inline char *prog_read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	char chunk[65536];
	size_t n;
	buf_append(&buf, &len, &cap, "", 0);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_append(&buf, &len, &cap, chunk, n);
	fclose(f);
	return buf;
}

/** PROG_SKIP_UNLESS_INSTALLED - skip the running test when program @name is
 *  not on PATH (scripts/deps.sh installs every program the tests use). */
#define PROG_SKIP_UNLESS_INSTALLED(name)                                                           \
	do {                                                                                       \
		if (!prog_which(name))                                                             \
			SKIP("%s is not installed", name);                                         \
	} while (0)

/** prog_show_failure - print what a command said, for a failing test's log. */
static inline void prog_show_failure(const char *what, const struct prog_result *r)
{
	fprintf(stderr,
	        "  %s: status %d\n  --- stdout (first 2000 bytes):\n%.2000s\n"
	        "  --- stderr (first 3000 bytes):\n%.3000s\n  ---\n",
	        what, r->status, r->out ? r->out : "", r->err ? r->err : "");
}

#endif /* MCG_TEST_PROGS_H */
