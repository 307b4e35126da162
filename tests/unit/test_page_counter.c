/* SPDX-License-Identifier: MIT */
/*
 * test_page_counter.c - hierarchical page counters (group/page_counter.c):
 * charge at every level, try_charge reporting the failing ancestor with
 * nothing left charged, failcnt, watermark, forced charge, margin, the
 * propagated protected usage (children_min_usage / children_low_usage), and
 * charges and uncharges of the levels below an ancestor only (_upto).
 *
 *     root (unlimited)
 *      `- a (max 100)
 *          |- b (max 60)
 *          `- c (unlimited)
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "group/page_counter.h"
#include "test.h"

static struct mcg_page_counter root, a, b, c;

static void setup(void)
{
	mcg_page_counter_init(&root, NULL);
	mcg_page_counter_init(&a, &root);
	mcg_page_counter_init(&b, &a);
	mcg_page_counter_init(&c, &a);
	mcg_page_counter_set_max(&a, 100);
	mcg_page_counter_set_max(&b, 60);
}

static void test_charge_hierarchy(void)
{
	setup();
	struct mcg_page_counter *fail = NULL;
	CHECK(mcg_page_counter_try_charge(&b, 50, &fail));
	CHECK(mcg_page_counter_try_charge(&c, 30, &fail));
	CHECK_EQ(mcg_page_counter_read(&b), 50);
	CHECK_EQ(mcg_page_counter_read(&c), 30);
	CHECK_EQ(mcg_page_counter_read(&a), 80);
	CHECK_EQ(mcg_page_counter_read(&root), 80);
	/* b's own limit */
	CHECK(!mcg_page_counter_try_charge(&b, 11, &fail));
	CHECK(fail == &b);
	CHECK_EQ(mcg_page_counter_get(&b, failcnt), 1);
	/* a's limit, through c: c's charge was backed out */
	fail = NULL;
	CHECK(!mcg_page_counter_try_charge(&c, 21, &fail));
	CHECK(fail == &a);
	CHECK_EQ(mcg_page_counter_get(&a, failcnt), 1);
	CHECK_EQ(mcg_page_counter_get(&c, failcnt), 0);
	CHECK_EQ(mcg_page_counter_read(&c), 30);
	CHECK_EQ(mcg_page_counter_read(&a), 80);
	CHECK_EQ(mcg_page_counter_read(&root), 80);
	CHECK_EQ(mcg_page_counter_margin(&a), 20);
	CHECK_EQ(mcg_page_counter_margin(&b), 10);
	CHECK(mcg_page_counter_try_charge(&c, 20, &fail)); /* exactly to max */
	CHECK_EQ(mcg_page_counter_margin(&a), 0);
	/* forced: over max */
	mcg_page_counter_charge(&c, 5);
	CHECK_EQ(mcg_page_counter_read(&a), 105);
	CHECK_EQ(mcg_page_counter_margin(&a), 0);
	CHECK_EQ(mcg_page_counter_get(&a, watermark), 105);
	mcg_page_counter_uncharge(&c, 55);
	mcg_page_counter_uncharge(&b, 50);
	CHECK_EQ(mcg_page_counter_read(&a), 0);
	CHECK_EQ(mcg_page_counter_read(&root), 0);
	CHECK_EQ(mcg_page_counter_get(&a, watermark), 105); /* peak stays */
	CHECK_EQ(mcg_page_counter_get(&b, watermark), 50);
	CHECK_EQ(mcg_page_counter_get(&c, watermark), 55);
}

/* The levels below @stop only: the charge stock's charges through an ancestor's entry. */
static void test_upto(void)
{
	setup();
	struct mcg_page_counter *fail = NULL;
	CHECK(mcg_page_counter_try_charge_upto(&b, &a, 40, &fail));
	CHECK_EQ(mcg_page_counter_read(&b), 40);
	CHECK_EQ(mcg_page_counter_read(&a), 0); /* stop is excluded */
	CHECK_EQ(mcg_page_counter_read(&root), 0);
	CHECK_EQ(mcg_page_counter_get(&b, watermark), 40);
	/* b's max still holds; a's does not count (a is not charged) */
	CHECK(!mcg_page_counter_try_charge_upto(&b, &a, 21, &fail));
	CHECK(fail == &b);
	CHECK_EQ(mcg_page_counter_get(&b, failcnt), 1);
	CHECK_EQ(mcg_page_counter_read(&b), 40);
	mcg_page_counter_charge(&c, 95); /* a at 95 of 100: b's 20 more fit below a */
	CHECK(mcg_page_counter_try_charge_upto(&b, &a, 20, &fail));
	CHECK_EQ(mcg_page_counter_read(&b), 60);
	CHECK_EQ(mcg_page_counter_read(&a), 95);
	/* up to root: b and a, not root; a's max now counts */
	CHECK(!mcg_page_counter_try_charge_upto(&c, &root, 6, &fail));
	CHECK(fail == &a);
	CHECK_EQ(mcg_page_counter_read(&c), 95); /* backed out */
	CHECK(mcg_page_counter_try_charge_upto(&c, &root, 5, &fail));
	CHECK_EQ(mcg_page_counter_read(&a), 100);
	CHECK_EQ(mcg_page_counter_read(&root), 95);
	/* NULL: every level, as mcg_page_counter_try_charge */
	CHECK(!mcg_page_counter_try_charge_upto(&c, NULL, 1, &fail));
	CHECK(fail == &a);
	mcg_page_counter_uncharge_upto(&c, &root, 5);
	CHECK_EQ(mcg_page_counter_read(&c), 95);
	CHECK_EQ(mcg_page_counter_read(&a), 95);
	CHECK_EQ(mcg_page_counter_read(&root), 95);
	mcg_page_counter_uncharge_upto(&b, &a, 60);
	CHECK_EQ(mcg_page_counter_read(&b), 0);
	CHECK_EQ(mcg_page_counter_read(&a), 95);
	mcg_page_counter_uncharge_upto(&c, &c, 95); /* stop == c: nothing */
	CHECK_EQ(mcg_page_counter_read(&c), 95);
	mcg_page_counter_uncharge_upto(&c, NULL, 95);
	CHECK_EQ(mcg_page_counter_read(&c), 0);
	CHECK_EQ(mcg_page_counter_read(&a), 0);
	CHECK_EQ(mcg_page_counter_read(&root), 0);
}

static void test_set_max_below_usage(void)
{
	setup();
	struct mcg_page_counter *fail;
	CHECK(mcg_page_counter_try_charge(&c, 40, &fail));
	mcg_page_counter_set_max(&c, 10);
	CHECK_EQ(mcg_page_counter_read(&c), 40); /* usage stays; reclaim's job */
	CHECK(!mcg_page_counter_try_charge(&c, 1, &fail));
	CHECK(fail == &c);
	mcg_page_counter_uncharge(&c, 31);
	CHECK(mcg_page_counter_try_charge(&c, 1, &fail));
	mcg_page_counter_uncharge(&c, 10);
	CHECK_EQ(mcg_page_counter_read(&root), 0);
}

static void test_protected_usage(void)
{
	setup();
	struct mcg_page_counter *fail;
	mcg_page_counter_set_min(&b, 20);
	mcg_page_counter_set_low(&c, 30);
	CHECK_EQ(mcg_page_counter_get(&a, children_min_usage), 0);
	CHECK(mcg_page_counter_try_charge(&b, 10, &fail));
	CHECK_EQ(mcg_page_counter_get(&b, min_usage), 10);
	CHECK_EQ(mcg_page_counter_get(&a, children_min_usage), 10);
	CHECK(mcg_page_counter_try_charge(&b, 25, &fail));
	CHECK_EQ(mcg_page_counter_get(&a, children_min_usage), 20); /* capped at min */
	CHECK(mcg_page_counter_try_charge(&c, 40, &fail));
	CHECK_EQ(mcg_page_counter_get(&a, children_low_usage), 30);
	CHECK_EQ(mcg_page_counter_get(&a, children_min_usage), 20);
	mcg_page_counter_set_min(&b, 5); /* lowering min republishes */
	CHECK_EQ(mcg_page_counter_get(&a, children_min_usage), 5);
	mcg_page_counter_uncharge(&c, 35);
	CHECK_EQ(mcg_page_counter_get(&a, children_low_usage), 5);
	mcg_page_counter_uncharge(&c, 5);
	mcg_page_counter_uncharge(&b, 35);
	CHECK_EQ(mcg_page_counter_get(&a, children_min_usage), 0);
	CHECK_EQ(mcg_page_counter_get(&a, children_low_usage), 0);
}

/*
 * Racing try_charges at the limit.  Four racers, two under b that each try
 * to hold up to 60 pages and two under c that each try to hold up to 25, in
 * chunks of 1..8: together they ask for 170 pages where a allows 100, and
 * b's two for 120 where b allows 60, so charges fail at both limits.
 *
 * try_charge adds, checks and backs out (the kernel's page_counter): a
 * reader may see a level above max for a moment, by the chunks in flight
 * (at most one per racer).  What must hold at every instant is that the
 * pages of charges that succeeded and are not yet uncharged fit under max:
 * each racer adds its chunk to `committed` after a successful try_charge
 * and takes it away before the uncharge, so committed never exceeds what
 * is really held; the racer checks the sum it made at once, and a checker
 * thread samples, while they race:
 *   committed_a <= 100, committed_b <= 60        (the invariant)
 *   0 <= usage(x) <= max(x) + chunks in flight   (no underflow, no leak)
 * At the end: every failure a racer saw is counted in exactly one level's
 * failcnt (a for c's racers; a or b for b's), failures did happen at both
 * limits, usage is 0 everywhere and each watermark <= max (it is raised
 * only by a charge that fit).
 */
#define RACERS 4
#define RACE_CHUNK 8
#define RACE_WANT_B 60
#define RACE_WANT_C 25
#define RACE_ITERS 200000

static long committed_a, committed_b;                /* pages of successful charges held (atomic) */
static long race_fail_a, race_fail_b, race_bad_fail; /* failures seen, by level */
static int race_done;
static unsigned long race_samples, race_at_limit, race_over_seen;
static pthread_barrier_t race_start;

static void *racer(void *arg)
{
	long me = (long)(intptr_t)arg;
	struct mcg_page_counter *cnt = me & 1 ? &b : &c;
	unsigned seed = 2654435761u * (unsigned)(me + 1);
	const long want = cnt == &b ? RACE_WANT_B : RACE_WANT_C;
	long chunks[RACE_WANT_B];
	int n = 0;
	long held = 0;
	pthread_barrier_wait(&race_start);
	/* RACE_ITERS steps, and on (up to 20 times as many) until both limits
	 * have failed someone: time slices must not let the racers run one
	 * after the other and miss each other. */
	for (long i = 0; i < 20l * RACE_ITERS; i++) {
		if (i >= RACE_ITERS && __atomic_load_n(&race_fail_a, __ATOMIC_RELAXED) &&
		    __atomic_load_n(&race_fail_b, __ATOMIC_RELAXED))
			break;
		seed = seed * 1103515245u + 12345u;
		long nr = 1 + (long)((seed >> 16) % RACE_CHUNK);
		/* Mostly charge while under the target: the racers press on max. */
		bool grow = held + nr <= want && (seed >> 8) % 4 != 0;
		if (grow || n == 0) {
			struct mcg_page_counter *fail = NULL;
			if (held + nr > want)
				continue;
			if (mcg_page_counter_try_charge(cnt, nr, &fail)) {
				/* the racer checks too, at the moment its charge counts */
				CHECK(__atomic_add_fetch(&committed_a, nr, __ATOMIC_RELAXED) <=
				      100);
				if (cnt == &b)
					CHECK(__atomic_add_fetch(&committed_b, nr,
					                         __ATOMIC_RELAXED) <= 60);
				chunks[n++] = nr;
				held += nr;
			} else if (fail == &a) {
				__atomic_fetch_add(&race_fail_a, 1, __ATOMIC_RELAXED);
			} else if (fail == &b && cnt == &b) {
				__atomic_fetch_add(&race_fail_b, 1, __ATOMIC_RELAXED);
			} else {
				__atomic_fetch_add(&race_bad_fail, 1, __ATOMIC_RELAXED);
			}
		} else {
			nr = chunks[--n];
			held -= nr;
			__atomic_fetch_sub(&committed_a, nr, __ATOMIC_RELAXED);
			if (cnt == &b)
				__atomic_fetch_sub(&committed_b, nr, __ATOMIC_RELAXED);
			mcg_page_counter_uncharge(cnt, nr);
		}
	}
	__atomic_fetch_sub(&committed_a, held, __ATOMIC_RELAXED);
	if (cnt == &b)
		__atomic_fetch_sub(&committed_b, held, __ATOMIC_RELAXED);
	mcg_page_counter_uncharge(cnt, held);
	return NULL;
}

static void *race_checker(void *arg)
{
	(void)arg;
	const long in_flight = RACERS * RACE_CHUNK;
	while (!__atomic_load_n(&race_done, __ATOMIC_ACQUIRE)) {
		long ca = __atomic_load_n(&committed_a, __ATOMIC_RELAXED);
		long cb = __atomic_load_n(&committed_b, __ATOMIC_RELAXED);
		long ua = mcg_page_counter_read(&a), ub = mcg_page_counter_read(&b);
		long uc = mcg_page_counter_read(&c), ur = mcg_page_counter_read(&root);
		CHECK(ca >= 0 && ca <= 100);
		CHECK(cb >= 0 && cb <= 60);
		CHECK(ua >= 0 && ua <= 100 + in_flight);
		CHECK(ub >= 0 && ub <= 60 + RACERS / 2 * RACE_CHUNK);
		CHECK(uc >= 0 && uc <= 100 + in_flight);
		CHECK(ur >= 0 && ur <= 100 + in_flight);
		race_samples++;
		race_at_limit += ca > 100 - RACE_CHUNK;
		race_over_seen += ua > 100;
	}
	return NULL;
}

static void test_racing_try_charge(void)
{
	setup();
	committed_a = committed_b = 0;
	race_fail_a = race_fail_b = race_bad_fail = 0;
	race_samples = race_at_limit = race_over_seen = 0;
	race_done = 0;
	pthread_t t[RACERS], chk;
	pthread_barrier_init(&race_start, NULL, RACERS);
	REQUIRE(pthread_create(&chk, NULL, race_checker, NULL) == 0);
	for (long i = 0; i < RACERS; i++)
		REQUIRE(pthread_create(&t[i], NULL, racer, (void *)(intptr_t)i) == 0);
	for (int i = 0; i < RACERS; i++)
		pthread_join(t[i], NULL);
	__atomic_store_n(&race_done, 1, __ATOMIC_RELEASE);
	pthread_join(chk, NULL);
	pthread_barrier_destroy(&race_start);
	fprintf(stderr,
	        "racing: %ld failures at a, %ld at b; %lu samples, %lu within a chunk of a's "
	        "max, %lu saw a's usage above max in flight; watermark a %ld, b %ld\n",
	        race_fail_a, race_fail_b, race_samples, race_at_limit, race_over_seen,
	        mcg_page_counter_get(&a, watermark), mcg_page_counter_get(&b, watermark));
	CHECK_EQ(race_bad_fail, 0); /* c's racers fail only at a */
	CHECK(race_fail_a > 0);
	CHECK(race_fail_b > 0);
	CHECK_EQ(mcg_page_counter_get(&a, failcnt), race_fail_a);
	CHECK_EQ(mcg_page_counter_get(&b, failcnt), race_fail_b);
	CHECK_EQ(mcg_page_counter_get(&c, failcnt), 0);
	CHECK_EQ(mcg_page_counter_get(&root, failcnt), 0);
	CHECK(race_samples > 0);
	CHECK_EQ(committed_a, 0);
	CHECK_EQ(committed_b, 0);
	CHECK_EQ(mcg_page_counter_read(&a), 0);
	CHECK_EQ(mcg_page_counter_read(&b), 0);
	CHECK_EQ(mcg_page_counter_read(&c), 0);
	CHECK_EQ(mcg_page_counter_read(&root), 0);
	CHECK(mcg_page_counter_get(&a, watermark) <= 100);
	CHECK(mcg_page_counter_get(&a, watermark) > 100 - RACE_CHUNK);
	CHECK(mcg_page_counter_get(&b, watermark) <= 60);
	CHECK(mcg_page_counter_get(&b, watermark) > 60 - RACE_CHUNK);
}

/* init sets every field, whatever the memory held before: a counter reused in
 * place (a group's memory recycled) starts from nothing, not from the bytes
 * left there. */
static void test_init_every_field(void)
{
	struct mcg_page_counter parent, x;
	memset(&x, 0xa5, sizeof(x));
	mcg_page_counter_init(&parent, NULL);
	mcg_page_counter_init(&x, &parent);
	CHECK_EQ(x.usage, 0);
	CHECK_EQ(x.min_usage, 0);
	CHECK_EQ(x.low_usage, 0);
	CHECK_EQ(x.children_min_usage, 0);
	CHECK_EQ(x.children_low_usage, 0);
	CHECK_EQ(x.emin, 0);
	CHECK_EQ(x.elow, 0);
	CHECK_EQ(x.watermark, 0);
	CHECK_EQ(x.failcnt, 0);
	CHECK_EQ(x.min, 0);
	CHECK_EQ(x.low, 0);
	CHECK_EQ(x.high, MCG_PAGE_COUNTER_MAX);
	CHECK_EQ(x.max, MCG_PAGE_COUNTER_MAX);
	CHECK(x.parent == &parent);
}

int main(void)
{
	RUN(test_charge_hierarchy);
	RUN(test_init_every_field);
	RUN(test_upto);
	RUN(test_set_max_below_usage);
	RUN(test_protected_usage);
	RUN(test_racing_try_charge);
	return test_done();
}
