/* SPDX-License-Identifier: MIT */
/*
 * test_wbio_mt.c - the writeback I/O pool (pagecache/wbio.c): requests run
 * in the submitter when the pool cannot start (memory fault at the thread's
 * start) or at depth 1; with a pool, @depth requests are in flight at once,
 * they end in any order and each is reaped exactly once; reaping with
 * nothing in flight returns at once.
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "memcg/debug.h"
#include "memcg/memcg.h"
#include "pagecache/wbio.h"
#include "test.h"

#define NREQ 40

struct req {
	struct mcg_wbio io;
	int id;
	pthread_t ran_on;
	int reaped;
};

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int running, most_running, started;
static int hold_until; /* the first requests wait until this many have started */
static int one_reaped; /* request 1 was reaped: the other held ones may end */

static struct timespec in_ms(long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

static void req_fn(struct mcg_wbio *io)
{
	struct req *r = mcg_container_of(io, struct req, io);
	r->ran_on = pthread_self();
	pthread_mutex_lock(&gate_lock);
	running++;
	started++;
	if (running > most_running)
		most_running = running;
	pthread_cond_broadcast(&gate_cond);
	/* The first hold_until requests wait until all of them run at once,
	 * then all but request 1 wait until it was reaped: it ends first.  (At
	 * most 10 s each: a pool that does not run them together fails the
	 * checks, not the test's time limit.) */
	struct timespec until = in_ms(10000);
	while (r->id < hold_until && started < hold_until)
		if (pthread_cond_timedwait(&gate_cond, &gate_lock, &until) == ETIMEDOUT)
			break;
	while (r->id < hold_until && r->id != 1 && !one_reaped)
		if (pthread_cond_timedwait(&gate_cond, &gate_lock, &until) == ETIMEDOUT)
			break;
	running--;
	pthread_mutex_unlock(&gate_lock);
}

static void note_one_reaped(void)
{
	pthread_mutex_lock(&gate_lock);
	one_reaped = 1;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

static void reset_gate(int hold)
{
	pthread_mutex_lock(&gate_lock);
	running = most_running = started = 0;
	hold_until = hold;
	one_reaped = 0;
	pthread_mutex_unlock(&gate_lock);
}

/* No pool thread can start: every request runs in the submitter, at once. */
static void test_inline_when_no_pool(void)
{
	REQUIRE(mcg_wbio_threads() == 0); /* (the first test: nothing started one) */
	reset_gate(0);
	static struct req rq[3];
	struct mcg_wbio_batch b;
	mcg_wbio_batch_init(&b);
	mcg_fault_inject(1, 1); /* every thread start fails */
	for (int i = 0; i < 3; i++) {
		rq[i] = (struct req){.io.fn = req_fn, .id = 100 + i};
		mcg_wbio_submit(&b, &rq[i].io, 4);
		CHECK(pthread_equal(rq[i].ran_on, pthread_self())); /* ran already, here */
	}
	CHECK(mcg_fault_failed() >= 1);
	mcg_fault_inject(0, 0);
	CHECK_EQ(mcg_wbio_threads(), 0);
	CHECK_EQ(b.in_flight, 3);
	for (int i = 0; i < 3; i++) {
		struct mcg_wbio *io = mcg_wbio_reap(&b);
		REQUIRE(io);
		CHECK(io == &rq[i].io); /* ended in submission order */
	}
	CHECK(mcg_wbio_reap(&b) == NULL);
	CHECK_EQ(b.in_flight, 0);
	mcg_wbio_batch_destroy(&b);
}

/* Depth 1 never uses the pool. */
static void test_depth_one_inline(void)
{
	reset_gate(0);
	struct req r = {.io.fn = req_fn, .id = 200};
	struct mcg_wbio_batch b;
	mcg_wbio_batch_init(&b);
	mcg_wbio_submit(&b, &r.io, 1);
	CHECK(pthread_equal(r.ran_on, pthread_self()));
	CHECK(mcg_wbio_reap(&b) == &r.io);
	CHECK(mcg_wbio_reap(&b) == NULL);
	mcg_wbio_batch_destroy(&b);
}

/* @depth in flight at once, out of order, each reaped once. */
static void test_pool_depth(void)
{
	const int depth = 4;
	reset_gate(depth);
	static struct req rq[NREQ];
	struct mcg_wbio_batch b;
	mcg_wbio_batch_init(&b);
	int next = 0, reaped = 0, order_first = -1;
	while (reaped < NREQ) {
		while (next < NREQ && b.in_flight < depth) {
			rq[next] = (struct req){.io.fn = req_fn, .id = next};
			mcg_wbio_submit(&b, &rq[next].io, depth);
			next++;
		}
		struct mcg_wbio *io = mcg_wbio_reap(&b);
		REQUIRE(io);
		struct req *r = mcg_container_of(io, struct req, io);
		if (order_first < 0)
			order_first = r->id;
		if (r->id == 1)
			note_one_reaped();
		r->reaped++;
		reaped++;
		CHECK(b.in_flight <= depth);
	}
	CHECK(mcg_wbio_reap(&b) == NULL);
	mcg_wbio_batch_destroy(&b);
	CHECK_EQ(mcg_wbio_threads(), depth);
	CHECK_EQ(most_running, depth); /* all four at once, never more */
	CHECK_EQ(order_first, 1);      /* the first reaped is request 1, not 0 */
	for (int i = 0; i < NREQ; i++) {
		CHECK_EQ(rq[i].reaped, 1);
		CHECK(!pthread_equal(rq[i].ran_on, pthread_self())); /* on the pool */
	}
}

/* A deeper submitter grows the pool; two batches share it. */
static void test_two_batches(void)
{
	reset_gate(0);
	static struct req a[8], c[8];
	struct mcg_wbio_batch ba, bc;
	mcg_wbio_batch_init(&ba);
	mcg_wbio_batch_init(&bc);
	for (int i = 0; i < 8; i++) {
		a[i] = (struct req){.io.fn = req_fn, .id = 300 + i};
		c[i] = (struct req){.io.fn = req_fn, .id = 400 + i};
		mcg_wbio_submit(&ba, &a[i].io, 8);
		mcg_wbio_submit(&bc, &c[i].io, 8);
	}
	for (int i = 0; i < 8; i++) {
		struct mcg_wbio *x = mcg_wbio_reap(&ba), *y = mcg_wbio_reap(&bc);
		REQUIRE(x && y);
		CHECK(x != y);
		mcg_container_of(x, struct req, io)->reaped++;
		mcg_container_of(y, struct req, io)->reaped++;
	}
	CHECK(mcg_wbio_reap(&ba) == NULL && mcg_wbio_reap(&bc) == NULL);
	for (int i = 0; i < 8; i++)
		CHECK(a[i].reaped == 1 && c[i].reaped == 1);
	CHECK_EQ(mcg_wbio_threads(), 8);
	mcg_wbio_batch_destroy(&ba);
	mcg_wbio_batch_destroy(&bc);
}

int main(void)
{
	mcg_options_use_env(0);
	RUN(test_inline_when_no_pool);
	RUN(test_depth_one_inline);
	RUN(test_pool_depth);
	RUN(test_two_batches);
	return test_done();
}
