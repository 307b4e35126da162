/* SPDX-License-Identifier: MIT */
/*
 * test_file_read_mt.c - the lockless cached-read path (pagecache/rcu.h:
 * no lock, no page reference) against everything that takes pages away
 * while it copies: readers copy random ranges of a file while one thread
 * truncates it and writes it back, one drops the cache, the group's small
 * memory.max keeps reclaim running, and the file's group is removed
 * halfway (its pages reparented).  Every byte a reader gets is the
 * file's pattern or zero (a range truncated and not yet written back);
 * under ASan a page freed under a reader is a use-after-free, under TSan a
 * race.  At rest: nothing waits for a grace period, every counter is 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>

#include "group_file.h"
#include "memcg/file.h"
#include "memcg/memcg.h"
#include "pagecache/rcu.h"
#include "stress.h"
#include "test.h"
#include "tmpdir.h"

#define READERS 3
#define FILE_SIZE (2u << 20)
#define MAX_READ (24u << 10)

static char dir[PATH_MAX];
static mcg_file_t *file;
static int stop;
static long bad_bytes, reads_done, read_errors, truncs, drops;

static unsigned char pattern(size_t off) { return (unsigned char)(off * 131u / 7u + 1u); }

static void *reader_main(void *arg)
{
	unsigned seed = 0x1234567u * (unsigned)((long)arg + 1);
	unsigned char *buf = malloc(MAX_READ);
	long bad = 0, n_ok = 0, errs = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		bool page = stress_rnd(&seed) % 2;
		size_t len = page ? 4096 : 1 + stress_rnd(&seed) % MAX_READ;
		size_t at = page ? (stress_rnd(&seed) % (FILE_SIZE / 4096)) * 4096
		                 : stress_rnd(&seed) % FILE_SIZE;
		ssize_t n = mcg_file_pread(file, buf, len, (off_t)at);
		if (n < 0) {
			errs++;
			continue;
		}
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pattern(at + (size_t)i) && buf[i] != 0)
				bad++;
		n_ok++;
	}
	free(buf);
	__atomic_add_fetch(&bad_bytes, bad, __ATOMIC_RELAXED);
	__atomic_add_fetch(&reads_done, n_ok, __ATOMIC_RELAXED);
	__atomic_add_fetch(&read_errors, errs, __ATOMIC_RELAXED);
	return NULL;
}

static unsigned char *image;

/* Write the pattern over [@lo, @hi). */
static int fill(size_t lo, size_t hi)
{
	while (lo < hi) {
		size_t len = hi - lo < (256u << 10) ? hi - lo : (256u << 10);
		ssize_t n = mcg_file_pwrite(file, image + lo, len, (off_t)lo);
		if (n <= 0)
			return -1;
		lo += (size_t)n;
	}
	return 0;
}

static void *truncator_main(void *arg)
{
	unsigned seed = 0xabcdefu;
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		size_t cut = stress_rnd(&seed) % FILE_SIZE;
		if (mcg_file_truncate(file, (off_t)cut) || fill(cut, FILE_SIZE))
			__atomic_add_fetch(&read_errors, 1, __ATOMIC_RELAXED);
		truncs++;
	}
	return NULL;
}

static void *dropper_main(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		mcg_file_drop_caches();
		drops++;
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void test_read_races(void)
{
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "readers", &g));
	REQUIRE(!mcg_group_write(g, "memory.max", "1M")); /* half the file: reclaim runs */
	image = malloc(FILE_SIZE);
	REQUIRE(image);
	for (size_t i = 0; i < FILE_SIZE; i++)
		image[i] = pattern(i);
	char path[PATH_MAX];
	mcg_file_opts_t o = {g, 0};
	REQUIRE(!mcg_file_open(tmpdir_path(path, sizeof(path), dir, "f"),
	                       O_RDWR | O_CREAT | O_TRUNC, 0644, &o, &file));
	REQUIRE(!fill(0, FILE_SIZE));
	pthread_t r[READERS], t, d;
	for (long i = 0; i < READERS; i++)
		REQUIRE(!pthread_create(&r[i], NULL, reader_main, (void *)i));
	REQUIRE(!pthread_create(&t, NULL, truncator_main, NULL));
	REQUIRE(!pthread_create(&d, NULL, dropper_main, NULL));
	double secs = stress_seconds(2.0);
	struct timespec half = {(time_t)(secs / 2), (long)((secs / 2 - (long)(secs / 2)) * 1e9)};
	nanosleep(&half, NULL);
	CHECK_EQ(mcg_group_remove(g), 0); /* while they read: its pages go to the root */
	nanosleep(&half, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < READERS; i++)
		pthread_join(r[i], NULL);
	pthread_join(t, NULL);
	pthread_join(d, NULL);
	CHECK_EQ(bad_bytes, 0);
	CHECK_EQ(read_errors, 0);
	CHECK(reads_done > 100);
	CHECK(truncs > 0);
	CHECK(drops > 0);
	/* The file is whole again (the last fill ran after the last cut). */
	unsigned char *buf = malloc(FILE_SIZE);
	REQUIRE(buf);
	CHECK_EQ(mcg_file_pread(file, buf, FILE_SIZE, 0), (ssize_t)FILE_SIZE);
	CHECK(!memcmp(buf, image, FILE_SIZE));
	free(buf);
	CHECK_EQ(mcg_file_fsync(file), 0);
	CHECK_EQ(mcg_file_close(file), 0);
	/* At rest: nothing waits for readers, nothing charged. */
	mcg_file_drop_caches();
	mcg_group_drain_stocks();
	CHECK_EQ(mcg_rcu_pending(), 0);
	CHECK_EQ(read_key(mcg_group_root(), "memory.stat", "file"), 0);
	CHECK_EQ(read_key(g, "memory.stat", "file"), 0);
	CHECK_EQ(read_long(g, "memory.current"), 0);
	mcg_group_put(g);
	free(image);
}

int main(void)
{
	mcg_options_use_env(0);
	if (tmpdir_make(dir, sizeof(dir), NULL)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_read_races);
	tmpdir_remove(dir);
	return test_done();
}
