/* SPDX-License-Identifier: MIT */
/*
 * tools/client.h - the CLI's side of the control socket (iface/proto.h):
 * finding a process's socket, connecting, one request and its reply.
 * Shared by `memcg ps`, `stat`, `set`, `ctl` and `top`.
 */
#ifndef MCG_TOOLS_CLIENT_H
#define MCG_TOOLS_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/** A connection to one process's control socket. */
struct client {
	int fd; /* -1: not connected */
	pid_t pid;
	char path[108];
};

/** Where a process's socket may be: the search list. */
#define CLIENT_MAX_DIRS 64

/**
 * client_dirs - the directories sockets of this user live in
 * ($XDG_RUNTIME_DIR/memcg, /tmp/memcg-EUID) and, for root, every user's
 * (/run/user/UID/memcg, /tmp/memcg-UID for every UID): up to @max paths into @dirs (each
 * malloc'd; free them).  Return: how many.
 */
int client_dirs(char **dirs, int max);

/**
 * client_connect - connect to @path if not NULL, else to @pid's socket
 * (the first of client_dirs() that has PID.sock).  Return: 0, -ENOENT (no
 * socket: not running, or not a memcg process), -EACCES (not this user's,
 * refused), -ECONNREFUSED (a stale socket), or another -errno.  Pair with
 * client_close().
 */
int client_connect(struct client *c, pid_t pid, const char *path);

/** client_close - close the connection (nothing if closed). */
void client_close(struct client *c);

/**
 * client_request - send the request made of @words (each percent-encoded
 * here, separated by spaces) and read the reply, waiting at most
 * @timeout_ms for each part of it.
 * @body: receives the body (malloc'd, NUL-terminated; free it) on success.
 * @msg:  receives the error line's text (after "error NAME ") on -errno
 *        from the server, or a description of a connection failure.
 * Return: 0; the -errno the server named; -EPIPE (the connection ended: the
 * process exited?); -ETIMEDOUT; -EPROTO (not a reply).
 */
int client_request(struct client *c, const char *const *words, int nwords, char **body, size_t *len,
                   char *msg, size_t msglen, int timeout_ms);

/**
 * client_take_target - if @argv[*@i] is -p PID, --pid PID (or =PID), -S PATH
 * or --socket PATH (or =PATH), store it and advance *@i past it.
 * Return: 1 (taken), 0 (not such an option), -1 (a bad value: said).
 */
int client_take_target(int argc, char **argv, int *i, pid_t *pid, const char **path,
                       const char *cmd);

/** client_explain - a one-line explanation of client_connect()'s @err for @pid, to stderr. */
void client_explain(const char *cmd, pid_t pid, const char *path, int err);

/** client_pid_alive - whether process @pid exists (any user's) and has not exited (a zombie). */
bool client_pid_alive(pid_t pid);

/** client_group_path - GROUP with a leading '/' added when missing, into @buf; @buf. */
const char *client_group_path(const char *g, char *buf, size_t len);

/**
 * client_run - connect to the target (@pid or @sock), make one request of
 * @words, print the body when @print; say what went wrong on stderr.
 * Return: the exit status: 0, or 1.
 */
int client_run(const char *cmd, pid_t pid, const char *sock, const char *const *words, int n,
               bool print);

#endif /* MCG_TOOLS_CLIENT_H */
