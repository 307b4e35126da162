/* SPDX-License-Identifier: MIT */
/*
 * pagecache/filemap.h - open handles, and reads, writes and truncation
 * through the cache (the kernel's mm/filemap.c and readahead.c).
 *
 *   file.c      - the public calls (memcg/file.h): open, close, fsync, ...
 *   filemap.c   - read, write, truncate, drop
 *   readahead.c - reading pages in, and the readahead window
 *
 * A handle keeps its group (referenced) or NULL for the caller's current
 * group, its errseq sample (what writeback errors it has seen), and its
 * readahead state (the kernel's file_ra_state: a window that starts at
 * 4x or 2x the request, grows 4x or 2x each time a read reaches the page
 * marked READAHEAD inside it, up to MCG_RA_MAX_PAGES; a read that is not
 * sequential reads only what it asked for).  The next window is read when
 * the marked page is reached, by the reader that reaches it: the reads
 * are synchronous, so "ahead" means in larger requests and before they
 * are needed, not concurrently with the copying.
 *
 * Locks: the handle's spin lock (MCG_RANK_LEAF) guards its sample and its
 * readahead window (prev is a hint, stored without it on every read); the
 * rest is the file's (inode.h).  A read that hits the cache takes no lock
 * (filemap.c, rcu.h).
 */
#ifndef MCG_PAGECACHE_FILEMAP_H
#define MCG_PAGECACHE_FILEMAP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "base/lock.h"
#include "memcg/file.h"
#include "pagecache/errseq.h"
#include "pagecache/inode.h"

/** The largest readahead window, in pages (the kernel's 128 KiB default). */
#define MCG_RA_MAX_PAGES 32u

struct mcg_ra_state {
	uint64_t start;      /* first page of the current window */
	unsigned size;       /* pages in it (0: none yet) */
	unsigned async_size; /* the marked page is start + size - async_size */
	uint64_t prev;       /* the last page read (valid when have_prev; atomic, no lock) */
	bool have_prev;      /* (atomic, no lock) */
};

struct mcg_file {
	struct mcg_inode *inode;
	mcg_group_t *group; /* referenced; NULL: the caller's current group */
	int oflags;
	mcg_spin_t lock; /* MCG_RANK_LEAF: wb_err_since, ra */
	mcg_errseq_t wb_err_since;
	struct mcg_ra_state ra;
	int64_t write_next; /* where this handle's last write ended (a hint: write-behind) */
};

/** mcg_filemap_read - mcg_file_preadv() for a valid handle and segments. */
ssize_t mcg_filemap_read(struct mcg_file *f, const struct iovec *iov, int cnt, int64_t off);

/**
 * mcg_filemap_write - mcg_file_pwritev() for a valid handle and segments;
 * with @nowait, the throttle returns -EAGAIN (and *@wait_ns) where it would sleep.
 */
ssize_t mcg_filemap_write(struct mcg_file *f, const struct iovec *iov, int cnt, int64_t off,
                          bool nowait, uint64_t *wait_ns);

/** mcg_filemap_truncate - mcg_file_truncate() for a valid handle. */
int mcg_filemap_truncate(struct mcg_inode *in, int64_t size);

/** mcg_filemap_drop - drop @in's clean, unused pages.  Return: how many. */
long mcg_filemap_drop(struct mcg_inode *in);

/* ---- readahead.c ---- */

/**
 * mcg_ra_read - read pages [@start, @start + @nr) that are missing, and not
 * past the end of the file, from the backing file into the cache, charged
 * through @pcg; the page at @marker (if read) gets READAHEAD.  Pages past
 * @demand_end are read ahead: they do not reclaim to get memory.
 * Return: 0, or -errno when a page the caller wants (<= @demand_end) could
 * not be read or had.
 */
int mcg_ra_read(struct mcg_inode *in, struct mcg_pcg *pcg, uint64_t start, uint64_t nr,
                uint64_t marker, uint64_t demand_end);

/**
 * mcg_ra_miss - a read of pages [@index, @index + @req) missed at @index:
 * read what the handle's readahead state says (a window when sequential).
 * Return: as mcg_ra_read().
 */
int mcg_ra_miss(struct mcg_file *f, struct mcg_pcg *pcg, uint64_t index, uint64_t req);

/** mcg_ra_marker - a read reached the READAHEAD page @index: read the next window. */
void mcg_ra_marker(struct mcg_file *f, struct mcg_pcg *pcg, uint64_t index);

/** mcg_ra_done - the read ended at page @last (sequential detection). */
void mcg_ra_done(struct mcg_file *f, uint64_t last);

/** mcg_ra_init_size / mcg_ra_next_size - the window arithmetic (tests). */
unsigned mcg_ra_init_size(uint64_t req, unsigned max);
unsigned mcg_ra_next_size(unsigned cur, unsigned max);

#endif /* MCG_PAGECACHE_FILEMAP_H */
