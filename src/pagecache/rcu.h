/* SPDX-License-Identifier: MIT */
/*
 * pagecache/rcu.h - read sections for the page cache's lockless lookup,
 * and freeing after a grace period (epoch-based, the kernel's RCU in
 * spirit): a cached read finds its page in the index with no lock and no
 * page reference, and copies it inside a read section; whatever the
 * readers may still hold when it leaves the index - a page (descriptor and
 * data), an index node - is retired, and freed only once every read
 * section that could have found it has ended.
 *
 * Readers: each thread has a slot (registered on its first section, reused
 * after the thread exits) holding 0 outside a section, or the global epoch
 * it saw on entry, and the key of what the section reads (a file and a
 * page index; NULL for none).  Entering is two release stores of the key
 * and one exchange on the thread's own line (sequentially consistent: the
 * slot is published before any index load); leaving is one release store.
 * mcg_rcu_wait_key() waits for the open sections showing a key: how a
 * change of a page's data keeps clear of the cached reads copying it
 * (page.h, the data lock).  Sections do not nest and never sleep.
 *
 * Retiring: the object has left the index (sequentially consistent
 * stores, index.c) before it is retired; it gets the epoch T of a fetch-add
 * on the global epoch and waits on its kind's list.  It is freed when
 * every slot reads 0 or an epoch above T: a reader that entered before the
 * removal shows an epoch <= T until it leaves; one whose slot was published
 * after the scan saw it (the exchange and the scan's loads are both
 * sequentially consistent) sees the index without the object.  Retiring
 * frees at once when no section is open (so at rest nothing waits: every
 * counter is exact), and the last reader to leave frees what waited.
 *
 * Locks: the pending lists' lock (MCG_RANK_LEAF), never held while an
 * object is freed; readers take none.
 */
#ifndef MCG_PAGECACHE_RCU_H
#define MCG_PAGECACHE_RCU_H

#include <stdbool.h>
#include <stdint.h>

#include "base/compiler.h"

/** The link of a retired object (inside it; the readers no longer use that part). */
struct mcg_rcu_head {
	struct mcg_rcu_head *next;
	uint64_t epoch;
};

/** A kind of retired object: how to free one, and those waiting (FIFO, by epoch). */
struct mcg_rcu_kind {
	void (*free)(struct mcg_rcu_head *h);
	struct mcg_rcu_head *head, *tail; /* the rcu lock */
	bool registered;                  /* the rcu lock */
};

struct mcg_rcu_reader {
	uint64_t epoch;     /* 0: outside a section (atomic) */
	const void *key;    /* what the section reads: an object ... (atomic, release) */
	uint64_t key_index; /* ... and an index in it (atomic, release) */
	struct mcg_rcu_reader *next;
	bool free; /* its thread exited: the next new reader takes it (rcu lock) */
} mcg_cacheline_aligned;

extern mcg_tls struct mcg_rcu_reader *mcg_rcu_self_;
extern uint64_t mcg_rcu_epoch_;  /* atomic */
extern long mcg_rcu_nr_pending_; /* atomic */

bool mcg_rcu_register_(void);
void mcg_rcu_reclaim(void);

/**
 * mcg_rcu_read_lock_key - enter a read section that reads what @key and
 * @index name (a file and a page index): mcg_rcu_wait_key() with the same
 * pair waits for it.  The pair is published before the section's epoch, both
 * in the thread's own slot.  Return and pairing as mcg_rcu_read_lock().
 */
static inline bool mcg_rcu_read_lock_key(const void *key, uint64_t index)
{
	struct mcg_rcu_reader *r = mcg_rcu_self_;
	if (unlikely(!r)) {
		if (!mcg_rcu_register_())
			return false;
		r = mcg_rcu_self_;
	}
	/* Release: a waiter that reads this pair has seen the previous section end. */
	__atomic_store_n(&r->key, key, __ATOMIC_RELEASE);
	__atomic_store_n(&r->key_index, index, __ATOMIC_RELEASE);
	uint64_t e = __atomic_load_n(&mcg_rcu_epoch_, __ATOMIC_ACQUIRE);
	__atomic_exchange_n(&r->epoch, e, __ATOMIC_SEQ_CST);
	return true;
}

/**
 * mcg_rcu_read_lock - enter a read section (no nesting; no sleeping in it).
 * Return: true; false when this thread could not get a slot (no memory):
 * then the caller takes its locked path.  Pair with mcg_rcu_read_unlock().
 */
static inline bool mcg_rcu_read_lock(void) { return mcg_rcu_read_lock_key(NULL, 0); }

/** mcg_rcu_read_unlock - leave the section; frees what waited for it, if anything did. */
static inline void mcg_rcu_read_unlock(void)
{
	__atomic_store_n(&mcg_rcu_self_->epoch, 0, __ATOMIC_RELEASE);
	if (unlikely(__atomic_load_n(&mcg_rcu_nr_pending_, __ATOMIC_RELAXED)))
		mcg_rcu_reclaim();
}

/**
 * mcg_rcu_retire - free @h's object with @kind->free once no read section
 * can hold it (at once when none is open).  The object has left every
 * structure a reader finds it through.  No page-cache lock held: the free
 * may run here.
 */
void mcg_rcu_retire(struct mcg_rcu_kind *kind, struct mcg_rcu_head *h);

/**
 * mcg_rcu_wait_key - wait until no read section entered with (@key, @index)
 * (mcg_rcu_read_lock_key()) before this call's sequentially consistent
 * store is open.  The caller has published, with a sequentially consistent
 * atomic, what makes a section entered later stay away (Dekker's pattern:
 * that section's entry and this scan are both sequentially consistent, so
 * one of the two sees the other).  Reads every slot; spins, then yields.
 * Never called inside a section.
 */
void mcg_rcu_wait_key(const void *key, uint64_t index);

/** mcg_rcu_fork_lock / unlock - the pending lists' lock around fork (file.c's fork hooks). */
void mcg_rcu_fork_lock(void);
void mcg_rcu_fork_unlock(void);

/** mcg_rcu_pending - objects retired and not yet freed (tests). */
long mcg_rcu_pending(void);

#endif /* MCG_PAGECACHE_RCU_H */
