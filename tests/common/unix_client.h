/* SPDX-License-Identifier: MIT */
/*
 * unix_client.h - a client's side of a Unix stream socket, for the tests
 * that talk to the control server directly: connect to a path, send a
 * whole buffer.
 */
#ifndef MCG_TEST_UNIX_CLIENT_H
#define MCG_TEST_UNIX_CLIENT_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* A connection to the socket at @path, or -1. */
static inline int unix_dial(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.107s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Send all @n bytes at @buf (no SIGPIPE); false if the peer stopped taking them. */
static inline bool unix_send_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

#endif /* MCG_TEST_UNIX_CLIENT_H */
