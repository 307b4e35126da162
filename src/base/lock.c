/* SPDX-License-Identifier: MIT */
/* base/lock.c - ranked mutexes; the rank check of debug builds. */
#include "base/lock.h"

#include "base/log.h"

#define MCG_LOCK_DEPTH 64

static __thread int held_ranks[MCG_LOCK_DEPTH];
static __thread int held_depth;

void mcg_lock_init(mcg_lock_t *l, int rank)
{
	pthread_mutex_init(&l->mutex, NULL);
	l->rank = rank;
}

void mcg_lock_destroy(mcg_lock_t *l)
{
	pthread_mutex_destroy(&l->mutex);
}

void mcg_lock_check_acquire_(const mcg_lock_t *l)
{
	if (held_depth > 0 && held_ranks[held_depth - 1] > l->rank)
		mcg_die("lock order violated: rank %d taken while holding rank %d",
		        l->rank, held_ranks[held_depth - 1]);
	if (held_depth < MCG_LOCK_DEPTH)
		held_ranks[held_depth] = l->rank;
	held_depth++;
}

void mcg_lock_check_release_(const mcg_lock_t *l)
{
	if (held_depth <= 0)
		mcg_die("unlock of rank %d with no lock held", l->rank);
	/* Locks may be released out of order: drop the newest of this rank. */
	int top = held_depth < MCG_LOCK_DEPTH ? held_depth : MCG_LOCK_DEPTH;
	for (int i = top - 1; i >= 0; i--) {
		if (held_ranks[i] == l->rank) {
			for (int j = i; j < top - 1; j++)
				held_ranks[j] = held_ranks[j + 1];
			break;
		}
	}
	held_depth--;
}
