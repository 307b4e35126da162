/* SPDX-License-Identifier: MIT */
/*
 * test_file_fault.c - failures at every I/O call and every allocation of a
 * page-cache workload, swept SQLite-style.
 *
 * I/O: a scenario (two handles, writes, fsyncs, a truncate, reads) runs with
 * the Nth I/O call failing - EIO, ENOSPC, EINTR, or a short transfer - for
 * every N until one run passes the fault point without reaching N.  Each
 * call answers correctly or with a clean error; then, fault disarmed, each
 * handle fsyncs until clean: it has seen an error once in all when the
 * fault hit a writeback write or a backing sync (errseq), never more; and
 * the file, read with read(2), holds every byte a write said it took.
 *
 * Memory: the same kind of sweep with mcg_fault_inject() over opens,
 * writes, reads, fsync, truncate: every call succeeds or fails cleanly,
 * and once the cache is dropped nothing stays charged.  Also a sticky
 * sweep (the Nth allocation and all after it fail), each run in a fresh
 * child process whose slab caches hold no page yet.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/wait.h>

#include "group_file.h"
#include "memcg/debug.h"
#include "memcg/file.h"
#include "memcg/memcg.h"
#include "pagecache/writeback.h"
#include "test.h"
#include "tmpdir.h"

#define SIZE (6 * 4096 + 100)

static char dir[PATH_MAX];
static char path[PATH_MAX];

struct model {
	char data[SIZE + 8192];
	size_t size;
};

static void model_write(struct model *m, const char *b, size_t n, size_t at)
{
	memcpy(m->data + at, b, n);
	if (at + n > m->size)
		m->size = at + n;
}

/* One run of the scenario; counts the errors each handle's fsyncs saw. */
static void scenario(const mcg_file_opts_t *o, struct model *m, int seen[2], bool *opened,
                     unsigned long *hit)
{
	mcg_file_t *h[2] = {NULL, NULL};
	char b[SIZE];
	for (int i = 0; i < SIZE; i++)
		b[i] = (char)(i * 11 + 3);
	memset(m, 0, sizeof(*m));
	seen[0] = seen[1] = 0;
	unlink(path);
	if (mcg_file_open(path, O_RDWR | O_CREAT, 0644, o, &h[0]))
		goto out;
	if (mcg_file_open(path, O_RDWR, 0, o, &h[1]))
		goto out;
	*opened = true;
	ssize_t n = mcg_file_pwrite(h[0], b, SIZE, 0);
	CHECK(n == SIZE || n < 0);
	if (n > 0)
		model_write(m, b, (size_t)n, 0);
	seen[0] += mcg_file_fsync(h[0]) != 0;
	n = mcg_file_pwrite(h[1], b + 7, 5000, 3 * 4096 + 11);
	CHECK(n == 5000 || n < 0);
	if (n > 0)
		model_write(m, b + 7, (size_t)n, 3 * 4096 + 11);
	seen[1] += mcg_file_fdatasync(h[1]) != 0;
	if (!mcg_file_truncate(h[0], SIZE - 3000)) {
		m->size = SIZE - 3000;
		memset(m->data + m->size, 0, sizeof(m->data) - m->size);
	} else {
		/* Failed truncate: the cache has the new size, the file may not
		 * have: what the test checks is that the data up to it is right. */
		if (m->size > SIZE - 3000)
			m->size = SIZE - 3000;
		memset(m->data + m->size, 0, sizeof(m->data) - m->size);
	}
	char r[SIZE];
	n = mcg_file_pread(h[1], r, SIZE, 0);
	CHECK(n < 0 || (size_t)n == m->size);
	if (n > 0)
		CHECK(!memcmp(r, m->data, (size_t)n));
	n = mcg_file_pwrite(h[1], b, 4096, 8192);
	if (n > 0)
		model_write(m, b, (size_t)n, 8192);
	seen[0] += mcg_file_fsync(h[0]) != 0;
	seen[1] += mcg_file_fsync(h[1]) != 0;
out:
	*hit = mcg_fault_io_failed();
	mcg_fault_inject_io(0, 0, 0, 0);
	/* Disarmed: each handle fsyncs until clean (at most twice). */
	for (int i = 0; i < 2; i++) {
		if (!h[i])
			continue;
		for (int k = 0; k < 3; k++) {
			int err = mcg_file_fsync(h[i]);
			if (!err)
				break;
			seen[i]++;
		}
		CHECK_EQ(mcg_file_fsync(h[i]), 0);
		mcg_file_close(h[i]);
	}
}

static void check_file(const struct model *m, unsigned long nth)
{
	size_t len;
	char *disk = tmpdir_read_file(path, &len);
	REQUIRE(disk);
	/* A failed ftruncate may leave the file longer: the model's bytes must be there. */
	CHECK(len >= m->size);
	if (memcmp(disk, m->data, m->size)) {
		fprintf(stderr, "nth %lu: the file differs from what was written\n", nth);
		CHECK(!"data lost");
	}
	free(disk);
}

static void sweep_io(int err, unsigned ops, bool direct)
{
	mcg_file_opts_t o = {NULL, direct ? 0 : MCG_FILE_NO_DIRECT};
	static struct model m;
	int seen[2];
	unsigned long nth;
	for (nth = 1; nth < 400; nth++) {
		bool opened = false;
		mcg_file_drop_caches();
		REQUIRE(!mcg_fault_inject_io(nth, 0, err, ops));
		unsigned long hit;
		scenario(&o, &m, seen, &opened, &hit); /* (disarms) */
		if (opened)
			check_file(&m, nth);
		/* Errors reach a handle once at most; a writeback failure reaches both. */
		CHECK(seen[0] <= 1 && seen[1] <= 1);
		if (!hit)
			break; /* the whole scenario ran before the Nth call */
	}
	CHECK(nth > 3 && nth < 400);
	fprintf(stderr, "  err %d ops %#x %s: %lu runs\n", err, ops, direct ? "direct" : "buffered",
	        nth);
}

static void test_io_eio(void)
{
	sweep_io(EIO, MCG_FAULT_IO_ALL, false);
	sweep_io(EIO, MCG_FAULT_IO_ALL, true);
}

static void test_io_enospc(void)
{
	sweep_io(ENOSPC, MCG_FAULT_IO_WRITE | MCG_FAULT_IO_SYNC, false);
	sweep_io(ENOSPC, MCG_FAULT_IO_WRITE | MCG_FAULT_IO_SYNC, true);
}

static void test_io_eintr_and_short(void)
{
	sweep_io(EINTR, MCG_FAULT_IO_ALL, true); /* retried inside: never an error */
	sweep_io(0, MCG_FAULT_IO_READ | MCG_FAULT_IO_WRITE, false);
	sweep_io(0, MCG_FAULT_IO_READ | MCG_FAULT_IO_WRITE, true);
}

/* The same with runs of 2 pages, 4 in flight on the writeback I/O pool:
 * failures land in pool threads, runs end out of order. */
static void test_io_in_flight(void)
{
	REQUIRE(!mcg_option_set("writeback_io_depth", 4));
	mcg_wb_set_run_pages(2);
	sweep_io(EIO, MCG_FAULT_IO_ALL, false);
	sweep_io(EIO, MCG_FAULT_IO_ALL, true);
	sweep_io(ENOSPC, MCG_FAULT_IO_WRITE | MCG_FAULT_IO_SYNC, true);
	sweep_io(0, MCG_FAULT_IO_READ | MCG_FAULT_IO_WRITE, true);
	mcg_wb_set_run_pages(0);
	REQUIRE(!mcg_option_set("writeback_io_depth", 8));
}

/* A writeback failure reaches every handle exactly once. */
static void test_io_once_each(void)
{
	static struct model m;
	int seen[2];
	bool opened = false;
	unsigned long hit;
	mcg_file_opts_t o = {NULL, MCG_FILE_NO_DIRECT};
	/* The first write call is the first fsync's writeback. */
	REQUIRE(!mcg_fault_inject_io(1, 0, EIO, MCG_FAULT_IO_WRITE));
	scenario(&o, &m, seen, &opened, &hit);
	CHECK_EQ(hit, 1);
	CHECK(opened);
	CHECK_EQ(seen[0], 1);
	CHECK_EQ(seen[1], 1);
	check_file(&m, 1);
}

/* Memory faults: each call clean; nothing left charged.  Runs of one page,
 * 4 in flight: a writeback's runs are allocated (its fallback: one at a
 * time, from the stack). */
static void test_memory_sweep(void)
{
	REQUIRE(!mcg_option_set("writeback_io_depth", 4));
	mcg_wb_set_run_pages(1);
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "ff", &g));
	mcg_file_opts_t o = {g, MCG_FILE_NO_DIRECT};
	char b[3 * 4096];
	memset(b, 9, sizeof(b));
	unsigned long nth;
	for (nth = 1; nth < 2000; nth++) {
		unlink(path);
		mcg_fault_inject(nth, 0);
		mcg_file_t *f = NULL;
		if (!mcg_file_open(path, O_RDWR | O_CREAT, 0644, &o, &f)) {
			ssize_t n = mcg_file_pwrite(f, b, sizeof(b), 4096);
			CHECK(n == (ssize_t)sizeof(b) || n == -ENOMEM || (n > 0 && n % 4096 == 0));
			char r[sizeof(b)];
			n = mcg_file_pread(f, r, sizeof(r), 4096);
			CHECK(n < 0 || !memcmp(r, b, (size_t)n));
			int err = mcg_file_fsync(f);
			CHECK(err == 0 || err == -ENOMEM);
			err = mcg_file_truncate(f, 5000);
			CHECK(err == 0 || err == -ENOMEM);
			mcg_file_close(f);
		}
		unsigned long failed = mcg_fault_failed();
		mcg_fault_inject(0, 0);
		mcg_file_sync_all();
		mcg_file_drop_caches();
		mcg_group_drain_stocks();
		CHECK_EQ(read_long(g, "memory.current"), 0);
		CHECK_EQ(read_key(g, "memory.stat", "file"), 0);
		if (!failed)
			break;
	}
	CHECK(nth > 3 && nth < 2000);
	fprintf(stderr, "  memory: %lu runs\n", nth);
	mcg_wb_set_run_pages(0);
	REQUIRE(!mcg_option_set("writeback_io_depth", 8));
	mcg_group_remove(g);
	mcg_group_put(g);
}

/* One child of test_memory_sticky_fresh(): 0 (the fault was hit, all
 * clean), 3 (the fault was never reached), else the failed steps' bits. */
static int sticky_child(unsigned long nth)
{
	int bad = 0;
	mcg_group_t *g;
	if (mcg_group_create(NULL, "fresh", &g))
		return 1 << 1;
	mcg_file_opts_t o = {g, MCG_FILE_NO_DIRECT};
	/* The page cache started, no page allocated yet: its caches are empty. */
	char other[PATH_MAX];
	tmpdir_path(other, sizeof(other), dir, "fresh-start");
	mcg_file_t *f = NULL;
	if (mcg_file_open(other, O_RDWR | O_CREAT, 0644, &o, &f))
		return 1 << 2;
	mcg_file_close(f);
	char b[3 * 4096], r[sizeof(b)];
	memset(b, 7, sizeof(b));
	unlink(path);
	mcg_fault_inject(nth, 1); /* this call and every one after it */
	f = NULL;
	if (!mcg_file_open(path, O_RDWR | O_CREAT, 0644, &o, &f)) {
		ssize_t n = mcg_file_pwrite(f, b, sizeof(b), 4096);
		bad |= !(n == (ssize_t)sizeof(b) || n == -ENOMEM || (n > 0 && n % 4096 == 0)) << 3;
		n = mcg_file_pread(f, r, sizeof(r), 4096);
		bad |= !(n < 0 || !memcmp(r, b, (size_t)n)) << 4;
		int err = mcg_file_fsync(f);
		bad |= !(err == 0 || err == -ENOMEM) << 5;
		mcg_file_close(f);
	}
	unsigned long failed = mcg_fault_failed();
	mcg_fault_inject(0, 0);
	/* Disarmed: the cache serves again, and gives every charge back. */
	f = NULL;
	bad |= (mcg_file_open(path, O_RDWR | O_CREAT, 0644, &o, &f) != 0) << 6;
	if (f) {
		bad |= (mcg_file_pwrite(f, b, sizeof(b), 0) != (ssize_t)sizeof(b)) << 7;
		bad |= (mcg_file_pread(f, r, sizeof(r), 0) != (ssize_t)sizeof(r) ||
		        memcmp(r, b, sizeof(b)))
		       << 8;
		bad |= (mcg_file_fsync(f) != 0) << 9;
		mcg_file_close(f);
	}
	mcg_file_sync_all();
	mcg_file_drop_caches();
	mcg_group_drain_stocks();
	bad |= (read_long(g, "memory.current") != 0) << 10;
	bad |= (read_key(g, "memory.stat", "file") != 0) << 11;
	unlink(other);
	if (bad)
		return bad;
	return failed ? 0 : 3;
}

/*
 * Memory faults, sticky, in a fresh process: the Nth allocation and every
 * one after it fail, in a child whose page cache has just started and
 * allocated no page (its slab caches empty, so the page's own allocations
 * reach the fault point too).  Every call fails cleanly; disarmed, the
 * cache serves and nothing stays charged.  Runs first: the children must
 * not inherit a started page cache (its threads do not survive a fork).
 */
static void test_memory_sticky_fresh(void)
{
	unsigned long nth;
	for (nth = 1; nth < 600; nth++) {
		fflush(NULL);
		pid_t pid = fork();
		REQUIRE(pid >= 0);
		if (pid == 0)
			exit(sticky_child(nth)); /* exit: the child's coverage is written */
		int st;
		REQUIRE(waitpid(pid, &st, 0) == pid);
		if (!WIFEXITED(st) || (WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 3)) {
			fprintf(stderr, "nth %lu: child status %#x\n", nth, st);
			CHECK(!"a sticky fault left the cache unclean");
			break;
		}
		if (WEXITSTATUS(st) == 3)
			break;
	}
	CHECK(nth > 3 && nth < 600);
	fprintf(stderr, "  memory, sticky, fresh process: %lu runs\n", nth);
}

int main(void)
{
	mcg_options_use_env(0);
	if (tmpdir_make(dir, sizeof(dir), NULL)) {
		perror("mkdtemp");
		return 1;
	}
	tmpdir_path(path, sizeof(path), dir, "fault");
	RUN(test_memory_sticky_fresh);
	RUN(test_io_once_each);
	RUN(test_io_eio);
	RUN(test_io_enospc);
	RUN(test_io_eintr_and_short);
	RUN(test_io_in_flight);
	RUN(test_memory_sweep);
	mcg_file_drop_caches();
	tmpdir_remove(dir);
	return test_done();
}
