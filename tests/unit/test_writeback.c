/* SPDX-License-Identifier: MIT */
/*
 * test_writeback.c - dirty and writeback state changes (pagecache/
 * writeback.c), errors kept dirty and reported once per handle (errseq),
 * background writeback over a group's background threshold, periodic
 * writeback of expired files and write-behind of sequential writers (the
 * flushers), runs in flight, and the throttle holding a group's dirty data
 * under its limit.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>

#include "group_file.h"
#include "memcg/debug.h"
#include "memcg/file.h"
#include "memcg/kmalloc.h"
#include "memcg/memcg.h"
#include "memcg/slab.h"
#include "base/options.h"
#include "os/os.h"
#include "pagecache/dirty.h"
#include "pagecache/filemap.h"
#include "pagecache/flusher.h"
#include "pagecache/inode.h"
#include "pagecache/pcg.h"
#include "pagecache/wbio.h"
#include "pagecache/writeback.h"
#include "slab/kmalloc_fast.h"
#include "test.h"
#include "tmpdir.h"
#include "fork_seen.h"
#include "held.h"

static char dir[PATH_MAX];
static const mcg_file_opts_t buffered = {NULL, MCG_FILE_NO_DIRECT};

static const char *path_of(const char *name)
{
	static char p[PATH_MAX];
	return tmpdir_path(p, sizeof(p), dir, name);
}

static mcg_file_t *open_new(const char *name, mcg_group_t *g)
{
	mcg_file_t *f = NULL;
	mcg_file_opts_t o = {g, MCG_FILE_NO_DIRECT};
	unlink(path_of(name));
	CHECK_EQ(mcg_file_open(path_of(name), O_RDWR | O_CREAT, 0644, &o, &f), 0);
	return f;
}

static long stat_of(mcg_group_t *g, const char *key) { return read_key(g, "memory.stat", key); }

static void sleep_ms(long ms) { usleep((useconds_t)ms * 1000); }

/* Dirty -> writeback -> clean, counted at the group and the root. */
static void test_states(void)
{
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "wbs", &g));
	mcg_file_t *f = open_new("states", g);
	REQUIRE(f);
	char b[4096 * 6];
	memset(b, 'x', sizeof(b));
	long root_dirty = stat_of(mcg_group_root(), "file_dirty");
	CHECK_EQ(mcg_file_pwrite(f, b, sizeof(b), 0), (ssize_t)sizeof(b));
	CHECK_EQ(stat_of(g, "file_dirty"), 6 * 4096);
	CHECK_EQ(stat_of(mcg_group_root(), "file_dirty") - root_dirty, 6 * 4096);
	/* Rewriting a dirty page counts nothing. */
	CHECK_EQ(mcg_file_pwrite(f, b, 100, 10), 100);
	CHECK_EQ(stat_of(g, "file_dirtied"), 6);
	/* Background writeback of 4 pages. */
	long written = 0;
	CHECK_EQ(mcg_wb_write_file(f->inode, 4, MCG_WB_BACKGROUND, &written), 0);
	CHECK_EQ(written, 4);
	CHECK_EQ(stat_of(g, "file_dirty"), 2 * 4096);
	CHECK_EQ(stat_of(g, "file_writeback"), 0);
	CHECK_EQ(stat_of(g, "file_written"), 4);
	/* Redirty one written page; fsync writes the three. */
	CHECK_EQ(mcg_file_pwrite(f, b, 1, 0), 1);
	CHECK_EQ(stat_of(g, "file_dirty"), 3 * 4096);
	CHECK_EQ(stat_of(g, "file_dirtied"), 7);
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK_EQ(stat_of(g, "file_dirty"), 0);
	CHECK_EQ(stat_of(g, "file_written"), 7);
	CHECK_EQ(stat_of(mcg_group_root(), "file_dirty"), root_dirty);
	mcg_file_close(f);
	mcg_file_drop_caches();
	mcg_group_remove(g);
	mcg_group_put(g);
}

/* Dirty accounting off: the group sees no dirty pages, the root does. */
static void test_accounting_off(void)
{
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "wboff", &g));
	mcg_file_t *f = open_new("off", g);
	REQUIRE(f);
	char b[4096 * 3];
	memset(b, 'y', sizeof(b));
	long root_dirty = stat_of(mcg_group_root(), "file_dirty");
	REQUIRE(!mcg_option_set("dirty_accounting", 0));
	CHECK_EQ(mcg_file_pwrite(f, b, 4096 * 2, 0), 4096 * 2);
	REQUIRE(!mcg_option_set("dirty_accounting", 1));
	CHECK_EQ(mcg_file_pwrite(f, b, 4096, 2 * 4096), 4096); /* this one counted at the group */
	CHECK_EQ(stat_of(g, "file_dirty"), 4096);
	CHECK_EQ(stat_of(mcg_group_root(), "file_dirty") - root_dirty, 3 * 4096);
	CHECK_EQ(stat_of(g, "file"), 3 * 4096); /* the charge is the group's either way */
	/* Each page is cleaned the way it was counted: nothing goes negative. */
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK_EQ(stat_of(g, "file_dirty"), 0);
	CHECK_EQ(stat_of(mcg_group_root(), "file_dirty"), root_dirty);
	mcg_file_close(f);
	mcg_file_drop_caches();
	mcg_group_remove(g);
	mcg_group_put(g);
}

/*
 * A failed writeback keeps the pages dirty; each open handle learns of the
 * error once at its next fsync; a retry writes the data.
 */
static void test_errors_reported_once(void)
{
	mcg_file_t *a = open_new("err", NULL), *b;
	REQUIRE(a);
	REQUIRE(!mcg_file_open(path_of("err"), O_RDWR, 0, &buffered, &b));
	char data[3 * 4096];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 13);
	CHECK_EQ(mcg_file_pwrite(a, data, sizeof(data), 0), (ssize_t)sizeof(data));
	REQUIRE(!mcg_fault_inject_io(1, 0, EIO, MCG_FAULT_IO_WRITE));
	CHECK_EQ(mcg_file_fsync(a), -EIO);
	CHECK_EQ(mcg_fault_io_failed(), 1);
	mcg_fault_inject_io(0, 0, 0, 0);
	mcg_file_stat_t st;
	mcg_file_stat(a, &st);
	CHECK_EQ(st.dirty, 3); /* kept */
	CHECK(stat_of(mcg_group_root(), "file_writeback_errors") >= 3);
	/* A handle opened now did not exist at the error but nobody else saw
	 * it... a has: the late handle starts past it. */
	mcg_file_t *late;
	REQUIRE(!mcg_file_open(path_of("err"), O_RDWR, 0, &buffered, &late));
	CHECK_EQ(mcg_file_fsync(a), 0);    /* retried, written; a saw the error already */
	CHECK_EQ(mcg_file_fsync(b), -EIO); /* b sees it once */
	CHECK_EQ(mcg_file_fsync(b), 0);
	CHECK_EQ(mcg_file_fsync(late), 0);
	mcg_file_stat(a, &st);
	CHECK_EQ(st.dirty, 0);
	size_t len;
	char *disk = tmpdir_read_file(path_of("err"), &len);
	CHECK_EQ(len, sizeof(data));
	CHECK(disk && !memcmp(disk, data, sizeof(data)));
	free(disk);
	/* The backing fsync's own failure is reported too. */
	CHECK_EQ(mcg_file_pwrite(a, data, 10, 0), 10);
	REQUIRE(!mcg_fault_inject_io(1, 0, EIO, MCG_FAULT_IO_SYNC));
	CHECK_EQ(mcg_file_fsync(a), -EIO);
	mcg_fault_inject_io(0, 0, 0, 0);
	CHECK_EQ(mcg_file_fsync(b), -EIO);
	CHECK_EQ(mcg_file_fsync(a), 0);
	mcg_file_close(late);
	mcg_file_close(a);
	mcg_file_close(b);
}

/* ENOSPC: new writes to the file first write what is dirty, and fail while that fails. */
static void test_enospc_refuses(void)
{
	mcg_file_t *f = open_new("enospc", NULL);
	REQUIRE(f);
	char data[4096];
	memset(data, 'z', sizeof(data));
	CHECK_EQ(mcg_file_pwrite(f, data, sizeof(data), 0), 4096);
	REQUIRE(!mcg_fault_inject_io(1, 1, ENOSPC, MCG_FAULT_IO_WRITE));
	CHECK_EQ(mcg_file_fsync(f), -ENOSPC);
	CHECK_EQ(mcg_file_pwrite(f, data, sizeof(data), 4096), -ENOSPC);
	CHECK_EQ(mcg_file_size(f), 4096); /* nothing changed */
	mcg_fault_inject_io(0, 0, 0, 0);
	CHECK_EQ(mcg_file_pwrite(f, data, sizeof(data), 4096), 4096);
	/* The refused write's own attempt failed after fsync looked: once more. */
	CHECK_EQ(mcg_file_fsync(f), -ENOSPC);
	CHECK_EQ(mcg_file_fsync(f), 0);
	size_t len;
	char *disk = tmpdir_read_file(path_of("enospc"), &len);
	CHECK_EQ(len, 8192);
	free(disk);
	mcg_file_close(f);
}

/* Over the group's background threshold the flushers write without fsync. */
static void test_background_writeback(void)
{
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "wbbg", &g));
	REQUIRE(!mcg_group_write(g, "memory.dirty_bytes", "8M"));
	REQUIRE(!mcg_group_write(g, "memory.dirty_background_bytes", "256K"));
	/* The periodic pass looks at the threshold too: the last pages of a
	 * write may come after the writer's last pass through the throttle. */
	REQUIRE(!mcg_option_set("dirty_writeback_centisecs", 20));
	mcg_file_t *f = open_new("bg", g);
	REQUIRE(f);
	char *b = malloc(4 << 20);
	REQUIRE(b);
	memset(b, 'b', 4 << 20);
	/* 4 MiB: past freerun (4.1 MiB) not, past background (256 KiB) yes. */
	CHECK_EQ(mcg_file_pwrite(f, b, 4 << 20, 0), 4 << 20);
	/* Pages leave "dirty" when their writeback starts and count as written
	 * when it ends: wait for both. */
	long dirty = 0, written = 0;
	for (unsigned i = 0; i < 1000 * test_slowdown(); i++) { /* at least 10 s */
		dirty = stat_of(g, "file_dirty");
		written = stat_of(g, "file_written");
		if (dirty <= 256 << 10 && written >= 768)
			break;
		sleep_ms(10);
	}
	CHECK(dirty <= 256 << 10);
	CHECK(written >= 768);
	REQUIRE(!mcg_option_set("dirty_writeback_centisecs", 500));
	mcg_file_close(f);
	mcg_file_sync_all();
	mcg_file_drop_caches();
	mcg_group_remove(g);
	mcg_group_put(g);
	free(b);
}

/* Files dirty for longer than the expiry are written by the periodic pass. */
static void test_periodic_writeback(void)
{
	REQUIRE(!mcg_option_set("dirty_expire_centisecs", 20));
	REQUIRE(!mcg_option_set("dirty_writeback_centisecs", 10));
	mcg_file_t *f = open_new("periodic", NULL);
	REQUIRE(f);
	CHECK_EQ(mcg_file_pwrite(f, "periodic", 8, 0), 8);
	mcg_file_stat_t st;
	/* Clean, and the write done: a page under writeback is no longer
	 * dirty, but its bytes may not have reached the file yet. */
	for (int i = 0; i < 300; i++) { /* at most 3 s */
		mcg_file_stat(f, &st);
		if (!st.dirty && !st.writeback)
			break;
		sleep_ms(10);
	}
	CHECK_EQ(st.dirty, 0);
	CHECK_EQ(st.writeback, 0);
	size_t len;
	char *disk = tmpdir_read_file(path_of("periodic"), &len);
	CHECK(disk && len == 8 && !memcmp(disk, "periodic", 8));
	free(disk);
	mcg_file_close(f);
	REQUIRE(!mcg_option_set("dirty_expire_centisecs", 3000));
	REQUIRE(!mcg_option_set("dirty_writeback_centisecs", 500));
}

/* The throttle: a writer of 24 MiB in a group with a 1 MiB limit is paused,
 * and dirty + writeback stays under limit * 33/32 + 32 pages.  The backing
 * writes go to an emulated 32 MB/s device, slower than any build's copy, so
 * writeback cannot keep the writer below the throttle's freerun line. */
static void test_throttle_bound(void)
{
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "wbthr", &g));
	REQUIRE(!mcg_group_write(g, "memory.dirty_bytes", "1M"));
	REQUIRE(!mcg_group_write(g, "memory.dirty_background_bytes", "512K"));
	mcg_file_t *f = open_new("throttle", g);
	REQUIRE(f);
	char b[64 << 10];
	memset(b, 't', sizeof(b));
	long most = 0;
	REQUIRE(!mcg_fault_io_rate(MCG_FAULT_IO_WRITE, 32000000));
	for (int i = 0; i < 24 * 16; i++) {
		CHECK_EQ(mcg_file_pwrite(f, b, sizeof(b), (off_t)i * (off_t)sizeof(b)),
		         (ssize_t)sizeof(b));
		char st[4096]; /* one read: a page moving is not counted twice */
		mcg_group_read(g, "memory.stat", st, sizeof(st));
		long d = key_of(st, "file_dirty") + key_of(st, "file_writeback");
		most = MCG_MAX(most, d);
	}
	REQUIRE(!mcg_fault_io_rate(0, 0));
	CHECK(most <= (1 << 20) * 33 / 32 + 32 * 4096);
	CHECK(stat_of(g, "dirty_throttled_ms") > 0);
	/* nowait: past the limit the write is refused with a wait. */
	REQUIRE(!mcg_fault_inject_io(1, 1, EIO, MCG_FAULT_IO_WRITE)); /* writeback stalls */
	uint64_t wait = 0;
	ssize_t r = 0;
	long k;
	for (k = 0; k < 1024; k++) {
		r = mcg_file_pwrite_nowait(f, b, 4096, (off_t)(24 << 20) + k * 4096, &wait);
		if (r == -EAGAIN)
			break;
	}
	CHECK_EQ(r, -EAGAIN);
	CHECK(wait > 0 && wait <= 200 * 1000000ull);
	CHECK(k * 4096 <= (1 << 20) * 33 / 32 + 32 * 4096); /* refused at the limit */
	/* A writeback while stalled fails (the flushers' may not have run yet). */
	CHECK_EQ(mcg_wb_write_file(f->inode, 16, MCG_WB_SYNC, NULL), 0); /* (nothing tagged) */
	CHECK_EQ(mcg_file_fdatasync(f), -EIO);
	mcg_fault_inject_io(0, 0, 0, 0);
	CHECK_EQ(mcg_file_fsync(f), 0); /* (reported once, above) */
	CHECK_EQ(mcg_file_pwrite(f, b, 1, 0), 1);
	REQUIRE(!mcg_fault_inject_io(1, 0, EIO, MCG_FAULT_IO_WRITE));
	CHECK_EQ(mcg_wb_write_file(f->inode, 16, MCG_WB_BACKGROUND, NULL), -EIO);
	mcg_fault_inject_io(0, 0, 0, 0);
	CHECK_EQ(mcg_file_fsync(f), -EIO); /* a background writeback's error, at the next fsync */
	CHECK_EQ(mcg_file_fsync(f), 0);
	mcg_file_close(f);
	mcg_file_drop_caches();
	mcg_group_remove(g);
	mcg_group_put(g);
}

/* A writer and fsync racing: fsync returns only once what was dirty when it started is written. */
static void *fsync_rewriter(void *arg)
{
	mcg_file_t *f = arg;
	char b[4096];
	memset(b, 'r', sizeof(b));
	for (int i = 0; i < 2000; i++)
		mcg_file_pwrite(f, b, sizeof(b), (off_t)(i % 64) * 4096);
	return NULL;
}

static void test_fsync_not_starved(void)
{
	mcg_file_t *f = open_new("starve", NULL);
	REQUIRE(f);
	char b[4096 * 64];
	memset(b, 's', sizeof(b));
	CHECK_EQ(mcg_file_pwrite(f, b, sizeof(b), 0), (ssize_t)sizeof(b));
	pthread_t t;
	REQUIRE(!pthread_create(&t, NULL, fsync_rewriter, f));
	for (int i = 0; i < 20; i++)
		CHECK_EQ(mcg_file_fsync(f), 0);
	pthread_join(t, NULL);
	CHECK_EQ(mcg_file_fsync(f), 0);
	mcg_file_stat_t st;
	mcg_file_stat(f, &st);
	CHECK_EQ(st.dirty, 0);
	mcg_file_close(f);
}

/* The I/O fault point's emulated device: 4 MiB at 64 MB/s take >= 62 ms. */
static void test_emulated_device(void)
{
	CHECK_EQ(mcg_fault_io_rate(MCG_FAULT_IO_SYNC, 1), -EINVAL);
	long behind = mcg_option(MCG_OPT_DIRTY_WRITE_BEHIND);
	REQUIRE(!mcg_option_set("dirty_write_behind", 0)); /* all 4 MiB left to the fsync */
	mcg_file_t *f = open_new("device", NULL);
	REQUIRE(f);
	char *b = malloc(4 << 20);
	REQUIRE(b);
	memset(b, 'd', 4 << 20);
	CHECK_EQ(mcg_file_pwrite(f, b, 4 << 20, 0), 4 << 20);
	REQUIRE(!mcg_fault_io_rate(MCG_FAULT_IO_WRITE, 64000000));
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_EQ(mcg_file_fsync(f), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	REQUIRE(!mcg_fault_io_rate(0, 0));
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	CHECK(ms >= 4.0 * 1048576 / 64e6 * 1e3 * 0.99);
	REQUIRE(!mcg_option_set("dirty_write_behind", behind));
	mcg_file_close(f);
	free(b);
}

/* ------------------------------------------------------------ runs in flight */

/* writeback_io_depth 4 and runs of 4 pages: several runs of a small file in flight. */
static long saved_depth;

static void in_flight_begin(void)
{
	saved_depth = mcg_option(MCG_OPT_WRITEBACK_IO_DEPTH);
	REQUIRE(!mcg_option_set("writeback_io_depth", 4));
	mcg_wb_set_run_pages(4);
}

static void in_flight_end(void)
{
	mcg_wb_set_run_pages(0);
	REQUIRE(!mcg_option_set("writeback_io_depth", saved_depth));
}

/* @name opened new in @g, O_DIRECT or buffered; NULL when O_DIRECT is not here. */
static mcg_file_t *open_mode(const char *name, mcg_group_t *g, bool direct)
{
	mcg_file_t *f = NULL;
	mcg_file_opts_t o = {g, direct ? 0 : MCG_FILE_NO_DIRECT};
	unlink(path_of(name));
	int err = mcg_file_open(path_of(name), O_RDWR | O_CREAT, 0644, &o, &f);
	CHECK_EQ(err, 0);
	if (err)
		return NULL;
	mcg_file_stat_t st;
	mcg_file_stat(f, &st);
	if (direct && !st.direct_align) {
		fprintf(stderr, "  (no O_DIRECT in %s: that variant not run)\n", dir);
		mcg_file_close(f);
		return NULL;
	}
	return f;
}

/*
 * fsync of 64 pages + 100 bytes: 17 runs, 4 at a time on the pool; every
 * page written once, the counts back to 0, the backing file's bytes and
 * size exact (the last run's whole page cut back to the size).
 */
static void in_flight_round(bool direct)
{
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "wbfl", &g));
	mcg_file_t *f = open_mode("inflight", g, direct);
	if (f) {
		size_t size = 64 * 4096 + 100;
		char *data = malloc(size);
		REQUIRE(data);
		for (size_t i = 0; i < size; i++)
			data[i] = (char)(i * 7 + i / 4096);
		CHECK_EQ(mcg_file_pwrite(f, data, size, 0), (ssize_t)size);
		CHECK_EQ(stat_of(g, "file_dirty"), 65 * 4096);
		CHECK_EQ(mcg_file_fsync(f), 0);
		CHECK_EQ(stat_of(g, "file_dirty"), 0);
		CHECK_EQ(stat_of(g, "file_writeback"), 0);
		CHECK_EQ(stat_of(g, "file_written"), 65);
		CHECK(mcg_wbio_threads() >= 4); /* the runs went to the pool */
		mcg_file_stat_t st;
		mcg_file_stat(f, &st);
		CHECK(st.dirty == 0 && st.writeback == 0);
		size_t len;
		char *disk = tmpdir_read_file(path_of("inflight"), &len);
		CHECK_EQ(len, size);
		CHECK(disk && len == size && !memcmp(disk, data, size));
		free(disk);
		mcg_file_close(f);
		free(data);
	}
	mcg_file_drop_caches();
	CHECK_EQ(stat_of(g, "file"), 0);
	mcg_group_remove(g);
	mcg_group_put(g);
}

static void test_in_flight_writeback(void)
{
	in_flight_begin();
	in_flight_round(false);
	in_flight_round(true);
	in_flight_end();
}

/*
 * One run of several in flight fails: its 4 pages stay dirty (and only
 * they), the fsync fails, each handle hears of it once, the retry writes it.
 */
static void test_in_flight_error(void)
{
	in_flight_begin();
	mcg_file_t *a = open_new("flerr", NULL), *b;
	REQUIRE(a);
	REQUIRE(!mcg_file_open(path_of("flerr"), O_RDWR, 0, &buffered, &b));
	char data[32 * 4096];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 31 + 5);
	CHECK_EQ(mcg_file_pwrite(a, data, sizeof(data), 0), (ssize_t)sizeof(data));
	long errors = stat_of(mcg_group_root(), "file_writeback_errors");
	REQUIRE(!mcg_fault_inject_io(3, 0, EIO, MCG_FAULT_IO_WRITE)); /* the third run's write */
	CHECK_EQ(mcg_file_fsync(a), -EIO);
	CHECK_EQ(mcg_fault_io_failed(), 1);
	CHECK_EQ(mcg_fault_io_count(), 8); /* every run was written, the failed one once */
	mcg_fault_inject_io(0, 0, 0, 0);
	mcg_file_stat_t st;
	mcg_file_stat(a, &st);
	CHECK_EQ(st.dirty, 4);
	CHECK_EQ(st.writeback, 0);
	CHECK_EQ(stat_of(mcg_group_root(), "file_writeback_errors") - errors, 4);
	CHECK_EQ(mcg_file_fsync(a), 0); /* retried, written; a saw the error already */
	CHECK_EQ(mcg_file_fsync(b), -EIO);
	CHECK_EQ(mcg_file_fsync(b), 0);
	mcg_file_stat(a, &st);
	CHECK_EQ(st.dirty, 0);
	size_t len;
	char *disk = tmpdir_read_file(path_of("flerr"), &len);
	CHECK_EQ(len, sizeof(data));
	CHECK(disk && len == sizeof(data) && !memcmp(disk, data, sizeof(data)));
	free(disk);
	mcg_file_close(a);
	mcg_file_close(b);
	in_flight_end();
}

/* The child's half of test_fork_child: its own flushers and pool threads,
 * a file written, synced and read back.  Return: 0, or the failed step. */
static int fork_child_steps(const char *data, size_t size)
{
	if (mcg_flusher_running() || mcg_wbio_threads() != 0)
		return 1; /* the parent's threads are not the child's */
	/* Its first open starts them; a thread that cannot start (the fault
	 * point) fails nothing but the start, which the next open retries. */
	mcg_file_t *c = NULL;
	mcg_fault_inject(1, 0);
	int err = mcg_file_open(path_of("fork_child"), O_RDWR | O_CREAT | O_TRUNC, 0644, &buffered,
	                        &c);
	unsigned long hit = mcg_fault_failed();
	mcg_fault_inject(0, 0);
	if (err || hit != 1 || mcg_flusher_running())
		return 8;
	mcg_file_close(c);
	if (mcg_file_open(path_of("fork_child"), O_RDWR, 0, &buffered, &c))
		return 2;
	if (!mcg_flusher_running())
		return 3;
	if (mcg_file_pwrite(c, data, size, 0) != (ssize_t)size || mcg_file_fsync(c))
		return 4;
	if (mcg_wbio_threads() < 1)
		return 5; /* the child's runs went to a pool of its own */
	char *back = malloc(size);
	if (!back)
		return 6;
	mcg_file_drop_caches();
	int bad = mcg_file_pread(c, back, size, 0) != (ssize_t)size || memcmp(back, data, size) ? 7
	                                                                                        : 0;
	free(back);
	mcg_file_close(c);
	mcg_file_drop_caches();
	return bad;
}

/*
 * fork() with flushers, pool threads and read sections in use: the child
 * has none of the parent's threads, starts its own at its first open,
 * writes through its pool and reads back; the parent's file is untouched.
 */
static void test_fork_child(void)
{
	in_flight_begin();
	mcg_file_t *f = open_new("fork_parent", NULL);
	REQUIRE(f);
	size_t size = 32 * 4096;
	char *data = malloc(size);
	REQUIRE(data);
	for (size_t i = 0; i < size; i++)
		data[i] = (char)(i * 13 + i / 4096);
	CHECK_EQ(mcg_file_pwrite(f, data, size, 0), (ssize_t)size);
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK(mcg_wbio_threads() >= 1);
	CHECK(mcg_flusher_running());
	char back[4096];
	CHECK_EQ(mcg_file_pread(f, back, sizeof(back), 0),
	         (ssize_t)sizeof(back)); /* a read section */
	CHECK(!memcmp(back, data, sizeof(back)));
	fflush(NULL);
	pid_t pid = fork_seen(); /* the atfork handlers counted (fork_seen.h) */
	REQUIRE(pid >= 0);
	if (pid == 0) {
		for (size_t i = 0; i < size; i++)
			data[i] = (char)~data[i];
		exit(fork_child_steps(data, size)); /* exit: the child's coverage is written */
	}
	int st = 0;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	size_t len;
	char *disk = tmpdir_read_file(path_of("fork_child"), &len);
	CHECK_EQ(len, size);
	bool same = disk && len == size;
	for (size_t i = 0; same && i < size; i++)
		same = disk[i] == (char)~data[i];
	CHECK(same);
	free(disk);
	CHECK_EQ(mcg_file_pread(f, back, sizeof(back), 4096), (ssize_t)sizeof(back));
	CHECK(!memcmp(back, data + 4096, sizeof(back)));
	mcg_file_close(f);
	free(data);
	in_flight_end();
}

/*
 * States a race leaves, made by hand: a towrite tag left on a page that is
 * clean (the sync's walk skips it and clears the tag; only the dirty page
 * is written), an undirty of a clean page (nothing changes), and a page
 * removed (truncated) before its writer marks it dirty (not marked, not
 * counted).
 */
static void test_stale_states(void)
{
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "wbstale", &g));
	mcg_file_t *f = open_new("stale", g);
	REQUIRE(f);
	char b[3 * 4096];
	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (char)(i * 11 + 3);
	CHECK_EQ(mcg_file_pwrite(f, b, sizeof(b), 0), (ssize_t)sizeof(b));
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK_EQ(stat_of(g, "file_written"), 3);
	struct mcg_inode *in = f->inode;
	mcg_lock(&in->lock);
	mcg_index_tag_set(&in->index, 0, MCG_TAG_TOWRITE);
	mcg_unlock(&in->lock);
	CHECK_EQ(mcg_file_pwrite(f, "x", 1, 4096), 1);
	CHECK_EQ(stat_of(g, "file_dirty"), 4096);
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK_EQ(stat_of(g, "file_written"), 4);
	CHECK_EQ(stat_of(g, "file_dirty"), 0);
	CHECK(!mcg_index_tag_get(&in->index, 0, MCG_TAG_TOWRITE));
	struct mcg_fpage *p = mcg_inode_find_get(in, 2);
	REQUIRE(p);
	mcg_lock(&in->lock);
	mcg_wb_page_undirty_locked(in, p);
	mcg_unlock(&in->lock);
	mcg_file_stat_t st;
	mcg_file_stat(f, &st);
	CHECK(st.dirty == 0 && st.writeback == 0);
	mcg_fpage_set(p, PG_REMOVED);
	CHECK(!mcg_wb_page_dirty(in, p));
	CHECK(!mcg_fpage_test(p, PG_DIRTY));
	mcg_fpage_clear(p, PG_REMOVED);
	mcg_file_stat(f, &st);
	CHECK_EQ(st.dirty, 0);
	CHECK_EQ(stat_of(g, "file_dirty"), 0);
	CHECK_EQ(stat_of(g, "file_dirtied"), 4);
	mcg_fpage_put(p);
	mcg_file_close(f);
	mcg_file_drop_caches();
	CHECK_EQ(stat_of(g, "file"), 0);
	mcg_group_remove(g);
	mcg_group_put(g);
}

/*
 * Write-behind's turn by hand: with no range there is nothing to write; a
 * clean file takes no range; a turn that ends before its range does
 * (its page budget spent) queues the rest, which the flushers then write
 * without an fsync.
 */
static void test_behind_turns(void)
{
	long saved = mcg_option(MCG_OPT_DIRTY_WRITE_BEHIND);
	REQUIRE(!mcg_option_set("dirty_write_behind", 0)); /* no range from the writes */
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "wbturn", &g));
	mcg_file_t *f = open_new("turns", g);
	REQUIRE(f);
	struct mcg_inode *in = f->inode;
	long w = -1;
	CHECK_EQ(mcg_wb_write_file(in, 100, MCG_WB_BEHIND, &w), 0);
	CHECK_EQ(w, 0);
	mcg_wb_behind(in, 0, 8); /* clean: no range */
	CHECK_EQ(__atomic_load_n(&in->behind_to, __ATOMIC_RELAXED), 0);
	char b[8 * 4096];
	memset(b, 0x3c, sizeof(b));
	CHECK_EQ(mcg_file_pwrite(f, b, sizeof(b), 0), (ssize_t)sizeof(b));
	CHECK_EQ(stat_of(g, "file_dirty"), 8 * 4096);
	mcg_lock(&in->lock);
	in->behind_from = 0;
	in->behind_to = 8;
	mcg_unlock(&in->lock);
	mcg_wb_set_run_pages(1);
	CHECK_EQ(mcg_wb_write_file(in, 3, MCG_WB_BEHIND, &w), 0);
	mcg_wb_set_run_pages(0);
	CHECK_EQ(w, 3);
	/* The rest went back to the flushers: written within a bounded wait. */
	for (int i = 0; i < 300 && stat_of(g, "file_written") < 8; i++)
		sleep_ms(10);
	CHECK_EQ(stat_of(g, "file_written"), 8);
	CHECK_EQ(stat_of(g, "file_dirty"), 0);
	CHECK_EQ(stat_of(g, "file_writeback"), 0);
	mcg_file_close(f);
	mcg_file_drop_caches();
	mcg_group_remove(g);
	mcg_group_put(g);
	REQUIRE(!mcg_option_set("dirty_write_behind", saved));
}

/*
 * Several runs in flight failing (every write from the third on): the
 * fsync returns the first run's error, exactly the failed runs' pages stay
 * dirty; sync of every file with two failing returns the first error; with
 * the faults gone all is written and each handle hears of it once.
 */
static void test_many_runs_fail(void)
{
	in_flight_begin();
	mcg_file_t *a = open_new("manyfail_a", NULL), *c = open_new("manyfail_b", NULL);
	REQUIRE(a && c);
	char data[32 * 4096];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 17 + 1);
	CHECK_EQ(mcg_file_pwrite(a, data, sizeof(data), 0), (ssize_t)sizeof(data));
	REQUIRE(!mcg_fault_inject_io(3, 1, EIO, MCG_FAULT_IO_WRITE));
	CHECK_EQ(mcg_file_fsync(a), -EIO);
	CHECK_EQ(mcg_fault_io_failed(), 6); /* runs 3 to 8 */
	mcg_file_stat_t st;
	mcg_file_stat(a, &st);
	CHECK_EQ(st.dirty, 24);
	CHECK_EQ(st.writeback, 0);
	CHECK_EQ(mcg_file_pwrite(c, data, 8192, 0), 8192);
	CHECK_EQ(mcg_file_sync_all(), -EIO);
	mcg_fault_inject_io(0, 0, 0, 0);
	CHECK_EQ(mcg_file_sync_all(), 0);
	mcg_file_stat(a, &st);
	CHECK_EQ(st.dirty, 0);
	mcg_file_stat(c, &st);
	CHECK_EQ(st.dirty, 0);
	CHECK_EQ(mcg_file_fsync(a), -EIO); /* the sync's failure is news to both handles */
	CHECK_EQ(mcg_file_fsync(a), 0);
	CHECK_EQ(mcg_file_fsync(c), -EIO);
	CHECK_EQ(mcg_file_fsync(c), 0);
	size_t len;
	char *disk = tmpdir_read_file(path_of("manyfail_a"), &len);
	CHECK(disk && len == sizeof(data) && !memcmp(disk, data, sizeof(data)));
	free(disk);
	mcg_file_close(a);
	mcg_file_close(c);
	in_flight_end();
}

struct global_writer {
	mcg_file_t *f;
	long most; /* the root's dirty + writeback bytes at most */
};

static void *global_writer_main(void *arg)
{
	struct global_writer *w = arg;
	static char b[64 << 10];
	memset(b, 'g', sizeof(b));
	for (int i = 0; i < 64; i++) {
		CHECK_EQ(mcg_file_pwrite(w->f, b, sizeof(b), (off_t)i * (off_t)sizeof(b)),
		         (ssize_t)sizeof(b));
		char st[4096];
		mcg_group_read(mcg_group_root(), "memory.stat", st, sizeof(st));
		w->most = MCG_MAX(w->most, key_of(st, "file_dirty") + key_of(st, "file_writeback"));
	}
	return NULL;
}

/*
 * The root's domain alone (a file of no group) under global limits in
 * bytes (dirty_bytes 1 MiB, dirty_background_bytes 256 KiB): writers on an
 * emulated slow device are held near the limit by the throttle's sleeps;
 * with writeback stalled a nowait write is refused with a wait at the
 * limit.  The options' ratios come back afterwards.
 */
static void test_throttle_global(void)
{
	long ratio = mcg_option(MCG_OPT_DIRTY_RATIO);
	long bg_ratio = mcg_option(MCG_OPT_DIRTY_BACKGROUND_RATIO);
	REQUIRE(!mcg_option_set("dirty_bytes", 1 << 20));
	REQUIRE(!mcg_option_set("dirty_background_bytes", 256 << 10));
	mcg_group_t *root = mcg_group_root();
	long throttled = stat_of(root, "dirty_throttled_ms");
	mcg_file_t *f = open_new("throttle_root", NULL);
	REQUIRE(f);
	/* A new thread: a writer's first look comes after its first 32 pages
	 * (this thread's interval grew in the tests before). */
	struct global_writer w = {f, 0};
	REQUIRE(!mcg_fault_io_rate(MCG_FAULT_IO_WRITE, 32000000));
	pthread_t t;
	REQUIRE(!pthread_create(&t, NULL, global_writer_main, &w));
	pthread_join(t, NULL);
	REQUIRE(!mcg_fault_io_rate(0, 0));
	CHECK(w.most <= (1 << 20) * 33 / 32 + 32 * 4096);
	char b[4096];
	memset(b, 'g', sizeof(b));
	CHECK(stat_of(root, "dirty_throttled_ms") > throttled);
	CHECK_EQ(mcg_file_fsync(f), 0);
	REQUIRE(!mcg_fault_inject_io(1, 1, EIO, MCG_FAULT_IO_WRITE)); /* writeback stalls */
	uint64_t wait = 0;
	ssize_t r = 0;
	long k;
	for (k = 0; k < 1024; k++) {
		r = mcg_file_pwrite_nowait(f, b, 4096, (off_t)(8 << 20) + k * 4096, &wait);
		if (r == -EAGAIN)
			break;
	}
	CHECK_EQ(r, -EAGAIN);
	CHECK(wait > 0 && wait <= 200 * 1000000ull);
	CHECK(k * 4096 <= (1 << 20) * 33 / 32 + 32 * 4096); /* refused at the limit */
	CHECK_EQ(mcg_file_fdatasync(f), -EIO);
	mcg_fault_inject_io(0, 0, 0, 0);
	int err =
	        mcg_file_fsync(f); /* a flusher's failed try after the fdatasync: news once more */
	if (err)
		err = mcg_file_fsync(f);
	CHECK_EQ(err, 0);
	mcg_file_stat_t st;
	mcg_file_stat(f, &st);
	CHECK(st.dirty == 0 && st.writeback == 0);
	mcg_file_close(f);
	mcg_file_drop_caches();
	REQUIRE(!mcg_option_set("dirty_ratio", ratio));
	REQUIRE(!mcg_option_set("dirty_background_ratio", bg_ratio));
	CHECK_EQ(mcg_option(MCG_OPT_DIRTY_BYTES), 0);
	CHECK_EQ(mcg_option(MCG_OPT_DIRTY_BACKGROUND_BYTES), 0);
}

/*
 * Runs of pages by hand: a run size past the most a run holds (1024
 * pages) is the most - 1034 dirty pages go out in two writes; background
 * writeback goes on where its last chunk ended and, past the last dirty
 * page, from the file's start once.
 */
static void test_run_sizes_and_background_turns(void)
{
	long depth = mcg_option(MCG_OPT_WRITEBACK_IO_DEPTH);
	long behind = mcg_option(MCG_OPT_DIRTY_WRITE_BEHIND);
	REQUIRE(!mcg_option_set("writeback_io_depth", 1));
	REQUIRE(!mcg_option_set("dirty_write_behind", 0)); /* all of it left to the fsync */
	mcg_file_t *f = open_new("runs", NULL);
	REQUIRE(f);
	enum { PAGES = 1034 };
	char *b = malloc((size_t)PAGES * 4096);
	REQUIRE(b);
	for (size_t i = 0; i < (size_t)PAGES * 4096; i++)
		b[i] = (char)(i * 3 + i / 4096);
	CHECK_EQ(mcg_file_pwrite(f, b, (size_t)PAGES * 4096, 0), (ssize_t)PAGES * 4096);
	mcg_wb_set_run_pages(5000);
	REQUIRE(!mcg_fault_inject_io(1000000, 0, EIO, MCG_FAULT_IO_WRITE)); /* counts only */
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK_EQ(mcg_fault_io_count(), 2);
	mcg_fault_inject_io(0, 0, 0, 0);
	mcg_wb_set_run_pages(0);
	/* Background: 16 dirty pages written 4 at a time, on from the last chunk. */
	struct mcg_inode *in = f->inode;
	CHECK_EQ(mcg_file_pwrite(f, b, 16 * 4096, 0), 16 * 4096);
	long w = 0;
	CHECK_EQ(mcg_wb_write_file(in, 4, MCG_WB_BACKGROUND, &w), 0);
	CHECK_EQ(w, 4);
	CHECK_EQ(mcg_wb_write_file(in, 12, MCG_WB_BACKGROUND, &w), 0);
	CHECK_EQ(w, 12);
	mcg_file_stat_t st;
	mcg_file_stat(f, &st);
	CHECK_EQ(st.dirty, 0);
	/* Pages 0 and 1 dirty again, the next chunk would start at 16: from 0. */
	CHECK_EQ(mcg_file_pwrite(f, b, 2 * 4096, 0), 2 * 4096);
	CHECK_EQ(mcg_wb_write_file(in, 8, MCG_WB_BACKGROUND, &w), 0);
	CHECK_EQ(w, 2);
	mcg_file_stat(f, &st);
	CHECK_EQ(st.dirty, 0);
	size_t len;
	char *disk = tmpdir_read_file(path_of("runs"), &len);
	CHECK(disk && len == (size_t)PAGES * 4096 && !memcmp(disk, b, len));
	free(disk);
	free(b);
	mcg_file_close(f);
	mcg_file_drop_caches();
	REQUIRE(!mcg_option_set("writeback_io_depth", depth));
	REQUIRE(!mcg_option_set("dirty_write_behind", behind));
}

/*
 * fsync under memory faults, runs in flight: writeback needs no memory
 * to make progress (one run on the stack when the array of several is
 * refused), so every fsync succeeds and writes every page.
 */
static void test_fsync_without_memory(void)
{
	in_flight_begin();
	mcg_file_t *f = open_new("fsync_nomem", NULL);
	REQUIRE(f);
	char data[32 * 4096];
	int done = 0, hits = 0;
	for (unsigned long n = 1; n < 50 && !done; n++) {
		for (size_t i = 0; i < sizeof(data); i++)
			data[i] = (char)(i * 7 + n);
		CHECK_EQ(mcg_file_pwrite(f, data, sizeof(data), 0), (ssize_t)sizeof(data));
		mcg_fault_inject(n, 0);
		int err = mcg_file_fsync(f);
		unsigned long hit = mcg_fault_failed();
		mcg_fault_inject(0, 0);
		CHECK_EQ(err, 0);
		mcg_file_stat_t st;
		mcg_file_stat(f, &st);
		CHECK(st.dirty == 0 && st.writeback == 0);
		size_t len;
		char *disk = tmpdir_read_file(path_of("fsync_nomem"), &len);
		CHECK(disk && len == sizeof(data) && !memcmp(disk, data, sizeof(data)));
		free(disk);
		hits += hit > 0;
		done = !hit;
	}
	CHECK(done);
	CHECK(hits >= 1); /* the array of runs refused: one at a time */
	mcg_file_close(f);
	in_flight_end();
}

/*
 * The flushers' helpers by hand: a wait for the writeback generation with
 * nothing being written ends at its deadline; the walk of the domains with
 * dirty files, from a domain not on the list, starts at the list's head.
 */
static void test_flusher_walk_and_wait(void)
{
	uint64_t gen = mcg_flusher_gen();
	uint64_t t0 = mcg_os_now_ns();
	mcg_flusher_wait_gen(gen, 30);
	uint64_t took = mcg_os_now_ns() - t0;
	CHECK(took >= 29 * 1000000ull && took < 5000 * 1000000ull);
	CHECK_EQ(mcg_flusher_gen(), gen);
	mcg_group_t *clean, *dirty;
	REQUIRE(!mcg_group_create(NULL, "wbwalk-clean", &clean));
	REQUIRE(!mcg_group_create(NULL, "wbwalk-dirty", &dirty));
	mcg_file_t *f = open_new("walk", dirty);
	REQUIRE(f);
	CHECK_EQ(mcg_file_pwrite(f, "d", 1, 0), 1);
	struct mcg_pcg *p = mcg_pcg_of(clean);
	REQUIRE(p);
	mcg_pcg_get(p); /* the walk puts the domain it is given */
	struct mcg_pcg *from_clean = mcg_flusher_next_dirty(p);
	struct mcg_pcg *first = mcg_flusher_next_dirty(NULL);
	CHECK(first != NULL);
	CHECK(from_clean == first);
	if (from_clean)
		mcg_pcg_put(from_clean);
	if (first)
		mcg_pcg_put(first);
	CHECK_EQ(mcg_file_fsync(f), 0);
	mcg_file_close(f);
	mcg_file_drop_caches();
	mcg_group_remove(dirty);
	mcg_group_put(dirty);
	mcg_group_remove(clean);
	mcg_group_put(clean);
}

/*
 * O_DIRECT past the backing file's end: the file is extended for each
 * stretch of consecutive dirty pages before its runs go out together, a
 * gap between two stretches stays a hole; a failed extension costs
 * nothing but the concurrency.
 */
static void test_extend_backing(void)
{
	in_flight_begin();
	mcg_file_t *f = open_mode("extend", NULL, true);
	if (f) {
		char *b = malloc(32 * 4096);
		REQUIRE(b);
		memset(b, 'e', 32 * 4096);
		CHECK_EQ(mcg_file_pwrite(f, b, 32 * 4096, 0), 32 * 4096);
		CHECK_EQ(mcg_file_pwrite(f, b, 32 * 4096, 2000 * 4096), 32 * 4096);
		CHECK_EQ(mcg_file_fsync(f), 0);
		struct stat st;
		REQUIRE(!stat(path_of("extend"), &st));
		CHECK_EQ(st.st_size, 2032 * 4096);
		/* 64 pages written, 1968 of hole between: far fewer than 2032 allocated. */
		CHECK(st.st_blocks * 512 < 1000 * 4096);
		CHECK(st.st_blocks * 512 >= 64 * 4096);
		size_t len;
		char *disk = tmpdir_read_file(path_of("extend"), &len);
		REQUIRE(disk && len == 2032 * 4096);
		CHECK(disk[0] == 'e' && disk[32 * 4096 - 1] == 'e' && disk[32 * 4096] == 0 &&
		      disk[2000 * 4096 - 1] == 0 && disk[2000 * 4096] == 'e' &&
		      disk[2032 * 4096 - 1] == 'e');
		free(disk);
		/* The extension fails: the runs still go out, every byte lands. */
		CHECK_EQ(mcg_file_pwrite(f, b, 32 * 4096, 2032 * 4096), 32 * 4096);
		REQUIRE(!mcg_fault_inject_io(1, 0, EIO, MCG_FAULT_IO_TRUNCATE));
		CHECK_EQ(mcg_file_fsync(f), 0);
		CHECK_EQ(mcg_fault_io_failed(), 1);
		mcg_fault_inject_io(0, 0, 0, 0);
		disk = tmpdir_read_file(path_of("extend"), &len);
		CHECK(disk && len == 2064 * 4096 && disk[2032 * 4096] == 'e' &&
		      disk[2064 * 4096 - 1] == 'e');
		free(disk);
		mcg_file_close(f);
		free(b);
	}
	in_flight_end();
}

/* ------------------------------------------------------------ write-behind */

/* Wait (at most 10 s) until @g has written @written pages and has none
 * under writeback; Return: its file_written then. */
static long wait_written(mcg_group_t *g, long written)
{
	long w = 0;
	for (int i = 0; i < 1000; i++) {
		w = stat_of(g, "file_written");
		if (w >= written && !stat_of(g, "file_writeback"))
			break;
		sleep_ms(10);
	}
	return w;
}

/*
 * Write-behind, with no periodic pass and the group far under its
 * background threshold (nothing else writes): a handle writing
 * sequentially has each complete aligned chunk (16 pages here) written
 * without fsync, and only that chunk's pages; a partial chunk, a write
 * that does not continue the handle's last one, and dirty_write_behind 0
 * start nothing (the file's write-behind range stays empty).
 */
static void test_write_behind(void)
{
	long saved = mcg_option(MCG_OPT_DIRTY_WRITE_BEHIND);
	REQUIRE(!mcg_option_set("dirty_writeback_centisecs", 0));
	REQUIRE(!mcg_option_set("dirty_write_behind", 16 * 4096));
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "wbbehind", &g));
	REQUIRE(!mcg_group_write(g, "memory.dirty_bytes", "64M"));
	REQUIRE(!mcg_group_write(g, "memory.dirty_background_bytes", "32M"));
	mcg_file_t *f = open_new("behind", g);
	REQUIRE(f);
	struct mcg_inode *in = f->inode;
	enum { P = 4096 };
	char *b = malloc(112 * P);
	REQUIRE(b);
	for (size_t i = 0; i < 112 * P; i++)
		b[i] = (char)(i * 13 + i / P);
	/* Pages 0-15 in four sequential writes: the fourth completes chunk 0. */
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(mcg_file_pwrite(f, b + i * 4 * P, 4 * P, i * 4 * P), 4 * P);
		CHECK_EQ(__atomic_load_n(&in->behind_to, __ATOMIC_RELAXED), 0);
	}
	CHECK_EQ(mcg_file_pwrite(f, b + 12 * P, 4 * P, 12 * P), 4 * P);
	CHECK_EQ(wait_written(g, 16), 16);
	CHECK_EQ(stat_of(g, "file_dirty"), 0);
	size_t len;
	char *disk =
	        tmpdir_read_file(path_of("behind"), &len); /* no fsync: written by the flushers */
	CHECK(disk && len == 16 * P && !memcmp(disk, b, 16 * P));
	free(disk);
	/* Pages 16-23, sequential: chunk 1 not complete. */
	CHECK_EQ(mcg_file_pwrite(f, b + 16 * P, 8 * P, 16 * P), 8 * P);
	CHECK_EQ(__atomic_load_n(&in->behind_to, __ATOMIC_RELAXED), 0);
	/* Pages 48-63, all of chunk 3, but not where the last write ended. */
	CHECK_EQ(mcg_file_pwrite(f, b + 48 * P, 16 * P, 48 * P), 16 * P);
	CHECK_EQ(__atomic_load_n(&in->behind_to, __ATOMIC_RELAXED), 0);
	CHECK_EQ(stat_of(g, "file_dirty"), 24 * P);
	/* Pages 64-79 continue it: chunk 4 written, and nothing else. */
	CHECK_EQ(mcg_file_pwrite(f, b + 64 * P, 16 * P, 64 * P), 16 * P);
	CHECK_EQ(wait_written(g, 32), 32);
	CHECK_EQ(stat_of(g, "file_dirty"), 24 * P);
	/* Off: pages 80-95, sequential, chunk 5 complete, stay dirty. */
	REQUIRE(!mcg_option_set("dirty_write_behind", 0));
	CHECK_EQ(mcg_file_pwrite(f, b + 80 * P, 16 * P, 80 * P), 16 * P);
	CHECK_EQ(__atomic_load_n(&in->behind_to, __ATOMIC_RELAXED), 0);
	CHECK_EQ(stat_of(g, "file_dirty"), 40 * P);
	CHECK_EQ(stat_of(g, "file_written"), 32);
	/* fsync writes the rest; every byte lands (the hole 24-47 reads 0). */
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK_EQ(stat_of(g, "file_written"), 72);
	CHECK_EQ(stat_of(g, "file_dirty"), 0);
	memset(b + 24 * P, 0, 24 * P);
	disk = tmpdir_read_file(path_of("behind"), &len);
	CHECK(disk && len == 96 * P && !memcmp(disk, b, 96 * P));
	free(disk);
	REQUIRE(!mcg_option_set("dirty_write_behind", saved));
	REQUIRE(!mcg_option_set("dirty_writeback_centisecs", 500));
	mcg_file_close(f);
	mcg_file_drop_caches();
	mcg_group_remove(g);
	mcg_group_put(g);
	free(b);
}

/* The throttle's trace: called with its argument on each pause decision
 * above freerun, the group's own domain the stricter, no pause under
 * nowait; unset, no call. */
struct trace_seen {
	long calls;
	struct mcg_dirty_trace last;
};

static void trace_note(const struct mcg_dirty_trace *t, void *arg)
{
	struct trace_seen *seen = arg;
	seen->calls++;
	seen->last = *t;
}

static void test_dirty_trace(void)
{
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "wbtrace", &g));
	REQUIRE(!mcg_group_write(g, "memory.dirty_bytes", "1M"));
	REQUIRE(!mcg_group_write(g, "memory.dirty_background_bytes", "512K"));
	mcg_file_t *f = open_new("trace", g);
	REQUIRE(f);
	char b[4096];
	memset(b, 'd', sizeof(b));
	struct trace_seen seen = {0};
	mcg_dirty_set_trace(trace_note, &seen);
	REQUIRE(!mcg_fault_inject_io(1, 1, EIO, MCG_FAULT_IO_WRITE)); /* writeback stalls */
	uint64_t wait = 0;
	ssize_t r = 0;
	long k;
	for (k = 0; k < 1024; k++) {
		r = mcg_file_pwrite_nowait(f, b, sizeof(b), k * 4096, &wait);
		if (r == -EAGAIN)
			break;
	}
	CHECK_EQ(r, -EAGAIN);
	CHECK(seen.calls >= 1);
	CHECK(seen.last.group == g);
	CHECK(seen.last.group_domain);
	CHECK_EQ(seen.last.pause_ms, 0); /* nowait: none slept */
	CHECK_EQ(seen.last.thresh, (1ul << 20) / 4096);
	CHECK_EQ(seen.last.bg_thresh, (512ul << 10) / 4096);
	CHECK(seen.last.dirty > seen.last.bg_thresh);
	mcg_dirty_set_trace(NULL, NULL);
	long calls = seen.calls;
	CHECK_EQ(mcg_file_pwrite_nowait(f, b, sizeof(b), k * 4096, &wait), -EAGAIN);
	CHECK_EQ(seen.calls, calls);
	mcg_fault_inject_io(0, 0, 0, 0);
	mcg_file_fsync(f); /* -EIO if a flusher tried while stalled (timing), else 0 */
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK_EQ(stat_of(g, "file_dirty"), 0);
	mcg_file_close(f);
	mcg_file_drop_caches();
	mcg_group_remove(g);
	mcg_group_put(g);
}

/* One group's life with the throttle looking at its domain: written past
 * its background threshold, synced, its files closed and dropped, removed. */
static void group_life(const char *name)
{
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, name, &g));
	REQUIRE(!mcg_group_write(g, "memory.dirty_bytes", "256K"));
	REQUIRE(!mcg_group_write(g, "memory.dirty_background_bytes", "128K"));
	mcg_file_t *f = open_new(name, g);
	REQUIRE(f);
	char b[4096];
	memset(b, 'l', sizeof(b));
	for (int i = 0; i < 256; i++)
		CHECK_EQ(mcg_file_pwrite(f, b, sizeof(b), (off_t)i * 4096), (ssize_t)sizeof(b));
	CHECK_EQ(mcg_file_fsync(f), 0);
	mcg_file_close(f);
	mcg_file_drop_caches();
	mcg_group_remove(g);
	mcg_group_put(g);
}

/* A group gone with nothing left of it: every reference the throttle took
 * on the group (looking at its domain) is put back, so once removed it is
 * released, no dying group left. */
static void test_group_gone_at_rest(void)
{
	group_life("rest1");
	CHECK_EQ(read_key(mcg_group_root(), "cgroup.stat", "nr_dying_descendants"), 0);
	CHECK_EQ(read_key(mcg_group_root(), "cgroup.stat", "nr_descendants"), 0);
}

/* Each writeback run that ends moves the flushers' generation, which
 * reclaim waits on (mcg_wb_reclaim_wait): written, fsync'd, it moved. */
static void test_written_moves_gen(void)
{
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "wbgen", &g));
	mcg_file_t *f = open_new("gen", g);
	REQUIRE(f);
	char b[4 * 4096];
	memset(b, 'g', sizeof(b));
	CHECK_EQ(mcg_file_pwrite(f, b, sizeof(b), 0), (ssize_t)sizeof(b));
	uint64_t gen = mcg_flusher_gen();
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK(mcg_flusher_gen() > gen);
	mcg_file_close(f);
	mcg_file_drop_caches();
	mcg_group_remove(g);
	mcg_group_put(g);
}

/* A removed group's page cache state (its pcg) is freed once the last
 * reference goes - the flushers' periodic pass drops the domain's - and
 * the library then holds as many objects as before the group's life. */
static void test_group_state_freed(void)
{
	REQUIRE(!mcg_option_set("dirty_writeback_centisecs", 5));
	mcg_file_t *f = open_new("state0", NULL); /* the file layer up, before */
	REQUIRE(f);
	mcg_file_close(f);
	mcg_file_drop_caches();
	size_t before = held_kmalloc_objects();
	group_life("state1");
	group_life("state2");
	/* the periodic pass (the first may be a long sleep's end away) drops
	 * the domains' references */
	size_t now = 0;
	for (int i = 0; i < 800 && (now = held_kmalloc_objects()) != before; i++)
		sleep_ms(10);
	CHECK_EQ(now, before);
	REQUIRE(!mcg_option_set("dirty_writeback_centisecs", 500));
}

/* A thread waiting for the flushers' generation to move is woken when a
 * writeback run ends, not at its deadline. */
struct gen_wait {
	uint64_t gen;
	double seconds;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *gen_waiter(void *arg)
{
	struct gen_wait *w = arg;
	double t0 = now_s();
	mcg_flusher_wait_gen(w->gen, 20000);
	w->seconds = now_s() - t0;
	return NULL;
}

static void test_written_wakes_waiters(void)
{
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "wbwake", &g));
	mcg_file_t *f = open_new("wake", g);
	REQUIRE(f);
	char b[4096];
	memset(b, 'w', sizeof(b));
	CHECK_EQ(mcg_file_pwrite(f, b, sizeof(b), 0), (ssize_t)sizeof(b));
	struct gen_wait w = {mcg_flusher_gen(), 0};
	pthread_t t;
	REQUIRE(!pthread_create(&t, NULL, gen_waiter, &w));
	sleep_ms(50);
	CHECK_EQ(mcg_file_fsync(f), 0);
	pthread_join(t, NULL);
	CHECK(w.seconds < 10.0); /* woken at once; the deadline is 20 s */
	mcg_file_close(f);
	mcg_file_drop_caches();
	mcg_group_remove(g);
	mcg_group_put(g);
}

int main(void)
{
	mcg_options_use_env(0);
	if (tmpdir_make(dir, sizeof(dir), NULL)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_throttle_global); /* first: the global limit, slow to come down, not raised yet */
	RUN(test_group_state_freed); /* first: no earlier group's state pending */
	RUN(test_states);
	RUN(test_accounting_off);
	RUN(test_errors_reported_once);
	RUN(test_enospc_refuses);
	RUN(test_background_writeback);
	RUN(test_periodic_writeback);
	RUN(test_throttle_bound);
	RUN(test_dirty_trace);
	RUN(test_group_gone_at_rest);
	RUN(test_written_moves_gen);
	RUN(test_written_wakes_waiters);
	RUN(test_fsync_not_starved);
	RUN(test_emulated_device);
	RUN(test_in_flight_writeback);
	RUN(test_in_flight_error);
	RUN(test_fork_child);
	RUN(test_stale_states);
	RUN(test_behind_turns);
	RUN(test_many_runs_fail);
	RUN(test_run_sizes_and_background_turns);
	RUN(test_fsync_without_memory);
	RUN(test_flusher_walk_and_wait);
	RUN(test_extend_backing);
	RUN(test_write_behind);
	mcg_file_sync_all();
	mcg_file_drop_caches();
	tmpdir_remove(dir);
	return test_done();
}
