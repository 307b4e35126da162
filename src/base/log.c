/* SPDX-License-Identifier: MIT */
/* base/log.c - messages and the loud death, with no heap. */
#include "base/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int write_all(int fd, const char *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return (int)done;
}

static int vfdprintf_prefixed(int fd, const char *prefix, const char *fmt, va_list ap, int newline)
{
	char buf[1024];
	int n = snprintf(buf, sizeof(buf), "%s", prefix);
	int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof(buf) - 2)
		len = sizeof(buf) - 2;
	if (newline)
		buf[len++] = '\n';
	return write_all(fd, buf, len);
}

void mcg_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfdprintf_prefixed(2, "memcg: ", fmt, ap, 1);
	va_end(ap);
}

int mcg_fdprintf(int fd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vfdprintf_prefixed(fd, "", fmt, ap, 0);
	va_end(ap);
	return r;
}

void mcg_die_at(const char *file, int line, const char *fmt, ...)
{
	char prefix[256];
	snprintf(prefix, sizeof(prefix), "memcg: FATAL %s:%d: ", file, line);
	va_list ap;
	va_start(ap, fmt);
	vfdprintf_prefixed(2, prefix, fmt, ap, 1);
	va_end(ap);
	abort();
}
