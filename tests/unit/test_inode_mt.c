/* SPDX-License-Identifier: MIT */
/*
 * test_inode_mt.c - opens and evictions of one cached file from several
 * threads at once (pagecache/inode.c): of the threads that open it
 * together exactly one creates it (the others, having missed it in the
 * table before one of them inserted it, take the winner's and give their
 * own up); a lookup racing the last put never revives a file being
 * evicted; at the end the table is back where it was.
 */
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "pagecache/inode.h"
#include "test.h"
#include "tmpdir.h"

enum { THREADS = 4, ROUNDS = 300, FREE_RUNS = 3000 };

static char dir[4096], path[4200];
static pthread_barrier_t barrier;
static struct mcg_inode *got[THREADS];
static bool owned[THREADS];
static int errors[THREADS];

/* Open the file and look it up; the caller's descriptor closed if not taken. */
static struct mcg_inode *get(int t, bool *own)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	struct mcg_inode *in = NULL;
	if (fd < 0 || mcg_inode_get_fd(fd, path, t & 1, &in, own)) {
		errors[t]++;
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (!*own)
		close(fd);
	return in;
}

static void *worker(void *arg)
{
	int t = (int)(long)arg;
	for (int r = 0; r < ROUNDS; r++) {
		pthread_barrier_wait(&barrier);
		got[t] = get(t, &owned[t]);
		pthread_barrier_wait(&barrier); /* the main thread checks */
		pthread_barrier_wait(&barrier);
		if (got[t])
			mcg_inode_put(got[t]);
	}
	/* Free running: lookups against the last puts. */
	for (int i = 0; i < FREE_RUNS; i++) {
		bool own;
		struct mcg_inode *in = get(t, &own);
		if (in)
			mcg_inode_put(in);
	}
	return NULL;
}

static void test_open_together(void)
{
	long before = mcg_inode_count();
	pthread_t th[THREADS];
	REQUIRE(!pthread_barrier_init(&barrier, NULL, THREADS + 1));
	for (long t = 0; t < THREADS; t++)
		REQUIRE(!pthread_create(&th[t], NULL, worker, (void *)t));
	int bad_rounds = 0;
	for (int r = 0; r < ROUNDS; r++) {
		pthread_barrier_wait(&barrier);
		pthread_barrier_wait(&barrier);
		int creators = 0, same = 0;
		for (int t = 0; t < THREADS; t++) {
			creators += got[t] && owned[t];
			same += got[t] && got[t] == got[0];
		}
		bad_rounds += creators != 1 || same != THREADS;
		CHECK_EQ(mcg_inode_count(), before + 1);
		pthread_barrier_wait(&barrier);
	}
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&barrier);
	CHECK_EQ(bad_rounds, 0);
	for (int t = 0; t < THREADS; t++)
		CHECK_EQ(errors[t], 0);
	CHECK_EQ(mcg_inode_count(), before);
}

int main(void)
{
	if (tmpdir_make(dir, sizeof(dir), NULL))
		return test_skip("cannot make a temporary directory");
	tmpdir_path(path, sizeof(path), dir, "shared");
	RUN(test_open_together);
	unlink(path);
	tmpdir_remove(dir);
	return test_done();
}
