/* SPDX-License-Identifier: MIT */
/* tools/kvclient.c - driving real Redis programs (see kvclient.h). */
#include "kvclient.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ programs */

static bool executable(const char *p) { return access(p, X_OK) == 0; }

const char *kvc_find(const char *name, char *buf, size_t len)
{
	if (!strcmp(name, "memcg-kvcache")) {
		const char *env = getenv("MCG_KVCACHE_BIN");
		if (env && *env) {
			snprintf(buf, len, "%s", env);
			return executable(buf) ? buf : NULL;
		}
		char self[4096];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n > 0) {
			self[n] = '\0';
			snprintf(buf, len, "%s/%s", dirname(self), name);
			if (executable(buf))
				return buf;
		}
	}
	const char *path = getenv("PATH");
	char dirs[4096];
	snprintf(dirs, sizeof(dirs), "%s", path ? path : "/usr/bin:/bin");
	for (char *save, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(buf, len, "%s/%s", d, name);
		if (executable(buf))
			return buf;
	}
	return NULL;
}

pid_t kvc_spawn(char *const argv[], const char *out_path, const char *err_path)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	int in = open("/dev/null", O_RDONLY);
	int out = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int err = open(err_path ? err_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(125);
	execv(argv[0], argv);
	_exit(127);
}

int kvc_wait(pid_t pid, int timeout_s)
{
	int status = 0;
	struct timespec d = {0, 10000000};
	for (long waited = 0;; waited += 10) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r < 0)
			return -1;
		if (waited >= timeout_s * 1000L) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		nanosleep(&d, NULL);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int kvc_stop(struct kvc_server *s)
{
	if (s->pid <= 0)
		return -1;
	kill(s->pid, SIGTERM);
	int st = kvc_wait(s->pid, 10);
	s->pid = 0;
	return st;
}

/* ------------------------------------------------------------ RESP */

int kvc_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

void kvc_reply_free(struct kvc_reply *r)
{
	free(r->str);
	memset(r, 0, sizeof(*r));
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read byte by byte up to "\r\n" (replies here are small). */
static int read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;
	while (n + 1 < len) {
		ssize_t r = read(fd, buf + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (buf[n] == '\n' && n > 0 && buf[n - 1] == '\r') {
			buf[n - 1] = '\0';
			return (int)(n - 1);
		}
		n++;
	}
	return -1;
}

static int read_exact(int fd, char *p, size_t n)
{
	while (n) {
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static void append(struct kvc_reply *r, const char *p, size_t n, bool sep)
{
	char *s = realloc(r->str, r->len + n + 2);
	if (!s)
		abort();
	r->str = s;
	if (sep && r->len)
		r->str[r->len++] = '\n';
	memcpy(r->str + r->len, p, n);
	r->len += n;
	r->str[r->len] = '\0';
}

static int read_reply(int fd, struct kvc_reply *r, bool element)
{
	char line[128];
	if (read_line(fd, line, sizeof(line)) < 1)
		return -1;
	char type = line[0];
	if (!element)
		r->type = type;
	switch (type) {
	case '+':
	case '-': append(r, line + 1, strlen(line + 1), element); return 0;
	case ':':
		if (!element)
			r->n = atoll(line + 1);
		append(r, line + 1, strlen(line + 1), element);
		return 0;
	case '$': {
		long long n = atoll(line + 1);
		if (!element)
			r->n = n;
		if (n < 0) {
			if (element)
				append(r, "(nil)", 5, true);
			return 0;
		}
		char *data = malloc((size_t)n + 2);
		if (!data || read_exact(fd, data, (size_t)n + 2)) {
			free(data);
			return -1;
		}
		append(r, data, (size_t)n, element);
		free(data);
		return 0;
	}
	case '*': {
		long long n = atoll(line + 1);
		r->n = n;
		append(r, "", 0, false);
		for (long long i = 0; i < n; i++)
			if (read_reply(fd, r, true))
				return -1;
		return 0;
	}
	}
	return -1;
}

int kvc_call(int fd, struct kvc_reply *r, int argc, const char *const *argv)
{
	memset(r, 0, sizeof(*r));
	char head[32];
	size_t cap = 64, len = 0;
	for (int i = 0; i < argc; i++)
		cap += strlen(argv[i]) + 32;
	char *req = malloc(cap);
	if (!req)
		return -1;
	len += (size_t)snprintf(req, cap, "*%d\r\n", argc);
	for (int i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]);
		int h = snprintf(head, sizeof(head), "$%zu\r\n", n);
		memcpy(req + len, head, (size_t)h);
		memcpy(req + len + h, argv[i], n);
		memcpy(req + len + h + n, "\r\n", 2);
		len += (size_t)h + n + 2;
	}
	int e = write_all(fd, req, len);
	free(req);
	if (e || read_reply(fd, r, false)) {
		kvc_reply_free(r);
		return -1;
	}
	return 0;
}

int kvc_callv(int fd, struct kvc_reply *r, ...)
{
	const char *argv[64];
	int argc = 0;
	va_list ap;
	va_start(ap, r);
	for (const char *a; argc < 64 && (a = va_arg(ap, const char *));)
		argv[argc++] = a;
	va_end(ap);
	return kvc_call(fd, r, argc, argv);
}

char *kvc_info(int port, const char *section)
{
	int fd = kvc_connect(port);
	if (fd < 0)
		return NULL;
	struct kvc_reply r;
	int e = kvc_callv(fd, &r, "INFO", section, NULL);
	close(fd);
	if (e || r.type != '$') {
		kvc_reply_free(&r);
		return NULL;
	}
	return r.str;
}

double kvc_info_num(const char *info, const char *field, const char *sub)
{
	if (!info)
		return -1;
	size_t fl = strlen(field);
	for (const char *p = info; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, field, fl) || p[fl] != ':')
			continue;
		const char *v = p + fl + 1;
		if (!sub)
			return atof(v);
		const char *eol = strchr(v, '\n');
		size_t sl = strlen(sub);
		for (const char *q = v; q && (!eol || q < eol);
		     q = strchr(q, ','), q = q ? q + 1 : NULL)
			if (!strncmp(q, sub, sl) && q[sl] == '=')
				return atof(q + sl + 1);
		return -1;
	}
	return -1;
}

/* ------------------------------------------------------------ servers */

static int wait_ping(struct kvc_server *s)
{
	struct timespec d = {0, 20000000};
	for (int i = 0; i < 500; i++) {
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			s->pid = 0;
			return -1;
		}
		int fd = kvc_connect(s->port);
		if (fd >= 0) {
			struct kvc_reply r;
			int e = kvc_callv(fd, &r, "PING", NULL);
			bool ok = !e && r.type == '+';
			kvc_reply_free(&r);
			close(fd);
			if (ok)
				return 0;
		}
		nanosleep(&d, NULL);
	}
	kvc_stop(s);
	return -1;
}

int kvc_start_kvcache(struct kvc_server *s, const char *const *args, const char *log)
{
	char bin[4096];
	memset(s, 0, sizeof(*s));
	if (!kvc_find("memcg-kvcache", bin, sizeof(bin))) {
		fprintf(stderr, "memcg-kvcache not found (MCG_KVCACHE_BIN, beside memcg, PATH)\n");
		return -1;
	}
	const char *argv[80] = {bin, "--port", "0"};
	int argc = 3;
	for (; args && *args && argc < 79; args++)
		argv[argc++] = *args;
	int po[2];
	if (pipe2(po, O_CLOEXEC))
		return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);
		if (in < 0 || dup2(in, 0) < 0 || dup2(po[1], 1) < 0)
			_exit(125);
		if (log) {
			int e = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (e < 0 || dup2(e, 2) < 0)
				_exit(125);
		}
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(po[1]);
	if (pid < 0) {
		close(po[0]);
		return -1;
	}
	s->pid = pid;
	/* "memcg-kvcache: listening on 127.0.0.1:PORT, ..." */
	char line[256];
	FILE *f = fdopen(po[0], "r");
	const char *p = f && fgets(line, sizeof(line), f) ? strstr(line, "127.0.0.1:") : NULL;
	if (f)
		fclose(f);
	else
		close(po[0]);
	if (!p) {
		fprintf(stderr, "memcg-kvcache did not start\n");
		kvc_stop(s);
		return -1;
	}
	s->port = atoi(p + strlen("127.0.0.1:"));
	return wait_ping(s);
}

/* A port nobody listens on now (the kernel's pick for an ephemeral bind). */
static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(a);
	int port = -1;
	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

int kvc_start_redis(struct kvc_server *s, const char *const *args)
{
	char bin[4096];
	memset(s, 0, sizeof(*s));
	if (!kvc_find("redis-server", bin, sizeof(bin)))
		return -2;
	/* The port is free when picked, not when redis binds it: retry. */
	for (int attempt = 0; attempt < 5; attempt++) {
		char port[16];
		s->port = free_port();
		snprintf(port, sizeof(port), "%d", s->port);
		const char *argv[80] = {bin,         "--port",      port, "--bind",
		                        "127.0.0.1", "--save",      "",   "--appendonly",
		                        "no",        "--daemonize", "no"};
		int argc = 11;
		for (const char *const *a = args; a && *a && argc < 79; a++)
			argv[argc++] = *a;
		s->pid = kvc_spawn((char *const *)argv, NULL, NULL);
		s->redis = true;
		if (s->pid > 0 && !wait_ping(s))
			return 0;
	}
	return -1;
}

/* ------------------------------------------------------------ measuring */

int kvc_bench_csv(const char *path, struct kvc_bench_row *rows, int max)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char line[512];
	int n = 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		struct kvc_bench_row r = {0};
		double min, p95, maxl;
		/* "test","rps","avg","min","p50","p95","p99","max" */
		if (sscanf(line,
		           "\"%31[^\"]\",\"%lf\",\"%lf\",\"%lf\",\"%lf\",\"%lf\",\"%lf\",\"%lf\"",
		           r.test, &r.rps, &r.avg_ms, &min, &r.p50_ms, &p95, &r.p99_ms, &maxl) == 8)
			rows[n++] = r;
	}
	fclose(f);
	return n;
}

long kvc_rss_kib(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	long kib = -1;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kib = atol(line + 6);
	if (f)
		fclose(f);
	return kib;
}

double kvc_cpu_ns(pid_t pid)
{
	char path[64], line[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	bool ok = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	/* The command name is in parentheses and may hold spaces: fields
	   14 (utime) and 15 (stime) count from the last ')'. */
	char *p = ok ? strrchr(line, ')') : NULL;
	unsigned long long ut, st;
	if (!p ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) * 1e9 / (double)sysconf(_SC_CLK_TCK);
}

int kvc_fill(int port, int db, long n, int vsize)
{
	int fd = kvc_connect(port);
	if (fd < 0)
		return -1;
	struct kvc_reply r;
	char dbs[16];
	snprintf(dbs, sizeof(dbs), "%d", db);
	int e = kvc_callv(fd, &r, "SELECT", dbs, NULL);
	e = e || r.type != '+';
	kvc_reply_free(&r);
	char *val = malloc((size_t)vsize + 1);
	size_t cap = 1 << 20;
	char *buf = malloc(cap);
	if (!val || !buf)
		e = 1;
	else
		memset(val, 'x', (size_t)vsize);
	/* Batches of 256 SETs, then their 256 "+OK\r\n". */
	for (long i = 0; !e && i < n; i += 256) {
		size_t len = 0;
		long batch = n - i < 256 ? n - i : 256;
		for (long j = 0; j < batch; j++) {
			if (len + (size_t)vsize + 128 > cap)
				break;
			len += (size_t)snprintf(buf + len, cap - len,
			                        "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012ld\r\n$%d\r\n",
			                        i + j, vsize);
			memcpy(buf + len, val, (size_t)vsize);
			memcpy(buf + len + vsize, "\r\n", 2);
			len += (size_t)vsize + 2;
		}
		e = write_all(fd, buf, len);
		char ok[256 * 5];
		if (!e)
			e = read_exact(fd, ok, (size_t)batch * 5);
		for (long j = 0; !e && j < batch; j++)
			e = memcmp(ok + 5 * j, "+OK\r\n", 5) != 0;
	}
	free(val);
	free(buf);
	close(fd);
	return e ? -1 : 0;
}
