/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_kvcache.c - `memcg bench kvcache`: the example server
 * (examples/kvcache) under redis-benchmark, three ways, interleaved in
 * every round (tenants, one-group, redis; tenants, one-group, redis; ...):
 *
 *   tenants    memcg-kvcache, two tenants, each a group with max M
 *   one-group  memcg-kvcache --one-group: the same two tenants charged to
 *              one group of max 2M, on one LRU
 *   redis      redis-server --maxmemory 2M --maxmemory-policy allkeys-lru,
 *              the tenants as databases 0 and 1
 *
 * Two phases:
 *  1. throughput: the three servers started together and each warmed by one
 *     pass of what follows (so every tenant is full and SETs evict), then
 *     repetitions interleaved variant by variant, the order rotating
 *     (tenants SET, GET, one-group SET, GET, redis SET, GET; one-group ...):
 *     two redis-benchmark processes at once, one per tenant, SET then GET,
 *     -P 16, 256 B values, random keys over a key space twice what fits (so
 *     SETs evict and GETs miss about half the time): requests/s of both
 *     together (all requests over the wall time from starting both to the
 *     end of the later one - not the sum of each client's own rate, which
 *     overstates a variant that serves the two unequally: one client done
 *     early, the other then alone), p50 (mean of the two) and p99 (the
 *     larger) latency.  Each measurement lasts about a second and the
 *     variants alternate, so a slow spell of this shared machine falls on
 *     all of them alike; ratios pair repetition r with repetition r;
 *  2. isolation, in a fresh server per variant and round: the quiet
 *     tenant's hot set (half of M) is written, then the noisy tenant SETs
 *     ten times M (-P 16, 4 connections) while the quiet one reads its hot
 *     set (no pipelining, 2 connections) until the noisy one is done: the
 *     quiet tenant's hit ratio (INFO's keyspace_hits/misses: the noisy
 *     tenant only writes).
 * RSS: the server's, at the end of phase 1 (both tenants full) and every
 * 100 ms of phase 2; the peak against the sum of the limits.  --runs N:
 * N rounds of phase 2 and 3N repetitions of phase 1.
 *
 * Targets (medians over rounds, ratios round by round; stats.h verdicts):
 *   tenants throughput >= 0.95 x one-group, SET and GET;
 *   quiet tenant's hit ratio with tenants >= 0.95 (the others are shown:
 *   a global LRU lets a flood of writes push the quiet keys out);
 *   tenants RSS peak <= 1.10 x the sum of the limits.
 *
 * The servers and the clients share this machine's CPUs: redis-benchmark
 * competes with the server it measures (memcg-kvcache runs a worker per
 * CPU, redis-server one main thread), so throughput is the whole
 * machine's, for each variant alike.  Needs memcg-kvcache, redis-benchmark
 * (else exit 77: skipped) and redis-server (else that variant is left out).
 */
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "kvclient.h"

#define MIB (1024.0 * 1024.0)
/* Bytes an entry of a 16-byte key and a 256 B value takes: for sizing only. */
#define ENTRY_BYTES 386.0
#define MAX_REPS 64

enum { V_TENANTS, V_ONE, V_REDIS, NV };
static const char *const vnames[NV] = {"tenants", "one-group", "redis"};

struct sizes {
	long mib;      /* M: each tenant's max */
	long keyspace; /* phase 1: keys per tenant */
	long requests; /* phase 1: per process and test */
	long hot;      /* phase 2: quiet's keys */
	long flood;    /* phase 2: noisy's SETs */
};

/* One repetition of phase 1 for one variant. */
struct tput {
	double set_rps, get_rps, set_p50, set_p99, get_p50, get_p99;
	double set_cpu, get_cpu; /* the server's CPU ns per request */
};

/* One round of phase 2 for one variant. */
struct iso {
	double hit_ratio, quiet_reads;
	double rss_peak; /* the larger of phase 1's end and phase 2's samples */
};

static char bench_bin[4096];
static struct sizes sz;

static int start(int v, struct kvc_server *s)
{
	char mb[32], quiet[64], noisy[64], total[32];
	snprintf(mb, sizeof(mb), "%ldM", sz.mib);
	snprintf(quiet, sizeof(quiet), "quiet:max=%s", mb);
	snprintf(noisy, sizeof(noisy), "noisy:max=%s", mb);
	snprintf(total, sizeof(total), "%ldmb", 2 * sz.mib);
	if (v == V_REDIS) {
		const char *args[] = {"--maxmemory", total, "--maxmemory-policy", "allkeys-lru",
		                      NULL};
		return kvc_start_redis(s, args);
	}
	const char *args[] = {
	        "--tenant", quiet, "--tenant", noisy, v == V_ONE ? "--one-group" : NULL, NULL};
	return kvc_start_kvcache(s, args, NULL);
}

/* Two redis-benchmark processes, one per database, running @test at once
   against the server @pid; @rps: every request of both over the wall time
   until the later ends; @cpu: the server's CPU time per request. */
static bool two_benchmarks(pid_t pid_server, int port, const char *test, double *rps, double *p50,
                           double *p99, double *cpu)
{
	char p[16], n[24], r[24], out[2][64];
	double cpu0 = kvc_cpu_ns(pid_server);
	uint64_t t0 = bench_now_ns();
	snprintf(p, sizeof(p), "%d", port);
	snprintf(n, sizeof(n), "%ld", sz.requests);
	snprintf(r, sizeof(r), "%ld", sz.keyspace);
	pid_t pid[2];
	for (int db = 0; db < 2; db++) {
		snprintf(out[db], sizeof(out[db]), "/tmp/memcg-bench-kv-%d-%d.csv", (int)getpid(),
		         db);
		char *argv[] = {bench_bin, "-p",         p,       "--dbnum", db ? "1" : "0",
		                "-t",      (char *)test, "-n",    n,         "-r",
		                r,         "-d",         "256",   "-P",      "16",
		                "-c",      "4",          "--csv", NULL};
		pid[db] = kvc_spawn(argv, out[db], NULL);
	}
	bool ok = true;
	for (int db = 0; db < 2; db++)
		ok = kvc_wait(pid[db], 300) == 0 && ok;
	double wall_s = (double)(bench_now_ns() - t0) / 1e9;
	*rps = 2.0 * (double)sz.requests / wall_s;
	*cpu = (kvc_cpu_ns(pid_server) - cpu0) / (2.0 * (double)sz.requests);
	*p50 = *p99 = 0;
	for (int db = 0; db < 2; db++) {
		struct kvc_bench_row row;
		if (kvc_bench_csv(out[db], &row, 1) != 1)
			ok = false;
		else {
			*p50 += row.p50_ms / 2;
			*p99 = row.p99_ms > *p99 ? row.p99_ms : *p99;
		}
		unlink(out[db]);
	}
	return ok;
}

/* Variant @v's SET and GET measurement in server @s. */
static bool measure(const struct kvc_server *s, struct tput *t)
{
	return two_benchmarks(s->pid, s->port, "set", &t->set_rps, &t->set_p50, &t->set_p99,
	                      &t->set_cpu) &&
	       two_benchmarks(s->pid, s->port, "get", &t->get_rps, &t->get_p50, &t->get_p99,
	                      &t->get_cpu);
}

/* Phase 1 for the variants in @have: @reps repetitions into t[v][r]; each
   server's RSS at the end (every tenant full) into @rss_full. */
static bool phase_throughput(const bool have[NV], int reps, struct tput t[NV][MAX_REPS],
                             double rss_full[NV])
{
	struct kvc_server s[NV];
	bool up[NV] = {false}, ok = true;
	for (int v = 0; v < NV && ok; v++)
		if (have[v])
			ok = (up[v] = start(v, &s[v]) == 0);
	for (int v = 0; v < NV && ok; v++) { /* the warm-up pass: not counted */
		struct tput warm;
		if (up[v]) {
			bench_progress("throughput: warming %s", vnames[v]);
			ok = measure(&s[v], &warm);
		}
	}
	for (int r = 0; r < reps && ok; r++)
		for (int k = 0; k < NV && ok; k++) { /* the order rotates */
			int v = (r + k) % NV;
			if (up[v]) {
				bench_progress("throughput %d/%d: %s", r + 1, reps, vnames[v]);
				ok = measure(&s[v], &t[v][r]);
			}
		}
	for (int v = 0; v < NV; v++)
		if (up[v]) {
			rss_full[v] = kvc_rss_kib(s[v].pid) * 1024.0;
			ok = kvc_stop(&s[v]) == 0 && ok;
		}
	return ok;
}

static double stat_of(int port, const char *field)
{
	char *info = kvc_info(port, "stats");
	double v = kvc_info_num(info, field, NULL);
	free(info);
	return v;
}

static bool phase_isolation(int v, double rss_full, struct iso *res)
{
	struct kvc_server s;
	if (start(v, &s))
		return false;
	bool ok = kvc_fill(s.port, 0, sz.hot, 256) == 0;
	double h0 = stat_of(s.port, "keyspace_hits"), m0 = stat_of(s.port, "keyspace_misses");
	char p[16], hot[24], flood[24];
	snprintf(p, sizeof(p), "%d", s.port);
	snprintf(hot, sizeof(hot), "%ld", sz.hot);
	snprintf(flood, sizeof(flood), "%ld", sz.flood);
	char *quiet[] = {bench_bin, "-p",         p,    "--dbnum", "0",  "-t", "get", "-r", hot,
	                 "-n",      "1000000000", "-c", "2",       "-q", NULL};
	char *noisy[] = {bench_bin, "-p",         p,    "--dbnum", "1",  "-t",  "set",
	                 "-r",      "1000000000", "-n", flood,     "-d", "256", "-P",
	                 "16",      "-c",         "4",  "-q",      NULL};
	pid_t pq = kvc_spawn(quiet, NULL, NULL), pn = kvc_spawn(noisy, NULL, NULL);
	res->rss_peak = rss_full;
	struct timespec tick = {0, 100000000};
	int status = -1;
	for (int waited = 0; waited < 3000; waited++) { /* 300 s at most */
		long rss = kvc_rss_kib(s.pid);
		if (rss * 1024.0 > res->rss_peak)
			res->rss_peak = rss * 1024.0;
		if (waitpid(pn, &status, WNOHANG) == pn)
			break;
		nanosleep(&tick, NULL);
	}
	if (status == -1) {
		kill(pn, SIGKILL);
		waitpid(pn, NULL, 0);
	}
	ok = status == 0 && ok;
	kill(pq, SIGTERM);
	kvc_wait(pq, 10);
	double h = stat_of(s.port, "keyspace_hits") - h0,
	       m = stat_of(s.port, "keyspace_misses") - m0;
	res->quiet_reads = h + m;
	res->hit_ratio = h + m > 0 ? h / (h + m) : 0;
	ok = kvc_stop(&s) == 0 && ok && h + m > 0;
	return ok;
}

/* The median of field @off over @n records of @size bytes at @base. */
static double med(const void *base, size_t size, int n, size_t off)
{
	double v[MAX_REPS];
	for (int i = 0; i < n; i++)
		v[i] = *(const double *)((const char *)base + (size_t)i * size + off);
	return bench_median(v, n);
}

/* The median of record i's field @off in @a over record i's in @b. */
static double ratio_med(const void *a, const void *b, size_t size, int n, size_t off)
{
	double x[MAX_REPS], y[MAX_REPS];
	for (int i = 0; i < n; i++) {
		x[i] = *(const double *)((const char *)a + (size_t)i * size + off);
		y[i] = *(const double *)((const char *)b + (size_t)i * size + off);
	}
	return bench_ratio_median(x, y, n);
}

static int judged, missed;

static void verdict(const struct bench_opts *o, const char *name, double value, double target,
                    bool ge, const char *what)
{
	enum bench_verdict v = ge ? bench_judge_ge(value, target) : bench_judge_le(value, target);
	judged++;
	missed += !bench_verdict_met(v);
	if (o->json) {
		char extra[160];
		snprintf(extra, sizeof(extra), "\"name\":\"%s\",\"target\":%.2f,\"verdict\":\"%s\"",
		         name, target, bench_verdict_name(v));
		bench_emit_json("kvcache-target", "tenants", extra, value, "ratio");
	} else {
		printf("  %-4s %-44s %.3f (target %s %.2f)\n", bench_verdict_name(v), what, value,
		       ge ? ">=" : "<=", target);
	}
}

int bench_kvcache_main(int argc, char **argv)
{
	struct bench_opts o;
	if (bench_parse_opts(argc, argv, &o))
		return 2;
	char tmp[4096];
	if (!kvc_find("memcg-kvcache", tmp, sizeof(tmp)) ||
	    !kvc_find("redis-benchmark", bench_bin, sizeof(bench_bin))) {
		printf("SKIP: memcg bench kvcache needs memcg-kvcache and redis-benchmark "
		       "(scripts/deps.sh)\n");
		return 77;
	}
	bool have_redis = kvc_find("redis-server", tmp, sizeof(tmp)) != NULL;
	int runs = o.runs > MAX_REPS ? MAX_REPS : o.runs;
	int reps = o.smoke ? 1 : (3 * o.runs > MAX_REPS ? MAX_REPS : 3 * o.runs);
	sz = o.smoke ? (struct sizes){.mib = 4, .requests = 4000, .hot = 4000}
	             : (struct sizes){.mib = 32, .requests = 200000, .hot = 0};
	sz.keyspace = (long)(2 * sz.mib * MIB / ENTRY_BYTES);
	if (!o.smoke)
		sz.hot = (long)(sz.mib * MIB / 2 / ENTRY_BYTES);
	sz.flood = (long)(10 * sz.mib * MIB / ENTRY_BYTES);
	if (!o.json)
		printf("memcg bench kvcache: 2 tenants of max %ldM (redis: maxmemory %ldM)\n"
		       "  throughput: %d repetitions, 2 x redis-benchmark -P 16 -c 4 -d 256 -r %ld "
		       "-n %ld\n"
		       "  isolation: %d round(s), quiet hot set %ld keys, noisy %ld SETs (10 x its "
		       "max)\n\n",
		       sz.mib, 2 * sz.mib, reps, sz.keyspace, sz.requests, runs, sz.hot, sz.flood);

	bool have[NV] = {true, true, have_redis};
	static struct tput t[NV][MAX_REPS];
	static struct iso iso[NV][MAX_REPS];
	double rss_full[NV] = {0};
	if (!phase_throughput(have, reps, t, rss_full)) {
		fprintf(stderr, "memcg bench kvcache: the throughput phase failed\n");
		return 1;
	}
	for (int r = 0; r < runs; r++)
		for (int k = 0; k < NV; k++) { /* the order rotates */
			int v = (r + k) % NV;
			if (!have[v])
				continue;
			bench_progress("isolation %d/%d: %s", r + 1, runs, vnames[v]);
			if (!phase_isolation(v, rss_full[v], &iso[v][r])) {
				fprintf(stderr, "memcg bench kvcache: %s failed in round %d\n",
				        vnames[v], r + 1);
				return 1;
			}
		}

	if (!o.json)
		printf("%-10s %10s %8s %8s %7s %10s %8s %8s %7s %10s %10s\n", "variant", "SET rps",
		       "p50 ms", "p99 ms", "cpu us", "GET rps", "p50 ms", "p99 ms", "cpu us",
		       "quiet hit", "RSS peak");
#define T(v, f) med(t[v], sizeof(struct tput), reps, offsetof(struct tput, f))
#define I(v, f) med(iso[v], sizeof(struct iso), runs, offsetof(struct iso, f))
#define TR(f) ratio_med(t[V_TENANTS], t[V_ONE], sizeof(struct tput), reps, offsetof(struct tput, f))
	for (int v = 0; v < NV; v++) {
		if (!have[v])
			continue;
		if (o.json) {
			static const char *const f[] = {
			        "set_rps",    "get_rps",    "set_p99_ms",      "get_p99_ms",
			        "set_cpu_us", "get_cpu_us", "quiet_hit_ratio", "rss_peak_mib"};
			double val[] = {T(v, set_rps),   T(v, get_rps),       T(v, set_p99),
			                T(v, get_p99),   T(v, set_cpu) / 1e3, T(v, get_cpu) / 1e3,
			                I(v, hit_ratio), I(v, rss_peak) / MIB};
			for (int i = 0; i < 8; i++) {
				char extra[64];
				snprintf(extra, sizeof(extra), "\"metric\":\"%s\"", f[i]);
				bench_emit_json("kvcache", vnames[v], extra, val[i], "");
			}
		} else {
			printf("%-10s %10.0f %8.3f %8.3f %7.2f %10.0f %8.3f %8.3f %7.2f %10.4f "
			       "%9.1fM\n",
			       vnames[v], T(v, set_rps), T(v, set_p50), T(v, set_p99),
			       T(v, set_cpu) / 1e3, T(v, get_rps), T(v, get_p50), T(v, get_p99),
			       T(v, get_cpu) / 1e3, I(v, hit_ratio), I(v, rss_peak) / MIB);
		}
	}
	if (!o.json)
		printf("\nTargets (medians; ratios repetition by repetition):\n");
	double limits = 2 * sz.mib * MIB;
	verdict(&o, "set_vs_one_group", TR(set_rps), 0.95, true,
	        "tenants SET throughput / one-group");
	verdict(&o, "get_vs_one_group", TR(get_rps), 0.95, true,
	        "tenants GET throughput / one-group");
	verdict(&o, "quiet_hit_ratio", I(V_TENANTS, hit_ratio), 0.95, true,
	        "quiet tenant's hit ratio with tenants");
	verdict(&o, "rss_vs_limits", I(V_TENANTS, rss_peak) / limits, 1.10, false,
	        "tenants RSS peak / sum of limits");
	if (!o.json) {
		printf("  quiet tenant's hit ratio: one-group %.4f", I(V_ONE, hit_ratio));
		if (have_redis)
			printf(", redis %.4f", I(V_REDIS, hit_ratio));
		printf(" (global LRUs)\n");
		printf("  the server's CPU per request, tenants / one-group (for information): "
		       "SET %.3f, GET %.3f\n",
		       TR(set_cpu), TR(get_cpu));
		printf("  %d of %d targets met\n", judged - missed, judged);
	}
#undef T
#undef I
#undef TR
	return 0;
}
