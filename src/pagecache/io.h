/* SPDX-License-Identifier: MIT */
/*
 * pagecache/io.h - every call the page cache makes on a backing file.
 *
 * Each passes the I/O fault point first (base/fault.h: mcg_fault_io()), so
 * a test can fail or shorten any of them.  Reads and writes loop over short
 * transfers and EINTR until done, end of file (reads) or a real error.
 *
 * Backing files are read and written with O_DIRECT where the file system
 * allows it (statx STATX_DIOALIGN says so and how to align; where statx
 * does not say, an aligned O_DIRECT read is tried), so file data is not
 * cached twice: once here and once in the kernel.  Elsewhere (or with the
 * option file_direct_io 0, or MCG_FILE_NO_DIRECT) they are buffered, and
 * writeback starts the kernel's own with sync_file_range; fsync ends with
 * fdatasync either way (O_DIRECT is not durable by itself).  Page data
 * (4 KiB, 4 KiB aligned) and page offsets satisfy every alignment up to
 * 4096 bytes; a file system asking for more is used buffered.
 *
 * Locks: none.
 */
#ifndef MCG_PAGECACHE_IO_H
#define MCG_PAGECACHE_IO_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

/** The largest O_DIRECT alignment the page cache can meet (a page). */
#define MCG_IO_MAX_ALIGN 4096u

/** mcg_io_open - open(2) @path, close-on-exec.  Return: the fd, or -errno. */
int mcg_io_open(const char *path, int oflags, mode_t mode);

/** mcg_io_close - close @fd (not a fault point: a close loses nothing). */
void mcg_io_close(int fd);

/** mcg_io_fstat - fstat(2).  Return: 0 or -errno. */
int mcg_io_fstat(int fd, struct stat *st);

/**
 * mcg_io_direct_align - whether @path (open as @fd) can be used with
 * O_DIRECT, and the alignment to use: from statx STATX_DIOALIGN where the
 * kernel reports it, else by opening it O_DIRECT and reading one aligned page.
 * Return: the alignment (1..MCG_IO_MAX_ALIGN, a power of two), 0 (no
 * O_DIRECT here), or -errno (the probe's own I/O failed).
 */
int mcg_io_direct_align(const char *path, int fd);

/**
 * mcg_io_set_direct - turn O_DIRECT on for @fd (fcntl F_SETFL, a STAT-kind
 * fault point).  Return: 0 or -errno (EINVAL: not here).
 */
int mcg_io_set_direct(int fd);

/**
 * mcg_io_preadv - read @iov (@cnt segments) at @off, looping over short
 * reads and EINTR.  @align: the fd's O_DIRECT alignment (1: buffered).
 * Return: bytes read (fewer only at end of file), or -errno.
 */
ssize_t mcg_io_preadv(int fd, const struct iovec *iov, int cnt, off_t off, unsigned align);

/**
 * mcg_io_pwritev - write @iov (@cnt segments) at @off, looping over short
 * writes and EINTR.  *@done gets the bytes written, all of them or those
 * before the error.  Return: 0 or -errno (a write that makes no progress
 * is -EIO).
 */
int mcg_io_pwritev(int fd, const struct iovec *iov, int cnt, off_t off, unsigned align,
                   size_t *done);

/** mcg_io_fdatasync - fdatasync(2), retried on EINTR.  Return: 0 or -errno. */
int mcg_io_fdatasync(int fd);

/** mcg_io_fsync - fsync(2), retried on EINTR.  Return: 0 or -errno. */
int mcg_io_fsync(int fd);

/** mcg_io_ftruncate - ftruncate(2), retried on EINTR.  Return: 0 or -errno. */
int mcg_io_ftruncate(int fd, off_t size);

/**
 * mcg_io_extend - make the backing file at least @size bytes long, the
 * blocks from @from (or its end, if further) to @size allocated
 * (fallocate(2); a TRUNCATE-kind fault point); what lies between its end
 * and @from stays a hole.  So that O_DIRECT writes below @size overwrite allocated
 * (unwritten) blocks inside the file: file systems run those concurrently
 * (ext4 and XFS serialise writes that extend a file or fill a hole under
 * the inode lock).  Return: 0 (extended, or long enough), or -errno
 * (EOPNOTSUPP: the file system cannot; the caller writes without it).
 */
int mcg_io_extend(int fd, off_t from, off_t size);

/**
 * mcg_io_start_writeback - sync_file_range(SYNC_FILE_RANGE_WRITE) on a
 * buffered backing file: start the kernel's writeback of what was written,
 * so that it does not pile up dirty in the kernel.  Return: 0 or -errno.
 */
int mcg_io_start_writeback(int fd, off_t off, off_t len);

#endif /* MCG_PAGECACHE_IO_H */
