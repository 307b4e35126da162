/* SPDX-License-Identifier: MIT */
/* test_index.c - the page index (pagecache/index.c): a radix tree with tags. */
#include "pagecache/index.h"

#include <errno.h>

#include "memcg/debug.h"
#include "test.h"

#define ITEM(i) ((void *)(uintptr_t)(((i) << 4) | 8))

static int insert(struct mcg_index *ix, uint64_t i)
{
	struct mcg_index_preload pl = {0};
	int err = mcg_index_preload(&pl, mcg_index_nodes_needed(ix, i));
	if (!err)
		err = mcg_index_insert(ix, i, ITEM(i), &pl);
	mcg_index_preload_end(&pl);
	return err;
}

static void *del(struct mcg_index *ix, uint64_t i)
{
	struct mcg_index_node *freed = NULL;
	void *it = mcg_index_delete(ix, i, &freed);
	mcg_index_free_nodes(freed);
	return it;
}

static void test_empty(void)
{
	struct mcg_index ix;
	mcg_index_init(&ix);
	uint64_t at = 7;
	CHECK(!mcg_index_lookup(&ix, 0));
	CHECK(!mcg_index_next(&ix, 0, MCG_NR_TAGS, &at));
	CHECK_EQ(at, 7);
	CHECK(!del(&ix, 3));
	CHECK_EQ(mcg_index_nodes_needed(&ix, 0), 1);
	CHECK_EQ(mcg_index_nodes_needed(&ix, 63), 1);
	CHECK_EQ(mcg_index_nodes_needed(&ix, 64), 2);
	CHECK_EQ(mcg_index_nodes_needed(&ix, 4095), 2);
	CHECK_EQ(mcg_index_nodes_needed(&ix, 4096), 3);
	CHECK_EQ(mcg_index_nodes_needed(&ix, ~0ull), MCG_INDEX_MAX_HEIGHT);
}

/* Grow from one level to three and back, with every lookup right. */
static void test_grow_shrink(void)
{
	struct mcg_index ix;
	mcg_index_init(&ix);
	REQUIRE(!insert(&ix, 5));
	CHECK_EQ(ix.height, 1);
	CHECK_EQ(mcg_index_nodes_needed(&ix, 6), 0);
	CHECK_EQ(mcg_index_nodes_needed(&ix, 64), 2); /* a new root and a leaf */
	REQUIRE(!insert(&ix, 64 * 64 + 1));
	CHECK_EQ(ix.height, 3);
	CHECK_EQ(ix.nr, 2);
	CHECK(mcg_index_lookup(&ix, 5) == ITEM(5));
	CHECK(mcg_index_lookup(&ix, 4097) == ITEM(4097));
	CHECK(!mcg_index_lookup(&ix, 4096));
	CHECK(!mcg_index_lookup(&ix, 1u << 20)); /* past the tree */
	CHECK_EQ(insert(&ix, 5), -EEXIST);
	CHECK(del(&ix, 4097) == ITEM(4097));
	CHECK_EQ(ix.height, 1); /* shrank back: only slot 0 of each level was left */
	CHECK(mcg_index_lookup(&ix, 5) == ITEM(5));
	CHECK(del(&ix, 5) == ITEM(5));
	CHECK_EQ(ix.height, 0);
	CHECK(ix.root == NULL);
	CHECK_EQ(ix.nr, 0);
}

/* An insert without its nodes preloaded changes nothing. */
static void test_insert_needs_preload(void)
{
	struct mcg_index ix;
	mcg_index_init(&ix);
	struct mcg_index_preload pl = {0};
	CHECK_EQ(mcg_index_insert(&ix, 100, ITEM(100), &pl), -ENOMEM);
	CHECK(ix.root == NULL);
	REQUIRE(!mcg_index_preload(&pl, 1));
	CHECK_EQ(mcg_index_insert(&ix, 100, ITEM(100), &pl), -ENOMEM); /* needs 2 */
	CHECK(ix.root == NULL);
	CHECK_EQ(pl.n, 1);
	mcg_index_preload_end(&pl);
	/* The memory fault point fails a preload cleanly. */
	mcg_fault_inject(1, 0);
	CHECK_EQ(mcg_index_preload(&pl, 2), -ENOMEM);
	mcg_fault_inject(0, 0);
	mcg_index_preload_end(&pl);
	CHECK_EQ(pl.n, 0);
}

static void test_tags(void)
{
	struct mcg_index ix;
	mcg_index_init(&ix);
	CHECK(!mcg_index_tagged(&ix, MCG_TAG_DIRTY)); /* empty: no node at all */
	for (uint64_t i = 0; i < 10000; i += 7)
		REQUIRE(!insert(&ix, i));
	CHECK(!mcg_index_tagged(&ix, MCG_TAG_DIRTY));
	mcg_index_tag_set(&ix, 700, MCG_TAG_DIRTY);
	mcg_index_tag_set(&ix, 9996, MCG_TAG_DIRTY);
	mcg_index_tag_set(&ix, 4095, MCG_TAG_TOWRITE); /* 4095 = 7 * 585 */
	CHECK(mcg_index_tagged(&ix, MCG_TAG_DIRTY));
	CHECK(mcg_index_tag_get(&ix, 700, MCG_TAG_DIRTY));
	CHECK(!mcg_index_tag_get(&ix, 707, MCG_TAG_DIRTY));
	CHECK(!mcg_index_tag_get(&ix, 700, MCG_TAG_WRITEBACK));
	uint64_t at = 0;
	CHECK(mcg_index_next(&ix, 0, MCG_TAG_DIRTY, &at) == ITEM(700));
	CHECK_EQ(at, 700);
	CHECK(mcg_index_next(&ix, 701, MCG_TAG_DIRTY, &at) == ITEM(9996));
	CHECK_EQ(at, 9996);
	CHECK(!mcg_index_next(&ix, 9997, MCG_TAG_DIRTY, &at));
	CHECK(mcg_index_next(&ix, 0, MCG_TAG_TOWRITE, &at) == ITEM(4095));
	CHECK_EQ(at, 4095);
	/* Clearing the last tag below a slot clears it up to the root. */
	mcg_index_tag_clear(&ix, 700, MCG_TAG_DIRTY);
	mcg_index_tag_clear(&ix, 9996, MCG_TAG_DIRTY);
	CHECK(!mcg_index_tagged(&ix, MCG_TAG_DIRTY));
	CHECK(mcg_index_tagged(&ix, MCG_TAG_TOWRITE));
	/* Deleting a tagged entry drops its tags. */
	CHECK(del(&ix, 4095) == ITEM(4095));
	CHECK(!mcg_index_tagged(&ix, MCG_TAG_TOWRITE));
	/* Any-entry walk: every seventh index, in order. */
	uint64_t expect = 0;
	long n = 0;
	for (void *it = mcg_index_next(&ix, 0, MCG_NR_TAGS, &at); it;
	     it = mcg_index_next(&ix, at + 1, MCG_NR_TAGS, &at)) {
		if (expect == 4095)
			expect += 7;
		CHECK_EQ(at, expect);
		CHECK(it == ITEM(at));
		expect += 7;
		n++;
	}
	CHECK_EQ(n, (long)ix.nr);
	for (uint64_t i = 0; i < 10000; i += 7)
		del(&ix, i);
	CHECK_EQ(ix.nr, 0);
	CHECK(ix.root == NULL);
}

/* next() skips a whole empty subtree and finds entries far apart. */
static void test_next_sparse(void)
{
	struct mcg_index ix;
	mcg_index_init(&ix);
	uint64_t keys[] = {3, 64 * 64 * 64 - 1, 64 * 64 * 64, 1ull << 40, (1ull << 51) + 17};
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		REQUIRE(!insert(&ix, keys[k]));
	uint64_t at;
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		uint64_t from = k ? keys[k - 1] + 1 : 0;
		CHECK(mcg_index_next(&ix, from, MCG_NR_TAGS, &at) == ITEM(keys[k]));
		CHECK_EQ(at, keys[k]);
		mcg_index_tag_set(&ix, keys[k], MCG_TAG_WRITEBACK);
	}
	CHECK(!mcg_index_next(&ix, keys[4] + 1, MCG_NR_TAGS, &at));
	CHECK(mcg_index_next(&ix, 4, MCG_TAG_WRITEBACK, &at) == ITEM(keys[1]));
	CHECK(mcg_index_next(&ix, keys[2] + 1, MCG_TAG_WRITEBACK, &at) == ITEM(keys[3]));
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		CHECK(del(&ix, keys[k]) == ITEM(keys[k]));
	CHECK(ix.root == NULL);
}

/* Random inserts and deletes against a plain array. */
static void test_random(void)
{
	enum { N = 20000, SPACE = 1 << 16 };
	static unsigned char present[SPACE];
	struct mcg_index ix;
	mcg_index_init(&ix);
	unsigned long x = 88172645463325252ul, nr = 0;
	for (int k = 0; k < N; k++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint64_t i = x % SPACE;
		if (present[i]) {
			CHECK(del(&ix, i) == ITEM(i));
			present[i] = 0;
			nr--;
		} else {
			CHECK(!insert(&ix, i));
			present[i] = 1;
			nr++;
		}
	}
	CHECK_EQ(ix.nr, nr);
	uint64_t at, from = 0;
	unsigned long seen = 0;
	for (void *it; (it = mcg_index_next(&ix, from, MCG_NR_TAGS, &at)); from = at + 1) {
		CHECK(present[at]);
		seen++;
	}
	CHECK_EQ(seen, nr);
	for (uint64_t i = 0; i < SPACE; i++)
		if (present[i])
			del(&ix, i);
	CHECK(ix.root == NULL);
}

/* tagged_span: consecutive tagged entries from a start, across leaves, capped. */
static void test_tagged_span(void)
{
	struct mcg_index ix;
	mcg_index_init(&ix);
	CHECK_EQ(mcg_index_tagged_span(&ix, 0, MCG_TAG_DIRTY, 100), 0); /* empty */
	/* Entries 0..299 and 400..409; 10..259 and 400..409 tagged DIRTY. */
	for (uint64_t i = 0; i < 300; i++)
		REQUIRE(!insert(&ix, i));
	for (uint64_t i = 400; i < 410; i++)
		REQUIRE(!insert(&ix, i));
	for (uint64_t i = 10; i < 260; i++)
		mcg_index_tag_set(&ix, i, MCG_TAG_DIRTY);
	for (uint64_t i = 400; i < 410; i++)
		mcg_index_tag_set(&ix, i, MCG_TAG_DIRTY);
	CHECK_EQ(mcg_index_tagged_span(&ix, 0, MCG_TAG_DIRTY, 1000), 0);    /* 0 untagged */
	CHECK_EQ(mcg_index_tagged_span(&ix, 10, MCG_TAG_DIRTY, 1000), 250); /* 4 leaves */
	CHECK_EQ(mcg_index_tagged_span(&ix, 64, MCG_TAG_DIRTY, 1000), 196); /* a leaf's start */
	CHECK_EQ(mcg_index_tagged_span(&ix, 63, MCG_TAG_DIRTY, 1000), 197); /* a leaf's end */
	CHECK_EQ(mcg_index_tagged_span(&ix, 10, MCG_TAG_DIRTY, 100), 100);  /* capped */
	CHECK_EQ(mcg_index_tagged_span(&ix, 259, MCG_TAG_DIRTY, 1000), 1);
	CHECK_EQ(mcg_index_tagged_span(&ix, 260, MCG_TAG_DIRTY, 1000), 0);
	CHECK_EQ(mcg_index_tagged_span(&ix, 400, MCG_TAG_DIRTY, 1000), 10); /* then no leaf entry */
	CHECK_EQ(mcg_index_tagged_span(&ix, 5000, MCG_TAG_DIRTY, 1000), 0); /* no leaf */
	CHECK_EQ(mcg_index_tagged_span(&ix, 10, MCG_TAG_TOWRITE, 1000), 0); /* other tag */
	/* A full leaf of 64, then the next leaf from its slot 0. */
	for (uint64_t i = 0; i < 10; i++)
		mcg_index_tag_set(&ix, i, MCG_TAG_DIRTY);
	CHECK_EQ(mcg_index_tagged_span(&ix, 0, MCG_TAG_DIRTY, 1000), 260);
	CHECK_EQ(mcg_index_tagged_span(&ix, 0, MCG_TAG_DIRTY, 64), 64);
	for (uint64_t i = 0; i < 410; i++)
		del(&ix, i);
	CHECK(ix.root == NULL);
}

/* The last leaf of the index's range (2^54 pages, past any file's): a
 * tree of full height, lookups and next() across the whole range (a
 * search past the last entry ends), a tagged span to the last index, and
 * a start past the range finds nothing. */
static void test_top_of_range(void)
{
	struct mcg_index ix;
	mcg_index_init(&ix);
	const uint64_t last = (1ull << (MCG_INDEX_SHIFT * MCG_INDEX_MAX_HEIGHT)) - 1,
	               base = last - 63;
	REQUIRE(!insert(&ix, 5));
	for (uint64_t i = base; i <= last; i++)
		REQUIRE(!insert(&ix, i));
	CHECK_EQ(ix.height, MCG_INDEX_MAX_HEIGHT);
	CHECK_EQ(ix.nr, 65);
	CHECK(mcg_index_lookup(&ix, last) == ITEM(last));
	CHECK(mcg_index_lookup(&ix, 5) == ITEM(5));
	CHECK(!mcg_index_lookup(&ix, 1ull << 40));
	CHECK(!mcg_index_lookup(&ix, base - 1));
	uint64_t at = 0;
	CHECK(mcg_index_next(&ix, 6, MCG_NR_TAGS, &at) == ITEM(base));
	CHECK_EQ(at, base);
	CHECK(mcg_index_next(&ix, last, MCG_NR_TAGS, &at) == ITEM(last));
	CHECK_EQ(at, last);
	for (uint64_t i = base; i <= last; i++)
		mcg_index_tag_set(&ix, i, MCG_TAG_DIRTY);
	CHECK_EQ(mcg_index_tagged_span(&ix, base, MCG_TAG_DIRTY, 1000), 64);
	CHECK_EQ(mcg_index_tagged_span(&ix, last - 1, MCG_TAG_DIRTY, 1000), 2);
	/* Only entry 5 tagged WRITEBACK: nothing at or after 6, to the end. */
	mcg_index_tag_set(&ix, 5, MCG_TAG_WRITEBACK);
	at = 7;
	CHECK(!mcg_index_next(&ix, 6, MCG_TAG_WRITEBACK, &at));
	CHECK_EQ(at, 7);
	CHECK(mcg_index_next(&ix, 0, MCG_TAG_WRITEBACK, &at) == ITEM(5));
	CHECK(!mcg_index_next(&ix, base, MCG_TAG_WRITEBACK, &at));
	CHECK(!mcg_index_next(&ix, ~0ull, MCG_TAG_WRITEBACK, &at));
	CHECK_EQ(at, 5);
	/* Tags of an index with no entry (no leaf there): none, and a clear does nothing. */
	CHECK(!mcg_index_tag_get(&ix, 1ull << 30, MCG_TAG_DIRTY));
	mcg_index_tag_clear(&ix, 1ull << 30, MCG_TAG_DIRTY);
	CHECK(mcg_index_tag_get(&ix, 5, MCG_TAG_WRITEBACK));
	CHECK(del(&ix, 5) == ITEM(5));
	for (uint64_t i = base; i <= last; i++)
		CHECK(del(&ix, i) == ITEM(i));
	CHECK(ix.root == NULL);
}

/* A far index under a low one: the most nodes an insert can need
 * (MCG_INDEX_PRELOAD_MAX: eight new levels and eight on its path), all
 * preloaded and used. */
static void test_far_insert_needs_most(void)
{
	struct mcg_index ix;
	mcg_index_init(&ix);
	const uint64_t far = (1ull << 51) - 1; /* the last page of a 2^63-byte file */
	REQUIRE(!insert(&ix, 5));
	CHECK_EQ(mcg_index_nodes_needed(&ix, far), MCG_INDEX_PRELOAD_MAX);
	CHECK_EQ(insert(&ix, far), 0);
	CHECK_EQ(ix.height, MCG_INDEX_MAX_HEIGHT);
	CHECK(mcg_index_lookup(&ix, far) == ITEM(far));
	CHECK(mcg_index_lookup(&ix, 5) == ITEM(5));
	CHECK(del(&ix, far) == ITEM(far));
	CHECK(del(&ix, 5) == ITEM(5));
	CHECK(ix.root == NULL);
}

int main(void)
{
	RUN(test_empty);
	RUN(test_grow_shrink);
	RUN(test_insert_needs_preload);
	RUN(test_tags);
	RUN(test_next_sparse);
	RUN(test_random);
	RUN(test_tagged_span);
	RUN(test_top_of_range);
	RUN(test_far_insert_needs_most);
	return test_done();
}
