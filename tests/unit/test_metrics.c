/* SPDX-License-Identifier: MIT */
/*
 * test_metrics.c - /metrics over HTTP (iface/metrics.c, libmicrohttpd):
 * malformed addresses refused; port 0 picks a free port on 127.0.0.1; GET
 * /metrics answers 200 with the exposition's content type and this
 * process's groups (a group created after the start shows at the next
 * scrape); HEAD too; other paths 404, other methods 405; a second start
 * -EALREADY, a taken port -EADDRINUSE; stop closes the port; a forked
 * child serves nothing.  Plain HTTP/1.0 requests over a socket.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "memcg/control.h"
#include "memcg/debug.h"
#include "memcg/group.h"
#include "test.h"
#include "fork_seen.h"
#include "held.h"
#include "iface/metrics.h"

static char resp[1 << 20];

/* @req to 127.0.0.1:@port; the whole response into resp.  Return its length or -1. */
static long http(int port, const char *req)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	size_t got = 0;
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) {
		close(fd);
		return -1;
	}
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 5000) <= 0)
			break;
		ssize_t n = recv(fd, resp + got, sizeof(resp) - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	resp[got] = '\0';
	return (long)got;
}

static void test_bad_addresses(void)
{
	static const char *const bad[] = {"",         "127.0.0.1",    "127.0.0.1:",
	                                  "1.2.3:80", "localhost:80", "127.0.0.1:65536",
	                                  "[::1:80",  "::1:80",       "127.0.0.1:-1",
	                                  "[::1]80",  "127.0.0.1:80x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (mcg_metrics_start(bad[i]) != -EINVAL)
			CHECK(!fprintf(stderr, "accepted '%s'\n", bad[i]));
	unsetenv("MCG_METRICS_LISTEN");
	CHECK_EQ(mcg_metrics_start(NULL), -EINVAL);
	CHECK_EQ(mcg_metrics_port(), -ENOENT);
}

/* Hosts longer than any address, a port past a long's range, a bracketed
 * host that is no IPv6 address: each refused, nothing served. */
static void test_bad_addresses_long(void)
{
	char longv4[128], longv6[128];
	char name[80];
	memset(name, '1', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(longv4, sizeof(longv4), "%s:80", name);
	snprintf(longv6, sizeof(longv6), "[%s]:80", name);
	const char *bad[] = {longv4, longv6, "99999999999999999999999", "[zz]:80", "[1.2.3.4]:80"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (mcg_metrics_start(bad[i]) != -EINVAL)
			CHECK(!fprintf(stderr, "accepted '%s'\n", bad[i]));
	CHECK_EQ(mcg_metrics_port(), -ENOENT);
}

static void test_scrape(void)
{
	REQUIRE(mcg_metrics_start("127.0.0.1:0") == 0);
	int port = mcg_metrics_port();
	CHECK(port > 0 && port < 65536);
	CHECK_EQ(mcg_metrics_start("127.0.0.1:0"), -EALREADY);
	char taken[32];
	snprintf(taken, sizeof(taken), "%d", port); /* "PORT" alone: 127.0.0.1 */
	mcg_metrics_stop();
	CHECK_EQ(mcg_metrics_start(taken), 0); /* the same port, just freed */
	CHECK_EQ(mcg_metrics_port(), port);

	mcg_group_t *g;
	REQUIRE(mcg_group_create(NULL, "scraped", &g) == 0);
	mcg_group_write(g, "memory.max", "5M");
	long n = http(port, "GET /metrics HTTP/1.0\r\n\r\n");
	CHECK(n > 0);
	CHECK(!strncmp(resp, "HTTP/1.0 200", 12) || !strncmp(resp, "HTTP/1.1 200", 12));
	CHECK(strstr(resp, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n") !=
	      NULL);
	CHECK(strstr(resp, "\r\n\r\n# HELP memcg_groups ") != NULL);
	CHECK(strstr(resp, "\nmemcg_memory_max_bytes{group=\"/scraped\"} 5242880\n") != NULL);
	CHECK(strstr(resp, "\nmemcg_slab_objects{cache=\"kmalloc-16\",state=\"total\"} ") != NULL);

	n = http(port, "HEAD /metrics HTTP/1.0\r\n\r\n");
	CHECK(n > 0 && strstr(resp, " 200 ") && !strstr(resp, "# HELP"));
	n = http(port, "GET / HTTP/1.0\r\n\r\n");
	CHECK(n > 0 && strstr(resp, " 404 ") && strstr(resp, "the metrics are at /metrics"));
	n = http(port, "POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n");
	CHECK(n > 0 && strstr(resp, " 405 ") && strstr(resp, "\r\nAllow: GET, HEAD\r\n"));

	/* A taken port. */
	mcg_metrics_stop();
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(sa);
	CHECK(!bind(fd, (struct sockaddr *)&sa, sizeof(sa)) && !listen(fd, 1) &&
	      !getsockname(fd, (struct sockaddr *)&sa, &len));
	snprintf(taken, sizeof(taken), "127.0.0.1:%d", ntohs(sa.sin_port));
	CHECK_EQ(mcg_metrics_start(taken), -EADDRINUSE);
	close(fd);
	CHECK_EQ(http(port, "GET /metrics HTTP/1.0\r\n\r\n"), -1); /* stopped: refused */

	mcg_group_remove(g);
	mcg_group_put(g);
}

static void test_fork_and_v6(void)
{
	REQUIRE(mcg_metrics_start("127.0.0.1:0") == 0);
	int port = mcg_metrics_port();
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		_exit(mcg_metrics_port() == -ENOENT ? 0 : 1);
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(http(port, "GET /metrics HTTP/1.0\r\n\r\n") > 0 && strstr(resp, " 200 "));
	mcg_metrics_stop();
	/* IPv6 loopback, where the machine has it. */
	int err = mcg_metrics_start("[::1]:0");
	CHECK(err == 0 || err == -EADDRNOTAVAIL || err == -EAFNOSUPPORT);
	if (!err) {
		CHECK(mcg_metrics_port() > 0);
		mcg_metrics_stop();
	}
}

/* A scrape that cannot get memory (every allocation through the fault
 * point fails): 500 and a line saying so, nothing kept; the next scrape
 * is whole.  Each scrape gives back all it took. */
static void test_scrape_without_memory(void)
{
	REQUIRE(mcg_metrics_start("127.0.0.1:0") == 0);
	int port = mcg_metrics_port();
	CHECK(http(port, "GET /metrics HTTP/1.0\r\n\r\n") > 0 && strstr(resp, " 200 "));
	size_t held = held_kmalloc_objects();
	mcg_fault_inject(1, 1);
	long n = http(port, "GET /metrics HTTP/1.0\r\n\r\n");
	unsigned long failed = mcg_fault_failed();
	mcg_fault_inject(0, 0);
	CHECK(n > 0 && strstr(resp, " 500 ") && strstr(resp, "\r\n\r\nout of memory\n"));
	CHECK(failed >= 1);
	CHECK_EQ(held_kmalloc_objects(), held);
	for (int i = 0; i < 3; i++) {
		CHECK(http(port, "GET /metrics HTTP/1.0\r\n\r\n") > 0 && strstr(resp, " 200 ") &&
		      strstr(resp, "# HELP memcg_groups "));
		CHECK_EQ(held_kmalloc_objects(), held);
	}
	mcg_metrics_stop();
}

/* No descriptor left for the listening socket: EMFILE, nothing served,
 * no descriptor kept; with the limit back a start works. */
static void test_no_descriptor(void)
{
	struct rlimit saved;
	REQUIRE(getrlimit(RLIMIT_NOFILE, &saved) == 0);
	int fds = held_fds();
	int low = fcntl(0, F_DUPFD, 0);
	REQUIRE(low > 0);
	close(low);
	struct rlimit tight = {(rlim_t)low, saved.rlim_max};
	REQUIRE(setrlimit(RLIMIT_NOFILE, &tight) == 0);
	int err = mcg_metrics_start("127.0.0.1:0");
	setrlimit(RLIMIT_NOFILE, &saved);
	CHECK_EQ(err, -EMFILE);
	CHECK_EQ(mcg_metrics_port(), -ENOENT);
	CHECK_EQ(held_fds(), fds);
	REQUIRE(mcg_metrics_start("127.0.0.1:0") == 0);
	CHECK(mcg_metrics_port() > 0);
	mcg_metrics_stop();
}

/* A child made past libc's fork (no atfork handler ran): told apart by its
 * pid - no port, no address, a stop that stops nothing; the parent's
 * daemon serves on. */
static void test_child_without_handlers(void)
{
	REQUIRE(mcg_metrics_start("127.0.0.1:0") == 0);
	int port = mcg_metrics_port();
	fflush(NULL);
	pid_t pid = fork_raw();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		char a[64];
		int bad = (mcg_metrics_port() != -ENOENT) << 0;
		bad |= (mcg_metrics_address(a, sizeof(a)) != -ENOENT) << 1;
		mcg_metrics_stop(); /* not its daemon: nothing */
		fork_raw_exit(bad);
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(mcg_metrics_port(), port);
	char a[64], want[64];
	snprintf(want, sizeof(want), "127.0.0.1:%d", port);
	CHECK_EQ(mcg_metrics_address(a, sizeof(a)), 0);
	CHECK(!strcmp(a, want));
	CHECK(http(port, "GET /metrics HTTP/1.0\r\n\r\n") > 0 && strstr(resp, " 200 "));
	mcg_metrics_stop();
	CHECK_EQ(mcg_metrics_port(), -ENOENT);
}

int main(void)
{
	RUN(test_bad_addresses);
	RUN(test_bad_addresses_long);
	RUN(test_scrape);
	RUN(test_fork_and_v6);
	RUN(test_scrape_without_memory);
	RUN(test_no_descriptor);
	RUN(test_child_without_handlers);
	return test_done();
}
