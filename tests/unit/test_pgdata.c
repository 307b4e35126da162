/* SPDX-License-Identifier: MIT */
/* test_pgdata.c - cached pages' data from 2 MiB blocks (pagecache/pgdata.c). */
#include "pagecache/pgdata.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

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

/* How many of @n pages at @p are resident. */
static int resident(void *const *p, int n)
{
	int in = 0;
	for (int i = 0; i < n; i++) {
		unsigned char v = 0;
		if (mincore(p[i], 4096, &v))
			return -1; /* never a count the checks expect */
		in += v & 1;
	}
	return in;
}

/* A block half free or more gives its free pages back, and each page freed
 * into it after; less free, it keeps them; a page given back reads zero. */
static void test_purge(void)
{
	for (int i = 0; i < PER_BLOCK; i++) {
		REQUIRE(pages[i] = mcg_pgdata_alloc());
		memset(pages[i], 0x5a, 4096);
	}
	CHECK_EQ(mcg_pgdata_blocks(), 1);
	for (int i = 0; i < 255; i++)
		mcg_pgdata_free(pages[i]);
	CHECK_EQ(resident(pages, 255), 255); /* 255 of 511 free: kept */
	mcg_pgdata_free(pages[255]);
	CHECK_EQ(resident(pages, 256), 0); /* 256 free: all given back */
	for (int i = 256; i < 300; i++)
		mcg_pgdata_free(pages[i]);
	CHECK_EQ(resident(pages, 300), 0);
	CHECK_EQ(resident(pages + 300, PER_BLOCK - 300), PER_BLOCK - 300);
	int bad = 0;
	for (int i = 300; i < PER_BLOCK; i++)
		for (int k = 0; k < 4096; k++)
			bad += ((unsigned char *)pages[i])[k] != 0x5a;
	CHECK_EQ(bad, 0); /* the pages in use are untouched */
	/* Taken again: the last freed first, reading zero; freed again with the
	 * block still half free: given back again. */
	for (int i = 299; i >= 200; i--) {
		void *q = mcg_pgdata_alloc();
		CHECK(q == pages[i]);
		const unsigned char *b = q;
		for (int k = 0; k < 4096; k++)
			bad += b[k] != 0;
		memset(q, 0x33, 4096);
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(resident(pages + 200, 100), 100);
	for (int i = 200; i < 300; i++)
		mcg_pgdata_free(pages[i]);
	CHECK_EQ(resident(pages, 300), 0);
	for (int i = 300; i < PER_BLOCK; i++)
		mcg_pgdata_free(pages[i]);
	CHECK_EQ(mcg_pgdata_blocks(), 0);
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
	RUN(test_purge);
	RUN(test_fault);
	return test_done();
}
