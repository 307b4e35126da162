/* SPDX-License-Identifier: MIT */
/*
 * pagecache/readahead.c - reading pages into the cache, and the readahead
 * window (the kernel's ondemand readahead, see filemap.h).
 *
 * A run of missing consecutive pages is allocated, charged and put in the
 * index LOCKED (not uptodate: other readers and writers of them wait), read
 * with one preadv, then made UPTODATE (the part past the end of the file
 * zeroed) or, when the read failed, taken out again - a later read retries.
 *
 * Locks: the mapping lock for the flags and the index; none during the read.
 */
#include <errno.h>
#include <string.h>

#include "base/log.h"
#include "pagecache/filemap.h"
#include "pagecache/io.h"
#include "pagecache/lru.h"
#include "pagecache/pcg.h"

#define READ_RUN 32

unsigned mcg_ra_init_size(uint64_t req, unsigned max)
{
	uint64_t n = 1;
	while (n < req)
		n <<= 1; /* roundup_pow_of_two */
	if (n <= max / 32)
		n *= 4;
	else if (n <= max / 4)
		n *= 2;
	else
		n = max;
	return (unsigned)MCG_MIN(n, (uint64_t)max);
}

unsigned mcg_ra_next_size(unsigned cur, unsigned max)
{
	if (cur < max / 16)
		return 4 * cur;
	if (cur <= max / 2)
		return 2 * cur;
	return max;
}

/* Read the run @pages[0, @n) (inserted, LOCKED) at page @first. */
static int read_run(struct mcg_inode *in, struct mcg_fpage **pages, int n, uint64_t first,
                    uint64_t marker)
{
	struct iovec iov[READ_RUN];
	for (int i = 0; i < n; i++) {
		iov[i].iov_base = pages[i]->data;
		iov[i].iov_len = MCG_FPAGE_SIZE;
	}
	ssize_t got = mcg_io_preadv(in->fd, iov, n, (off_t)(first << MCG_FPAGE_SHIFT), in->align);
	struct mcg_list dispose;
	struct mcg_index_node *nodes = NULL;
	mcg_list_init(&dispose);
	mcg_lock(&in->lock);
	for (int i = 0; i < n; i++) {
		struct mcg_fpage *p = pages[i];
		if (got < 0) {
			mcg_fpage_set(p, PG_ERROR);
			mcg_fpage_clear(p, PG_LOCKED);
			if (!mcg_fpage_test(p, PG_REMOVED))
				mcg_inode_remove_locked(in, p, &dispose, &nodes);
			continue;
		}
		/* Past the end of the backing data: zeros (a hole, or not written yet). */
		int64_t valid = (int64_t)got - ((int64_t)i << MCG_FPAGE_SHIFT);
		if (valid < (int64_t)MCG_FPAGE_SIZE)
			memset((char *)p->data + MCG_MAX(valid, (int64_t)0), 0,
			       MCG_FPAGE_SIZE - (size_t)MCG_MAX(valid, (int64_t)0));
		mcg_fpage_set(p, PG_UPTODATE | (first + (uint64_t)i == marker ? PG_READAHEAD : 0));
		mcg_fpage_clear(p, PG_LOCKED);
	}
	mcg_inode_wake_locked(in);
	mcg_unlock(&in->lock);
	mcg_index_free_nodes(nodes);
	mcg_fpage_dispose(&dispose);
	for (int i = 0; i < n; i++)
		mcg_fpage_put(pages[i]);
	return got < 0 ? (int)got : 0;
}

int mcg_ra_read(struct mcg_inode *in, struct mcg_pcg *pcg, uint64_t start, uint64_t nr,
                uint64_t marker, uint64_t demand_end)
{
	int64_t size = mcg_inode_size(in);
	if (size <= 0)
		return 0;
	uint64_t end = MCG_MIN(start + nr, (uint64_t)((size - 1) >> MCG_FPAGE_SHIFT) + 1);
	/* Readahead does not reclaim: it reads ahead into the room the group
	 * has (a read at its limit reads what it asked for). */
	if (end > demand_end + 1) {
		long room = mcg_pcg_margin(pcg);
		uint64_t first_ahead = MCG_MAX(start, demand_end + 1);
		if (room < (long)(end - first_ahead))
			end = first_ahead + (uint64_t)MCG_MAX(room, 0l);
	}
	struct mcg_fpage *pages[READ_RUN];
	int err = 0;
	uint64_t i = start;
	while (i < end) {
		int n = 0;
		uint64_t first = i;
		for (; i < end && n < READ_RUN; i++) {
			struct mcg_fpage *p = mcg_fpage_alloc(pcg, in, i, 0);
			if (!p) {
				if (i <= demand_end)
					err = -ENOMEM;
				end = i; /* no memory: read ahead no further */
				break;
			}
			mcg_fpage_set(p, PG_LOCKED);
			int ret = mcg_inode_add_page(in, p);
			if (ret) {
				mcg_fpage_clear(p, PG_LOCKED);
				mcg_fpage_put(p);
				if (ret != -EEXIST) {
					if (i <= demand_end)
						err = ret;
					end = i;
				} else {
					i++; /* cached already: the run ends before it */
				}
				break;
			}
			if (i > demand_end)
				mcg_pcg_mod(p->pcg, MCG_PC_READAHEAD, 1);
			pages[n++] = p;
		}
		if (n) {
			int ret = read_run(in, pages, n, first, marker);
			if (ret && first <= demand_end && !err)
				err = ret;
		}
	}
	return err;
}

int mcg_ra_miss(struct mcg_file *f, struct mcg_pcg *pcg, uint64_t index, uint64_t req)
{
	struct mcg_ra_state *ra = &f->ra;
	uint64_t start = index, size = MCG_MIN(req, (uint64_t)MCG_RA_MAX_PAGES),
	         marker = UINT64_MAX;
	mcg_spin_lock(&f->lock);
	bool have_prev = __atomic_load_n(&ra->have_prev, __ATOMIC_RELAXED);
	uint64_t prev = __atomic_load_n(&ra->prev, __ATOMIC_RELAXED);
	bool seq =
	        (!have_prev && index == 0) || (have_prev && (index == prev + 1 || index == prev));
	if (ra->size && index == ra->start + ra->size) { /* at the end of the window: the next */
		ra->start = index;
		ra->size = mcg_ra_next_size(ra->size, MCG_RA_MAX_PAGES);
		ra->async_size = ra->size;
		seq = true;
	} else if (seq) { /* sequential from here: a first window */
		ra->start = index;
		ra->size = mcg_ra_init_size(req, MCG_RA_MAX_PAGES);
		ra->async_size = ra->size > req ? ra->size - (unsigned)req : ra->size;
	}
	if (seq) {
		start = ra->start;
		size = ra->size;
		marker = ra->start + ra->size - ra->async_size;
	}
	mcg_spin_unlock(&f->lock);
	return mcg_ra_read(f->inode, pcg, start,
	                   MCG_MAX(size, MCG_MIN(req, (uint64_t)MCG_RA_MAX_PAGES)), marker,
	                   index + MCG_MIN(req, (uint64_t)MCG_RA_MAX_PAGES) - 1);
}

void mcg_ra_marker(struct mcg_file *f, struct mcg_pcg *pcg, uint64_t index)
{
	struct mcg_ra_state *ra = &f->ra;
	mcg_spin_lock(&f->lock);
	if (ra->size && index == ra->start + ra->size - ra->async_size) {
		ra->start += ra->size; /* the window after the current one */
	} else {
		ra->start = index + 1; /* a marker without our state: start over after it */
		if (!ra->size)
			ra->size = mcg_ra_init_size(1, MCG_RA_MAX_PAGES);
	}
	ra->size = mcg_ra_next_size(ra->size, MCG_RA_MAX_PAGES);
	ra->async_size = ra->size;
	uint64_t start = ra->start, size = ra->size;
	mcg_spin_unlock(&f->lock);
	mcg_ra_read(f->inode, pcg, start, size, start, index); /* (all of it read ahead) */
}

void mcg_ra_done(struct mcg_file *f, uint64_t last)
{
	/* A hint, as the kernel's prev_pos: no lock on the hit path. */
	__atomic_store_n(&f->ra.prev, last, __ATOMIC_RELAXED);
	if (!__atomic_load_n(&f->ra.have_prev, __ATOMIC_RELAXED))
		__atomic_store_n(&f->ra.have_prev, true, __ATOMIC_RELAXED);
}
