/* SPDX-License-Identifier: MIT */
/*
 * pagecache/writeback.c - dirtying pages, writing them back, fsync, and
 * the per-domain lists of dirty files (see writeback.h).
 *
 * Errors lose nothing: a page is clean only when all its bytes reached
 * the backing file; any other page of a failed run is dirty again (tagged,
 * counted, WB_ERRORS counts it), the error goes to the file's errseq (each
 * handle's next fsync reports it once) and wb_errno, and background
 * writeback leaves the file alone for RETRY_MS before it tries again.
 * While the pages stay dirty the group's writers are throttled by them, as
 * by any dirty page, so a persistent error stops the writers, not the data.
 *
 * Locks: wb_lock around a file's writeback; the mapping lock for page
 * states; a domain's wb.lock for its file list (under the mapping lock);
 * never a mapping lock during backing I/O.
 */
#include "pagecache/writeback.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "base/fault.h"
#include "base/log.h"
#include "base/options.h"
#include "memcg/kmalloc.h"
#include "pagecache/dirty.h"
#include "pagecache/flusher.h"
#include "pagecache/io.h"
#include "pagecache/lru.h"
#include "pagecache/wbio.h"

#define RUN_PAGES 1024     /* pages per backing write: 4 MiB (IOV_MAX segments) */
#define RETRY_MS 100       /* background writeback of a file waits this long after an error */
#define TAG_BATCH 4096     /* pages fsync tags per mapping-lock hold */
#define EXTEND_MAX 262144u /* pages one extension of a backing file covers at most: 1 GiB */
#define BEHIND_TURN 8192   /* write-behind pages a file gets per flusher turn: 32 MiB */

/* Where @page's dirty/writeback counts go: its live pcg, or the root's. */
static struct mcg_pcg *target(struct mcg_fpage *page)
{
	return mcg_pcg_dirty_target(mcg_pcg_resolve(page->pcg), mcg_fpage_test(page, PG_ACCT));
}

/* ------------------------------------------------------------ domain lists */

/* Lock the live domain @in is attached to. */
static struct mcg_pcg *lock_domain(struct mcg_inode *in)
{
	for (;;) {
		struct mcg_pcg *p = mcg_pcg_resolve(in->wb_pcg);
		mcg_lock(&p->wb.lock);
		if (!p->wb.dead)
			return p;
		mcg_unlock(&p->wb.lock);
	}
}

/* @in went from clean to dirty (mapping lock held): onto its domain's tail. */
static void domain_add_locked(struct mcg_inode *in, struct mcg_fpage *page)
{
	if (!in->wb_pcg) { /* its first dirtier's domain, for good */
		in->wb_pcg = target(page);
		mcg_pcg_get(in->wb_pcg);
	}
	__atomic_store_n(&in->dirtied_ms, mcg_dirty_now_ms(), __ATOMIC_RELAXED);
	struct mcg_pcg *p = lock_domain(in);
	if (!in->on_wb_list) {
		mcg_list_add_tail(&in->wb_link, &p->wb.files);
		in->on_wb_list = true;
		__atomic_store_n(&p->wb.nr_files, p->wb.nr_files + 1, __ATOMIC_RELAXED);
		mcg_flusher_domain_dirty(p);
	}
	mcg_unlock(&p->wb.lock);
}

/* @in has no dirty page left (mapping lock held). */
static void domain_del_locked(struct mcg_inode *in)
{
	MCG_BUG_ON(!in->wb_pcg); /* its first dirty page set it (domain_add_locked) */
	struct mcg_pcg *p = lock_domain(in);
	if (in->on_wb_list) {
		mcg_list_del(&in->wb_link);
		in->on_wb_list = false;
		__atomic_store_n(&p->wb.nr_files, p->wb.nr_files - 1, __ATOMIC_RELAXED);
	}
	mcg_unlock(&p->wb.lock);
}

void mcg_wb_reparent(struct mcg_pcg *child, struct mcg_pcg *parent)
{
	mcg_lock(&child->wb.lock); /* child before parent: equal ranks */
	mcg_lock(&parent->wb.lock);
	bool any = !mcg_list_empty(&child->wb.files);
	mcg_list_splice_tail(&child->wb.files, &parent->wb.files);
	__atomic_store_n(&parent->wb.nr_files, parent->wb.nr_files + child->wb.nr_files,
	                 __ATOMIC_RELAXED);
	__atomic_store_n(&child->wb.nr_files, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&child->wb.dead, 1, __ATOMIC_RELAXED);
	if (any)
		mcg_flusher_domain_dirty(parent);
	mcg_unlock(&parent->wb.lock);
	mcg_unlock(&child->wb.lock);
}

/* ------------------------------------------------------------ dirtying */

/* Count @page dirty (mapping lock held, DIRTY just set by us or again). */
static void account_dirty_locked(struct mcg_inode *in, struct mcg_fpage *page, bool dirtied)
{
	mcg_index_tag_set(&in->index, page->index, MCG_TAG_DIRTY);
	struct mcg_pcg *t = target(page);
	mcg_pcg_mod(t, MCG_PC_DIRTY_WB, 1);
	if (dirtied)
		mcg_pcg_mod(t, MCG_PC_DIRTIED, 1);
	if (in->nr_dirty++ == 0)
		domain_add_locked(in, page);
}

bool mcg_wb_page_dirty(struct mcg_inode *in, struct mcg_fpage *page)
{
	if (mcg_fpage_test(page, PG_DIRTY) || mcg_fpage_test_and_set(page, PG_DIRTY))
		return false; /* dirty already: nothing to count */
	bool acct = mcg_option(MCG_OPT_DIRTY_ACCOUNTING);
	mcg_lock(&in->lock);
	if (mcg_fpage_test(page, PG_REMOVED)) { /* truncated meanwhile: its data is gone */
		mcg_fpage_clear(page, PG_DIRTY);
		mcg_unlock(&in->lock);
		return false;
	}
	if (acct)
		mcg_fpage_set(page, PG_ACCT);
	else
		mcg_fpage_clear(page, PG_ACCT);
	account_dirty_locked(in, page, true);
	mcg_unlock(&in->lock);
	return true;
}

void mcg_wb_page_undirty_locked(struct mcg_inode *in, struct mcg_fpage *page)
{
	if (!mcg_fpage_test_and_clear(page, PG_DIRTY))
		return;
	mcg_index_tag_clear(&in->index, page->index, MCG_TAG_DIRTY);
	mcg_index_tag_clear(&in->index, page->index, MCG_TAG_TOWRITE);
	mcg_pcg_mod(target(page), MCG_PC_DIRTY_WB, -1);
	if (--in->nr_dirty == 0)
		domain_del_locked(in);
}

void mcg_wb_wait_page_locked(struct mcg_inode *in, struct mcg_fpage *page)
{
	while (mcg_fpage_test(page, PG_WRITEBACK))
		mcg_inode_wait_locked(in);
}

/* ------------------------------------------------------------ writing */

static int run_pages = RUN_PAGES; /* pages per run: RUN_PAGES, smaller in tests */

void mcg_wb_set_run_pages(int n)
{
	__atomic_store_n(&run_pages, n > 0 && n <= RUN_PAGES ? n : RUN_PAGES, __ATOMIC_RELAXED);
}

/*
 * A run: consecutive pages under writeback, and the backing write that
 * carries them (a request to the writeback I/O pool: wbio.h).  Taken and
 * ended by the writeback's thread; written by a pool thread or by it.
 */
struct run {
	struct mcg_wbio io;
	struct mcg_inode *in;
	int64_t size;    /* the file's size when the run was taken */
	bool background; /* not fsync's (buffered: start the kernel's writeback) */
	int err;         /* the write's result */
	size_t done;     /* bytes written from its start */
	int n;
	uint64_t first;
	struct mcg_fpage *pages[RUN_PAGES];
};

/*
 * Take a run of up to @max consecutive pages tagged @tag at or after
 * @start, before @end (mapping lock held): each goes from dirty to
 * writeback, pinned.
 * Return: false when there is none.
 */
static bool run_start_locked(struct mcg_inode *in, struct run *r, uint64_t start, uint64_t end,
                             unsigned tag, long max)
{
	uint64_t at;
	int most = __atomic_load_n(&run_pages, __ATOMIC_RELAXED);
	r->n = 0;
	struct mcg_fpage *page = mcg_index_next(&in->index, start, tag, &at);
	while (page && at < end && r->n < most && r->n < max) {
		if (r->n && at != r->first + (uint64_t)r->n)
			break; /* not consecutive: the next run */
		mcg_index_tag_clear(&in->index, at, MCG_TAG_TOWRITE);
		if (!mcg_fpage_test(page, PG_DIRTY)) { /* (not dirty: nothing to write) */
			page = mcg_index_next(&in->index, at + 1, tag, &at);
			continue;
		}
		if (!r->n)
			r->first = at;
		/* No copy into it is half done once WRITEBACK is set. */
		mcg_fpage_data_write_lock(page);
		mcg_fpage_clear(page, PG_DIRTY);
		mcg_fpage_set(page, PG_WRITEBACK);
		mcg_fpage_data_write_unlock(page);
		mcg_index_tag_clear(&in->index, at, MCG_TAG_DIRTY);
		mcg_index_tag_set(&in->index, at, MCG_TAG_WRITEBACK);
		struct mcg_pcg *t = target(page);
		mcg_pcg_mod(t, MCG_PC_WRITEBACK, 1); /* (dirty + writeback: no change) */
		in->nr_dirty--;
		in->nr_writeback++;
		mcg_fpage_get(page);
		r->pages[r->n++] = page;
		page = mcg_index_next(&in->index, at + 1, tag, &at);
	}
	return r->n > 0;
}

/* Write @r to the backing file (no page-cache lock held).  *@done: bytes
 * written from its start. */
static int run_write(struct mcg_inode *in, struct run *r, int64_t size, bool background,
                     size_t *done)
{
	struct iovec iov[RUN_PAGES];
	int64_t off = (int64_t)r->first << MCG_FPAGE_SHIFT;
	int64_t end = off + ((int64_t)r->n << MCG_FPAGE_SHIFT);
	bool direct = in->align > 1;
	int cnt = 0;
	size_t want = 0;
	for (int i = 0; i < r->n; i++) {
		int64_t poff = off + ((int64_t)i << MCG_FPAGE_SHIFT);
		size_t len = MCG_FPAGE_SIZE;
		if (!direct) /* buffered: not past the size */
			len = poff >= size ? 0
			                   : (size_t)MCG_MIN((int64_t)MCG_FPAGE_SIZE, size - poff);
		if (!len)
			break;
		iov[cnt].iov_base = r->pages[i]->data;
		iov[cnt].iov_len = len;
		want += len;
		cnt++;
	}
	*done = 0;
	int err = cnt ? mcg_io_pwritev(in->fd, iov, cnt, off, in->align, done) : 0;
	if (!err && direct && end > mcg_inode_size(in)) {
		/* Whole pages went out: cut the file back to its size.  The size
		 * only grows meanwhile (truncate waits for wb_lock), so a cut by
		 * another run's write never takes bytes below it: the last one
		 * to cut sets the size of the moment. */
		err = mcg_io_ftruncate(in->fd, mcg_inode_size(in));
		if (err)
			*done = 0;
	}
	if (!err && !direct) {
		*done = (size_t)(end - off); /* pages past the size have nothing to write */
		if (background && want)
			mcg_io_start_writeback(in->fd, off,
			                       (off_t)want); /* (a hint: errors come at fsync) */
	}
	return err;
}

/* The pool's request: write the run (in a pool thread, or the submitter). */
static void run_io(struct mcg_wbio *io)
{
	struct run *r = mcg_container_of(io, struct run, io);
	r->err = run_write(r->in, r, r->size, r->background, &r->done);
}

/* End @r's writeback: @done bytes reached the file, @err if not all. */
static long run_end(struct mcg_inode *in, struct run *r, size_t done, int err)
{
	long written = 0, failed = 0;
	bool rotate[RUN_PAGES];
	mcg_lock(&in->lock);
	for (int i = 0; i < r->n; i++) {
		struct mcg_fpage *page = r->pages[i];
		struct mcg_pcg *t = target(page);
		bool ok = ((size_t)(i + 1) << MCG_FPAGE_SHIFT) <= done;
		mcg_fpage_clear(page, PG_WRITEBACK);
		mcg_index_tag_clear(&in->index, page->index, MCG_TAG_WRITEBACK);
		mcg_pcg_mod(t, MCG_PC_WRITEBACK, -1);
		mcg_pcg_mod(t, MCG_PC_DIRTY_WB, -1); /* (+1 again below if it stays dirty) */
		in->nr_writeback--;
		if (ok) {
			mcg_pcg_mod(t, MCG_PC_WRITTEN, 1);
			written++;
		} else if (!mcg_fpage_test_and_set(page, PG_DIRTY)) {
			account_dirty_locked(in, page, false); /* dirty again: retried later */
			mcg_pcg_mod(t, MCG_PC_WB_ERRORS, 1);
			failed++;
		} else {
			/* dirtied meanwhile by a writer who counts it */
		}
		rotate[i] = mcg_fpage_test(page, PG_RECLAIM) && ok;
	}
	if (failed || err) {
		mcg_errseq_set(&in->wb_err, err ? err : -EIO);
		__atomic_store_n(&in->wb_errno, err ? -err : EIO, __ATOMIC_RELAXED);
		__atomic_store_n(&in->retry_ms, mcg_dirty_now_ms() + RETRY_MS, __ATOMIC_RELAXED);
	} else {
		__atomic_store_n(&in->wb_errno, 0, __ATOMIC_RELAXED);
	}
	if (!in->nr_dirty)
		domain_del_locked(in);
	mcg_inode_wake_locked(in);
	mcg_unlock(&in->lock);
	for (int i = 0; i < r->n; i++) {
		if (rotate[i])
			mcg_lru_rotate_reclaimable(r->pages[i]);
		mcg_fpage_put(r->pages[i]);
	}
	mcg_flusher_written();
	return written;
}

/*
 * Before run @r (taken with tag @tag) goes out past what the backing file
 * is known to hold (*@known bytes): make the file long enough for it and
 * for the pages tagged right after it, with no gap, at most EXTEND_MAX
 * pages and the file's size (page-rounded) - so that it and the runs after
 * it overwrite allocated blocks inside the file, which O_DIRECT writes
 * do concurrently, where a write that extends the file holds the inode
 * lock alone.  One call per stretch of consecutive dirty pages: extending
 * waits for the file's writes in flight.  Gaps stay holes.  On failure
 * (not supported, no space) the writes go out as they are and report
 * their own errors.
 */
static void extend_for(struct mcg_inode *in, struct run *r, unsigned tag, int64_t *known)
{
	int64_t end = (int64_t)(r->first + (uint64_t)r->n) << MCG_FPAGE_SHIFT;
	if (end <= *known)
		return;
	mcg_lock(&in->lock);
	uint64_t more =
	        mcg_index_tagged_span(&in->index, r->first + (uint64_t)r->n, tag, EXTEND_MAX);
	int64_t size = mcg_inode_size(in);
	mcg_unlock(&in->lock);
	int64_t want = end + (int64_t)(more << MCG_FPAGE_SHIFT);
	int64_t cap = (size + (int64_t)MCG_FPAGE_SIZE - 1) & ~(int64_t)(MCG_FPAGE_SIZE - 1);
	want = MCG_MAX(MCG_MIN(want, cap), end);
	int64_t from = (int64_t)r->first << MCG_FPAGE_SHIFT;
	*known = mcg_io_extend(in->fd, from, want) ? INT64_MAX : want; /* (failed: not again) */
}

/*
 * Write up to @nr pages (wb_lock held), with up to writeback_io_depth runs
 * in flight: take runs in file order while fewer are out, reap one as it
 * ends, until no page is left (or, background, an error stops it).  Runs
 * end in any order; each is ended on its own (run_end()), so counts and
 * errors do not depend on the order.  Return: 0 or the first error.
 */
static int write_pages(struct mcg_inode *in, long nr, enum mcg_wb_mode mode, long *written)
{
	unsigned tag = mode == MCG_WB_SYNC ? MCG_TAG_TOWRITE : MCG_TAG_DIRTY;
	uint64_t start = mode == MCG_WB_BACKGROUND ? in->wb_index : 0, end = UINT64_MAX;
	bool wrapped = start == 0 || mode == MCG_WB_BEHIND, more = true;
	int first_err = 0;
	long left = nr, total = 0;
	int depth = (int)MCG_MIN(mcg_option(MCG_OPT_WRITEBACK_IO_DEPTH), MCG_WBIO_MAX_THREADS);
	long most = __atomic_load_n(&run_pages, __ATOMIC_RELAXED);
	mcg_lock(&in->lock);
	long dirty = in->nr_dirty;
	if (mode == MCG_WB_BEHIND) { /* the range, taken: writers add to a new one */
		start = in->behind_from;
		end = in->behind_to;
		in->behind_to = 0;
		dirty = MCG_MIN(dirty, (long)(end - start));
	}
	mcg_unlock(&in->lock);
	if (mode == MCG_WB_BEHIND && !end)
		goto out;
	/* Runs: one on the stack (enough for one at a time: writeback needs
	 * no memory to progress), several from the heap when more than one
	 * run is to be written and memory allows. */
	struct run one, *runs = &one, *idle[MCG_WBIO_MAX_THREADS];
	if (depth > 1 && MCG_MIN(left, dirty) > most && !mcg_fault_should_fail())
		runs = mcg_malloc(sizeof(struct run) * (size_t)depth);
	if (runs == &one || !runs) {
		runs = &one;
		depth = 1;
	}
	int nidle = 0;
	for (int i = 0; i < depth; i++)
		idle[nidle++] = &runs[i];
	int64_t known = in->align > 1 && depth > 1 ? 0 : INT64_MAX; /* (0: ask the file) */
	struct mcg_wbio_batch batch;
	mcg_wbio_batch_init(&batch);
	for (;;) {
		while (more && nidle && left > 0) {
			struct run *r = idle[--nidle];
			mcg_lock(&in->lock);
			bool got = run_start_locked(in, r, start, end, tag, left);
			if (!got && !wrapped) { /* background: from the start of the file once */
				wrapped = true;
				start = 0;
				got = run_start_locked(in, r, start, end, tag, left);
			}
			r->size = mcg_inode_size(in);
			mcg_unlock(&in->lock);
			if (!got) {
				idle[nidle++] = r;
				more = false;
				break;
			}
			left -= r->n;
			start = r->first + (uint64_t)r->n;
			extend_for(in, r, tag, &known);
			r->in = in;
			r->background = mode != MCG_WB_SYNC;
			r->io.fn = run_io;
			mcg_wbio_submit(&batch, &r->io, depth);
		}
		struct mcg_wbio *io = mcg_wbio_reap(&batch);
		if (!io)
			break;
		struct run *r = mcg_container_of(io, struct run, io);
		total += run_end(in, r, r->done, r->err);
		idle[nidle++] = r;
		if (r->err) {
			if (!first_err)
				first_err = r->err;
			if (mode != MCG_WB_SYNC)
				more = false; /* retried after RETRY_MS */
		}
	}
	mcg_wbio_batch_destroy(&batch);
	if (runs != &one)
		mcg_free(runs);
	if (mode == MCG_WB_BACKGROUND)
		in->wb_index = start;
	if (mode == MCG_WB_BEHIND && !first_err && left <= 0 && start < end)
		mcg_wb_behind(in, start, end); /* its turn ended first: the rest next turn */
out:
	if (written)
		*written = total;
	return first_err;
}

void mcg_wb_behind(struct mcg_inode *in, uint64_t from, uint64_t to)
{
	mcg_lock(&in->lock);
	struct mcg_pcg *p = in->nr_dirty ? in->wb_pcg : NULL; /* (clean: nothing to write) */
	if (p) {
		if (in->behind_to) { /* one range: writers of one file add to it */
			from = MCG_MIN(from, in->behind_from);
			to = MCG_MAX(to, in->behind_to);
		}
		in->behind_from = from;
		__atomic_store_n(&in->behind_to, to, __ATOMIC_RELAXED);
	}
	mcg_unlock(&in->lock);
	if (p) /* (the file keeps its domain's pcg: referenced while it lives) */
		mcg_flusher_queue(p, MCG_WB_WORK_BEHIND);
}

int mcg_wb_write_file(struct mcg_inode *in, long nr_pages, enum mcg_wb_mode mode, long *written)
{
	if (written)
		*written = 0;
	if (mode == MCG_WB_SYNC) {
		mcg_lock(&in->wb_lock);
	} else { /* background, write-behind */
		if (mcg_config_debug)
			mcg_lock_check_acquire_(MCG_RANK_FILE_WB);
		if (pthread_mutex_trylock(&in->wb_lock.mutex)) {
			if (mcg_config_debug)
				mcg_lock_check_release_(MCG_RANK_FILE_WB);
			return -EBUSY;
		}
	}
	int err = write_pages(in, nr_pages, mode, written);
	mcg_unlock(&in->wb_lock);
	return err;
}

int mcg_wb_flush(struct mcg_inode *in)
{
	mcg_lock(&in->wb_lock); /* after any writeback in flight on the file */
	/* Tag what is dirty now; what is dirtied from here on waits for the next. */
	uint64_t at = 0, next = 0;
	for (bool more = true; more;) {
		mcg_lock(&in->lock);
		for (int k = 0; k < TAG_BATCH; k++) {
			if (!mcg_index_next(&in->index, next, MCG_TAG_DIRTY, &at)) {
				more = false;
				break;
			}
			mcg_index_tag_set(&in->index, at, MCG_TAG_TOWRITE);
			next = at + 1;
		}
		mcg_unlock(&in->lock);
	}
	int err = write_pages(in, __LONG_MAX__, MCG_WB_SYNC, NULL);
	mcg_unlock(&in->wb_lock);
	return err;
}

int mcg_wb_fsync(struct mcg_inode *in, bool datasync)
{
	int err = mcg_wb_flush(in);
	int serr = datasync ? mcg_io_fdatasync(in->fd) : mcg_io_fsync(in->fd);
	if (serr)
		mcg_errseq_set(&in->wb_err, serr);
	return err ? err : serr;
}

/* ------------------------------------------------------------ the flushers' work */

/* The chunk a file gets per turn: min(write_bw / 2, limit / 8), 32..1024 pages. */
static long chunk_pages(struct mcg_pcg *p)
{
	long bw = (long)__atomic_load_n(&p->wb.avg_write_bw, __ATOMIC_RELAXED) / 2;
	long lim = (long)__atomic_load_n(&p->wb.dirty_limit, __ATOMIC_RELAXED) / 8;
	long c = lim > 0 ? MCG_MIN(bw, lim) : bw;
	return MCG_MAX(MCG_MIN(c, 1024l), 32l);
}

/*
 * The first file of @p's list for @work, referenced,
 * moved to the tail (files take turns); NULL if none.  Files waiting after
 * an error are passed over; periodic work takes only expired files.
 */
static struct mcg_inode *pick_file(struct mcg_pcg *p, unsigned work)
{
	uint64_t now = mcg_dirty_now_ms();
	struct mcg_inode *found = NULL;
	mcg_lock(&p->wb.lock);
	if (!p->wb.dead) {
		mcg_list_for_each (pos, &p->wb.files) {
			struct mcg_inode *in = mcg_list_entry(pos, struct mcg_inode, wb_link);
			if (__atomic_load_n(&in->retry_ms, __ATOMIC_RELAXED) > now)
				continue;
			if (work == MCG_WB_WORK_PERIODIC &&
			    !mcg_dirty_expired(MCG_READ_ONCE(in->dirtied_ms), now))
				continue;
			if (work == MCG_WB_WORK_BEHIND &&
			    !__atomic_load_n(&in->behind_to, __ATOMIC_RELAXED))
				continue;
			found = in;
			break;
		}
		if (found) {
			mcg_inode_get(found);
			mcg_list_move_tail(&found->wb_link, &p->wb.files);
		}
	}
	mcg_unlock(&p->wb.lock);
	return found;
}

/* Does @p have a file periodic writeback (@work PERIODIC) or write-behind
 * (BEHIND) should write now? */
static bool work_left(struct mcg_pcg *p, unsigned work)
{
	uint64_t now = mcg_dirty_now_ms();
	bool any = false;
	mcg_lock(&p->wb.lock);
	mcg_list_for_each (pos, &p->wb.files) {
		struct mcg_inode *in = mcg_list_entry(pos, struct mcg_inode, wb_link);
		if (__atomic_load_n(&in->retry_ms, __ATOMIC_RELAXED) > now)
			continue;
		if (work == MCG_WB_WORK_PERIODIC
		            ? mcg_dirty_expired(MCG_READ_ONCE(in->dirtied_ms), now)
		            : __atomic_load_n(&in->behind_to, __ATOMIC_RELAXED) != 0) {
			any = true;
			break;
		}
	}
	mcg_unlock(&p->wb.lock);
	return any;
}

static long nr_files(struct mcg_pcg *p)
{
	return __atomic_load_n(&p->wb.nr_files, __ATOMIC_RELAXED);
}

/* One chunk of each of @p's files for @work (at most a round). Return: pages written. */
static long write_round(struct mcg_pcg *p, unsigned work)
{
	long total = 0, files = nr_files(p), chunk = chunk_pages(p);
	for (long f = 0; f < files; f++) {
		struct mcg_inode *in = pick_file(p, work);
		if (!in)
			break;
		long w = 0, n = work == MCG_WB_WORK_PERIODIC ? __LONG_MAX__
		                : work == MCG_WB_WORK_BEHIND ? BEHIND_TURN
		                                             : chunk;
		enum mcg_wb_mode mode =
		        work == MCG_WB_WORK_BEHIND ? MCG_WB_BEHIND : MCG_WB_BACKGROUND;
		if (mcg_wb_write_file(in, n, mode, &w) == -EBUSY) {
			/* Another writeback has the file (an fsync, a flusher writing
			 * it for another domain): wait for it, as the kernel waits
			 * on I_SYNC, then write what is left - giving up here would
			 * drop the work while the domain is still over. */
			mcg_lock(&in->wb_lock);
			mcg_unlock(&in->wb_lock);
			mcg_wb_write_file(in, n, mode, &w);
		}
		total += w;
		mcg_inode_put(in);
		if (work == MCG_WB_WORK_BACKGROUND && !mcg_dirty_over_bg(p))
			break;
	}
	return total;
}

/* Write a chunk of other domains' files (@p's dirty pages sit in them). */
static long write_foreign(struct mcg_pcg *p, unsigned work)
{
	long total = 0;
	for (struct mcg_pcg *d = mcg_flusher_next_dirty(NULL); d; d = mcg_flusher_next_dirty(d)) {
		if (d == p)
			continue;
		total += write_round(d, work);
		if (work == MCG_WB_WORK_BACKGROUND && !mcg_dirty_over_bg(p)) {
			mcg_pcg_put(d);
			break;
		}
	}
	return total;
}

unsigned mcg_wb_domain_write(struct mcg_pcg *p, unsigned work)
{
	unsigned more = 0;
	if (work & MCG_WB_WORK_RECLAIM) {
		if (!write_round(p, MCG_WB_WORK_RECLAIM))
			write_foreign(p, MCG_WB_WORK_RECLAIM);
	}
	if ((work & MCG_WB_WORK_BACKGROUND) && mcg_dirty_over_bg(p)) {
		long w = write_round(p, MCG_WB_WORK_BACKGROUND);
		if (!w && mcg_dirty_over_bg(p))
			w = write_foreign(p, MCG_WB_WORK_BACKGROUND);
		if (w && mcg_dirty_over_bg(p))
			more |= MCG_WB_WORK_BACKGROUND;
	}
	if (work & MCG_WB_WORK_PERIODIC) {
		if (write_round(p, MCG_WB_WORK_PERIODIC) && work_left(p, MCG_WB_WORK_PERIODIC))
			more |= MCG_WB_WORK_PERIODIC;
	}
	if (work & MCG_WB_WORK_BEHIND) {
		write_round(p, MCG_WB_WORK_BEHIND);
		if (work_left(p, MCG_WB_WORK_BEHIND))
			more |= MCG_WB_WORK_BEHIND;
	}
	return more;
}

void mcg_wb_reclaim_wait(struct mcg_pcg *p, unsigned long nr_dirty, unsigned ms)
{
	uint64_t gen = mcg_flusher_gen();
	mcg_flusher_queue(p, MCG_WB_WORK_RECLAIM);
	mcg_flusher_wait_gen(gen, ms);
}

static void sync_one(struct mcg_inode *in, void *arg)
{
	int *first = arg;
	mcg_lock(&in->lock);
	bool dirty = in->nr_dirty > 0;
	mcg_unlock(&in->lock);
	if (!dirty)
		return;
	int err = mcg_wb_fsync(in, true);
	if (err && !*first)
		*first = err;
}

int mcg_wb_sync_all(void)
{
	int first = 0;
	mcg_inode_for_each(sync_one, &first);
	return first;
}
