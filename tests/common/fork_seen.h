/* SPDX-License-Identifier: MIT */
/*
 * fork_seen.h - fork() as a program calls it, for tests of the library's
 * pthread_atfork child handlers, and a fork that runs none of them.
 *
 * gcc's coverage instrumentation turns a direct call of fork() in an
 * instrumented file into __gcov_fork(), which zeroes the child's counters
 * after fork() returns: what the atfork child handlers ran inside fork()
 * is then lost, and a coverage run says no test reaches them.  Called
 * through a pointer the call is libc's fork(), as a program's is; the
 * handlers run the same either way (the child's counters then start from
 * the parent's, so counts add up twice, which coverage does not mind).
 */
#ifndef MCG_TEST_FORK_SEEN_H
#define MCG_TEST_FORK_SEEN_H

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline pid_t fork_seen(void)
{
	pid_t (*volatile f)(void) = fork;
	return f();
}

/*
 * A child made by the fork system call itself, past libc: no atfork
 * handler runs in it (as in a child a program makes with its own clone),
 * so the library's state says what the parent's does - the library tells
 * the two apart by the pid.  The child may only call what takes no lock
 * another parent thread could hold, and ends with exit() or _exit().
 */
static inline pid_t fork_raw(void)
{
#ifdef SYS_fork
	return (pid_t)syscall(SYS_fork);
#else
	return (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
#endif
}

#if MCG_COVERAGE
void __gcov_dump(void); /* libgcov */
#endif

/*
 * End a fork_raw() child that must not run exit()'s handlers: its coverage
 * counters written, then _exit().  Under ASan, exit() would run
 * LeakSanitizer, which cannot stop the parent's threads the child lacks
 * and may take what only their stacks held (a library thread's buffers)
 * for leaks.
 */
static inline _Noreturn void fork_raw_exit(int code)
{
#if MCG_COVERAGE
	__gcov_dump();
#endif
	_exit(code);
}

#endif
