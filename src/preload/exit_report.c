/* SPDX-License-Identifier: MIT */
/*
 * preload/exit_report.c - the shim's process at its end: print slabinfo
 * (and the heap group's files, preload/heap.c) when the program that
 * `memcg run` started exits, the reaper stopped first (preload/threads.c).
 *
 * The protocol with `memcg run` (tools/cmd_run.c) is three environment
 * variables, read once by the constructor:
 *   MCG_REPORT_PID   the pid `memcg run` forked; only that process reports
 *                    (it may exec other programs: the last one reports), so
 *                    the children a program spawns (git's helpers, gcc's cc1)
 *                    stay silent although they run on the allocator too;
 *   MCG_REPORT_FILE  absolute path the report replaces, or else
 *   MCG_REPORT_FD    the descriptor it is written to (memcg run passes 2).
 *                    The constructor keeps a private close-on-exec duplicate
 *                    of it, because programs close their stderr before the
 *                    destructors run (coreutils' close_stdout does); at exit
 *                    the duplicate is used only if it still refers to the
 *                    same file (device and inode), so a program that closed
 *                    every descriptor and reused the number never receives
 *                    the report in one of its own files.
 * Without MCG_REPORT_PID the shim reports nothing: plain LD_PRELOAD use is
 * silent.  The report goes out once, from a destructor (exit(), return from
 * main) or from the shim's _exit()/_Exit() (dash, os._exit, forked servers
 * end that way); a program killed by a signal does not report.
 *
 * Caveat: a signal handler that calls _exit() while its own thread holds the
 * cache list lock or a node lock (cache creation, a slow path) would wait on
 * itself; the window is a few instructions of a slow path, and only in the
 * one process that reports.
 *
 * Nothing here allocates: the report is formatted on the stack
 * (mcg_slabinfo_write) and the file opened with open(2).
 */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/compiler.h"
#include "base/log.h"
#include "iface/server.h"
#include "memcg/slab.h"
#include "preload/heap.h"
#include "preload/threads.h"

static pid_t report_pid;   /* 0: do not report */
static int report_fd = -1; /* used when report_path is empty */
static dev_t report_dev;   /* what report_fd refers to */
static ino_t report_ino;
static char report_path[PATH_MAX]; /* "" unless MCG_REPORT_FILE was given */
static int reported;               /* 1 once the report went out */

/* Parse a decimal number of at most 9 digits; -1 if @s is not one. */
static long parse_small(const char *s)
{
	long v = 0;
	int digits = 0;
	if (!s)
		return -1;
	for (; *s; s++, digits++) {
		if (*s < '0' || *s > '9' || digits >= 9)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return digits ? v : -1;
}

/* Device and inode of what @fd refers to; false if @fd is not open. */
static bool fd_identity(int fd, dev_t *dev, ino_t *ino)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return false;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return true;
}

/* A close-on-exec duplicate of @fd, numbered high, out of the program's way. */
static int dup_private(int fd)
{
	int dup = fcntl(fd, F_DUPFD_CLOEXEC, 1000);
	if (dup < 0)
		dup = fcntl(fd, F_DUPFD_CLOEXEC, 10); /* RLIMIT_NOFILE below 1000 */
	return dup;
}

__attribute__((constructor)) static void report_start(void)
{
	long pid = parse_small(getenv("MCG_REPORT_PID"));
	if (pid > 0 && (pid_t)pid == getpid()) {
		const char *path = getenv("MCG_REPORT_FILE");
		long fd = parse_small(getenv("MCG_REPORT_FD"));
		if (path && *path && strlen(path) < sizeof(report_path)) {
			memcpy(report_path, path, strlen(path) + 1);
			report_pid = (pid_t)pid;
		} else if (fd >= 0) {
			report_fd = dup_private((int)fd);
			if (report_fd >= 0 && fd_identity((int)report_fd, &report_dev, &report_ino))
				report_pid = (pid_t)pid;
		}
	}
}

/* Write the report if this is the process `memcg run` started (once). */
static void report_now(void)
{
	if (report_pid == 0 || getpid() != report_pid)
		return;
	if (__atomic_exchange_n(&reported, 1, __ATOMIC_ACQ_REL))
		return;
	int fd = report_fd;
	dev_t dev;
	ino_t ino;
	if (!report_path[0] &&
	    (!fd_identity(fd, &dev, &ino) || dev != report_dev || ino != report_ino))
		return; /* the program closed it, or the number now names another file */
	if (report_path[0]) {
		fd = open(report_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			mcg_log("cannot write the slabinfo report to %s", report_path);
			return;
		}
	}
	int err = mcg_slabinfo_write(fd);
	if (!err)
		mcg_preload_heap_report(fd); /* memcg run --max/--high */
	if (err && report_path[0])
		mcg_log("cannot write the slabinfo report to %s", report_path);
	if (report_path[0])
		close(fd);
}

__attribute__((destructor)) static void preload_exit(void)
{
	mcg_preload_threads_exit(); /* a stable report */
	report_now();
}

/* glibc's exit() reaches the kernel through its internal _exit, not this one,
 * so these run only for direct calls.  No reaper stop: _exit may run in a
 * signal handler, where joining a thread is not allowed. */
#if MCG_COVERAGE
void __gcov_dump(void); /* libgcov */
#endif

mcg_public _Noreturn void _exit(int status)
{
	report_now();
	mcg_control_exit_unlink(); /* no destructors run after this */
#if MCG_COVERAGE
	__gcov_dump(); /* a coverage build: the counters, which only exit() writes */
#endif
	/* After __gcov_dump(): a coverage build never counts the next line. */
	for (;;)
		syscall(SYS_exit_group, status); /* GCOVR_EXCL_LINE */
}

mcg_public _Noreturn void _Exit(int status) { _exit(status); }
