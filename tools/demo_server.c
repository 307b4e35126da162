/* SPDX-License-Identifier: MIT */
/*
 * tools/demo_server.c - `memcg demo --server`: a real multi-tenant server
 * (memcg-kvcache) and real clients (redis-benchmark), real memory.
 *
 *   kvcache
 *    |- web    max 32M, low 16M   a hot set of 12M, read by GETs
 *    |- api    max 24M            8M of keys, rewritten and read
 *    `- batch  max 16M            SETs of new keys as fast as it can: the noisy one
 *
 * For --seconds (20) it prints every second each tenant's memory.current
 * (its keys and values, charged to its group), evictions and hit ratio in
 * that second, and the server's RSS; then a summary: each tenant stayed
 * under its max, only batch's keys were evicted to make room for batch,
 * web and api kept their hit ratios, no OOM, RSS against the limits.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "demo.h"
#include "kvclient.h"

#define MIB (1024.0 * 1024.0)

struct dtenant {
	const char *name, *spec;
	double max;
	long fill; /* keys written before the clients start */
	double peak, hits, misses, evicted, oom;
	double last_hits, last_misses, last_evicted;
};

static struct dtenant dt[] = {
        {.name = "web", .spec = "web:max=32M,low=16M", .max = 32 * MIB, .fill = 32000},
        {.name = "api", .spec = "api:max=24M", .max = 24 * MIB, .fill = 21000},
        {.name = "batch", .spec = "batch:max=16M", .max = 16 * MIB, .fill = 0},
};
#define NT 3

static void sample(int port, bool print, pid_t server, double *rss_peak)
{
	char *info = kvc_info(port, "tenants");
	long rss = kvc_rss_kib(server);
	if (rss * 1024.0 > *rss_peak)
		*rss_peak = rss * 1024.0;
	for (int i = 0; i < NT; i++) {
		struct dtenant *t = &dt[i];
		char field[32];
		snprintf(field, sizeof(field), "tenant_%s", t->name);
		double cur = kvc_info_num(info, field, "memory_current");
		t->peak = kvc_info_num(info, field, "memory_peak");
		t->hits = kvc_info_num(info, field, "keyspace_hits");
		t->misses = kvc_info_num(info, field, "keyspace_misses");
		t->evicted = kvc_info_num(info, field, "evicted_keys");
		t->oom = kvc_info_num(info, field, "oom_events");
		double h = t->hits - t->last_hits, m = t->misses - t->last_misses;
		if (print)
			printf("  %-6s %8.1fM %6.0fM | %8.0f %10s\n", t->name, cur / MIB,
			       t->max / MIB, t->evicted - t->last_evicted,
			       h + m > 0 ? (snprintf(field, sizeof(field), "%.3f", h / (h + m)),
			                    field)
			                 : "-");
		t->last_hits = t->hits, t->last_misses = t->misses, t->last_evicted = t->evicted;
	}
	if (print)
		printf("  server RSS %.1fM (limits sum to 72M)\n", rss / 1024.0);
	free(info);
}

int mcg_demo_server(int seconds)
{
	char bench[4096];
	if (!kvc_find("redis-benchmark", bench, sizeof(bench))) {
		fprintf(stderr, "memcg demo --server: redis-benchmark is not installed "
		                "(scripts/deps.sh installs redis-tools)\n");
		return 1;
	}
	const char *args[] = {"--tenant", dt[0].spec, "--tenant", dt[1].spec,
	                      "--tenant", dt[2].spec, NULL};
	struct kvc_server kv;
	if (kvc_start_kvcache(&kv, args, NULL))
		return 1;
	printf("memcg demo --server: memcg-kvcache (pid %d, port %d) with three tenants, driven by "
	       "redis-benchmark for %d s\n\n",
	       (int)kv.pid, kv.port, seconds);
	printf("  kvcache\n"
	       "   |- web    max 32M, low 16M   GETs over a 12M hot set\n"
	       "   |- api    max 24M            SETs and GETs over 8M of keys\n"
	       "   `- batch  max 16M            SETs of new keys, as fast as it can (noisy)\n\n");
	for (int i = 0; i < NT; i++)
		if (dt[i].fill && kvc_fill(kv.port, i, dt[i].fill, 256)) {
			fprintf(stderr, "memcg demo --server: filling %s failed\n", dt[i].name);
			kvc_stop(&kv);
			return 1;
		}

	char port[16], webr[16], apir[16];
	snprintf(port, sizeof(port), "%d", kv.port);
	snprintf(webr, sizeof(webr), "%ld", dt[0].fill);
	snprintf(apir, sizeof(apir), "%ld", dt[1].fill);
	char *cmds[4][22] = {
	        {bench, "-p", port, "--dbnum", "0", "-t", "get", "-r", webr, "-n", "1000000000",
	         "-c", "2", "-q", NULL},
	        {bench, "-p", port, "--dbnum", "1", "-t", "set", "-r", apir, "-d", "256", "-n",
	         "1000000000", "-c", "1", "-q", NULL},
	        {bench, "-p", port, "--dbnum", "1", "-t", "get", "-r", apir, "-n", "1000000000",
	         "-c", "1", "-q", NULL},
	        {bench, "-p", port, "--dbnum", "2", "-t", "set", "-r", "1000000000", "-d", "256",
	         "-n", "1000000000", "-P", "16", "-c", "4", "-q", NULL},
	};
	pid_t pids[4];
	for (int i = 0; i < 4; i++)
		pids[i] = kvc_spawn(cmds[i], NULL, NULL);
	double rss_peak = 0;
	sample(kv.port, false, kv.pid, &rss_peak);
	for (int s = 1; s <= seconds; s++) {
		sleep(1);
		printf("t=%2ds    current    max | evicted  hit ratio (this second)\n", s);
		sample(kv.port, true, kv.pid, &rss_peak);
	}
	for (int i = 0; i < 4; i++) {
		if (pids[i] > 0) {
			kill(pids[i], SIGTERM);
			kvc_wait(pids[i], 10);
		}
	}
	sample(kv.port, false, kv.pid, &rss_peak);

	printf("\nWhat the limits did:\n");
	bool ok = true;
	double limits = 0;
	for (int i = 0; i < NT; i++) {
		struct dtenant *t = &dt[i];
		double reads = t->hits + t->misses;
		limits += t->max;
		printf("  %-6s peak %.1fM of max %.0fM, %.0f keys evicted, hit ratio %.4f over "
		       "%.0f "
		       "reads, %.0f OOM events\n",
		       t->name, t->peak / MIB, t->max / MIB, t->evicted,
		       reads > 0 ? t->hits / reads : 0.0, reads, t->oom);
		ok = ok && t->peak <= t->max && t->oom == 0;
	}
	bool quiet_kept = dt[0].evicted == 0 && dt[0].hits / (dt[0].hits + dt[0].misses + 1) > 0.95;
	printf("  server RSS peak %.1fM against limits summing to %.0fM (%+.1f %%)\n",
	       rss_peak / MIB, limits / MIB, 100.0 * (rss_peak - limits) / limits);
	int st = kvc_stop(&kv);
	if (st)
		printf("  UNEXPECTED: memcg-kvcache exited with %d\n", st);
	if (!ok || st)
		printf("  UNEXPECTED: a tenant went over its max or hit OOM.\n");
	else if (quiet_kept)
		printf("  batch wrote far past its 16M and evicted only its own keys; web kept its "
		       "hot set.\n");
	else
		printf("  every tenant stayed within its max without OOM.\n");
	return ok && !st ? 0 : 1;
}
