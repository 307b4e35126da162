/* SPDX-License-Identifier: MIT */
/*
 * test_vmscan.c - reclaim/vmscan.c: the shared cursor spreads consecutive
 * reclaims over siblings; memory.min is never reclaimed, memory.low only
 * when nothing else gives (counting "low"); result fields; callers that
 * cannot sleep get their over-high reclaim done by the worker; a small
 * group at its limit keeps nearly all of it.
 */
#include <unistd.h>

#include "memcg/group.h"
#include "memcg/reclaim.h"
#include "../conformance/pcache.h"
#include "test.h"

static struct pcache pc;

static long current_pages(mcg_group_t *g)
{
	char b[64];
	mcg_group_drain_stocks();
	mcg_group_read(g, "memory.current", b, sizeof(b));
	return atol(b) / 4096;
}

static void set_pages(mcg_group_t *g, const char *file, long pages)
{
	char b[32];
	snprintf(b, sizeof(b), "%ld", pages * 4096);
	CHECK_EQ(mcg_group_write(g, file, b), 0);
}

static void test_cursor_spreads(void)
{
	mcg_group_t *p, *c[3];
	REQUIRE(mcg_group_create(NULL, "cur", &p) == 0);
	for (int i = 0; i < 3; i++) {
		char n[8];
		snprintf(n, sizeof(n), "c%d", i);
		REQUIRE(mcg_group_create(p, n, &c[i]) == 0);
		CHECK_EQ(pc_fill(&pc, c[i], 4096), 0);
	}
	/* Each partial reclaim stops at its goal; the next resumes after it. */
	bool hit[3] = {false, false, false};
	for (int r = 0; r < 3; r++) {
		long before[3];
		for (int i = 0; i < 3; i++)
			before[i] = current_pages(c[i]);
		mcg_reclaim_result_t res;
		CHECK(mcg_reclaim_ex(p, 32, 0, &res) >= 32);
		CHECK(res.scanned >= res.freed);
		for (int i = 0; i < 3; i++)
			if (current_pages(c[i]) < before[i])
				hit[i] = true;
	}
	CHECK(hit[0] && hit[1] && hit[2]);
	for (int i = 0; i < 3; i++) {
		mcg_group_remove(c[i]);
		mcg_group_put(c[i]);
	}
	CHECK(mcg_reclaim(p, 100000, MCG_RECLAIM_PROACTIVE) > 0); /* reparented objects too */
	CHECK_EQ(current_pages(p), 0);
	mcg_group_remove(p);
	mcg_group_put(p);
}

static void test_min_and_low(void)
{
	mcg_group_t *p, *a, *b;
	REQUIRE(mcg_group_create(NULL, "prot", &p) == 0);
	REQUIRE(mcg_group_create(p, "a", &a) == 0);
	REQUIRE(mcg_group_create(p, "b", &b) == 0);
	set_pages(a, "memory.min", 1000);
	set_pages(b, "memory.low", 1000);
	CHECK_EQ(pc_fill(&pc, a, 800), 0);
	CHECK_EQ(pc_fill(&pc, b, 800), 0);
	mcg_reclaim_result_t res;
	/* Both protected: the low pass takes from b only, counting "low". */
	CHECK(mcg_reclaim_ex(p, 100, 0, &res) >= 100);
	CHECK(res.low_reclaimed);
	CHECK_EQ(current_pages(a), 800);
	CHECK(current_pages(b) <= 700);
	char ev[256];
	mcg_group_read(b, "memory.events.local", ev, sizeof(ev));
	CHECK(strstr(ev, "low 0\n") == NULL);
	mcg_group_read(a, "memory.events.local", ev, sizeof(ev));
	CHECK(strstr(ev, "low 0\n") != NULL);
	/* Everything reclaimable gone: min still holds. */
	mcg_reclaim(p, 100000, 0);
	CHECK_EQ(current_pages(a), 800);
	CHECK_EQ(current_pages(b), 0);
	/* As the target itself, a's own min does not count. */
	CHECK(mcg_reclaim(a, 100, 0) >= 100);
	mcg_group_t *v[] = {a, b, p};
	for (int i = 0; i < 3; i++) {
		mcg_group_remove(v[i]);
		mcg_group_put(v[i]);
	}
	mcg_reclaim(NULL, 100000, 0);
}

static void test_nowait_worker(void)
{
	mcg_group_t *g;
	REQUIRE(mcg_group_create(NULL, "nowait", &g) == 0);
	CHECK_EQ(pc_fill(&pc, g, 2000), 0);
	set_pages(g, "memory.high", 1000); /* reclaims down to it at once */
	long cur = current_pages(g);
	if (cur > 1000 || cur < 1000 - 128)
		fprintf(stderr, "after memory.high write: %ld pages\n", cur);
	CHECK(cur <= 1000);
	CHECK(cur >= 1000 - 128); /* a batch or two of overshoot at most */
	/* Charges that cannot sleep: the worker reclaims their batches. */
	for (int i = 0; i < 5; i++)
		CHECK_EQ(mcg_charge(g, 64, MCG_CHARGE_NOWAIT), 0);
	for (int i = 0; i < 2000 && current_pages(g) > 1000 + 64; i++)
		usleep(1000);
	CHECK(current_pages(g) <= 1000 + 64);
	char st[1024];
	mcg_group_read(g, "memory.stat", st, sizeof(st));
	CHECK(strstr(st, "throttled_ms 0\n") != NULL); /* never slept */
	mcg_uncharge(g, 5 * 64);
	mcg_group_remove(g);
	mcg_group_put(g);
	mcg_reclaim(NULL, 100000, 0);
}

/*
 * A group at memory.max saws between max - goal and max, the goal being
 * what one reclaim asks for: at most max / 128 pages, so a small group
 * keeps nearly all it may (with the kernel's 32 pages, a 256-page group
 * held 16 pages less on average).
 */
static void test_small_group_keeps_its_limit(void)
{
	struct pcache fine; /* a shrinker that frees one object at a time */
	REQUIRE(pc_init(&fine, 1) == 0);
	mcg_group_t *g;
	REQUIRE(mcg_group_create(NULL, "small", &g) == 0);
	set_pages(g, "memory.max", 256);
	CHECK_EQ(pc_fill(&fine, g, 1000), 0);
	long sum = 0, most = 0, n = 2000;
	for (long i = 0; i < n; i++) {
		CHECK_EQ(pc_fill(&fine, g, 1), 0);
		long live = __atomic_load_n(&fine.live, __ATOMIC_RELAXED);
		sum += live;
		most = live > most ? live : most;
	}
	if (sum / n < 256 - 8)
		fprintf(stderr, "a 256-page group held %ld pages on average\n", sum / n);
	CHECK(sum / n >= 256 - 8);
	CHECK(most <= 256);
	pc_destroy(&fine);
	CHECK_EQ(current_pages(g), 0);
	mcg_group_remove(g);
	mcg_group_put(g);
}

/* A goal past what the subtree holds: every priority down to 0 tried,
 * the result says 0 (the lowest), and what there was is reclaimed. */
static void test_priority_floor(void)
{
	mcg_group_t *g;
	REQUIRE(mcg_group_create(NULL, "floor", &g) == 0);
	CHECK_EQ(pc_fill(&pc, g, 64), 0);
	mcg_reclaim_result_t res;
	CHECK(mcg_reclaim_ex(g, 100000, 0, &res) >= 64);
	CHECK_EQ(res.priority, 0);
	CHECK_EQ(current_pages(g), 0);
	mcg_group_remove(g);
	mcg_group_put(g);
}

int main(void)
{
	if (pc_init(&pc, 32))
		return 1;
	RUN(test_cursor_spreads);
	RUN(test_min_and_low);
	RUN(test_priority_floor);
	RUN(test_nowait_worker);
	RUN(test_small_group_keeps_its_limit);
	pc_destroy(&pc);
	return test_done();
}
