/* SPDX-License-Identifier: MIT */
/*
 * kvtest.h - what the kvcache tests that start servers share: the
 * programs they need (a missing one is a SKIP, exit 77), raw exchanges
 * on a fresh connection, and the source directory.
 */
#ifndef MCG_TEST_KVTEST_H
#define MCG_TEST_KVTEST_H

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvclient.h"
#include "resp.h"

#define KVTEST_SKIP 77

/** kvtest_need - the path of @name, or exit 77 (SKIP) saying it is missing. */
static inline const char *kvtest_need(const char *name, char *buf, size_t len)
{
	if (kvc_find(name, buf, len))
		return buf;
	printf("SKIP: %s is not installed (scripts/deps.sh installs it)\n", name);
	exit(KVTEST_SKIP);
}

/** kvtest_source - a file of the source tree (MCG_SOURCE_DIR). */
static inline const char *kvtest_source(const char *rel, char *buf, size_t len)
{
	const char *dir = getenv("MCG_SOURCE_DIR");
	snprintf(buf, len, "%s/%s", dir ? dir : ".", rel);
	return buf;
}

/**
 * kvtest_raw - send @req[0, @len) on a new connection to @port and
 * collect what comes back until the server closes ("<EOF>" is appended)
 * or, once it has answered, stays silent for @quiet_ms (the answer's first
 * byte is waited for up to 10 s).  Into @out (reset first).
 */
static inline int kvtest_raw(int port, const char *req, size_t len, int quiet_ms,
                             struct kv_buf *out)
{
	out->len = 0;
	int fd = kvc_connect(port);
	if (fd < 0)
		return -1;
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, req + off, len - off);
		if (w <= 0)
			break; /* the server may close on a protocol error mid-request */
		off += (size_t)w;
	}
	char buf[65536];
	for (;;) {
		/* The first byte may be slow on a loaded machine: up to 10 s. */
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, out->len ? quiet_ms : 10000) <= 0)
			break;
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0) {
			kv_buf_append(out, "<EOF>", 5);
			break;
		}
		kv_buf_append(out, buf, (size_t)n);
	}
	close(fd);
	return 0;
}

#endif /* MCG_TEST_KVTEST_H */
