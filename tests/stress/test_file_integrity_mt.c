/* SPDX-License-Identifier: MIT */
/*
 * test_file_integrity_mt.c - many threads in several groups write random
 * data through the page cache, read back their own, fsync and close; then a
 * plain read(2) checks every byte against what each thread wrote.
 *
 *	root
 *	 |- t0  dirty_bytes 1M, max 24M   threads 0,1: own files, O_DIRECT
 *	 |- t1  dirty_bytes 512K          threads 2,3: one shared file, halves
 *	 `- t2  dirty_ratio 5             threads 4,5: own files, buffered;
 *	                                   t2 is removed halfway: its pages and
 *	                                   its handles' charges go to the root
 *
 * Small dirty limits keep the flushers, the throttle and (t0's max) reclaim
 * running under the writers the whole time.  Writeback goes out in runs of
 * 16 pages, 4 in flight on the writeback I/O pool, so fsyncs and flushers
 * write several runs of a file at once, ending in any order.  At rest: every group's file
 * counters and memory.current are 0 once the cache is dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>

#include "group_file.h"
#include "memcg/file.h"
#include "memcg/memcg.h"
#include "pagecache/writeback.h"
#include "stress.h"
#include "test.h"
#include "tmpdir.h"

#define THREADS 6
#define FILE_SIZE (3u << 20)
#define OPS 2000

static char dir[PATH_MAX];
static mcg_group_t *groups[3];
static mcg_file_t *shared;
static char *images[THREADS]; /* what each thread's bytes must be */
static pthread_barrier_t halfway;

struct worker {
	int id;
	mcg_file_t *f;
	size_t lo, hi; /* its bytes of the file */
	char *image;
	long errors;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned seed = 0x9e3779b9u * (unsigned)(w->id + 1);
	char *buf = malloc(256 << 10), *rd = malloc(256 << 10);
	for (int op = 0; op < OPS; op++) {
		if (op == OPS / 2)
			pthread_barrier_wait(&halfway);
		size_t span = w->hi - w->lo;
		size_t len = 1 + stress_rnd(&seed) % (op % 10 == 0 ? (256u << 10) : 9000u);
		size_t at = w->lo + stress_rnd(&seed) % span;
		if (at + len > w->hi)
			len = w->hi - at;
		for (size_t i = 0; i < len; i++)
			buf[i] = (char)stress_rnd(&seed);
		ssize_t n = mcg_file_pwrite(w->f, buf, len, (off_t)at);
		if (n != (ssize_t)len) {
			w->errors++;
			continue;
		}
		memcpy(w->image + at, buf, len);
		/* Read some of its own back through the cache. */
		size_t rlen = 1 + stress_rnd(&seed) % (64u << 10);
		size_t rat = w->lo + stress_rnd(&seed) % span;
		if (rat + rlen > w->hi)
			rlen = w->hi - rat;
		n = mcg_file_pread(w->f, rd, rlen, (off_t)rat);
		if (n < 0 || memcmp(rd, w->image + rat, (size_t)n)) {
			w->errors++;
			fprintf(stderr, "thread %d: read back differs at %zu\n", w->id, rat);
		}
		if (op % 97 == 0 && mcg_file_fdatasync(w->f))
			w->errors++;
	}
	free(buf);
	free(rd);
	return NULL;
}

static void test_integrity(void)
{
	static const char *names[3] = {"t0", "t1", "t2"};
	for (int i = 0; i < 3; i++)
		REQUIRE(!mcg_group_create(NULL, names[i], &groups[i]));
	REQUIRE(!mcg_group_write(groups[0], "memory.dirty_bytes", "1M"));
	REQUIRE(!mcg_group_write(groups[0], "memory.max", "24M"));
	REQUIRE(!mcg_group_write(groups[1], "memory.dirty_bytes", "512K"));
	REQUIRE(!mcg_group_write(groups[2], "memory.dirty_ratio", "5"));
	pthread_barrier_init(&halfway, NULL, THREADS + 1);
	struct worker w[THREADS];
	char path[PATH_MAX], name[32];
	for (int i = 0; i < THREADS; i++) {
		images[i] = calloc(1, FILE_SIZE);
		REQUIRE(images[i]);
		mcg_file_opts_t o = {groups[i / 2], i >= 4 ? MCG_FILE_NO_DIRECT : 0};
		w[i] = (struct worker){.id = i, .lo = 0, .hi = FILE_SIZE, .image = images[i]};
		if (i == 2 || i == 3) { /* one file, a half each */
			if (!shared)
				REQUIRE(!mcg_file_open(
				        tmpdir_path(path, sizeof(path), dir, "shared"),
				        O_RDWR | O_CREAT, 0644, &o, &shared));
			w[i].f = shared;
			w[i].lo = (size_t)(i - 2) * (FILE_SIZE / 2);
			w[i].hi = w[i].lo + FILE_SIZE / 2;
			continue;
		}
		snprintf(name, sizeof(name), "file%d", i);
		REQUIRE(!mcg_file_open(tmpdir_path(path, sizeof(path), dir, name),
		                       O_RDWR | O_CREAT | O_TRUNC, 0644, &o, &w[i].f));
	}
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		REQUIRE(!pthread_create(&t[i], NULL, worker_main, &w[i]));
	pthread_barrier_wait(&halfway);
	CHECK_EQ(mcg_group_remove(groups[2]), 0); /* while its threads write */
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < THREADS; i++) {
		CHECK_EQ(w[i].errors, 0);
		if (i != 3) {
			CHECK_EQ(mcg_file_fsync(w[i].f), 0);
			CHECK_EQ(mcg_file_close(w[i].f), 0);
		}
	}
	CHECK_EQ(read_key(groups[0], "memory.events", "oom"), 0);
	/* Every byte, with read(2). */
	for (int i = 0; i < THREADS; i++) {
		if (i == 2 || i == 3)
			snprintf(name, sizeof(name), "shared");
		else
			snprintf(name, sizeof(name), "file%d", i);
		size_t len;
		char *disk = tmpdir_read_file(tmpdir_path(path, sizeof(path), dir, name), &len);
		REQUIRE(disk);
		size_t lo = w[i].lo, hi = w[i].hi;
		/* The file may end before hi where the last bytes were never written. */
		size_t end = hi < len ? hi : len;
		CHECK(!memcmp(disk + lo, images[i] + lo, end - lo));
		for (size_t k = end; k < hi; k++)
			if (images[i][k]) {
				CHECK(!"bytes written are missing from the file");
				break;
			}
		free(disk);
	}
	/* At rest, everything uncharged once dropped. */
	mcg_file_drop_caches();
	mcg_group_drain_stocks();
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(read_key(groups[i], "memory.stat", "file"), 0);
		CHECK_EQ(read_key(groups[i], "memory.stat", "file_dirty"), 0);
		CHECK_EQ(read_key(groups[i], "memory.stat", "file_writeback"), 0);
		CHECK_EQ(read_long(groups[i], "memory.current"), 0);
	}
	CHECK_EQ(read_key(mcg_group_root(), "memory.stat", "file"), 0);
	CHECK_EQ(read_key(mcg_group_root(), "memory.stat", "active_file"), 0);
	CHECK_EQ(read_key(mcg_group_root(), "memory.stat", "inactive_file"), 0);
	for (int i = 0; i < 3; i++) {
		if (i != 2)
			mcg_group_remove(groups[i]);
		mcg_group_put(groups[i]);
	}
	for (int i = 0; i < THREADS; i++)
		free(images[i]);
	pthread_barrier_destroy(&halfway);
}

int main(void)
{
	mcg_options_use_env(0);
	mcg_option_set("writeback_io_depth", 4);
	mcg_wb_set_run_pages(16);
	if (tmpdir_make(dir, sizeof(dir), NULL)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_integrity);
	tmpdir_remove(dir);
	return test_done();
}
