/* SPDX-License-Identifier: MIT */
/* iface/sockdir.c - the control sockets' directory (see sockdir.h).  No locks, no heap. */
#include "iface/sockdir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/compiler.h"
#include "base/log.h"
#include "memcg/control.h"

int mcg_sockdir_default(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	int n;
	if (xdg && xdg[0] == '/' && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode))
		n = snprintf(buf, len, "%s/memcg", xdg);
	else
		n = snprintf(buf, len, "/tmp/memcg-%ld", (long)geteuid());
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int mcg_sockdir_make(const char *dir)
{
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return -errno;
	struct stat st;
	if (lstat(dir, &st) != 0)
		return -errno;
	if (!S_ISDIR(st.st_mode)) {
		mcg_log("control socket: %s is not a directory (a symlink?); not serving", dir);
		return -EACCES;
	}
	if (st.st_uid != geteuid()) {
		mcg_log("control socket: %s belongs to uid %ld, not to this process's %ld; "
		        "not serving",
		        dir, (long)st.st_uid, (long)geteuid());
		return -EACCES;
	}
	if (st.st_mode & 077) {
		mcg_log("control socket: %s has mode %04o, it must be 0700; not serving", dir,
		        (unsigned)(st.st_mode & 07777));
		return -EACCES;
	}
	return 0;
}

int mcg_sock_path(const char *dir, pid_t pid, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%ld.sock", dir, (long)pid);
	if (n < 0 || (size_t)n >= len || n > MCG_SOCK_PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

mcg_public int mcg_control_default_path(pid_t pid, char *buf, size_t len)
{
	if (!buf || pid <= 0)
		return -EINVAL;
	char dir[256];
	int err = mcg_sockdir_default(dir, sizeof(dir));
	return err ? err : mcg_sock_path(dir, pid, buf, len);
}
