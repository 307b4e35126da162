/* SPDX-License-Identifier: MIT */
/*
 * test_dirty.c - the dirty-throttling arithmetic (pagecache/dirty.c)
 * against values worked out by hand from mm/page-writeback.c's formulas,
 * and the group domain and its thresholds read from real groups.
 */
#include "pagecache/dirty.h"

#include <errno.h>

#include "base/options.h"
#include "memcg/file.h"
#include "memcg/memcg.h"
#include "test.h"

/*
 * pos_ratio = 1 + ((setpoint - dirty) / (limit - setpoint))^3, << 10, with
 * the kernel's integer steps: x = ((setpoint - dirty) << 10) / ((limit -
 * setpoint) | 1), then x*x >> 10, *x >> 10 (arithmetic shifts).
 *   setpoint 1000, limit 2000, dirty 1500: x = -512000/1001 = -511;
 *     -511 * -511 >> 10 = 255; 255 * -511 >> 10 = -128; 1024 - 128 = 896
 *     (exactly 1 - 0.5^3 = 0.875).
 */
static void test_pos_ratio(void)
{
	CHECK_EQ(mcg_dirty_pos_ratio(1000, 1000, 2000), 1024); /* at the setpoint: 1 */
	CHECK_EQ(mcg_dirty_pos_ratio(1000, 1500, 2000), 896);  /* 1 - 0.5^3 */
	CHECK_EQ(mcg_dirty_pos_ratio(1000, 500, 2000), 1151);  /* 1 + 0.5^3, rounded down */
	CHECK_EQ(mcg_dirty_pos_ratio(1000, 0, 2000), 2042);    /* near 2 */
	CHECK_EQ(mcg_dirty_pos_ratio(1000, 1999, 2000), 8);    /* near 0 */
	CHECK_EQ(mcg_dirty_pos_ratio(1000, 2000, 2000), 0);    /* at the limit */
	CHECK_EQ(mcg_dirty_pos_ratio(1000, 5000, 2000), 0);    /* above it */
	/* Never above 2 far below the setpoint. */
	CHECK_EQ(mcg_dirty_pos_ratio(1000000, 0, 1000001), 2048);
}

/* freerun = (thresh + bg) / 2, limit = max(thresh, dom_limit), setpoint between. */
static void test_position(void)
{
	struct mcg_dtc d = {.thresh = 2000, .bg_thresh = 1000, .dirty = 1600};
	mcg_dirty_position(&d, 0);
	CHECK_EQ(d.freerun, 1500);
	CHECK_EQ(d.limit, 2000);
	CHECK_EQ(d.setpoint, 1750);
	CHECK_EQ(d.pos_ratio, 1241); /* x = 153600/251 = 611; 611^2>>10 = 364; *611>>10 = 217 */
	CHECK(!d.dirty_exceeded);
	d.dirty = 2100;
	mcg_dirty_position(&d, 2400); /* the domain's limit still above thresh */
	CHECK_EQ(d.limit, 2400);
	CHECK_EQ(d.setpoint, 1950);
	CHECK(d.pos_ratio > 0 && d.pos_ratio < 1024);
	CHECK(d.dirty_exceeded);
}

/*
 * Ratios are taken per 4096 first: 20 % -> 819/4096, 10 % -> 409/4096.
 * avail 100000: thresh = 819 * 100000 / 4096 = 19995, bg = 9985.
 */
static void test_thresholds(void)
{
	struct mcg_dtc d = {.avail = 100000};
	mcg_dirty_thresholds(&d, 20, 0, false, 10, 0, false, 0);
	CHECK_EQ(d.thresh, 19995);
	CHECK_EQ(d.bg_thresh, 9985);
	/* Bytes win, rounded up to pages. */
	mcg_dirty_thresholds(&d, 20, 64 << 20, false, 10, 4097, false, 0);
	CHECK_EQ(d.thresh, 16384);
	CHECK_EQ(d.bg_thresh, 2);
	/* bg >= thresh: half of thresh. */
	mcg_dirty_thresholds(&d, 10, 0, false, 50, 0, false, 0);
	CHECK_EQ(d.thresh, 9985);
	CHECK_EQ(d.bg_thresh, 4992);
	/* The options' bytes in a group domain: a ratio of the global avail,
	 * ceil(64 MiB / 100000) = 672 per 4096; the group's avail 50000:
	 * 672 * 50000 / 4096 = 8203. */
	d.avail = 50000;
	mcg_dirty_thresholds(&d, 20, 64 << 20, true, 10, 0, true, 100000);
	CHECK_EQ(d.thresh, 8203);
	CHECK_EQ(d.bg_thresh, 409 * 50000 / 4096);
	/* The options' bytes with no global avail to scale by: bytes as they
	 * are, ceil(64 MiB / 4096) = 16384 and ceil(8192 / 4096) = 2. */
	mcg_dirty_thresholds(&d, 20, 64 << 20, true, 10, 8192, true, 0);
	CHECK_EQ(d.thresh, 16384);
	CHECK_EQ(d.bg_thresh, 2);
	/* More bytes than the global avail holds: a ratio of all (4096 per
	 * 4096): thresh = avail = 50000; bg the same, so half of thresh. */
	mcg_dirty_thresholds(&d, 20, 64 << 20, true, 10, 16 << 20, true, 1000);
	CHECK_EQ(d.thresh, 50000);
	CHECK_EQ(d.bg_thresh, 25000);
	/* "Global" bytes of 0: the ratios, 819 and 409 per 4096 of 50000. */
	mcg_dirty_thresholds(&d, 20, 0, true, 10, 0, true, 100000);
	CHECK_EQ(d.thresh, 819 * 50000 / 4096);
	CHECK_EQ(d.bg_thresh, 409 * 50000 / 4096);
	/* Ratio 0: nothing may be dirty. */
	mcg_dirty_thresholds(&d, 0, 0, false, 0, 0, false, 0);
	CHECK_EQ(d.thresh, 0);
	CHECK_EQ(d.bg_thresh, 0);
}

/* avail = file + min(headroom, other clean) with other clean = (global
 * avail - global dirty) - (file - dirty). */
static void test_memcg_avail(void)
{
	/* clean 800, global clean 7000, other clean 6200 */
	CHECK_EQ(mcg_dirty_memcg_avail(1000, 200, 500, 10000, 3000), 1500);
	CHECK_EQ(mcg_dirty_memcg_avail(1000, 200, ~0ul, 10000, 3000), 7200);
	CHECK_EQ(mcg_dirty_memcg_avail(1000, 200, 0, 10000, 3000), 1000);
	/* More dirty than file, more clean here than globally: never negative. */
	CHECK_EQ(mcg_dirty_memcg_avail(100, 500, ~0ul, 50, 40), 100 + 10);
	CHECK_EQ(mcg_dirty_memcg_avail(1000, 0, ~0ul, 500, 0), 1000);
}

static void test_limit_update(void)
{
	CHECK_EQ(mcg_dirty_limit_update(100, 200, 0), 200);     /* up at once */
	CHECK_EQ(mcg_dirty_limit_update(1000, 200, 100), 975);  /* down by (1000-200)/32 */
	CHECK_EQ(mcg_dirty_limit_update(1000, 200, 990), 1000); /* not below dirty: (10 >> 5) = 0 */
	CHECK_EQ(mcg_dirty_limit_update(1000, 200, 1100), 1000); /* dirty above the limit */
	unsigned long l = 10000;
	for (int i = 0; i < 32 * 5; i++) /* 32 steps shrink the gap by about 1/e */
		l = mcg_dirty_limit_update(l, 1000, 0);
	CHECK(l > 1000 && l < 1000 + 9000 / 100);
}

static void test_poll_interval(void)
{
	CHECK_EQ(mcg_dirty_poll_interval(0, 1000), 16);  /* 2^(ilog2(1000) / 2) = 2^4 */
	CHECK_EQ(mcg_dirty_poll_interval(936, 1000), 8); /* ilog2(64) = 6 */
	CHECK_EQ(mcg_dirty_poll_interval(999, 1000), 1);
	CHECK_EQ(mcg_dirty_poll_interval(1000, 1000), 1);
	CHECK_EQ(mcg_dirty_poll_interval(5000, 1000), 1);
}

/*
 * write_bw = (written * 1000 + write_bw * (4096 - elapsed)) >> 12 (the
 * period: 3 s rounded up to 4096 ms).  From 25600 pages/s, 2000 pages in
 * 200 ms: (2000000 + 25600 * 3896) >> 12 = 24838; avg stays (no side).
 * Again: (2000000 + 24838 * 3896) >> 12 = 24113; avg moves 1/8 of the way
 * to old: 25600 - (25600 - 24838) / 8 = 25505.
 */
static void test_write_bandwidth(void)
{
	struct mcg_wb wb = {.write_bw = 25600, .avg_write_bw = 25600};
	mcg_dirty_update_write_bw(&wb, 200, 2000);
	CHECK_EQ(wb.write_bw, 24838);
	CHECK_EQ(wb.avg_write_bw, 25600);
	mcg_dirty_update_write_bw(&wb, 200, 2000);
	CHECK_EQ(wb.write_bw, 24113);
	CHECK_EQ(wb.avg_write_bw, 25505);
	/* After a pause longer than the period: the rate of that interval. */
	mcg_dirty_update_write_bw(&wb, 5000, 5000);
	CHECK_EQ(wb.write_bw, 1000);
	CHECK_EQ(wb.avg_write_bw, 1000);
	/* Converges on a steady rate: 10000 pages/s for 20 s. */
	for (int i = 0; i < 100; i++)
		mcg_dirty_update_write_bw(&wb, 200, 2000);
	CHECK(wb.write_bw >= 9900 && wb.write_bw <= 10000);
}

/*
 * dirty_ratelimit 1000, write_bw 2000.  One writer at the setpoint
 * (pos_ratio 1): task_ratelimit = 1000 + 1; dirtied 400 in 200 ms =
 * 2000/s; balanced = 1001 * 2000 / 2001 = 1000: no change.  Two writers
 * above the setpoint (pos_ratio 900/1024): task = 878 + 1 = 879; rate
 * 4000/s; balanced = 879 * 2000 / 4001 = 439.  First call: the previous
 * balanced (1000) holds it; second: x = max(439, 439, 879) = 879, step =
 * 121, shift = 1000 / 243 = 4, step = ceil((121 >> 4) / 8) = 1: 999.
 * It keeps falling toward write_bw / 2 as calls repeat.
 */
static void test_ratelimit(void)
{
	struct mcg_wb wb = {
	        .avg_write_bw = 2000, .dirty_ratelimit = 1000, .balanced_dirty_ratelimit = 1000};
	struct mcg_dtc d = {.setpoint = 1000, .dirty = 1000, .pos_ratio = 1024};
	mcg_dirty_update_ratelimit(&wb, &d, 400, 200);
	CHECK_EQ(wb.dirty_ratelimit, 1000);
	CHECK_EQ(wb.balanced_dirty_ratelimit, 1000);
	d.dirty = 1100;
	d.pos_ratio = 900;
	mcg_dirty_update_ratelimit(&wb, &d, 800, 200);
	CHECK_EQ(wb.balanced_dirty_ratelimit, 439);
	CHECK_EQ(wb.dirty_ratelimit, 1000);
	mcg_dirty_update_ratelimit(&wb, &d, 800, 200);
	CHECK_EQ(wb.dirty_ratelimit, 999);
	/* Two writers, each at task_ratelimit, above the setpoint (pos_ratio
	 * 900/1024): balanced goes to write_bw / 2 at once; the rate follows
	 * until the step rounds to 0 (shift = rate / (2 step + 1) > 6: within
	 * about 8 %), the kernel's "don't pursue 100 % rate matching". */
	wb.dirty_ratelimit = 2000;
	wb.balanced_dirty_ratelimit = 2000;
	for (int i = 0; i < 3000; i++) {
		unsigned long task = wb.dirty_ratelimit * 900 / 1024;
		mcg_dirty_update_ratelimit(&wb, &d, (long)(2 * task / 5), 200);
	}
	CHECK(wb.dirty_ratelimit >= 1000 && wb.dirty_ratelimit <= 1080);
	CHECK(wb.balanced_dirty_ratelimit >= 990 && wb.balanced_dirty_ratelimit <= 1010);
}

/*
 * max_pause = dirty / (1 + write_bw / 128) + 1 ms, at most 200: with
 * 25600 pages/s, 10000 dirty: 10000 / 201 + 1 = 50.
 */
static void test_max_pause(void)
{
	struct mcg_wb wb = {.avg_write_bw = 25600};
	CHECK_EQ(mcg_dirty_max_pause(&wb, 10000), 50);
	CHECK_EQ(mcg_dirty_max_pause(&wb, 100000), 200);
	CHECK_EQ(mcg_dirty_max_pause(&wb, 0), 1);
}

/*
 * Target pause t = 10 ms + 10 ms per doubling of write_bw over the rate,
 * at most max_pause / 2 + 1; pages = rate * t / 1024.
 *   bw 25600, rate 25600: t 10, 250 pages; min_pause 1 + 10/2 = 6.
 *   bw 25600, rate 1600 (4 doublings): t = 10 + 4 * 10000 / 1024 = 49,
 *     76 pages, min_pause 1 + 49/2 = 25.
 *   bw 25600, rate 100: t = 88 -> 8 pages < 32: t = max_pause 200,
 *     19 pages, min_pause 200.
 */
static void test_min_pause(void)
{
	struct mcg_wb wb = {.avg_write_bw = 25600};
	int pages;
	CHECK_EQ(mcg_dirty_min_pause(&wb, 200, 25600, 25600, &pages), 6);
	CHECK_EQ(pages, 250);
	CHECK_EQ(mcg_dirty_min_pause(&wb, 200, 1600, 1600, &pages), 25);
	CHECK_EQ(pages, 76);
	CHECK_EQ(mcg_dirty_min_pause(&wb, 200, 100, 100, &pages), 200);
	CHECK_EQ(pages, 19);
	/* task_ratelimit far below the rate: the pause would pass max_pause,
	 * so fewer pages: 10 * 20 / 1024 = 0. */
	CHECK_EQ(mcg_dirty_min_pause(&wb, 20, 10, 25600, &pages), 20);
	CHECK_EQ(pages, 0);
}

/*
 * Edges of the arithmetic:
 *   a setpoint above the limit (thresholds crossed): x = 1000 * 1024 / -1,
 *     clamped to -2048, 1 + (-2)^3 < 0: no rate;
 *   the background bytes in a group domain: ceil(32 MiB / 100000) = 336
 *     per 4096 of the group's avail 50000: 336 * 50000 / 4096 = 4101;
 *   min_pause with bw 0, rate 1024: t 10, 10 pages < 32: max_pause 200
 *     gives 200 pages, more than 32: 32 pages, t = 1000 * 32 / 1024 = 31,
 *     min_pause 1 + 31 / 2 = 16.
 */
static void test_arithmetic_edges(void)
{
	CHECK_EQ(mcg_dirty_pos_ratio(1000, 0, 999), 0);
	struct mcg_dtc d = {.avail = 50000};
	mcg_dirty_thresholds(&d, 20, 0, false, 10, 32 << 20, true, 100000);
	CHECK_EQ(d.thresh, 819 * 50000 / 4096);
	CHECK_EQ(d.bg_thresh, 4101);
	struct mcg_wb wb = {.avg_write_bw = 0};
	int pages = -1;
	CHECK_EQ(mcg_dirty_min_pause(&wb, 200, 1024, 1024, &pages), 16);
	CHECK_EQ(pages, 32);
}

/* The group domain from real groups: knobs, headroom, twin files. */
static void test_group_domain(void)
{
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "dom", &g));
	struct mcg_pcg *p = mcg_pcg_of(g);
	REQUIRE(p);
	REQUIRE(!mcg_group_write(g, "memory.max", "64M"));
	REQUIRE(!mcg_group_write(g, "memory.dirty_bytes", "4M"));
	REQUIRE(!mcg_group_write(g, "memory.dirty_background_bytes", "1M"));
	struct mcg_dtc gd, md;
	mcg_dirty_global(&gd);
	REQUIRE(mcg_dirty_group(p, &gd, &md));
	CHECK_EQ(md.thresh, 1024);
	CHECK_EQ(md.bg_thresh, 256);
	CHECK_EQ(md.dirty, 0);
	/* No file pages: avail is the headroom under max (16384 pages). */
	CHECK_EQ(md.avail, 16384);
	/* Ratios of that avail (20 % = 819/4096: 819 * 16384 / 4096 = 3276). */
	REQUIRE(!mcg_group_write(g, "memory.dirty_ratio", "20"));
	REQUIRE(!mcg_group_write(g, "memory.dirty_background_ratio", "10"));
	REQUIRE(mcg_dirty_group(p, &gd, &md));
	CHECK_EQ(md.thresh, 3276);
	CHECK_EQ(md.bg_thresh, 1636);
	/* Dirty accounting off: no group domain. */
	REQUIRE(!mcg_option_set("dirty_accounting", 0));
	CHECK(!mcg_dirty_group(p, &gd, &md));
	REQUIRE(!mcg_option_set("dirty_accounting", 1));
	CHECK(!mcg_dirty_group(mcg_pcg_of(NULL), &gd, &md)); /* the root has none */
	mcg_group_remove(g);
	mcg_group_put(g);
}

/* Options: the twins zero each other; the global domain follows them. */
static void test_global_options(void)
{
	struct mcg_dtc gd;
	REQUIRE(!mcg_option_set("dirty_bytes", 32 << 20));
	mcg_dirty_global(&gd);
	CHECK_EQ(gd.thresh, 8192);
	const struct mcg_option *t = mcg_option_table();
	CHECK_EQ(t[MCG_OPT_DIRTY_RATIO].value, 0);
	REQUIRE(!mcg_option_set("dirty_ratio", 20));
	CHECK_EQ(t[MCG_OPT_DIRTY_BYTES].value, 0);
	mcg_dirty_global(&gd);
	CHECK(gd.thresh > 8192); /* 20 % of this machine */
	CHECK_EQ(mcg_option_set("dirty_ratio", 101), -EINVAL);
	CHECK_EQ(t[MCG_OPT_DIRTY_RATIO].value, 20);
}

int main(void)
{
	mcg_options_use_env(0);
	RUN(test_pos_ratio);
	RUN(test_position);
	RUN(test_thresholds);
	RUN(test_memcg_avail);
	RUN(test_limit_update);
	RUN(test_arithmetic_edges);
	RUN(test_poll_interval);
	RUN(test_write_bandwidth);
	RUN(test_ratelimit);
	RUN(test_max_pause);
	RUN(test_min_pause);
	RUN(test_group_domain);
	RUN(test_global_options);
	return test_done();
}
