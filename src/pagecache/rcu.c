/* SPDX-License-Identifier: MIT */
/*
 * pagecache/rcu.c - the readers' slots, retiring and freeing after a grace
 * period (see rcu.h for the protocol and why it is safe).
 *
 * The slots live on one list, never freed: a thread's slot is marked free
 * by its TLS destructor and taken by the next thread that registers, so
 * the list is as long as the most threads that read at once.  A scan for
 * the oldest open section reads every slot.
 *
 * Fork: the page cache's fork hooks (file.c) hold rcu_lock across fork;
 * the child's one thread is in no section (sections do not span calls), so
 * its handler frees every other slot.
 *
 * Locks: rcu_lock (MCG_RANK_LEAF) guards the slot list's changes and the
 * pending lists; objects are freed after it is dropped.
 */
#include "pagecache/rcu.h"

#include <pthread.h>
#include <sched.h>

#include "base/fault.h"
#include "base/lock.h"
#include "base/log.h"
#include "memcg/kmalloc.h"

#define MAX_KINDS 4

mcg_tls struct mcg_rcu_reader *mcg_rcu_self_;
uint64_t mcg_rcu_epoch_ = 1;
long mcg_rcu_nr_pending_;

static struct mcg_rcu_reader *readers; /* (atomic head: scans run without the lock) */
static struct mcg_rcu_kind *kinds[MAX_KINDS];
static int nr_kinds;
static mcg_lock_t rcu_lock;
static pthread_key_t exit_key;
static pthread_once_t rcu_once = PTHREAD_ONCE_INIT;

static void thread_exit(void *arg)
{
	struct mcg_rcu_reader *r = arg;
	mcg_lock(&rcu_lock);
	r->free = true;
	mcg_unlock(&rcu_lock);
}

static int rcu_ready;  /* rcu_lock initialised (atomic) */
static bool fork_held; /* the fork hooks took rcu_lock (the forking thread's) */

void mcg_rcu_fork_lock(void)
{
	fork_held = __atomic_load_n(&rcu_ready, __ATOMIC_ACQUIRE);
	if (fork_held)
		mcg_lock_raw(&rcu_lock);
}

void mcg_rcu_fork_unlock(void)
{
	if (fork_held)
		mcg_unlock_raw(&rcu_lock);
	fork_held = false;
}

/* A forked child has one thread, in no section: every other slot is free
 * (after the fork hooks released the lock, whole). */
static void rcu_atfork_child(void)
{
	for (struct mcg_rcu_reader *r = readers; r; r = r->next) {
		r->epoch = 0;
		r->free = r != mcg_rcu_self_;
	}
}

static void rcu_init_once(void)
{
	mcg_lock_init(&rcu_lock, MCG_RANK_LEAF);
	/* mcg_die() aborts, and an aborted process writes no coverage. */
	if (pthread_key_create(&exit_key, thread_exit))                 /* GCOVR_EXCL_BR_LINE */
		mcg_die("pagecache: no TLS key for the read sections"); /* GCOVR_EXCL_LINE */
	pthread_atfork(NULL, NULL, rcu_atfork_child);
	__atomic_store_n(&rcu_ready, 1, __ATOMIC_RELEASE);
}

bool mcg_rcu_register_(void)
{
	pthread_once(&rcu_once, rcu_init_once);
	struct mcg_rcu_reader *r = NULL;
	mcg_lock(&rcu_lock);
	for (struct mcg_rcu_reader *x = readers; x; x = x->next)
		if (x->free) {
			x->free = false;
			r = x;
			break;
		}
	mcg_unlock(&rcu_lock);
	if (!r) {
		if (mcg_fault_should_fail() || !(r = mcg_malloc(sizeof(*r))))
			return false;
		r->epoch = 0;
		r->key = NULL;
		r->key_index = 0;
		r->free = false;
		mcg_lock(&rcu_lock);
		r->next = readers;
		__atomic_store_n(&readers, r, __ATOMIC_RELEASE);
		mcg_unlock(&rcu_lock);
	}
	/* glibc fails it only when it cannot allocate a block of key slots
	 * (with no fault point), for a key past the first 32. */
	if (pthread_setspecific(exit_key, r)) { /* GCOVR_EXCL_BR_LINE */
		/* GCOVR_EXCL_START: no test can make glibc's allocation fail */
		mcg_lock(&rcu_lock);
		r->free = true;
		mcg_unlock(&rcu_lock);
		return false;
		/* GCOVR_EXCL_STOP */
	}
	mcg_rcu_self_ = r;
	return true;
}

/* The oldest epoch an open section shows, or UINT64_MAX when none is open. */
static uint64_t oldest_section(void)
{
	uint64_t min = UINT64_MAX;
	for (struct mcg_rcu_reader *r = __atomic_load_n(&readers, __ATOMIC_ACQUIRE); r;
	     r = r->next) {
		uint64_t e = __atomic_load_n(&r->epoch, __ATOMIC_SEQ_CST);
		if (e && e < min)
			min = e;
	}
	return min;
}

/* Take off @k's list what retired below @safe (rcu lock held); chain it on *@out. */
static long take_safe(struct mcg_rcu_kind *k, uint64_t safe, struct mcg_rcu_head **out)
{
	long n = 0;
	struct mcg_rcu_head *first = k->head, *last = NULL;
	while (k->head && k->head->epoch < safe) {
		last = k->head;
		k->head = k->head->next;
		n++;
	}
	if (!n)
		return 0;
	if (!k->head)
		k->tail = NULL;
	last->next = NULL;
	*out = first;
	return n;
}

struct ready {
	struct mcg_rcu_head *list[MAX_KINDS];
	struct mcg_rcu_kind *kind[MAX_KINDS];
	int n;
};

/* Take what no open section can hold off every list (rcu lock held). */
static void collect_locked(struct ready *rd)
{
	uint64_t safe = oldest_section();
	long n = 0;
	rd->n = nr_kinds;
	for (int i = 0; i < rd->n; i++) {
		rd->kind[i] = kinds[i];
		rd->list[i] = NULL;
		n += take_safe(kinds[i], safe, &rd->list[i]);
	}
	if (n)
		__atomic_sub_fetch(&mcg_rcu_nr_pending_, n, __ATOMIC_RELAXED);
}

/* Free what collect_locked() took (no lock held). */
static void free_ready(struct ready *rd)
{
	for (int i = 0; i < rd->n; i++)
		for (struct mcg_rcu_head *h = rd->list[i], *next; h; h = next) {
			next = h->next;
			rd->kind[i]->free(h);
		}
}

void mcg_rcu_reclaim(void)
{
	pthread_once(&rcu_once, rcu_init_once);
	struct ready rd;
	mcg_lock(&rcu_lock);
	collect_locked(&rd);
	mcg_unlock(&rcu_lock);
	free_ready(&rd);
}

void mcg_rcu_retire(struct mcg_rcu_kind *kind, struct mcg_rcu_head *h)
{
	pthread_once(&rcu_once, rcu_init_once);
	/* After the removal (in the caller): readers entering from here on see
	 * an epoch above the tag, or the index without the object. */
	h->epoch = __atomic_fetch_add(&mcg_rcu_epoch_, 1, __ATOMIC_SEQ_CST);
	h->next = NULL;
	struct ready rd;
	mcg_lock(&rcu_lock);
	if (unlikely(!kind->registered)) {
		MCG_BUG_ON(nr_kinds == MAX_KINDS);
		kinds[nr_kinds++] = kind;
		kind->registered = true;
	}
	if (kind->tail)
		kind->tail->next = h;
	else
		kind->head = h;
	kind->tail = h;
	__atomic_add_fetch(&mcg_rcu_nr_pending_, 1, __ATOMIC_RELAXED);
	collect_locked(&rd);
	mcg_unlock(&rcu_lock);
	free_ready(&rd);
}

void mcg_rcu_wait_key(const void *key, uint64_t index)
{
	for (struct mcg_rcu_reader *r = __atomic_load_n(&readers, __ATOMIC_ACQUIRE); r;
	     r = r->next) {
		for (unsigned spins = 0;; spins++) {
			/* Epoch 0, or a pair published after the section that showed
			 * this epoch began: either read (acquire) orders that section's
			 * reads before the caller's changes. */
			if (!__atomic_load_n(&r->epoch, __ATOMIC_SEQ_CST) ||
			    __atomic_load_n(&r->key, __ATOMIC_ACQUIRE) != key ||
			    __atomic_load_n(&r->key_index, __ATOMIC_ACQUIRE) != index)
				break;
			if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
				__builtin_ia32_pause();
#endif
			} else {
				sched_yield();
			}
		}
	}
}

long mcg_rcu_pending(void) { return __atomic_load_n(&mcg_rcu_nr_pending_, __ATOMIC_RELAXED); }
