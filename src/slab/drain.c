/* SPDX-License-Identifier: MIT */
/*
 * slab/drain.c - taking objects out of CPU arrays from outside: shrink (all
 * of them, and every empty slab), and aging (seed 001's balance: reap what
 * is idle, keep what is hot).
 *
 * Aging, one step per cache (mcg_cache_reap()):
 *   - a CPU array whose slow path did not run since the last step is idle:
 *     all its objects go back to their slabs (one stop and one fence for
 *     the cache's idle arrays together); a busy one keeps them;
 *   - a cache none of whose arrays was busy counts an idle step;
 *   - each node's empty slabs go back to the OS: half of those beyond a
 *     reserve of EMPTY_RESERVE while the cache is busy, all beyond it after
 *     one idle step, all after two;
 *   - each node's partial slabs, MCG_PURGE_VISITS of them per step: one
 *     untouched since the last step looked at it gives back the pages that
 *     lie wholly inside its free slots (slab/purge.c);
 *   - and after a step over every cache, a chunk found empty at two steps
 *     in a row is unmapped, but for EMPTY_CHUNKS_KEPT per node, and so is
 *     a large block kept for reuse since the step before
 *     (mcg_pages_age()).
 * So a cache in use keeps its hot objects and a few empty slabs, and one
 * left alone returns everything but its partly used slabs within two
 * steps, and their free pages a step or two later.  Steps run every
 * `reap_ms` (option MCG_REAP_MS; 0: never): from the reaper thread where
 * one runs (the malloc shim and `memcg run` start it), else inline in the
 * slow paths (refill and flush), at most once per period, bounded to
 * AGE_INLINE_DRAINS caches that need their arrays stopped.  The fast paths do nothing for it.
 *
 * Protocol (percpu/percpu.h): lock the arrays, stop them, one fence, then
 * the arrays are ours until started again.  Locks: the cache list lock
 * across a step (a cache cannot be destroyed under it), then each cache's
 * array and node locks as shrink takes them; the reaper's own mutex only
 * around its sleep.  The inline trigger takes no lock: one CAS on the time
 * of the last step elects the thread that runs it.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/options.h"
#include "os/os.h"
#include "page/large.h"
#include "page/pages.h"
#include "slab/slab.h"

#define EMPTY_RESERVE 2     /* empty slabs a node of a busy cache keeps through aging */
#define AGE_INLINE_DRAINS 8 /* caches whose arrays an inline step may stop */
#define EMPTY_CHUNKS_KEPT 1 /* empty chunks a node keeps through aging */
#define AGE_TICK_EVERY 64   /* slow paths per thread between looks at the clock */

/*
 * Give @k objects from the bottom (the oldest) of stopped array @st back,
 * their charges into @ch; fewer when @ch fills up.  Return how many.
 */
static uint32_t array_give_back(struct mcg_cache *c, struct mcg_pcpu_stack *st, uint32_t k,
                                struct mcg_charges *ch)
{
	uint32_t done = 0;
	while (done < k) {
		unsigned n = MCG_MIN(c->batch, k - done);
		unsigned put = mcg_node_put_gather(c, st->slots + done, n, ch);
		done += put;
		if (put < n)
			break; /* @ch is full: the rest after it is given */
	}
	memmove(st->slots, st->slots + done, (size_t)(st->cur - done) * sizeof(void *));
	MCG_WRITE_ONCE(st->cur, st->cur - done); /* read racily by stats and reap */
	return done;
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

/*
 * Stop the arrays of @c marked in @which (all when NULL), give back
 * @fifth ? a fifth : all of each, start them again.  The objects' charges
 * are given after the start, with no array lock held: the last charge of a
 * removed group's objcg frees it, which takes the tree lock (rank 15, below
 * the arrays' 20; test_objcg_mt and test_fork met it under aging).  When
 * more objcgs than a tally holds come up, another round gives the rest.
 */
static void drain_arrays(struct mcg_cache *c, const uint8_t *which, bool fifth)
{
	unsigned ncpu = mcg_os_nr_cpus();
	uint32_t want[MCG_MAX_CPUS];
	bool first = true, more;
	do {
		struct mcg_charges ch;
		ch.n = 0;
		more = false;
		mcg_cache_arrays_stop(c, which);
		for (unsigned cpu = 0; cpu < ncpu; cpu++) {
			if (which && !which[cpu])
				continue;
			struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(c->pcpu, cpu);
			uint32_t cur = st->cur;
			if (first)
				want[cpu] = fifth ? (cur + 4) / 5 : cur;
			want[cpu] = MCG_MIN(want[cpu], cur); /* it ran between rounds */
			if (more || !want[cpu])
				continue; /* (more: a full tally, this CPU waits a round) */
			want[cpu] -= array_give_back(c, st, want[cpu], &ch);
			more |= want[cpu] != 0;
		}
		mcg_cache_arrays_start(c, which);
		mcg_charges_give(&ch);
		first = false;
	} while (more);
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
	for (unsigned n = 0; n < c->nr_nodes; n++) {
		bytes += mcg_node_release_empty(c, n, 0, SIZE_MAX);
		bytes += mcg_node_purge(c, n, UINT_MAX, SIZE_MAX, true);
	}
	return (long)bytes;
}

/*
 * One aging step of @c (see the top of the file).  *@drained: set when it
 * stopped the cache's arrays.  Return: bytes returned to the OS.
 */
static long cache_age(struct mcg_cache *c, bool *drained)
{
	bool busy = false;
	*drained = false;
	if (!c->debug) {
		unsigned ncpu = mcg_os_nr_cpus();
		uint8_t which[MCG_MAX_CPUS];
		bool any = false;
		for (unsigned cpu = 0; cpu < ncpu; cpu++) {
			struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(c->pcpu, cpu);
			which[cpu] = 0;
			if (__atomic_exchange_n(&st->touched, 0, __ATOMIC_RELAXED)) {
				busy = true; /* its slow path ran: hot, leave it */
				continue;
			}
			if (__atomic_load_n(&st->cur, __ATOMIC_RELAXED) > 0)
				which[cpu] = 1, any = true;
		}
		if (any) {
			drain_arrays(c, which, false);
			*drained = true;
		}
	}
	unsigned idle = __atomic_load_n(&c->idle_steps, __ATOMIC_RELAXED);
	idle = busy ? 0 : idle < 2 ? idle + 1 : 2;
	__atomic_store_n(&c->idle_steps, idle, __ATOMIC_RELAXED);
	size_t keep = idle >= 2 ? 0 : EMPTY_RESERVE, bytes = 0;
	for (unsigned n = 0; n < c->nr_nodes; n++) {
		size_t empty = __atomic_load_n(&c->nodes[n].nr_empty, __ATOMIC_RELAXED);
		if (empty <= keep)
			continue;
		size_t surplus = empty - keep;
		bytes += mcg_node_release_empty(c, n, keep, idle ? surplus : (surplus + 1) / 2);
	}
	for (unsigned n = 0; n < c->nr_nodes; n++)
		bytes += mcg_node_purge(c, n, MCG_PURGE_VISITS, MCG_PURGE_PAGES, false);
	return (long)bytes;
}

mcg_public long mcg_cache_reap(mcg_cache_t *c)
{
	if (!c)
		return -EINVAL;
	bool drained;
	return cache_age(c, &drained);
}

/*
 * One aging step over the caches, starting where the last bounded step
 * stopped and going round the list once; it stops early once @max_drains
 * caches needed their arrays stopped (the rest waits for the next step).
 * Return: bytes returned to the OS.
 */
static long slab_age(unsigned max_drains)
{
	static unsigned cursor; /* cache list lock: where the next step starts */
	long bytes = 0;
	unsigned n = 0, drains = 0, visited = 0;
	mcg_lock(&mcg_cache_list_lock);
	mcg_list_for_each (pos, &mcg_cache_list)
		n++;
	struct mcg_list *pos = mcg_cache_list.next;
	for (unsigned i = 0; n && i < cursor % n; i++)
		pos = pos->next;
	while (visited < n && drains < max_drains) {
		if (pos == &mcg_cache_list) /* round the list's head */
			pos = pos->next;
		bool drained;
		bytes += cache_age(mcg_list_entry(pos, struct mcg_cache, link), &drained);
		drains += drained;
		visited++;
		pos = pos->next;
	}
	cursor = n ? (cursor + visited) % n : 0;
	mcg_unlock(&mcg_cache_list_lock);
	if (visited == n) /* a whole round: chunks left empty go back too */
		bytes += (long)mcg_pages_age(EMPTY_CHUNKS_KEPT);
	return bytes;
}

mcg_public long mcg_slab_reap_all(void)
{
	if (mcg_slab_init()) /* GCOVR_EXCL_BR_LINE: start cannot fail (cache.c) */
		return 0;    /* GCOVR_EXCL_LINE */
	return slab_age(UINT_MAX);
}

mcg_public long mcg_slab_shrink_all(void)
{
	if (mcg_slab_init()) /* GCOVR_EXCL_BR_LINE: start cannot fail (cache.c) */
		return 0;    /* GCOVR_EXCL_LINE */
	long bytes = 0;
	mcg_lock(&mcg_cache_list_lock);
	mcg_list_for_each (pos, &mcg_cache_list)
		bytes += mcg_cache_shrink(mcg_list_entry(pos, struct mcg_cache, link));
	mcg_unlock(&mcg_cache_list_lock);
	return bytes + (long)mcg_large_flush(); /* and the retained large blocks */
}

/* ------------------------------------------------------------ the reaper */

static pthread_mutex_t reaper_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reaper_cond;
static pthread_t reaper_thread;
static bool reaper_running, reaper_stop; /* reaper_lock; reaper_running read racily */
static unsigned reaper_interval_ms;

/* ------------------------------------------------------------ inline aging */

static uint64_t age_last_ns; /* when the last inline step began (CAS) */
static mcg_tls unsigned age_ticks;
static void (*tick_hook)(void); /* mcg_slab_tick_hook_set() */

void mcg_slab_tick_hook_set(void (*fn)(void))
{
	__atomic_store_n(&tick_hook, fn, __ATOMIC_RELEASE);
}

static mcg_noinline void age_tick_slow(void)
{
	void (*hook)(void) = __atomic_load_n(&tick_hook, __ATOMIC_ACQUIRE);
	if (hook)
		hook();
	long ms = mcg_option(MCG_OPT_REAP_MS);
	if (ms <= 0 || __atomic_load_n(&reaper_running, __ATOMIC_RELAXED))
		return;
	uint64_t now = mcg_os_now_ns(), last = __atomic_load_n(&age_last_ns, __ATOMIC_RELAXED);
	if (last == 0) { /* the first look starts the clock: nothing has aged yet */
		__atomic_compare_exchange_n(&age_last_ns, &last, now, false, __ATOMIC_RELAXED,
		                            __ATOMIC_RELAXED);
		return;
	}
	if (now - last < (uint64_t)ms * 1000000u)
		return;
	if (!__atomic_compare_exchange_n(&age_last_ns, &last, now, false, __ATOMIC_RELAXED,
	                                 __ATOMIC_RELAXED))
		return; /* another thread runs this step */
	slab_age(AGE_INLINE_DRAINS);
}

void mcg_slab_age_tick(void)
{
	if (likely(++age_ticks % AGE_TICK_EVERY))
		return;
	age_tick_slow();
}

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
