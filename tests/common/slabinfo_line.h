/* SPDX-License-Identifier: MIT */
/*
 * slabinfo_line.h - the line of one cache in this process's slabinfo
 * (mcg_slabinfo_write(), read back through a pipe), for tests that ask
 * whether a cache is listed and what its line says.
 */
#ifndef MCG_TEST_SLABINFO_LINE_H
#define MCG_TEST_SLABINFO_LINE_H

#include <string.h>
#include <unistd.h>

#include "memcg/slab.h"
#include "test.h"

/* The text after cache @name's name on its slabinfo line (up to the end
 * of the text: sscanf stops at the line's end), or NULL if it has none.
 * Valid until the next call. */
static inline const char *slabinfo_line(const char *name)
{
	static char text[65536];
	int fd[2];
	if (pipe(fd))
		return NULL;
	CHECK_EQ(mcg_slabinfo_write(fd[1]), 0);
	close(fd[1]);
	ssize_t n, len = 0;
	while ((n = read(fd[0], text + len, sizeof(text) - 1 - (size_t)len)) > 0)
		len += n;
	close(fd[0]);
	text[len] = '\0';
	size_t nl = strlen(name);
	for (char *l = text; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, name, nl) && l[nl] == ' ')
			return l + nl;
	return NULL;
}

#endif /* MCG_TEST_SLABINFO_LINE_H */
