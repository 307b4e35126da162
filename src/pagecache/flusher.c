/* SPDX-License-Identifier: MIT */
/*
 * pagecache/flusher.c - the flusher threads and their work list (see
 * flusher.h).
 *
 * A thread takes the first domain on the work list that no other thread
 * works on, with the work queued on it, and runs one round of it
 * (writeback.c: a chunk of each of the domain's files) with no lock held;
 * what the round says is still wanted goes back at the tail.  With nothing
 * queued a thread sleeps until work comes or the next periodic pass is due.
 *
 * Locks: the flusher lock (MCG_RANK_FLUSHER) - taken under a domain's
 * wb.lock (mcg_flusher_domain_dirty()), never the other way round.
 */
#include "pagecache/flusher.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "base/fault.h"
#include "base/log.h"
#include "base/options.h"
#include "pagecache/dirty.h"
#include "pagecache/writeback.h"

static struct {
	mcg_lock_t lock;
	pthread_cond_t cond;      /* work queued */
	pthread_cond_t done_cond; /* a writeback ended (gen moved) */
	struct mcg_list work;     /* domains with work (wb.work_link), referenced */
	struct mcg_list dirty;    /* domains with dirty files (wb.dirty_link), referenced */
	int threads;              /* running */
	uint64_t last_periodic;   /* ms: the last periodic pass */
	uint64_t gen;
} fl = {
        .lock = {PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP, MCG_RANK_FLUSHER},
        .cond = PTHREAD_COND_INITIALIZER,
        .done_cond = PTHREAD_COND_INITIALIZER,
        .work = MCG_LIST_INIT(fl.work),
        .dirty = MCG_LIST_INIT(fl.dirty),
};

static struct mcg_pcg *pcg_of_wb(struct mcg_wb *wb)
{
	return mcg_container_of(wb, struct mcg_pcg, wb);
}

static void queue_locked(struct mcg_pcg *p, unsigned work)
{
	struct mcg_wb *wb = &p->wb;
	__atomic_store_n(&wb->work, wb->work | work, __ATOMIC_RELAXED);
	if (!wb->busy && mcg_list_empty(&wb->work_link)) {
		mcg_pcg_get(p);
		mcg_list_add_tail(&wb->work_link, &fl.work);
	}
	pthread_cond_signal(&fl.cond);
}

void mcg_flusher_queue(struct mcg_pcg *p, unsigned work)
{
	p = mcg_pcg_resolve(p);
	mcg_flusher_start();
	mcg_lock(&fl.lock);
	queue_locked(p, work);
	mcg_unlock(&fl.lock);
}

void mcg_flusher_domain_dirty(struct mcg_pcg *p)
{
	mcg_lock(&fl.lock);
	if (mcg_list_empty(&p->wb.dirty_link)) {
		mcg_pcg_get(p);
		mcg_list_add_tail(&p->wb.dirty_link, &fl.dirty);
	}
	mcg_unlock(&fl.lock);
}

struct mcg_pcg *mcg_flusher_next_dirty(struct mcg_pcg *prev)
{
	struct mcg_pcg *next = NULL;
	mcg_lock(&fl.lock);
	struct mcg_list *it = prev && !mcg_list_empty(&prev->wb.dirty_link)
	                              ? prev->wb.dirty_link.next
	                              : fl.dirty.next;
	if (it != &fl.dirty) {
		next = mcg_container_of(mcg_list_entry(it, struct mcg_wb, dirty_link),
		                        struct mcg_pcg, wb);
		mcg_pcg_get(next);
	}
	mcg_unlock(&fl.lock);
	if (prev)
		mcg_pcg_put(prev);
	return next;
}

uint64_t mcg_flusher_gen(void) { return __atomic_load_n(&fl.gen, __ATOMIC_ACQUIRE); }

void mcg_flusher_written(void)
{
	mcg_lock(&fl.lock);
	__atomic_store_n(&fl.gen, fl.gen + 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&fl.done_cond);
	mcg_unlock(&fl.lock);
}

/* An absolute CLOCK_REALTIME deadline @ms from now (the conds' clock). */
static struct timespec deadline_in(uint64_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

void mcg_flusher_wait_gen(uint64_t gen, unsigned ms)
{
	struct timespec until = deadline_in(ms);
	mcg_lock(&fl.lock);
	while (fl.gen == gen) {
		if (pthread_cond_timedwait(&fl.done_cond, &fl.lock.mutex, &until) == ETIMEDOUT)
			break;
	}
	mcg_unlock(&fl.lock);
}

/* Periodic pass (flusher lock held): domains with dirty files get periodic
 * work; domains left with none leave the list (their references go on
 * *@drop, put after the lock). */
static void periodic_locked(uint64_t now, struct mcg_pcg **drop, int *ndrop, int max)
{
	uint64_t period = (uint64_t)mcg_option(MCG_OPT_DIRTY_WRITEBACK_CS) * 10;
	if (!period || now < fl.last_periodic + period)
		return;
	fl.last_periodic = now;
	mcg_list_for_each_safe (pos, tmp, &fl.dirty) {
		struct mcg_wb *wb = mcg_list_entry(pos, struct mcg_wb, dirty_link);
		struct mcg_pcg *p = pcg_of_wb(wb);
		/* (read without the wb lock: a stale answer costs one round) */
		if (__atomic_load_n(&wb->dead, __ATOMIC_RELAXED) ||
		    !__atomic_load_n(&wb->nr_files, __ATOMIC_RELAXED)) {
			if (*ndrop < max) {
				mcg_list_del(&wb->dirty_link);
				drop[(*ndrop)++] = p;
			}
			continue;
		}
		/* Expired files, and the background threshold looked at again (a
		 * writer that stopped just above it kicks no one: the kernel's
		 * wb_check_background_flush() on every periodic wakeup). */
		queue_locked(p, MCG_WB_WORK_PERIODIC | MCG_WB_WORK_BACKGROUND);
	}
}

static void *flusher_main(void *arg)
{
	(void)arg;
	mcg_lock(&fl.lock);
	for (;;) {
		struct mcg_pcg *drop[16];
		int ndrop = 0;
		uint64_t now = mcg_dirty_now_ms();
		periodic_locked(now, drop, &ndrop, 16);
		struct mcg_wb *wb = NULL;
		mcg_list_for_each (pos, &fl.work) {
			struct mcg_wb *w = mcg_list_entry(pos, struct mcg_wb, work_link);
			if (!w->busy) {
				wb = w;
				break;
			}
		}
		if (!wb) {
			if (ndrop) {
				mcg_unlock(&fl.lock);
				for (int i = 0; i < ndrop; i++)
					mcg_pcg_put(drop[i]);
				mcg_lock(&fl.lock);
				continue;
			}
			/* Until the next periodic pass, looking at least once a
			 * second (the period may change meanwhile). */
			uint64_t period = (uint64_t)mcg_option(MCG_OPT_DIRTY_WRITEBACK_CS) * 10;
			uint64_t due = fl.last_periodic + period;
			uint64_t wait =
			        period && due > now ? MCG_MIN(due - now, (uint64_t)1000) : 1000;
			struct timespec until = deadline_in(wait);
			pthread_cond_timedwait(&fl.cond, &fl.lock.mutex, &until);
			continue;
		}
		mcg_list_del(&wb->work_link);
		unsigned work = wb->work;
		__atomic_store_n(&wb->work, 0, __ATOMIC_RELAXED);
		wb->busy = true;
		mcg_unlock(&fl.lock);
		for (int i = 0; i < ndrop; i++)
			mcg_pcg_put(drop[i]);

		struct mcg_pcg *p = pcg_of_wb(wb), *live = mcg_pcg_resolve(p);
		unsigned more = 0;
		if (live != p) /* the group went: its work is its parent's */
			mcg_flusher_queue(live, work);
		else
			more = mcg_wb_domain_write(p, work);
		mcg_dirty_writeback_done(p);

		mcg_lock(&fl.lock);
		wb->busy = false;
		__atomic_store_n(&wb->work, wb->work | more, __ATOMIC_RELAXED);
		bool again = wb->work && live == p;
		if (again) {
			mcg_list_add_tail(&wb->work_link, &fl.work); /* keeps the reference */
		} else {
			mcg_unlock(&fl.lock);
			mcg_pcg_put(p);
			mcg_lock(&fl.lock);
		}
	}
	return NULL;
}

static void flusher_atfork_child(void)
{
	/* The threads stay with the parent: a child that uses files starts its own. */
	fl.threads = 0;
	mcg_lock_init(&fl.lock, MCG_RANK_FLUSHER);
}

bool mcg_flusher_running(void) { return __atomic_load_n(&fl.threads, __ATOMIC_ACQUIRE) > 0; }

void mcg_flusher_start(void)
{
	static int atfork_done;
	if (__atomic_load_n(&fl.threads, __ATOMIC_ACQUIRE) >= MCG_FLUSHER_THREADS)
		return;
	mcg_lock(&fl.lock);
	if (!atfork_done) {
		pthread_atfork(NULL, NULL, flusher_atfork_child);
		atfork_done = 1;
		fl.last_periodic = mcg_dirty_now_ms();
	}
	while (fl.threads < MCG_FLUSHER_THREADS) {
		pthread_t t;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		/* A thread's stack is memory: it passes the fault point. */
		int err = mcg_fault_should_fail() ? EAGAIN
		                                  : pthread_create(&t, &attr, flusher_main, NULL);
		pthread_attr_destroy(&attr);
		if (err)
			break; /* retried at the next start; writers still make progress by fsync */
		__atomic_store_n(&fl.threads, fl.threads + 1, __ATOMIC_RELEASE);
	}
	mcg_unlock(&fl.lock);
}
