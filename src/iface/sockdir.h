/* SPDX-License-Identifier: MIT */
/*
 * iface/sockdir.h - where control sockets live, and the checks that keep
 * the directory the owner's: created 0700, and refused when it is a
 * symlink, not a directory, someone else's, or open to group or others.
 */
#ifndef MCG_IFACE_SOCKDIR_H
#define MCG_IFACE_SOCKDIR_H

#include <stddef.h>
#include <sys/types.h>

/** Longest socket path (sun_path holds 108 bytes with the NUL). */
#define MCG_SOCK_PATH_MAX 107

/**
 * mcg_sockdir_default - this user's socket directory into @buf:
 * "$XDG_RUNTIME_DIR/memcg" when XDG_RUNTIME_DIR is an absolute path to a
 * directory, else "/tmp/memcg-UID" (UID: the effective uid).
 * Return: 0 or -ENAMETOOLONG.
 */
int mcg_sockdir_default(char *buf, size_t len);

/**
 * mcg_sockdir_make - create @dir with mode 0700 if it is missing (its parent
 * must exist), then check it.  Return: 0; -EACCES (a symlink, not a
 * directory, not owned by the effective uid, or mode wider than 0700: a
 * line on stderr says which); -errno from mkdir or lstat.
 */
int mcg_sockdir_make(const char *dir);

/** mcg_sock_path - "@dir/@pid.sock" into @buf.  Return: 0 or -ENAMETOOLONG (past 107 bytes). */
int mcg_sock_path(const char *dir, pid_t pid, char *buf, size_t len);

#endif /* MCG_IFACE_SOCKDIR_H */
