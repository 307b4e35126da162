/* SPDX-License-Identifier: MIT */
/*
 * pagecache/wbio.c - the writeback I/O pool: threads that run backing
 * writes for the writebacks that submit them (see wbio.h).
 *
 * A pool thread takes the oldest queued request, runs it with no lock
 * held, then hands it to its batch's done list and wakes the batch's
 * submitter.  Threads sleep on the pool's condition while the queue is
 * empty and live for the process (they hold nothing while idle).
 *
 * Locks: pool.lock (leaf) guards the queue and the thread count; a
 * batch's lock (leaf) its count and done list; never both at once.
 */
#include "pagecache/wbio.h"

#include <errno.h>
#include <pthread.h>

#include "base/fault.h"
#include "base/log.h"

static struct {
	mcg_lock_t lock;
	pthread_cond_t cond;   /* a request was queued */
	struct mcg_list queue; /* requests not yet taken by a thread */
	int threads;           /* running (atomic reads) */
	int failed;            /* starting one more failed while some run: serve with those */
} pool = {
        .lock = {PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP, MCG_RANK_LEAF},
        .cond = PTHREAD_COND_INITIALIZER,
        .queue = MCG_LIST_INIT(pool.queue),
};

void mcg_wbio_batch_init(struct mcg_wbio_batch *b)
{
	mcg_lock_init(&b->lock, MCG_RANK_LEAF);
	pthread_cond_init(&b->cond, NULL);
	b->in_flight = 0;
	mcg_list_init(&b->done);
}

void mcg_wbio_batch_destroy(struct mcg_wbio_batch *b)
{
	MCG_BUG_ON(b->in_flight || !mcg_list_empty(&b->done));
	pthread_cond_destroy(&b->cond);
	mcg_lock_destroy(&b->lock);
}

/* @io ended: onto its batch's done list, its submitter woken. */
static void complete(struct mcg_wbio *io)
{
	struct mcg_wbio_batch *b = io->batch;
	mcg_lock(&b->lock);
	mcg_list_add_tail(&io->link, &b->done);
	pthread_cond_signal(&b->cond);
	mcg_unlock(&b->lock);
}

static void *pool_main(void *arg)
{
	(void)arg;
	for (;;) {
		mcg_lock(&pool.lock);
		while (mcg_list_empty(&pool.queue))
			pthread_cond_wait(&pool.cond, &pool.lock.mutex);
		struct mcg_wbio *io = mcg_list_entry(pool.queue.next, struct mcg_wbio, link);
		mcg_list_del(&io->link);
		mcg_unlock(&pool.lock);
		io->fn(io);
		complete(io);
	}
	return NULL;
}

static void pool_atfork_child(void)
{
	/* The threads stay with the parent; the child starts its own.  A
	 * request queued at the fork belongs to a thread the child lacks. */
	pool.threads = 0;
	pool.failed = 0;
	mcg_list_init(&pool.queue);
	mcg_lock_init(&pool.lock, MCG_RANK_LEAF);
	pthread_cond_init(&pool.cond, NULL);
}

/* Start threads up to @want (pool lock held).  Return: threads running. */
static int pool_grow_locked(int want)
{
	static int atfork_done;
	if (!atfork_done) {
		pthread_atfork(NULL, NULL, pool_atfork_child);
		atfork_done = 1;
	}
	while (pool.threads < want && !pool.failed) {
		pthread_t t;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		/* A thread's stack is memory: it passes the fault point. */
		int err = mcg_fault_should_fail() ? EAGAIN
		                                  : pthread_create(&t, &attr, pool_main, NULL);
		pthread_attr_destroy(&attr);
		if (err) {
			/* With some running, those serve the depth (not retried:
			 * a failing start would cost every submission a system
			 * call).  With none, submitters write themselves and
			 * the next submission tries again. */
			pool.failed = pool.threads > 0;
			break;
		}
		__atomic_store_n(&pool.threads, pool.threads + 1, __ATOMIC_RELEASE);
	}
	return pool.threads;
}

void mcg_wbio_submit(struct mcg_wbio_batch *b, struct mcg_wbio *io, int depth)
{
	io->batch = b;
	mcg_lock(&b->lock);
	b->in_flight++;
	mcg_unlock(&b->lock);
	if (depth > 1) {
		int want = MCG_MIN(depth, MCG_WBIO_MAX_THREADS);
		mcg_lock(&pool.lock);
		if (pool.threads >= want || pool_grow_locked(want) > 0) {
			mcg_list_add_tail(&io->link, &pool.queue);
			pthread_cond_signal(&pool.cond);
			mcg_unlock(&pool.lock);
			return;
		}
		mcg_unlock(&pool.lock);
	}
	io->fn(io); /* no pool: the submitter writes, one request at a time */
	complete(io);
}

struct mcg_wbio *mcg_wbio_reap(struct mcg_wbio_batch *b)
{
	struct mcg_wbio *io = NULL;
	mcg_lock(&b->lock);
	while (b->in_flight && mcg_list_empty(&b->done))
		pthread_cond_wait(&b->cond, &b->lock.mutex);
	if (!mcg_list_empty(&b->done)) {
		io = mcg_list_entry(b->done.next, struct mcg_wbio, link);
		mcg_list_del(&io->link);
		b->in_flight--;
	}
	mcg_unlock(&b->lock);
	return io;
}

int mcg_wbio_threads(void) { return __atomic_load_n(&pool.threads, __ATOMIC_ACQUIRE); }
