/* SPDX-License-Identifier: MIT */
/*
 * pagecache/file.c - the public calls of memcg/file.h: handles, and the
 * page cache's start (its caches, its shrinker, its flushers, the atexit
 * sync) on the first open.
 *
 * A handle samples its file's errseq at open; fsync reports what changed
 * since, once (errseq.h).  The backing file is opened read-write when
 * permitted (writeback needs it whoever opened it first), O_TRUNC goes
 * through the cache (pages past the new size leave it).
 *
 * Locks: the handle's spin lock around its errseq sample; the rest below.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/fault.h"
#include "base/log.h"
#include "base/options.h"
#include "memcg/file.h"
#include "memcg/kmalloc.h"
#include "memcg/reclaim.h"
#include "pagecache/dirty.h"
#include "pagecache/filemap.h"
#include "pagecache/flusher.h"
#include "pagecache/io.h"
#include "pagecache/lru.h"
#include "pagecache/pcg.h"
#include "pagecache/pgdata.h"
#include "pagecache/rcu.h"
#include "pagecache/writeback.h"
#include "slab/slab.h"

#define IOV_MAX_SEGMENTS 1024

static void sync_at_exit(void) { mcg_wb_sync_all(); }

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static int started;

/* Fork: the page cache's global locks, in rank order, after the slab and
 * group layers' (mcg_slab_set_fork_hooks), so that a child finds the
 * table of files and the bandwidth state free and whole.  A group's file
 * LRU and charges, and a file's own locks, are not taken: a child should
 * exec, or use files of its own (docs/design.md). */
static void fork_lock(void)
{
	mcg_inode_fork_lock();
	mcg_dirty_fork_lock();
	mcg_rcu_fork_lock();
	mcg_pgdata_fork_lock();
}

static void fork_unlock(void)
{
	mcg_pgdata_fork_unlock();
	mcg_rcu_fork_unlock();
	mcg_dirty_fork_unlock();
	mcg_inode_fork_unlock();
}

/* Start the page cache once: 0, or -ENOMEM (then a later open tries again). */
static int pagecache_start(void)
{
	if (likely(__atomic_load_n(&started, __ATOMIC_ACQUIRE))) {
		/* A forked child has none of the parent's flushers, and a start
		 * that failed is retried here: periodic writeback needs them. */
		if (unlikely(!mcg_flusher_running()))
			mcg_flusher_start();
		return 0;
	}
	pthread_mutex_lock(&start_lock);
	int err = 0;
	if (!started) {
		mcg_reclaim_init();
		mcg_pcg_init();
		mcg_fpage_init();
		mcg_inode_init();
		mcg_slab_set_fork_hooks(fork_lock, fork_unlock);
		err = mcg_lru_shrinker_init();
		if (!err) {
			atexit(sync_at_exit);
			__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&start_lock);
	if (!err)
		mcg_flusher_start();
	return err;
}

static bool readable(const struct mcg_file *f) { return (f->oflags & O_ACCMODE) != O_WRONLY; }
static bool writable(const struct mcg_file *f) { return (f->oflags & O_ACCMODE) != O_RDONLY; }

mcg_public int mcg_file_open(const char *path, int oflags, mode_t mode, const mcg_file_opts_t *opts,
                             mcg_file_t **out)
{
	int acc = oflags & O_ACCMODE;
	if (!path || !out || (acc != O_RDONLY && acc != O_WRONLY && acc != O_RDWR) ||
	    (oflags & ~(O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_CLOEXEC)) ||
	    (opts && (opts->flags & ~(unsigned)MCG_FILE_NO_DIRECT)))
		return -EINVAL;
	int err = pagecache_start();
	if (err)
		return err;
	/* Read-write when allowed: the cache reads pages a write only partly covers. */
	int bflags = (oflags & (O_CREAT | O_EXCL)) | O_RDWR;
	int fd = mcg_io_open(path, bflags, mode);
	if ((fd == -EACCES || fd == -EROFS) && acc != O_RDWR)
		fd = mcg_io_open(path, (oflags & (O_CREAT | O_EXCL)) | acc, mode);
	if (fd < 0)
		return fd;
	int fl = fcntl(fd, F_GETFL);
	bool fd_writes = fl >= 0 && (fl & O_ACCMODE) != O_RDONLY;
	struct mcg_file *f = NULL;
	if (mcg_fault_should_fail() || !(f = mcg_malloc(sizeof(*f)))) {
		mcg_io_close(fd);
		return -ENOMEM;
	}
	memset(f, 0, sizeof(*f));
	bool direct =
	        !(opts && (opts->flags & MCG_FILE_NO_DIRECT)) && mcg_option(MCG_OPT_FILE_DIRECT_IO);
	struct mcg_inode *in;
	bool owned;
	err = mcg_inode_get_fd(fd, path, direct, &in, &owned);
	if (err) {
		mcg_io_close(fd);
		mcg_free(f);
		return err;
	}
	if (!owned) {
		mcg_io_close(fd);
		/* The cached file's descriptor must allow what this handle does. */
		int ifl = fcntl(in->fd, F_GETFL);
		fd_writes = ifl >= 0 && (ifl & O_ACCMODE) != O_RDONLY;
	}
	if (acc != O_RDONLY && !fd_writes) {
		mcg_inode_put(in);
		mcg_free(f);
		return -EACCES;
	}
	f->inode = in;
	f->oflags = oflags;
	mcg_spin_init(&f->lock, MCG_RANK_LEAF);
	f->wb_err_since = mcg_errseq_sample(&in->wb_err);
	if (opts && opts->group) {
		mcg_group_get(opts->group);
		f->group = opts->group;
	}
	if ((oflags & O_TRUNC) && acc != O_RDONLY) {
		err = mcg_filemap_truncate(in, 0);
		if (err) {
			mcg_file_close(f);
			return err;
		}
	}
	*out = f;
	return 0;
}

mcg_public int mcg_file_close(mcg_file_t *f)
{
	if (!f)
		return -EINVAL;
	mcg_inode_put(f->inode);
	mcg_group_put(f->group);
	mcg_free(f);
	return 0;
}

static bool iov_ok(const struct iovec *iov, int cnt)
{
	if (!iov || cnt < 1 || cnt > IOV_MAX_SEGMENTS)
		return false;
	size_t t = 0;
	for (int i = 0; i < cnt; i++) {
		if (iov[i].iov_len && !iov[i].iov_base)
			return false;
		if (iov[i].iov_len > (size_t)INT64_MAX - t)
			return false;
		t += iov[i].iov_len;
	}
	return true;
}

mcg_public ssize_t mcg_file_preadv(mcg_file_t *f, const struct iovec *iov, int iovcnt, off_t off)
{
	if (!f || off < 0 || !iov_ok(iov, iovcnt))
		return -EINVAL;
	if (!readable(f))
		return -EBADF;
	return mcg_filemap_read(f, iov, iovcnt, off);
}

mcg_public ssize_t mcg_file_pread(mcg_file_t *f, void *buf, size_t len, off_t off)
{
	struct iovec iov = {buf, len};
	return mcg_file_preadv(f, &iov, 1, off);
}

mcg_public ssize_t mcg_file_pwritev(mcg_file_t *f, const struct iovec *iov, int iovcnt, off_t off)
{
	if (!f || off < 0 || !iov_ok(iov, iovcnt))
		return -EINVAL;
	if (!writable(f))
		return -EBADF;
	return mcg_filemap_write(f, iov, iovcnt, off, false, NULL);
}

mcg_public ssize_t mcg_file_pwrite(mcg_file_t *f, const void *buf, size_t len, off_t off)
{
	struct iovec iov = {(void *)buf, len};
	return mcg_file_pwritev(f, &iov, 1, off);
}

mcg_public ssize_t mcg_file_pwrite_nowait(mcg_file_t *f, const void *buf, size_t len, off_t off,
                                          uint64_t *wait_ns)
{
	struct iovec iov = {(void *)buf, len};
	if (!f || off < 0 || !wait_ns || !iov_ok(&iov, 1))
		return -EINVAL;
	if (!writable(f))
		return -EBADF;
	*wait_ns = 0;
	return mcg_filemap_write(f, &iov, 1, off, true, wait_ns);
}

static int fsync_(mcg_file_t *f, bool datasync)
{
	if (!f)
		return -EINVAL;
	int err = mcg_wb_fsync(f->inode, datasync);
	mcg_spin_lock(&f->lock);
	int seen = mcg_errseq_check_and_advance(&f->inode->wb_err, &f->wb_err_since);
	mcg_spin_unlock(&f->lock);
	/* I/O errors are in the errseq (reported once per handle); others not. */
	return seen ? seen : (err == -ENOMEM ? err : 0);
}

mcg_public int mcg_file_fsync(mcg_file_t *f) { return fsync_(f, false); }
mcg_public int mcg_file_fdatasync(mcg_file_t *f) { return fsync_(f, true); }

mcg_public int mcg_file_truncate(mcg_file_t *f, off_t size)
{
	if (!f || size < 0)
		return -EINVAL;
	if (!writable(f))
		return -EBADF;
	return mcg_filemap_truncate(f->inode, size);
}

mcg_public off_t mcg_file_size(mcg_file_t *f)
{
	return f ? (off_t)mcg_inode_size(f->inode) : -EINVAL;
}

mcg_public int mcg_file_stat(mcg_file_t *f, mcg_file_stat_t *out)
{
	if (!f || !out)
		return -EINVAL;
	struct mcg_inode *in = f->inode;
	mcg_lock(&in->lock);
	out->pages = (long)in->index.nr;
	out->dirty = in->nr_dirty;
	out->writeback = in->nr_writeback;
	mcg_unlock(&in->lock);
	out->size = (off_t)mcg_inode_size(in);
	out->direct_align = in->align > 1 ? in->align : 0;
	return 0;
}

mcg_public int mcg_file_sync_all(void) { return started ? mcg_wb_sync_all() : 0; }

static void drop_one(struct mcg_inode *in, void *arg) { *(long *)arg += mcg_filemap_drop(in); }

mcg_public long mcg_file_drop_caches(void)
{
	long n = 0;
	if (__atomic_load_n(&started, __ATOMIC_ACQUIRE))
		mcg_inode_for_each(drop_one, &n);
	return n;
}
