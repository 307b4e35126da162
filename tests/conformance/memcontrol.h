/* SPDX-License-Identifier: MIT */
/*
 * memcontrol.h - what the test_memcontrol ports share, as the kernel's
 * selftests share cgroup_util.c: sizes scaled down by SCALE, values_close(),
 * reading a key of a cgroup file, memory.current in pages, writing a limit,
 * charging "anonymous" pages one at a time.
 */
#ifndef MCG_TEST_MEMCONTROL_H
#define MCG_TEST_MEMCONTROL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memcg/group.h"
#include "group_file.h"
#include "test.h"

#define SCALE 8
#define MB(x) ((long)(x)*256 / SCALE) /* pages */
#define PAGE 4096l

/* The kernel selftests' values_close(): within err % of their sum's half. */
static inline int values_close(long a, long b, int err)
{
	return labs(a - b) <= (a + b) / 100 * err;
}

/* memory.current of @g in pages, exact: the stocks drained first. */
static inline long current_pages(mcg_group_t *g)
{
	char b[64];
	mcg_group_drain_stocks();
	if (mcg_group_read(g, "memory.current", b, sizeof(b)) < 0)
		return -1;
	return atol(b) / PAGE;
}

/* Write @pages (as bytes) to @file of @g; a failed write is a failed check. */
static inline void set_bytes(mcg_group_t *g, const char *file, long pages)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%ld", pages * PAGE);
	CHECK_EQ(mcg_group_write(g, file, buf), 0);
}

/* Charge @pages of anon to @g one page at a time; return pages charged. */
static inline long alloc_anon(mcg_group_t *g, long pages)
{
	long i;
	for (i = 0; i < pages; i++)
		if (mcg_charge(g, 1, 0))
			break;
	return i;
}

#endif /* MCG_TEST_MEMCONTROL_H */
