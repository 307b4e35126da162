/* SPDX-License-Identifier: MIT */
/*
 * test_server_mt.c - the control socket's server (iface/server.c) against
 * real connections, with the client timeout cut to 500 ms:
 *
 *   - start: the socket 0600, its path; a second start -EALREADY; a stale
 *     socket file replaced, another file refused (-EEXIST), a path past
 *     107 bytes refused; stop removes the file, and a restart serves;
 *   - framing: pipelined requests answered in order; garbage (random bytes,
 *     NULs and newlines) answered line by line with errors and nothing
 *     changed; an overlong line one E2BIG error, then the connection serves
 *     on; a last line without its newline answered before the close;
 *   - bounds: a half line holds its slot until the timeout, others served
 *     meanwhile; 100 clients at once - 64 served (a slot or two may still be
 *     held by clients closed just before), the rest refused with EBUSY,
 *     then a new one served; clients that send requests and never read
 *     their replies while this thread allocates, frees, creates caches and
 *     groups (nothing waits for them) and another client is served;
 *   - credentials (as root): another uid reaching the socket gets EACCES;
 *   - fork: the child serves nothing and has no socket of its own, the
 *     parent's still answers it (and everyone), the child may start its
 *     own; forks while a thread keeps asking do not deadlock;
 *   - a program that closes every descriptor (as daemons do): the server
 *     stops serving without closing anyone else's files, stop returns, and
 *     a new start serves (in a child).
 * The tests that fork are left out of TSan builds: the slab layer's fork
 * handler holds every per-CPU lock at once, more than TSan's deadlock
 * detector tracks (64), and TSan cannot start threads after a threaded fork.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "base/compiler.h"
#include "group_file.h"
#include "memcg/control.h"
#include "memcg/kmalloc.h"
#include "memcg/memcg.h"
#include "memcg/slab.h"
#include "fork_seen.h"
#include "held.h"
#include "test.h"
#include "unix_client.h"

static char dir[64], path[128];

/* Read one reply (head and body) within @ms into @buf; its length, 0 at EOF, -1 on timeout. */
static long reply(int fd, char *buf, size_t len, int ms)
{
	size_t got = 0, want = 0;
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, ms) <= 0)
			return -1;
		ssize_t n = recv(fd, buf + got, want ? want - got : 1, 0);
		if (n <= 0)
			return got ? -1 : 0;
		got += (size_t)n;
		buf[got] = '\0';
		if (!want && buf[got - 1] == '\n') {
			if (strncmp(buf, "ok ", 3))
				return (long)got; /* an error line */
			want = got + strtoul(buf + 3, NULL, 10);
		}
		if (want && got == want)
			return (long)got;
		if (got + 1 >= len)
			return -1;
	}
}

static char buf[1 << 20];

static bool ask(int fd, const char *req, const char *prefix)
{
	if (!unix_send_all(fd, req, strlen(req)))
		return false;
	long n = reply(fd, buf, sizeof(buf), 5000);
	return n > 0 && !strncmp(buf, prefix, strlen(prefix));
}

/* Wait up to 2 s for the process to hold @n descriptors (the server
 * closes a connection on its own thread). */
static bool fds_settle(int n)
{
	for (int i = 0; i < 200; i++) {
		if (held_fds() == n)
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * A reply larger than the socket takes at once, to a client that reads it
 * late: the server sends it in pieces as the client drains it, frees the
 * large buffer after, and serves the next request on the connection.
 */
static void test_large_reply(void)
{
	enum { N = 1500 };
	static mcg_group_t *g[N];
	char name[80];
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "large-reply-%04d-%s", i,
		         "padding-to-make-each-line-sixty-bytes-long");
		REQUIRE(!mcg_group_create(NULL, name, &g[i]));
	}
	/* The tests' idle timeout (500 ms) is not what this one is about: a
	 * loaded or instrumented (TSan) run may take that long between reads. */
	REQUIRE(!mcg_option_set("control_timeout_ms", 60000));
	int base = held_fds();
	int fd = unix_dial(path); /* test_start_stop left it serving */
	REQUIRE(fd >= 0);
	CHECK(unix_send_all(fd, "groups\n", 7));
	usleep(100000); /* the server fills the socket and waits for room */
	long n = reply(fd, buf, sizeof(buf), 5000);
	CHECK(n > 65536);
	int lines = 0;
	for (char *p = buf; (p = strstr(p, "\n/large-reply-")); p++)
		lines++;
	CHECK_EQ(lines, N);
	CHECK(ask(fd, "read / memory.max\n", "ok 4\nmax\n")); /* and the next one */
	close(fd);
	/* The server closes its end on its own thread: wait, so that the
	 * next test counts descriptors from a server with no connection. */
	CHECK(fds_settle(base));
	REQUIRE(!mcg_option_set("control_timeout_ms", 500));
	for (int i = 0; i < N; i++) {
		mcg_group_remove(g[i]);
		mcg_group_put(g[i]);
	}
}

/*
 * A reply larger than the server's socket buffer (the paths of a chain of
 * 100 groups with 63-byte names, 330 KB): sent in pieces as the client
 * reads, the large buffer given back, the next request served.  A client
 * that leaves without reading such a reply (the server's send fails), and
 * one that leaves with a short reply unread (the server's next read
 * fails): each connection is closed, and the server serves on.
 */
static void test_reply_in_pieces(void)
{
	enum { DEPTH = 100 };
	static mcg_group_t *chain[DEPTH];
	char name[MCG_GROUP_NAME_MAX + 1];
	mcg_group_t *parent = NULL;
	for (int i = 0; i < DEPTH; i++) {
		int k = snprintf(name, sizeof(name), "piece-%03d-", i);
		memset(name + k, 'x', MCG_GROUP_NAME_MAX - (size_t)k); /* the longest name */
		name[MCG_GROUP_NAME_MAX] = '\0';
		REQUIRE(!mcg_group_create(parent, name, &chain[i]));
		parent = chain[i];
	}
	REQUIRE(!mcg_option_set("control_timeout_ms", 60000));
	int base = held_fds();
	int fd = unix_dial(path);
	REQUIRE(fd >= 0);
	CHECK(unix_send_all(fd, "groups\n", 7));
	usleep(100000); /* the server fills the socket and waits for room */
	long n = reply(fd, buf, sizeof(buf), 5000);
	CHECK(n > 64 * DEPTH * (DEPTH + 1) / 2);
	CHECK(strstr(buf, "/piece-099-") != NULL);
	CHECK(ask(fd, "read / memory.max\n", "ok 4\nmax\n")); /* and the next one */
	close(fd);
	CHECK(fds_settle(base));
	/* Gone before reading its large reply. */
	fd = unix_dial(path);
	REQUIRE(fd >= 0);
	CHECK(unix_send_all(fd, "groups\n", 7));
	usleep(50000);
	close(fd);
	CHECK(fds_settle(base));
	/* Gone with a short reply unread in its socket. */
	fd = unix_dial(path);
	REQUIRE(fd >= 0);
	CHECK(unix_send_all(fd, "read / memory.max\n", 18));
	struct pollfd p = {.fd = fd, .events = POLLIN};
	CHECK_EQ(poll(&p, 1, 5000), 1);
	close(fd);
	CHECK(fds_settle(base));
	fd = unix_dial(path);
	CHECK(ask(fd, "read / memory.max\n", "ok 4\nmax\n"));
	close(fd);
	CHECK(fds_settle(base));
	REQUIRE(!mcg_option_set("control_timeout_ms", 500));
	for (int i = DEPTH - 1; i >= 0; i--) {
		mcg_group_remove(chain[i]);
		mcg_group_put(chain[i]);
	}
}

static void test_start_stop(void)
{
	REQUIRE(mcg_control_start(path) == 0);
	char p[128];
	CHECK_EQ(mcg_control_path(p, sizeof(p)), 0);
	CHECK(!strcmp(p, path));
	struct stat st;
	CHECK(lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 07777) == 0600);
	CHECK_EQ(mcg_control_start(path), -EALREADY);
	CHECK_EQ(mcg_control_start(NULL), -EALREADY);
	int fd = unix_dial(path);
	CHECK(ask(fd, "read / memory.max\n", "ok 4\nmax\n"));
	close(fd);
	mcg_control_stop();
	CHECK(lstat(path, &st) != 0 && errno == ENOENT);
	CHECK_EQ(unix_dial(path), -1);
	CHECK_EQ(mcg_control_path(p, sizeof(p)), -ENOENT);
	mcg_control_stop(); /* again: nothing */

	/* A stale socket file is replaced; anything else is not touched. */
	int stale = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	strcpy(sa.sun_path, path);
	CHECK_EQ(bind(stale, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(stale);
	CHECK_EQ(mcg_control_start(path), 0);
	fd = unix_dial(path);
	CHECK(ask(fd, "info\n", "ok "));
	close(fd);
	mcg_control_stop();
	char file[128];
	snprintf(file, sizeof(file), "%s/plain", dir);
	FILE *f = fopen(file, "w");
	CHECK(f && fputs("keep", f) >= 0 && !fclose(f));
	CHECK_EQ(mcg_control_start(file), -EEXIST);
	CHECK(lstat(file, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 4);
	char longp[200];
	memset(longp, 'l', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	CHECK_EQ(mcg_control_start(longp), -ENAMETOOLONG);
	CHECK_EQ(mcg_control_start(path), 0); /* and it serves again */
}

static void test_framing(void)
{
	int fd = unix_dial(path);
	REQUIRE(fd >= 0);
	/* Pipelined. */
	CHECK(unix_send_all(fd, "read / memory.max\nread / memory.high\nhelp\n", 42));
	CHECK(reply(fd, buf, sizeof(buf), 5000) > 0 && !strcmp(buf, "ok 4\nmax\n"));
	CHECK(reply(fd, buf, sizeof(buf), 5000) > 0 && !strcmp(buf, "ok 4\nmax\n"));
	CHECK(reply(fd, buf, sizeof(buf), 5000) > 0 && !strncmp(buf, "ok ", 3));
	/* Garbage: every line an answer, nothing changed. */
	long groups = read_key(mcg_group_root(), "cgroup.stat", "nr_descendants");
	char junk[3000];
	unsigned seed = 12345;
	int lines = 0;
	for (size_t i = 0; i < sizeof(junk); i++) {
		seed = seed * 1103515245 + 12345;
		junk[i] = (char)(seed >> 16);
		lines += junk[i] == '\n';
	}
	junk[sizeof(junk) - 1] = '\n';
	lines++;
	CHECK(unix_send_all(fd, junk, sizeof(junk)));
	int errors = 0, oks = 0;
	for (int i = 0; i < lines; i++) {
		long n = reply(fd, buf, sizeof(buf), 5000);
		if (n <= 0)
			break;
		errors += !strncmp(buf, "error ", 6);
		oks += !strncmp(buf, "ok ", 3);
	}
	CHECK_EQ(errors, lines);
	CHECK_EQ(oks, 0);
	CHECK_EQ(read_key(mcg_group_root(), "cgroup.stat", "nr_descendants"), groups);
	/* Overlong: one E2BIG, then the connection serves on. */
	static char big[10000];
	memset(big, 'x', sizeof(big));
	CHECK(unix_send_all(fd, big, sizeof(big)));
	CHECK(unix_send_all(fd, "\nread / memory.max\n", 19));
	CHECK(reply(fd, buf, sizeof(buf), 5000) > 0 &&
	      !strcmp(buf,
	              "error E2BIG Argument list too long: a request is at most 4095 bytes\n"));
	CHECK(reply(fd, buf, sizeof(buf), 5000) > 0 && !strcmp(buf, "ok 4\nmax\n"));
	close(fd);
	/* A last line without its newline, then the end of the stream. */
	fd = unix_dial(path);
	CHECK(unix_send_all(fd, "read / memory.max", 17));
	shutdown(fd, SHUT_WR);
	CHECK(reply(fd, buf, sizeof(buf), 5000) > 0 && !strcmp(buf, "ok 4\nmax\n"));
	CHECK_EQ(reply(fd, buf, sizeof(buf), 5000), 0); /* then closed */
	close(fd);
}

static void test_half_line_times_out(void)
{
	int half = unix_dial(path), other = unix_dial(path);
	REQUIRE(half >= 0 && other >= 0);
	CHECK(unix_send_all(half, "read / mem", 10));
	uint64_t t0 = (uint64_t)time(NULL);
	CHECK(ask(other, "read / memory.max\n", "ok 4\nmax\n")); /* served meanwhile */
	CHECK_EQ(reply(half, buf, sizeof(buf), 5000), 0);        /* closed at the timeout */
	CHECK((uint64_t)time(NULL) - t0 <= 3);
	CHECK_EQ(reply(other, buf, sizeof(buf), 5000), 0); /* idle as long: closed too */
	close(half);
	close(other);
	other = unix_dial(path);
	CHECK(ask(other, "read / memory.max\n", "ok 4\nmax\n"));
	close(other);
}

static void test_hundred_clients(void)
{
	int fds[100], ok = 0, busy = 0;
	for (int i = 0; i < 100; i++) {
		fds[i] = unix_dial(path);
		CHECK(fds[i] >= 0);
		if (fds[i] >= 0)
			unix_send_all(fds[i], "read / memory.max\n", 18);
	}
	for (int i = 0; i < 100; i++) {
		if (fds[i] < 0 || reply(fds[i], buf, sizeof(buf), 5000) <= 0)
			continue;
		ok += !strcmp(buf, "ok 4\nmax\n");
		busy += !strncmp(buf, "error EBUSY ", 12);
	}
	/* 64 slots; a client closed just before may still hold one until the
	 * server reads its end. */
	CHECK(ok >= 60 && ok <= 64);
	CHECK(busy >= 36);
	CHECK_EQ(ok + busy, 100);
	for (int i = 0; i < 100; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	int fd = unix_dial(path);
	bool served = false;
	for (int tries = 0; tries < 50 && !served; tries++) { /* the slots free as it sees closes */
		served = ask(fd, "read / memory.max\n", "ok 4\nmax\n");
		if (!served) {
			close(fd);
			usleep(20000);
			fd = unix_dial(path);
		}
	}
	CHECK(served);
	close(fd);
}

static void test_clients_that_never_read(void)
{
	int lazy[10];
	static char reqs[200 * 8];
	for (int i = 0; i < 200; i++)
		memcpy(reqs + i * 8, "metrics\n", 8);
	for (int i = 0; i < 10; i++) {
		lazy[i] = unix_dial(path);
		CHECK(lazy[i] >= 0);
		fcntl(lazy[i], F_SETFL, O_NONBLOCK);
		ssize_t n = send(lazy[i], reqs, sizeof(reqs), MSG_NOSIGNAL);
		CHECK(n > 0);
	}
	/* The process keeps working: nothing here waits for those clients. */
	uint64_t t0 = (uint64_t)time(NULL);
	for (int round = 0; round < 20; round++) {
		mcg_cache_t *c = mcg_cache_create("lazy-test", 64 + round, 0, 0, NULL);
		mcg_group_t *g;
		CHECK_EQ(mcg_group_create(NULL, "lazy", &g), 0);
		void *p[1000];
		for (int i = 0; i < 1000; i++)
			p[i] = mcg_malloc_account(100, g);
		for (int i = 0; i < 1000; i++)
			mcg_free(p[i]);
		void *o = mcg_cache_alloc(c);
		mcg_cache_free(c, o);
		CHECK_EQ(mcg_cache_destroy(c), 0);
		CHECK_EQ(mcg_group_remove(g), 0);
		mcg_group_put(g);
	}
	CHECK((uint64_t)time(NULL) - t0 <= 5 * test_slowdown());
	int fd = unix_dial(path);
	CHECK(ask(fd, "read / memory.max\n", "ok 4\nmax\n")); /* and the socket serves */
	close(fd);
	for (int i = 0; i < 10; i++)
		close(lazy[i]);
}

/* Forking tests do not run under TSan (see the banner). */
static bool can_fork(void)
{
	if (mcg_config_tsan)
		fprintf(stderr, "  skipped: forks in a TSan build\n");
	return !mcg_config_tsan;
}

static void test_other_uid_refused(void)
{
	if (!can_fork())
		return;
	if (geteuid() != 0) {
		fprintf(stderr, "  skipped: needs root to be another user\n");
		return;
	}
	/* Open the directory and the socket, so only SO_PEERCRED stands in the way. */
	CHECK_EQ(chmod(dir, 0755), 0);
	CHECK_EQ(chmod(path, 0666), 0);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(2);
		int fd = unix_dial(path);
		if (fd < 0)
			_exit(3);
		long n = reply(fd, buf, sizeof(buf), 5000);
		_exit(n > 0 && !strncmp(buf, "error EACCES Permission denied: uid 65534 is neither",
		                        52)
		              ? 0
		              : 4);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(chmod(dir, 0700), 0);
	CHECK_EQ(chmod(path, 0600), 0);
}

static volatile int asking;

static void *asker(void *arg)
{
	int fd = unix_dial(path);
	char b[4096];
	while (__atomic_load_n(&asking, __ATOMIC_ACQUIRE)) {
		if (!unix_send_all(fd, "groups\n", 7) || reply(fd, b, sizeof(b), 5000) <= 0) {
			close(fd);
			fd = unix_dial(path);
		}
	}
	close(fd);
	return arg;
}

static void test_fork(void)
{
	if (!can_fork())
		return;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		char p[128];
		int bad = 0;
		bad |= mcg_control_path(p, sizeof(p)) != -ENOENT;
		int fd = unix_dial(path); /* the parent's socket: still the parent's */
		char want[32];
		snprintf(want, sizeof(want), "ok ");
		bad |= (!ask(fd, "info\n", want)) << 1;
		snprintf(want, sizeof(want), "pid %ld\n", (long)getppid());
		bad |= (strstr(buf, want) == NULL) << 2;
		close(fd);
		{
			char mine[128];
			snprintf(mine, sizeof(mine), "%s/child.sock", dir);
			bad |= (mcg_control_start(mine) != 0) << 3;
			fd = unix_dial(mine);
			snprintf(want, sizeof(want), "pid %ld\n", (long)getpid());
			bad |= (!ask(fd, "info\n", "ok ") || !strstr(buf, want)) << 4;
			close(fd);
			mcg_control_stop();
			bad |= (access(mine, F_OK) == 0) << 5;
		}
		exit(bad); /* not _exit: what the child ran is written out (coverage) */
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	struct stat sb;
	CHECK(lstat(path, &sb) == 0); /* the child left the parent's socket alone */
	int fd = unix_dial(path);
	char want[32];
	snprintf(want, sizeof(want), "ok ");
	CHECK(ask(fd, "info\n", want));
	snprintf(want, sizeof(want), "pid %ld\n", (long)getpid());
	CHECK(strstr(buf, want) != NULL);
	close(fd);

	/* Forks while a thread keeps the server busy: no deadlock, no server in the children. */
	asking = 1;
	pthread_t t;
	pthread_create(&t, NULL, asker, NULL);
	int failures = 0;
	for (int i = 0; i < 20; i++) {
		fflush(NULL);
		pid = fork();
		if (pid == 0) {
			char p[128];
			_exit(mcg_control_path(p, sizeof(p)) == -ENOENT ? 0 : 1);
		}
		waitpid(pid, &st, 0);
		failures += !WIFEXITED(st) || WEXITSTATUS(st);
	}
	__atomic_store_n(&asking, 0, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	CHECK_EQ(failures, 0);
}

static void test_program_closes_all_fds(void)
{
	if (!can_fork())
		return;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		char mine[128];
		snprintf(mine, sizeof(mine), "%s/closer.sock", dir);
		int bad = mcg_control_start(mine) != 0;
		int fd = unix_dial(mine);
		bad |= (!ask(fd, "info\n", "ok ")) << 1;
		for (int i = 3; i < 4096; i++) /* what a daemon does at start */
			close(i);
		usleep(200000); /* the server notices */
		/* A fork now: the child has no server, and none of its descriptors to close. */
		fflush(NULL);
		pid_t g = fork_seen(); /* the atfork handlers counted (fork_seen.h) */
		if (g == 0) {
			char p2[128];
			exit(mcg_control_path(p2, sizeof(p2)) == -ENOENT ? 0 : 1);
		}
		int gs = 0;
		bad |= (g < 0 || waitpid(g, &gs, 0) != g || !WIFEXITED(gs) || WEXITSTATUS(gs)) << 5;
		int keep = open("/dev/null", O_RDONLY); /* a file of the program's own */
		mcg_control_stop();
		bad |= (fcntl(keep, F_GETFD) < 0) << 2; /* not closed by the server */
		bad |= (mcg_control_start(mine) != 0) << 3;
		fd = unix_dial(mine);
		bad |= (!ask(fd, "read / memory.max\n", "ok 4\nmax\n")) << 4;
		close(fd);
		mcg_control_stop();
		exit(bad); /* not _exit: what the child ran is written out (coverage) */
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
}

int main(void)
{
	strcpy(dir, "/tmp/memcg-test-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/s.sock", dir);
	mcg_option_set("control_timeout_ms", 500);
	RUN(test_start_stop);
	RUN(test_large_reply);
	RUN(test_reply_in_pieces);
	RUN(test_framing);
	RUN(test_half_line_times_out);
	RUN(test_hundred_clients);
	RUN(test_clients_that_never_read);
	RUN(test_other_uid_refused);
	RUN(test_fork);
	RUN(test_program_closes_all_fds);
	mcg_control_stop();
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	return test_done();
}
