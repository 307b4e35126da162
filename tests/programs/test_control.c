/* SPDX-License-Identifier: MIT */
/*
 * test_control.c - a running program steered from outside, only through the
 * memcg CLI (and raw connections to its socket for what no CLI would send).
 * control_target (tests/programs/control_target.c) holds
 *
 *   /  |- tenant-a (max 64M, high 48M, low 1M)  `- cache (max 8M)
 *      |- tenant b (max 32M, 4 MiB charged)      `- q"u\ote ünï
 *
 *   - every file of every group read from outside (memcg stat) equals what
 *     the program reads inside; `memcg ps` lists it; --json is valid JSON
 *     (python3's json module) with the same values; head-style blocks;
 *   - memcg set takes effect (a lower memory.max makes the program's next
 *     allocation fail and counts max and oom events), a bad value or group
 *     exits 1 and changes nothing; memcg ctl creates and removes groups;
 *   - garbage, 100 clients at once, clients that never read: the program
 *     keeps answering its own stdin and the socket keeps serving;
 *   - /metrics scraped with curl and checked with promtool; so is
 *     `memcg stat --prometheus`;
 *   - memcg top under a pseudo-terminal (script): draws, sorts on 'c',
 *     quits on 'q'; --once and --json; it says so and exits 0 when the
 *     program exits;
 *   - a socket left by a killed program is removed by memcg ps.
 * (test_control_shim.c: the same through `memcg run`; test_control_user.c:
 * another user refused.)
 */
#include <sys/socket.h>
#include <sys/un.h>

#include "control.h"
#include "unix_client.h"

static struct child target;
static char pid_s[16];
static const char *const groups[] = {"/", "/tenant-a", "/tenant-a/cache", "/tenant b",
                                     "/q\"u\\ote \xc3\xbcn\xc3\xaf"};
static const char *const enc_groups[] = {"/", "/tenant-a", "/tenant-a/cache", "/tenant%20b",
                                         "/q%22u%5cote%20%c3%bcn%c3%af"};
static const char *const files[] = {
        "memory.current", "memory.min",  "memory.low",    "memory.high",         "memory.max",
        "memory.peak",    "memory.stat", "memory.events", "memory.events.local", "cgroup.stat"};

static bool start_target(char *const env[])
{
	const char *bin = getenv("MCG_CONTROL_TARGET");
	if (!bin) {
		fprintf(stderr, "  MCG_CONTROL_TARGET is not set (run through ctest)\n");
		return false;
	}
	char *argv[] = {(char *)bin, NULL};
	char line[256];
	if (!child_start(&target, argv, env) || !child_line(&target, 20000, line, sizeof(line)) ||
	    strncmp(line, "ready ", 6))
		return false;
	snprintf(pid_s, sizeof(pid_s), "%.15s", line + 6);
	return atol(pid_s) == target.pid;
}

/* What the program reads inside: file @f of group @i. */
static char *inside(int i, const char *f)
{
	static char text[16384];
	char req[512], line[4096];
	snprintf(req, sizeof(req), "read %s %s", enc_groups[i], f);
	text[0] = '\0';
	child_say(&target, req);
	while (child_line(&target, 10000, line, sizeof(line)) && strcmp(line, "--end--")) {
		strncat(text, line, sizeof(text) - strlen(text) - 2);
		strcat(text, "\n");
	}
	return text;
}

/* The value of "KEY VALUE" in @text, or -1. */
static long kv(const char *text, const char *key)
{
	size_t n = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, n) && p[n] == ' ')
			return atol(p + n + 1);
	return -1;
}

static void test_outside_equals_inside(void)
{
	struct prog_result r = cli("ps", NULL);
	CHECK_EQ(r.status, 0);
	char want[64];
	snprintf(want, sizeof(want), "\n%8s %6s ", pid_s, "5");
	CHECK(strstr(r.out, want) != NULL);
	prog_result_free(&r);
	int mismatches = 0;
	for (int i = 0; i < 5; i++) {
		for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
			r = cli("stat", "-p", pid_s, groups[i], files[f], NULL);
			const char *in = inside(i, files[f]);
			if (r.status != 0 || strcmp(r.out, in)) {
				mismatches++;
				fprintf(stderr, "  %s %s: outside '%s' (status %d), inside '%s'\n",
				        groups[i], files[f], r.out, r.status, in);
			}
			prog_result_free(&r);
		}
	}
	CHECK_EQ(mismatches, 0);
	/* The figures the hierarchy promises. */
	CHECK(!strcmp(inside(1, "memory.max"), "67108864\n"));
	CHECK_EQ(atol(inside(3, "memory.current")), 4l << 20);
	CHECK(kv(inside(1, "memory.stat"), "slab_unreclaimable") >= 1000 * 256);

	r = cli("stat", "-p", pid_s, "tenant-a", NULL); /* the leading slash is optional */
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, "==> /tenant-a/memory.max <==\n67108864\n") != NULL);
	CHECK(strstr(r.out, "==> /tenant-a/cache/memory.max <==\n8388608\n") != NULL);
	prog_result_free(&r);

	/* JSON: valid, and the same figures. */
	char dir[64];
	REQUIRE(prog_mkdtemp(dir));
	r = cli("stat", "-p", pid_s, "--json", NULL);
	CHECK_EQ(r.status, 0);
	CHECK(prog_write_file(dir, "all.json", r.out));
	prog_result_free(&r);
	char in_path[128];
	snprintf(in_path, sizeof(in_path), "%s/all.json", dir);
	char *py[] = {
	        "python3", "-c",
	        "import json,sys\n"
	        "d=json.load(sys.stdin)\n"
	        "g={x['path']: x for x in d['groups']}\n"
	        "print(len(g), g['/tenant-a']['memory.max'], g['/tenant b']['memory.current'],"
	        " g['/q\"u\\\\ote \\u00fcn\\u00ef']['memory.high'], d['info']['pid'],"
	        " len(d['slabinfo']) > 10)\n",
	        NULL};
	r = prog_run(py, NULL, NULL, in_path, 30);
	char expect[128];
	snprintf(expect, sizeof(expect), "5 67108864 4194304 max %s True\n", pid_s);
	CHECK_EQ(r.status, 0);
	if (strcmp(r.out, expect))
		CHECK(!fprintf(stderr, "  json: '%s' / '%s'\n", r.out, r.err));
	prog_result_free(&r);
	prog_rmtree(dir);
}

static void test_set_takes_effect(void)
{
	struct prog_result r = cli("set", "-p", pid_s, "/tenant b", "memory.max", "5M", NULL);
	CHECK_EQ(r.status, 0);
	CHECK_EQ(r.out_len, 0);
	prog_result_free(&r);
	CHECK(!strcmp(inside(3, "memory.max"), "5242880\n"));
	char line[64];
	child_say(&target, "alloc tenant%20b 2097152"); /* 4 MiB + 2 MiB > 5 MiB */
	CHECK(child_line(&target, 10000, line, sizeof(line)) && !strcmp(line, "fail"));
	r = cli("stat", "-p", pid_s, "/tenant b", "memory.events", NULL);
	CHECK(kv(r.out, "max") >= 1 && kv(r.out, "oom") >= 1);
	prog_result_free(&r);
	/* A bad value or group: exit 1, a reason, nothing changed. */
	r = cli("set", "-p", pid_s, "/tenant b", "memory.max", "12x", NULL);
	CHECK_EQ(r.status, 1);
	CHECK(strstr(r.err, "memcg set: Invalid argument: write /tenant%20b memory.max 12x") !=
	      NULL);
	prog_result_free(&r);
	r = cli("set", "-p", pid_s, "/nope", "memory.max", "1M", NULL);
	CHECK_EQ(r.status, 1);
	CHECK(strstr(r.err, "No such file or directory: group /nope") != NULL);
	prog_result_free(&r);
	r = cli("set", "-p", pid_s, "/tenant b", "memory.max", NULL);
	CHECK_EQ(r.status, 2);
	prog_result_free(&r);
	CHECK(!strcmp(inside(3, "memory.max"), "5242880\n"));
	r = cli("set", "-p", pid_s, "/tenant b", "memory.max", "32M", NULL);
	CHECK_EQ(r.status, 0);
	prog_result_free(&r);
	child_say(&target, "alloc tenant%20b 2097152");
	CHECK(child_line(&target, 10000, line, sizeof(line)) && !strcmp(line, "ok"));

	/* Groups made and removed from outside. */
	r = cli("ctl", "-p", pid_s, "create", "/tenant-a/new one", NULL);
	CHECK_EQ(r.status, 0);
	prog_result_free(&r);
	r = cli("ctl", "-p", pid_s, "groups", "/tenant-a", NULL);
	CHECK(!strcmp(r.out, "/tenant-a\n/tenant-a/cache\n/tenant-a/new one\n"));
	prog_result_free(&r);
	r = cli("ctl", "-p", pid_s, "remove", "/tenant-a", NULL);
	CHECK_EQ(r.status, 1);
	CHECK(strstr(r.err, "Device or resource busy") != NULL);
	prog_result_free(&r);
	r = cli("ctl", "-p", pid_s, "remove", "/tenant-a/new one", NULL);
	CHECK_EQ(r.status, 0);
	prog_result_free(&r);
	r = cli("stat", "-p", "999999999", "/", NULL);
	CHECK_EQ(r.status, 1);
	CHECK(strstr(r.err, "no process 999999999") != NULL);
	prog_result_free(&r);
}

/* The target's socket path (from `memcg ctl info`). */
static void socket_path(char *buf, size_t len)
{
	struct prog_result r = cli("ctl", "-p", pid_s, "info", NULL);
	const char *p = strstr(r.out, "\nsocket ");
	snprintf(buf, len, "%.*s", p ? (int)strcspn(p + 8, "\n") : 0, p ? p + 8 : "");
	prog_result_free(&r);
}

/* The first line a connection gets within 5 s, into @buf. */
static bool first_line(int fd, char *buf, size_t len)
{
	size_t got = 0;
	while (got + 1 < len) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 5000) <= 0 || recv(fd, buf + got, 1, 0) != 1)
			return false;
		if (buf[got++] == '\n')
			break;
	}
	buf[got] = '\0';
	return true;
}

/* The program still answers its own stdin, and the socket a CLI request. */
static void still_working(const char *what)
{
	char line[64];
	child_say(&target, "alloc tenant-a 4096");
	bool ok = child_line(&target, 10000, line, sizeof(line)) && !strcmp(line, "ok");
	struct prog_result r = cli("stat", "-p", pid_s, "/tenant-a", "memory.max", NULL);
	ok = ok && r.status == 0 && !strcmp(r.out, "67108864\n");
	if (!ok)
		CHECK(!fprintf(stderr, "  not working after %s\n", what));
	prog_result_free(&r);
}

static void test_garbage_and_load(void)
{
	char path[256];
	socket_path(path, sizeof(path));
	REQUIRE(path[0] == '/');
	/* Garbage, an overlong line, a half line. */
	int fd = unix_dial(path);
	char junk[2048], line[512];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 7919 % 251);
	junk[sizeof(junk) - 1] = '\n';
	CHECK(send(fd, junk, sizeof(junk), MSG_NOSIGNAL) == (ssize_t)sizeof(junk));
	CHECK(first_line(fd, line, sizeof(line)) && !strncmp(line, "error ", 6));
	close(fd);
	fd = unix_dial(path);
	static char big[9000];
	memset(big, 'g', sizeof(big));
	big[sizeof(big) - 1] = '\n';
	CHECK(send(fd, big, sizeof(big), MSG_NOSIGNAL) == (ssize_t)sizeof(big));
	CHECK(first_line(fd, line, sizeof(line)) && !strncmp(line, "error E2BIG ", 12));
	close(fd);
	int half = unix_dial(path);
	CHECK(send(half, "read /tenant-a mem", 18, MSG_NOSIGNAL) == 18);
	still_working("garbage and a half line");
	close(half);

	/* 100 clients at once: 64 served, the rest told to come back. */
	int fds[100], ok = 0, busy = 0;
	for (int i = 0; i < 100; i++) {
		fds[i] = unix_dial(path);
		if (fds[i] >= 0)
			send(fds[i], "read / memory.max\n", 18, MSG_NOSIGNAL);
	}
	for (int i = 0; i < 100; i++) {
		if (fds[i] >= 0 && first_line(fds[i], line, sizeof(line))) {
			ok += !strcmp(line, "ok 4\n");
			busy += !strncmp(line, "error EBUSY ", 12);
		}
	}
	CHECK(ok >= 60 && ok <= 64); /* a few slots may still hold the clients above */
	CHECK_EQ(ok + busy, 100);
	for (int i = 0; i < 100; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	usleep(200000);
	still_working("100 clients");

	/* Clients that never read their replies. */
	static char reqs[300 * 8];
	for (int i = 0; i < 300; i++)
		memcpy(reqs + i * 8, "metrics\n", 8);
	int lazy[8];
	for (int i = 0; i < 8; i++) {
		lazy[i] = unix_dial(path);
		fcntl(lazy[i], F_SETFL, O_NONBLOCK);
		CHECK(send(lazy[i], reqs, sizeof(reqs), MSG_NOSIGNAL) > 0);
	}
	still_working("clients that never read");
	for (int i = 0; i < 8; i++)
		close(lazy[i]);
	/* Many CLIs at once. */
	pid_t pids[16];
	for (int i = 0; i < 16; i++) {
		fflush(NULL);
		pids[i] = fork();
		if (pids[i] == 0) {
			int null = open("/dev/null", O_WRONLY);
			dup2(null, 1);
			execl(prog_memcg_bin(), "memcg", "stat", "-p", pid_s, NULL);
			_exit(127);
		}
	}
	int failed = 0;
	for (int i = 0; i < 16; i++) {
		int st;
		waitpid(pids[i], &st, 0);
		failed += !WIFEXITED(st) || WEXITSTATUS(st);
	}
	CHECK_EQ(failed, 0);
}

static void test_metrics(void)
{
	PROG_SKIP_UNLESS_INSTALLED("curl");
	PROG_SKIP_UNLESS_INSTALLED("promtool");
	struct prog_result r = cli("ctl", "-p", pid_s, "info", NULL);
	const char *m = strstr(r.out, "\nmetrics 127.0.0.1:");
	CHECK(m != NULL);
	char addr[64], url[96];
	snprintf(addr, sizeof(addr), "%.*s", m ? (int)strcspn(m + 9, "\n") : 0, m ? m + 9 : "");
	snprintf(url, sizeof(url), "http://%s/metrics", addr);
	prog_result_free(&r);
	r = cli("ps", NULL);
	CHECK(m && strstr(r.out, addr) != NULL); /* ps shows where the metrics are */
	prog_result_free(&r);

	char *curl[] = {"curl", "-sSf", "-D", "-", url, NULL};
	r = prog_run(curl, NULL, NULL, NULL, 30);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, "Content-Type: text/plain; version=0.0.4; charset=utf-8") != NULL);
	CHECK(strstr(r.out, "\nmemcg_memory_max_bytes{group=\"/tenant-a\"} 67108864\n") != NULL);
	CHECK(strstr(r.out, "\nmemcg_memory_max_bytes{group=\"/q\\\"u\\\\ote \xc3\xbcn\xc3\xaf\"} "
	                    "+Inf\n") != NULL);
	CHECK(strstr(r.out, "\nmemcg_slab_objects{cache=\"target-objects\",state=\"active\"} "
	                    "1000\n") != NULL);
	const char *body = strstr(r.out, "\r\n\r\n");
	char dir[64];
	REQUIRE(prog_mkdtemp(dir));
	CHECK(prog_write_file(dir, "scraped.prom", body ? body + 4 : ""));
	prog_result_free(&r);
	r = cli("stat", "-p", pid_s, "--prometheus", NULL);
	CHECK_EQ(r.status, 0);
	CHECK(prog_write_file(dir, "stat.prom", r.out));
	prog_result_free(&r);
	static const char *const names[] = {"scraped.prom", "stat.prom"};
	for (int i = 0; i < 2; i++) {
		char in[128];
		snprintf(in, sizeof(in), "%s/%s", dir, names[i]);
		char *promtool[] = {"promtool", "check", "metrics", NULL};
		r = prog_run(promtool, NULL, NULL, in, 30);
		CHECK_EQ(r.status, 0);
		if (r.status)
			prog_show_failure(names[i], &r);
		prog_result_free(&r);
	}
	prog_rmtree(dir);
}

/* `memcg top` under script(1), keys written with pauses; its output and status. */
static struct prog_result top_pty(const char *keys, int pause_ms)
{
	struct prog_result res = {.status = -1};
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "%s top -p %s -d 0.3 -n 3", prog_memcg_bin(), pid_s);
	char *argv[] = {"script", "-qfec", cmd, "/dev/null", NULL};
	char *env[] = {"TERM=xterm", "COLUMNS=160", "LINES=50", NULL};
	struct child c;
	if (!child_start(&c, argv, env))
		return res;
	size_t cap = 1 << 20;
	res.out = calloc(1, cap);
	res.err = calloc(1, 1);
	for (const char *k = keys; *k; k++) {
		/* Read what comes meanwhile, then send the key. */
		for (int waited = 0; waited < pause_ms; waited += 50) {
			struct pollfd p = {.fd = c.out, .events = POLLIN};
			if (poll(&p, 1, 50) > 0) {
				ssize_t n =
				        read(c.out, res.out + res.out_len, cap - 1 - res.out_len);
				if (n > 0)
					res.out_len += (size_t)n;
			}
		}
		CHECK(write(c.in, k, 1) == 1);
	}
	for (int waited = 0; waited < 5000; waited += 50) {
		struct pollfd p = {.fd = c.out, .events = POLLIN};
		if (poll(&p, 1, 50) > 0) {
			ssize_t n = read(c.out, res.out + res.out_len, cap - 1 - res.out_len);
			if (n <= 0)
				break;
			res.out_len += (size_t)n;
		}
	}
	res.out[res.out_len] = '\0';
	close(c.out);
	c.out = open("/dev/null", O_RDONLY);
	res.status = child_wait(&c, 5);
	return res;
}

/* The position of @needle in the last frame of @out (after the last cursor-home), or -1. */
static long in_last_frame(const char *out, const char *needle)
{
	const char *frame = out, *p;
	while ((p = strstr(frame, "\033[H")))
		frame = p + 3;
	const char *hit = strstr(frame, needle);
	return hit ? hit - frame : -1;
}

static void test_top(void)
{
	PROG_SKIP_UNLESS_INSTALLED("script");
	struct prog_result r = top_pty("cq", 1200);
	CHECK_EQ(r.status, 0);
	char want[64];
	snprintf(want, sizeof(want), "memcg top - pid %s ", pid_s);
	CHECK(strstr(r.out, want) != NULL);
	CHECK(strstr(r.out, "sort: name") != NULL);
	CHECK(strstr(r.out, "CURRENT") && strstr(r.out, "RECLAIM/s") && strstr(r.out, "OBJ/SLAB"));
	CHECK(in_last_frame(r.out, "sort: current") >= 0); /* 'c' sorted it */
	/* By current: tenant b (4+ MiB) above tenant-a (~0.3 MiB), the other way in name order. */
	long b = in_last_frame(r.out, "  tenant b "), a = in_last_frame(r.out, "  tenant-a ");
	CHECK(b >= 0 && a >= 0 && b < a);
	CHECK(strstr(r.out, "\033[?25h") != NULL); /* the cursor given back on 'q' */
	if (r.status)
		prog_show_failure("memcg top", &r);
	prog_result_free(&r);

	r = cli("top", "-p", pid_s, "--once", "-d", "0.2", "-n", "2", NULL);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, "\n  tenant-a ") != NULL && strstr(r.out, "\033[") == NULL);
	prog_result_free(&r);
	r = cli("top", "-p", pid_s, "--once", "--json", "-d", "0.2", "-s", "current", NULL);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, "\"sort\":\"c\",\"groups\":[{\"path\":\"/\"") != NULL);
	CHECK(strstr(r.out, "{\"path\":\"/tenant b\",\"current\":") != NULL);
	CHECK(strstr(r.out, "\"events_per_s\":{\"low\":0,\"high\":0,\"max\":0,\"oom\":0}") != NULL);
	prog_result_free(&r);
	r = cli("top", "-p", pid_s, "-s", "nonsense", NULL);
	CHECK_EQ(r.status, 2);
	prog_result_free(&r);
}

/* Last: top follows the program until it exits; then its socket is gone. */
static void test_top_survives_exit(void)
{
	char *argv[] = {(char *)prog_memcg_bin(), "top", "-p", pid_s, "--json", "-d", "0.2", NULL};
	struct child top;
	REQUIRE(child_start(&top, argv, NULL));
	char line[65536];
	CHECK(child_line(&top, 10000, line, sizeof(line)) && !strncmp(line, "{\"pid\":", 7));
	char path[256];
	socket_path(path, sizeof(path));
	child_say(&target, "exit");
	CHECK_EQ(child_wait(&target, 10), 0);
	time_t t0 = time(NULL);
	CHECK_EQ(child_wait(&top, 10), 0);
	CHECK(time(NULL) - t0 <= 5);
	CHECK(access(path, F_OK) != 0); /* mcg_control_stop() removed it */
}

static void test_ps_removes_stale(void)
{
	/* A target killed by a signal leaves its socket behind. */
	REQUIRE(start_target(NULL));
	char path[256];
	socket_path(path, sizeof(path));
	CHECK(access(path, F_OK) == 0);
	kill(target.pid, SIGKILL);
	child_wait(&target, 10);
	CHECK(access(path, F_OK) == 0);
	struct prog_result r = cli("ps", NULL);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.err, "memcg ps: removed ") != NULL);
	CHECK(access(path, F_OK) != 0);
	prog_result_free(&r);
	r = cli("stat", "-p", pid_s, NULL);
	CHECK_EQ(r.status, 1);
	CHECK(strstr(r.err, "no process") != NULL);
	prog_result_free(&r);
}

int main(void)
{
	char *env[] = {"MCG_METRICS_LISTEN=127.0.0.1:0", NULL};
	if (!prog_memcg_bin() || !start_target(env)) {
		fprintf(stderr, "control_target did not start\n");
		return 1;
	}
	RUN(test_outside_equals_inside);
	RUN(test_set_takes_effect);
	RUN(test_garbage_and_load);
	RUN(test_metrics);
	RUN(test_top);
	RUN(test_top_survives_exit);
	RUN(test_ps_removes_stale);
	return test_done();
}
