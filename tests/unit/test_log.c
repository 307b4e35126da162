/* SPDX-License-Identifier: MIT */
/*
 * test_log.c - messages and the loud death (base/log.c): mcg_log's prefix
 * and newline on stderr, mcg_fdprintf's bytes and its -errno, a message
 * longer than the stack buffer cut to fit, a write interrupted by a signal
 * and resumed, and mcg_die()'s "FATAL file:line" and abort.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "test.h"

/* Run @fn with stderr going to a pipe; what it wrote into @out. */
static void capture_stderr(void (*fn)(void), char *out, size_t len)
{
	int p[2];
	REQUIRE(pipe(p) == 0);
	int saved = dup(2);
	dup2(p[1], 2);
	close(p[1]);
	fn();
	dup2(saved, 2);
	close(saved);
	ssize_t n = read(p[0], out, len - 1);
	out[n > 0 ? n : 0] = '\0';
	close(p[0]);
}

static void say_hello(void) { mcg_log("hello %d", 42); }

static void test_log_prefix_newline(void)
{
	char out[256];
	capture_stderr(say_hello, out, sizeof(out));
	CHECK(!strcmp(out, "memcg: hello 42\n"));
}

static void test_fdprintf(void)
{
	int p[2];
	REQUIRE(pipe(p) == 0);
	CHECK_EQ(mcg_fdprintf(p[1], "%s=%ld", "x", 7L), 3);
	char buf[16] = "";
	CHECK_EQ(read(p[0], buf, sizeof(buf)), 3);
	CHECK(!memcmp(buf, "x=7", 3));
	close(p[0]);
	close(p[1]);
	CHECK_EQ(mcg_fdprintf(p[1], "closed"), -EBADF);
	CHECK_EQ(mcg_fdprintf(-1, "nowhere"), -EBADF);
}

static void test_long_message_cut(void)
{
	char big[3000];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	int p[2];
	REQUIRE(pipe(p) == 0);
	/* the stack buffer is 1024 bytes: 1022 of text, room for a newline */
	CHECK_EQ(mcg_fdprintf(p[1], "%s", big), 1022);
	char buf[2048];
	CHECK_EQ(read(p[0], buf, sizeof(buf)), 1022);
	close(p[0]);
	close(p[1]);
}

static int slow_reader_fd;
static void *slow_reader(void *arg)
{
	usleep(200 * 1000);
	char buf[65536];
	size_t total = 0;
	ssize_t n;
	while ((n = read(slow_reader_fd, buf, sizeof(buf))) > 0)
		total += (size_t)n;
	return (void *)total;
}

static volatile int alarms;
static void on_alarm(int sig) { alarms++; }

/* The pipe is full: the write blocks, a signal interrupts it (EINTR, no
 * byte written), the loop writes again once the reader drains the pipe. */
static void test_write_resumes_after_signal(void)
{
	int p[2];
	REQUIRE(pipe(p) == 0);
	int size = fcntl(p[1], F_GETPIPE_SZ);
	REQUIRE(size > 0);
	char *fill = calloc(1, (size_t)size);
	CHECK_EQ(write(p[1], fill, (size_t)size), size);
	free(fill);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm; /* no SA_RESTART: the write returns EINTR */
	sigaction(SIGALRM, &sa, NULL);
	alarms = 0;
	struct itimerval it = {.it_value = {0, 50 * 1000}};
	setitimer(ITIMER_REAL, &it, NULL);
	slow_reader_fd = p[0];
	pthread_t t;
	pthread_create(&t, NULL, slow_reader, NULL);
	CHECK_EQ(mcg_fdprintf(p[1], "after %s", "the signal"), 16);
	close(p[1]);
	void *total;
	pthread_join(t, &total);
	CHECK_EQ((size_t)total, (size_t)size + 16);
	CHECK_EQ(alarms, 1);
	close(p[0]);
	signal(SIGALRM, SIG_DFL);
}

static void test_die_aborts(void)
{
	int p[2];
	REQUIRE(pipe(p) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 2);
		test_child_abort_exits();
		mcg_die("the end of %s", "it");
	}
	close(p[1]);
	char out[512];
	ssize_t n = read(p[0], out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = '\0';
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	CHECK(test_aborted(st));
	CHECK(!strncmp(out, "memcg: FATAL ", 13) && strstr(out, "test_log.c:") &&
	      strstr(out, ": the end of it\n"));
}

int main(void)
{
	RUN(test_log_prefix_newline);
	RUN(test_fdprintf);
	RUN(test_long_message_cut);
	RUN(test_write_resumes_after_signal);
	RUN(test_die_aborts);
	return test_done();
}
