/* SPDX-License-Identifier: MIT */
/*
 * test_memcontrol_dirty.c - the per-group dirty files (seed 004's
 * interface; group/text.c) against the kernel's vm.dirty_* semantics:
 *
 *	root            reads the options (20, 10, 0, 0); writes: -EINVAL
 *	 `- a           memory.dirty_bytes 64M -> dirty_ratio reads 0
 *	     `- b       created after: inherits a's values
 *
 * Ratios 0-100, bytes with K/M/G/T (dirty_bytes at least two pages,
 * dirty_background_bytes at least one byte), garbage rejected with nothing
 * changed, writing one of a pair zeroes the other.
 */
#include <errno.h>

#include "group_file.h"
#include "memcg/group.h"
#include "memcg/memcg.h"
#include "test.h"

static const char *const files[] = {"memory.dirty_ratio", "memory.dirty_background_ratio",
                                    "memory.dirty_bytes", "memory.dirty_background_bytes"};

static void test_root(void)
{
	mcg_group_t *r = mcg_group_root();
	CHECK_EQ(read_long(r, "memory.dirty_ratio"), 20);
	CHECK_EQ(read_long(r, "memory.dirty_background_ratio"), 10);
	CHECK_EQ(read_long(r, "memory.dirty_bytes"), 0);
	CHECK_EQ(read_long(r, "memory.dirty_background_bytes"), 0);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(mcg_group_write(r, files[i], "5"), -EINVAL);
	/* The root shows the options as they change. */
	REQUIRE(!mcg_option_set("dirty_background_bytes", 1 << 20));
	CHECK_EQ(read_long(r, "memory.dirty_background_bytes"), 1 << 20);
	CHECK_EQ(read_long(r, "memory.dirty_background_ratio"), 0);
	REQUIRE(!mcg_option_set("dirty_background_ratio", 10));
	CHECK_EQ(read_long(r, "memory.dirty_background_bytes"), 0);
}

static void test_twins_and_parsing(void)
{
	mcg_group_t *a;
	REQUIRE(!mcg_group_create(NULL, "a", &a));
	CHECK_EQ(read_long(a, "memory.dirty_ratio"), 20); /* follows the options */
	CHECK_EQ(mcg_group_write(a, "memory.dirty_bytes", "64M"), 0);
	CHECK_EQ(read_long(a, "memory.dirty_bytes"), 64 << 20);
	CHECK_EQ(read_long(a, "memory.dirty_ratio"), 0);
	CHECK_EQ(mcg_group_write(a, "memory.dirty_ratio", "15\n"), 0);
	CHECK_EQ(read_long(a, "memory.dirty_ratio"), 15);
	CHECK_EQ(read_long(a, "memory.dirty_bytes"), 0);
	CHECK_EQ(mcg_group_write(a, "memory.dirty_background_bytes", "1k"), 0);
	CHECK_EQ(read_long(a, "memory.dirty_background_bytes"), 1024);
	CHECK_EQ(read_long(a, "memory.dirty_background_ratio"), 0);
	CHECK_EQ(mcg_group_write(a, "memory.dirty_background_ratio", "0"), 0);
	CHECK_EQ(read_long(a, "memory.dirty_background_ratio"), 0);
	CHECK_EQ(read_long(a, "memory.dirty_background_bytes"), 0);
	/* Exact bytes, not pages. */
	CHECK_EQ(mcg_group_write(a, "memory.dirty_bytes", "12345"), 0);
	CHECK_EQ(read_long(a, "memory.dirty_bytes"), 12345);
	/* Garbage: -EINVAL and nothing changed. */
	const char *bad_ratio[] = {"101", "-1", "1K", "max", "", "5%", "1.5", "abc", "20 x"};
	for (size_t i = 0; i < sizeof(bad_ratio) / sizeof(bad_ratio[0]); i++)
		CHECK_EQ(mcg_group_write(a, "memory.dirty_ratio", bad_ratio[i]), -EINVAL);
	const char *bad_bytes[] = {"8191", "0", "max", "", "-4096", "1P", "64MB", "0x1000"};
	for (size_t i = 0; i < sizeof(bad_bytes) / sizeof(bad_bytes[0]); i++)
		CHECK_EQ(mcg_group_write(a, "memory.dirty_bytes", bad_bytes[i]), -EINVAL);
	CHECK_EQ(mcg_group_write(a, "memory.dirty_background_bytes", "0"), -EINVAL);
	CHECK_EQ(read_long(a, "memory.dirty_bytes"), 12345);
	CHECK_EQ(read_long(a, "memory.dirty_ratio"), 0);
	CHECK_EQ(mcg_group_write(a, "memory.dirty_bytes", "8192"), 0); /* two pages: the least */
	CHECK_EQ(mcg_group_write(a, "memory.dirty_background_bytes", "1"), 0);
	CHECK_EQ(mcg_group_write(a, "memory.dirty_ratio", "100"), 0);
	CHECK_EQ(mcg_group_write(a, "memory.dirty_ratio", "0"), 0);
	/* A child created now starts with its parent's values. */
	REQUIRE(!mcg_group_write(a, "memory.dirty_bytes", "32M"));
	mcg_group_t *b;
	REQUIRE(!mcg_group_create(a, "b", &b));
	CHECK_EQ(read_long(b, "memory.dirty_bytes"), 32 << 20);
	CHECK_EQ(read_long(b, "memory.dirty_ratio"), 0);
	CHECK_EQ(read_long(b, "memory.dirty_background_bytes"), 1);
	/* ... and its own from then on. */
	REQUIRE(!mcg_group_write(b, "memory.dirty_ratio", "30"));
	CHECK_EQ(read_long(a, "memory.dirty_bytes"), 32 << 20);
	mcg_group_remove(b);
	mcg_group_put(b);
	mcg_group_remove(a);
	mcg_group_put(a);
}

int main(void)
{
	mcg_options_use_env(0);
	RUN(test_root);
	RUN(test_twins_and_parsing);
	return test_done();
}
