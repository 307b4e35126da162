/* SPDX-License-Identifier: MIT */
/*
 * test_kmalloc.c - the malloc family (slab/kmalloc.c): every size class
 * boundary, usable sizes, calloc, realloc, aligned allocations, large blocks
 * mapped and unmapped, foreign pointers, accounted blocks whose slabs'
 * objcg vectors could hold each other.  Runs again with MCG_RSEQ=0.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memcg/debug.h"
#include "memcg/group.h"
#include "memcg/kmalloc.h"
#include "memcg/slab.h"
#include "page/chunk.h"
#include "page/large.h"
#include "slab/account.h"
#include "slab/kmalloc_fast.h"
#include "slab/slab.h"
#include "slabinfo_line.h"
#include "test.h"

static int nreports;
static mcg_report_t last_report;

static void capture(const mcg_report_t *r)
{
	nreports++;
	last_report = *r;
}

static void fill(void *p, size_t n, unsigned seed)
{
	unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(seed + i * 31);
}

static bool filled(const void *p, size_t n, unsigned seed)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i] != (unsigned char)(seed + i * 31))
			return false;
	return true;
}

static bool filled_with(const void *p, size_t n, unsigned char v)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i] != v)
			return false;
	return true;
}

static void test_every_size(void)
{
	/* Every size up to 4 KiB, then around every class boundary up to 300 KiB. */
	unsigned bad = 0, misaligned = 0, small = 0;
	for (size_t sz = 0; sz <= 4096; sz++) {
		void *p = mcg_malloc(sz);
		if (!p) {
			bad++;
			continue;
		}
		if ((uintptr_t)p % 16)
			misaligned++;
		size_t u = mcg_malloc_usable_size(p);
		if (u < sz || u < 1)
			small++;
		fill(p, u, (unsigned)sz);
		CHECK(filled(p, u, (unsigned)sz));
		mcg_free(p);
	}
	for (size_t base = 4096; base <= 300 * 1024; base += base / 8) {
		for (long d = -2; d <= 2; d++) {
			size_t sz = base + (size_t)d;
			void *p = mcg_malloc(sz);
			if (!p) {
				bad++;
				continue;
			}
			if ((uintptr_t)p % 16)
				misaligned++;
			size_t u = mcg_malloc_usable_size(p);
			if (u < sz)
				small++;
			memset(p, 0xa5, sz);
			mcg_free(p);
		}
	}
	/* The largest class and the first large block. */
	size_t edge[] = {MCG_KMALLOC_MAX_CACHE_SIZE - 1, MCG_KMALLOC_MAX_CACHE_SIZE,
	                 MCG_KMALLOC_MAX_CACHE_SIZE + 1};
	for (size_t i = 0; i < MCG_ARRAY_SIZE(edge); i++) {
		void *p = mcg_malloc(edge[i]);
		CHECK(p != NULL);
		CHECK(mcg_malloc_usable_size(p) >= edge[i]);
		CHECK(((uintptr_t)p & 15) == 0);
		memset(p, 1, edge[i]);
		mcg_free(p);
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(misaligned, 0);
	CHECK_EQ(small, 0);
	/* Slack is bounded: at most 25 % above 128 bytes (size classes). */
	for (size_t sz = 129; sz <= MCG_KMALLOC_MAX_CACHE_SIZE; sz = sz * 9 / 8 + 1) {
		void *p = mcg_malloc(sz);
		size_t u = mcg_malloc_usable_size(p);
		CHECK(u <= sz + sz / 4 + 16);
		mcg_free(p);
	}
	int before = nreports;
	mcg_free(NULL); /* nothing, and no report (it takes the slow path) */
	CHECK_EQ(nreports, before);
	CHECK_EQ(mcg_malloc_usable_size(NULL), 0);
}

static void test_many_live(void)
{
	enum { N = 20000 };
	static void *p[N];
	static size_t sz[N];
	for (int i = 0; i < N; i++) {
		sz[i] = (size_t)((i * 7919) % 3000) + 1;
		p[i] = mcg_malloc(sz[i]);
		REQUIRE(p[i]);
		fill(p[i], sz[i], (unsigned)i);
	}
	unsigned damaged = 0;
	for (int i = 0; i < N; i++)
		damaged += !filled(p[i], sz[i], (unsigned)i);
	CHECK_EQ(damaged, 0);
	for (int i = 0; i < N; i += 2)
		mcg_free(p[i]);
	for (int i = 1; i < N; i += 2)
		damaged += !filled(p[i], sz[i], (unsigned)i);
	CHECK_EQ(damaged, 0);
	for (int i = 1; i < N; i += 2)
		mcg_free(p[i]);
}

static void test_calloc(void)
{
	/* Dirty the memory first, so that zeroing is really tested. */
	for (int i = 0; i < 100; i++) {
		void *p = mcg_malloc(1000);
		memset(p, 0xff, 1000);
		mcg_free(p);
	}
	size_t sizes[][2] = {{1, 1},    {10, 100},   {1, 1000}, {250, 4},
	                     {3, 4096}, {1, 300000}, {0, 5}};
	for (size_t i = 0; i < MCG_ARRAY_SIZE(sizes); i++) {
		size_t n = sizes[i][0] * sizes[i][1];
		unsigned char *p = mcg_calloc(sizes[i][0], sizes[i][1]);
		REQUIRE(p);
		size_t nz = 0;
		for (size_t k = 0; k < n; k++)
			nz += p[k] != 0;
		CHECK_EQ(nz, 0);
		memset(p, 0xff, n);
		mcg_free(p);
	}
	errno = 0;
	CHECK(mcg_calloc(SIZE_MAX / 2, 3) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(mcg_calloc((size_t)1 << 33, (size_t)1 << 33) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(mcg_malloc(SIZE_MAX - 100) == NULL);
	CHECK_EQ(errno, ENOMEM);
}

static void test_realloc(void)
{
	/* NULL: malloc. */
	char *p = mcg_realloc(NULL, 10);
	REQUIRE(p);
	fill(p, 10, 7);
	/* Grow through classes and into a large block, keeping the contents. */
	size_t sizes[] = {10, 17, 100, 1000, 5000, 70000, 260000, 600000, 1 << 22};
	size_t prev = 10;
	for (size_t i = 1; i < MCG_ARRAY_SIZE(sizes); i++) {
		char *q = mcg_realloc(p, sizes[i]);
		REQUIRE(q);
		CHECK(filled(q, prev, 7));
		CHECK(mcg_malloc_usable_size(q) >= sizes[i]);
		fill(q, sizes[i], 7);
		p = q;
		prev = sizes[i];
	}
	/* Shrink back down: contents up to the new size are kept. */
	for (size_t i = MCG_ARRAY_SIZE(sizes); i-- > 0;) {
		char *q = mcg_realloc(p, sizes[i]);
		REQUIRE(q);
		CHECK(filled(q, sizes[i], 7));
		CHECK(mcg_malloc_usable_size(q) >= sizes[i]);
		p = q;
	}
	/* A big shrink really moves to a smaller block. */
	char *big = mcg_malloc(100000);
	fill(big, 100000, 3);
	char *smaller = mcg_realloc(big, 100);
	REQUIRE(smaller);
	CHECK(filled(smaller, 100, 3));
	CHECK(mcg_malloc_usable_size(smaller) < 1000);
	mcg_free(smaller);
	/* Size 0: freed, NULL returned. */
	CHECK(mcg_realloc(p, 0) == NULL);
	/* Failure keeps the old block. */
	char *keep = mcg_malloc(50);
	fill(keep, 50, 9);
	errno = 0;
	CHECK(mcg_realloc(keep, SIZE_MAX - 10) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK(filled(keep, 50, 9));
	mcg_free(keep);
	/* A large block (not accounted): a size beyond any block, and the OS
	 * refusing the growth - ENOMEM, the block as it was. */
	char *large = mcg_malloc(512 * 1024);
	REQUIRE(large);
	fill(large, 512 * 1024, 4);
	size_t large_usable = mcg_malloc_usable_size(large);
	errno = 0;
	CHECK(mcg_realloc(large, SIZE_MAX - 10) == NULL);
	CHECK_EQ(errno, ENOMEM);
	mcg_fault_inject(1, 1);
	errno = 0;
	char *grown = mcg_realloc(large, 4096 * 1024);
	unsigned long refused = mcg_fault_failed();
	mcg_fault_inject(0, 0);
	CHECK(grown == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK(refused >= 1);
	CHECK_EQ(mcg_malloc_usable_size(large), large_usable);
	CHECK(filled(large, 512 * 1024, 4));
	mcg_free(large);
	/* Foreign pointer: reported, EINVAL, not touched. */
	int before = nreports;
	long local[4] = {1, 2, 3, 4};
	errno = 0;
	CHECK(mcg_realloc(local, 100) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(nreports, before + 1);
	CHECK_EQ(last_report.kind, MCG_REPORT_FOREIGN_PTR);
	CHECK_EQ(local[3], 4);
}

static void test_aligned(void)
{
	for (size_t align = 1; align <= ((size_t)1 << 21); align <<= 1) {
		size_t sizes[] = {0, 1, align / 2, align, align + 1, 3 * align, 100, 5000};
		for (size_t i = 0; i < MCG_ARRAY_SIZE(sizes); i++) {
			if (sizes[i] > ((size_t)8 << 20))
				continue;
			void *p = mcg_aligned_alloc(align, sizes[i]);
			REQUIRE(p);
			CHECK_EQ((uintptr_t)p % align, 0);
			CHECK(mcg_malloc_usable_size(p) >= sizes[i]);
			memset(p, 0x11, sizes[i]);
			mcg_free(p);
			void *q = (void *)0x1234;
			CHECK_EQ(mcg_posix_memalign(&q, align < 8 ? 8 : align, sizes[i]), 0);
			CHECK_EQ((uintptr_t)q % align, 0);
			memset(q, 0x22, sizes[i]);
			mcg_free(q);
		}
	}
	/* Many aligned objects at once: each one aligned. */
	void *v[500];
	for (int i = 0; i < 500; i++) {
		v[i] = mcg_aligned_alloc(256, 300);
		CHECK(v[i] && (uintptr_t)v[i] % 256 == 0);
	}
	for (int i = 0; i < 500; i++)
		mcg_free(v[i]);
	/* Bad alignments. */
	size_t bad[] = {0, 3, 24, 100, 4097};
	for (size_t i = 0; i < MCG_ARRAY_SIZE(bad); i++) {
		errno = 0;
		CHECK(mcg_aligned_alloc(bad[i], 64) == NULL);
		CHECK_EQ(errno, EINVAL);
		void *out = (void *)0x42;
		CHECK_EQ(mcg_posix_memalign(&out, bad[i], 64), EINVAL);
		CHECK(out == (void *)0x42);
	}
	void *out = (void *)0x42;
	CHECK_EQ(mcg_posix_memalign(&out, 4, 64), EINVAL); /* < sizeof(void *) */
	CHECK(out == (void *)0x42);
	CHECK_EQ(mcg_posix_memalign(&out, 64, SIZE_MAX - 4096), ENOMEM);
	CHECK(out == (void *)0x42);
	errno = 1234;
	CHECK_EQ(mcg_posix_memalign(&out, 64, 64), 0);
	CHECK_EQ(errno, 1234); /* posix_memalign does not set errno */
	mcg_free(out);
}

/* posix_memalign reports in its return value and leaves errno as it was:
 * a bad alignment (EINVAL) and a size no memory holds (ENOMEM). */
static void test_posix_memalign_keeps_errno(void)
{
	void *p = NULL;
	errno = EXDEV;
	CHECK_EQ(mcg_posix_memalign(&p, 64, SIZE_MAX - 4096), ENOMEM);
	CHECK_EQ(errno, EXDEV);
	CHECK_EQ(mcg_posix_memalign(&p, 3 * sizeof(void *), 64), EINVAL);
	CHECK_EQ(errno, EXDEV);
	CHECK_EQ(mcg_posix_memalign(&p, 64, 100), 0);
	CHECK_EQ(errno, EXDEV);
	CHECK_EQ((uintptr_t)p % 64, 0);
	mcg_free(p);
}

/* A pointer into a unit of memcg's chunk that holds no slab (the chunk's
 * own header unit, units not carved yet) has no usable size, and is not a
 * crash. */
static void test_usable_size_outside_slabs(void)
{
	char *p = mcg_malloc(32);
	REQUIRE(p);
	struct mcg_chunk *ch = mcg_chunk_of(p);
	REQUIRE(ch);
	int outside = 0;
	for (size_t u = 0; u < MCG_UNITS_PER_CHUNK; u++) {
		char *at = (char *)ch + u * MCG_UNIT_SIZE + 64;
		if (mcg_slab_of(at))
			continue;
		outside++;
		CHECK_EQ(mcg_malloc_usable_size(at), 0);
	}
	CHECK(outside > 0);
	CHECK_EQ(mcg_malloc_usable_size(p), 32);
	mcg_free(p);
}

static void test_large_mapped(void)
{
	mcg_slab_shrink_all(); /* no large block retained by the tests before */
	CHECK_EQ(mcg_large_retained(), 0);
	size_t base = mcg_os_mapped_bytes();
	/* Usable sizes: four classes per power of two up to 64 MiB, pages above. */
	const size_t K = 1024, M = 1024 * 1024;
	size_t sizes[] = {
	        MCG_KMALLOC_MAX_CACHE_SIZE + 1, 300 * K, M, 5 * M - 1, 40 * M, 70 * M + 1};
	size_t usable[] = {320 * K, 320 * K, M, 5 * M, 40 * M, 70 * M + 4096};
	void *p[MCG_ARRAY_SIZE(sizes)];
	size_t want = base;
	for (size_t i = 0; i < MCG_ARRAY_SIZE(sizes); i++) {
		p[i] = mcg_malloc(sizes[i]);
		REQUIRE(p[i]);
		/* Its own mapping: the chunk header's unit, then the block. */
		want += 65536 + usable[i];
		CHECK_EQ(mcg_os_mapped_bytes(), want);
		memset(p[i], 0x77, sizes[i]);
		CHECK_EQ(mcg_malloc_usable_size(p[i]), usable[i]);
		CHECK(mcg_malloc_usable_size((char *)p[i] + 16) == 0);
	}
	for (size_t i = 0; i < MCG_ARRAY_SIZE(sizes); i++)
		mcg_free(p[i]);
	/* Freed: retained (the class sizes, under the cap) or unmapped (70 MiB). */
	CHECK(mcg_large_retained() >= 65536 + 320 * K);
	CHECK_EQ(mcg_os_mapped_bytes(), base + mcg_large_retained());
	CHECK(mcg_slab_shrink_all() >= (long)(65536 + 320 * K));
	CHECK_EQ(mcg_large_retained(), 0);
	CHECK_EQ(mcg_os_mapped_bytes(), base);
	/* A pointer inside a large block is foreign, and the block survives. */
	char *q = mcg_malloc(1 << 20);
	size_t with = mcg_os_mapped_bytes();
	int before = nreports;
	mcg_free(q + 4096);
	CHECK_EQ(nreports, before + 1);
	CHECK_EQ(last_report.kind, MCG_REPORT_FOREIGN_PTR);
	CHECK_EQ(mcg_os_mapped_bytes(), with);
	q[0] = 1;
	mcg_free(q);
	mcg_slab_shrink_all();
	CHECK_EQ(mcg_os_mapped_bytes(), base);
}

/* A retained large block comes back dirty: calloc clears it, malloc does not. */
static void test_large_calloc_reused(void)
{
	mcg_slab_shrink_all();
	enum { N = 700 * 1024 };
	char *p = mcg_calloc(1, N);
	REQUIRE(p);
	CHECK(mcg_chunk_of(p)->large_zero); /* a new mapping: zero already */
	CHECK(filled_with(p, N, 0));
	memset(p, 0xab, N);
	mcg_free(p);
	char *q = mcg_malloc(N);
	CHECK(q == p); /* the same block back */
	REQUIRE(q);
	CHECK(!mcg_chunk_of(q)->large_zero);
	CHECK_EQ((unsigned char)q[N - 1], 0xab);
	mcg_free(q);
	char *z = mcg_calloc(N / 4, 4);
	CHECK(z == p);
	REQUIRE(z);
	CHECK(filled_with(z, N, 0));
	mcg_free(z);
	mcg_slab_shrink_all();
}

/* A freed large block freed again is reported; the retained block is intact. */
static void test_large_double_free(void)
{
	mcg_slab_shrink_all();
	char *p = mcg_malloc(500 * 1024);
	REQUIRE(p);
	mcg_free(p);
	size_t retained = mcg_large_retained();
	int before = nreports;
	mcg_free(p);
	CHECK_EQ(nreports, before + 1);
	CHECK_EQ(last_report.kind, MCG_REPORT_DOUBLE_FREE);
	CHECK_EQ(mcg_large_retained(), retained);
	char *q = mcg_malloc(500 * 1024), *r = mcg_malloc(500 * 1024);
	CHECK(q == p && r != p); /* retained once only */
	mcg_free(q);
	mcg_free(r);
	mcg_slab_shrink_all();
}

/* mcg_kmalloc_large_stats: a block in use, then retained, then flushed. */
static void test_large_stats(void)
{
	const size_t M = 1024 * 1024, HDR = 65536;
	CHECK_EQ(mcg_kmalloc_large_stats(NULL), -EINVAL);
	mcg_slab_shrink_all();
	struct mcg_large_stats st0, st;
	REQUIRE(mcg_kmalloc_large_stats(&st0) == 0);
	CHECK_EQ(st0.retained, 0);
	CHECK(st0.cap >= MCG_LARGE_RETAIN_FLOOR);
	char *p = mcg_malloc(M);
	REQUIRE(p);
	REQUIRE(mcg_kmalloc_large_stats(&st) == 0);
	CHECK_EQ(st.in_use, st0.in_use + HDR + M);
	CHECK_EQ(st.retained, 0);
	CHECK(st.cap >= MCG_LARGE_RETAIN_FLOOR + st.in_use / 2); /* the peak counts it */
	CHECK_EQ(st.cap, mcg_large_cap());
	mcg_free(p);
	REQUIRE(mcg_kmalloc_large_stats(&st) == 0);
	CHECK_EQ(st.in_use, st0.in_use);
	CHECK_EQ(st.retained, HDR + M);
	CHECK(st.retained <= st.cap);
	mcg_slab_shrink_all();
	REQUIRE(mcg_kmalloc_large_stats(&st) == 0);
	CHECK_EQ(st.retained, 0);
	CHECK_EQ(st.in_use, st0.in_use);
}

/* Bytes charged to @g now (the stocks drained first). */
static long current_of(mcg_group_t *g)
{
	mcg_group_drain_stocks();
	char buf[64];
	if (mcg_group_read(g, "memory.current", buf, sizeof(buf)) < 0)
		return -1;
	return atol(buf);
}

/*
 * realloc of an accounted large block: resized in place or moved without a
 * copy, its charge following its class exactly; a growth the group cannot
 * pay for, or the OS refuses, fails with ENOMEM and leaves the block and
 * the charge as they were.
 */
static void test_large_realloc_accounted(void)
{
	const long K = 1024;
	mcg_group_t *g;
	REQUIRE(mcg_group_create(NULL, "large-realloc", &g) == 0);
	CHECK_EQ(current_of(g), 0);
	char *p = mcg_malloc_account(600 * K, g);
	REQUIRE(p);
	CHECK_EQ(current_of(g), 640 * K);
	fill(p, 600 * K, 5);
	/* Within its class: the same block, nothing charged. */
	CHECK(mcg_realloc(p, 640 * K) == p);
	CHECK_EQ(current_of(g), 640 * K);
	/* Grow: 1.5 MiB is a class of its own. */
	char *q = mcg_realloc(p, 1536 * K);
	REQUIRE(q);
	CHECK(filled(q, 600 * K, 5));
	CHECK_EQ(mcg_malloc_usable_size(q), 1536 * K);
	CHECK_EQ(current_of(g), 1536 * K);
	CHECK(mcg_kmalloc_objcg_of(q) != NULL);
	fill(q, 1536 * K, 6);
	/* Shrink past half: the tail goes, the charge with it. */
	char *r = mcg_realloc(q, 400 * K);
	CHECK(r == q);
	REQUIRE(r);
	CHECK(filled(r, 400 * K, 6));
	CHECK_EQ(mcg_malloc_usable_size(r), 448 * K);
	CHECK_EQ(current_of(g), 448 * K);
	/* Not past half: kept as it is. */
	CHECK(mcg_realloc(r, 300 * K) == r);
	CHECK_EQ(current_of(g), 448 * K);

	/* The group cannot pay for the growth: ENOMEM, nothing changed. */
	char max[32];
	snprintf(max, sizeof(max), "%ld", 1024 * K);
	CHECK_EQ(mcg_group_write(g, "memory.max", max), 0);
	errno = 0;
	CHECK(mcg_realloc(r, 2048 * K) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(current_of(g), 448 * K);
	CHECK_EQ(mcg_malloc_usable_size(r), 448 * K);
	CHECK(filled(r, 400 * K, 6));
	CHECK_EQ(mcg_group_write(g, "memory.max", "max"), 0);

	/* The OS refuses the growth: ENOMEM, the charge given back. */
	mcg_fault_inject(1, 1);
	errno = 0;
	char *f = mcg_realloc(r, 4096 * K);
	unsigned long failed = mcg_fault_failed();
	mcg_fault_inject(0, 0);
	CHECK(f == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK(failed >= 1);
	CHECK_EQ(current_of(g), 448 * K);
	CHECK(filled(r, 400 * K, 6));

	/* Down to a slab class: copied into an object, charged as one. */
	char *s = mcg_realloc(r, 1000);
	REQUIRE(s);
	CHECK(filled(s, 1000, 6));
	CHECK(mcg_chunk_of(s)->kind == MCG_CHUNK_SLABS);
	mcg_free(s);
	CHECK_EQ(current_of(g), 0);
	CHECK_EQ(mcg_group_remove(g), 0);
	mcg_group_put(g);
	mcg_slab_shrink_all();
}

static void test_foreign_and_double(void)
{
	int before = nreports;
	long local;
	mcg_free(&local);
	CHECK_EQ(nreports, before + 1);
	CHECK_EQ(last_report.kind, MCG_REPORT_FOREIGN_PTR);
	CHECK(strcmp(last_report.cache, "?") == 0);
	void *m = malloc(32);
	mcg_free(m);
	CHECK_EQ(nreports, before + 2);
	free(m);
	char *p = mcg_malloc(64);
	mcg_free(p + 16);
	CHECK_EQ(nreports, before + 3);
	CHECK_EQ(last_report.kind, MCG_REPORT_MISALIGNED);
	CHECK(strncmp(last_report.cache, "kmalloc-", 8) == 0);
	mcg_free(p);
	mcg_free(p);
	CHECK_EQ(nreports, before + 4);
	CHECK_EQ(last_report.kind, MCG_REPORT_DOUBLE_FREE);
	CHECK(strcmp(last_report.cache, "kmalloc-64") == 0);
	CHECK_EQ(mcg_malloc_usable_size(&local), 0);
	CHECK_EQ(mcg_malloc_usable_size(p + 8), 0);
}

/*
 * A free into a unit whose slab went back to the page allocator (a stale
 * pointer: the chunk stays mapped) is reported, and the unit's memory is
 * not handed out by the next malloc: its descriptor reads limit 0, so the
 * free's start test fails before any push.
 */
static void test_free_into_released_slab(void)
{
	mcg_slab_shrink_all();
	/* Two slabs at least; the first one's object stays, so its chunk
	 * keeps a slab and its descriptors are not simply zeroed. */
	char *a[64];
	int n = 0;
	do {
		a[n] = mcg_malloc(3000);
		REQUIRE(a[n]);
	} while (mcg_slab_of(a[n++]) == mcg_slab_of(a[0]) && n < 64);
	char *p = a[n - 1];
	REQUIRE(mcg_slab_of(p) != mcg_slab_of(a[0]));
	REQUIRE(mcg_chunk_of(p) == mcg_chunk_of(a[0]));
	CHECK((mcg_slab_of(p)->start_test >> 32) > 0);
	for (int i = 1; i < n; i++)
		mcg_free(a[i]);
	CHECK(mcg_slab_shrink_all() > 0);
	CHECK_EQ(mcg_slab_unit(p)->start_test, 0u);
	CHECK(mcg_slab_of(p) == NULL);
	int before = nreports;
	mcg_free(p);
	CHECK_EQ(nreports, before + 1);
	CHECK_EQ(last_report.kind, MCG_REPORT_FOREIGN_PTR); /* its unit holds no slab */
	/* Had the free pushed p, p would come out twice: once from the array,
	 * once from the new slab that the unit holds now. */
	void *q[40];
	for (int i = 0; i < 40; i++) {
		q[i] = mcg_malloc(3000);
		REQUIRE(q[i]);
		for (int j = 0; j < i; j++)
			CHECK(q[j] != q[i]);
	}
	for (int i = 0; i < 40; i++)
		mcg_free(q[i]);
	mcg_free(a[0]);
}

/*
 * mcg_kmalloc_arrays_off() (the shim's heap mode): every table entry holds
 * no arrays from then on, fitted or not, and mcg_malloc pops in its slow
 * path: a freed block comes back from the CPU array, as on the fast path,
 * with nothing refilled.  In a child: the switch is for the process's life.
 */
static void test_arrays_off(void)
{
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		int bad = 0;
		void *warm = mcg_malloc(100);
		mcg_free(warm);
		mcg_kmalloc_arrays_off();
		for (size_t i = 0; i < KMALLOC_SMALL_MAX / 16 + 1; i++)
			bad += mcg_kmalloc_small_[i].pcpu != NULL;
		mcg_cache_stats_t before, after;
		struct mcg_cache *c = mcg_kmalloc_small_cache(100);
		bad += mcg_cache_stats(c, &before) != 0;
		void *p = mcg_malloc(100);
		bad += p != warm; /* the array's top, popped by the slow path */
		mcg_free(p);
		void *q = mcg_malloc(100);
		bad += q != p;
		mcg_free(q);
		bad += mcg_cache_stats(c, &after) != 0;
		bad += after.active_objs != before.active_objs;
		for (size_t i = 0; i < KMALLOC_SMALL_MAX / 16 + 1; i++)
			bad += mcg_kmalloc_small_[i].pcpu != NULL;
		_exit(bad ? 1 : 0);
	}
	int status;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Slabs of cache @name in mcg_slabinfo_write()'s text (-1: no such cache). */
static long slabinfo_slabs(const char *name)
{
	const char *l = slabinfo_line(name);
	long v[13];
	if (l &&
	    sscanf(l, "%ld %ld %ld %ld %ld : tunables %ld %ld %ld : slabdata %ld %ld %ld", &v[0],
	           &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10]) == 11)
		return v[9];
	return -1;
}

/*
 * An accounted block's slab gets an objcg vector: kmalloc-160's (409 objects)
 * is 818 bytes, kmalloc-896's (73) is 146.  Were vectors kmalloc blocks, each
 * of these two slabs would hold the other's vector: neither could ever be
 * empty again.  Freed and shrunk, both caches hold no slab.
 */
static void test_accounted_vectors_no_cycle(void)
{
	mcg_group_t *g;
	REQUIRE(mcg_group_create(NULL, "vectors", &g) == 0);
	mcg_slab_shrink_all();
	long before160 = slabinfo_slabs("kmalloc-160"), before896 = slabinfo_slabs("kmalloc-896");
	void *a = mcg_malloc_account(150, g), *b = mcg_malloc_account(890, g);
	REQUIRE(a && b);
	CHECK_EQ(mcg_malloc_usable_size(a), 160);
	CHECK_EQ(mcg_malloc_usable_size(b), 896);
	mcg_free(a);
	mcg_free(b);
	mcg_group_drain_stocks();
	mcg_slab_shrink_all();
	CHECK_EQ(slabinfo_slabs("kmalloc-160"), before160 > 0 ? before160 : 0);
	CHECK_EQ(slabinfo_slabs("kmalloc-896"), before896 > 0 ? before896 : 0);
	CHECK_EQ(mcg_group_remove(g), 0);
	mcg_group_put(g);
}

/* mcg_obj_group() on what is no block start: inside a large block or a
 * slab object, and an unaccounted block - -ENOENT, nothing returned; and
 * mcg_posix_memalign()'s ENOMEM, errno kept. */
static void test_obj_group_edges(void)
{
	mcg_group_t *g = NULL, *o = NULL;
	REQUIRE(mcg_group_create(NULL, "objgrp", &g) == 0);
	char *big = mcg_malloc_account(1 << 20, g);
	char *small = mcg_malloc_account(64, g);
	char *plain = mcg_malloc(1 << 20);
	REQUIRE(big && small && plain);
	CHECK_EQ(mcg_obj_group(big, &o), 0);
	CHECK(o == g);
	mcg_group_put(o);
	o = NULL;
	CHECK_EQ(mcg_obj_group(big + 64, &o), -ENOENT);
	CHECK_EQ(mcg_obj_group(small + 8, &o), -ENOENT);
	CHECK_EQ(mcg_obj_group(plain, &o), -ENOENT);
	CHECK(o == NULL);
	mcg_free(big);
	mcg_free(small);
	mcg_free(plain);
	void *p = NULL;
	errno = 1234;
	CHECK_EQ(mcg_posix_memalign(&p, 64, SIZE_MAX / 2), ENOMEM);
	CHECK(p == NULL);
	CHECK_EQ(errno, 1234);
	mcg_group_drain_stocks();
	char cur[32];
	CHECK(mcg_group_read(g, "memory.current", cur, sizeof(cur)) > 0 && !strcmp(cur, "0\n"));
	CHECK_EQ(mcg_group_remove(g), 0);
	mcg_group_put(g);
}

int main(int argc, char **argv)
{
	(void)argc;
	mcg_set_report_handler(capture);
	RUN(test_accounted_vectors_no_cycle);
	RUN(test_every_size);
	RUN(test_many_live);
	RUN(test_calloc);
	RUN(test_realloc);
	RUN(test_aligned);
	RUN(test_posix_memalign_keeps_errno);
	RUN(test_usable_size_outside_slabs);
	RUN(test_large_mapped);
	RUN(test_large_calloc_reused);
	RUN(test_large_double_free);
	RUN(test_large_stats);
	RUN(test_large_realloc_accounted);
	RUN(test_foreign_and_double);
	RUN(test_free_into_released_slab);
	RUN(test_arrays_off);
	RUN(test_obj_group_edges);
	return test_done_then_locked(argv);
}
