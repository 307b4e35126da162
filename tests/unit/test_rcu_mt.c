/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_mt.c - the page cache's read sections and grace periods
 * (pagecache/rcu.c): an object retired while a section that began before
 * is open waits for it, and is freed when it ends (by the reader leaving);
 * a section that begins after the retirement does not hold it; with no
 * section open it is freed at once; a thread that cannot get a slot (the
 * fault point) is told so, and a dead thread's slot is reused.
 */
#include "pagecache/rcu.h"

#include <pthread.h>

#include "memcg/debug.h"
#include "test.h"

struct obj {
	struct mcg_rcu_head rcu;
	int freed;
};

static void obj_free(struct mcg_rcu_head *h)
{
	struct obj *o = mcg_container_of(h, struct obj, rcu);
	__atomic_store_n(&o->freed, 1, __ATOMIC_RELEASE);
}

static struct mcg_rcu_kind kind = {.free = obj_free};

static int freed(struct obj *o) { return __atomic_load_n(&o->freed, __ATOMIC_ACQUIRE); }

static pthread_barrier_t in_section, retired, left;

static void *reader_main(void *arg)
{
	(void)arg;
	if (!mcg_rcu_read_lock())
		return (void *)1;
	pthread_barrier_wait(&in_section);
	pthread_barrier_wait(&retired); /* the main thread retired an object meanwhile */
	mcg_rcu_read_unlock();
	pthread_barrier_wait(&left);
	return NULL;
}

static void test_grace_period(void)
{
	struct obj a = {0}, b = {0}, c = {0};
	pthread_barrier_init(&in_section, NULL, 2);
	pthread_barrier_init(&retired, NULL, 2);
	pthread_barrier_init(&left, NULL, 2);
	pthread_t t;
	REQUIRE(!pthread_create(&t, NULL, reader_main, NULL));
	pthread_barrier_wait(&in_section);
	mcg_rcu_retire(&kind, &a.rcu);
	CHECK_EQ(freed(&a), 0); /* the reader may hold it */
	CHECK_EQ(mcg_rcu_pending(), 1);
	/* A section of this thread that begins now does not hold a. */
	REQUIRE(mcg_rcu_read_lock());
	mcg_rcu_retire(&kind, &b.rcu);
	CHECK_EQ(freed(&b), 0); /* ours may hold b */
	mcg_rcu_read_unlock();
	CHECK_EQ(freed(&b), 0); /* the other reader, older, still may */
	CHECK_EQ(freed(&a), 0);
	pthread_barrier_wait(&retired);
	pthread_barrier_wait(&left); /* it left: its unlock freed both */
	CHECK_EQ(freed(&a), 1);
	CHECK_EQ(freed(&b), 1);
	CHECK_EQ(mcg_rcu_pending(), 0);
	void *ret;
	pthread_join(t, &ret);
	CHECK(ret == NULL);
	/* No section open: at once. */
	mcg_rcu_retire(&kind, &c.rcu);
	CHECK_EQ(freed(&c), 1);
	CHECK_EQ(mcg_rcu_pending(), 0);
	pthread_barrier_destroy(&in_section);
	pthread_barrier_destroy(&retired);
	pthread_barrier_destroy(&left);
}

static void *try_register(void *arg)
{
	(void)arg;
	bool ok = mcg_rcu_read_lock();
	if (ok)
		mcg_rcu_read_unlock();
	return (void *)(long)ok;
}

static void test_register_fault(void)
{
	/* Every slot taken is reused (the threads above exited): a fresh one
	 * needs memory only when all are in use; hold this thread's, then a new
	 * thread with its allocation failing is refused. */
	pthread_t t;
	void *ret;
	REQUIRE(mcg_rcu_read_lock()); /* this thread's slot, in use */
	mcg_fault_inject(1, 1);
	REQUIRE(!pthread_create(&t, NULL, try_register, NULL));
	pthread_join(t, &ret);
	unsigned long failed = mcg_fault_failed();
	mcg_fault_inject(0, 0);
	mcg_rcu_read_unlock();
	/* The first test's reader exited: its slot was free, so no allocation. */
	CHECK_EQ((long)ret, 1);
	CHECK_EQ(failed, 0);
	/* Now two threads at once: one takes the free slot... */
	REQUIRE(mcg_rcu_read_lock());
	pthread_barrier_init(&in_section, NULL, 2);
	pthread_barrier_init(&retired, NULL, 2);
	pthread_barrier_init(&left, NULL, 2);
	pthread_t r;
	REQUIRE(!pthread_create(&r, NULL, reader_main, NULL));
	pthread_barrier_wait(&in_section);
	/* ...and a third needs a new slot: its allocation fails. */
	mcg_fault_inject(1, 1);
	REQUIRE(!pthread_create(&t, NULL, try_register, NULL));
	pthread_join(t, &ret);
	failed = mcg_fault_failed();
	mcg_fault_inject(0, 0);
	CHECK_EQ((long)ret, 0);
	CHECK_EQ(failed, 1);
	pthread_barrier_wait(&retired);
	pthread_barrier_wait(&left);
	pthread_join(r, &ret);
	mcg_rcu_read_unlock();
	pthread_barrier_destroy(&in_section);
	pthread_barrier_destroy(&retired);
	pthread_barrier_destroy(&left);
}

int main(void)
{
	RUN(test_grace_period);
	RUN(test_register_fault);
	return test_done();
}
