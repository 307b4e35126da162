/* SPDX-License-Identifier: MIT */
/*
 * test_file_direct.c - the page cache over O_DIRECT backing files
 * (pagecache/io.c's probe, writeback's whole pages and the size fixed up
 * after them, reads of a partial last page).  Skips (77) where the test's
 * directory does not take O_DIRECT (tmpfs on old kernels, some overlays).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>

#include "memcg/debug.h"
#include "memcg/file.h"
#include "memcg/memcg.h"
#include "test.h"
#include "tmpdir.h"

static char dir[PATH_MAX];

static const char *path_of(const char *name)
{
	static char p[PATH_MAX];
	return tmpdir_path(p, sizeof(p), dir, name);
}

static void fill(char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (char)(seed + i * 31 + (i >> 9));
}

static bool direct_works(void)
{
	mcg_file_t *f;
	if (mcg_file_open(path_of("probe"), O_RDWR | O_CREAT, 0644, NULL, &f))
		return false;
	mcg_file_stat_t st;
	mcg_file_stat(f, &st);
	mcg_file_close(f);
	return st.direct_align > 0;
}

/* A size that is not a page multiple survives writeback of whole pages. */
static void test_unaligned_size(void)
{
	mcg_file_t *f;
	REQUIRE(!mcg_file_open(path_of("tail"), O_RDWR | O_CREAT | O_TRUNC, 0644, NULL, &f));
	mcg_file_stat_t st;
	mcg_file_stat(f, &st);
	CHECK(st.direct_align >= 512 && st.direct_align <= 4096);
	enum { SIZE = 5 * 4096 + 123 };
	char b[SIZE], r[SIZE];
	fill(b, SIZE, 1);
	CHECK_EQ(mcg_file_pwrite(f, b + 7, SIZE - 7, 7), SIZE - 7);
	CHECK_EQ(mcg_file_pwrite(f, b, 7, 0), 7);
	CHECK_EQ(mcg_file_fsync(f), 0);
	size_t len;
	char *disk = tmpdir_read_file(path_of("tail"), &len);
	CHECK_EQ(len, SIZE);
	CHECK(disk && !memcmp(disk, b, SIZE));
	free(disk);
	/* Read back from the file through O_DIRECT: the partial last page. */
	mcg_file_close(f);
	CHECK(mcg_file_drop_caches() >= 6);
	REQUIRE(!mcg_file_open(path_of("tail"), O_RDONLY, 0, NULL, &f));
	CHECK_EQ(mcg_file_pread(f, r, SIZE, 0), SIZE);
	CHECK(!memcmp(r, b, SIZE));
	CHECK_EQ(mcg_file_pread(f, r, 100, SIZE - 50), 50);
	mcg_file_close(f);
}

/* Appends past a page written already: each fsync leaves the exact size. */
static void test_appends(void)
{
	mcg_file_t *f;
	REQUIRE(!mcg_file_open(path_of("append"), O_RDWR | O_CREAT | O_TRUNC, 0644, NULL, &f));
	char all[40000];
	fill(all, sizeof(all), 2);
	size_t at = 0;
	for (size_t step = 1000; at < sizeof(all); step += 777) {
		size_t n = step < sizeof(all) - at ? step : sizeof(all) - at;
		CHECK_EQ(mcg_file_pwrite(f, all + at, n, (off_t)at), (ssize_t)n);
		at += n;
		CHECK_EQ(mcg_file_fdatasync(f), 0);
		struct stat st;
		CHECK(!stat(path_of("append"), &st) && (size_t)st.st_size == at);
	}
	size_t len;
	char *disk = tmpdir_read_file(path_of("append"), &len);
	CHECK(disk && len == sizeof(all) && !memcmp(disk, all, len));
	free(disk);
	mcg_file_close(f);
}

/* An injected short direct write is continued, aligned, and loses nothing. */
static void test_short_write(void)
{
	mcg_file_t *f;
	REQUIRE(!mcg_file_open(path_of("short"), O_RDWR | O_CREAT | O_TRUNC, 0644, NULL, &f));
	char b[64 * 4096];
	fill(b, sizeof(b), 3);
	CHECK_EQ(mcg_file_pwrite(f, b, sizeof(b), 0), (ssize_t)sizeof(b));
	REQUIRE(!mcg_fault_inject_io(1, 0, 0, MCG_FAULT_IO_WRITE)); /* one short write */
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK_EQ(mcg_fault_io_failed(), 1);
	mcg_fault_inject_io(0, 0, 0, 0);
	size_t len;
	char *disk = tmpdir_read_file(path_of("short"), &len);
	CHECK(disk && len == sizeof(b) && !memcmp(disk, b, len));
	free(disk);
	mcg_file_close(f);
}

/* Truncate on an O_DIRECT file, then writes after it. */
static void test_truncate_direct(void)
{
	mcg_file_t *f;
	REQUIRE(!mcg_file_open(path_of("trd"), O_RDWR | O_CREAT | O_TRUNC, 0644, NULL, &f));
	char b[3 * 4096];
	fill(b, sizeof(b), 4);
	CHECK_EQ(mcg_file_pwrite(f, b, sizeof(b), 0), (ssize_t)sizeof(b));
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK_EQ(mcg_file_truncate(f, 5000), 0);
	CHECK_EQ(mcg_file_pwrite(f, "end", 3, 6000), 3);
	CHECK_EQ(mcg_file_fsync(f), 0);
	size_t len;
	char *disk = tmpdir_read_file(path_of("trd"), &len);
	CHECK_EQ(len, 6003);
	CHECK(disk && !memcmp(disk, b, 5000));
	bool zeros = true;
	for (int i = 5000; disk && i < 6000; i++)
		zeros &= !disk[i];
	CHECK(zeros);
	CHECK(disk && !memcmp(disk + 6000, "end", 3));
	free(disk);
	mcg_file_close(f);
}

/* Option file_direct_io 0: a file opened asking for nothing is buffered
 * (a file cached already keeps its mode: a new name here). */
static void test_option_off(void)
{
	REQUIRE(!mcg_option_set("file_direct_io", 0));
	mcg_file_t *f;
	mcg_file_opts_t o = {NULL, 0};
	REQUIRE(!mcg_file_open(path_of("opt_off"), O_RDWR | O_CREAT, 0644, &o, &f));
	mcg_file_stat_t st;
	mcg_file_stat(f, &st);
	CHECK_EQ(st.direct_align, 0);
	char b[4096];
	fill(b, sizeof(b), 3);
	CHECK_EQ(mcg_file_pwrite(f, b, 100, 0), 100);
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK_EQ(mcg_file_close(f), 0);
	mcg_file_drop_caches();
	REQUIRE(!mcg_option_set("file_direct_io", 1));
	REQUIRE(!mcg_file_open(path_of("opt_off"), O_RDWR, 0, &o, &f));
	mcg_file_stat(f, &st);
	CHECK(st.direct_align > 0); /* the option back: O_DIRECT again */
	char r[100];
	CHECK_EQ(mcg_file_pread(f, r, 100, 0), 100);
	CHECK(!memcmp(r, b, 100));
	CHECK_EQ(mcg_file_close(f), 0);
}

int main(void)
{
	mcg_options_use_env(0);
	if (tmpdir_make(dir, sizeof(dir), NULL)) {
		perror("mkdtemp");
		return 1;
	}
	if (!direct_works()) {
		fprintf(stderr, "SKIP: O_DIRECT does not work in %s\n", dir);
		mcg_file_drop_caches();
		tmpdir_remove(dir);
		return 77;
	}
	RUN(test_unaligned_size);
	RUN(test_appends);
	RUN(test_short_write);
	RUN(test_truncate_direct);
	RUN(test_option_off);
	mcg_file_sync_all();
	mcg_file_drop_caches();
	tmpdir_remove(dir);
	return test_done();
}
