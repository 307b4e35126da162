/* SPDX-License-Identifier: MIT */
/*
 * test_sockdir.c - where control sockets live (iface/sockdir.c): the default
 * directory with and without XDG_RUNTIME_DIR, a new directory made 0700, and
 * the refusals - a symlink, a file, another user's directory (as root), a
 * mode wider than 0700 - with nothing created; socket paths past 107 bytes;
 * and mcg_control_start(NULL) in such directories: the socket 0600 in a
 * 0700 directory, or -EACCES with no socket.
 */
#include <errno.h>
#include <limits.h>
#include <sys/stat.h>

#include "iface/sockdir.h"
#include "memcg/control.h"
#include "test.h"

static char tmp[64];

static mode_t mode_of(const char *path)
{
	struct stat st;
	return lstat(path, &st) ? (mode_t)-1 : st.st_mode;
}

static void test_default_dir(void)
{
	char buf[256], want[256];
	unsetenv("XDG_RUNTIME_DIR");
	CHECK_EQ(mcg_sockdir_default(buf, sizeof(buf)), 0);
	snprintf(want, sizeof(want), "/tmp/memcg-%ld", (long)geteuid());
	CHECK(!strcmp(buf, want));
	setenv("XDG_RUNTIME_DIR", tmp, 1);
	CHECK_EQ(mcg_sockdir_default(buf, sizeof(buf)), 0);
	snprintf(want, sizeof(want), "%s/memcg", tmp);
	CHECK(!strcmp(buf, want));
	setenv("XDG_RUNTIME_DIR", "relative/dir", 1); /* not absolute: the fallback */
	CHECK_EQ(mcg_sockdir_default(buf, sizeof(buf)), 0);
	CHECK(!strncmp(buf, "/tmp/memcg-", 11));
	setenv("XDG_RUNTIME_DIR", "/nonexistent-memcg-xdg", 1); /* missing: the fallback */
	CHECK_EQ(mcg_sockdir_default(buf, sizeof(buf)), 0);
	CHECK(!strncmp(buf, "/tmp/memcg-", 11));
	CHECK_EQ(mcg_sockdir_default(buf, 8), -ENAMETOOLONG);

	setenv("XDG_RUNTIME_DIR", tmp, 1);
	CHECK_EQ(mcg_control_default_path(1234, buf, sizeof(buf)), 0);
	snprintf(want, sizeof(want), "%s/memcg/1234.sock", tmp);
	CHECK(!strcmp(buf, want));
	CHECK_EQ(mcg_control_default_path(0, buf, sizeof(buf)), -EINVAL);
	unsetenv("XDG_RUNTIME_DIR");
}

/* mcg_control_default_path(): a NULL buffer; a runtime directory (a file,
 * not a directory: the fallback) and one whose path leaves no room for
 * the socket directory's name (-ENAMETOOLONG). */
static void test_default_path_edges(void)
{
	char buf[256];
	CHECK_EQ(mcg_control_default_path(1234, NULL, 10), -EINVAL);
	char file[PATH_MAX];
	snprintf(file, sizeof(file), "%s/a-file", tmp);
	FILE *f = fopen(file, "w");
	REQUIRE(f);
	fclose(f);
	setenv("XDG_RUNTIME_DIR", file, 1); /* not a directory: the fallback */
	CHECK_EQ(mcg_sockdir_default(buf, sizeof(buf)), 0);
	CHECK(!strncmp(buf, "/tmp/memcg-", 11));
	char deep[PATH_MAX];
	int n = snprintf(deep, sizeof(deep), "%s/", tmp);
	memset(deep + n, 'd', 250);
	deep[n + 250] = '\0';
	REQUIRE(mkdir(deep, 0700) == 0);
	setenv("XDG_RUNTIME_DIR", deep, 1);
	CHECK_EQ(mcg_control_default_path(1234, buf, sizeof(buf)), -ENAMETOOLONG);
	unsetenv("XDG_RUNTIME_DIR");
	rmdir(deep);
	unlink(file);
	/* mcg_sock_path(): the buffer too small, and a path longer than a
	 * socket's though the buffer holds it. */
	CHECK_EQ(mcg_sock_path("/tmp", 1234, buf, sizeof(buf)), 0);
	CHECK(!strcmp(buf, "/tmp/1234.sock"));
	CHECK_EQ(mcg_sock_path("/tmp", 1234, buf, 14), -ENAMETOOLONG); /* 14 bytes and a NUL */
	char longdir[200];
	memset(longdir, 'l', sizeof(longdir) - 1);
	longdir[0] = '/';
	longdir[sizeof(longdir) - 1] = '\0';
	static char big[4096];
	CHECK_EQ(mcg_sock_path(longdir, 1234, big, sizeof(big)), -ENAMETOOLONG);
	CHECK(strlen(big) > MCG_SOCK_PATH_MAX);
}

static void test_make_and_refuse(void)
{
	char d[128], f[128], l[128];
	snprintf(d, sizeof(d), "%s/ok", tmp);
	mode_t old = umask(0);
	CHECK_EQ(mcg_sockdir_make(d), 0); /* made 0700 whatever the umask */
	umask(old);
	CHECK_EQ(mode_of(d) & 07777, 0700);
	CHECK_EQ(mcg_sockdir_make(d), 0); /* there already: fine */

	CHECK_EQ(chmod(d, 0750), 0);
	CHECK_EQ(mcg_sockdir_make(d), -EACCES);
	CHECK_EQ(mode_of(d) & 07777, 0750); /* left as it is */
	CHECK_EQ(chmod(d, 0700), 0);

	snprintf(l, sizeof(l), "%s/link", tmp);
	CHECK_EQ(symlink(d, l), 0);
	CHECK_EQ(mcg_sockdir_make(l), -EACCES); /* a symlink, even to a good directory */

	snprintf(f, sizeof(f), "%s/file", tmp);
	FILE *fp = fopen(f, "w");
	CHECK(fp && !fclose(fp));
	CHECK_EQ(mcg_sockdir_make(f), -EACCES);

	snprintf(f, sizeof(f), "%s/missing/sub", tmp);
	CHECK_EQ(mcg_sockdir_make(f), -ENOENT);

	if (geteuid() == 0) {
		snprintf(f, sizeof(f), "%s/theirs", tmp);
		CHECK_EQ(mkdir(f, 0700), 0);
		CHECK_EQ(chown(f, 65534, 65534), 0);
		CHECK_EQ(mcg_sockdir_make(f), -EACCES);
	} else {
		fprintf(stderr, "  skipped: another user's directory (needs root)\n");
	}

	char p[256];
	CHECK_EQ(mcg_sock_path("/run/x", 42, p, sizeof(p)), 0);
	CHECK(!strcmp(p, "/run/x/42.sock"));
	char longdir[120];
	memset(longdir, 'd', sizeof(longdir) - 1);
	longdir[0] = '/';
	longdir[sizeof(longdir) - 1] = '\0';
	CHECK_EQ(mcg_sock_path(longdir, 42, p, sizeof(p)), -ENAMETOOLONG);
}

static void test_start_in_dirs(void)
{
	char path[256], want[256], dir[128];
	setenv("XDG_RUNTIME_DIR", tmp, 1);
	snprintf(dir, sizeof(dir), "%s/memcg", tmp);
	CHECK_EQ(mkdir(dir, 0755), 0);
	CHECK_EQ(mcg_control_start(NULL), -EACCES); /* too open: refused */
	CHECK_EQ(mcg_control_path(path, sizeof(path)), -ENOENT);
	CHECK_EQ(chmod(dir, 0700), 0);
	CHECK_EQ(mcg_control_start(NULL), 0);
	CHECK_EQ(mcg_control_path(path, sizeof(path)), 0);
	snprintf(want, sizeof(want), "%s/memcg/%ld.sock", tmp, (long)getpid());
	CHECK(!strcmp(path, want));
	CHECK(S_ISSOCK(mode_of(path)));
	CHECK_EQ(mode_of(path) & 07777, 0600);
	CHECK_EQ(mcg_control_path(path, 10), -ERANGE);
	mcg_control_stop();
	CHECK_EQ(mode_of(want), (mode_t)-1); /* removed */
	unsetenv("XDG_RUNTIME_DIR");
}

int main(void)
{
	strcpy(tmp, "/tmp/memcg-test-XXXXXX");
	if (!mkdtemp(tmp))
		return 1;
	RUN(test_default_dir);
	RUN(test_default_path_edges);
	RUN(test_make_and_refuse);
	RUN(test_start_in_dirs);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd))
		return 1;
	return test_done();
}
