/* SPDX-License-Identifier: MIT */
/*
 * test_stat.c - per-CPU statistics and events (group/stat.c): memory.stat
 * sums over the subtree, survives the removal and freeing of descendants
 * (folded into the parent), adds from many threads are exact; events count
 * locally once and hierarchically up to the root.
 *
 *     root
 *      `- a
 *          `- b
 */
#include <pthread.h>

#include "group/group.h"
#include "test.h"

static void test_hierarchical_stats(void)
{
	mcg_group_t *a, *b;
	REQUIRE(mcg_group_create(NULL, "a", &a) == 0);
	REQUIRE(mcg_group_create(a, "b", &b) == 0);
	int64_t v[MCG_NR_STATS];
	mcg_group_stat_mod(a, MCG_STAT_CHARGE_FORCED, 5);
	mcg_group_stat_mod(b, MCG_STAT_CHARGE_FORCED, 7);
	mcg_group_stat_flush(a, v);
	CHECK_EQ(v[MCG_STAT_CHARGE_FORCED], 12);
	mcg_group_stat_flush(b, v);
	CHECK_EQ(v[MCG_STAT_CHARGE_FORCED], 7);
	CHECK_EQ(mcg_group_stat_local(a, MCG_STAT_CHARGE_FORCED), 5);
	CHECK_EQ(mcg_group_remove(b), 0);
	mcg_group_stat_flush(a, v);
	CHECK_EQ(v[MCG_STAT_CHARGE_FORCED], 12); /* dying child still counted */
	mcg_group_put(b);
	mcg_group_stat_flush(a, v);
	CHECK_EQ(v[MCG_STAT_CHARGE_FORCED], 12); /* folded into a */
	CHECK_EQ(mcg_group_stat_local(a, MCG_STAT_CHARGE_FORCED), 5);
	mcg_group_stat_mod(a, MCG_STAT_CHARGE_FORCED, -12);
	mcg_group_stat_flush(a, v);
	CHECK_EQ(v[MCG_STAT_CHARGE_FORCED], 0);
	mcg_group_remove(a);
	mcg_group_put(a);
}

static mcg_group_t *shared;

static void *adder(void *arg)
{
	for (int i = 0; i < 100000; i++)
		mcg_group_stat_mod(shared, MCG_STAT_CHARGE_FORCED, 1);
	return NULL;
}

static void test_threads_exact(void)
{
	REQUIRE(mcg_group_create(NULL, "adders", &shared) == 0);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, adder, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(mcg_group_stat_local(shared, MCG_STAT_CHARGE_FORCED), 400000);
	mcg_group_remove(shared);
	mcg_group_put(shared);
}

static void test_events(void)
{
	mcg_group_t *a, *b;
	REQUIRE(mcg_group_create(NULL, "ea", &a) == 0);
	REQUIRE(mcg_group_create(a, "eb", &b) == 0);
	long root_before = mcg_group_event_read(mcg_group_root(), MCG_EVENT_OOM, false);
	mcg_group_event(b, MCG_EVENT_OOM);
	mcg_group_event(b, MCG_EVENT_OOM);
	mcg_group_event(a, MCG_EVENT_OOM);
	CHECK_EQ(mcg_group_event_read(b, MCG_EVENT_OOM, true), 2);
	CHECK_EQ(mcg_group_event_read(b, MCG_EVENT_OOM, false), 2);
	CHECK_EQ(mcg_group_event_read(a, MCG_EVENT_OOM, true), 1);
	CHECK_EQ(mcg_group_event_read(a, MCG_EVENT_OOM, false), 3);
	CHECK_EQ(mcg_group_event_read(a, MCG_EVENT_MAX, false), 0);
	CHECK_EQ(mcg_group_event_read(mcg_group_root(), MCG_EVENT_OOM, false), root_before + 3);
	CHECK(!strcmp(mcg_group_event_name(MCG_EVENT_OOM_KILL), "oom_kill"));
	CHECK_EQ(MCG_NR_EVENTS, 5); /* no oom_group_kill: there is no memory.oom.group */
	bool bytes = true;
	CHECK(!strcmp(mcg_group_stat_name(MCG_STAT_CHARGE_FORCED, &bytes), "charge_forced") &&
	      !bytes);
	mcg_group_remove(b), mcg_group_put(b);
	mcg_group_remove(a), mcg_group_put(a);
}

int main(void)
{
	RUN(test_hierarchical_stats);
	RUN(test_threads_exact);
	RUN(test_events);
	return test_done();
}
