/* SPDX-License-Identifier: MIT */
/*
 * test_file_torn_mt.c - a cached read's copy never overlaps a change of the
 * page's data: the hit path copies with no data lock (a read section keyed
 * by file and index, page.h: mcg_fpage_data_change_lock()), writers and
 * truncate wait for the sections keyed to the page they change.
 *
 * Writers rewrite whole pages, each with one byte value; readers read whole
 * pages (the hit path) and runs of pages, and every page they get must be
 * one value throughout.  The last page is cut to half and written whole
 * again, over and over (truncate zeroes its tail under the change lock):
 * its first half is one value, its second half that value or zeros.  A
 * torn copy shows as two values in one page; under TSan it is a race.
 * At rest: nothing waits for a grace period, nothing charged.
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

#define READERS 2
#define WRITERS 2
#define PAGES 64u
#define PG 4096u
#define FILE_SIZE (PAGES * PG)
#define MAX_RUN 4u

static char dir[PATH_MAX];
static mcg_file_t *file;
static int stop;
static long torn, reads_done, pages_checked, writes_done, cuts, errors;

/* Whether @p (one page of the file, @last: the file's last) is whole. */
static bool page_ok(const unsigned char *p, bool last)
{
	size_t half = last ? PG / 2 : PG;
	for (size_t i = 1; i < half; i++)
		if (p[i] != p[0])
			return false;
	if (!last)
		return true;
	for (size_t i = half + 1; i < PG; i++)
		if (p[i] != p[half])
			return false;
	return p[half] == p[0] || p[half] == 0;
}

static void *reader_main(void *arg)
{
	unsigned seed = 0x9e3779b9u * (unsigned)((long)arg + 1);
	unsigned char *buf = malloc(MAX_RUN * PG);
	long bad = 0, n_ok = 0, checked = 0, errs = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		unsigned first = stress_rnd(&seed) % PAGES;
		unsigned run = stress_rnd(&seed) % 2 ? 1 : 1 + stress_rnd(&seed) % MAX_RUN;
		ssize_t n = mcg_file_pread(file, buf, (size_t)run * PG, (off_t)first * PG);
		if (n < 0) {
			errs++;
			continue;
		}
		/* Whole pages only: a read that ends at a cut size is short. */
		for (size_t k = 0; (k + 1) * PG <= (size_t)n; k++, checked++)
			bad += !page_ok(buf + k * PG, first + k == PAGES - 1);
		n_ok++;
	}
	free(buf);
	__atomic_add_fetch(&torn, bad, __ATOMIC_RELAXED);
	__atomic_add_fetch(&reads_done, n_ok, __ATOMIC_RELAXED);
	__atomic_add_fetch(&pages_checked, checked, __ATOMIC_RELAXED);
	__atomic_add_fetch(&errors, errs, __ATOMIC_RELAXED);
	return NULL;
}

static void *writer_main(void *arg)
{
	unsigned seed = 0x7f4a7c15u * (unsigned)((long)arg + 1);
	unsigned char *buf = malloc(PG);
	long n_ok = 0, errs = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		unsigned page = stress_rnd(&seed) % (PAGES - 1); /* (the last is the cutter's) */
		memset(buf, 1 + (int)(stress_rnd(&seed) % 255u), PG);
		if (mcg_file_pwrite(file, buf, PG, (off_t)page * PG) != (ssize_t)PG)
			errs++;
		n_ok++;
	}
	free(buf);
	__atomic_add_fetch(&writes_done, n_ok, __ATOMIC_RELAXED);
	__atomic_add_fetch(&errors, errs, __ATOMIC_RELAXED);
	return NULL;
}

/* Cut the last page to half (its tail zeroed in place) and write it whole. */
static void *cutter_main(void *arg)
{
	unsigned char buf[PG];
	unsigned v = 1;
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		v = v % 255u + 1u;
		memset(buf, (int)v, PG);
		if (mcg_file_truncate(file, (off_t)(FILE_SIZE - PG / 2)) ||
		    mcg_file_pwrite(file, buf, PG, (off_t)(FILE_SIZE - PG)) != (ssize_t)PG)
			__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
		cuts++;
	}
	return NULL;
}

static void test_no_torn_pages(void)
{
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "torn", &g));
	char path[PATH_MAX];
	mcg_file_opts_t o = {g, 0};
	REQUIRE(!mcg_file_open(tmpdir_path(path, sizeof(path), dir, "f"),
	                       O_RDWR | O_CREAT | O_TRUNC, 0644, &o, &file));
	unsigned char *init = malloc(FILE_SIZE);
	REQUIRE(init);
	for (unsigned p = 0; p < PAGES; p++)
		memset(init + (size_t)p * PG, (int)(p % 255u) + 1, PG);
	REQUIRE(mcg_file_pwrite(file, init, FILE_SIZE, 0) == (ssize_t)FILE_SIZE);
	free(init);
	pthread_t r[READERS], w[WRITERS], c;
	for (long i = 0; i < READERS; i++)
		REQUIRE(!pthread_create(&r[i], NULL, reader_main, (void *)i));
	for (long i = 0; i < WRITERS; i++)
		REQUIRE(!pthread_create(&w[i], NULL, writer_main, (void *)i));
	REQUIRE(!pthread_create(&c, NULL, cutter_main, NULL));
	double secs = stress_seconds(2.0);
	struct timespec ts = {(time_t)secs, (long)((secs - (long)secs) * 1e9)};
	nanosleep(&ts, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < READERS; i++)
		pthread_join(r[i], NULL);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(w[i], NULL);
	pthread_join(c, NULL);
	CHECK_EQ(torn, 0);
	CHECK_EQ(errors, 0);
	CHECK(reads_done > 100);
	CHECK(pages_checked > 100);
	CHECK(writes_done > 100);
	CHECK(cuts > 0);
	/* Every page whole at rest too, the last one written whole last. */
	unsigned char *buf = malloc(FILE_SIZE);
	REQUIRE(buf);
	CHECK_EQ(mcg_file_pread(file, buf, FILE_SIZE, 0), (ssize_t)FILE_SIZE);
	for (unsigned p = 0; p < PAGES; p++)
		CHECK(page_ok(buf + (size_t)p * PG, false));
	free(buf);
	CHECK_EQ(mcg_file_fsync(file), 0);
	CHECK_EQ(mcg_file_close(file), 0);
	mcg_file_drop_caches();
	mcg_group_drain_stocks();
	CHECK_EQ(mcg_rcu_pending(), 0);
	CHECK_EQ(read_key(g, "memory.stat", "file"), 0);
	CHECK_EQ(read_long(g, "memory.current"), 0);
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
	RUN(test_no_torn_pages);
	tmpdir_remove(dir);
	return test_done();
}
