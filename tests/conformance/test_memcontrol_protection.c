/* SPDX-License-Identifier: MIT */
/*
 * test_memcontrol_protection.c - the kernel's test_memcg_min / test_memcg_low
 * (tools/testing/selftests/cgroup/test_memcontrol.c), in-process, sizes
 * divided by SCALE.  Cached objects (pcache.h) play page cache; plain
 * charges in G play anonymous memory (no swap: unreclaimable).
 *
 *	A      memory.max = 200M
 *	A/B    memory.{min,low} = 50M
 *	A/B/C  memory.{min,low} = 75M,   fills 50M of cache
 *	A/B/D  memory.{min,low} = 25M,   fills 50M of cache
 *	A/B/E  memory.{min,low} = 0,     fills 50M of cache
 *	A/B/F  memory.{min,low} = 500M,  nothing
 *	A/G    allocates 148M of anon (then frees it)
 *
 * Expected: B ~= 50M (3 %), C ~= 29M (15 %), D ~= 21M (20 %), F = 0;
 * then G allocating 170M fails under min and succeeds under low; under
 * min B still ~= 50M; low events > 0 in C and D, 0 in E and F; no oom
 * event in any child.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "memcg/group.h"
#include "memcg/reclaim.h"
#include "memcontrol.h"
#include "pcache.h"
#include "test.h"

static void free_anon(mcg_group_t *g, long pages)
{
	if (pages)
		mcg_uncharge(g, (unsigned long)pages);
	mcg_group_drain_stocks();
}

static void protection(const char *attr, bool min)
{
	struct pcache pc;
	/* Batch 1: each visit scans exactly its share, as the kernel's LRU scan. */
	REQUIRE(pc_init(&pc, 1) == 0);
	mcg_group_t *a, *b, *g, *c[4];
	char name[16];
	snprintf(name, sizeof(name), "A-%s", attr + 7);
	REQUIRE(mcg_group_create(NULL, name, &a) == 0);
	set_bytes(a, "memory.max", MB(200));
	REQUIRE(mcg_group_create(a, "B", &b) == 0);
	set_bytes(b, attr, MB(50));
	REQUIRE(mcg_group_create(a, "G", &g) == 0);
	static const char *const names[4] = {"C", "D", "E", "F"};
	static const long prot[4] = {75, 25, 0, 500};
	for (int i = 0; i < 4; i++) {
		REQUIRE(mcg_group_create(b, names[i], &c[i]) == 0);
		set_bytes(c[i], attr, MB(prot[i]));
	}
	for (int i = 0; i < 3; i++)
		CHECK_EQ(pc_fill(&pc, c[i], MB(50)), 0);
	mcg_group_drain_stocks();
	CHECK(values_close(current_pages(b), MB(150), 3));

	long got = alloc_anon(g, MB(148));
	CHECK_EQ(got, MB(148));
	mcg_group_drain_stocks();
	long cur[4];
	for (int i = 0; i < 4; i++)
		cur[i] = current_pages(c[i]);
	long bcur = current_pages(b);
	fprintf(stderr, "%s: B %.2fM C %.2fM D %.2fM E %.2fM F %.2fM (x%d)\n", attr,
	        bcur * 4096.0 * SCALE / (1 << 20), cur[0] * 4096.0 * SCALE / (1 << 20),
	        cur[1] * 4096.0 * SCALE / (1 << 20), cur[2] * 4096.0 * SCALE / (1 << 20),
	        cur[3] * 4096.0 * SCALE / (1 << 20), SCALE);
	CHECK(values_close(bcur, MB(50), 3));
	CHECK(values_close(cur[0], MB(29), 15));
	CHECK(values_close(cur[1], MB(21), 20));
	CHECK_EQ(cur[3], 0);
	free_anon(g, got);

	/* More than the unprotected memory in A. */
	got = alloc_anon(g, MB(170));
	if (min) {
		CHECK(got < MB(170)); /* memory.min protects the cache */
		mcg_group_drain_stocks();
		CHECK(values_close(current_pages(b), MB(50), 3));
	} else {
		CHECK_EQ(got, MB(170)); /* memory.low gives way */
	}
	free_anon(g, got);

	for (int i = 0; i < 4; i++) {
		CHECK_EQ(read_key(c[i], "memory.events", "oom"), 0);
		long low = read_key(c[i], "memory.events", "low");
		if (min)
			CHECK_EQ(low, 0);
		else if (i <= 1)
			CHECK(low > 0);
		else
			CHECK_EQ(low, 0);
	}
	pc_destroy(&pc);
	mcg_group_drain_stocks();
	CHECK_EQ(current_pages(a), 0);
	for (int i = 0; i < 4; i++) {
		mcg_group_remove(c[i]);
		mcg_group_put(c[i]);
	}
	mcg_group_remove(b);
	mcg_group_put(b);
	mcg_group_remove(g);
	mcg_group_put(g);
	mcg_group_remove(a);
	mcg_group_put(a);
}

static void test_memcg_min(void) { protection("memory.min", true); }

static void test_memcg_low(void) { protection("memory.low", false); }

/* Effective protection by hand: the overcommitted split of B's 50M. */
static void test_effective_protection(void)
{
	struct pcache pc;
	REQUIRE(pc_init(&pc, 32) == 0);
	mcg_group_t *a, *b, *c, *d;
	REQUIRE(mcg_group_create(NULL, "EP", &a) == 0);
	REQUIRE(mcg_group_create(a, "B", &b) == 0);
	REQUIRE(mcg_group_create(b, "C", &c) == 0);
	REQUIRE(mcg_group_create(b, "D", &d) == 0);
	set_bytes(b, "memory.min", 600);
	set_bytes(c, "memory.min", 900);
	set_bytes(d, "memory.min", 300);
	CHECK_EQ(pc_fill(&pc, c, 600), 0);
	CHECK_EQ(pc_fill(&pc, d, 600), 0);
	mcg_group_drain_stocks();
	unsigned long emin, elow;
	mcg_reclaim_protection(a, b, &emin, &elow);
	CHECK_EQ(emin, 600);
	mcg_reclaim_protection(a, c, &emin, &elow);
	CHECK_EQ(emin, 600 * 600 / 900); /* 600 claimed of 900 claimed in all */
	mcg_reclaim_protection(a, d, &emin, &elow);
	CHECK_EQ(emin, 300 * 600 / 900);
	mcg_reclaim_protection(b, c, &emin, &elow); /* B is the target: C's own setting */
	CHECK_EQ(emin, 900);
	pc_destroy(&pc);
	mcg_group_t *v[] = {c, d, b, a};
	for (int i = 0; i < 4; i++) {
		mcg_group_remove(v[i]);
		mcg_group_put(v[i]);
	}
}

int main(void)
{
	RUN(test_effective_protection);
	RUN(test_memcg_min);
	RUN(test_memcg_low);
	return test_done();
}
