/* SPDX-License-Identifier: MIT */
/*
 * test_page_mt.c - a cached page's data lock (pagecache/page.h, the wait in
 * page.c): readers share it, a reader waits while a writer holds it, a
 * writer waits while any reader holds it, and each gets it once the holder
 * lets go (spinning, then yielding); a reference tried on a page whose
 * last one went is refused.
 */
#include <pthread.h>
#include <time.h>

#include "pagecache/page.h"
#include "test.h"

static struct mcg_fpage page; /* only its data lock is used */
static int state;             /* what the other thread got to */

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

/* Wait (bounded) until state is @want; true if it got there. */
static bool wait_state(int want)
{
	for (int i = 0; i < 5000 * (int)test_slowdown(); i++) {
		if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == want)
			return true;
		sleep_ms(1);
	}
	return false;
}

static void *reader(void *arg)
{
	(void)arg;
	mcg_fpage_data_read_lock(&page);
	__atomic_store_n(&state, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2)
		sleep_ms(1);
	mcg_fpage_data_read_unlock(&page);
	return NULL;
}

static void *writer(void *arg)
{
	(void)arg;
	mcg_fpage_data_write_lock(&page);
	__atomic_store_n(&state, 3, __ATOMIC_RELEASE);
	mcg_fpage_data_write_unlock(&page);
	return NULL;
}

static void test_reader_waits_for_writer(void)
{
	state = 0;
	mcg_fpage_data_write_lock(&page);
	pthread_t t;
	REQUIRE(!pthread_create(&t, NULL, reader, NULL));
	sleep_ms(50);
	CHECK_EQ(__atomic_load_n(&state, __ATOMIC_ACQUIRE), 0); /* still waiting */
	mcg_fpage_data_write_unlock(&page);
	CHECK(wait_state(1));
	CHECK_EQ(__atomic_load_n(&page.data_lock, __ATOMIC_ACQUIRE), 1); /* one reader */
	mcg_fpage_data_read_lock(&page);                                 /* readers share it */
	CHECK_EQ(__atomic_load_n(&page.data_lock, __ATOMIC_ACQUIRE), 2);
	mcg_fpage_data_read_unlock(&page);
	__atomic_store_n(&state, 2, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	CHECK_EQ(page.data_lock, 0);
}

static void test_writer_waits_for_reader(void)
{
	state = 0;
	mcg_fpage_data_read_lock(&page);
	pthread_t t;
	REQUIRE(!pthread_create(&t, NULL, writer, NULL));
	sleep_ms(50);
	CHECK_EQ(__atomic_load_n(&state, __ATOMIC_ACQUIRE), 0); /* still waiting */
	mcg_fpage_data_read_unlock(&page);
	CHECK(wait_state(3));
	pthread_join(t, NULL);
	CHECK_EQ(page.data_lock, 0);
}

/* try_get: a reference taken while one is held; none once the last went
 * (a page a read section still sees after its last put). */
static void test_try_get(void)
{
	struct mcg_fpage p = {0};
	__atomic_store_n(&p.refcnt, 1, __ATOMIC_RELAXED);
	CHECK(mcg_fpage_try_get(&p));
	CHECK_EQ(__atomic_load_n(&p.refcnt, __ATOMIC_RELAXED), 2);
	__atomic_store_n(&p.refcnt, 0, __ATOMIC_RELAXED);
	CHECK(!mcg_fpage_try_get(&p));
	CHECK_EQ(__atomic_load_n(&p.refcnt, __ATOMIC_RELAXED), 0);
}

int main(void)
{
	RUN(test_reader_waits_for_writer);
	RUN(test_writer_waits_for_reader);
	RUN(test_try_get);
	return test_done();
}
