/* SPDX-License-Identifier: MIT */
/* test_pgdata.c - cached pages' data from 2 MiB blocks (pagecache/pgdata.c). */
#include "pagecache/pgdata.h"

#include <stdint.h>
#include <string.h>

#include "memcg/debug.h"
#include "test.h"

#define PER_BLOCK 511 /* a block's pages but its header */
#define N (2 * PER_BLOCK + 7)

static void *pages[N];

static uintptr_t block_of(void *p) { return (uintptr_t)p & ~(uintptr_t)((2u << 20) - 1); }

static void test_blocks(void)
{
	size_t base = mcg_os_mapped_bytes();
	CHECK_EQ(mcg_pgdata_blocks(), 0);
	for (int i = 0; i < N; i++) {
		pages[i] = mcg_pgdata_alloc();
		REQUIRE(pages[i]);
		CHECK_EQ((uintptr_t)pages[i] & 4095u, 0);
		CHECK(block_of(pages[i]) != (uintptr_t)pages[i]); /* never the header page */
		memset(pages[i], i & 0xff, 4096);
	}
	/* Three blocks, filled in turn: the first two full, the third holds 7. */
	CHECK_EQ(mcg_pgdata_blocks(), 3);
	CHECK_EQ(mcg_os_mapped_bytes() - base, 3u << 21);
	CHECK(block_of(pages[0]) == block_of(pages[PER_BLOCK - 1]));
	CHECK(block_of(pages[PER_BLOCK]) != block_of(pages[0]));
	CHECK(block_of(pages[2 * PER_BLOCK]) != block_of(pages[PER_BLOCK]));
	int bad = 0;
	for (int i = 0; i < N; i++) {
		const unsigned char *b = pages[i];
		for (int k = 0; k < 4096; k++)
			bad += b[k] != (unsigned char)(i & 0xff);
	}
	CHECK_EQ(bad, 0); /* no two pages overlap */
	/* A full block given a page back goes behind the partly used one:
	 * the third block's pages come first, then that page. */
	void *p = pages[5];
	mcg_pgdata_free(p);
	static void *fill[PER_BLOCK];
	int nfill = 0;
	for (;;) {
		void *q = mcg_pgdata_alloc();
		REQUIRE(q);
		if (q == p)
			break;
		REQUIRE(nfill < PER_BLOCK);
		CHECK(block_of(q) == block_of(pages[2 * PER_BLOCK]));
		fill[nfill++] = q;
	}
	CHECK_EQ(nfill, PER_BLOCK - 7);
	CHECK_EQ(mcg_pgdata_blocks(), 3);
	for (int i = 0; i < nfill; i++)
		mcg_pgdata_free(fill[i]);
	/* The first block emptied goes back to the OS at once; the others stay. */
	for (int i = 0; i < PER_BLOCK; i++)
		mcg_pgdata_free(pages[i]);
	CHECK_EQ(mcg_pgdata_blocks(), 2);
	CHECK_EQ(mcg_os_mapped_bytes() - base, 2u << 21);
	for (int i = PER_BLOCK; i < N; i++)
		mcg_pgdata_free(pages[i]);
	CHECK_EQ(mcg_pgdata_blocks(), 0);
	CHECK_EQ(mcg_os_mapped_bytes(), base);
}

static void test_fault(void)
{
	size_t base = mcg_os_mapped_bytes();
	/* The allocation's own point, then the block's mapping. */
	mcg_fault_inject(1, 0);
	CHECK(!mcg_pgdata_alloc());
	mcg_fault_inject(2, 0);
	CHECK(!mcg_pgdata_alloc());
	mcg_fault_inject(0, 0);
	CHECK_EQ(mcg_pgdata_blocks(), 0);
	CHECK_EQ(mcg_os_mapped_bytes(), base);
	void *p = mcg_pgdata_alloc();
	REQUIRE(p);
	mcg_fault_inject(1, 0); /* a block with room: only the allocation's point */
	CHECK(!mcg_pgdata_alloc());
	CHECK_EQ(mcg_fault_count(), 1);
	mcg_fault_inject(0, 0);
	mcg_pgdata_free(p);
	CHECK_EQ(mcg_pgdata_blocks(), 0);
}

int main(void)
{
	RUN(test_blocks);
	RUN(test_fault);
	return test_done();
}
