/* SPDX-License-Identifier: MIT */
/*
 * reclaim/sysfiles.h - the small kernel files global pressure reads
 * (/proc/self/cgroup, a cgroup's memory.max, /proc/pressure/memory, ...),
 * always below a root directory: "" for the real one, a fake tree in tests
 * (mcg_pressure_set_root()).  No state, no locks.
 */
#ifndef MCG_RECLAIM_SYSFILES_H
#define MCG_RECLAIM_SYSFILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/** mcg_sysfile_fmt - snprintf into @dst (@len bytes), truncating quietly; vsnprintf's result. */
int mcg_sysfile_fmt(char *dst, size_t len, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/** mcg_sysfile_path - "@root/@rel" into @buf.  Return 0 or -ENAMETOOLONG. */
int mcg_sysfile_path(char *buf, size_t len, const char *root, const char *rel);

/** mcg_sysfile_read - a whole small file into @buf (NUL-terminated).  Return bytes or -errno. */
ssize_t mcg_sysfile_read(const char *path, char *buf, size_t len);

/**
 * mcg_sysfile_read_limit - a limit file: "max" or a number of bytes; *@bytes
 * gets SIZE_MAX for "max".  Return 0, -ENOENT (missing), -errno, or -EINVAL
 * (garbage).
 */
int mcg_sysfile_read_limit(const char *path, size_t *bytes);

/** mcg_sysfile_is_dir - does @path name a directory? */
bool mcg_sysfile_is_dir(const char *path);

#endif /* MCG_RECLAIM_SYSFILES_H */
