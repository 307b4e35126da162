/* SPDX-License-Identifier: MIT */
/*
 * group_file.h - reading a group's flat-keyed cgroup v2 files in tests
 * (memory.stat, memory.events, cgroup.stat: one "key value" per line).
 */
#ifndef MCG_TEST_GROUP_FILE_H
#define MCG_TEST_GROUP_FILE_H

#include <stdlib.h>
#include <string.h>

#include "memcg/group.h"

/* The value of line "@key N" in the text @buf, or -1. */
static inline long key_of(const char *buf, const char *key)
{
	size_t kl = strlen(key);
	for (const char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, key, kl) && l[kl] == ' ')
			return atol(l + kl + 1);
	return -1;
}

/* The single value of @file of @g (memory.current, memory.max...), or -1. */
static inline long read_long(mcg_group_t *g, const char *file)
{
	char buf[64];
	if (mcg_group_read(g, file, buf, sizeof(buf)) < 0)
		return -1;
	return atol(buf);
}

/* The value of line "@key N" of @file of @g, or -1. */
static inline long read_key(mcg_group_t *g, const char *file, const char *key)
{
	char buf[8192];
	if (mcg_group_read(g, file, buf, sizeof(buf)) < 0)
		return -1;
	return key_of(buf, key);
}

#endif /* MCG_TEST_GROUP_FILE_H */
