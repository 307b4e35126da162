/* SPDX-License-Identifier: MIT */
/* reclaim/sysfiles.c - small kernel files read below a root directory (see sysfiles.h). */
#include "reclaim/sysfiles.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mcg_sysfile_fmt(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(dst, len, fmt, ap);
	va_end(ap);
	return n;
}

int mcg_sysfile_path(char *buf, size_t len, const char *root, const char *rel)
{
	int n = mcg_sysfile_fmt(buf, len, "%s/%s", root, rel);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

ssize_t mcg_sysfile_read(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t pos = 0;
	while (pos + 1 < len) {
		ssize_t n = read(fd, buf + pos, len - 1 - pos);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = -errno;
			close(fd);
			return err;
		}
		if (n == 0)
			break;
		pos += (size_t)n;
	}
	close(fd);
	buf[pos] = 0;
	return (ssize_t)pos;
}

int mcg_sysfile_read_limit(const char *path, size_t *bytes)
{
	char buf[64];
	ssize_t n = mcg_sysfile_read(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	if (!strncmp(buf, "max", 3)) {
		*bytes = SIZE_MAX;
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n'))
		return -EINVAL;
	*bytes = v > SIZE_MAX ? SIZE_MAX : (size_t)v;
	return 0;
}

bool mcg_sysfile_is_dir(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}
