/* SPDX-License-Identifier: MIT */
/* base/lock.c - ranked mutexes; the rank check of debug builds. */
#include "base/lock.h"

#include <sched.h>

#include "base/log.h"

#define MCG_LOCK_DEPTH 64

static __thread int held_ranks[MCG_LOCK_DEPTH];
static __thread int held_depth;

void mcg_lock_init(mcg_lock_t *l, int rank)
{
	/* Adaptive: a waiter spins a while before it sleeps.  Most sections
	 * are a few list operations; two CPUs flushing into one node's lists
	 * otherwise trade futex sleeps and wakes hundreds of times a second. */
	pthread_mutexattr_t attr;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&l->mutex, &attr);
	pthread_mutexattr_destroy(&attr);
	l->rank = rank;
}

void mcg_lock_destroy(mcg_lock_t *l) { pthread_mutex_destroy(&l->mutex); }

void mcg_rwlock_init(mcg_rwlock_t *l, int rank)
{
	pthread_rwlock_init(&l->rw, NULL);
	l->rank = rank;
}

void mcg_rwlock_destroy(mcg_rwlock_t *l) { pthread_rwlock_destroy(&l->rw); }

void mcg_spin_wait_(mcg_spin_t *l)
{
	for (unsigned spins = 0;; spins++) {
		if (!__atomic_load_n(&l->locked, __ATOMIC_RELAXED) &&
		    !__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE))
			return;
		if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#endif
		} else {
			sched_yield();
		}
	}
}

void mcg_lock_check_acquire_(int rank)
{
	if (held_depth > 0 && held_ranks[held_depth - 1] > rank)
		mcg_die("lock order violated: rank %d taken while holding rank %d", rank,
		        held_ranks[held_depth - 1]);
	if (held_depth < MCG_LOCK_DEPTH)
		held_ranks[held_depth] = rank;
	held_depth++;
}

void mcg_lock_check_release_(int rank)
{
	if (held_depth <= 0)
		mcg_die("unlock of rank %d with no lock held", rank);
	/* Locks may be released out of order: drop the newest of this rank. */
	int top = held_depth < MCG_LOCK_DEPTH ? held_depth : MCG_LOCK_DEPTH;
	for (int i = top - 1; i >= 0; i--) {
		if (held_ranks[i] == rank) {
			for (int j = i; j < top - 1; j++)
				held_ranks[j] = held_ranks[j + 1];
			break;
		}
	}
	held_depth--;
}
