/* SPDX-License-Identifier: MIT */
/*
 * test_io.c - the page cache's calls on backing files (pagecache/io.c):
 * each goes through the I/O fault point first (an injected errno comes back
 * as it is; an injected short transfer moves about half, aligned, and fails
 * with EIO when nothing aligned fits; the calls that move no data fail with
 * EIO for it), a system call's failure comes back as -errno, and transfers
 * loop until every byte moved (a read stops at the end of the file), over
 * more segments than one system call takes.  Also the fault point's own
 * argument checks and counters (base/fault.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memcg/debug.h"
#include "pagecache/io.h"
#include "test.h"
#include "tmpdir.h"
#include "held.h"

static char dir[4096];

static const char *path_of(const char *name)
{
	static char buf[2][4200];
	static int k;
	k ^= 1;
	return tmpdir_path(buf[k], sizeof(buf[k]), dir, name);
}

static int open_new(const char *name)
{
	return mcg_io_open(path_of(name), O_RDWR | O_CREAT | O_TRUNC, 0644);
}

static void test_open_stat_close(void)
{
	CHECK_EQ(mcg_io_open(path_of("absent"), O_RDONLY, 0), -ENOENT);
	int fd = open_new("a");
	REQUIRE(fd >= 0);
	CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	struct stat st;
	CHECK_EQ(mcg_io_fstat(fd, &st), 0);
	CHECK_EQ(st.st_size, 0);
	CHECK(S_ISREG(st.st_mode));
	CHECK_EQ(mcg_io_fstat(-1, &st), -EBADF);

	/* An injected failure: nothing opened, nothing created. */
	REQUIRE(!mcg_fault_inject_io(1, 0, ENOSPC, MCG_FAULT_IO_OPEN));
	CHECK_EQ(open_new("b"), -ENOSPC);
	CHECK_EQ(access(path_of("b"), F_OK), -1);
	CHECK_EQ(mcg_fault_io_count(), 1);
	CHECK_EQ(mcg_fault_io_failed(), 1);
	/* A "short" fstat fails with EIO; the next one goes through. */
	REQUIRE(!mcg_fault_inject_io(1, 0, 0, MCG_FAULT_IO_STAT));
	CHECK_EQ(mcg_io_fstat(fd, &st), -EIO);
	CHECK_EQ(mcg_io_fstat(fd, &st), 0);
	CHECK_EQ(mcg_fault_io_count(), 2);
	CHECK_EQ(mcg_fault_io_failed(), 1);
	/* Only the armed kinds count. */
	REQUIRE(!mcg_fault_inject_io(1, 0, EIO, MCG_FAULT_IO_SYNC));
	CHECK_EQ(mcg_io_fstat(fd, &st), 0);
	CHECK_EQ(mcg_fault_io_count(), 0);
	REQUIRE(!mcg_fault_inject_io(0, 0, 0, 0));

	mcg_io_close(-1); /* nothing */
	mcg_io_close(fd);
	CHECK_EQ(fcntl(fd, F_GETFD), -1);
	CHECK_EQ(errno, EBADF);
}

static void test_sync_truncate(void)
{
	int fd = open_new("sync");
	REQUIRE(fd >= 0);
	CHECK_EQ(mcg_io_ftruncate(fd, 100), 0);
	struct stat st;
	CHECK(!fstat(fd, &st) && st.st_size == 100);
	CHECK_EQ(mcg_io_fdatasync(fd), 0);
	CHECK_EQ(mcg_io_fsync(fd), 0);
	CHECK_EQ(mcg_io_start_writeback(fd, 0, 100), 0);
	CHECK_EQ(mcg_io_ftruncate(-1, 0), -EBADF);
	CHECK_EQ(mcg_io_fdatasync(-1), -EBADF);
	CHECK_EQ(mcg_io_fsync(-1), -EBADF);
	CHECK_EQ(mcg_io_start_writeback(-1, 0, 0), -EBADF);
	CHECK_EQ(mcg_io_start_writeback(fd, -1, 0), -EINVAL);

	/* Each fails with the injected errno, and changes nothing. */
	REQUIRE(!mcg_fault_inject_io(1, 1, EROFS, MCG_FAULT_IO_SYNC | MCG_FAULT_IO_TRUNCATE));
	CHECK_EQ(mcg_io_ftruncate(fd, 7), -EROFS);
	CHECK(!fstat(fd, &st) && st.st_size == 100);
	CHECK_EQ(mcg_io_fdatasync(fd), -EROFS);
	CHECK_EQ(mcg_io_fsync(fd), -EROFS);
	CHECK_EQ(mcg_io_start_writeback(fd, 0, 100), -EROFS);
	CHECK_EQ(mcg_fault_io_count(), 4);
	CHECK_EQ(mcg_fault_io_failed(), 4);
	REQUIRE(!mcg_fault_inject_io(0, 0, 0, 0));
	mcg_io_close(fd);
}

/* The file's bytes [0, len) equal @want. */
static int file_is(int fd, const char *want, size_t len)
{
	static char buf[1 << 16];
	struct stat st;
	if (fstat(fd, &st) || (size_t)st.st_size != len || len > sizeof(buf))
		return 0;
	return pread(fd, buf, len, 0) == (ssize_t)len && !memcmp(buf, want, len);
}

static void test_pwritev_preadv(void)
{
	enum { A = 100, B = 5000, OFF = 10, TOTAL = OFF + A + B };
	static char a[A], b[B], want[TOTAL];
	for (int i = 0; i < A; i++)
		a[i] = (char)('a' + i % 26);
	for (int i = 0; i < B; i++)
		b[i] = (char)('A' + i % 26);
	memcpy(want + OFF, a, A);
	memcpy(want + OFF + A, b, B);
	struct iovec iov[3] = {{a, A}, {b, 0}, {b, B}};
	int fd = open_new("rw");
	REQUIRE(fd >= 0);
	size_t done = 1;
	CHECK_EQ(mcg_io_pwritev(fd, iov, 3, OFF, 1, &done), 0);
	CHECK_EQ(done, A + B);
	CHECK(file_is(fd, want, TOTAL));

	/* Read back across the segments; past the end: what there is. */
	static char r1[64], r2[8000];
	struct iovec rio[2] = {{r1, sizeof(r1)}, {r2, sizeof(r2)}};
	CHECK_EQ(mcg_io_preadv(fd, rio, 2, 0, 1), TOTAL);
	CHECK(!memcmp(r1, want, sizeof(r1)) && !memcmp(r2, want + sizeof(r1), TOTAL - sizeof(r1)));
	CHECK_EQ(mcg_io_preadv(fd, rio, 2, TOTAL, 1), 0);
	CHECK_EQ(mcg_io_preadv(fd, rio, 0, 0, 1), 0);

	/* One short transfer: about half, then the rest in a second call. */
	memset(r1, 0, sizeof(r1));
	memset(r2, 0, sizeof(r2));
	REQUIRE(!mcg_fault_inject_io(1, 0, 0, MCG_FAULT_IO_READ));
	CHECK_EQ(mcg_io_preadv(fd, rio, 2, 0, 1), TOTAL);
	CHECK(!memcmp(r1, want, sizeof(r1)) && !memcmp(r2, want + sizeof(r1), TOTAL - sizeof(r1)));
	CHECK_EQ(mcg_fault_io_count(), 3); /* half, the rest, the end of file */
	CHECK_EQ(mcg_fault_io_failed(), 1);
	REQUIRE(!mcg_fault_inject_io(1, 0, 0, MCG_FAULT_IO_WRITE));
	done = 0;
	CHECK_EQ(mcg_io_pwritev(fd, iov, 3, OFF, 1, &done), 0);
	CHECK_EQ(done, A + B);
	CHECK_EQ(mcg_fault_io_count(), 2);
	CHECK(file_is(fd, want, TOTAL));

	/* Short every time: halves until a byte is left, which has no half. */
	REQUIRE(!mcg_fault_inject_io(1, 1, 0, MCG_FAULT_IO_WRITE));
	CHECK_EQ(mcg_io_pwritev(fd, iov, 3, OFF, 1, &done), -EIO);
	CHECK_EQ(done, A + B - 1);
	struct iovec exact[2] = {{r1, sizeof(r1)}, {r2, TOTAL - sizeof(r1)}};
	REQUIRE(!mcg_fault_inject_io(1, 1, 0, MCG_FAULT_IO_READ));
	CHECK_EQ(mcg_io_preadv(fd, exact, 2, 0, 1), -EIO);
	/* Aligned: half of 5100 bytes holds no 4096-byte block. */
	REQUIRE(!mcg_fault_inject_io(1, 0, 0, MCG_FAULT_IO_WRITE));
	CHECK_EQ(mcg_io_pwritev(fd, iov, 3, OFF, 4096, &done), -EIO);
	CHECK_EQ(done, 0);
	REQUIRE(!mcg_fault_inject_io(1, 0, 0, MCG_FAULT_IO_READ));
	CHECK_EQ(mcg_io_preadv(fd, rio, 2, 0, 4096), -EIO);
	/* Injected errors, and the system's. */
	REQUIRE(!mcg_fault_inject_io(1, 0, ENOSPC, MCG_FAULT_IO_WRITE | MCG_FAULT_IO_READ));
	done = 9;
	CHECK_EQ(mcg_io_pwritev(fd, iov, 3, OFF, 1, &done), -ENOSPC);
	CHECK_EQ(done, 0);
	REQUIRE(!mcg_fault_inject_io(1, 0, EIO, MCG_FAULT_IO_WRITE | MCG_FAULT_IO_READ));
	CHECK_EQ(mcg_io_preadv(fd, rio, 2, 0, 1), -EIO);
	REQUIRE(!mcg_fault_inject_io(0, 0, 0, 0));
	CHECK(file_is(fd, want, TOTAL));
	CHECK_EQ(mcg_io_pwritev(-1, iov, 3, 0, 1, &done), -EBADF);
	CHECK_EQ(done, 0);
	CHECK_EQ(mcg_io_preadv(-1, rio, 2, 0, 1), -EBADF);
	mcg_io_close(fd);
}

/* More segments than one system call takes (IOV_MAX, 1024): two calls. */
static void test_many_segments(void)
{
	enum { SEGS = 1500, LEN = 3 };
	static char src[SEGS * LEN], back[SEGS * LEN];
	static struct iovec iov[SEGS];
	for (int i = 0; i < SEGS * LEN; i++)
		src[i] = (char)(i * 7);
	for (int i = 0; i < SEGS; i++)
		iov[i] = (struct iovec){src + i * LEN, LEN};
	int fd = open_new("segs");
	REQUIRE(fd >= 0);
	REQUIRE(!mcg_fault_inject_io(1000, 0, 0, MCG_FAULT_IO_WRITE)); /* counting only */
	size_t done = 0;
	CHECK_EQ(mcg_io_pwritev(fd, iov, SEGS, 0, 1, &done), 0);
	CHECK_EQ(done, SEGS * LEN);
	CHECK_EQ(mcg_fault_io_count(), 2);
	CHECK(file_is(fd, src, sizeof(src)));
	for (int i = 0; i < SEGS; i++)
		iov[i] = (struct iovec){back + i * LEN, LEN};
	REQUIRE(!mcg_fault_inject_io(1000, 0, 0, MCG_FAULT_IO_READ));
	CHECK_EQ(mcg_io_preadv(fd, iov, SEGS, 0, 1), SEGS * LEN);
	CHECK_EQ(mcg_fault_io_count(), 2);
	CHECK(!memcmp(back, src, sizeof(src)));
	REQUIRE(!mcg_fault_inject_io(0, 0, 0, 0));
	mcg_io_close(fd);
}

static void test_direct(void)
{
	int fd = open_new("direct");
	REQUIRE(fd >= 0);
	CHECK_EQ(mcg_io_set_direct(-1), -EBADF);
	REQUIRE(!mcg_fault_inject_io(1, 0, EPERM, MCG_FAULT_IO_STAT));
	CHECK_EQ(mcg_io_set_direct(fd), -EPERM);
	CHECK(!(fcntl(fd, F_GETFL) & O_DIRECT));
	REQUIRE(!mcg_fault_inject_io(1, 0, EPERM, MCG_FAULT_IO_STAT));
	CHECK_EQ(mcg_io_direct_align(path_of("direct"), fd), -EPERM);
	REQUIRE(!mcg_fault_inject_io(0, 0, 0, 0));
	int a = mcg_io_direct_align(path_of("direct"), fd);
	CHECK(a >= 0 && a <= (int)MCG_IO_MAX_ALIGN && !(a & (a - 1)));
	if (a > 0) {
		CHECK_EQ(mcg_io_set_direct(fd), 0);
		CHECK(fcntl(fd, F_GETFL) & O_DIRECT);
	}
	mcg_io_close(fd);
}

/* Grows the file at @arg's path to two pages 3 s from now. */
static void *grow_later(void *arg)
{
	usleep(3000000);
	int fd = open((const char *)arg, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		CHECK_EQ(ftruncate(fd, 2 * 4096), 0);
		close(fd);
	}
	return NULL;
}

/*
 * An O_DIRECT read that ends off the alignment ended at the end of the
 * file: the read returns what it got, and does not read on at that
 * unaligned offset into an unaligned buffer - which fails (EINVAL) once
 * the file has grown meanwhile (writeback extending it).  The emulated
 * device makes each read wait its bytes' time: 2 s for the first page,
 * about 2 s before a second read, during which the file grows.
 */
static void test_direct_short_file(void)
{
	int fd = open_new("direct-short");
	REQUIRE(fd >= 0);
	char src[51];
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (char)('a' + i % 26);
	REQUIRE(write(fd, src, sizeof(src)) == (ssize_t)sizeof(src));
	int a = mcg_io_direct_align(path_of("direct-short"), fd);
	if (a <= 1 || mcg_io_set_direct(fd)) {
		mcg_io_close(fd);
		SKIP("no O_DIRECT in the test directory");
	}
	char *buf = aligned_alloc(4096, 4096);
	REQUIRE(buf);
	memset(buf, 0x7f, 4096);
	struct iovec one = {buf, 4096};
	REQUIRE(!mcg_fault_io_rate(MCG_FAULT_IO_READ, 2048));
	pthread_t t;
	REQUIRE(!pthread_create(&t, NULL, grow_later, (void *)path_of("direct-short")));
	CHECK_EQ(mcg_io_preadv(fd, &one, 1, 0, (unsigned)a), (ssize_t)sizeof(src));
	pthread_join(t, NULL);
	REQUIRE(!mcg_fault_io_rate(0, 0));
	CHECK(!memcmp(buf, src, sizeof(src)));
	free(buf);
	mcg_io_close(fd);
}

/*
 * Where the kernel does not report STATX_DIOALIGN (tmpfs), the alignment
 * comes from a probe: an O_DIRECT open and an aligned read of a page.
 */
static void test_direct_probe(void)
{
	char shm[4096];
	if (tmpdir_make(shm, sizeof(shm), "/dev/shm"))
		SKIP("no /dev/shm to make a directory in");
	char path[4200];
	tmpdir_path(path, sizeof(path), shm, "probe");
	int fd = mcg_io_open(path, O_RDWR | O_CREAT, 0644);
	REQUIRE(fd >= 0);
	bool reported = false;
#ifdef STATX_DIOALIGN
	struct statx stx;
	reported = !statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) &&
	           (stx.stx_mask & STATX_DIOALIGN);
#endif
	if (reported) {
		mcg_io_close(fd);
		tmpdir_remove(shm);
		SKIP("the kernel reports STATX_DIOALIGN for tmpfs: no probe");
	}
	/* The answer the probe must find: does an aligned O_DIRECT read work? */
	int want = 0;
	int dfd = open(path, O_RDONLY | O_DIRECT);
	if (dfd >= 0) {
		void *buf = NULL;
		REQUIRE(!posix_memalign(&buf, MCG_IO_MAX_ALIGN, MCG_IO_MAX_ALIGN));
		ssize_t n = pread(dfd, buf, MCG_IO_MAX_ALIGN, 0);
		want = n >= 0 ? (int)MCG_IO_MAX_ALIGN : 0;
		free(buf);
		close(dfd);
	}
	CHECK_EQ(mcg_io_direct_align(path, fd), want);
	/* The probe's read is a READ fault point; its open's failure is returned. */
	REQUIRE(!mcg_fault_inject_io(1, 0, EIO, MCG_FAULT_IO_READ));
	CHECK_EQ(mcg_io_direct_align(path, fd), -EIO);
	REQUIRE(!mcg_fault_inject_io(0, 0, 0, 0));
	char gone[4200];
	tmpdir_path(gone, sizeof(gone), shm, "gone");
	CHECK_EQ(mcg_io_direct_align(gone, fd), -ENOENT);
	mcg_io_close(fd);
	tmpdir_remove(shm);
}

/* The O_DIRECT probe closes what it opened, whatever it finds. */
static void test_direct_probe_closes(void)
{
	char shm[4096];
	if (tmpdir_make(shm, sizeof(shm), "/dev/shm"))
		SKIP("no /dev/shm to make a directory in");
	char path[4200];
	tmpdir_path(path, sizeof(path), shm, "probe");
	int fd = mcg_io_open(path, O_RDWR | O_CREAT, 0644);
	REQUIRE(fd >= 0);
	bool reported = false;
#ifdef STATX_DIOALIGN
	struct statx stx;
	reported = !statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) &&
	           (stx.stx_mask & STATX_DIOALIGN);
#endif
	if (reported) {
		mcg_io_close(fd);
		tmpdir_remove(shm);
		SKIP("the kernel reports STATX_DIOALIGN for tmpfs: no probe");
	}
	int before = held_fds();
	REQUIRE(before > 0);
	for (int i = 0; i < 8; i++)
		CHECK(mcg_io_direct_align(path, fd) >= 0);
	CHECK_EQ(held_fds(), before);
	mcg_io_close(fd);
	tmpdir_remove(shm);
}

/* The fault point's arguments: bad ones change nothing. */
/* mcg_io_extend()'s failures: no descriptor (its fstat), and a descriptor
 * that may not write (its fallocate); the file keeps its size. */
static void test_extend_failures(void)
{
	CHECK_EQ(mcg_io_extend(-1, 0, 4096), -EBADF);
	int fd = open_new("extend");
	REQUIRE(fd >= 0);
	CHECK_EQ(mcg_io_ftruncate(fd, 100), 0);
	CHECK_EQ(mcg_io_extend(fd, 0, 50), 0); /* already longer: nothing */
	int ro = mcg_io_open(path_of("extend"), O_RDONLY, 0);
	REQUIRE(ro >= 0);
	CHECK_EQ(mcg_io_extend(ro, 0, 8192), -EBADF);
	struct stat st;
	CHECK(!fstat(fd, &st) && st.st_size == 100);
	CHECK_EQ(mcg_io_extend(fd, 0, 8192), 0);
	CHECK(!fstat(fd, &st) && st.st_size == 8192);
	mcg_io_close(ro);
	mcg_io_close(fd);
}

static void test_fault_arguments(void)
{
	REQUIRE(!mcg_fault_inject_io(2, 0, EIO, MCG_FAULT_IO_SYNC));
	CHECK_EQ(mcg_fault_inject_io(1, 0, -1, 0), -EINVAL);
	CHECK_EQ(mcg_fault_inject_io(1, 0, 4096, 0), -EINVAL);
	CHECK_EQ(mcg_fault_inject_io(1, 1, EINTR, 0), -EINVAL);
	CHECK_EQ(mcg_fault_inject_io(1, 0, EIO, MCG_FAULT_IO_ALL + 1), -EINVAL);
	int fd = open_new("args");
	REQUIRE(fd >= 0);
	CHECK_EQ(mcg_io_fsync(fd), 0); /* still armed for the second */
	CHECK_EQ(mcg_io_fsync(fd), -EIO);
	CHECK_EQ(mcg_fault_io_count(), 2);
	REQUIRE(!mcg_fault_inject_io(0, 0, 0, 0));
	CHECK_EQ(mcg_fault_io_rate(MCG_FAULT_IO_SYNC, 1), -EINVAL);
	CHECK_EQ(mcg_fault_io_rate(MCG_FAULT_IO_READ | MCG_FAULT_IO_OPEN, 1), -EINVAL);
	mcg_io_close(fd);
}

int main(void)
{
	if (tmpdir_make(dir, sizeof(dir), NULL))
		return test_skip("cannot make a temporary directory");
	RUN(test_open_stat_close);
	RUN(test_sync_truncate);
	RUN(test_pwritev_preadv);
	RUN(test_many_segments);
	RUN(test_direct);
	RUN(test_direct_short_file);
	RUN(test_direct_probe);
	RUN(test_direct_probe_closes);
	RUN(test_fault_arguments);
	RUN(test_extend_failures);
	tmpdir_remove(dir);
	return test_done();
}
