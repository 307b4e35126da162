/* SPDX-License-Identifier: MIT */
/*
 * tmpdir.h - a temporary directory for a test's files: made with mkdtemp
 * under $MCG_TEST_TMPDIR, else the build directory's working directory
 * (ctest runs tests in the build tree: a real disk file system, where
 * O_DIRECT usually works), and removed with everything in it.
 */
#ifndef MCG_TEST_TMPDIR_H
#define MCG_TEST_TMPDIR_H

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* tmpdir_make - a new empty directory under @base (NULL: see above) into @buf. */
static inline int tmpdir_make(char *buf, size_t len, const char *base)
{
	if (!base)
		base = getenv("MCG_TEST_TMPDIR");
	if (!base)
		base = ".";
	if (snprintf(buf, len, "%s/mcgtest.XXXXXX", base) >= (int)len)
		return -1;
	return mkdtemp(buf) ? 0 : -1;
}

/* tmpdir_path - @dir/@name into @buf. */
static inline const char *tmpdir_path(char *buf, size_t len, const char *dir, const char *name)
{
	size_t d = strlen(dir), n = strlen(name);
	if (d + n + 2 > len)
		return NULL;
	memcpy(buf, dir, d);
	buf[d] = '/';
	memcpy(buf + d + 1, name, n + 1);
	return buf;
}

/* tmpdir_remove - remove @dir and the files in it (one level). */
static inline void tmpdir_remove(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		char p[PATH_MAX];
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			if (tmpdir_path(p, sizeof(p), dir, e->d_name))
				unlink(p);
		}
		closedir(d);
	}
	rmdir(dir);
}

/* tmpdir_read_file - the whole file @path read with plain read(2) into a
 * malloc'd buffer (*@len bytes), or NULL. */
static inline char *tmpdir_read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	char *b = malloc((size_t)st.st_size + 1);
	size_t got = 0;
	while (b && got < (size_t)st.st_size) {
		ssize_t n = read(fd, b + got, (size_t)st.st_size - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	*len = got;
	return b;
}

#endif /* MCG_TEST_TMPDIR_H */
