/* SPDX-License-Identifier: MIT */
/*
 * slab/drain.c - taking objects out of CPU arrays from outside: shrink (all
 * of them, and every empty slab) and reap (aging, a little at a time, as
 * seed 001 asks: shrink is costly and rare, reap is cheap and periodic).
 *
 * Protocol (base/percpu.h): lock the arrays, stop them, one fence, then the
 * arrays are ours until started again.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "os/os.h"
#include "slab/slab.h"

#define EMPTY_RESERVE 2 /* empty slabs a node keeps through reaping */

/* Give @k objects from the bottom (the oldest) of stopped array @st back. */
static void array_give_back(struct mcg_cache *c, struct mcg_pcpu_stack *st, uint32_t k)
{
	for (uint32_t done = 0; done < k; done += c->batch)
		mcg_node_put(c, st->slots + done, MCG_MIN(c->batch, k - done));
	memmove(st->slots, st->slots + k, (size_t)(st->cur - k) * sizeof(void *));
	MCG_WRITE_ONCE(st->cur, st->cur - k); /* read racily by stats and reap */
}

void mcg_cache_arrays_stop(struct mcg_cache *c, const uint8_t *which)
{
	unsigned ncpu = mcg_os_nr_cpus();
	for (unsigned cpu = 0; cpu < ncpu; cpu++) {
		if (which && !which[cpu])
			continue;
		struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(c->pcpu, cpu);
		mcg_lock(&st->lock);
		mcg_pcpu_stack_stop(st);
	}
	mcg_percpu_fence();
}

void mcg_cache_arrays_start(struct mcg_cache *c, const uint8_t *which)
{
	unsigned ncpu = mcg_os_nr_cpus();
	for (unsigned cpu = 0; cpu < ncpu; cpu++) {
		if (which && !which[cpu])
			continue;
		struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(c->pcpu, cpu);
		mcg_pcpu_stack_start(st, c->cpu_cap);
		mcg_unlock(&st->lock);
	}
}

/* Stop the arrays of @c marked in @which (all when NULL), give back
 * @fifth ? a fifth : all of each, start them again. */
static void drain_arrays(struct mcg_cache *c, const uint8_t *which, bool fifth)
{
	unsigned ncpu = mcg_os_nr_cpus();
	mcg_cache_arrays_stop(c, which);
	for (unsigned cpu = 0; cpu < ncpu; cpu++) {
		if (which && !which[cpu])
			continue;
		struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(c->pcpu, cpu);
		uint32_t cur = st->cur;
		array_give_back(c, st, fifth ? (cur + 4) / 5 : cur);
	}
	mcg_cache_arrays_start(c, which);
}

void mcg_cache_drain_all(struct mcg_cache *c)
{
	if (!c->debug)
		drain_arrays(c, NULL, false);
}

mcg_public long mcg_cache_shrink(mcg_cache_t *c)
{
	if (!c)
		return -EINVAL;
	mcg_cache_drain_all(c);
	size_t bytes = 0;
	for (unsigned n = 0; n < c->nr_nodes; n++)
		bytes += mcg_node_release_empty(c, n, 0, SIZE_MAX);
	return (long)bytes;
}

mcg_public long mcg_cache_reap(mcg_cache_t *c)
{
	if (!c)
		return -EINVAL;
	if (!c->debug) {
		unsigned ncpu = mcg_os_nr_cpus();
		uint8_t which[MCG_MAX_CPUS];
		bool any = false;
		for (unsigned cpu = 0; cpu < ncpu; cpu++) {
			struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(c->pcpu, cpu);
			which[cpu] = 0;
			if (__atomic_exchange_n(&st->touched, 0, __ATOMIC_RELAXED))
				continue; /* busy since the last reap: leave it */
			if (__atomic_load_n(&st->cur, __ATOMIC_RELAXED) > 0)
				which[cpu] = 1, any = true;
		}
		if (any)
			drain_arrays(c, which, true);
	}
	size_t bytes = 0;
	for (unsigned n = 0; n < c->nr_nodes; n++) {
		struct mcg_cache_node *cn = &c->nodes[n];
		size_t empty = __atomic_load_n(&cn->nr_empty, __ATOMIC_RELAXED);
		if (empty > EMPTY_RESERVE)
			bytes += mcg_node_release_empty(c, n, EMPTY_RESERVE,
			                                (empty - EMPTY_RESERVE + 4) / 5);
	}
	return (long)bytes;
}

mcg_public long mcg_slab_reap_all(void)
{
	if (mcg_slab_init())
		return 0;
	long bytes = 0;
	mcg_lock(&mcg_cache_list_lock);
	mcg_list_for_each (pos, &mcg_cache_list)
		bytes += mcg_cache_reap(mcg_list_entry(pos, struct mcg_cache, link));
	mcg_unlock(&mcg_cache_list_lock);
	return bytes;
}

/* ------------------------------------------------------------ the reaper */

static pthread_mutex_t reaper_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reaper_cond;
static pthread_t reaper_thread;
static bool reaper_running, reaper_stop;
static unsigned reaper_interval_ms;

static void *reaper_main(void *arg)
{
	pthread_mutex_lock(&reaper_lock);
	while (!reaper_stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)reaper_interval_ms * 1000000ull;
		ts.tv_sec += (time_t)(ns / 1000000000ull);
		ts.tv_nsec = (long)(ns % 1000000000ull);
		pthread_cond_timedwait(&reaper_cond, &reaper_lock, &ts);
		if (reaper_stop)
			break;
		pthread_mutex_unlock(&reaper_lock);
		mcg_slab_reap_all();
		pthread_mutex_lock(&reaper_lock);
	}
	pthread_mutex_unlock(&reaper_lock);
	return NULL;
}

mcg_public int mcg_reaper_start(unsigned interval_ms)
{
	if (interval_ms == 0)
		return -EINVAL;
	pthread_mutex_lock(&reaper_lock);
	if (reaper_running) {
		pthread_mutex_unlock(&reaper_lock);
		return -EALREADY;
	}
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&reaper_cond, &attr);
	pthread_condattr_destroy(&attr);
	reaper_stop = false;
	reaper_interval_ms = interval_ms;
	int err = pthread_create(&reaper_thread, NULL, reaper_main, NULL);
	if (!err)
		reaper_running = true;
	pthread_mutex_unlock(&reaper_lock);
	return -err;
}

/*
 * Fork (slab/cache.c's handlers): the reaper's lock is taken before any
 * other, so the child finds it free; the reaper thread stays in the
 * parent, so the child has no reaper (mcg_reaper_start() there starts one,
 * mcg_reaper_stop() returns at once).  Without this the child's stop
 * joined a thread it does not have and hung (test_fork).
 */
void mcg_reaper_fork_prepare(void) { pthread_mutex_lock(&reaper_lock); }

void mcg_reaper_fork_parent(void) { pthread_mutex_unlock(&reaper_lock); }

void mcg_reaper_fork_child(void)
{
	reaper_running = false;
	reaper_stop = false;
	pthread_mutex_unlock(&reaper_lock);
}

mcg_public void mcg_reaper_stop(void)
{
	pthread_mutex_lock(&reaper_lock);
	if (!reaper_running) {
		pthread_mutex_unlock(&reaper_lock);
		return;
	}
	reaper_stop = true;
	pthread_cond_signal(&reaper_cond);
	pthread_mutex_unlock(&reaper_lock);
	pthread_join(reaper_thread, NULL);
	pthread_mutex_lock(&reaper_lock);
	reaper_running = false;
	pthread_cond_destroy(&reaper_cond);
	pthread_mutex_unlock(&reaper_lock);
}
