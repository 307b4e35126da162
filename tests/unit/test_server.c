/* SPDX-License-Identifier: MIT */
/*
 * test_server.c - the control server's start-up failures (iface/server.c;
 * the served protocol is test_server_mt's): a path longer than a socket
 * path may be, an empty one, one in a directory that does not exist, one
 * whose directory is not writable; each fails cleanly, leaves no file and
 * no server, and a start afterwards works.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memcg/control.h"
#include "test.h"

static char dir[64];

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

/* Descriptors this process has open (/proc/self/fd, less the one reading it). */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;
}

/* A start that fails leaves no descriptor open (the socket, the wake
 * eventfd), however often it is tried. */
static void test_failures_close_fds(void)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/missing/sock", dir);
	int before = open_fds();
	REQUIRE(before > 0);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(mcg_control_start(path), -ENOENT);
	CHECK_EQ(open_fds(), before);
}

/* The first server of the process starts with every client slot free:
 * stopping it closes no descriptor it did not accept (here fd 0). */
static void test_first_start_slots_free(void)
{
	if (fcntl(0, F_GETFD) < 0)
		REQUIRE(open("/dev/null", O_RDONLY) == 0);
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

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/memcg-test-server-%d", (int)getpid());
	mkdir(dir, 0700);
	RUN(test_first_start_slots_free); /* first: the first start */
	RUN(test_start_failures);
	RUN(test_failures_close_fds);
	RUN(test_thread_named);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
	return test_done();
}
