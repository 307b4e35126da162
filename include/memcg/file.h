/* SPDX-License-Identifier: MIT */
/*
 * memcg/file.h - files through memcg's page cache: a program's own files
 * (a database's, a log store's, a cache server's) read and written in
 * 4 KiB pages charged to groups, with per-group dirty limits and writeback.
 *
 * Glossary
 *   page cache   the pages of file data this process holds, one cache per
 *                file however many handles are open on it (files are the
 *                same when their device and inode number are).
 *   charge       a page brought in (read, read ahead, or written) is
 *                charged to the handle's group (mcg_file_opts_t.group), or
 *                to the calling thread's current group (memcg/group.h),
 *                and stays charged there until it leaves the cache:
 *                memory.current counts it, memory.stat shows file,
 *                active_file, inactive_file, file_dirty, file_writeback.
 *                Removing a group hands its pages to its parent.
 *   dirty        written here and not yet in the backing file.  Each group
 *                may hold at most its memory.dirty_ratio (% of its
 *                available memory) or memory.dirty_bytes of dirty and
 *                written-back-now pages; the process as a whole the
 *                options dirty_ratio / dirty_bytes.  A writer past the
 *                middle of its background threshold and its limit is
 *                slowed smoothly (the kernel's IO-less balance_dirty_pages,
 *                pauses of at most 200 ms), so the dirty data of each
 *                group stays near its setpoint.
 *   writeback    flusher threads (started by the first mcg_file_open())
 *                write dirty pages in the background above a group's
 *                memory.dirty_background_*, and files dirty for longer
 *                than dirty_expire_centisecs every
 *                dirty_writeback_centisecs (options; the period's knob).
 *                fsync writes what is dirty when it starts.  Data still
 *                dirty when the process exits is written by an atexit
 *                handler; data lost in a crash is what was not fsynced,
 *                as with the kernel's cache and a power cut.
 *   errors       a failed writeback loses nothing: the pages stay dirty
 *                and are retried, and each handle open on the file learns
 *                of the error once, at its next fsync (the kernel's errseq:
 *                -EIO, -ENOSPC...).  Pages that cannot be written throttle
 *                their group's writers instead of piling up.
 *   backing I/O  O_DIRECT where the file system supports it (no double
 *                caching in the kernel), else buffered with
 *                sync_file_range; fsync ends with fdatasync either way.
 *
 * The kernel's page cache still serves anything else that opens the file:
 * keep to one path per file (this one, or read(2)/write(2) after fsync and
 * close) for coherent data.
 *
 * Every call is thread safe; handles may be shared between threads.  Calls
 * return 0 (or a byte count) or -errno; on -EINVAL nothing changed.
 */
#ifndef MEMCG_FILE_H
#define MEMCG_FILE_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "memcg/group.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The page cache's page size, in bytes. */
#define MCG_FILE_PAGE_SIZE 4096u

typedef struct mcg_file mcg_file_t;

/** Flags of mcg_file_opts_t. */
enum mcg_file_flags {
	/** Back the file with buffered I/O even where O_DIRECT works (only when
	 *  this open brings the file into the cache). */
	MCG_FILE_NO_DIRECT = 1u << 0,
};

/** Options of mcg_file_open(); NULL means all zero. */
typedef struct mcg_file_opts {
	/** Charge the pages this handle brings in to this group (the handle
	 *  keeps a reference); NULL: the calling thread's current group at
	 *  each call. */
	mcg_group_t *group;
	/** MCG_FILE_* flags. */
	unsigned flags;
} mcg_file_opts_t;

/**
 * mcg_file_open - open @path through the page cache.
 * @oflags: O_RDONLY, O_WRONLY or O_RDWR, with O_CREAT, O_EXCL, O_TRUNC,
 *          O_CLOEXEC (always in effect) as open(2); nothing else.
 * @mode:   as open(2), for O_CREAT.
 * @opts:   NULL, or the group to charge and flags.
 * @out:    receives the handle.
 * Return: 0; -EINVAL (other flags, NULL @path or @out); -EISDIR or -EINVAL
 * (not a regular file); -ENOMEM; or open(2)'s error.
 * Pair with mcg_file_close().
 */
int mcg_file_open(const char *path, int oflags, mode_t mode, const mcg_file_opts_t *opts,
                  mcg_file_t **out);

/**
 * mcg_file_close - close @f.  Its file stays cached: dirty pages are
 * written back by the flushers, clean ones stay until reclaimed.  Writeback
 * errors are not reported here: fsync first to learn of them.
 * Return: 0, or -EINVAL (NULL).
 */
int mcg_file_close(mcg_file_t *f);

/**
 * mcg_file_pread - read up to @len bytes at @off into @buf from the cache,
 * reading missing pages from the backing file (sequential reads read
 * ahead, a window that grows on each sequential hit, as the kernel's).
 * Return: bytes read (0 at or past the end of the file; fewer than @len
 * only at the end), or -errno (-EBADF: not open for reading; -EIO: a page
 * could not be read; -ENOMEM: no memory for a page even after reclaim;
 * -EINVAL: negative @off).  Bytes read before an error are returned instead.
 */
ssize_t mcg_file_pread(mcg_file_t *f, void *buf, size_t len, off_t off);

/** mcg_file_preadv - mcg_file_pread() into @iovcnt (1..1024) segments. */
ssize_t mcg_file_preadv(mcg_file_t *f, const struct iovec *iov, int iovcnt, off_t off);

/**
 * mcg_file_pwrite - write @len bytes of @buf at @off into the cache, past
 * the end if need be (the file grows; a hole reads as zeros), dirtying the
 * pages; then throttle the calling thread if its group's (or the process's)
 * dirty data calls for it - with no lock held.  A page written while its
 * writeback runs waits for it to end.  A write larger than a throttling
 * interval is not atomic against other writers of the same bytes.
 * Return: @len, fewer bytes when a page could not be had midway, or -errno
 * (-EBADF: not open for writing, or a write covering part of a page that
 * is not cached to a file this process may write but not read - the cache
 * reads a page before it writes part of it, and mcg_file_open() could open
 * the backing file only write-only; -ENOMEM; -ENOSPC or -EIO: the file's
 * last writeback failed so and writing its dirty pages now fails too - new
 * data is refused rather than piled up; -EFBIG; -EINVAL).
 */
ssize_t mcg_file_pwrite(mcg_file_t *f, const void *buf, size_t len, off_t off);

/** mcg_file_pwritev - mcg_file_pwrite() from @iovcnt (1..1024) segments. */
ssize_t mcg_file_pwritev(mcg_file_t *f, const struct iovec *iov, int iovcnt, off_t off);

/**
 * mcg_file_pwrite_nowait - mcg_file_pwrite() that never sleeps in the
 * throttle, for event loops: where the throttle would pause the thread it
 * stops, returns what it wrote so far, or -EAGAIN with *@wait_ns set to
 * how long to wait before trying again (the pause it would have slept).
 * It still waits for a page under writeback and for memory.
 * Return: bytes written, or -EAGAIN (nothing written), or as mcg_file_pwrite().
 */
ssize_t mcg_file_pwrite_nowait(mcg_file_t *f, const void *buf, size_t len, off_t off,
                               uint64_t *wait_ns);

/**
 * mcg_file_fsync - write every page of the file dirty now (pages dirtied
 * meanwhile do not delay it), wait for writeback already in flight, and
 * fsync the backing file.  Reports, once to this handle, any writeback
 * error of the file since this handle last looked (the pages that failed
 * stay dirty and a later fsync retries them).
 * Return: 0, or the error (-EIO, -ENOSPC, ...); -EINVAL (NULL).
 */
int mcg_file_fsync(mcg_file_t *f);

/** mcg_file_fdatasync - mcg_file_fsync() with fdatasync(2) for the backing file. */
int mcg_file_fdatasync(mcg_file_t *f);

/**
 * mcg_file_truncate - set the file's size to @size: pages past it leave the
 * cache (dirty ones too: their data is cut off), the last page is zeroed
 * past it, and the backing file is truncated.  Waits for writeback of the
 * file.  Return: 0; -EBADF (not open for writing); -EINVAL (negative);
 * ftruncate(2)'s error.
 */
int mcg_file_truncate(mcg_file_t *f, off_t size);

/** mcg_file_size - the file's size in bytes (what was written through the cache counts). */
off_t mcg_file_size(mcg_file_t *f);

/** What mcg_file_stat() reports about a file's cache. */
typedef struct mcg_file_stat {
	off_t size;            /**< bytes */
	long pages;            /**< pages cached */
	long dirty;            /**< pages dirty */
	long writeback;        /**< pages being written */
	unsigned direct_align; /**< O_DIRECT alignment of the backing I/O; 0: buffered */
} mcg_file_stat_t;

/** mcg_file_stat - a snapshot of @f's cache.  Return: 0 or -EINVAL. */
int mcg_file_stat(mcg_file_t *f, mcg_file_stat_t *out);

/**
 * mcg_file_sync_all - fsync every cached file with dirty pages (sync(2)).
 * Return: 0 or the first error (also recorded for each file's handles).
 */
int mcg_file_sync_all(void);

/**
 * mcg_file_drop_caches - drop every clean page no one is using from the
 * cache (echo 1 > drop_caches): their charges go back to their groups.
 * Dirty pages and pages under writeback stay.  Return: pages dropped.
 */
long mcg_file_drop_caches(void);

#ifdef __cplusplus
}
#endif
#endif /* MEMCG_FILE_H */
