/* SPDX-License-Identifier: MIT */
/*
 * base/log.h - messages and the loud death.
 *
 * Nothing here allocates: messages are formatted on the stack and written
 * with write(2), so they are safe inside the malloc shim.
 */
#ifndef MCG_BASE_LOG_H
#define MCG_BASE_LOG_H

#include <stddef.h>

/** mcg_log - print "memcg: <message>\n" to stderr (fd 2). */
void mcg_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** mcg_die_at - print "memcg: FATAL file:line: message" and abort(). */
_Noreturn void mcg_die_at(const char *file, int line, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
#define mcg_die(...) mcg_die_at(__FILE__, __LINE__, __VA_ARGS__)

/** MCG_BUG_ON - die if @cond holds: a bug in memcg itself. */
#define MCG_BUG_ON(cond)                                                                           \
	do {                                                                                       \
		if (__builtin_expect(!!(cond), 0))                                                 \
			mcg_die("BUG: %s", #cond);                                                 \
	} while (0)

/** mcg_fdprintf - printf to a file descriptor with no heap.  Return: bytes or -errno. */
int mcg_fdprintf(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* MCG_BASE_LOG_H */
