/* SPDX-License-Identifier: MIT */
/*
 * tools/cmd_run.c - `memcg run [-o FILE] [--max SIZE] [--high SIZE] -- CMD
 * [ARGS...]`: run an unmodified program on memcg's allocator and print its
 * slabinfo when it exits; with --max/--high, its heap is charged to a group
 * with those limits, whose files are printed too (src/preload/heap.c).
 *
 * memcg run forks; the child puts libmemcg-preload.so in LD_PRELOAD and tells
 * the shim who reports and where (MCG_REPORT_PID, MCG_REPORT_FILE or
 * MCG_REPORT_FD, see src/preload/exit_report.c), then execs the command.
 * The program's stdout is never touched: the report goes to its stderr or to
 * FILE.  memcg run exits with the program's status (128 + signal if killed).
 *
 * The shim serves the program's control socket (src/preload/threads.c)
 * from its start (memcg run sets MCG_LAZY_THREADS=0 unless the caller set
 * it) unless --no-control (MCG_CONTROL=0), and its metrics over HTTP with
 * --metrics ADDR (MCG_METRICS_LISTEN).  When stderr is a terminal, memcg
 * run says the program's pid and how to watch it (`memcg top -p PID`).
 */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "memcg/group.h"

#define PRELOAD_NAME "libmemcg-preload.so"

static int usable_file(const char *path, char *buf, size_t len)
{
	char real[PATH_MAX];
	if (access(path, R_OK) != 0 || !realpath(path, real))
		return -ENOENT;
	if (strlen(real) >= len)
		return -ENAMETOOLONG;
	if (strpbrk(real, " :")) { /* LD_PRELOAD's separators */
		fprintf(stderr, "memcg run: cannot preload %s: its path contains ' ' or ':'\n",
		        real);
		return -EINVAL;
	}
	strcpy(buf, real);
	return 0;
}

int mcg_run_find_preload(char *buf, size_t len)
{
	const char *env = getenv("MCG_PRELOAD_LIB");
	if (env && *env) {
		if (usable_file(env, buf, len) == 0)
			return 0;
		fprintf(stderr, "memcg run: MCG_PRELOAD_LIB=%s: not a readable file\n", env);
		return -ENOENT;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		fprintf(stderr, "memcg run: cannot find my own binary (/proc/self/exe): %s\n",
		        strerror(errno));
		return -ENOENT;
	}
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/" PRELOAD_NAME, exe);
	if (usable_file(path, buf, len) == 0)
		return 0;
	static const char *const patterns[] = {"%s/../lib*/" PRELOAD_NAME,
	                                       "%s/../lib/*/" PRELOAD_NAME};
	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		glob_t g;
		snprintf(path, sizeof(path), patterns[i], exe);
		if (glob(path, 0, NULL, &g) != 0)
			continue;
		int err = -ENOENT;
		for (size_t j = 0; j < g.gl_pathc && err; j++)
			err = usable_file(g.gl_pathv[j], buf, len);
		globfree(&g);
		if (err == 0)
			return 0;
	}
	fprintf(stderr,
	        "memcg run: cannot find " PRELOAD_NAME " next to %s or in %s/../lib*/;\n"
	        "           set MCG_PRELOAD_LIB to its path\n",
	        exe, exe);
	return -ENOENT;
}

/* ------------------------------------------------------------ the child */

static _Noreturn void child_exec(char *const argv[], const char *preload, const char *report_path)
{
	char buf[PATH_MAX * 2 + 2];
	const char *old = getenv("LD_PRELOAD");
	if (old && *old)
		snprintf(buf, sizeof(buf), "%s:%s", old, preload);
	else
		snprintf(buf, sizeof(buf), "%s", preload);
	char pid[24];
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	if (setenv("LD_PRELOAD", buf, 1) || setenv("MCG_REPORT_PID", pid, 1)) {
		perror("memcg run: setenv");
		_exit(127);
	}
	if (report_path) {
		setenv("MCG_REPORT_FILE", report_path, 1);
		unsetenv("MCG_REPORT_FD");
	} else {
		setenv("MCG_REPORT_FD", "2", 1);
		unsetenv("MCG_REPORT_FILE");
	}
	execvp(argv[0], argv);
	int e = errno;
	fprintf(stderr, "memcg run: %s: %s\n", argv[0], strerror(e));
	_exit(e == ENOENT ? 127 : 126);
}

/* ------------------------------------------------------------ the parent */

static volatile sig_atomic_t run_child_pid;
static bool run_announce; /* say the pid and how to attach memcg top */

static void forward_signal(int sig)
{
	if (run_child_pid > 0)
		kill((pid_t)run_child_pid, sig);
}

int mcg_run_program(char *const argv[], const char *preload, const char *report_path,
                    struct rusage *ru)
{
	char abs_report[PATH_MAX];
	if (report_path) {
		int fd = open(report_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			int e = errno;
			fprintf(stderr, "memcg run: %s: %s\n", report_path, strerror(e));
			return -e;
		}
		close(fd);
		if (!realpath(report_path, abs_report)) {
			int e = errno;
			fprintf(stderr, "memcg run: %s: %s\n", report_path, strerror(e));
			return -e;
		}
		report_path = abs_report; /* the program may change directory */
	}

	struct sigaction ign = {.sa_handler = SIG_IGN}, fwd = {.sa_handler = forward_signal};
	struct sigaction old_int, old_quit, old_term, old_hup;
	sigemptyset(&ign.sa_mask);
	sigemptyset(&fwd.sa_mask);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		fprintf(stderr, "memcg run: fork: %s\n", strerror(e));
		return -e;
	}
	if (pid == 0)
		child_exec(argv, preload, report_path);

	run_child_pid = pid;
	if (run_announce)
		fprintf(stderr, "memcg run: %s is pid %ld; watch it with: memcg top -p %ld\n",
		        argv[0], (long)pid, (long)pid);
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	sigaction(SIGTERM, &fwd, &old_term);
	sigaction(SIGHUP, &fwd, &old_hup);
	int status = 0;
	struct rusage usage;
	pid_t w;
	do
		w = wait4(pid, &status, 0, &usage);
	while (w < 0 && errno == EINTR);
	int e = errno;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	run_child_pid = 0;
	if (w < 0) {
		fprintf(stderr, "memcg run: wait: %s\n", strerror(e));
		return -e;
	}
	if (ru)
		*ru = usage;
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "memcg run: %s killed by signal %d (%s)%s\n", argv[0],
		        WTERMSIG(status), strsignal(WTERMSIG(status)),
		        WCOREDUMP(status) ? ", core dumped" : "");
		return 128 + WTERMSIG(status);
	}
	return WEXITSTATUS(status);
}

/* ------------------------------------------------------------ the command */

static void usage(FILE *f)
{
	fprintf(f, "usage: memcg run [-o FILE] [--max SIZE] [--high SIZE] [--no-control]\n"
	           "                 [--metrics ADDR:PORT] [--] CMD [ARGS...]\n"
	           "  Run CMD on memcg's allocator (libmemcg-preload.so) and, when it exits,\n"
	           "  print its slabinfo to its stderr, or to FILE with -o.  Exits with CMD's\n"
	           "  status (128 + N if killed by signal N).  MCG_PRELOAD_LIB overrides where\n"
	           "  the shim is found; MCG_* options (memcg options) apply to CMD.\n"
	           "  --max SIZE, --high SIZE: charge CMD's heap to a memory group with that\n"
	           "  memory.max (over it malloc fails with ENOMEM) and memory.high (over it\n"
	           "  allocations are throttled); SIZE is bytes with an optional K/M/G/T\n"
	           "  suffix, or max.  The report then ends with the group's memory.current,\n"
	           "  memory.stat and memory.events.  Each process CMD starts gets a group of\n"
	           "  its own with the same limits (the environment MCG_HEAP_MAX/_HIGH).\n"
	           "  CMD serves a control socket (memcg ps/stat/set/top -p PID) from its\n"
	           "  start (MCG_LAZY_THREADS=0, unless set) unless --no-control\n"
	           "  (MCG_CONTROL=0); --metrics ADDR:PORT serves Prometheus metrics at\n"
	           "  http://ADDR:PORT/metrics (MCG_METRICS_LISTEN).\n");
}

/* Check @value as memory.max/memory.high would, on a scratch group. */
static bool limit_valid(const char *opt, const char *value)
{
	mcg_group_t *g;
	if (mcg_group_create(NULL, "memcg-run-check", &g))
		return false;
	int err = mcg_group_write(g, "memory.max", value);
	mcg_group_remove(g);
	mcg_group_put(g);
	if (err)
		fprintf(stderr, "memcg run: %s '%s': not a size (bytes, K/M/G/T, or max)\n", opt,
		        value);
	return err == 0;
}

/* Parse "--NAME VALUE" or "--NAME=VALUE" at argv[*i] into *@value. */
static bool take_value(int argc, char **argv, int *i, const char *name, const char **value)
{
	size_t n = strlen(name);
	const char *a = argv[*i];
	if (strncmp(a, name, n))
		return false;
	if (a[n] == '=') {
		*value = a + n + 1;
		return true;
	}
	if (a[n] || *i + 1 >= argc)
		return false;
	*value = argv[++*i];
	return true;
}

int mcg_cmd_run(int argc, char **argv)
{
	const char *out = NULL, *max = NULL, *high = NULL, *metrics = NULL;
	bool no_control = false;
	int i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "-o") && i + 1 < argc) {
			out = argv[++i];
			continue;
		}
		if (!strncmp(a, "-o", 2) && a[2]) {
			out = a + 2;
			continue;
		}
		if (!strcmp(a, "--no-control")) {
			no_control = true;
			continue;
		}
		if (take_value(argc, argv, &i, "--max", &max) ||
		    take_value(argc, argv, &i, "--high", &high) ||
		    take_value(argc, argv, &i, "--metrics", &metrics))
			continue;
		if (a[0] == '-') {
			fprintf(stderr, "memcg run: unknown or incomplete option '%s'\n", a);
			usage(stderr);
			return 2;
		}
		break;
	}
	if (i >= argc || (out && !*out)) {
		usage(stderr);
		return 2;
	}
	if ((max && !limit_valid("--max", max)) || (high && !limit_valid("--high", high)))
		return 2;
	/* The shim reads them (src/preload/heap.c); unset: no heap group. */
	if (max ? setenv("MCG_HEAP_MAX", max, 1) : unsetenv("MCG_HEAP_MAX"))
		return 2;
	if (high ? setenv("MCG_HEAP_HIGH", high, 1) : unsetenv("MCG_HEAP_HIGH"))
		return 2;
	if ((no_control && setenv("MCG_CONTROL", "0", 1)) ||
	    (metrics && setenv("MCG_METRICS_LISTEN", metrics, 1)))
		return 2;
	const char *ctl = getenv("MCG_CONTROL");
	bool control = !(ctl && !strcmp(ctl, "0"));
	/* A program run to be steered serves its socket from the start, unless
	 * the caller set MCG_LAZY_THREADS (src/preload/threads.c). */
	if (control && setenv("MCG_LAZY_THREADS", "0", 0))
		return 2;
	run_announce = isatty(2) && control;
	char preload[PATH_MAX];
	if (mcg_run_find_preload(preload, sizeof(preload)))
		return 2;
	int rc = mcg_run_program(argv + i, preload, out, NULL);
	return rc < 0 ? 2 : rc;
}
