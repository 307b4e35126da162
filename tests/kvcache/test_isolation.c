/* SPDX-License-Identifier: MIT */
/*
 * test_isolation.c - a noisy tenant cannot take a quiet tenant's memory,
 * with real clients (redis-benchmark) on a real memcg-kvcache.
 *
 * 1. Limits:  quiet max 8M  (a hot set of 4M, read by GETs)
 *             noisy max 8M  (SETs of ten times its max, pipelined)
 * 2. Global pressure and memory.low:
 *             kvcache (--maxmemory 16M)
 *              |- quiet  low 8M  (the same hot set)
 *              `- noisy  no max  (the same flood: reclaim at the parent)
 *
 * In both: the quiet tenant's hit ratio >= 0.95 (its keys survive), the
 * noisy one evicts, neither goes over its max (memory.peak), no OOM event
 * and no refused write - a cache write never fails, it evicts.
 */
#include "kvtest.h"
#include "progs.h"
#include "test.h"

#define MIB (1024.0 * 1024.0)
#define HOT_KEYS 10000L    /* x ~390 B charged each: 3.7M */
#define NOISY_SETS 220000L /* x ~390 B: 10x an 8M max */

static char bench[4096];

static void scenario(const char *const *args, const char *name, double quiet_max, double noisy_max,
                     double parent_max)
{
	struct kvc_server kv;
	if (kvc_start_kvcache(&kv, args, NULL)) {
		CHECK(!"memcg-kvcache started");
		return;
	}
	REQUIRE(kvc_fill(kv.port, 0, HOT_KEYS, 256) == 0);
	char port[16], nsets[16], hot[16];
	snprintf(port, sizeof(port), "%d", kv.port);
	snprintf(nsets, sizeof(nsets), "%ld", NOISY_SETS);
	snprintf(hot, sizeof(hot), "%ld", HOT_KEYS);
	char *noisy[] = {bench,       "-p", port,  "--dbnum", "1",  "-t", "set", "-n", nsets, "-r",
	                 "100000000", "-d", "256", "-P",      "16", "-c", "4",   "-q", NULL};
	char *quiet[] = {bench,   "-p", port, "--dbnum", "0", "-t", "get", "-n",
	                 "40000", "-r", hot,  "-c",      "2", "-q", NULL};
	pid_t pn = kvc_spawn(noisy, NULL, NULL), pq = kvc_spawn(quiet, NULL, NULL);
	REQUIRE(pn > 0 && pq > 0);
	CHECK_EQ(kvc_wait(pn, 180), 0);
	CHECK_EQ(kvc_wait(pq, 180), 0);

	char *info = kvc_info(kv.port, "tenants");
	REQUIRE(info);
	double ratio = kvc_info_num(info, "tenant_quiet", "hit_ratio");
	double reads = kvc_info_num(info, "tenant_quiet", "keyspace_hits") +
	               kvc_info_num(info, "tenant_quiet", "keyspace_misses");
	double evicted = kvc_info_num(info, "tenant_noisy", "evicted_keys");
	double qpeak = kvc_info_num(info, "tenant_quiet", "memory_peak");
	double npeak = kvc_info_num(info, "tenant_noisy", "memory_peak");
	fprintf(stderr,
	        "  %s: quiet hit ratio %.4f over %.0f reads, peak %.1fM; noisy evicted %.0f keys, "
	        "peak %.1fM\n",
	        name, ratio, reads, qpeak / MIB, evicted, npeak / MIB);
	CHECK(reads >= 40000);
	CHECK(ratio >= 0.95);
	CHECK_EQ(kvc_info_num(info, "tenant_quiet", "evicted_keys"), 0);
	CHECK(evicted > NOISY_SETS / 2);
	CHECK(qpeak > 3 * MIB); /* the hot set is in memory */
	if (quiet_max > 0)
		CHECK(qpeak <= quiet_max);
	if (noisy_max > 0)
		CHECK(npeak <= noisy_max);
	if (parent_max > 0) {
		char *mem = kvc_info(kv.port, "memory");
		CHECK(kvc_info_num(mem, "used_memory_peak", NULL) <= parent_max);
		free(mem);
	}
	for (const char *t = "tenant_quiet"; t; t = t[7] == 'q' ? "tenant_noisy" : NULL) {
		CHECK_EQ(kvc_info_num(info, t, "oom_events"), 0);
		CHECK_EQ(kvc_info_num(info, t, "failed_writes"), 0);
	}
	free(info);
	CHECK_EQ(kvc_stop(&kv), 0);
}

static void test_limits(void)
{
	const char *args[] = {"--tenant", "quiet:max=8M", "--tenant", "noisy:max=8M", NULL};
	scenario(args, "max", 8 * MIB, 8 * MIB, 0);
}

static void test_low_under_global_pressure(void)
{
	const char *args[] = {"--maxmemory", "16M",   "--tenant", "quiet:low=8M",
	                      "--tenant",    "noisy", NULL};
	scenario(args, "low", 0, 0, 16 * MIB);
}

int main(void)
{
	kvtest_need("redis-benchmark", bench, sizeof(bench));
	RUN(test_limits);
	RUN(test_low_under_global_pressure);
	return test_done();
}
