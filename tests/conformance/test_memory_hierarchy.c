/* SPDX-License-Identifier: MIT */
/*
 * test_memory_hierarchy.c - cgroup v2 memory semantics, in the style of the
 * kernel's tools/testing/selftests/cgroup/test_memcontrol.c: every check
 * goes through the text files, values compared with values_close().
 *
 * test_new_group_zero:       a new group reads 0 current, 0 peak.
 * test_hierarchical_usage:   threads charge the leaves concurrently.
 *
 *     A            current = own 8M + B + C, within 64 pages x CPUs running,
 *     |- B  16M    exact after mcg_group_drain_stocks()
 *     `- C  24M
 *
 * test_max_every_level:
 *
 *     A  max 8M          charges in C stop at A's 8M: A max events 1+ local,
 *     `- B  max max      B, C none; oom counted on A; hierarchical events on
 *         `- C  max 4M   A include C's own max hits, .local do not.
 *
 * test_bad_writes: every file keeps its value after a rejected write.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "memcg/debug.h"
#include "memcg/group.h"
#include "group_file.h"
#include "test.h"

#define MB (1024L * 1024L)
#define PAGES(bytes) ((bytes) / (long)MCG_GROUP_PAGE_SIZE)

/* The selftests' values_close(): |a - b| <= (a + b) * err / 100. */
static int values_close(long a, long b, int err) { return labs(a - b) <= (a + b) / 100 * err; }

static mcg_group_t *mk(mcg_group_t *parent, const char *name)
{
	mcg_group_t *g = NULL;
	if (mcg_group_create(parent, name, &g))
		return NULL;
	return g;
}

static void rm(mcg_group_t *g)
{
	mcg_group_remove(g);
	mcg_group_put(g);
}

static void test_new_group_zero(void)
{
	mcg_group_t *g = mk(NULL, "fresh");
	REQUIRE(g);
	CHECK_EQ(read_long(g, "memory.current"), 0);
	CHECK_EQ(read_long(g, "memory.peak"), 0);
	CHECK_EQ(read_key(g, "memory.stat", "anon"), 0);
	CHECK_EQ(read_key(g, "cgroup.stat", "nr_descendants"), 0);
	rm(g);
}

struct charger {
	mcg_group_t *g;
	long pages;
	pthread_barrier_t *hold;
};

static void *charge_then_hold(void *arg)
{
	struct charger *c = arg;
	for (long i = 0; i < c->pages; i++)
		CHECK_EQ(mcg_charge(c->g, 1, 0), 0);
	pthread_barrier_wait(c->hold); /* charged */
	pthread_barrier_wait(c->hold); /* main measured */
	for (long i = 0; i < c->pages; i++)
		CHECK_EQ(mcg_uncharge(c->g, 1), 0);
	return NULL;
}

static void test_hierarchical_usage(void)
{
	mcg_group_t *a = mk(NULL, "A"), *b = mk(a, "B"), *c = mk(a, "C");
	REQUIRE(a && b && c);
	long slack = (long)MCG_GROUP_STOCK_SLACK_PAGES * mcg_nr_cpus() * MCG_GROUP_PAGE_SIZE;
	pthread_barrier_t hold;
	pthread_barrier_init(&hold, NULL, 4);
	struct charger ch[3] = {
	        {a, PAGES(8 * MB), &hold}, {b, PAGES(16 * MB), &hold}, {c, PAGES(24 * MB), &hold}};
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, charge_then_hold, &ch[i]);
	pthread_barrier_wait(&hold);
	long ca = read_long(a, "memory.current"), cb = read_long(b, "memory.current"),
	     cc = read_long(c, "memory.current");
	CHECK(ca >= 48 * MB && ca <= 48 * MB + slack);
	CHECK(cb >= 16 * MB && cb <= 16 * MB + slack);
	CHECK(cc >= 24 * MB && cc <= 24 * MB + slack);
	CHECK(values_close(ca, 48 * MB, 3));
	CHECK_EQ(read_key(a, "memory.stat", "anon"), 48 * MB); /* stats are exact */
	CHECK_EQ(read_key(b, "memory.stat", "anon"), 16 * MB);
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(a, "memory.current"), 48 * MB);
	CHECK_EQ(read_long(b, "memory.current"), 16 * MB);
	CHECK_EQ(read_long(c, "memory.current"), 24 * MB);
	CHECK(read_long(a, "memory.peak") >= 48 * MB);
	CHECK_EQ(read_key(a, "cgroup.stat", "nr_descendants"), 2);
	pthread_barrier_wait(&hold);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(a, "memory.current"), 0);
	CHECK_EQ(read_long(b, "memory.current"), 0);
	CHECK_EQ(read_long(c, "memory.current"), 0);
	CHECK_EQ(read_key(a, "memory.stat", "anon"), 0);
	pthread_barrier_destroy(&hold);
	rm(b);
	rm(c);
	CHECK_EQ(read_key(a, "cgroup.stat", "nr_dying_descendants"), 0);
	rm(a);
}

static void test_max_every_level(void)
{
	/* On one CPU throughout: the max events are counted exactly only if
	 * the charges meet one CPU's stock (after a move to another CPU, the
	 * pages left in the first one's make a charge fail, drain and pass:
	 * one event more). */
	cpu_set_t old, one;
	REQUIRE(!sched_getaffinity(0, sizeof(old), &old));
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	REQUIRE(!sched_setaffinity(0, sizeof(one), &one));
	mcg_group_t *a = mk(NULL, "A"), *b = mk(a, "B"), *c = mk(b, "C");
	REQUIRE(a && b && c);
	CHECK_EQ(mcg_group_write(a, "memory.max", "8M"), 0);
	CHECK_EQ(mcg_group_write(c, "memory.max", "4M\n"), 0);
	/* C hits its own 4M */
	long got = 0;
	while (mcg_charge(c, 1, 0) == 0)
		got++;
	CHECK_EQ(got, PAGES(4 * MB));
	CHECK_EQ(read_key(c, "memory.events.local", "max"), 2); /* before and after the drain */
	CHECK_EQ(read_key(c, "memory.events.local", "oom"), 1);
	CHECK_EQ(read_key(b, "memory.events.local", "max"), 0);
	CHECK_EQ(read_key(b, "memory.events", "max"), 2);
	CHECK_EQ(read_key(a, "memory.events", "max"), 2);
	CHECK_EQ(read_key(a, "memory.events.local", "max"), 0);
	/* B fills up to A's 8M */
	long gotb = 0;
	while (mcg_charge(b, 1, 0) == 0)
		gotb++;
	CHECK_EQ(gotb, PAGES(4 * MB));
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(a, "memory.current"), 8 * MB);
	CHECK_EQ(read_long(b, "memory.current"), 8 * MB);
	CHECK_EQ(read_long(c, "memory.current"), 4 * MB);
	CHECK_EQ(read_key(a, "memory.events.local", "max"), 2);
	CHECK_EQ(read_key(a, "memory.events.local", "oom"), 1);
	CHECK_EQ(read_key(a, "memory.events", "max"), 4);
	CHECK_EQ(read_key(a, "memory.events", "oom"), 2);
	CHECK_EQ(read_key(b, "memory.events", "max"), 2); /* C's; A's do not go down */
	CHECK_EQ(read_key(c, "memory.events", "max"), 2);
	CHECK(read_long(a, "memory.peak") <= 8 * MB);
	/* a forced charge passes max */
	CHECK_EQ(mcg_charge(c, 1, MCG_CHARGE_FORCE), 0);
	CHECK_EQ(read_long(c, "memory.current"), 4 * MB + 4096);
	CHECK_EQ(read_key(c, "memory.stat", "charge_forced"), 1);
	CHECK_EQ(mcg_uncharge(c, (unsigned long)got + 1), 0);
	CHECK_EQ(mcg_uncharge(b, (unsigned long)gotb), 0);
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(a, "memory.current"), 0);
	rm(c);
	rm(b);
	rm(a);
	sched_setaffinity(0, sizeof(old), &old);
}

static void test_high_events(void)
{
	mcg_group_t *a = mk(NULL, "H"), *b = mk(a, "HB");
	REQUIRE(a && b);
	CHECK_EQ(mcg_group_write(a, "memory.high", "1M"), 0);
	for (int i = 0; i < PAGES(2 * MB); i++)
		CHECK_EQ(mcg_charge(b, 1, 0), 0); /* high never fails a charge */
	CHECK(read_key(a, "memory.events.local", "high") > 0);
	CHECK_EQ(read_key(b, "memory.events", "high"), 0);
	CHECK_EQ(read_key(a, "memory.events", "max"), 0);
	CHECK_EQ(mcg_uncharge(b, PAGES(2 * MB)), 0);
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(a, "memory.current"), 0);
	rm(b);
	rm(a);
}

static void test_bad_writes(void)
{
	mcg_group_t *g = mk(NULL, "W");
	REQUIRE(g);
	const char *files[] = {"memory.min", "memory.low", "memory.high", "memory.max"};
	const char *bad[] = {"-4096", "1Q", "lots", "", "4096x", "1e6", "+max"};
	for (size_t f = 0; f < 4; f++) {
		CHECK_EQ(mcg_group_write(g, files[f], "12K"), 0);
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			CHECK_EQ(mcg_group_write(g, files[f], bad[i]), -EINVAL);
			CHECK_EQ(read_long(g, files[f]), 12288);
		}
	}
	rm(g);
}

int main(void)
{
	RUN(test_new_group_zero);
	RUN(test_hierarchical_usage);
	RUN(test_max_every_level);
	RUN(test_high_events);
	RUN(test_bad_writes);
	return test_done();
}
