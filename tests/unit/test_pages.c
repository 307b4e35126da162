/* SPDX-License-Identifier: MIT */
/*
 * test_pages.c - the page allocator (page/pages.c): spans from chunks,
 * aligned to their size; a chunk whose units are all free gives its
 * descriptor pages back; aging unmaps chunks found empty at two steps in a
 * row, keeping some per node, and never a chunk with a span out.
 */
#include "memcg/debug.h"
#include "os/os.h"
#include "page/chunk.h"
#include "page/pages.h"
#include "test.h"

static void test_spans(void)
{
	REQUIRE(mcg_pages_init() == 0);
	size_t in_use = mcg_pages_in_use();
	void *a = mcg_pages_alloc(0, 1), *b = mcg_pages_alloc(0, 4), *c = mcg_pages_alloc(0, 32);
	REQUIRE(a && b && c);
	CHECK_EQ((uintptr_t)b % (4 * MCG_UNIT_SIZE), 0);
	CHECK_EQ((uintptr_t)c % (32 * MCG_UNIT_SIZE), 0);
	CHECK(mcg_chunk_owned(a) && mcg_chunk_owned(b) && mcg_chunk_owned(c));
	CHECK_EQ(mcg_pages_in_use() - in_use, 37 * MCG_UNIT_SIZE);
	memset(a, 1, MCG_UNIT_SIZE);
	mcg_pages_free(a, 1);
	mcg_pages_free(b, 4);
	mcg_pages_free(c, 32);
	CHECK_EQ(mcg_pages_in_use(), in_use);
}

static void test_age_unmaps_empty_chunks(void)
{
	/* Fill four chunks (32 units each is half a chunk: eight spans). */
	enum { SPANS = 8 };
	void *s[SPANS];
	for (int i = 0; i < SPANS; i++) {
		s[i] = mcg_pages_alloc(0, 32);
		REQUIRE(s[i]);
		memset(s[i], 2, 4096);
	}
	/* Let every chunk but the last two go empty. */
	for (int i = 0; i < SPANS - 2; i++)
		mcg_pages_free(s[i], 32);
	size_t mapped = mcg_os_mapped_bytes();
	/* One step: found empty once - nothing goes yet. */
	CHECK_EQ(mcg_pages_age(1), 0);
	CHECK_EQ(mcg_os_mapped_bytes(), mapped);
	/* The second step: every empty chunk but one (the keep) is unmapped;
	 * the chunk with spans out stays, and so does what it holds. */
	size_t gone = mcg_pages_age(1);
	CHECK(gone >= 2 * MCG_CHUNK_SIZE);
	CHECK_EQ(gone % MCG_CHUNK_SIZE, 0);
	CHECK_EQ(mcg_os_mapped_bytes(), mapped - gone);
	CHECK(mcg_chunk_owned(s[SPANS - 1]) && mcg_chunk_owned(s[SPANS - 2]));
	CHECK_EQ(*(char *)s[SPANS - 1], 2);
	/* Nothing more while one empty chunk is all that is left. */
	CHECK_EQ(mcg_pages_age(1), 0);
	/* A chunk that gets a span again starts over. */
	void *t = mcg_pages_alloc(0, 32);
	REQUIRE(t);
	mcg_pages_free(t, 32);
	CHECK_EQ(mcg_pages_age(0), 0); /* found empty once since the span left */
	mcg_pages_free(s[SPANS - 2], 32);
	mcg_pages_free(s[SPANS - 1], 32);
	mcg_pages_age(0);
	CHECK(mcg_pages_age(0) > 0); /* keep 0: every empty chunk goes */
	CHECK(!mcg_chunk_owned(s[SPANS - 1]));
}

int main(void)
{
	RUN(test_spans);
	RUN(test_age_unmaps_empty_chunks);
	return test_done();
}
