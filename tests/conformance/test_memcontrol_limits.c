/* SPDX-License-Identifier: MIT */
/*
 * test_memcontrol_limits.c - the kernel's test_memcg_high, test_memcg_max,
 * test_memcg_reclaim and test_memcg_oom_events, in-process (sizes / SCALE).
 * Cached objects (pcache.h) play page cache; plain charges play anon.
 *
 *	high:    memory.high = 30M; 31M of anon succeeds (throttled, not
 *	         failed); 50M of cache settles at ~30M (5 %); high events > 0.
 *	max:     memory.max = 30M; 50M of cache settles at ~30M (5 %), max
 *	         events > 0; 100M of anon fails, oom counted once.
 *	oom:     max 30M, an OOM policy kills the group: oom 1, oom_kill 1.
 *	reclaim: 50M of cache; memory.reclaim of (current - 30M) leaves ~30M
 *	         (3 %); with only anon left it answers -EAGAIN.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "memcg/group.h"
#include "memcg/reclaim.h"
#include "memcontrol.h"
#include "pcache.h"
#include "test.h"

static struct pcache pc;

static mcg_group_t *mk(const char *name)
{
	mcg_group_t *g = NULL;
	if (mcg_group_create(NULL, name, &g))
		return NULL;
	return g;
}

static void rm(mcg_group_t *g)
{
	mcg_group_remove(g);
	mcg_group_put(g);
}

static void test_memcg_high(void)
{
	mcg_group_t *g = mk("high");
	REQUIRE(g);
	set_bytes(g, "memory.high", MB(30));
	long got = alloc_anon(g, MB(31)); /* throttled, never failed */
	CHECK_EQ(got, MB(31));
	CHECK(read_key(g, "memory.events", "high") > 0);
	mcg_uncharge(g, (unsigned long)got);
	CHECK_EQ(pc_fill(&pc, g, MB(50)), 0);
	long cur = current_pages(g);
	fprintf(stderr, "high: current %.2fM of high 30M (x%d), throttled %ld ms\n",
	        cur * 4096.0 * SCALE / (1 << 20), SCALE,
	        read_key(g, "memory.stat", "throttled_ms"));
	CHECK(values_close(cur, MB(30), 5));
	CHECK(read_key(g, "memory.stat", "pgsteal_direct") > 0);
	CHECK(read_key(g, "memory.stat", "pgscan") >= read_key(g, "memory.stat", "pgsteal"));
	CHECK_EQ(read_key(g, "memory.events", "oom"), 0);
	CHECK_EQ(mcg_reclaim_high_delay_ms(g, 64), 0); /* settled: no delay owed */
	rm(g);
}

static void test_high_delay(void)
{
	mcg_group_t *g = mk("delay");
	REQUIRE(g);
	set_bytes(g, "memory.high", 1000);
	CHECK_EQ(mcg_charge(g, 1100, MCG_CHARGE_NOWAIT),
	         0); /* 10 % over: worker reclaims nothing */
	/* overage = 0.1 * 2^20; delay = overage^2 * 1000 >> 34, * 64 / 64 */
	unsigned long ov = (100ul << 20) / 1000;
	unsigned long expect = ((ov * ov * 1000) >> 34) * 64 / 64;
	CHECK_EQ(mcg_reclaim_high_delay_ms(g, 64),
	         expect > 10 ? (expect > 2000 ? 2000 : expect) : 0);
	mcg_uncharge(g, 1100);
	CHECK_EQ(mcg_charge(g, 4000, MCG_CHARGE_NOWAIT), 0); /* 4x high: capped at 2 s */
	CHECK_EQ(mcg_reclaim_high_delay_ms(g, 64), 2000);
	CHECK_EQ(mcg_reclaim_high_delay_ms(NULL, 64), 0); /* the current group: the root */
	mcg_group_t *prev = mcg_group_enter(g);
	CHECK_EQ(mcg_reclaim_high_delay_ms(NULL, 64), 2000); /* the current group: g */
	mcg_group_leave(prev);
	mcg_uncharge(g, 4000);
	rm(g);
}

static void test_memcg_max(void)
{
	mcg_group_t *g = mk("max");
	REQUIRE(g);
	set_bytes(g, "memory.max", MB(30));
	CHECK_EQ(pc_fill(&pc, g, MB(50)), 0);
	long cur = current_pages(g);
	CHECK(values_close(cur, MB(30), 5));
	CHECK(cur <= MB(30));
	CHECK(read_key(g, "memory.events", "max") > 0);
	CHECK_EQ(read_key(g, "memory.events", "oom"), 0);
	/* Unreclaimable overflow: the cache goes, then the charge fails. */
	long got = alloc_anon(g, MB(100));
	CHECK_EQ(got, MB(30)); /* all the cache made room, to the last page */
	CHECK_EQ(read_key(g, "memory.events", "oom"), 1);
	CHECK_EQ(read_key(g, "memory.events", "oom_kill"), 0);
	mcg_uncharge(g, (unsigned long)got);
	rm(g);
}

static mcg_group_t *victim_of;
static long victim_pages;
static int kills;

static mcg_group_t *kill_policy(mcg_group_t *over, unsigned long nr, void *arg)
{
	(void)nr;
	(void)arg;
	kills++;
	/* "Kill" the tenant: cancel its work, which frees its anon memory. */
	if (victim_pages) {
		mcg_uncharge(victim_of, (unsigned long)victim_pages);
		victim_pages = 0;
	}
	return over;
}

static void test_memcg_oom_events(void)
{
	mcg_group_t *g = mk("oom");
	REQUIRE(g);
	set_bytes(g, "memory.max", MB(30));
	victim_of = g;
	mcg_oom_set_policy(kill_policy, NULL);
	kills = 0;
	victim_pages = alloc_anon(g, MB(30));
	CHECK_EQ(victim_pages, MB(30));
	/* The next page does not fit: the policy kills the tenant, the charge then fits. */
	CHECK_EQ(mcg_charge(g, 1, 0), 0);
	CHECK_EQ(kills, 1);
	CHECK_EQ(read_key(g, "memory.events", "oom"), 1);
	CHECK_EQ(read_key(g, "memory.events", "oom_kill"), 1);
	/* A kill that frees nothing: one oom, one kill, then -ENOMEM. */
	long more = alloc_anon(g, MB(30));
	CHECK_EQ(more, MB(30) - 1); /* every page up to max, the first one held */
	CHECK_EQ(read_key(g, "memory.events", "oom"), 2);
	CHECK_EQ(read_key(g, "memory.events", "oom_kill"), 2);
	CHECK_EQ(read_key(mcg_group_root(), "memory.events.local", "oom_kill"), 0);
	mcg_oom_set_policy(NULL, NULL);
	mcg_uncharge(g, (unsigned long)more + 1);
	rm(g);
}

static void test_memcg_reclaim(void)
{
	mcg_group_t *g = mk("reclaim");
	REQUIRE(g);
	CHECK_EQ(pc_fill(&pc, g, MB(50)), 0);
	long cur = current_pages(g);
	CHECK(values_close(cur, MB(50), 3));
	char buf[32];
	snprintf(buf, sizeof(buf), "%ld", (cur - MB(30)) * PAGE);
	CHECK_EQ(mcg_group_write(g, "memory.reclaim", buf), 0);
	cur = current_pages(g);
	CHECK(values_close(cur, MB(30), 3));
	CHECK(read_key(g, "memory.stat", "pgsteal_proactive") >= MB(20));
	/* Reclaim it all, then ask again with only anon left: -EAGAIN. */
	snprintf(buf, sizeof(buf), "%ld", cur * PAGE);
	CHECK_EQ(mcg_group_write(g, "memory.reclaim", buf), 0);
	CHECK_EQ(current_pages(g), 0);
	CHECK_EQ(alloc_anon(g, 100), 100);
	CHECK_EQ(mcg_group_write(g, "memory.reclaim", "1M"), -EAGAIN);
	CHECK_EQ(mcg_group_write(g, "memory.reclaim", "max"), -EINVAL);
	CHECK_EQ(mcg_group_read(g, "memory.reclaim", buf, sizeof(buf)), -EACCES);
	mcg_uncharge(g, 100);
	rm(g);
}

/* Teardown frees every cached object left: nothing alive, nothing charged. */
static void test_pcache_teardown(void)
{
	pc_destroy(&pc);
	CHECK_EQ(pc.live, 0);
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(mcg_group_root(), "memory.current"), 0);
}

int main(void)
{
	if (pc_init(&pc, 32)) {
		fprintf(stderr, "pcache setup failed\n");
		return 1;
	}
	RUN(test_memcg_high);
	RUN(test_high_delay);
	RUN(test_memcg_max);
	RUN(test_memcg_oom_events);
	RUN(test_memcg_reclaim);
	RUN(test_pcache_teardown);
	return test_done();
}
