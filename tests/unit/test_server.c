/* SPDX-License-Identifier: MIT */
/*
 * test_server.c - the control server's start-up failures (iface/server.c;
 * the served protocol is test_server_mt's): a path longer than a socket
 * path may be, an empty one, one in a directory that does not exist, one
 * whose directory is not writable; each fails cleanly, leaves no file and
 * no server, and a start afterwards works.  Also mcg_control_path()'s bad
 * arguments, an overlong request cut off by the end of its stream, a
 * request that gets no memory even for its error line, and a server under
 * a descriptor limit below its floor.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memcg/control.h"
#include "memcg/debug.h"
#include "test.h"
#include "unix_client.h"
#include "fork_seen.h"
#include "held.h"
#include "iface/server.h"

static char dir[64];

/* Memory faults in the first start (the clients' table, the thread): each
 * fails cleanly - no server, no socket file - and the next start works. */
static void test_start_faults(void)
{
	char path[128], buf[256];
	snprintf(path, sizeof(path), "%s/sock-fault", dir);
	unsigned long nth;
	int failed = 0;
	for (nth = 1; nth < 100; nth++) {
		mcg_fault_inject(nth, 0);
		int err = mcg_control_start(path);
		unsigned long hit = mcg_fault_failed();
		mcg_fault_inject(0, 0);
		if (err) {
			failed++;
			CHECK(err == -ENOMEM || err == -EAGAIN);
			CHECK(access(path, F_OK) != 0);
			CHECK_EQ(mcg_control_path(buf, sizeof(buf)), -ENOENT);
		} else {
			CHECK_EQ(mcg_control_path(buf, sizeof(buf)), 0);
			mcg_control_stop();
			CHECK(access(path, F_OK) != 0);
		}
		if (!hit)
			break;
	}
	CHECK(nth < 100);
	CHECK(failed >= 2); /* the table and the thread */
}

static void test_start_failures(void)
{
	char path[512];
	memset(path, 'x', 200);
	path[0] = '/';
	path[200] = '\0';
	CHECK_EQ(mcg_control_start(path), -ENAMETOOLONG);
	CHECK_EQ(mcg_control_start(""), -ENAMETOOLONG);
	snprintf(path, sizeof(path), "%s/missing/sock", dir);
	CHECK_EQ(mcg_control_start(path), -ENOENT);
	CHECK(access(path, F_OK) != 0);
	char ro[128];
	snprintf(ro, sizeof(ro), "%s/ro", dir);
	REQUIRE(mkdir(ro, 0500) == 0);
	snprintf(path, sizeof(path), "%s/sock", ro);
	int err = mcg_control_start(path);
	if (geteuid() != 0) /* root writes anywhere */
		CHECK_EQ(err, -EACCES);
	else if (err == 0)
		mcg_control_stop();
	char buf[256];
	CHECK_EQ(mcg_control_path(buf, sizeof(buf)), -ENOENT); /* not serving */
	snprintf(path, sizeof(path), "%s/sock", dir);
	REQUIRE(mcg_control_start(path) == 0);
	CHECK_EQ(mcg_control_path(buf, sizeof(buf)), 0);
	CHECK(!strcmp(buf, path));
	CHECK_EQ(mcg_control_path(buf, 5), -ERANGE);
	mcg_control_stop();
	CHECK(access(path, F_OK) != 0); /* the socket file goes with the server */
	rmdir(ro);
}

/* A start that fails leaves no descriptor open (the socket, the wake
 * eventfd), however often it is tried. */
static void test_failures_close_fds(void)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/missing/sock", dir);
	int before = held_fds();
	REQUIRE(before > 0);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(mcg_control_start(path), -ENOENT);
	CHECK_EQ(held_fds(), before);
}

/* The process's first servers (test_start_faults) start with every client
 * slot free: stopping them closed no descriptor they did not accept - fd
 * 0, open since main() began - and neither does one more. */
static void test_first_servers_kept_stdin(void)
{
	CHECK(fcntl(0, F_GETFD) >= 0);
	char path[128];
	snprintf(path, sizeof(path), "%s/first", dir);
	REQUIRE(mcg_control_start(path) == 0);
	mcg_control_stop();
	CHECK(fcntl(0, F_GETFD) >= 0);
}

/* The server's thread is named memcg-control (ps, top and gdb show it). */
static void test_thread_named(void)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/named", dir);
	REQUIRE(mcg_control_start(path) == 0);
	int named = 0;
	DIR *d = opendir("/proc/self/task");
	REQUIRE(d);
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		char f[300], comm[32] = "";
		snprintf(f, sizeof(f), "/proc/self/task/%s/comm", e->d_name);
		FILE *fp = fopen(f, "r");
		if (fp) {
			if (fgets(comm, sizeof(comm), fp))
				named += !strcmp(comm, "memcg-control\n");
			fclose(fp);
		}
	}
	closedir(d);
	mcg_control_stop();
	CHECK_EQ(named, 1);
}

/* Everything @fd sends until its end (or 5 s of silence) into @b; its length. */
static size_t read_to_end(int fd, char *b, size_t len)
{
	size_t got = 0;
	while (got + 1 < len) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 5000) <= 0)
			break;
		ssize_t n = recv(fd, b + got, len - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	b[got] = '\0';
	return got;
}

/* mcg_control_path()'s bad arguments: -EINVAL, the buffer untouched. */
static void test_path_bad_arguments(void)
{
	char path[128], buf[8] = "keep";
	snprintf(path, sizeof(path), "%s/sock-args", dir);
	REQUIRE(mcg_control_start(path) == 0);
	CHECK_EQ(mcg_control_path(NULL, 100), -EINVAL);
	CHECK_EQ(mcg_control_path(buf, 0), -EINVAL);
	CHECK(!strcmp(buf, "keep"));
	mcg_control_stop();
	CHECK_EQ(mcg_control_path(NULL, 100), -EINVAL);
}

/* An overlong request whose stream then ends without a newline: one E2BIG,
 * the rest of it discarded, and the connection closed. */
static void test_overlong_then_end(void)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/sock-long", dir);
	REQUIRE(mcg_control_start(path) == 0);
	int fd = unix_dial(path);
	REQUIRE(fd >= 0);
	static char big[6000]; /* past the 4096-byte line buffer, no newline */
	memset(big, 'x', sizeof(big));
	CHECK(unix_send_all(fd, big, sizeof(big)));
	shutdown(fd, SHUT_WR);
	static char got[4096];
	read_to_end(fd, got, sizeof(got));
	CHECK(!strcmp(got,
	              "error E2BIG Argument list too long: a request is at most 4095 bytes\n"));
	close(fd);
	mcg_control_stop();
}

/*
 * No memory at all while a connection has no reply buffer yet (every
 * allocation fails): a request, and an overlong line, each get the shortest
 * error line and the connection closes - never silence, which would leave
 * the client waiting or taking the next reply for this one.  With memory
 * back, a new connection is served.
 */
static void test_no_memory_for_any_reply(void)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/sock-nomem", dir);
	REQUIRE(mcg_control_start(path) == 0);
	static char big[6000]; /* past the 4096-byte line buffer */
	memset(big, 'x', sizeof(big));
	static const struct {
		const char *data;
		size_t len;
	} req[] = {{"read / memory.max\n", 18}, {big, sizeof(big)}};
	for (size_t i = 0; i < 2; i++) {
		int fd = unix_dial(path);
		REQUIRE(fd >= 0);
		mcg_fault_inject(1, 1); /* the Nth allocation and every one after */
		CHECK(unix_send_all(fd, req[i].data, req[i].len));
		static char got[4096];
		read_to_end(fd, got, sizeof(got)); /* the server closes it */
		unsigned long failed = mcg_fault_failed();
		mcg_fault_inject(0, 0);
		CHECK(failed >= 1);
		CHECK(!strcmp(got, "error ENOMEM out of memory\n"));
		close(fd);
	}
	int fd = unix_dial(path);
	REQUIRE(fd >= 0);
	CHECK(unix_send_all(fd, "read / memory.max\n", 18));
	shutdown(fd, SHUT_WR);
	static char got[256];
	read_to_end(fd, got, sizeof(got));
	CHECK(!strcmp(got, "ok 4\nmax\n"));
	close(fd);
	mcg_control_stop();
}

/* Fewer descriptors allowed than the server's floor (1000): it keeps the
 * numbers it got and serves all the same.  In a child: the limit is the
 * process's. */
static void test_low_descriptor_limit(void)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/sock-lowfd", dir);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct rlimit rl;
		int bad = 0;
		if (getrlimit(RLIMIT_NOFILE, &rl))
			exit(100);
		rl.rlim_cur = 64;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			exit(101);
		bad |= (mcg_control_start(path) != 0) << 0;
		int fd = unix_dial(path);
		bad |= (fd < 0 || fd >= 64) << 1;
		static char got[256];
		bad |= (fd < 0 || !unix_send_all(fd, "read / memory.max", 17)) << 2;
		if (fd >= 0)
			shutdown(fd, SHUT_WR);
		bad |= (fd < 0 || read_to_end(fd, got, sizeof(got)) != 9 ||
		        strcmp(got, "ok 4\nmax\n"))
		       << 3;
		if (fd >= 0)
			close(fd);
		mcg_control_stop();
		bad |= (access(path, F_OK) == 0) << 4;
		exit(bad); /* exit: the child's coverage is written */
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
}

/* A fork while a client is connected: the child serves nothing and closes
 * its copies of the server's descriptors; the parent's client is served on. */
static void test_fork_with_client(void)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/sock-fork", dir);
	REQUIRE(mcg_control_start(path) == 0);
	int fd = unix_dial(path);
	REQUIRE(fd >= 0);
	static char got[256];
	CHECK(unix_send_all(fd, "read / memory.max\n", 18));
	struct pollfd p = {.fd = fd, .events = POLLIN};
	CHECK(poll(&p, 1, 5000) == 1 && recv(fd, got, sizeof(got) - 1, 0) == 9);
	fflush(NULL);
	pid_t pid = fork_seen(); /* the atfork handlers counted (fork_seen.h) */
	REQUIRE(pid >= 0);
	if (pid == 0) {
		char buf[256];
		int bad = (mcg_control_path(buf, sizeof(buf)) != -ENOENT) << 0;
		bad |= (access(path, F_OK) != 0) << 1; /* the parent's socket stays */
		exit(bad);                             /* exit: the child's coverage is written */
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(unix_send_all(fd, "read / memory.max", 17));
	shutdown(fd, SHUT_WR);
	CHECK_EQ(read_to_end(fd, got, sizeof(got)), 9);
	CHECK(!strcmp(got, "ok 4\nmax\n"));
	close(fd);
	mcg_control_stop();
}

/* The lowest descriptor number free now. */
static int lowest_free_fd(void)
{
	int fd = fcntl(0, F_DUPFD, 0);
	if (fd >= 0)
		close(fd);
	return fd;
}

/*
 * No descriptor left (RLIMIT_NOFILE at the lowest free number): the start
 * fails with EMFILE at its eventfd; with room for exactly one, at its
 * socket (the eventfd given back).  Each leaves no file, no server and no
 * descriptor; with the limit back a start works.
 */
static void test_no_descriptors(void)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/sock-nofd", dir);
	struct rlimit saved;
	REQUIRE(getrlimit(RLIMIT_NOFILE, &saved) == 0);
	int fds = held_fds();
	for (int room = 0; room < 2; room++) {
		int low = lowest_free_fd();
		REQUIRE(low > 0);
		struct rlimit tight = {(rlim_t)(low + room), saved.rlim_max};
		REQUIRE(setrlimit(RLIMIT_NOFILE, &tight) == 0);
		int err = mcg_control_start(path);
		setrlimit(RLIMIT_NOFILE, &saved);
		CHECK_EQ(err, -EMFILE);
		CHECK(access(path, F_OK) != 0);
		char buf[128];
		CHECK_EQ(mcg_control_path(buf, sizeof(buf)), -ENOENT);
		CHECK_EQ(held_fds(), fds);
	}
	REQUIRE(mcg_control_start(path) == 0);
	CHECK(access(path, F_OK) == 0);
	mcg_control_stop();
	CHECK(access(path, F_OK) != 0);
}

/*
 * A child made past libc's fork (no atfork handler ran: the server's state
 * in it is the parent's): it is told apart by its pid - no server path, a
 * stop that stops nothing, and its exit leaves the parent's socket in
 * place; the parent serves on.
 */
static void test_child_without_handlers(void)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/sock-raw", dir);
	REQUIRE(mcg_control_start(path) == 0);
	fflush(NULL);
	pid_t pid = fork_raw();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		char buf[256];
		int bad = (mcg_control_path(buf, sizeof(buf)) != -ENOENT) << 0;
		mcg_control_stop(); /* not its server: nothing */
		mcg_control_exit_unlink();
		bad |= (access(path, F_OK) != 0) << 1;
		exit(bad); /* exit: the child's coverage is written, and the destructor runs */
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	CHECK(access(path, F_OK) == 0);
	char buf[256];
	CHECK_EQ(mcg_control_path(buf, sizeof(buf)), 0);
	CHECK(!strcmp(buf, path));
	int fd = unix_dial(path);
	REQUIRE(fd >= 0);
	static char got[256];
	CHECK(unix_send_all(fd, "read / memory.max", 17));
	shutdown(fd, SHUT_WR);
	CHECK_EQ(read_to_end(fd, got, sizeof(got)), 9);
	close(fd);
	mcg_control_stop();
	CHECK(access(path, F_OK) != 0);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/memcg-test-server-%d", (int)getpid());
	mkdir(dir, 0700);
	if (fcntl(0, F_GETFD) < 0 && open("/dev/null", O_RDONLY) != 0) /* fd 0: see below */
		return 1;
	RUN(test_start_faults);             /* first: the clients' table is mapped once */
	RUN(test_first_servers_kept_stdin); /* after the first starts */
	RUN(test_start_failures);
	RUN(test_path_bad_arguments);
	RUN(test_overlong_then_end);
	RUN(test_no_memory_for_any_reply);
	RUN(test_low_descriptor_limit);
	RUN(test_no_descriptors);
	RUN(test_fork_with_client);
	RUN(test_child_without_handlers);
	RUN(test_failures_close_fds);
	RUN(test_thread_named);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
	return test_done();
}
