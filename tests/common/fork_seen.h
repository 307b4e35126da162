/* SPDX-License-Identifier: MIT */
/*
 * fork_seen.h - fork() as a program calls it, for tests of the library's
 * pthread_atfork child handlers.
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

#include <unistd.h>

static inline pid_t fork_seen(void)
{
	pid_t (*volatile f)(void) = fork;
	return f();
}

#endif
