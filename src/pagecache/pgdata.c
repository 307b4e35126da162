/* SPDX-License-Identifier: MIT */
/*
 * pagecache/pgdata.c - cached pages' data from 2 MiB blocks (see pgdata.h
 * for why and the invariants).
 *
 * Locks: pgdata_lock (MCG_RANK_LEAF) guards the list of blocks with free
 * pages and every block's stack; mcg_os_map/unmap run without it, the
 * purge's madvise calls with it held (a page being given back must not be
 * handed out meanwhile).
 */
#include "pagecache/pgdata.h"

#include <pthread.h>
#include <stdint.h>

#include "base/compiler.h"
#include "base/fault.h"
#include "base/list.h"
#include "base/lock.h"
#include "base/log.h"
#include "os/os.h"

#define BLOCK_SIZE (2ul << 20)
#define DATA_PAGE 4096ul
#define PAGES_PER_BLOCK (BLOCK_SIZE / DATA_PAGE) /* the header's page included */
#define PURGE_FREE (PAGES_PER_BLOCK / 2)         /* a block this free keeps no free page resident */

/* A block's first page. */
struct block {
	struct mcg_list link; /* on partial while it has free pages (pgdata_lock) */
	unsigned nfree;       /* pages on the stack (pgdata_lock) */
	unsigned npurged;     /* free[0, npurged) given back to the OS (pgdata_lock) */
	bool small;           /* MADV_NOHUGEPAGE since its first purge (pgdata_lock) */
	uint16_t free[PAGES_PER_BLOCK - 1];
};

_Static_assert(sizeof(struct block) <= DATA_PAGE, "a block's header fits its first page");

static struct mcg_list partial = MCG_LIST_INIT(partial);
static size_t nr_blocks; /* (atomic) */
static mcg_lock_t pgdata_lock;
static pthread_once_t pgdata_once = PTHREAD_ONCE_INIT;
static int pgdata_ready; /* (atomic) pgdata_lock initialised */
static bool fork_held;

static void pgdata_init_once(void)
{
	mcg_lock_init(&pgdata_lock, MCG_RANK_LEAF);
	__atomic_store_n(&pgdata_ready, 1, __ATOMIC_RELEASE);
}

/* A page off the first partial block, or NULL (none: pgdata_lock held). */
static void *pop_locked(void)
{
	if (mcg_list_empty(&partial))
		return NULL;
	struct block *b = mcg_list_entry(partial.next, struct block, link);
	unsigned k = b->free[--b->nfree];
	if (b->npurged > b->nfree) /* a purged page: the OS faults it in anew */
		b->npurged = b->nfree;
	if (!b->nfree)
		mcg_list_del(&b->link);
	return (char *)b + (size_t)k * DATA_PAGE;
}

/* Give back to the OS the free pages of @b not given back yet (pgdata_lock
 * held: none of them can be taken meanwhile).  Each page once per time it
 * is freed, so the work is one call per page freed into a block this free. */
static void purge_locked(struct block *b)
{
	if (!b->small) { /* the purge splits its huge page: no huge page again */
		mcg_os_hugepage(b, BLOCK_SIZE, false);
		b->small = true;
	}
	for (unsigned i = b->npurged; i < b->nfree; i++)
		mcg_os_decommit((char *)b + (size_t)b->free[i] * DATA_PAGE, DATA_PAGE);
	b->npurged = b->nfree;
}

void *mcg_pgdata_alloc(void)
{
	pthread_once(&pgdata_once, pgdata_init_once);
	if (mcg_fault_should_fail())
		return NULL;
	mcg_lock(&pgdata_lock);
	void *p = pop_locked();
	mcg_unlock(&pgdata_lock);
	if (p)
		return p;
	struct block *b = mcg_os_map(BLOCK_SIZE, BLOCK_SIZE);
	if (!b)
		return NULL;
	mcg_os_hugepage(b, BLOCK_SIZE, true);
	b->nfree = 0;
	b->npurged = 0;
	b->small = false;
	for (unsigned k = PAGES_PER_BLOCK - 1; k >= 1; k--) /* low pages first */
		b->free[b->nfree++] = (uint16_t)k;
	__atomic_add_fetch(&nr_blocks, 1, __ATOMIC_RELAXED);
	mcg_lock(&pgdata_lock);
	mcg_list_add(&b->link, &partial); /* first: the next allocations fill it */
	p = pop_locked();
	mcg_unlock(&pgdata_lock);
	return p;
}

void mcg_pgdata_free(void *data)
{
	struct block *b = (struct block *)((uintptr_t)data & ~(uintptr_t)(BLOCK_SIZE - 1));
	size_t k = ((uintptr_t)data - (uintptr_t)b) / DATA_PAGE;
	MCG_BUG_ON(k == 0 || ((uintptr_t)data & (DATA_PAGE - 1)));
	mcg_lock(&pgdata_lock);
	if (!b->nfree)
		mcg_list_add_tail(&b->link, &partial);
	b->free[b->nfree++] = (uint16_t)k;
	bool empty = b->nfree == PAGES_PER_BLOCK - 1;
	if (empty)
		mcg_list_del(&b->link);
	else if (b->nfree >= PURGE_FREE)
		purge_locked(b);
	mcg_unlock(&pgdata_lock);
	if (empty) {
		__atomic_sub_fetch(&nr_blocks, 1, __ATOMIC_RELAXED);
		mcg_os_unmap(b, BLOCK_SIZE);
	}
}

size_t mcg_pgdata_blocks(void) { return __atomic_load_n(&nr_blocks, __ATOMIC_RELAXED); }

void mcg_pgdata_fork_lock(void)
{
	fork_held = __atomic_load_n(&pgdata_ready, __ATOMIC_ACQUIRE);
	if (fork_held)
		mcg_lock_raw(&pgdata_lock);
}

void mcg_pgdata_fork_unlock(void)
{
	if (fork_held)
		mcg_unlock_raw(&pgdata_lock);
	fork_held = false;
}
