/* SPDX-License-Identifier: MIT */
/*
 * control.h - what the control socket's integration tests share: a child
 * process driven through pipes (control_target, or a program under `memcg
 * run`), its lines read with a time limit, and the memcg CLI run with
 * arguments given inline.
 */
#ifndef MCG_TEST_CONTROL_H
#define MCG_TEST_CONTROL_H

#include <stdarg.h>

#include "progs.h"

/** A child with its stdin and stdout on pipes (stderr shared). */
struct child {
	pid_t pid;
	int in, out;
	char buf[65536];
	size_t len;
};

/** child_start - run @argv with extra environment @env (may be NULL). */
static inline bool child_start(struct child *c, char *const argv[], char *const env[])
{
	int pi[2], po[2];
	memset(c, 0, sizeof(*c));
	if (pipe2(pi, O_CLOEXEC) || pipe2(po, O_CLOEXEC))
		return false;
	fflush(NULL);
	c->pid = fork();
	if (c->pid < 0)
		return false;
	if (c->pid == 0) {
		dup2(pi[0], 0);
		dup2(po[1], 1);
		for (char *const *e = env; e && *e; e++)
			putenv(*e);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(pi[0]);
	close(po[1]);
	c->in = pi[1];
	c->out = po[0];
	return true;
}

/** child_line - the next line of the child's stdout (no newline), within @ms; NULL if none. */
static inline char *child_line(struct child *c, int ms, char *line, size_t len)
{
	time_t deadline = time(NULL) + (ms + 999) / 1000;
	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);
		if (nl) {
			size_t n = (size_t)(nl - c->buf);
			snprintf(line, len, "%.*s", (int)n, c->buf);
			memmove(c->buf, nl + 1, c->len - n - 1);
			c->len -= n + 1;
			return line;
		}
		int left = (int)(deadline - time(NULL));
		struct pollfd p = {.fd = c->out, .events = POLLIN};
		if (left <= 0 || poll(&p, 1, left * 1000) <= 0 || c->len == sizeof(c->buf))
			return NULL;
		ssize_t n = read(c->out, c->buf + c->len, sizeof(c->buf) - c->len);
		if (n <= 0)
			return NULL;
		c->len += (size_t)n;
	}
}

/** child_say - write @line and a newline to the child's stdin. */
static inline bool child_say(struct child *c, const char *line)
{
	size_t n = strlen(line);
	return write(c->in, line, n) == (ssize_t)n && write(c->in, "\n", 1) == 1;
}

/** child_wait - close its stdin and wait at most @s seconds (then kill it); its status. */
static inline int child_wait(struct child *c, int s)
{
	if (c->in >= 0)
		close(c->in);
	c->in = -1;
	int st = 0;
	for (int i = 0; i < s * 10; i++) {
		if (waitpid(c->pid, &st, WNOHANG) == c->pid) {
			close(c->out);
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		usleep(100000);
	}
	kill(c->pid, SIGKILL);
	waitpid(c->pid, &st, 0);
	close(c->out);
	return -1;
}

/** cli - `memcg ARGS...` (NULL-terminated), as prog_run with a 30 s limit. */
static inline struct prog_result cli(const char *first, ...)
{
	char *argv[32];
	int n = 0;
	argv[n++] = (char *)prog_memcg_bin();
	va_list ap;
	va_start(ap, first);
	for (const char *a = first; a && n < 31; a = va_arg(ap, const char *))
		argv[n++] = (char *)a;
	va_end(ap);
	argv[n] = NULL;
	return prog_run(argv, NULL, NULL, NULL, 30);
}

#endif /* MCG_TEST_CONTROL_H */
