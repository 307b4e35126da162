/* SPDX-License-Identifier: MIT */
/*
 * test_sysfiles.c - the small kernel files global pressure reads
 * (reclaim/sysfiles.c): paths too long for their buffer, whole reads
 * (a read interrupted by a signal is resumed; a directory is an error),
 * limits ("max", bytes, garbage, out of range, missing), directories.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "reclaim/sysfiles.h"
#include "test.h"

static char dir[64];

static void put(const char *name, const char *text)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static int limit_of(const char *name, size_t *bytes)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return mcg_sysfile_read_limit(p, bytes);
}

static void test_paths(void)
{
	char buf[16];
	CHECK_EQ(mcg_sysfile_path(buf, sizeof(buf), "/r", "a/b"), 0);
	CHECK(!strcmp(buf, "/r/a/b"));
	CHECK_EQ(mcg_sysfile_path(buf, sizeof(buf), "/root", "0123456789"), -ENAMETOOLONG);
	CHECK_EQ(mcg_sysfile_path(buf, 7, "/r", "abcd"), -ENAMETOOLONG); /* 7 with the NUL */
	CHECK_EQ(mcg_sysfile_path(buf, 8, "/r", "abcd"), 0);
	CHECK_EQ(mcg_sysfile_fmt(buf, 4, "%s", "long"), 4); /* cut quietly */
	CHECK(!strcmp(buf, "lon"));
}

static void test_limits(void)
{
	size_t b = 7;
	put("max", "max\n");
	CHECK_EQ(limit_of("max", &b), 0);
	CHECK_EQ(b, SIZE_MAX);
	put("bytes", "1048576\n");
	CHECK_EQ(limit_of("bytes", &b), 0);
	CHECK_EQ(b, 1048576);
	put("bare", "4096");
	CHECK_EQ(limit_of("bare", &b), 0);
	CHECK_EQ(b, 4096);
	b = 7;
	put("garbage", "12x\n");
	CHECK_EQ(limit_of("garbage", &b), -EINVAL);
	put("empty", "");
	CHECK_EQ(limit_of("empty", &b), -EINVAL);
	put("huge", "99999999999999999999999\n");
	CHECK_EQ(limit_of("huge", &b), -EINVAL);
	CHECK_EQ(limit_of("missing", &b), -ENOENT);
	CHECK_EQ(b, 7); /* untouched on every error */
	char p[128];
	snprintf(p, sizeof(p), "%s", dir);
	CHECK_EQ(mcg_sysfile_read_limit(p, &b), -EISDIR); /* opens, then fails to read */
}

static void test_is_dir(void)
{
	char p[128];
	CHECK(mcg_sysfile_is_dir(dir));
	snprintf(p, sizeof(p), "%s/max", dir);
	CHECK(!mcg_sysfile_is_dir(p));
	snprintf(p, sizeof(p), "%s/nothing", dir);
	CHECK(!mcg_sysfile_is_dir(p));
}

static char fifo[128];
static void *late_writer(void *arg)
{
	int fd = open(fifo, O_WRONLY);
	usleep(150 * 1000); /* the reader waits in read(); the signal comes meanwhile */
	CHECK_EQ(write(fd, "some avg10=1.00\n", 16), 16);
	close(fd);
	return arg;
}

static void on_alarm(int sig) { (void)sig; }

static void test_read_resumes_after_signal(void)
{
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	REQUIRE(mkfifo(fifo, 0600) == 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm; /* no SA_RESTART: read() returns EINTR */
	sigaction(SIGALRM, &sa, NULL);
	pthread_t t;
	pthread_create(&t, NULL, late_writer, NULL);
	struct itimerval it = {.it_value = {0, 50 * 1000}};
	setitimer(ITIMER_REAL, &it, NULL);
	char buf[64];
	CHECK_EQ(mcg_sysfile_read(fifo, buf, sizeof(buf)), 16);
	CHECK(!strcmp(buf, "some avg10=1.00\n"));
	pthread_join(t, NULL);
	signal(SIGALRM, SIG_DFL);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/memcg-test-sysfiles-%d", (int)getpid());
	mkdir(dir, 0700);
	RUN(test_paths);
	RUN(test_limits);
	RUN(test_is_dir);
	RUN(test_read_resumes_after_signal);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
	return test_done();
}
