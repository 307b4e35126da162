/* SPDX-License-Identifier: MIT */
/*
 * test_readahead.c - the readahead window (pagecache/readahead.c): the
 * kernel's get_init_ra_size / get_next_ra_size, and the windows a
 * sequential reader gets, read through a real file.
 */
#include <errno.h>
#include <fcntl.h>

#include "group_file.h"
#include "memcg/debug.h"
#include "memcg/file.h"
#include "memcg/memcg.h"
#include "pagecache/filemap.h"
#include "pagecache/pcg.h"
#include "test.h"
#include "tmpdir.h"

static char dir[PATH_MAX];

/* init: roundup_pow_of_two(req), x4 up to max/32, x2 up to max/4, else max. */
static void test_sizes(void)
{
	CHECK_EQ(mcg_ra_init_size(1, 32), 4);
	CHECK_EQ(mcg_ra_init_size(2, 32), 4); /* 2 > 32/32: x2 */
	CHECK_EQ(mcg_ra_init_size(3, 32), 8); /* 4 <= 32/4: x2 */
	CHECK_EQ(mcg_ra_init_size(8, 32), 8 * 2);
	CHECK_EQ(mcg_ra_init_size(9, 32), 32); /* 16 > 8: max */
	CHECK_EQ(mcg_ra_init_size(100, 32), 32);
	CHECK_EQ(mcg_ra_init_size(1, 256), 4 * 1);
	CHECK_EQ(mcg_ra_init_size(8, 256), 32); /* 8 <= 256/32: x4 */
	/* next: x4 below max/16, x2 up to max/2, then max. */
	CHECK_EQ(mcg_ra_next_size(1, 32), 4);
	CHECK_EQ(mcg_ra_next_size(2, 32), 4);
	CHECK_EQ(mcg_ra_next_size(4, 32), 8);
	CHECK_EQ(mcg_ra_next_size(16, 32), 32);
	CHECK_EQ(mcg_ra_next_size(17, 32), 32);
	CHECK_EQ(mcg_ra_next_size(32, 32), 32);
}

/* One page at a time: windows of 4, 8, 16, 32, 32... each read when the
 * reader reaches the first page of the window before it. */
static void test_windows(void)
{
	char path[PATH_MAX];
	tmpdir_path(path, sizeof(path), dir, "ra");
	mcg_file_t *f;
	mcg_file_opts_t o = {NULL, MCG_FILE_NO_DIRECT};
	REQUIRE(!mcg_file_open(path, O_RDWR | O_CREAT | O_TRUNC, 0644, &o, &f));
	static char b[128 * 4096];
	memset(b, 7, sizeof(b));
	CHECK_EQ(mcg_file_pwrite(f, b, sizeof(b), 0), (ssize_t)sizeof(b));
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK_EQ(mcg_file_drop_caches(), 128);
	long cached[8];
	int k = 0;
	char page[4096];
	for (int i = 0; i < 64; i++) {
		CHECK_EQ(mcg_file_pread(f, page, 4096, (off_t)i * 4096), 4096);
		if (i == 0 || i == 3 || i == 4 || i == 12 || i == 28 || i == 60) {
			mcg_file_stat_t st;
			mcg_file_stat(f, &st);
			cached[k++] = st.pages;
		}
	}
	/* Page 0: the first window [0, 4), async 4 - 1 = 3: the marker at 1.
	 * Page 1: the next window [4, 12) (x2), marked at its first page;
	 * page 4: [12, 28); page 12: [28, 60); then 32 at a time.  The reader
	 * is never more than two windows behind the cache's end, as the
	 * kernel's (the marker is the first page of each window). */
	long want[] = {4, 12, 28, 60, 92, 124};
	REQUIRE(k == 6);
	for (int j = 0; j < k; j++)
		CHECK_EQ(cached[j], want[j]);
	mcg_file_close(f);
	mcg_file_drop_caches();
}

/* Pages of @f cached now. */
static long cached_pages(mcg_file_t *f)
{
	mcg_file_stat_t st;
	mcg_file_stat(f, &st);
	return st.pages;
}

/*
 * mcg_ra_read() itself: an empty file reads nothing; a page that cannot be
 * had (a fault sweep over the allocations) ends the read there - an error
 * only when it is a demanded page, the pages before it read and whole;
 * a run past the demand whose read fails is dropped without an error.
 */
static void test_read_limits(void)
{
	char path[PATH_MAX];
	tmpdir_path(path, sizeof(path), dir, "ra_limits");
	mcg_file_t *f;
	mcg_file_opts_t o = {NULL, MCG_FILE_NO_DIRECT};
	REQUIRE(!mcg_file_open(path, O_RDWR | O_CREAT | O_TRUNC, 0644, &o, &f));
	struct mcg_pcg *pcg = mcg_pcg_of(NULL);
	CHECK_EQ(mcg_ra_read(f->inode, pcg, 0, 8, UINT64_MAX, 0), 0);
	CHECK_EQ(cached_pages(f), 0);
	static char b[80 * 4096];
	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (char)(i / 4096 + i * 5);
	CHECK_EQ(mcg_file_pwrite(f, b, sizeof(b), 0), (ssize_t)sizeof(b));
	CHECK_EQ(mcg_file_fsync(f), 0);
	int done = 0, demanded = 0, ahead = 0;
	for (unsigned long n = 1; n < 400 && !done; n++) {
		mcg_file_drop_caches();
		mcg_fault_inject(n, 0);
		int err = mcg_ra_read(f->inode, pcg, 0, 70, UINT64_MAX, 1);
		unsigned long hit = mcg_fault_failed();
		mcg_fault_inject(0, 0);
		long got = cached_pages(f);
		if (!hit) {
			CHECK_EQ(err, 0);
			CHECK_EQ(got, 70);
			done = 1;
		} else {
			CHECK(got < 70);
			CHECK_EQ(err, got < 2 ? -ENOMEM : 0);
			demanded += got < 2;
			ahead += got >= 2;
		}
		char page[4096];
		for (long i = 0; i < got; i++) {
			CHECK_EQ(mcg_file_pread(f, page, 4096, (off_t)i * 4096), 4096);
			CHECK(!memcmp(page, b + i * 4096, 4096));
		}
	}
	CHECK(done);
	CHECK(demanded >= 2 && ahead >= 60); /* (a page, and past 64 a leaf, in three runs) */
	/* Page 1 cached: runs [0, 1) and [2, 8); the second's read fails. */
	mcg_file_drop_caches();
	char page[4096];
	CHECK_EQ(mcg_ra_read(f->inode, pcg, 1, 1, UINT64_MAX, 1), 0);
	CHECK_EQ(cached_pages(f), 1);
	REQUIRE(!mcg_fault_inject_io(2, 0, EIO, MCG_FAULT_IO_READ));
	CHECK_EQ(mcg_ra_read(f->inode, pcg, 0, 8, UINT64_MAX, 0), 0);
	CHECK_EQ(mcg_fault_io_failed(), 1);
	mcg_fault_inject_io(0, 0, 0, 0);
	CHECK_EQ(cached_pages(f), 2);
	CHECK_EQ(mcg_file_pread(f, page, 4096, 0), 4096);
	CHECK(!memcmp(page, b, 4096));
	mcg_file_close(f);
	mcg_file_drop_caches();
}

/* A marker page reached with no window of this handle's: a window after
 * it (the first size's next: 8 pages), read ahead; at the new window's
 * marker the one after it. */
static void test_marker_without_state(void)
{
	char path[PATH_MAX];
	tmpdir_path(path, sizeof(path), dir, "ra_marker");
	mcg_file_t *f;
	mcg_file_opts_t o = {NULL, MCG_FILE_NO_DIRECT};
	REQUIRE(!mcg_file_open(path, O_RDWR | O_CREAT | O_TRUNC, 0644, &o, &f));
	static char b[64 * 4096];
	memset(b, 9, sizeof(b));
	CHECK_EQ(mcg_file_pwrite(f, b, sizeof(b), 0), (ssize_t)sizeof(b));
	CHECK_EQ(mcg_file_fsync(f), 0);
	mcg_file_drop_caches();
	struct mcg_pcg *pcg = mcg_pcg_of(NULL);
	mcg_ra_marker(f, pcg, 5);
	CHECK_EQ(f->ra.start, 6);
	CHECK_EQ(f->ra.size, 8);
	CHECK_EQ(cached_pages(f), 8); /* [6, 14) */
	mcg_ra_marker(f, pcg, 6);     /* the window's marker: the next, [14, 30) */
	CHECK_EQ(f->ra.start, 14);
	CHECK_EQ(f->ra.size, 16);
	CHECK_EQ(cached_pages(f), 24);
	/* A marker that is not the window's: after it, the size's next (32),
	 * [41, 73) cut at the file's end: [41, 64). */
	mcg_ra_marker(f, pcg, 40);
	CHECK_EQ(f->ra.start, 41);
	CHECK_EQ(f->ra.size, 32);
	CHECK_EQ(cached_pages(f), 24 + 23);
	mcg_file_close(f);
	mcg_file_drop_caches();
}

int main(void)
{
	mcg_options_use_env(0);
	if (tmpdir_make(dir, sizeof(dir), NULL)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_sizes);
	RUN(test_windows);
	RUN(test_read_limits);
	RUN(test_marker_without_state);
	tmpdir_remove(dir);
	return test_done();
}
