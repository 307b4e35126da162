/* SPDX-License-Identifier: MIT */
/*
 * pagecache/filemap.c - reads, writes, truncation and dropping through the
 * cache (see filemap.h).
 *
 * Read (no file-wide lock): for each page, the hit path first - in a read
 * section keyed by the file and page index (rcu.h), find it with no lock
 * and no reference, copy out unless its data lock is held alone (whoever
 * changes the data waits for the sections keyed to the page), mark it
 * accessed (a flag); else the locked path:
 * find it under the mapping lock (a reference), read it in on a miss, wait
 * while it is being read, copy out, mark it accessed.
 *
 * Write: under the file's rw lock (shared: writers run in parallel, truncate
 * waits), for each page: find or create it (a page partly written inside
 * the file is read first; one past the end starts as zeros; a new one is
 * LOCKED until its copy-in is done), wait while it
 * is under writeback (stable pages), copy in under its data lock
 * (exclusive), extend the size, then dirty it (counted once, by the thread
 * that dirtied it).  Every WRITE_BATCH pages the rw lock is dropped and the
 * thread passes the throttle (dirty.c), so it never sleeps holding a lock.
 *
 * Truncate: the rw lock exclusive and wb_lock (no writer, no writeback),
 * then pages past the size leave the index and the last one is zeroed past
 * it; the backing file is cut last.
 */
#include <errno.h>
#include <string.h>

#include "base/log.h"
#include "base/options.h"
#include "pagecache/dirty.h"
#include "pagecache/filemap.h"
#include "pagecache/io.h"
#include "pagecache/lru.h"
#include "pagecache/pcg.h"
#include "pagecache/writeback.h"

#define WRITE_BATCH 16 /* pages written between two passes of the throttle, at most */
#define DROP_BATCH 512 /* pages removed per mapping-lock hold */

/* ------------------------------------------------------------ iovec helpers */

/* Copy @n bytes between @data and the segments at byte @pos of @iov. */
static void iov_copy(const struct iovec *iov, int cnt, size_t pos, void *data, size_t n, bool out)
{
	if (likely(cnt == 1)) { /* pread / pwrite: one buffer */
		char *b = (char *)iov[0].iov_base + pos;
		if (out)
			memcpy(b, data, n);
		else
			memcpy(data, b, n);
		return;
	}
	char *d = data;
	for (int i = 0; i < cnt && n; i++) {
		if (pos >= iov[i].iov_len) {
			pos -= iov[i].iov_len;
			continue;
		}
		size_t k = MCG_MIN(iov[i].iov_len - pos, n);
		if (out)
			memcpy((char *)iov[i].iov_base + pos, d, k);
		else
			memcpy(d, (const char *)iov[i].iov_base + pos, k);
		d += k;
		n -= k;
		pos = 0;
	}
}

static size_t iov_total(const struct iovec *iov, int cnt)
{
	size_t t = 0;
	for (int i = 0; i < cnt; i++)
		t += iov[i].iov_len;
	return t;
}

/* The pcg pages of @f are charged through now, or NULL (-ENOMEM). */
static struct mcg_pcg *charge_pcg(struct mcg_file *f)
{
	return mcg_pcg_of(f->group ? f->group : mcg_group_current());
}

/* Wait until @page is no longer being read in.  Return: 0, or -EIO. */
static int wait_uptodate(struct mcg_inode *in, struct mcg_fpage *page)
{
	if (likely(mcg_fpage_test(page, PG_UPTODATE)))
		return 0;
	mcg_lock(&in->lock);
	while (mcg_fpage_test(page, PG_LOCKED))
		mcg_inode_wait_locked(in);
	mcg_unlock(&in->lock);
	return mcg_fpage_test(page, PG_UPTODATE) ? 0 : -EIO;
}

/* ------------------------------------------------------------ read */

/* Lines of a page's data prefetched as soon as the index names it: the copy
 * then starts on lines already on their way while the descriptor arrives. */
#define READ_PREFETCH_LINES 16

/*
 * The hit path: in a read section keyed by (@in, @index), the page at
 * @index (no lock, no reference: rcu.h keeps its memory while the section
 * lasts), uptodate and not a readahead marker, copied out with no atomic if
 * its data lock is not held alone: a writer or truncate takes it alone and
 * then waits for this section (mcg_fpage_data_change_lock()); one that
 * takes it after our check finds our key and waits, one that held it
 * before makes us leave at once (it may be waiting for us).  So no copy in
 * overlaps the copy out, and the copy's loads depend on no atomic on the
 * page's line: they start as soon as the index names the data.  A page
 * removed meanwhile (truncate,
 * reclaim) is copied as it was - a read that raced the removal.  The
 * accessed mark is a flag; the second access (list move, lruvec lock) is
 * done with a reference after the section.
 * Return: true when copied; false: the caller takes the locked path.
 */
static inline bool read_hit(struct mcg_inode *in, uint64_t index, const struct iovec *iov, int cnt,
                            size_t done, size_t pgoff, size_t n)
{
	if (unlikely(!mcg_rcu_read_lock_key(in, index)))
		return false;
	void *hint = NULL;
	struct mcg_fpage *page = mcg_index_lookup_aux(&in->index, index, &hint);
	if (unlikely(!page))
		goto miss;
	for (int l = 0; l < READ_PREFETCH_LINES && hint; l++)
		__builtin_prefetch((char *)hint + pgoff + (size_t)l * MCG_CACHELINE, 0, 3);
	uint32_t fl = mcg_fpage_flags(page);
	if (unlikely((fl & (PG_UPTODATE | PG_READAHEAD)) != PG_UPTODATE))
		goto miss;
	if (unlikely(mcg_fpage_data_writer(page)))
		goto miss; /* (its holder may be waiting for this section) */
	iov_copy(iov, cnt, done, (char *)page->data + pgoff, n, true);
	struct mcg_fpage *activate = NULL;
	if (unlikely((fl & (PG_REFERENCED | PG_ACTIVE)) != (PG_REFERENCED | PG_ACTIVE))) {
		if (!(fl & PG_REFERENCED))
			mcg_fpage_set(page, PG_REFERENCED);
		else if (mcg_fpage_try_get(page))
			activate = page;
	}
	mcg_rcu_read_unlock();
	if (unlikely(activate)) {
		mcg_lru_mark_accessed(activate);
		mcg_fpage_put(activate);
	}
	return true;
miss:
	mcg_rcu_read_unlock();
	return false;
}

ssize_t mcg_filemap_read(struct mcg_file *f, const struct iovec *iov, int cnt, int64_t off)
{
	struct mcg_inode *in = f->inode;
	int64_t size = mcg_inode_size(in);
	if (off >= size)
		return 0;
	size_t total = iov_total(iov, cnt);
	total = (size_t)MCG_MIN((int64_t)total, size - off);
	if (!total)
		return 0;
	size_t done = 0;
	int err = 0;
	struct mcg_pcg *pcg = NULL;
	uint64_t last = (uint64_t)(off + (int64_t)total - 1) >> MCG_FPAGE_SHIFT;
	while (done < total) {
		int64_t pos = off + (int64_t)done;
		uint64_t index = (uint64_t)pos >> MCG_FPAGE_SHIFT;
		size_t pgoff = (size_t)pos & (MCG_FPAGE_SIZE - 1);
		size_t n = MCG_MIN(MCG_FPAGE_SIZE - pgoff, total - done);
		if (likely(read_hit(in, index, iov, cnt, done, pgoff, n))) {
			done += n;
			continue;
		}
		struct mcg_fpage *page = mcg_inode_find_get(in, index);
		if (!page) {
			if (!pcg && !(pcg = charge_pcg(f))) {
				err = -ENOMEM;
				break;
			}
			err = mcg_ra_miss(f, pcg, index, last - index + 1);
			page = mcg_inode_find_get(in, index);
			if (!page) {
				if (!err)
					continue; /* reclaimed already: again */
				break;
			}
			err = 0;
		}
		if (unlikely(mcg_fpage_test(page, PG_READAHEAD)) &&
		    mcg_fpage_test_and_clear(page, PG_READAHEAD)) {
			if (pcg || (pcg = charge_pcg(f)))
				mcg_ra_marker(f, pcg, index);
		}
		err = wait_uptodate(in, page);
		if (err) {
			mcg_fpage_put(page);
			break;
		}
		mcg_fpage_data_read_lock(page);
		iov_copy(iov, cnt, done, (char *)page->data + pgoff, n, true);
		mcg_fpage_data_read_unlock(page);
		mcg_lru_mark_accessed(page);
		mcg_fpage_put(page);
		done += n;
	}
	if (done)
		mcg_ra_done(f, (uint64_t)(off + (int64_t)done - 1) >> MCG_FPAGE_SHIFT);
	return done ? (ssize_t)done : err;
}

/* ------------------------------------------------------------ write */

/*
 * The page at @index with a reference, created if missing: read in first
 * when the write (@full: covers it all) leaves part of it and that part is
 * inside the file.  A page created here goes into the index LOCKED, not
 * UPTODATE (*@created): its data is not there yet, so readers and other
 * writers wait (write_end()) - as for a page being read in.
 * Return: the page, or NULL with *@err.
 */
static struct mcg_fpage *write_begin(struct mcg_inode *in, struct mcg_pcg *pcg, uint64_t index,
                                     bool full, bool *created, int *err)
{
	*created = false;
	for (;;) {
		struct mcg_fpage *page = mcg_inode_find_get(in, index);
		if (page) {
			*err = wait_uptodate(in, page);
			if (!*err)
				return page;
			mcg_fpage_put(page);
			return NULL;
		}
		bool inside = (int64_t)(index << MCG_FPAGE_SHIFT) < mcg_inode_size(in);
		if (!full && inside) {
			*err = mcg_ra_read(in, pcg, index, 1, UINT64_MAX, index);
			if (*err)
				return NULL;
			continue; /* (found next time round, or reclaimed: again) */
		}
		page = mcg_fpage_alloc(pcg, in, index, 0);
		if (!page) {
			*err = -ENOMEM;
			return NULL;
		}
		if (!full)
			memset(page->data, 0, MCG_FPAGE_SIZE); /* past the end: zeros */
		mcg_fpage_set(page, PG_LOCKED);
		int ret = mcg_inode_add_page(in, page);
		if (!ret) {
			*created = true;
			return page; /* our reference stays the caller's */
		}
		mcg_fpage_clear(page, PG_LOCKED);
		mcg_fpage_put(page);
		if (ret != -EEXIST) {
			*err = ret;
			return NULL;
		}
	}
}

/* A page write_begin() created has its data: uptodate, and its waiters go on. */
static void write_end_created(struct mcg_inode *in, struct mcg_fpage *page)
{
	mcg_lock(&in->lock);
	mcg_fpage_set(page, PG_UPTODATE);
	mcg_fpage_clear(page, PG_LOCKED);
	mcg_inode_wake_locked(in);
	mcg_unlock(&in->lock);
}

/* Hold @page's data alone, with no writeback running on it (stable pages). */
static void write_lock_stable(struct mcg_inode *in, struct mcg_fpage *page)
{
	for (;;) {
		mcg_fpage_data_change_lock(page);
		if (likely(!mcg_fpage_test(page, PG_WRITEBACK)))
			return;
		mcg_fpage_data_write_unlock(page);
		mcg_lock(&in->lock);
		mcg_wb_wait_page_locked(in, page);
		mcg_unlock(&in->lock);
	}
}

/*
 * A file whose last writeback failed with ENOSPC writes what it has first
 * (synchronously), and refuses new data while that fails: more dirty data
 * could not go anywhere.  Other errors (EIO) leave the pages dirty and the
 * throttle holds the writers back.  Return: 0 or -errno.
 */
static int write_check_errors(struct mcg_inode *in)
{
	if (likely(__atomic_load_n(&in->wb_errno, __ATOMIC_RELAXED) != ENOSPC))
		return 0;
	return mcg_wb_flush(in);
}

/*
 * Write-behind (option dirty_write_behind, bytes B): a handle writing
 * sequentially (this write starts where its last one ended) that
 * completes one or more B-aligned chunks hands them to the flushers to be
 * written now, not when the file expires or is fsynced: the device works
 * while the writer copies, and an fsync after a stream finds little left.
 * Only while the writer's domains (@pcg's and the global one) are under
 * their background thresholds: over them, background writeback runs
 * already, scheduled per domain - the throttle shares the device between
 * groups by that writeback's bandwidth, which write-behind would bypass.
 * Random writes never trigger it; a rewrite of dirty pages meanwhile is
 * written once more.
 */
static void write_behind(struct mcg_file *f, struct mcg_pcg *pcg, int64_t off, size_t done)
{
	long bytes = mcg_option(MCG_OPT_DIRTY_WRITE_BEHIND);
	if (likely(!bytes))
		return;
	int64_t end = off + (int64_t)done;
	bool seq = __atomic_load_n(&f->write_next, __ATOMIC_RELAXED) == off;
	__atomic_store_n(&f->write_next, end, __ATOMIC_RELAXED);
	uint64_t chunk = MCG_MAX((uint64_t)bytes >> MCG_FPAGE_SHIFT, (uint64_t)1);
	uint64_t a = ((uint64_t)off >> MCG_FPAGE_SHIFT) / chunk;
	uint64_t b = ((uint64_t)end >> MCG_FPAGE_SHIFT) / chunk;
	if (seq && b > a && !mcg_dirty_over_bg(pcg))
		mcg_wb_behind(f->inode, a * chunk, b * chunk);
}

ssize_t mcg_filemap_write(struct mcg_file *f, const struct iovec *iov, int cnt, int64_t off,
                          bool nowait, uint64_t *wait_ns)
{
	struct mcg_inode *in = f->inode;
	size_t total = iov_total(iov, cnt);
	if (!total)
		return 0;
	if (total > (size_t)INT64_MAX - (size_t)off)
		return -EFBIG;
	mcg_group_t *g = f->group ? f->group : mcg_group_current();
	struct mcg_pcg *pcg = mcg_pcg_of(g);
	if (!pcg)
		return -ENOMEM;
	int err = write_check_errors(in);
	if (err)
		return err;
	size_t done = 0;
	while (done < total && !err) {
		if (nowait && mcg_balance_dirty_pages_ratelimited(g, true, wait_ns) == -EAGAIN) {
			if (done)
				write_behind(f, pcg, off, done);
			return done ? (ssize_t)done : -EAGAIN;
		}
		mcg_rwlock_read(&in->rw);
		for (int k = 0; k < WRITE_BATCH && done < total; k++) {
			int64_t pos = off + (int64_t)done;
			uint64_t index = (uint64_t)pos >> MCG_FPAGE_SHIFT;
			size_t pgoff = (size_t)pos & (MCG_FPAGE_SIZE - 1);
			size_t n = MCG_MIN(MCG_FPAGE_SIZE - pgoff, total - done);
			bool created;
			struct mcg_fpage *page =
			        write_begin(in, pcg, index, n == MCG_FPAGE_SIZE, &created, &err);
			if (!page)
				break;
			write_lock_stable(in, page);
			iov_copy(iov, cnt, done, (char *)page->data + pgoff, n, false);
			mcg_fpage_data_write_unlock(page);
			if (created)
				write_end_created(in, page);
			/* The size first: writeback writes no further than it. */
			mcg_inode_size_extend(in, pos + (int64_t)n);
			bool dirtied = mcg_wb_page_dirty(in, page);
			if (dirtied)
				mcg_dirty_note(1);
			mcg_lru_mark_accessed(page);
			mcg_fpage_put(page);
			done += n;
			if (dirtied && mcg_dirty_due(pcg))
				break; /* to the throttle now, not after the batch */
		}
		mcg_rwlock_unlock(&in->rw);
		if (!nowait)
			mcg_balance_dirty_pages_ratelimited(g, false, NULL);
	}
	if (done)
		write_behind(f, pcg, off, done);
	return done ? (ssize_t)done : err;
}

/* ------------------------------------------------------------ truncate, drop */

/*
 * Remove pages from @first on that @want says may go (mapping lock taken
 * per batch).  Return: pages removed.
 */
static long remove_pages(struct mcg_inode *in, uint64_t first, bool (*want)(struct mcg_fpage *page))
{
	long removed = 0;
	uint64_t next = first, at;
	for (bool more = true; more;) {
		struct mcg_list dispose;
		struct mcg_index_node *nodes = NULL;
		mcg_list_init(&dispose);
		mcg_lock(&in->lock);
		for (int k = 0; k < DROP_BATCH; k++) {
			struct mcg_fpage *page = mcg_index_next(&in->index, next, MCG_NR_TAGS, &at);
			if (!page) {
				more = false;
				break;
			}
			next = at + 1;
			if (!want(page))
				continue;
			mcg_inode_remove_locked(in, page, &dispose, &nodes);
			removed++;
		}
		mcg_unlock(&in->lock);
		mcg_index_free_nodes(nodes);
		mcg_fpage_dispose(&dispose);
	}
	return removed;
}

/* Truncate: every page past the size goes, dirty or not (no writeback runs:
 * the caller holds wb_lock; one being read in is the reader's to finish). */
static bool truncate_want(struct mcg_fpage *page) { return !mcg_fpage_test(page, PG_WRITEBACK); }

int mcg_filemap_truncate(struct mcg_inode *in, int64_t size)
{
	mcg_rwlock_write(&in->rw);
	mcg_lock(&in->wb_lock);
	int64_t old = mcg_inode_size(in);
	__atomic_store_n(&in->size, size, __ATOMIC_RELEASE);
	if (size < old) {
		uint64_t first = (uint64_t)(size + (int64_t)MCG_FPAGE_SIZE - 1) >> MCG_FPAGE_SHIFT;
		remove_pages(in, first, truncate_want);
		size_t tail = (size_t)size & (MCG_FPAGE_SIZE - 1);
		if (tail) { /* the last page reads zeros past the size */
			struct mcg_fpage *page =
			        mcg_inode_find_get(in, (uint64_t)size >> MCG_FPAGE_SHIFT);
			if (page) {
				if (!wait_uptodate(in, page)) {
					mcg_fpage_data_change_lock(page);
					memset((char *)page->data + tail, 0, MCG_FPAGE_SIZE - tail);
					mcg_fpage_data_write_unlock(page);
				}
				mcg_fpage_put(page);
			}
		}
	}
	int err = mcg_io_ftruncate(in->fd, size);
	mcg_unlock(&in->wb_lock);
	mcg_rwlock_unlock(&in->rw);
	return err;
}

/* Drop: clean, not busy (the index's reference only), on its LRU list. */
static bool drop_want(struct mcg_fpage *page)
{
	uint32_t f = mcg_fpage_flags(page);
	return !(f & (PG_DIRTY | PG_WRITEBACK | PG_LOCKED)) && (f & PG_LRU) &&
	       __atomic_load_n(&page->refcnt, __ATOMIC_ACQUIRE) == 1;
}

long mcg_filemap_drop(struct mcg_inode *in) { return remove_pages(in, 0, drop_want); }
