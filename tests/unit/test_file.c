/* SPDX-License-Identifier: MIT */
/*
 * test_file.c - the page cache's public calls (memcg/file.h, pagecache/
 * file.c): reads, writes, vectored forms, truncate, size, fsync, bad
 * arguments, charging to groups, memory.stat exact at rest, reparenting.
 * Files live in a mkdtemp directory; the backing I/O is buffered here
 * (MCG_FILE_NO_DIRECT: the fallback works wherever the tests run);
 * test_file_direct.c covers O_DIRECT.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "group_file.h"
#include "memcg/debug.h"
#include "memcg/file.h"
#include "memcg/memcg.h"
#include "memcg/reclaim.h"
#include "pagecache/flusher.h"
#include "test.h"
#include "tmpdir.h"

static char dir[PATH_MAX];
static const mcg_file_opts_t buffered = {NULL, MCG_FILE_NO_DIRECT};

static const char *path_of(const char *name)
{
	static char p[PATH_MAX];
	return tmpdir_path(p, sizeof(p), dir, name);
}

static void fill(char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (char)(seed * 131 + i * 7 + (i >> 12));
}

static mcg_file_t *open_new(const char *name, const mcg_file_opts_t *opts)
{
	mcg_file_t *f = NULL;
	unlink(path_of(name));
	int err = mcg_file_open(path_of(name), O_RDWR | O_CREAT, 0644, opts, &f);
	CHECK_EQ(err, 0);
	return f;
}

static void test_bad_arguments(void)
{
	mcg_file_t *f;
	CHECK_EQ(mcg_file_open(NULL, O_RDONLY, 0, NULL, &f), -EINVAL);
	CHECK_EQ(mcg_file_open(path_of("x"), O_RDONLY | O_APPEND, 0, NULL, &f), -EINVAL);
	CHECK_EQ(mcg_file_open(path_of("x"), O_RDONLY, 0, NULL, NULL), -EINVAL);
	mcg_file_opts_t bad = {NULL, 0x80};
	CHECK_EQ(mcg_file_open(path_of("x"), O_RDWR | O_CREAT, 0644, &bad, &f), -EINVAL);
	CHECK_EQ(mcg_file_open(path_of("missing"), O_RDONLY, 0, NULL, &f), -ENOENT);
	CHECK_EQ(mcg_file_open(dir, O_RDONLY, 0, NULL, &f), -EISDIR);
	f = open_new("bad", &buffered);
	REQUIRE(f);
	char b[8];
	CHECK_EQ(mcg_file_pread(f, b, 8, -1), -EINVAL);
	CHECK_EQ(mcg_file_pwrite(f, b, 8, -1), -EINVAL);
	CHECK_EQ(mcg_file_preadv(f, NULL, 1, 0), -EINVAL);
	struct iovec iov = {b, 8};
	CHECK_EQ(mcg_file_pwritev(f, &iov, 0, 0), -EINVAL);
	CHECK_EQ(mcg_file_pwritev(f, &iov, 1025, 0), -EINVAL);
	CHECK_EQ(mcg_file_truncate(f, -1), -EINVAL);
	CHECK_EQ(mcg_file_size(f), 0); /* nothing changed */
	CHECK_EQ(mcg_file_fsync(NULL), -EINVAL);
	CHECK_EQ(mcg_file_close(NULL), -EINVAL);
	mcg_file_close(f);
	/* Access modes. */
	REQUIRE(!mcg_file_open(path_of("bad"), O_RDONLY, 0, NULL, &f));
	CHECK_EQ(mcg_file_pwrite(f, b, 8, 0), -EBADF);
	CHECK_EQ(mcg_file_truncate(f, 0), -EBADF);
	mcg_file_close(f);
	REQUIRE(!mcg_file_open(path_of("bad"), O_WRONLY, 0, NULL, &f));
	CHECK_EQ(mcg_file_pread(f, b, 8, 0), -EBADF);
	mcg_file_close(f);
	CHECK_EQ(mcg_file_open(path_of("bad"), O_RDWR | O_CREAT | O_EXCL, 0644, NULL, &f), -EEXIST);
}

/* Writes of every alignment, read back through the cache and with read(2). */
static void test_write_read_back(void)
{
	mcg_file_t *f = open_new("rw", &buffered);
	REQUIRE(f);
	enum { SIZE = 3 * 4096 * 16 + 777 };
	char *want = calloc(1, SIZE), *got = malloc(SIZE);
	REQUIRE(want && got);
	/* Unaligned pieces in a scattered order, the last past the end. */
	size_t cuts[] = {0, 1, 4095, 4096, 4097, 10000, 65536, 65537, 100000, 150000, SIZE};
	fill(want, SIZE, 1);
	int ncuts = (int)(sizeof(cuts) / sizeof(cuts[0]));
	for (int k = ncuts - 3; k >= 0; k -= 2) { /* even pieces, last first */
		size_t a = cuts[k], b = cuts[k + 1];
		CHECK_EQ(mcg_file_pwrite(f, want + a, b - a, (off_t)a), (ssize_t)(b - a));
	}
	for (int k = 1; k + 1 < ncuts; k += 2) { /* then the odd ones */
		size_t a = cuts[k], b = cuts[k + 1];
		CHECK_EQ(mcg_file_pwrite(f, want + a, b - a, (off_t)a), (ssize_t)(b - a));
	}
	CHECK_EQ(mcg_file_size(f), SIZE);
	CHECK_EQ(mcg_file_pread(f, got, SIZE, 0), SIZE);
	CHECK(!memcmp(got, want, SIZE));
	CHECK_EQ(mcg_file_pread(f, got, 100, SIZE - 10), 10); /* short at the end */
	CHECK_EQ(mcg_file_pread(f, got, 100, SIZE), 0);
	CHECK_EQ(mcg_file_pread(f, got, 100, SIZE + 5000), 0);
	mcg_file_stat_t st;
	REQUIRE(!mcg_file_stat(f, &st));
	CHECK_EQ(st.pages, (SIZE + 4095) / 4096);
	CHECK_EQ(st.dirty, st.pages);
	CHECK_EQ(st.direct_align, 0);
	CHECK_EQ(mcg_file_fsync(f), 0);
	REQUIRE(!mcg_file_stat(f, &st));
	CHECK_EQ(st.dirty, 0);
	CHECK_EQ(st.writeback, 0);
	size_t len;
	char *disk = tmpdir_read_file(path_of("rw"), &len);
	CHECK_EQ(len, SIZE);
	CHECK(disk && !memcmp(disk, want, SIZE));
	free(disk);
	mcg_file_close(f);
	free(want);
	free(got);
}

/* A hole reads as zeros; writing past the end zero-fills the gap. */
static void test_holes(void)
{
	mcg_file_t *f = open_new("holes", &buffered);
	REQUIRE(f);
	CHECK_EQ(mcg_file_pwrite(f, "abc", 3, 3 * 4096 + 10), 3);
	char b[4 * 4096];
	CHECK_EQ(mcg_file_pread(f, b, sizeof(b), 0), 3 * 4096 + 13);
	for (int i = 0; i < 3 * 4096 + 10; i++)
		if (b[i]) {
			CHECK(!b[i]);
			break;
		}
	CHECK(!memcmp(b + 3 * 4096 + 10, "abc", 3));
	CHECK_EQ(mcg_file_fdatasync(f), 0);
	mcg_file_close(f);
	/* Drop the cache and read from the file: the same. */
	mcg_file_drop_caches();
	REQUIRE(!mcg_file_open(path_of("holes"), O_RDONLY, 0, &buffered, &f));
	char c[4 * 4096];
	CHECK_EQ(mcg_file_pread(f, c, sizeof(c), 0), 3 * 4096 + 13);
	CHECK(!memcmp(b, c, 3 * 4096 + 13));
	mcg_file_close(f);
}

static void test_vectored(void)
{
	mcg_file_t *f = open_new("vec", &buffered);
	REQUIRE(f);
	char a[5000], b[1], c[9000], all[14001];
	fill(a, sizeof(a), 2);
	fill(b, sizeof(b), 3);
	fill(c, sizeof(c), 4);
	struct iovec w[3] = {{a, sizeof(a)}, {b, sizeof(b)}, {c, sizeof(c)}};
	CHECK_EQ(mcg_file_pwritev(f, w, 3, 100), 14001);
	CHECK_EQ(mcg_file_pread(f, all, sizeof(all), 100), 14001);
	CHECK(!memcmp(all, a, sizeof(a)) && all[5000] == b[0] && !memcmp(all + 5001, c, sizeof(c)));
	char r1[3], r2[14001 - 3];
	struct iovec r[2] = {{r1, sizeof(r1)}, {r2, sizeof(r2)}};
	CHECK_EQ(mcg_file_preadv(f, r, 2, 100), 14001);
	CHECK(!memcmp(r1, all, 3) && !memcmp(r2, all + 3, sizeof(r2)));
	mcg_file_close(f);
}

/* Truncate down drops pages (dirty ones too) and zeroes the tail; up: zeros. */
static void test_truncate(void)
{
	mcg_file_t *f = open_new("trunc", &buffered);
	REQUIRE(f);
	char b[5 * 4096];
	fill(b, sizeof(b), 5);
	CHECK_EQ(mcg_file_pwrite(f, b, sizeof(b), 0), (ssize_t)sizeof(b));
	CHECK_EQ(mcg_file_truncate(f, 4096 + 100), 0);
	CHECK_EQ(mcg_file_size(f), 4096 + 100);
	mcg_file_stat_t st;
	REQUIRE(!mcg_file_stat(f, &st));
	CHECK_EQ(st.pages, 2);
	CHECK_EQ(st.dirty, 2);
	CHECK_EQ(mcg_file_truncate(f, 3 * 4096), 0);
	char r[3 * 4096];
	CHECK_EQ(mcg_file_pread(f, r, sizeof(r), 0), 3 * 4096);
	CHECK(!memcmp(r, b, 4096 + 100));
	for (int i = 4096 + 100; i < 3 * 4096; i++)
		if (r[i]) {
			CHECK(!r[i]);
			break;
		}
	CHECK_EQ(mcg_file_fsync(f), 0);
	size_t len;
	char *disk = tmpdir_read_file(path_of("trunc"), &len);
	CHECK_EQ(len, 3 * 4096);
	CHECK(disk && !memcmp(disk, r, len));
	free(disk);
	/* O_TRUNC at open goes through the cache too. */
	mcg_file_t *g;
	REQUIRE(!mcg_file_open(path_of("trunc"), O_RDWR | O_TRUNC, 0, NULL, &g));
	CHECK_EQ(mcg_file_size(f), 0);
	REQUIRE(!mcg_file_stat(f, &st));
	CHECK_EQ(st.pages, 0);
	mcg_file_close(g);
	mcg_file_close(f);
}

/* Two handles share one cache. */
static void test_shared_cache(void)
{
	mcg_file_t *a = open_new("shared", &buffered), *b;
	REQUIRE(a);
	REQUIRE(!mcg_file_open(path_of("shared"), O_RDWR, 0, NULL, &b));
	CHECK_EQ(mcg_file_pwrite(a, "0123456789", 10, 4000), 10);
	char r[10];
	CHECK_EQ(mcg_file_pread(b, r, 10, 4000), 10);
	CHECK(!memcmp(r, "0123456789", 10));
	mcg_file_stat_t sa, sb;
	mcg_file_stat(a, &sa);
	mcg_file_stat(b, &sb);
	CHECK_EQ(sa.pages, 1);
	CHECK_EQ(sb.pages, 1);
	CHECK_EQ(mcg_file_pwrite(b, "ab", 2, 4095), 2); /* across a page boundary */
	CHECK_EQ(mcg_file_pread(a, r, 3, 4094), 3);
	CHECK(!memcmp(r, "\0ab", 3));
	mcg_file_stat(a, &sa);
	CHECK_EQ(sa.pages, 2);
	CHECK_EQ(sa.size, 4097);
	mcg_file_close(a);
	mcg_file_close(b);
}

/* Pages are charged to the handle's group (or the current one); exact at rest. */
static void test_charges(void)
{
	mcg_group_t *g, *h;
	REQUIRE(!mcg_group_create(NULL, "fc", &g));
	REQUIRE(!mcg_group_create(NULL, "fc2", &h));
	mcg_file_opts_t o = {g, MCG_FILE_NO_DIRECT};
	mcg_file_t *f = open_new("charged", &o);
	REQUIRE(f);
	char b[10 * 4096];
	fill(b, sizeof(b), 6);
	CHECK_EQ(mcg_file_pwrite(f, b, sizeof(b), 0), (ssize_t)sizeof(b));
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(g, "memory.current"), 10 * 4096);
	CHECK_EQ(read_key(g, "memory.stat", "file"), 10 * 4096);
	CHECK_EQ(read_key(g, "memory.stat", "anon"), 0);
	CHECK_EQ(read_key(g, "memory.stat", "file_dirty"), 10 * 4096);
	CHECK_EQ(read_key(g, "memory.stat", "inactive_file"), 10 * 4096);
	CHECK_EQ(read_key(g, "memory.stat", "file_dirtied"), 10);
	/* A second read activates (mark accessed twice). */
	char r[4096];
	CHECK_EQ(mcg_file_pread(f, r, 4096, 0), 4096);
	CHECK_EQ(read_key(g, "memory.stat", "active_file"), 4096);
	CHECK_EQ(read_key(g, "memory.stat", "pgactivate"), 1);
	/* Through the current group: a handle without one. */
	mcg_file_t *f2;
	REQUIRE(!mcg_file_open(path_of("charged2"), O_RDWR | O_CREAT, 0644, &buffered, &f2));
	mcg_group_t *prev = mcg_group_enter(h);
	CHECK_EQ(mcg_file_pwrite(f2, b, 3 * 4096, 0), 3 * 4096);
	mcg_group_leave(prev);
	mcg_group_drain_stocks();
	CHECK_EQ(read_key(h, "memory.stat", "file"), 3 * 4096);
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK_EQ(mcg_file_fsync(f2), 0);
	CHECK_EQ(read_key(g, "memory.stat", "file_dirty"), 0);
	CHECK_EQ(read_key(g, "memory.stat", "file_written"), 10);
	mcg_file_close(f);
	mcg_file_close(f2);
	/* Still cached after close; dropped, everything is back to 0. */
	CHECK_EQ(read_key(g, "memory.stat", "file"), 10 * 4096);
	CHECK(mcg_file_drop_caches() >= 13);
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(g, "memory.current"), 0);
	CHECK_EQ(read_long(h, "memory.current"), 0);
	CHECK_EQ(read_key(g, "memory.stat", "file"), 0);
	CHECK_EQ(read_key(g, "memory.stat", "active_file"), 0);
	CHECK_EQ(read_key(g, "memory.stat", "inactive_file"), 0);
	CHECK_EQ(mcg_file_sync_all(), 0); /* what earlier tests left dirty */
	CHECK_EQ(read_key(mcg_group_root(), "memory.stat", "file_dirty"), 0);
	CHECK_EQ(read_key(mcg_group_root(), "memory.stat", "file_writeback"), 0);
	mcg_group_remove(g);
	mcg_group_put(g);
	mcg_group_remove(h);
	mcg_group_put(h);
}

/* Removing a group with dirty pages: its parent holds them, the data goes out. */
static void test_reparent(void)
{
	mcg_group_t *p, *c;
	REQUIRE(!mcg_group_create(NULL, "rp", &p));
	REQUIRE(!mcg_group_create(p, "child", &c));
	mcg_file_opts_t o = {c, MCG_FILE_NO_DIRECT};
	mcg_file_t *f = open_new("reparent", &o);
	REQUIRE(f);
	char b[8 * 4096];
	fill(b, sizeof(b), 7);
	CHECK_EQ(mcg_file_pwrite(f, b, sizeof(b), 0), (ssize_t)sizeof(b));
	mcg_group_drain_stocks();
	CHECK_EQ(read_key(p, "memory.stat", "file_dirty"), 8 * 4096);
	CHECK_EQ(read_long(p, "memory.current"), 8 * 4096);
	/* The handle's group goes: its pages, dirty, are the parent's now. */
	REQUIRE(!mcg_group_remove(c));
	CHECK_EQ(read_long(p, "memory.current"), 8 * 4096);
	CHECK_EQ(read_key(p, "memory.stat", "file"), 8 * 4096);
	CHECK_EQ(read_key(p, "memory.stat", "file_dirty"), 8 * 4096);
	CHECK_EQ(read_key(c, "memory.stat", "file"), 0);
	CHECK_EQ(read_long(c, "memory.current"), 0);
	/* Writing through the removed group's handle charges the parent. */
	CHECK_EQ(mcg_file_pwrite(f, b, 4096, 8 * 4096), 4096);
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(p, "memory.current"), 9 * 4096);
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK_EQ(read_key(p, "memory.stat", "file_dirty"), 0);
	mcg_file_close(f);
	mcg_group_put(c);
	size_t len;
	char *disk = tmpdir_read_file(path_of("reparent"), &len);
	CHECK_EQ(len, 9 * 4096);
	CHECK(disk && !memcmp(disk, b, sizeof(b)) && !memcmp(disk + sizeof(b), b, 4096));
	free(disk);
	/* The child's pages are on the parent's LRU lists now: its reclaim
	 * finds them (clean after the fsync) */
	CHECK_EQ(mcg_group_write(p, "memory.reclaim", "36864"), 0);
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(p, "memory.current"), 0);
	CHECK_EQ(read_key(p, "memory.stat", "file"), 0);
	mcg_file_drop_caches();
	mcg_group_remove(p);
	mcg_group_put(p);
}

/* Sequential reads read ahead: a window that grows. */
static void test_readahead(void)
{
	mcg_file_t *f = open_new("ra", &buffered);
	REQUIRE(f);
	enum { PAGES = 256 };
	char *b = malloc(PAGES * 4096);
	REQUIRE(b);
	fill(b, PAGES * 4096, 8);
	CHECK_EQ(mcg_file_pwrite(f, b, PAGES * 4096, 0), PAGES * 4096);
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK_EQ(mcg_file_drop_caches(), PAGES);
	long before = read_key(mcg_group_root(), "memory.stat", "file_readahead");
	char page[4096];
	for (int i = 0; i < PAGES; i++) {
		CHECK_EQ(mcg_file_pread(f, page, 4096, (off_t)i * 4096), 4096);
		if (memcmp(page, b + i * 4096, 4096)) {
			CHECK(!"page read back differs");
			break;
		}
	}
	long ahead = read_key(mcg_group_root(), "memory.stat", "file_readahead") - before;
	/* Only the first page is read on demand; every other page ahead. */
	CHECK_EQ(ahead, PAGES - 1);
	/* Random reads of a dropped file read only their page. */
	CHECK_EQ(mcg_file_drop_caches(), PAGES);
	before = read_key(mcg_group_root(), "memory.stat", "file_readahead");
	for (int i = 0; i < 8; i++)
		CHECK_EQ(mcg_file_pread(f, page, 4096, (off_t)((i * 37) % PAGES) * 4096 + 4096 * 3),
		         4096);
	CHECK_EQ(read_key(mcg_group_root(), "memory.stat", "file_readahead") - before, 0);
	mcg_file_stat_t st;
	mcg_file_stat(f, &st);
	CHECK_EQ(st.pages, 8);
	mcg_file_close(f);
	free(b);
}

/*
 * A file this process may only read: its backing descriptor is opened read
 * only; a handle that would write, opened while that descriptor is the one
 * cached, is refused (EACCES) even once the file has become writable; after
 * the cache dropped the file, the new handle writes.  Steps as a user whom
 * permissions bind; 0 or the failed steps' bits.
 */
static int read_only_steps(void)
{
	char own[PATH_MAX], p[PATH_MAX];
	if (tmpdir_make(own, sizeof(own), "/tmp"))
		return 1;
	tmpdir_path(p, sizeof(p), own, "ro");
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (fd < 0 || write(fd, "ro", 2) != 2)
		return 2;
	close(fd);
	int bad = 0;
	mcg_file_t *r = NULL, *w = NULL;
	char b[2] = {0};
	bad |= (mcg_file_open(p, O_RDONLY, 0, &buffered, &r) != 0) << 2;
	bad |= (!r || mcg_file_pread(r, b, 2, 0) != 2 || memcmp(b, "ro", 2)) << 3;
	bad |= (mcg_file_open(p, O_WRONLY, 0, &buffered, &w) != -EACCES) << 4;
	bad |= (chmod(p, 0644) != 0) << 5;
	bad |= (mcg_file_open(p, O_WRONLY, 0, &buffered, &w) != -EACCES) << 6;
	bad |= (mcg_file_open(p, O_RDONLY, 0, &buffered, &w) != 0 || mcg_file_close(w)) << 7;
	if (r)
		mcg_file_close(r);
	mcg_file_drop_caches();
	w = NULL;
	bad |= (mcg_file_open(p, O_WRONLY, 0, &buffered, &w) != 0) << 8;
	bad |= (w && (mcg_file_pwrite(w, "rw", 2, 0) != 2 || mcg_file_close(w))) << 9;
	mcg_file_drop_caches();
	unlink(p);
	rmdir(own);
	return bad;
}

static void test_read_only_file(void)
{
	if (geteuid() != 0) { /* permissions bind this process itself */
		CHECK_EQ(read_only_steps(), 0);
		return;
	}
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(1);
		exit(read_only_steps()); /* exit: the child's coverage is written */
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
}

/* The first file opened starts the page cache and its flusher threads
 * (periodic writeback needs them before any work is queued). */
static void test_open_starts_flushers(void)
{
	CHECK(!mcg_flusher_running());
	mcg_file_t *f = open_new("flushers", &buffered);
	REQUIRE(f);
	CHECK(mcg_flusher_running());
	mcg_file_close(f);
}

/* Before any file is opened the page cache is not started: the calls on
 * all files do nothing and say so. */
static void test_not_started(void)
{
	CHECK_EQ(mcg_file_sync_all(), 0);
	CHECK_EQ(mcg_file_drop_caches(), 0);
}

/* More bad arguments, each refused with nothing changed. */
static void test_bad_arguments_more(void)
{
	mcg_file_t *f = open_new("bad2", &buffered);
	REQUIRE(f);
	char b[8] = "abcdefg";
	REQUIRE(mcg_file_pwrite(f, b, 8, 0) == 8);
	struct iovec nobase[2] = {{b, 4}, {NULL, 4}};
	CHECK_EQ(mcg_file_pwritev(f, nobase, 2, 0), -EINVAL);
	CHECK_EQ(mcg_file_preadv(f, nobase, 2, 0), -EINVAL);
	struct iovec empty_null[2] = {{b, 4}, {NULL, 0}}; /* an empty segment needs no base */
	CHECK_EQ(mcg_file_preadv(f, empty_null, 2, 0), 4);
	struct iovec huge[2] = {{b, 8}, {b, (size_t)INT64_MAX - 4}}; /* the total past INT64_MAX */
	CHECK_EQ(mcg_file_pwritev(f, huge, 2, 0), -EINVAL);
	uint64_t w = 7;
	CHECK_EQ(mcg_file_pwrite_nowait(NULL, b, 8, 0, &w), -EINVAL);
	CHECK_EQ(mcg_file_pwrite_nowait(f, b, 8, -1, &w), -EINVAL);
	CHECK_EQ(mcg_file_pwrite_nowait(f, b, 8, 0, NULL), -EINVAL);
	CHECK_EQ(mcg_file_pwrite_nowait(f, NULL, 8, 0, &w), -EINVAL);
	CHECK_EQ(w, 7);
	CHECK_EQ(mcg_file_truncate(NULL, 0), -EINVAL);
	CHECK_EQ(mcg_file_size(NULL), -EINVAL);
	mcg_file_stat_t st;
	CHECK_EQ(mcg_file_stat(NULL, &st), -EINVAL);
	CHECK_EQ(mcg_file_stat(f, NULL), -EINVAL);
	CHECK_EQ(mcg_file_pwrite(f, b, 8, INT64_MAX - 4), -EFBIG); /* its end past any offset */
	CHECK_EQ(mcg_file_pwrite(f, b, 0, 100), 0);                /* nothing to write */
	CHECK_EQ(mcg_file_pread(f, b, 0, 0), 0);
	CHECK_EQ(mcg_file_size(f), 8); /* nothing changed */
	char r[8] = {0};
	CHECK_EQ(mcg_file_pread(f, r, 8, 0), 8);
	CHECK(!memcmp(r, b, 8));
	mcg_file_close(f);
	mcg_file_t *ro = NULL;
	REQUIRE(!mcg_file_open(path_of("bad2"), O_RDONLY, 0, NULL, &ro));
	CHECK_EQ(mcg_file_pwrite_nowait(ro, b, 8, 0, &w), -EBADF);
	CHECK_EQ(w, 7);
	mcg_file_close(ro);
	/* No handle, or no access mode (O_ACCMODE's fourth value). */
	CHECK_EQ(mcg_file_pread(NULL, r, 8, 0), -EINVAL);
	CHECK_EQ(mcg_file_pwrite(NULL, b, 8, 0), -EINVAL);
	mcg_file_t *none = NULL;
	CHECK_EQ(mcg_file_open(path_of("bad2"), O_ACCMODE, 0, &buffered, &none), -EINVAL);
	CHECK(!none);
	/* O_TRUNC on a read-only handle truncates nothing. */
	REQUIRE(!mcg_file_open(path_of("bad2"), O_RDONLY | O_TRUNC, 0, &buffered, &ro));
	CHECK_EQ(mcg_file_size(ro), 8);
	CHECK_EQ(mcg_file_pread(ro, r, 8, 0), 8);
	CHECK(!memcmp(r, b, 8));
	mcg_file_close(ro);
	CHECK_EQ(mcg_file_sync_all(), 0);
	struct stat sb;
	CHECK_EQ(stat(path_of("bad2"), &sb), 0);
	CHECK_EQ(sb.st_size, 8);
}

/*
 * The second open of a backing file (fault point, as a file this process
 * may not write or a read-only file system would answer): read-write
 * refused with EACCES or EROFS, the handle's own mode is tried and the
 * cached descriptor has only that mode, so a writing handle opened while
 * it is cached is refused; a read-write open is not retried.
 */
static void test_open_fallback(void)
{
	static const int errs[2] = {EACCES, EROFS};
	for (int i = 0; i < 2; i++) {
		const char *name = i ? "fb_rofs" : "fb_acces";
		mcg_file_t *f = open_new(name, &buffered);
		REQUIRE(f);
		REQUIRE(mcg_file_pwrite(f, "fallback", 8, 0) == 8);
		CHECK_EQ(mcg_file_fsync(f), 0);
		CHECK_EQ(mcg_file_close(f), 0);
		mcg_file_drop_caches();
		/* Read-write: not retried. */
		REQUIRE(!mcg_fault_inject_io(1, 0, errs[i], MCG_FAULT_IO_OPEN));
		f = NULL;
		CHECK_EQ(mcg_file_open(path_of(name), O_RDWR, 0, &buffered, &f), -errs[i]);
		CHECK_EQ(mcg_fault_io_count(), 1);
		CHECK(!f);
		/* Read only: the second open, read only, serves. */
		REQUIRE(!mcg_fault_inject_io(1, 0, errs[i], MCG_FAULT_IO_OPEN));
		mcg_file_t *r = NULL;
		CHECK_EQ(mcg_file_open(path_of(name), O_RDONLY, 0, &buffered, &r), 0);
		CHECK_EQ(mcg_fault_io_count(), 2);
		CHECK_EQ(mcg_fault_io_failed(), 1);
		mcg_fault_inject_io(0, 0, 0, 0);
		REQUIRE(r);
		char b[8] = {0};
		CHECK_EQ(mcg_file_pread(r, b, 8, 0), 8);
		CHECK(!memcmp(b, "fallback", 8));
		/* The cached descriptor is read only: a writer is refused. */
		mcg_file_t *w = NULL;
		CHECK_EQ(mcg_file_open(path_of(name), O_WRONLY, 0, &buffered, &w), -EACCES);
		CHECK_EQ(mcg_file_open(path_of(name), O_RDWR, 0, &buffered, &w), -EACCES);
		CHECK(!w);
		CHECK_EQ(mcg_file_close(r), 0);
		mcg_file_drop_caches();
		/* Write only: the second open is write only, and it writes. */
		REQUIRE(!mcg_fault_inject_io(1, 0, errs[i], MCG_FAULT_IO_OPEN));
		CHECK_EQ(mcg_file_open(path_of(name), O_WRONLY, 0, &buffered, &w), 0);
		CHECK_EQ(mcg_fault_io_failed(), 1);
		mcg_fault_inject_io(0, 0, 0, 0);
		REQUIRE(w);
		/* A whole page needs no read of the backing file (which this
		 * descriptor could not do: a part-page write fails). */
		char page[4096];
		fill(page, sizeof(page), (unsigned)i + 5);
		CHECK_EQ(mcg_file_pwrite(w, page, sizeof(page), 0), (ssize_t)sizeof(page));
		CHECK_EQ(mcg_file_fsync(w), 0);
		CHECK_EQ(mcg_file_close(w), 0);
		mcg_file_drop_caches();
		size_t len;
		char *disk = tmpdir_read_file(path_of(name), &len);
		CHECK_EQ(len, sizeof(page));
		CHECK(disk && !memcmp(disk, page, sizeof(page)));
		free(disk);
	}
}

/* O_TRUNC whose backing truncate fails: the open fails with its error and
 * the file on disk keeps its bytes. */
static void test_open_trunc_fails(void)
{
	mcg_file_t *f = open_new("trunc_fail", &buffered);
	REQUIRE(f);
	REQUIRE(mcg_file_pwrite(f, "12345", 5, 0) == 5);
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK_EQ(mcg_file_close(f), 0);
	mcg_file_drop_caches();
	REQUIRE(!mcg_fault_inject_io(1, 0, EIO, MCG_FAULT_IO_TRUNCATE));
	f = NULL;
	CHECK_EQ(mcg_file_open(path_of("trunc_fail"), O_RDWR | O_TRUNC, 0, &buffered, &f), -EIO);
	CHECK_EQ(mcg_fault_io_failed(), 1);
	mcg_fault_inject_io(0, 0, 0, 0);
	CHECK(!f);
	mcg_file_drop_caches();
	struct stat st;
	CHECK_EQ(stat(path_of("trunc_fail"), &st), 0);
	CHECK_EQ(st.st_size, 5);
}

/* A write far past a low one (offset 2^48 after offset 0): the page index
 * grows by its most nodes at once; the write succeeds, both bytes read
 * back, the hole between reads as zeros. */
static void test_far_write(void)
{
	mcg_file_t *f = open_new("far", &buffered);
	REQUIRE(f);
	const off_t far = (off_t)1 << 48;
	CHECK_EQ(mcg_file_pwrite(f, "a", 1, 0), 1);
	CHECK_EQ(mcg_file_pwrite(f, "b", 1, far), 1);
	CHECK_EQ(mcg_file_size(f), far + 1);
	char b[2] = {0};
	CHECK_EQ(mcg_file_pread(f, b, 1, far), 1);
	CHECK_EQ(b[0], 'b');
	CHECK_EQ(mcg_file_pread(f, b, 2, 0), 2);
	CHECK(b[0] == 'a' && b[1] == 0);
	CHECK_EQ(mcg_file_truncate(f, 0), 0);
	mcg_file_close(f);
	mcg_file_drop_caches();
}

/*
 * The first read of a file by a group with no page-cache state yet, under
 * a fault sweep (the group's state, the page, its index nodes): each read
 * either fails with -ENOMEM, leaving nothing cached or charged, or reads
 * the page whole.
 */
static void test_first_read_fault_sweep(void)
{
	mcg_file_t *w = open_new("first_read", &buffered);
	REQUIRE(w);
	char page[4096], got[4096];
	fill(page, sizeof(page), 9);
	CHECK_EQ(mcg_file_pwrite(w, page, sizeof(page), 0), 4096);
	CHECK_EQ(mcg_file_fsync(w), 0);
	mcg_file_close(w);
	int done = 0, failed = 0;
	for (unsigned long n = 1; n < 200 && !done; n++) {
		mcg_file_drop_caches();
		mcg_group_t *g;
		REQUIRE(!mcg_group_create(NULL, "first-read", &g));
		mcg_file_opts_t o = {g, MCG_FILE_NO_DIRECT};
		mcg_file_t *f = NULL;
		REQUIRE(!mcg_file_open(path_of("first_read"), O_RDONLY, 0, &o, &f));
		memset(got, 0, sizeof(got));
		mcg_fault_inject(n, 0);
		ssize_t r = mcg_file_pread(f, got, sizeof(got), 0);
		unsigned long hit = mcg_fault_failed();
		mcg_fault_inject(0, 0);
		mcg_file_stat_t st;
		mcg_file_stat(f, &st);
		if (hit) {
			failed++;
			CHECK_EQ(r, -ENOMEM);
			CHECK_EQ(st.pages, 0);
			CHECK_EQ(read_key(g, "memory.stat", "file"), 0);
		} else {
			CHECK_EQ(r, 4096);
			CHECK(!memcmp(got, page, sizeof(page)));
			CHECK_EQ(st.pages, 1);
			CHECK_EQ(read_key(g, "memory.stat", "file"), 4096);
			done = 1;
		}
		mcg_file_close(f);
		mcg_file_drop_caches();
		CHECK_EQ(mcg_group_remove(g), 0);
		mcg_group_put(g);
	}
	CHECK(done);
	CHECK(failed >= 3); /* the group's state (two), the page, the index */
}

/* A group whose limit leaves no room for a page (memory.max 0, nothing to
 * reclaim): a write and a read of a page fail with -ENOMEM, nothing cached
 * or charged; with the limit lifted both work. */
static void test_no_room_for_a_page(void)
{
	mcg_file_t *w = open_new("noroom", &buffered);
	REQUIRE(w);
	char page[4096], got[4096];
	fill(page, sizeof(page), 4);
	CHECK_EQ(mcg_file_pwrite(w, page, sizeof(page), 0), 4096);
	CHECK_EQ(mcg_file_fsync(w), 0);
	mcg_file_close(w);
	mcg_file_drop_caches();
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "noroom", &g));
	REQUIRE(!mcg_group_write(g, "memory.max", "0"));
	mcg_file_opts_t o = {g, MCG_FILE_NO_DIRECT};
	mcg_file_t *f = NULL;
	REQUIRE(!mcg_file_open(path_of("noroom"), O_RDWR, 0, &o, &f));
	CHECK_EQ(mcg_file_pread(f, got, sizeof(got), 0), -ENOMEM);
	CHECK_EQ(mcg_file_pwrite(f, page, sizeof(page), 4096), -ENOMEM);
	mcg_file_stat_t st;
	mcg_file_stat(f, &st);
	CHECK_EQ(st.pages, 0);
	CHECK_EQ(mcg_file_size(f), 4096);
	CHECK_EQ(read_key(g, "memory.stat", "file"), 0);
	REQUIRE(!mcg_group_write(g, "memory.max", "max"));
	CHECK_EQ(mcg_file_pread(f, got, sizeof(got), 0), 4096);
	CHECK(!memcmp(got, page, sizeof(page)));
	CHECK_EQ(mcg_file_pwrite(f, page, sizeof(page), 4096), 4096);
	CHECK_EQ(mcg_file_truncate(f, 0), 0);
	mcg_file_close(f);
	mcg_file_drop_caches();
	CHECK_EQ(mcg_group_remove(g), 0);
	mcg_group_put(g);
}

int main(void)
{
	mcg_options_use_env(0);
	if (tmpdir_make(dir, sizeof(dir), NULL)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_not_started);
	RUN(test_open_starts_flushers); /* before anything opens a file */
	RUN(test_bad_arguments);
	RUN(test_bad_arguments_more);
	RUN(test_open_fallback);
	RUN(test_open_trunc_fails);
	RUN(test_write_read_back);
	RUN(test_holes);
	RUN(test_vectored);
	RUN(test_truncate);
	RUN(test_shared_cache);
	RUN(test_charges);
	RUN(test_reparent);
	RUN(test_readahead);
	RUN(test_read_only_file);
	RUN(test_far_write);
	RUN(test_first_read_fault_sweep);
	RUN(test_no_room_for_a_page);
	mcg_file_drop_caches();
	tmpdir_remove(dir);
	return test_done();
}
