/* SPDX-License-Identifier: MIT */
/*
 * memcg/control.h - seeing and steering a running process from outside: the
 * control socket (`memcg ps/stat/set/top`) and Prometheus metrics over HTTP.
 *
 * Glossary:
 *   control socket  a Unix stream socket, one per process, owner-only (the
 *                   directory 0700, the socket 0600, and the peer's uid checked
 *                   with SO_PEERCRED on every connection: the process's own
 *                   user and root only).  One thread serves it; its line
 *                   protocol lists groups, reads and writes their cgroup v2
 *                   files, creates and removes groups, prints slabinfo, the
 *                   metrics and everything as JSON (docs/operating.md).
 *   default path    $XDG_RUNTIME_DIR/memcg/PID.sock when XDG_RUNTIME_DIR is an
 *                   absolute path, else /tmp/memcg-UID/PID.sock.  The memcg
 *                   directory is created 0700; one that is not a directory
 *                   owned by this user with mode 0700 (or less) is refused.
 *   metrics         the Prometheus text exposition format (version 0.0.4) of
 *                   every group's files and every cache's slabinfo, served at
 *                   /metrics by libmicrohttpd, loaded when first asked for.
 *
 * The library alone starts no thread: only these calls do.  The malloc shim
 * (libmemcg-preload.so, `memcg run`) starts the control socket at start-up
 * unless the option `control` is 0 (MCG_CONTROL=0), and the metrics server
 * when MCG_METRICS_LISTEN is set.
 *
 * Neither server holds a lock the allocation and charge fast paths take
 * while it waits for I/O: requests are answered through mcg_group_read() /
 * mcg_group_write() and the slab statistics, formatted into the server's
 * own buffers, and only then written.  A write of memory.max or
 * memory.reclaim may run reclaim, and so shrinkers, in the server's thread.
 *
 * Fork: a child inherits no server (pthread_atfork closes the child's copies
 * of the sockets); it may start its own.
 *
 * Every call is thread safe; calls return 0 or -errno.
 */
#ifndef MEMCG_CONTROL_H
#define MEMCG_CONTROL_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * mcg_control_start - create the control socket at @path and start the thread
 * that serves it.
 * @path: the socket's path (at most 107 bytes), in a directory that must
 *        exist; NULL: the default path (above), its directory created if
 *        missing.  A file already at the path is replaced: a stale socket.
 * Return: 0; -EALREADY (serving already); -EACCES (the default directory is
 * not this user's own with mode 0700, or is a symlink); -ENAMETOOLONG;
 * -ENOMEM; -errno from socket(), bind(), listen() or pthread_create().
 * Pair with mcg_control_stop().
 */
int mcg_control_start(const char *path);

/**
 * mcg_control_stop - stop serving: close every connection, remove the
 * socket file, wait for the thread.  Nothing when not serving.
 * Context: not from the serving thread itself (a shrinker it runs).
 */
void mcg_control_stop(void);

/**
 * mcg_control_path - the path of the socket this process serves.
 * Writes at most @len bytes including a NUL.
 * Return: 0; -ENOENT (not serving); -ERANGE (@len too small); -EINVAL.
 */
int mcg_control_path(char *buf, size_t len);

/**
 * mcg_control_default_path - where process @pid's socket goes by default
 * for this environment and user (the directory may not exist).
 * Return: 0; -ENAMETOOLONG (longer than a socket path may be, or than
 * @len); -EINVAL.
 */
int mcg_control_default_path(pid_t pid, char *buf, size_t len);

/**
 * mcg_metrics_start - serve the Prometheus metrics over HTTP at
 * http://@listen/metrics (other paths: 404).
 * @listen: "ADDR:PORT" with a numeric IPv4 address or a bracketed IPv6 one
 *          ("127.0.0.1:9187", "[::1]:9187"), or "PORT" alone for
 *          127.0.0.1; PORT 0 picks a free port (mcg_metrics_port()).  NULL:
 *          $MCG_METRICS_LISTEN.  Anyone who can reach the address can read
 *          the metrics: listen on loopback unless that is meant.
 * Return: 0; -EALREADY (serving already); -EINVAL (a malformed @listen, or
 * NULL with the variable unset); -ENOTSUP (memcg was built without
 * libmicrohttpd's header, or libmicrohttpd.so.12 cannot be loaded: a
 * message on stderr says which); -EADDRINUSE or another -errno from the
 * server's start.
 * Pair with mcg_metrics_stop().
 */
int mcg_metrics_start(const char *listen);

/** mcg_metrics_stop - stop the metrics server and wait for it.  Nothing when not serving. */
void mcg_metrics_stop(void);

/** mcg_metrics_port - the TCP port the metrics server listens on, or -ENOENT (not serving). */
int mcg_metrics_port(void);

#ifdef __cplusplus
}
#endif
#endif /* MEMCG_CONTROL_H */
