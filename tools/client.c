/* SPDX-License-Identifier: MIT */
/* tools/client.c - the CLI's side of the control socket (see client.h). */
#include "client.h"

#include <errno.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "iface/escape.h"
#include "iface/sockdir.h"

static void add_dir(char **dirs, int *n, int max, const char *d)
{
	struct stat st;
	if (*n >= max || stat(d, &st) != 0 || !S_ISDIR(st.st_mode))
		return;
	for (int i = 0; i < *n; i++) {
		struct stat o;
		if (stat(dirs[i], &o) == 0 && o.st_dev == st.st_dev && o.st_ino == st.st_ino)
			return; /* the same directory by another name */
	}
	dirs[(*n)++] = strdup(d);
}

int client_dirs(char **dirs, int max)
{
	int n = 0;
	char buf[512];
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	if (xdg && xdg[0] == '/') {
		snprintf(buf, sizeof(buf), "%s/memcg", xdg);
		add_dir(dirs, &n, max, buf);
	}
	snprintf(buf, sizeof(buf), "/tmp/memcg-%ld", (long)geteuid());
	add_dir(dirs, &n, max, buf);
	if (geteuid() == 0) {
		static const char *const patterns[] = {"/run/user/[0-9]*/memcg",
		                                       "/tmp/memcg-[0-9]*"};
		for (size_t p = 0; p < sizeof(patterns) / sizeof(patterns[0]); p++) {
			glob_t g;
			if (glob(patterns[p], GLOB_NOSORT, NULL, &g) != 0)
				continue;
			for (size_t i = 0; i < g.gl_pathc; i++)
				add_dir(dirs, &n, max, g.gl_pathv[i]);
			globfree(&g);
		}
	}
	return n;
}

bool client_pid_alive(pid_t pid)
{
	if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM))
		return false;
	/* A zombie has exited: its parent has not reaped it yet. */
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return true;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *paren = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
	return !(paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
}

static int connect_path(struct client *c, const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	c->fd = fd;
	snprintf(c->path, sizeof(c->path), "%s", path);
	return 0;
}

int client_connect(struct client *c, pid_t pid, const char *path)
{
	c->fd = -1;
	c->pid = pid;
	c->path[0] = '\0';
	if (path)
		return connect_path(c, path);
	char *dirs[CLIENT_MAX_DIRS];
	int n = client_dirs(dirs, CLIENT_MAX_DIRS), err = -ENOENT;
	for (int i = 0; i < n; i++) {
		char p[512];
		struct stat st;
		if (err == -ENOENT && !mcg_sock_path(dirs[i], pid, p, sizeof(p)) &&
		    lstat(p, &st) == 0)
			err = connect_path(c, p);
		free(dirs[i]);
	}
	return err;
}

void client_close(struct client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* Wait until @fd is ready for @events, at most @ms.  Return 0 or -ETIMEDOUT. */
static int wait_fd(int fd, short events, int ms)
{
	struct pollfd p = {.fd = fd, .events = events};
	int r;
	do
		r = poll(&p, 1, ms);
	while (r < 0 && errno == EINTR);
	return r > 0 ? 0 : r == 0 ? -ETIMEDOUT : -errno;
}

/* The errno named @name ("EINVAL"), or EIO. */
static int errno_named(const char *name, size_t n)
{
	for (int e = 1; e < 200; e++) {
		const char *s = strerrorname_np(e);
		if (s && strlen(s) == n && !memcmp(s, name, n))
			return e;
	}
	return EIO;
}

int client_request(struct client *c, const char *const *words, int nwords, char **body, size_t *len,
                   char *msg, size_t msglen, int timeout_ms)
{
	*body = NULL;
	*len = 0;
	msg[0] = '\0';
	struct mcg_out req;
	mcg_out_init(&req);
	for (int i = 0; i < nwords; i++) {
		if (i)
			mcg_out_write(&req, " ", 1);
		mcg_percent_encode(&req, words[i]);
	}
	mcg_out_write(&req, "\n", 1);
	if (req.err) {
		mcg_out_free(&req);
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	size_t sent = 0, total = mcg_out_size(&req);
	int err = 0;
	while (sent < total) {
		ssize_t n = send(c->fd, mcg_out_data(&req) + sent, total - sent, MSG_NOSIGNAL);
		if (n > 0)
			sent += (size_t)n;
		else if (errno != EINTR)
			break; /* closed: it may have said why (a refusal), so read on */
	}
	mcg_out_free(&req);

	/* The head: "ok LEN\n" or "error NAME text\n". */
	char head[4096];
	size_t hl = 0;
	while (!err) {
		if ((err = wait_fd(c->fd, POLLIN, timeout_ms)))
			break;
		ssize_t n = recv(c->fd, head + hl, 1, 0); /* byte by byte: the body stays queued */
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			err = -EPIPE;
			break;
		}
		if (head[hl++] == '\n' || hl == sizeof(head) - 1)
			break;
	}
	head[hl] = '\0';
	if (err) {
		snprintf(msg, msglen, "%s",
		         err == -ETIMEDOUT ? "no reply in time" : "the connection ended");
		return err;
	}
	if (hl && head[hl - 1] == '\n')
		head[--hl] = '\0';
	if (!strncmp(head, "error ", 6)) {
		const char *name = head + 6, *sp = strchr(name, ' ');
		size_t nl = sp ? (size_t)(sp - name) : strlen(name);
		snprintf(msg, msglen, "%s", sp ? sp + 1 : name);
		return -errno_named(name, nl);
	}
	char *end;
	unsigned long long want = strncmp(head, "ok ", 3) ? 0 : strtoull(head + 3, &end, 10);
	if (strncmp(head, "ok ", 3) || *end) {
		snprintf(msg, msglen, "not a reply: %.200s", head);
		return -EPROTO;
	}
	char *b = malloc(want + 1);
	if (!b) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	size_t got = 0;
	while (got < want && !err) {
		if ((err = wait_fd(c->fd, POLLIN, timeout_ms)))
			break;
		ssize_t n = recv(c->fd, b + got, want - got, 0);
		if (n > 0)
			got += (size_t)n;
		else if (n == 0 || errno != EINTR)
			err = -EPIPE;
	}
	if (err) {
		free(b);
		snprintf(msg, msglen, "%s",
		         err == -ETIMEDOUT ? "no reply in time" : "the connection ended");
		return err;
	}
	b[want] = '\0';
	*body = b;
	*len = want;
	return 0;
}

int client_take_target(int argc, char **argv, int *i, pid_t *pid, const char **path,
                       const char *cmd)
{
	const char *a = argv[*i], *v = NULL;
	bool is_pid;
	if (!strcmp(a, "-p") || !strcmp(a, "--pid") || !strcmp(a, "-S") || !strcmp(a, "--socket")) {
		is_pid = a[1] == 'p' || a[2] == 'p';
		if (*i + 1 >= argc) {
			fprintf(stderr, "memcg %s: %s needs a value\n", cmd, a);
			return -1;
		}
		v = argv[++*i];
	} else if (!strncmp(a, "--pid=", 6) || !strncmp(a, "--socket=", 9)) {
		is_pid = a[2] == 'p';
		v = strchr(a, '=') + 1;
	} else if (!strncmp(a, "-p", 2) && a[2]) {
		is_pid = true;
		v = a + 2;
	} else {
		return 0;
	}
	(*i)++;
	if (!is_pid) {
		*path = v;
		return 1;
	}
	char *end;
	long p = strtol(v, &end, 10);
	if (!*v || *end || p <= 0 || p > 0x7fffffff) {
		fprintf(stderr, "memcg %s: '%s' is not a process id\n", cmd, v);
		return -1;
	}
	*pid = (pid_t)p;
	return 1;
}

void client_explain(const char *cmd, pid_t pid, const char *path, int err)
{
	char who[160];
	if (path)
		snprintf(who, sizeof(who), "%s", path);
	else
		snprintf(who, sizeof(who), "process %ld", (long)pid);
	if (err == -ENOENT && !path && !client_pid_alive(pid))
		fprintf(stderr, "memcg %s: no process %ld\n", cmd, (long)pid);
	else if (err == -ENOENT)
		fprintf(stderr,
		        "memcg %s: %s has no control socket (not a memcg process, started with "
		        "MCG_CONTROL=0, or another user's: see memcg ps)\n",
		        cmd, who);
	else if (err == -EACCES || err == -EPERM)
		fprintf(stderr,
		        "memcg %s: %s: permission denied (only its own user and root may "
		        "connect)\n",
		        cmd, who);
	else if (err == -ECONNREFUSED)
		fprintf(stderr,
		        "memcg %s: %s: nobody answers (a stale socket; memcg ps removes those)\n",
		        cmd, who);
	else
		fprintf(stderr, "memcg %s: %s: %s\n", cmd, who, strerror(-err));
}

/* "/GROUP" for GROUP (a leading slash added when missing) into @buf. */
const char *client_group_path(const char *g, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", g[0] == '/' ? "" : "/", g);
	return buf;
}

/* Connect to the target and run one request; print its body.  Exit status. */
int client_run(const char *cmd, pid_t pid, const char *sock, const char *const *words, int n,
               bool print)
{
	struct client c;
	int err = client_connect(&c, pid, sock);
	if (err) {
		client_explain(cmd, pid, sock, err);
		return 1;
	}
	char *body, msg[512];
	size_t len;
	err = client_request(&c, words, n, &body, &len, msg, sizeof(msg), 30000);
	client_close(&c);
	if (err) {
		fprintf(stderr, "memcg %s: %s\n", cmd, msg);
		return 1;
	}
	if (print)
		fwrite(body, 1, len, stdout);
	free(body);
	return 0;
}
