/* SPDX-License-Identifier: MIT */
/*
 * pagecache/page.h - a cached page: a descriptor (the kernel's struct
 * folio, one 4 KiB page) and its 4 KiB of data, both from slab caches.
 *
 * State (flags, atomic): UPTODATE once its data is valid; LOCKED while it is
 * read in (then UPTODATE or ERROR); DIRTY and WRITEBACK as the kernel's
 * (WRITEBACK: its data is being written and must not change - "stable
 * pages": a writer waits); LRU/ACTIVE/REFERENCED for the file LRU;
 * READAHEAD marks the page whose read starts the next readahead window;
 * REMOVED once it left its file's index; RECLAIM: reclaim found it dirty or
 * under writeback and wants it at the inactive tail when written; ACCT: its
 * dirty or writeback state is counted at the group levels (pcg.h).
 *
 * References (refcnt, atomic): the index holds one while the page is in it;
 * each user that looked it up under the mapping lock holds one while it
 * writes it or waits on it.  A cached read holds none: it finds the page
 * in a read section (rcu.h) and copies it there.  When the last reference
 * goes the page is retired - freed (its charge given back) once no read
 * section can still hold it, at once when none is open - never under a
 * page-cache lock: removal hands pages to the caller's dispose list.
 *
 * Data lock (rw spin, MCG_RANK_PAGE_DATA): the locked read path's readers
 * share it while they copy out, a writer holds it alone while it copies in;
 * writeback sets WRITEBACK holding it alone, so no copy is half done when
 * the I/O starts, and writers test WRITEBACK under it.  A cached read (in a
 * read section keyed by the page's file and index, rcu.h) does not take
 * it: it checks that no one holds it alone (mcg_fpage_data_writer()) and
 * copies; whoever changes the data holds it alone and then waits for the
 * sections keyed to the page (mcg_fpage_data_change_lock()) - one of the
 * two sees the other (both sequentially consistent), so no copy out
 * overlaps a copy in.
 *
 * Who changes what: DIRTY is set by whoever dirties the page (an atomic
 * test-and-set; only the one that set it tags and counts, under the
 * mapping lock), cleared under the mapping lock; WRITEBACK, UPTODATE,
 * LOCKED, ERROR, REMOVED under the mapping lock; LRU and ACTIVE under the
 * page's lruvec lock; REFERENCED with atomics anywhere.
 */
#ifndef MCG_PAGECACHE_PAGE_H
#define MCG_PAGECACHE_PAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/compiler.h"
#include "base/list.h"
#include "base/lock.h"
#include "pagecache/rcu.h"

#define MCG_FPAGE_SIZE 4096u
#define MCG_FPAGE_SHIFT 12

enum mcg_fpage_flags {
	PG_UPTODATE = 1u << 0,
	PG_LOCKED = 1u << 1,
	PG_ERROR = 1u << 2,
	PG_DIRTY = 1u << 3,
	PG_WRITEBACK = 1u << 4,
	PG_LRU = 1u << 5,
	PG_ACTIVE = 1u << 6,
	PG_REFERENCED = 1u << 7,
	PG_READAHEAD = 1u << 8,
	PG_REMOVED = 1u << 9,
	PG_RECLAIM = 1u << 10,
	PG_ACCT = 1u << 11,
};

struct mcg_inode;
struct mcg_pcg;

struct mcg_fpage {
	uint32_t flags;     /* atomic */
	uint32_t refcnt;    /* atomic */
	uint32_t data_lock; /* rw spin: DATA_WRITER | readers */
	uint16_t nid;       /* the node of its lruvec */
	uint16_t pad_;
	uint64_t index;          /* page index in its file */
	struct mcg_inode *inode; /* its file (set once) */
	struct mcg_pcg *pcg;     /* charged through (referenced; never changes) */
	void *data;              /* MCG_FPAGE_SIZE bytes, page aligned */
	union {
		struct mcg_list lru;     /* on its lruvec's list (lruvec lock) */
		struct mcg_rcu_head rcu; /* retired: waiting for the readers (rcu.h) */
	};
};

/** mcg_fpage_init - create the slab caches (idempotent; pagecache init). */
void mcg_fpage_init(void);

/**
 * mcg_fpage_alloc - a page for @inode at @index, charged through @pcg's
 * live pcg (MCG_CHARGE_* @flags), one reference, no flags.  Its data is not
 * initialised.  Return: the page, or NULL (-ENOMEM).  No page-cache lock held.
 */
struct mcg_fpage *mcg_fpage_alloc(struct mcg_pcg *pcg, struct mcg_inode *inode, uint64_t index,
                                  unsigned flags);

/** mcg_fpage_get - take another reference (the caller has one, or holds the mapping lock). */
static inline void mcg_fpage_get(struct mcg_fpage *p)
{
	__atomic_fetch_add(&p->refcnt, 1, __ATOMIC_RELAXED);
}

/**
 * mcg_fpage_try_get - take a reference unless the last one went already
 * (a page found in a read section).  Return: whether it did.
 */
static inline bool mcg_fpage_try_get(struct mcg_fpage *p)
{
	uint32_t v = __atomic_load_n(&p->refcnt, __ATOMIC_RELAXED);
	while (v)
		if (__atomic_compare_exchange_n(&p->refcnt, &v, v + 1, true, __ATOMIC_ACQUIRE,
		                                __ATOMIC_RELAXED))
			return true;
	return false;
}

/**
 * mcg_fpage_free_ - free @p and give back its charge (its last reference
 * went): after the read sections that may still copy it (rcu.h).
 */
void mcg_fpage_free_(struct mcg_fpage *p);

/** mcg_fpage_put - drop a reference; the last frees the page.  No page-cache lock held. */
static inline void mcg_fpage_put(struct mcg_fpage *p)
{
	if (__atomic_sub_fetch(&p->refcnt, 1, __ATOMIC_ACQ_REL) == 0)
		mcg_fpage_free_(p);
}

/**
 * mcg_fpage_put_locked - drop a reference under a page-cache lock: the
 * last one chains @p on *@dispose (through p->lru) for mcg_fpage_dispose().
 */
static inline void mcg_fpage_put_locked(struct mcg_fpage *p, struct mcg_list *dispose)
{
	if (__atomic_sub_fetch(&p->refcnt, 1, __ATOMIC_ACQ_REL) == 0)
		mcg_list_add_tail(&p->lru, dispose);
}

/** mcg_fpage_dispose - free every page chained on @dispose (no lock held). */
void mcg_fpage_dispose(struct mcg_list *dispose);

static inline uint32_t mcg_fpage_flags(const struct mcg_fpage *p)
{
	return __atomic_load_n(&p->flags, __ATOMIC_ACQUIRE);
}
static inline bool mcg_fpage_test(const struct mcg_fpage *p, uint32_t f)
{
	return mcg_fpage_flags(p) & f;
}
static inline void mcg_fpage_set(struct mcg_fpage *p, uint32_t f)
{
	__atomic_fetch_or(&p->flags, f, __ATOMIC_ACQ_REL);
}
static inline void mcg_fpage_clear(struct mcg_fpage *p, uint32_t f)
{
	__atomic_fetch_and(&p->flags, ~f, __ATOMIC_ACQ_REL);
}
/** Set @f; return whether it was set before. */
static inline bool mcg_fpage_test_and_set(struct mcg_fpage *p, uint32_t f)
{
	return __atomic_fetch_or(&p->flags, f, __ATOMIC_ACQ_REL) & f;
}
/** Clear @f; return whether it was set before. */
static inline bool mcg_fpage_test_and_clear(struct mcg_fpage *p, uint32_t f)
{
	return __atomic_fetch_and(&p->flags, ~f, __ATOMIC_ACQ_REL) & f;
}

/* ---- the data lock ---- */

#define MCG_FPAGE_DATA_WRITER 0x80000000u

void mcg_fpage_data_wait_(struct mcg_fpage *p, bool writer);

/** mcg_fpage_data_read_lock - share @p's data with other readers.  Pair with _read_unlock. */
static inline void mcg_fpage_data_read_lock(struct mcg_fpage *p)
{
	if (mcg_config_debug)
		mcg_lock_check_acquire_(MCG_RANK_PAGE_DATA);
	uint32_t v = __atomic_load_n(&p->data_lock, __ATOMIC_RELAXED);
	if (unlikely((v & MCG_FPAGE_DATA_WRITER) ||
	             !__atomic_compare_exchange_n(&p->data_lock, &v, v + 1, false, __ATOMIC_ACQUIRE,
	                                          __ATOMIC_RELAXED)))
		mcg_fpage_data_wait_(p, false);
}

static inline void mcg_fpage_data_read_unlock(struct mcg_fpage *p)
{
	if (mcg_config_debug)
		mcg_lock_check_release_(MCG_RANK_PAGE_DATA);
	__atomic_fetch_sub(&p->data_lock, 1, __ATOMIC_RELEASE);
}

/**
 * mcg_fpage_data_write_lock - hold @p's data alone against the lock's
 * readers (the locked read path; a cached read's copy is not held off:
 * mcg_fpage_data_change_lock() for a change of the data).  The acquiring
 * exchange is sequentially consistent (mcg_fpage_data_writer()).  Pair
 * with _write_unlock.
 */
static inline void mcg_fpage_data_write_lock(struct mcg_fpage *p)
{
	if (mcg_config_debug)
		mcg_lock_check_acquire_(MCG_RANK_PAGE_DATA);
	uint32_t v = 0;
	if (unlikely(!__atomic_compare_exchange_n(&p->data_lock, &v, MCG_FPAGE_DATA_WRITER, false,
	                                          __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)))
		mcg_fpage_data_wait_(p, true);
}

/**
 * mcg_fpage_data_change_lock - hold @p's data alone to change it: the write
 * lock, then wait for the cached reads copying it (read sections entered
 * with its file and index, rcu.h) - a section entered after the lock was
 * taken sees it (mcg_fpage_data_writer()) and stays away.  Not inside a
 * read section.  Pair with _write_unlock.
 */
static inline void mcg_fpage_data_change_lock(struct mcg_fpage *p)
{
	mcg_fpage_data_write_lock(p);
	mcg_rcu_wait_key(p->inode, p->index);
}

/**
 * mcg_fpage_data_writer - whether @p's data lock is held alone (a read
 * section entered with mcg_rcu_read_lock_key() on @p's file and index): when
 * it is not, no change of the data starts before the section ends; when it
 * is, the section must leave without waiting (the holder may wait for it).
 */
static inline bool mcg_fpage_data_writer(struct mcg_fpage *p)
{
	return __atomic_load_n(&p->data_lock, __ATOMIC_SEQ_CST) & MCG_FPAGE_DATA_WRITER;
}

static inline void mcg_fpage_data_write_unlock(struct mcg_fpage *p)
{
	if (mcg_config_debug)
		mcg_lock_check_release_(MCG_RANK_PAGE_DATA);
	__atomic_store_n(&p->data_lock, 0, __ATOMIC_RELEASE);
}

#endif /* MCG_PAGECACHE_PAGE_H */
