/* SPDX-License-Identifier: MIT */
/*
 * test_large.c - large blocks (page/large.c): class sizes; a freed block is
 * retained and comes back with no new mapping - for its class, whole for a
 * class at least a quarter of its size, cut down for a smaller one, grown
 * for a larger one; the retained bytes stay under the cap (a floor plus
 * half the recent peak), aging unmaps what sat through a step, flush
 * unmaps everything; a double free is refused; resize grows in place,
 * moves (mremap) or shrinks, keeping the contents; injected faults fail
 * cleanly, and a retained block needs no OS call.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#include "memcg/debug.h"
#include "os/os.h"
#include "page/chunk.h"
#include "page/large.h"
#include "test.h"

#define K ((size_t)1024)
#define M (1024 * K)
#define HDR MCG_UNIT_SIZE /* the chunk header's unit, before the block */

/* Nothing retained, and the cap back at its floor (two steps with nothing in use). */
static void reset(void)
{
	mcg_large_flush();
	mcg_large_age();
	mcg_large_age();
}

static struct mcg_chunk *chunk(void *p) { return mcg_chunk_of(p); }

static void fill(void *p, size_t n, unsigned char v) { memset(p, v, n); }

static int filled(const void *p, size_t n, unsigned char v)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i] != v)
			return 0;
	return 1;
}

static void test_classes(void)
{
	CHECK_EQ(mcg_large_usable(256 * K + 1), 320 * K);
	CHECK_EQ(mcg_large_usable(320 * K), 320 * K);
	CHECK_EQ(mcg_large_usable(320 * K + 1), 384 * K);
	CHECK_EQ(mcg_large_usable(512 * K + 1), 640 * K);
	CHECK_EQ(mcg_large_usable(M), M);
	CHECK_EQ(mcg_large_usable(5 * M - 1), 5 * M);
	CHECK_EQ(mcg_large_usable(64 * M), 64 * M);
	CHECK_EQ(mcg_large_usable(64 * M + 1), 64 * M + 4096); /* pages above the classes */
	CHECK_EQ(mcg_large_usable(100 * K), 100 * K);          /* small aligned blocks: pages */
	CHECK_EQ(mcg_large_usable(0), 4096);
	CHECK_EQ(mcg_large_usable(SIZE_MAX - 100), 0);
}

static void test_reuse(void)
{
	reset();
	size_t mapped0 = mcg_os_mapped_bytes(), in_use0 = mcg_large_in_use();
	char *p = mcg_large_alloc(2 * M, 16);
	REQUIRE(p);
	CHECK_EQ(chunk(p)->large_size, 2 * M);
	CHECK_EQ(chunk(p)->large_zero, 1);
	CHECK_EQ(mcg_os_mapped_bytes(), mapped0 + HDR + 2 * M);
	CHECK_EQ(mcg_large_in_use(), in_use0 + HDR + 2 * M);
	fill(p, 2 * M, 0x5a);
	CHECK_EQ(mcg_large_free(chunk(p)), 0);
	CHECK_EQ(mcg_large_retained(), HDR + 2 * M);
	CHECK_EQ(mcg_large_in_use(), in_use0);
	CHECK_EQ(mcg_os_mapped_bytes(), mapped0 + HDR + 2 * M); /* still mapped */
	CHECK(mcg_chunk_owned(p));

	/* The same class: the same block, no new mapping, not zero. */
	char *q = mcg_large_alloc(2 * M - 1000, 16);
	CHECK(q == p);
	REQUIRE(q);
	CHECK_EQ(mcg_os_mapped_bytes(), mapped0 + HDR + 2 * M);
	CHECK_EQ(mcg_large_retained(), 0);
	CHECK_EQ(mcg_large_in_use(), in_use0 + HDR + 2 * M);
	CHECK_EQ(chunk(q)->large_zero, 0);
	CHECK(chunk(q)->large_objcg == NULL);
	CHECK(filled(q, 2 * M, 0x5a)); /* what its last user wrote */
	CHECK_EQ(mcg_large_free(chunk(q)), 0);

	/* A class at least a quarter of its size (640 KiB, 8 classes below):
	 * handed out whole. */
	char *r = mcg_large_alloc(600 * K, 16);
	CHECK(r == p);
	REQUIRE(r);
	CHECK_EQ(chunk(r)->large_size, 2 * M);
	CHECK_EQ(mcg_os_mapped_bytes(), mapped0 + HDR + 2 * M);
	CHECK_EQ(mcg_large_in_use(), in_use0 + HDR + 2 * M);
	CHECK_EQ(mcg_large_free(chunk(r)), 0);

	/* A class under a quarter of its size (320 KiB, 11 classes below):
	 * cut down, its tail unmapped. */
	r = mcg_large_alloc(300 * K, 16);
	CHECK(r == p);
	REQUIRE(r);
	CHECK_EQ(chunk(r)->large_size, 320 * K);
	CHECK_EQ(chunk(r)->map_size, HDR + 320 * K);
	CHECK_EQ(mcg_os_mapped_bytes(), mapped0 + HDR + 320 * K);
	CHECK_EQ(mcg_large_in_use(), in_use0 + HDR + 320 * K);
	CHECK(filled(r, 320 * K, 0x5a));
	CHECK_EQ(mcg_large_free(chunk(r)), 0);

	/* A larger class than any retained: the retained block grown (in
	 * place or moved), its pages kept, no mapping beside it. */
	char *s = mcg_large_alloc(700 * K, 16);
	REQUIRE(s);
	CHECK_EQ(chunk(s)->large_size, 768 * K);
	CHECK_EQ(chunk(s)->map_size, HDR + 768 * K);
	CHECK_EQ(chunk(s)->large_zero, 0);
	CHECK(filled(s, 320 * K, 0x5a));
	CHECK_EQ(mcg_large_retained(), 0);
	CHECK_EQ(mcg_os_mapped_bytes(), mapped0 + HDR + 768 * K);
	CHECK(s == r || !mcg_chunk_owned(r));   /* moved: its old place is no longer memcg's */
	char *t = mcg_large_alloc(300 * K, 16); /* nothing retained: a new mapping */
	REQUIRE(t);
	CHECK(t != s);
	CHECK_EQ(chunk(t)->large_zero, 1);
	CHECK_EQ(mcg_os_mapped_bytes(), mapped0 + 2 * HDR + 768 * K + 320 * K);

	/* Retained: 320 KiB (t) and 4 MiB (u).  A 768 KiB class grows the
	 * smaller rather than cut the one more than four times its size. */
	char *u = mcg_large_alloc(4 * M, 16);
	REQUIRE(u);
	CHECK_EQ(mcg_large_free(chunk(t)), 0);
	CHECK_EQ(mcg_large_free(chunk(u)), 0);
	char *v = mcg_large_alloc(700 * K, 16);
	REQUIRE(v);
	CHECK(v != u);
	CHECK(v == t || !mcg_chunk_owned(t));
	CHECK_EQ(chunk(v)->large_size, 768 * K);
	CHECK_EQ(mcg_large_retained(), HDR + 4 * M);
	CHECK_EQ(mcg_large_free(chunk(v)), 0);
	CHECK_EQ(mcg_large_free(chunk(s)), 0);
	CHECK_EQ(mcg_large_retained(), 3 * HDR + 4 * M + 2 * 768 * K);

	/* Blocks the cache never takes: aligned past the header's unit, and
	 * above the largest class.  Freed, they are unmapped. */
	size_t retained = mcg_large_retained();
	char *a = mcg_large_alloc(600 * K, M);
	REQUIRE(a);
	CHECK_EQ((uintptr_t)a % M, 0);
	CHECK(a != p && a != s);
	CHECK_EQ(mcg_large_retained(), retained);
	CHECK_EQ(mcg_large_free(chunk(a)), 0);
	CHECK(!mcg_chunk_owned(a));
	char *h = mcg_large_alloc(70 * M, 16);
	REQUIRE(h);
	CHECK_EQ(chunk(h)->large_size, 70 * M);
	CHECK_EQ(mcg_large_free(chunk(h)), 0);
	CHECK(!mcg_chunk_owned(h));
	CHECK_EQ(mcg_large_retained(), retained);
	CHECK_EQ(mcg_large_in_use(), in_use0);

	/* Flush: everything retained is unmapped. */
	CHECK_EQ(mcg_large_flush(), retained);
	CHECK_EQ(mcg_large_retained(), 0);
	CHECK_EQ(mcg_os_mapped_bytes(), mapped0);
	CHECK(!mcg_chunk_owned(s) && !mcg_chunk_owned(u) && !mcg_chunk_owned(v));
	CHECK_EQ(mcg_large_flush(), 0);
}

static void test_double_free_refused(void)
{
	reset();
	char *p = mcg_large_alloc(M, 16);
	REQUIRE(p);
	struct mcg_chunk *c = chunk(p);
	CHECK_EQ(mcg_large_free(c), 0);
	size_t retained = mcg_large_retained(), in_use = mcg_large_in_use();
	CHECK_EQ(mcg_large_free(c), -EALREADY);
	CHECK_EQ(mcg_large_retained(), retained);
	CHECK_EQ(mcg_large_in_use(), in_use);
	/* Still retained once: it comes back once, then a new block. */
	char *q = mcg_large_alloc(M, 16), *r = mcg_large_alloc(M, 16);
	CHECK(q == p);
	CHECK(r && r != p);
	mcg_large_free(chunk(q));
	mcg_large_free(chunk(r));
	mcg_large_flush();
}

/*
 * The cap: a floor of 4 MiB plus half the most in use of the last steps.
 * Eight 1 MiB blocks (1 MiB + 64 KiB mapped each, 8.5 MiB at the peak)
 * allow 4 MiB + 4.25 MiB = 8.25 MiB retained: seven of them; freeing the
 * eighth pushes the oldest out.
 */
static void test_cap(void)
{
	reset();
	CHECK_EQ(mcg_large_cap(), MCG_LARGE_RETAIN_FLOOR);
	enum { N = 8 };
	const size_t map = HDR + M;
	char *b[N];
	for (int i = 0; i < N; i++) {
		b[i] = mcg_large_alloc(M, 16);
		REQUIRE(b[i]);
		b[i][0] = (char)i;
	}
	CHECK_EQ(mcg_large_cap(), MCG_LARGE_RETAIN_FLOOR + N * map / 2);
	size_t mapped = mcg_os_mapped_bytes();
	for (int i = 0; i < N; i++)
		CHECK_EQ(mcg_large_free(chunk(b[i])), 0);
	CHECK_EQ(mcg_large_retained(), (N - 1) * map);
	CHECK_EQ(mcg_os_mapped_bytes(), mapped - map);
	CHECK(!mcg_chunk_owned(b[0])); /* the oldest went */
	CHECK(mcg_chunk_owned(b[N - 1]));
	CHECK(mcg_large_retained() <= mcg_large_cap());

	/* A block larger than the cap allows is never retained. */
	reset();
	char *big = mcg_large_alloc(16 * M, 16);
	REQUIRE(big);
	CHECK(HDR + 16 * M > mcg_large_cap());
	CHECK_EQ(mcg_large_free(chunk(big)), 0);
	CHECK_EQ(mcg_large_retained(), 0);
	CHECK(!mcg_chunk_owned(big));
}

/*
 * Aging: a block retained before a step stays through it and goes at the
 * next; one retained again between steps starts over; after two steps
 * with nothing in use the cap is back at its floor.
 */
static void test_age(void)
{
	reset();
	enum { N = 4 };
	const size_t map = HDR + 512 * K;
	char *b[N];
	for (int i = 0; i < N; i++) {
		b[i] = mcg_large_alloc(512 * K, 16);
		REQUIRE(b[i]);
	}
	for (int i = 0; i < N; i++)
		mcg_large_free(chunk(b[i]));
	size_t mapped = mcg_os_mapped_bytes();
	CHECK_EQ(mcg_large_retained(), N * map);
	CHECK_EQ(mcg_large_age(), 0); /* retained since the last step: they stay */
	CHECK_EQ(mcg_large_retained(), N * map);
	CHECK_EQ(mcg_large_cap(), MCG_LARGE_RETAIN_FLOOR + N * map / 2); /* the peak before */
	/* One is used again: it is the newest, and retained anew. */
	char *again = mcg_large_alloc(512 * K, 16);
	CHECK(again == b[N - 1]);
	REQUIRE(again);
	mcg_large_free(chunk(again));
	CHECK_EQ(mcg_large_age(), (N - 1) * map);
	CHECK_EQ(mcg_large_retained(), map);
	CHECK(mcg_chunk_owned(b[N - 1]) && !mcg_chunk_owned(b[0]));
	CHECK_EQ(mcg_large_age(), map);
	CHECK_EQ(mcg_large_retained(), 0);
	CHECK_EQ(mcg_os_mapped_bytes(), mapped - N * map);
	CHECK_EQ(mcg_large_cap(), MCG_LARGE_RETAIN_FLOOR);
	CHECK_EQ(mcg_large_age(), 0);
}

/*
 * The cap falling at an aging step below what is retained (fresh blocks,
 * which the step's age keeps): the oldest go until the rest fits under
 * the new cap, the floor plus half the last period's peak.  And an
 * alignment past half a chunk is refused.
 */
static void test_cap_falls_at_age(void)
{
	reset();
	enum { N = 20 };
	const size_t map = HDR + 512 * K;
	char *b[N];
	for (int i = 0; i < N; i++) {
		b[i] = mcg_large_alloc(512 * K, 16);
		REQUIRE(b[i]);
	}
	for (int i = 0; i < N; i++)
		mcg_large_free(chunk(b[i]));
	size_t r1 = mcg_large_retained();
	REQUIRE(r1 > 2 * MCG_LARGE_RETAIN_FLOOR && r1 % map == 0);
	CHECK_EQ(mcg_large_age(), 0); /* fresh: they stay, the cap too (the peak before) */
	CHECK_EQ(mcg_large_retained(), r1);
	/* Every retained block used again and freed: all fresh, this period's peak r1. */
	size_t k = r1 / map;
	for (size_t i = 0; i < k; i++) {
		b[i] = mcg_large_alloc(512 * K, 16);
		REQUIRE(b[i]);
	}
	CHECK_EQ(mcg_large_retained(), 0);
	for (size_t i = 0; i < k; i++)
		mcg_large_free(chunk(b[i]));
	CHECK_EQ(mcg_large_retained(), r1);
	size_t cap = MCG_LARGE_RETAIN_FLOOR + r1 / 2, want = r1;
	while (want > cap)
		want -= map;
	CHECK_EQ(mcg_large_age(), r1 - want);
	CHECK_EQ(mcg_large_retained(), want);
	CHECK_EQ(mcg_large_cap(), cap);
	CHECK(mcg_large_alloc(4096, MCG_CHUNK_SIZE) == NULL);
	reset();
}

/* Is [@addr, @addr + @len) free address space?  (Probed by mapping it.) */
static int space_free(void *addr, size_t len)
{
	void *p = mmap(addr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
	               0);
	if (p == MAP_FAILED)
		return 0;
	munmap(p, len);
	return p == addr;
}

static void test_resize(void)
{
	reset();
	size_t mapped0 = mcg_os_mapped_bytes(), in_use0 = mcg_large_in_use();
	/* A block with 2 MiB of free address space after it: the first of a
	 * few new ones (a new mapping is trimmed to its alignment, so its tail
	 * is usually free). */
	enum { TRIES = 8 };
	char *p = NULL, *spare[TRIES];
	int nspare = 0;
	while (nspare < TRIES) {
		p = mcg_large_alloc(600 * K, 16);
		REQUIRE(p);
		if (space_free((char *)chunk(p) + chunk(p)->map_size, 2 * M))
			break;
		spare[nspare++] = p;
	}
	for (int i = 0; i < nspare; i++)
		mcg_large_free(chunk(spare[i]));
	mcg_large_flush();
	REQUIRE(nspare < TRIES);
	CHECK_EQ(mcg_os_mapped_bytes(), mapped0 + HDR + 640 * K);
	struct mcg_chunk *c = chunk(p);
	fill(p, 600 * K, 0x31);

	/* The same class: nothing to do. */
	CHECK(mcg_large_resize(c, 630 * K) == c);
	CHECK_EQ(c->map_size, HDR + 640 * K);

	/* Grow in place: the space after the mapping is free. */
	struct mcg_chunk *n = mcg_large_resize(c, 2 * M);
	CHECK(n == c);
	REQUIRE(n);
	CHECK_EQ(n->large_size, 2 * M);
	CHECK_EQ(n->map_size, HDR + 2 * M);
	CHECK(filled(n->large_ptr, 600 * K, 0x31));
	CHECK(filled((char *)n->large_ptr + 640 * K, 2 * M - 640 * K, 0)); /* new pages */
	CHECK_EQ(mcg_os_mapped_bytes(), mapped0 + HDR + 2 * M);
	CHECK_EQ(mcg_large_in_use(), in_use0 + HDR + 2 * M);

	/* Grow where the space after is taken: the mapping moves, aligned,
	 * registered at its new place only, contents kept, no copy. */
	char *end = (char *)c + c->map_size;
	void *blocker = mmap(end, 4096, PROT_NONE,
	                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	REQUIRE(blocker == end);
	n = mcg_large_resize(c, 3 * M);
	munmap(blocker, 4096);
	REQUIRE(n);
	CHECK(n != c);
	CHECK_EQ((uintptr_t)n % MCG_CHUNK_SIZE, 0);
	CHECK(mcg_chunk_of(n->large_ptr) == n);
	CHECK(!mcg_chunk_owned(c));
	CHECK_EQ(n->magic, MCG_CHUNK_MAGIC);
	CHECK_EQ(n->kind, MCG_CHUNK_LARGE);
	CHECK_EQ(n->large_size, 3 * M);
	CHECK((char *)n->large_ptr == (char *)n + HDR);
	CHECK(filled(n->large_ptr, 600 * K, 0x31));
	CHECK_EQ(mcg_os_mapped_bytes(), mapped0 + HDR + 3 * M);
	CHECK_EQ(mcg_large_in_use(), in_use0 + HDR + 3 * M);
	c = n;

	/* Shrink: in place, the tail unmapped. */
	fill(c->large_ptr, 3 * M, 0x32);
	n = mcg_large_resize(c, 300 * K);
	CHECK(n == c);
	REQUIRE(n);
	CHECK_EQ(c->large_size, 320 * K);
	CHECK(filled(c->large_ptr, 320 * K, 0x32));
	CHECK_EQ(mcg_os_mapped_bytes(), mapped0 + HDR + 320 * K);
	CHECK_EQ(mcg_large_in_use(), in_use0 + HDR + 320 * K);

	/* Too large: refused, untouched. */
	CHECK(mcg_large_resize(c, SIZE_MAX - 4096) == NULL);
	CHECK_EQ(c->large_size, 320 * K);

	/* A resized block is retained at its new class. */
	CHECK_EQ(mcg_large_free(c), 0);
	CHECK_EQ(mcg_large_retained(), HDR + 320 * K);
	CHECK_EQ(mcg_large_in_use(), in_use0);
	mcg_large_flush();
	CHECK_EQ(mcg_os_mapped_bytes(), mapped0);
}

static void test_faults(void)
{
	reset();
	size_t mapped0 = mcg_os_mapped_bytes(), in_use0 = mcg_large_in_use();
	/* A new mapping fails at the fault point: NULL, nothing left. */
	mcg_fault_inject(1, 0);
	void *p = mcg_large_alloc(M, 16);
	CHECK_EQ(mcg_fault_failed(), 1);
	mcg_fault_inject(0, 0);
	CHECK(p == NULL);
	CHECK_EQ(mcg_os_mapped_bytes(), mapped0);
	CHECK_EQ(mcg_large_in_use(), in_use0);

	/* A retained block needs no OS call: it is handed out even so. */
	p = mcg_large_alloc(M, 16);
	REQUIRE(p);
	mcg_large_free(chunk(p));
	mcg_fault_inject(1, 1);
	void *q = mcg_large_alloc(M, 16);
	unsigned long calls = mcg_fault_count();
	mcg_fault_inject(0, 0);
	CHECK(q == p);
	CHECK_EQ(calls, 0);
	REQUIRE(q);

	/* A growth that fails leaves the block as it was, registered. */
	struct mcg_chunk *c = chunk(q);
	fill(q, M, 0x44);
	mcg_fault_inject(1, 0);
	struct mcg_chunk *n = mcg_large_resize(c, 4 * M);
	CHECK_EQ(mcg_fault_failed(), 1);
	mcg_fault_inject(0, 0);
	CHECK(n == NULL);
	CHECK(mcg_chunk_of(q) == c);
	CHECK_EQ(c->large_size, M);
	CHECK_EQ(c->map_size, HDR + M);
	CHECK(filled(q, M, 0x44));
	CHECK_EQ(mcg_large_in_use(), in_use0 + HDR + M);
	/* A shrink never fails (no OS request that can). */
	mcg_fault_inject(1, 1);
	n = mcg_large_resize(c, 400 * K);
	calls = mcg_fault_count();
	mcg_fault_inject(0, 0);
	CHECK(n == c);
	CHECK_EQ(calls, 0);
	mcg_large_free(c);
	mcg_large_flush();
	CHECK_EQ(mcg_os_mapped_bytes(), mapped0);
	CHECK_EQ(mcg_large_in_use(), in_use0);

	/* A retained block too small, whose growth fails: it goes back to the
	 * OS, and a new mapping serves (once), or nothing does (sticky). */
	for (int sticky = 0; sticky <= 1; sticky++) {
		p = mcg_large_alloc(300 * K, 16);
		REQUIRE(p);
		mcg_large_free(chunk(p));
		CHECK_EQ(mcg_large_retained(), HDR + 320 * K);
		mcg_fault_inject(1, sticky);
		q = mcg_large_alloc(700 * K, 16);
		unsigned long failed = mcg_fault_failed();
		mcg_fault_inject(0, 0);
		CHECK_EQ(failed, sticky ? 2 : 1);
		CHECK_EQ(mcg_large_retained(), 0);
		if (sticky) {
			CHECK(q == NULL);
			CHECK(!mcg_chunk_owned(p));
			CHECK_EQ(mcg_os_mapped_bytes(), mapped0);
		} else {
			REQUIRE(q);
			CHECK_EQ(chunk(q)->large_zero, 1); /* new (maybe where p was) */
			CHECK_EQ(mcg_os_mapped_bytes(), mapped0 + HDR + 768 * K);
			mcg_large_free(chunk(q));
			mcg_large_flush();
		}
		CHECK_EQ(mcg_large_in_use(), in_use0);
	}
}

/* A block grown by resize raises the peak in use as an allocation of its
 * size would, and the retention cap with it (the floor + half the peak). */
static void test_resize_peak(void)
{
	reset();
	char *p = mcg_large_alloc(600 * K, 16);
	REQUIRE(p);
	size_t in_use = mcg_large_in_use();
	struct mcg_chunk *n = mcg_large_resize(chunk(p), 16 * M);
	REQUIRE(n);
	CHECK_EQ(mcg_large_in_use(), in_use - (HDR + 640 * K) + HDR + 16 * M);
	CHECK_EQ(mcg_large_cap(), MCG_LARGE_RETAIN_FLOOR + mcg_large_in_use() / 2);
	n = mcg_large_resize(n, 300 * K); /* shrinking leaves the peak */
	REQUIRE(n);
	CHECK_EQ(mcg_large_in_use(), in_use - (HDR + 640 * K) + HDR + 320 * K);
	CHECK_EQ(mcg_large_cap(), MCG_LARGE_RETAIN_FLOOR + (in_use - 640 * K + 16 * M) / 2);
	CHECK_EQ(mcg_large_free(n), 0);
	reset();
}

int main(void)
{
	RUN(test_classes);
	RUN(test_reuse);
	RUN(test_cap_falls_at_age);
	RUN(test_double_free_refused);
	RUN(test_cap);
	RUN(test_age);
	RUN(test_resize);
	RUN(test_resize_peak);
	RUN(test_faults);
	return test_done();
}
