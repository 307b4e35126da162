/* SPDX-License-Identifier: MIT */
/*
 * pagecache/inode.c - cached files: the table by (device, inode number),
 * lookup at open, eviction, and the page index's insert / remove / wait
 * (see inode.h).
 *
 * Every page holds a reference to its file, so a file lives while any of
 * its pages does (in the index, isolated by reclaim, or pinned by a
 * reader); a file with no page and no handle is evicted at once.
 *
 * Locks: the table lock (MCG_RANK_INODES) guards the chains and the
 * refcounts' zero crossing (a put that may reach zero takes it, so a
 * lookup never revives a file being evicted); the mapping lock
 * (MCG_RANK_MAPPING) the rest (inode.h).
 */
#include "pagecache/inode.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "base/fault.h"
#include "base/log.h"
#include "memcg/kmalloc.h"
#include "os/os.h"
#include "pagecache/io.h"
#include "pagecache/lru.h"
#include "pagecache/pcg.h"
#include "pagecache/writeback.h"

#define TABLE_SIZE 4096u

static mcg_lock_t table_lock;
static struct mcg_inode *table[TABLE_SIZE];
static long nr_inodes;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init_once(void) { mcg_lock_init(&table_lock, MCG_RANK_INODES); }

void mcg_inode_init(void) { pthread_once(&table_once, table_init_once); }

void mcg_inode_fork_lock(void) { mcg_lock_raw(&table_lock); }

void mcg_inode_fork_unlock(void) { mcg_unlock_raw(&table_lock); }

static unsigned bucket(dev_t dev, ino_t ino)
{
	uint64_t h =
	        ((uint64_t)dev * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)ino * 0xc2b2ae3d27d4eb4full);
	return (unsigned)(h >> 40) % TABLE_SIZE;
}

static struct mcg_inode *find_locked(dev_t dev, ino_t ino)
{
	for (struct mcg_inode *in = table[bucket(dev, ino)]; in; in = in->hash_next)
		if (in->dev == dev && in->ino == ino)
			return in;
	return NULL;
}

static void inode_free(struct mcg_inode *in)
{
	MCG_BUG_ON(in->index.nr || in->nr_dirty || in->nr_writeback);
	mcg_io_close(in->fd);
	if (in->wb_pcg)
		mcg_pcg_put(in->wb_pcg);
	pthread_cond_destroy(&in->cond);
	mcg_lock_destroy(&in->lock);
	mcg_lock_destroy(&in->wb_lock);
	mcg_rwlock_destroy(&in->rw);
	mcg_free(in);
}

int mcg_inode_get_fd(int fd, const char *path, bool direct_ok, struct mcg_inode **out, bool *owned)
{
	mcg_inode_init();
	struct stat st;
	int err = mcg_io_fstat(fd, &st);
	if (err)
		return err;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	mcg_lock(&table_lock);
	struct mcg_inode *in = find_locked(st.st_dev, st.st_ino);
	if (in)
		mcg_inode_get(in);
	mcg_unlock(&table_lock);
	if (in) {
		*out = in;
		*owned = false;
		return 0;
	}
	/* A new one: its O_DIRECT alignment, probed before the table sees it. */
	unsigned align = 1;
	if (direct_ok) {
		int a = mcg_io_direct_align(path, fd);
		if (a < 0)
			return a;
		if (a > 0 && !mcg_io_set_direct(fd))
			align = (unsigned)a;
	}
	in = mcg_fault_should_fail() ? NULL : mcg_malloc(sizeof(*in));
	if (!in)
		return -ENOMEM;
	memset(in, 0, sizeof(*in));
	mcg_lock_init(&in->lock, MCG_RANK_MAPPING);
	pthread_cond_init(&in->cond, NULL);
	mcg_index_init(&in->index);
	mcg_rwlock_init(&in->rw, MCG_RANK_FILE_RW);
	mcg_lock_init(&in->wb_lock, MCG_RANK_FILE_WB);
	in->size = st.st_size;
	in->fd = fd;
	in->align = align;
	in->dev = st.st_dev;
	in->ino = st.st_ino;
	in->refcnt = 1;
	mcg_list_init(&in->wb_link);
	mcg_lock(&table_lock);
	struct mcg_inode *other = find_locked(st.st_dev, st.st_ino);
	if (other) {
		mcg_inode_get(other);
	} else {
		unsigned b = bucket(st.st_dev, st.st_ino);
		in->hash_next = table[b];
		__atomic_store_n(&table[b], in, __ATOMIC_RELAXED); /* for_each's peek */
		nr_inodes++;
	}
	mcg_unlock(&table_lock);
	if (other) { /* another open won the race: use its file */
		in->fd = -1;
		inode_free(in);
		in = other;
	}
	*out = in;
	*owned = !other;
	return 0;
}

void mcg_inode_put(struct mcg_inode *in)
{
	long old = __atomic_load_n(&in->refcnt, __ATOMIC_RELAXED);
	while (old > 1) { /* not the last: no lock */
		if (__atomic_compare_exchange_n(&in->refcnt, &old, old - 1, true, __ATOMIC_RELEASE,
		                                __ATOMIC_RELAXED))
			return;
	}
	mcg_lock(&table_lock);
	if (__atomic_sub_fetch(&in->refcnt, 1, __ATOMIC_ACQ_REL)) {
		mcg_unlock(&table_lock);
		return;
	}
	struct mcg_inode **pp = &table[bucket(in->dev, in->ino)];
	while (*pp != in)
		pp = &(*pp)->hash_next;
	__atomic_store_n(pp, in->hash_next, __ATOMIC_RELAXED); /* for_each's peek */
	nr_inodes--;
	mcg_unlock(&table_lock);
	inode_free(in);
}

void mcg_inode_size_extend(struct mcg_inode *in, int64_t end)
{
	int64_t old = __atomic_load_n(&in->size, __ATOMIC_RELAXED);
	while (old < end && !__atomic_compare_exchange_n(&in->size, &old, end, true,
	                                                 __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

struct mcg_fpage *mcg_inode_find_get(struct mcg_inode *in, uint64_t index)
{
	mcg_lock(&in->lock);
	struct mcg_fpage *page = mcg_index_lookup(&in->index, index);
	if (page)
		mcg_fpage_get(page);
	mcg_unlock(&in->lock);
	return page;
}

int mcg_inode_add_page(struct mcg_inode *in, struct mcg_fpage *page)
{
	struct mcg_index_preload pl = {0};
	int err;
	mcg_lock(&in->lock);
	for (;;) {
		unsigned need = mcg_index_nodes_needed(&in->index, page->index);
		if (pl.n >= need || mcg_index_lookup(&in->index, page->index))
			break;
		mcg_unlock(&in->lock);
		err = mcg_index_preload(&pl, need);
		mcg_lock(&in->lock);
		if (err) {
			mcg_unlock(&in->lock);
			mcg_index_preload_end(&pl);
			return err;
		}
	}
	err = mcg_index_insert_aux(&in->index, page->index, page, page->data, &pl);
	if (!err) {
		mcg_fpage_get(page); /* the index's */
		in->nr_pages++;
		mcg_lru_add(page);
	}
	mcg_unlock(&in->lock);
	mcg_index_preload_end(&pl);
	return err;
}

void mcg_inode_remove_locked(struct mcg_inode *in, struct mcg_fpage *page, struct mcg_list *dispose,
                             struct mcg_index_node **freed)
{
	MCG_BUG_ON(mcg_fpage_test(page, PG_WRITEBACK));
	if (mcg_fpage_test(page, PG_DIRTY))
		mcg_wb_page_undirty_locked(in, page);
	mcg_index_delete(&in->index, page->index, freed);
	mcg_fpage_set(page, PG_REMOVED);
	mcg_lru_del(page);
	in->nr_pages--;
	mcg_fpage_put_locked(page, dispose);
}

void mcg_inode_wait_locked(struct mcg_inode *in) { pthread_cond_wait(&in->cond, &in->lock.mutex); }

void mcg_inode_for_each(void (*fn)(struct mcg_inode *in, void *arg), void *arg)
{
	mcg_inode_init();
	for (unsigned b = 0; b < TABLE_SIZE; b++) {
		/* An empty chain is passed by without the lock: a file added to
		 * it after this peek is one that a locked look could have missed
		 * as well, had it come a moment later. */
		if (!__atomic_load_n(&table[b], __ATOMIC_RELAXED))
			continue;
		mcg_lock(&table_lock);
		struct mcg_inode *in = table[b];
		if (in)
			mcg_inode_get(in);
		mcg_unlock(&table_lock);
		while (in) {
			fn(in, arg);
			mcg_lock(&table_lock);
			struct mcg_inode *next =
			        in->hash_next; /* in is referenced: still chained */
			if (next)
				mcg_inode_get(next);
			mcg_unlock(&table_lock);
			mcg_inode_put(in);
			in = next;
		}
	}
}

long mcg_inode_count(void)
{
	mcg_inode_init();
	mcg_lock(&table_lock);
	long n = nr_inodes;
	mcg_unlock(&table_lock);
	return n;
}
