/* SPDX-License-Identifier: MIT */
/*
 * pagecache/io.c - the page cache's calls on backing files, each through
 * the I/O fault point, with the loops over short transfers and EINTR (see
 * io.h).  A local file system's file I/O is not interrupted by signals:
 * the EINTR retries serve others (FUSE, NFS), and no test here can take
 * them (the fault point's EINTR reaches the callers' own retries), so they
 * are left out of coverage (the lines marked "EINTR").
 */
#include "pagecache/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/compiler.h"
#include "base/fault.h"
#include "memcg/debug.h"

#define IOV_CHUNK 1024 /* segments per system call (IOV_MAX) */

/* The injected result for a call that moves no data: an errno or EIO. */
static int fault_plain(unsigned op)
{
	int f = mcg_fault_io(op);
	return f == MCG_FAULT_IO_SHORT_ ? -EIO : f;
}

int mcg_io_open(const char *path, int oflags, mode_t mode)
{
	int f = fault_plain(MCG_FAULT_IO_OPEN);
	if (f)
		return f;
	int fd;
	do
		fd = open(path, oflags | O_CLOEXEC, mode);
	while (fd < 0 && errno == EINTR); /* GCOVR_EXCL_BR_LINE: EINTR */
	return fd < 0 ? -errno : fd;
}

void mcg_io_close(int fd)
{
	if (fd >= 0)
		close(fd);
}

int mcg_io_fstat(int fd, struct stat *st)
{
	int f = fault_plain(MCG_FAULT_IO_STAT);
	if (f)
		return f;
	return fstat(fd, st) ? -errno : 0;
}

/* Try one aligned O_DIRECT read of @path: 0 works, 1 not here, -errno. */
static int probe_read(const char *path)
{
	int f = fault_plain(MCG_FAULT_IO_READ);
	if (f)
		return f;
	int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		return errno == EINVAL ? 1 : -errno;
	void *buf = NULL;
	int ret = 0;
	if (posix_memalign(&buf, MCG_IO_MAX_ALIGN, MCG_IO_MAX_ALIGN)) {
		ret = -ENOMEM;
	} else {
		ssize_t n;
		do
			n = pread(fd, buf, MCG_IO_MAX_ALIGN, 0);
		while (n < 0 && errno == EINTR); /* GCOVR_EXCL_BR_LINE: EINTR */
		if (n < 0)
			ret = errno == EINVAL ? 1 : -errno;
	}
	free(buf);
	close(fd);
	return ret;
}

int mcg_io_direct_align(const char *path, int fd)
{
	int f = fault_plain(MCG_FAULT_IO_STAT);
	if (f)
		return f;
#ifdef STATX_DIOALIGN
	struct statx stx;
	if (!statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) &&
	    (stx.stx_mask & STATX_DIOALIGN)) {
		unsigned a = MCG_MAX(stx.stx_dio_mem_align, stx.stx_dio_offset_align);
		if (!a || a > MCG_IO_MAX_ALIGN || (a & (a - 1)))
			return 0; /* no O_DIRECT here, or more than a page of alignment */
		return (int)a;
	}
#endif
	/* The kernel does not say: try it, a page at a time. */
	int r = probe_read(path);
	return r < 0 ? r : r ? 0 : (int)MCG_IO_MAX_ALIGN;
}

int mcg_io_set_direct(int fd)
{
	int f = fault_plain(MCG_FAULT_IO_STAT);
	if (f)
		return f;
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_DIRECT))
		return -errno;
	return 0;
}

/*
 * The first @cnt segments of @iov, starting @skip bytes in, into @out
 * (room for IOV_CHUNK), cut to @limit bytes.  Return: segments used.
 */
static int iov_window(const struct iovec *iov, int cnt, size_t skip, size_t limit,
                      struct iovec *out, size_t *bytes)
{
	int n = 0;
	*bytes = 0;
	for (int i = 0; i < cnt && n < IOV_CHUNK && *bytes < limit; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		size_t len = MCG_MIN(iov[i].iov_len - skip, limit - *bytes);
		out[n].iov_base = (char *)iov[i].iov_base + skip;
		out[n].iov_len = len;
		*bytes += len;
		skip = 0;
		n++;
	}
	return n;
}

static size_t iov_total(const struct iovec *iov, int cnt)
{
	size_t t = 0;
	for (int i = 0; i < cnt; i++)
		t += iov[i].iov_len;
	return t;
}

/* An injected short transfer of @want bytes: about half, aligned; 0 if none fits. */
static size_t short_of(size_t want, unsigned align)
{
	size_t half = want / 2;
	return half - half % align;
}

ssize_t mcg_io_preadv(int fd, const struct iovec *iov, int cnt, off_t off, unsigned align)
{
	struct iovec w[IOV_CHUNK];
	size_t total = iov_total(iov, cnt), done = 0;
	while (done < total) {
		size_t bytes, limit = total - done;
		int f = mcg_fault_io(MCG_FAULT_IO_READ);
		if (f < 0)
			return f;
		if (f == MCG_FAULT_IO_SHORT_) {
			limit = short_of(limit, align);
			if (!limit)
				return -EIO;
		}
		int n = iov_window(iov, cnt, done, limit, w, &bytes);
		mcg_fault_io_delay(MCG_FAULT_IO_READ, bytes);
		ssize_t r = preadv(fd, w, n, off + (off_t)done);
		if (r < 0) {
			if (errno == EINTR) /* GCOVR_EXCL_BR_LINE: EINTR */
				continue;   /* GCOVR_EXCL_LINE */
			return -errno;
		}
		if (r == 0)
			break; /* end of file */
		done += (size_t)r;
		/* O_DIRECT: a read ending off the alignment ended at the end of
		 * the file, and a read on from there would fail (EINVAL). */
		if (done & (align - 1))
			break;
	}
	return (ssize_t)done;
}

int mcg_io_pwritev(int fd, const struct iovec *iov, int cnt, off_t off, unsigned align,
                   size_t *done)
{
	struct iovec w[IOV_CHUNK];
	size_t total = iov_total(iov, cnt);
	*done = 0;
	while (*done < total) {
		size_t bytes, limit = total - *done;
		int f = mcg_fault_io(MCG_FAULT_IO_WRITE);
		if (f < 0)
			return f;
		if (f == MCG_FAULT_IO_SHORT_) {
			limit = short_of(limit, align);
			if (!limit)
				return -EIO;
		}
		int n = iov_window(iov, cnt, *done, limit, w, &bytes);
		mcg_fault_io_delay(MCG_FAULT_IO_WRITE, bytes);
		ssize_t r = pwritev(fd, w, n, off + (off_t)*done);
		if (r < 0) {
			if (errno == EINTR) /* GCOVR_EXCL_BR_LINE: EINTR */
				continue;   /* GCOVR_EXCL_LINE */
			return -errno;
		}
		if (r == 0)
			return -EIO; /* no progress: the kernel would say ENOSPC next */
		*done += (size_t)r;
	}
	return 0;
}

int mcg_io_fdatasync(int fd)
{
	int f = fault_plain(MCG_FAULT_IO_SYNC);
	if (f)
		return f;
	while (fdatasync(fd))
		if (errno != EINTR) /* GCOVR_EXCL_BR_LINE: EINTR */
			return -errno;
	return 0;
}

int mcg_io_fsync(int fd)
{
	int f = fault_plain(MCG_FAULT_IO_SYNC);
	if (f)
		return f;
	while (fsync(fd))
		if (errno != EINTR) /* GCOVR_EXCL_BR_LINE: EINTR */
			return -errno;
	return 0;
}

int mcg_io_ftruncate(int fd, off_t size)
{
	int f = fault_plain(MCG_FAULT_IO_TRUNCATE);
	if (f)
		return f;
	while (ftruncate(fd, size))
		if (errno != EINTR) /* GCOVR_EXCL_BR_LINE: EINTR */
			return -errno;
	return 0;
}

int mcg_io_extend(int fd, off_t from, off_t size)
{
	int f = fault_plain(MCG_FAULT_IO_TRUNCATE);
	if (f)
		return f;
	struct stat st;
	if (fstat(fd, &st))
		return -errno;
	if (st.st_size >= size)
		return 0;
	off_t at = MCG_MAX(st.st_size, from);
	while (fallocate(fd, 0, at, size - at))
		if (errno != EINTR) /* GCOVR_EXCL_BR_LINE: EINTR */
			return -errno;
	return 0;
}

int mcg_io_start_writeback(int fd, off_t off, off_t len)
{
	int f = fault_plain(MCG_FAULT_IO_SYNC);
	if (f)
		return f;
	while (sync_file_range(fd, off, len, SYNC_FILE_RANGE_WRITE))
		if (errno != EINTR) /* GCOVR_EXCL_BR_LINE: EINTR */
			return -errno;
	return 0;
}
