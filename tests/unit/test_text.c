/* SPDX-License-Identifier: MIT */
/*
 * test_text.c - the cgroup v2 files (group/text.c): formats of every file,
 * parsing of writes (bytes, K/M/G/T, "max", trailing newline, rounding down
 * to pages), rejection of everything else with nothing changed, read-only
 * and unknown files, and snprintf-style truncation.
 */
#include <errno.h>

#include "group/group.h"
#include "memcg/reclaim.h"
#include "test.h"

static mcg_group_t *g;
static char buf[4096];

static const char *rd(const char *file)
{
	ssize_t n = mcg_group_read(g, file, buf, sizeof(buf));
	if (n < 0)
		snprintf(buf, sizeof(buf), "error %zd", n);
	return buf;
}

static void test_defaults(void)
{
	CHECK(!strcmp(rd("memory.current"), "0\n"));
	CHECK(!strcmp(rd("memory.peak"), "0\n"));
	CHECK(!strcmp(rd("memory.min"), "0\n"));
	CHECK(!strcmp(rd("memory.low"), "0\n"));
	CHECK(!strcmp(rd("memory.high"), "max\n"));
	CHECK(!strcmp(rd("memory.max"), "max\n"));
	CHECK(!strcmp(rd("memory.stat"), "anon 0\nfile 0\nkernel 0\nslab_reclaimable 0\n"
	                                 "slab_unreclaimable 0\nslab 0\ncharge_forced 0\n"
	                                 "pgscan 0\npgsteal 0\npgscan_direct 0\npgscan_kswapd 0\n"
	                                 "pgscan_proactive 0\npgsteal_direct 0\npgsteal_kswapd 0\n"
	                                 "pgsteal_proactive 0\nthrottled_ms 0\n"));
	CHECK(!strcmp(rd("memory.events"), "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n"));
	CHECK(!strcmp(rd("memory.events.local"), "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n"));
	CHECK_EQ(mcg_group_read(g, "memory.oom.group", buf, sizeof(buf)), -ENOENT);
	CHECK_EQ(mcg_group_write(g, "memory.oom.group", "1"), -ENOENT); /* no group kill */
	CHECK(!strcmp(rd("cgroup.stat"), "nr_descendants 0\nnr_dying_descendants 0\n"));
}

static void test_write_values(void)
{
	static const struct {
		const char *text, *shown;
	} ok[] = {
	        {"4096", "4096\n"},      {"4097", "4096\n"},      {"4095", "0\n"},
	        {"64M", "67108864\n"},   {"64m\n", "67108864\n"}, {"1K", "0\n"},
	        {"8k", "8192\n"},        {"2G", "2147483648\n"},  {"1T", "1099511627776\n"},
	        {"max", "max\n"},        {"max\n", "max\n"},      {"0", "0\n"},
	        {"12288 \n", "12288\n"},
	};
	const char *files[] = {"memory.min", "memory.low", "memory.high", "memory.max"};
	for (size_t f = 0; f < MCG_ARRAY_SIZE(files); f++) {
		for (size_t i = 0; i < MCG_ARRAY_SIZE(ok); i++) {
			CHECK_EQ(mcg_group_write(g, files[f], ok[i].text), 0);
			if (strcmp(rd(files[f]), ok[i].shown))
				CHECK(!fprintf(stderr, "%s <- '%s': '%s'\n", files[f], ok[i].text,
				               buf));
		}
		CHECK_EQ(mcg_group_write(g, files[f], "max"), 0);
	}
	CHECK_EQ(mcg_group_write(g, "memory.min", "0"), 0);
	CHECK_EQ(mcg_group_write(g, "memory.low", "0"), 0);
}

/* Every 64-bit byte count parses, up to 2^64 - 1 (above the largest limit: "max"). */
static void test_write_u64_boundary(void)
{
	CHECK_EQ(mcg_group_write(g, "memory.max", "18446744073709551615"), 0);
	CHECK(!strcmp(rd("memory.max"), "max\n"));
	CHECK_EQ(mcg_group_write(g, "memory.max", "18446744073709551610"), 0);
	CHECK(!strcmp(rd("memory.max"), "max\n"));
	CHECK_EQ(mcg_group_write(g, "memory.max", "1844674407370955161"), 0);
	CHECK(!strcmp(rd("memory.max"), "1844674407370952704\n"));
	CHECK_EQ(mcg_group_write(g, "memory.max", "16777215T"), 0);
	CHECK(!strcmp(rd("memory.max"), "max\n"));
	CHECK_EQ(mcg_group_write(g, "memory.max", "16777216T"), -EINVAL);
	CHECK_EQ(mcg_group_write(g, "memory.max", "max"), 0);
}

static void test_bad_writes_unchanged(void)
{
	const char *bad[] = {"",
	                     "\n",
	                     "-1",
	                     "1.5M",
	                     "64MB",
	                     "M",
	                     "0x1000",
	                     " 4096",
	                     "max1",
	                     "maxx",
	                     "MAX",
	                     "4096 4096",
	                     "99999999999999999999",
	                     "18446744073709551616", /* 2^64 */
	                     "20000000T",
	                     "1P",
	                     "abc",
	                     "4096\n\n1"};
	CHECK_EQ(mcg_group_write(g, "memory.max", "1M"), 0);
	for (size_t i = 0; i < MCG_ARRAY_SIZE(bad); i++) {
		int r = mcg_group_write(g, "memory.max", bad[i]);
		if (r != -EINVAL)
			CHECK(!fprintf(stderr, "accepted '%s' (%d)\n", bad[i], r));
		CHECK(!strcmp(rd("memory.max"), "1048576\n"));
	}
	CHECK_EQ(mcg_group_write(g, "memory.current", "0"), -EACCES);
	CHECK_EQ(mcg_group_write(g, "memory.peak", "0"), -EACCES);
	CHECK_EQ(mcg_group_write(g, "memory.stat", "0"), -EACCES);
	CHECK_EQ(mcg_group_write(g, "memory.nope", "0"), -ENOENT);
	CHECK_EQ(mcg_group_write(g, NULL, "0"), -EINVAL);
	CHECK_EQ(mcg_group_write(g, "memory.max", NULL), -EINVAL);
	CHECK_EQ(mcg_group_write(NULL, "memory.max", "0"), -EINVAL);
	CHECK_EQ(mcg_group_write(mcg_group_root(), "memory.max", "1M"), -EINVAL);
	CHECK(!strcmp((mcg_group_read(mcg_group_root(), "memory.max", buf, sizeof(buf)), buf),
	              "max\n"));
	CHECK_EQ(mcg_group_write(g, "memory.max", "max"), 0);
}

static void test_read_errors_and_truncation(void)
{
	CHECK_EQ(mcg_group_read(g, "memory.nope", buf, sizeof(buf)), -ENOENT);
	CHECK_EQ(mcg_group_read(NULL, "memory.max", buf, sizeof(buf)), -EINVAL);
	CHECK_EQ(mcg_group_read(g, "memory.max", NULL, 10), -EINVAL);
	CHECK_EQ(mcg_group_read(g, "memory.max", NULL, 0), 4); /* "max\n" */
	char small[3] = "zz";
	CHECK_EQ(mcg_group_read(g, "memory.max", small, sizeof(small)), 4);
	CHECK(!strcmp(small, "ma"));
	ssize_t need = mcg_group_read(g, "memory.events", NULL, 0);
	CHECK_EQ(need, (ssize_t)strlen(rd("memory.events")));
}

static void test_current_peak_stat(void)
{
	CHECK_EQ(mcg_charge(g, 10, 0), 0);
	mcg_group_drain_stocks();
	CHECK(!strcmp(rd("memory.current"), "40960\n"));
	CHECK(!strcmp(rd("memory.stat"), "anon 40960\nfile 0\nkernel 0\nslab_reclaimable 0\n"
	                                 "slab_unreclaimable 0\nslab 0\ncharge_forced 0\n"
	                                 "pgscan 0\npgsteal 0\npgscan_direct 0\npgscan_kswapd 0\n"
	                                 "pgscan_proactive 0\npgsteal_direct 0\npgsteal_kswapd 0\n"
	                                 "pgsteal_proactive 0\nthrottled_ms 0\n"));
	CHECK(!strcmp(rd("memory.peak"), "262144\n")); /* the stock's batch of 64 */
	CHECK_EQ(mcg_uncharge(g, 10), 0);
	mcg_group_drain_stocks();
	CHECK(!strcmp(rd("memory.current"), "0\n"));
	CHECK(!strcmp(rd("memory.peak"), "262144\n"));
}

static long hook_calls;
static unsigned long no_progress_hook(mcg_group_t *over, unsigned long nr, void *arg)
{
	hook_calls++;
	return 1; /* says it freed a page, and frees nothing */
}

/*
 * Rarer writes: whitespace other than a newline after a value; a ratio or
 * dirty bytes value that parses as no number, or is beyond a long; the
 * root's memory.reclaim (the one file the root may write).  And memory.max
 * under pages nothing frees, with no reclaim layer yet: a hook that claims
 * progress is asked 16 times, the limit is set all the same.
 */
static void test_rarer_writes(void)
{
	CHECK_EQ(mcg_group_write(g, "memory.max", "8192\t"), 0);
	CHECK(!strcmp(rd("memory.max"), "8192\n"));
	CHECK_EQ(mcg_group_write(g, "memory.max", "12288\r\n"), 0);
	CHECK(!strcmp(rd("memory.max"), "12288\n"));
	CHECK_EQ(mcg_group_write(g, "memory.max", "max"), 0);
	CHECK_EQ(mcg_group_write(g, "memory.dirty_ratio", "30"), 0);
	CHECK_EQ(mcg_group_write(g, "memory.dirty_ratio", "-1"), -EINVAL);
	CHECK_EQ(mcg_group_write(g, "memory.dirty_ratio", ""), -EINVAL);
	CHECK(!strcmp(rd("memory.dirty_ratio"), "30\n"));
	CHECK_EQ(mcg_group_write(g, "memory.dirty_bytes", "9223372036854775807"), 0);
	CHECK_EQ(mcg_group_write(g, "memory.dirty_bytes", "9223372036854775808"), -EINVAL);
	CHECK(!strcmp(rd("memory.dirty_bytes"), "9223372036854775807\n"));
	CHECK_EQ(mcg_group_write(g, "memory.dirty_ratio", "-1"), -EINVAL);
	CHECK(!strcmp(rd("memory.dirty_bytes"), "9223372036854775807\n")); /* unchanged */
	CHECK_EQ(mcg_group_write(g, "memory.dirty_ratio", "20"), 0);       /* zeroes the bytes */
	CHECK(!strcmp(rd("memory.dirty_bytes"), "0\n"));
	CHECK_EQ(mcg_group_write(mcg_group_root(), "memory.reclaim", "0"), 0);

	REQUIRE(!mcg_group_reclaim_ops_get()); /* reclaim is set up by the next test */
	CHECK_EQ(mcg_charge(g, 3, 0), 0);
	mcg_group_drain_stocks();
	mcg_group_set_reclaim_hook(no_progress_hook, NULL);
	hook_calls = 0;
	CHECK_EQ(mcg_group_write(g, "memory.max", "4096"), 0);
	CHECK_EQ(hook_calls, 16);
	CHECK(!strcmp(rd("memory.max"), "4096\n"));
	CHECK(!strcmp(rd("memory.current"), "12288\n"));
	mcg_group_set_reclaim_hook(NULL, NULL);
	CHECK_EQ(mcg_group_write(g, "memory.max", "max"), 0);
	CHECK_EQ(mcg_uncharge(g, 3), 0);
	mcg_group_drain_stocks();
	CHECK(!strcmp(rd("memory.current"), "0\n"));
}

/*
 * memory.reclaim and memory.high around reclaim: before reclaim is set up
 * a reclaim request cannot be served (-EAGAIN), 0 bytes is nothing to do,
 * "max" is no byte count.  Set up, a memory.high under pages nothing can
 * reclaim (plain charges) is set all the same after its tries, and the
 * pages stay charged.
 */
static void test_reclaim_writes(void)
{
	CHECK_EQ(mcg_group_write(g, "memory.reclaim", "4096"), -EAGAIN);
	CHECK_EQ(mcg_group_write(g, "memory.reclaim", "0"), 0);
	CHECK_EQ(mcg_group_write(g, "memory.reclaim", "max"), -EINVAL);
	mcg_reclaim_init();
	CHECK_EQ(mcg_charge(g, 10, 0), 0);
	mcg_group_drain_stocks();
	CHECK_EQ(mcg_group_write(g, "memory.high", "8192"), 0);
	CHECK(!strcmp(rd("memory.high"), "8192\n"));
	CHECK(!strcmp(rd("memory.current"), "40960\n"));
	CHECK_EQ(mcg_group_write(g, "memory.high", "max"), 0);
	CHECK_EQ(mcg_uncharge(g, 10), 0);
	mcg_group_drain_stocks();
	CHECK(!strcmp(rd("memory.current"), "0\n"));
}

int main(void)
{
	if (mcg_group_create(NULL, "text", &g))
		return 1;
	RUN(test_defaults);
	RUN(test_write_values);
	RUN(test_write_u64_boundary);
	RUN(test_bad_writes_unchanged);
	RUN(test_read_errors_and_truncation);
	RUN(test_current_peak_stat);
	RUN(test_rarer_writes);
	RUN(test_reclaim_writes);
	mcg_group_remove(g);
	mcg_group_put(g);
	return test_done();
}
