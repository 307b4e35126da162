/* SPDX-License-Identifier: MIT */
/*
 * pagecache/inode.h - a cached file (the kernel's inode and its
 * address_space): the page index, the backing file, the size, the
 * writeback error sequence; and the table that finds a file by
 * (device, inode number), so every handle on one file shares one cache.
 *
 *   inode.c    - the table, lookup at open, eviction, page insertion and
 *                removal, waiting for page state
 *   filemap.c  - reads, writes, truncate (filemap.h)
 *   readahead.c, writeback.c
 *
 * Lifetime: refcnt counts the open handles, each page of the file (in the
 * index, or out of it but still referenced), and transient users (the
 * flushers, sync).  At zero the file leaves the table and its backing
 * descriptor is closed.  A file stays cached after its last close while it
 * has pages: dirty ones are written back by the flushers, clean ones stay
 * until reclaimed, so a new open finds them.
 *
 * Locks, outermost first:
 *   rw      (MCG_RANK_FILE_RW, rwlock) writers shared, truncate exclusive;
 *           held while pages are charged, never while throttled
 *   wb_lock (MCG_RANK_FILE_WB, mutex) one writeback of the file at a time:
 *           fsync, a flusher's chunk, truncate's removal of written pages
 *   lock    (MCG_RANK_MAPPING, mutex) the index and its tags, nr_pages /
 *           nr_dirty / nr_writeback, pages' DIRTY/WRITEBACK/UPTODATE/LOCKED/
 *           REMOVED changes, the writeback attachment; `cond` (broadcast
 *           when a read-in or a writeback ends) waits on it
 *   the table lock (MCG_RANK_INODES) the hash chains and refcounts' zero
 * Readers take none of rw and wb_lock; a cached read takes no lock at all
 * (a read section, rcu.h, around the lookup and the copy).
 */
#ifndef MCG_PAGECACHE_INODE_H
#define MCG_PAGECACHE_INODE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/list.h"
#include "base/lock.h"
#include "pagecache/errseq.h"
#include "pagecache/index.h"
#include "pagecache/page.h"

struct mcg_pcg;

struct mcg_inode {
	mcg_lock_t lock; /* MCG_RANK_MAPPING */
	pthread_cond_t cond;
	struct mcg_index index;
	long nr_pages, nr_dirty, nr_writeback; /* lock */
	mcg_rwlock_t rw;                       /* MCG_RANK_FILE_RW */
	mcg_lock_t wb_lock;                    /* MCG_RANK_FILE_WB */
	int64_t size;                          /* bytes (atomic) */
	mcg_errseq_t wb_err;                   /* writeback errors (errseq.h) */
	int fd;                                /* the backing file */
	unsigned align;                        /* its O_DIRECT alignment; 1: buffered */
	dev_t dev;
	ino_t ino;
	long refcnt;                 /* table lock at zero; atomic otherwise */
	struct mcg_inode *hash_next; /* table lock */
	/* Writeback (writeback.c): the domain the file is attached to since its
	 * first dirty page (referenced; resolve it: the group may be gone), and
	 * its place on that domain's list while it has dirty pages. */
	struct mcg_pcg *wb_pcg;  /* set once (lock) */
	struct mcg_list wb_link; /* the domain's wb.lock */
	bool on_wb_list;         /* the domain's wb.lock */
	uint64_t dirtied_ms;     /* when it went from clean to dirty (lock) */
	uint64_t wb_index;       /* where background writeback goes on (wb_lock) */
	uint64_t behind_from;    /* write-behind: pages [from, to) to write now (lock) */
	uint64_t behind_to;      /* 0: none (lock; read racily by the flushers) */
	uint64_t retry_ms;       /* background writeback waits until then after an error (atomic) */
	int wb_errno;            /* the last writeback's error, 0 after a clean one (atomic) */
};

/** mcg_inode_init - set up the table (idempotent). */
void mcg_inode_init(void);

/** mcg_inode_fork_lock / unlock - the table lock around fork (the fork
 *  handlers, through mcg_slab_set_fork_hooks()). */
void mcg_inode_fork_lock(void);
void mcg_inode_fork_unlock(void);

/**
 * mcg_inode_get_fd - the cached file for the open backing descriptor @fd
 * (its device and inode number), created with @fd (then the table owns it)
 * or found (then the caller closes its @fd).  @path and @direct_ok: how
 * to probe O_DIRECT for a new one.  *@owned tells which.  One reference
 * for the caller (mcg_inode_put()).
 * Return: 0 or -errno.
 */
int mcg_inode_get_fd(int fd, const char *path, bool direct_ok, struct mcg_inode **out, bool *owned);

/** mcg_inode_get - another reference (the caller holds one, or a page of it under the lock). */
static inline void mcg_inode_get(struct mcg_inode *in)
{
	__atomic_fetch_add(&in->refcnt, 1, __ATOMIC_RELAXED);
}

/** mcg_inode_put - drop a reference; the last evicts the file.  No page-cache lock held. */
void mcg_inode_put(struct mcg_inode *in);

/** mcg_inode_size - the file's size in bytes. */
static inline int64_t mcg_inode_size(const struct mcg_inode *in)
{
	return __atomic_load_n(&in->size, __ATOMIC_ACQUIRE);
}

/** mcg_inode_size_extend - make the size at least @end (writers). */
void mcg_inode_size_extend(struct mcg_inode *in, int64_t end);

/**
 * mcg_inode_find_get - the page at @index with a reference, or NULL.
 * Takes the mapping lock.
 */
struct mcg_fpage *mcg_inode_find_get(struct mcg_inode *in, uint64_t index);

/**
 * mcg_inode_add_page - put @page (one reference, from mcg_fpage_alloc(),
 * with its initial flags set) at page->index, take the index's reference,
 * and add it to its lruvec's inactive list.
 * Return: 0; -EEXIST (another page got there first: @page untouched);
 * -ENOMEM (index nodes).  Takes the mapping lock; allocates outside it.
 */
int mcg_inode_add_page(struct mcg_inode *in, struct mcg_fpage *page);

/**
 * mcg_inode_remove_locked - take @page out of the index and its LRU list,
 * uncount its dirty state (the data is dropped: truncate, or a clean page
 * reclaimed), drop the index's reference (the last chains it on
 * *@dispose) and chain emptied index nodes on *@freed.  Mapping lock held.
 */
void mcg_inode_remove_locked(struct mcg_inode *in, struct mcg_fpage *page, struct mcg_list *dispose,
                             struct mcg_index_node **freed);

/** mcg_inode_wait_locked - wait on @in's cond (mapping lock held; it is released meanwhile). */
void mcg_inode_wait_locked(struct mcg_inode *in);

/** mcg_inode_wake_locked - wake every waiter on @in's cond (mapping lock held). */
static inline void mcg_inode_wake_locked(struct mcg_inode *in)
{
	pthread_cond_broadcast(&in->cond);
}

/**
 * mcg_inode_for_each - call @fn on every cached file with a reference held
 * (dropped after), e.g. to sync or drop them all.  No lock held by @fn.
 */
void mcg_inode_for_each(void (*fn)(struct mcg_inode *in, void *arg), void *arg);

/** mcg_inode_count - files in the table (for tests). */
long mcg_inode_count(void);

#endif /* MCG_PAGECACHE_INODE_H */
