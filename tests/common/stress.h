/* SPDX-License-Identifier: MIT */
/*
 * stress.h - what the concurrency tests share: a cheap per-thread random
 * number, hopping to a random CPU, the run's length and the pause lock.
 */
#ifndef MCG_TEST_STRESS_H
#define MCG_TEST_STRESS_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>

#include "memcg/debug.h" /* mcg_nr_cpus */

/* xorshift32: the next number of the sequence *@x (nonzero) walks. */
static inline unsigned stress_rnd(unsigned *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/* Move the calling thread to a random CPU; false if the OS refused. */
static inline bool stress_hop(unsigned *seed)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(stress_rnd(seed) % mcg_nr_cpus(), &set);
	return sched_setaffinity(0, sizeof(set), &set) == 0;
}

/* Seconds a stress phase runs: MCG_STRESS_SECONDS, else @dflt. */
static inline double stress_seconds(double dflt)
{
	const char *secs = getenv("MCG_STRESS_SECONDS");
	return secs ? atof(secs) : dflt;
}

/* A writer-preferring rwlock: workers hold it for reading around each
 * operation, the checker takes it for writing to find everyone between
 * operations (a reader-preferring one could starve it). */
static inline void stress_pause_lock_init(pthread_rwlock_t *l)
{
	pthread_rwlockattr_t attr;
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(l, &attr);
	pthread_rwlockattr_destroy(&attr);
}

#endif /* MCG_TEST_STRESS_H */
