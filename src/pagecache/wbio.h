/* SPDX-License-Identifier: MIT */
/*
 * pagecache/wbio.h - writeback I/O in flight: a small pool of threads that
 * run backing writes, so that one writeback keeps several requests on the
 * device at once.
 *
 * Why: a backing write is a system call that returns when the device is
 * done with it.  One at a time, a file's writeback leaves the device idle
 * between two writes and never gives it more than one request to work on;
 * the kernel's own writeback keeps many in flight.  A writeback
 * (writeback.c) therefore submits up to `writeback_io_depth` runs (an
 * option) to this pool and reaps them as they end, in any order.
 *
 * Why threads and not io_uring or AIO: a write of a run must stay a plain
 * pwritev through the I/O fault point with the short-transfer and EINTR
 * loops of io.c, on any file system (buffered backing files included),
 * under any seccomp policy, visible to TSan; a blocked thread costs no
 * CPU, and a handful of them cover the depth that pays (the device, not
 * the pool, is what the requests wait on).
 *
 * A batch (struct mcg_wbio_batch, on the submitter's stack) counts its
 * requests in flight and collects those that ended.  mcg_wbio_submit()
 * queues a request to the pool, or - when no pool thread runs (depth 1,
 * the threads could not be started, a forked child) - runs it at once in
 * the caller, so a writeback always progresses, one request at a time at
 * worst.  The pool's threads start on the first submission that wants
 * them (each passes the memory fault point: a thread's stack is memory)
 * and live for the process; a forked child starts its own.
 *
 * Locks: the pool's lock and a batch's lock are leaves (MCG_RANK_LEAF):
 * nothing is taken under them, and a request's function runs with none
 * held.  The submitter may hold page-cache locks above them (a file's
 * wb_lock).
 */
#ifndef MCG_PAGECACHE_WBIO_H
#define MCG_PAGECACHE_WBIO_H

#include <pthread.h>
#include <stdbool.h>

#include "base/list.h"
#include "base/lock.h"

/** The most pool threads (requests in flight across all writebacks). */
#define MCG_WBIO_MAX_THREADS 16

struct mcg_wbio_batch;

/** One request: @fn runs it (in a pool thread, or in the submitter). */
struct mcg_wbio {
	void (*fn)(struct mcg_wbio *io);
	struct mcg_wbio_batch *batch; /* set by mcg_wbio_submit() */
	struct mcg_list link;         /* the pool's queue, then the batch's done list */
};

/** The requests of one submitter: in flight and ended. */
struct mcg_wbio_batch {
	mcg_lock_t lock; /* MCG_RANK_LEAF: in_flight, done */
	pthread_cond_t cond;
	int in_flight;        /* submitted, not yet reaped */
	struct mcg_list done; /* ended, not yet reaped */
};

/** mcg_wbio_batch_init - an empty batch.  Pair with mcg_wbio_batch_destroy(). */
void mcg_wbio_batch_init(struct mcg_wbio_batch *b);

/** mcg_wbio_batch_destroy - release @b (nothing in flight). */
void mcg_wbio_batch_destroy(struct mcg_wbio_batch *b);

/**
 * mcg_wbio_submit - run @io for @b: queue it to the pool (started up to
 * min(@depth, MCG_WBIO_MAX_THREADS) threads if fewer run), or run it now
 * in the caller when @depth is 1 or no pool thread runs.  Either way it
 * is reaped by mcg_wbio_reap().  The caller bounds its own in-flight
 * count (b->in_flight) by @depth.  No lock of the pool's held.
 */
void mcg_wbio_submit(struct mcg_wbio_batch *b, struct mcg_wbio *io, int depth);

/**
 * mcg_wbio_reap - the next request of @b that ended (any order), waiting
 * for one while some are in flight.  Return: the request, or NULL when
 * none is in flight or done.
 */
struct mcg_wbio *mcg_wbio_reap(struct mcg_wbio_batch *b);

/** mcg_wbio_threads - pool threads running (for tests). */
int mcg_wbio_threads(void);

#endif /* MCG_PAGECACHE_WBIO_H */
