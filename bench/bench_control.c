/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_control.c - `memcg bench control`: what the control socket
 * costs the allocation and charge paths.  Nothing, by construction (its
 * thread takes no lock the fast paths take while it waits); this measures
 * it.
 *
 * One process, one measuring thread, three variants interleaved round by
 * round (the order rotates each round):
 *   off   no control server;
 *   on    the server running, idle (mcg_control_start at a private path);
 *   poll  the server running and a client thread asking it for `metrics`
 *         every 100 ms - a Prometheus scrape or `memcg top` ten times
 *         over: every group's files, memory.stat included (which stops and
 *         scans the CPU arrays of accounted caches), and every cache.
 * Workloads, each a fixed count of operations taking about 0.1 s (short,
 * so that a round's three measurements see the same machine):
 *   malloc   mcg_malloc(64) + mcg_free pairs (the plain fast path);
 *   account  mcg_malloc_account(256, tenant) + mcg_free pairs (the
 *            accounted path: objcg stock, charged arrays), with 8 tenant
 *            groups holding 1000 accounted objects each, so a scrape has
 *            groups, stats and caches to read.
 * Figure: wall ns per pair; ratios on/off and poll/off taken round by round
 * (bench_ratio_median), judged "<= 1.0" with the 3 % tie band: PASS, TIE or
 * MISS.  The same ratios of the thread's CPU time beside them: on a shared
 * machine the wall time also counts the time other processes took the CPU.
 * Also the scrape's own latency (the poller's median and worst, ms).
 * --runs N: rounds (default 41: the machines these run on are shared and
 * noisy); --smoke: one short round.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/compiler.h"
#include "harness.h"
#include "memcg/control.h"
#include "memcg/group.h"
#include "memcg/kmalloc.h"

enum { V_OFF, V_ON, V_POLL, NR_V };
static const char *const vnames[NR_V] = {"off", "on", "poll"};
enum { W_MALLOC, W_ACCOUNT, NR_W };
static const char *const wnames[NR_W] = {"malloc", "account"};

#define MAX_RUNS 101
#define TENANTS 8

static char sock_path[108];
static mcg_group_t *tenant[TENANTS];

/* ------------------------------------------------------------ the poller */

static volatile int polling;
static double scrape_ms[4096];
static int nscrapes;

static int dial(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.107s", sock_path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* One `metrics` request and its whole reply (read and dropped).  Return 0 or -1. */
static int scrape(int fd)
{
	static char sink[65536];
	char head[64];
	size_t hl = 0;
	if (send(fd, "metrics\n", 8, MSG_NOSIGNAL) != 8)
		return -1;
	while (hl < sizeof(head) - 1) {
		if (recv(fd, head + hl, 1, 0) != 1)
			return -1;
		if (head[hl++] == '\n')
			break;
	}
	head[hl] = '\0';
	if (strncmp(head, "ok ", 3))
		return -1;
	for (size_t left = strtoul(head + 3, NULL, 10); left;) {
		ssize_t n = recv(fd, sink, MCG_MIN(left, sizeof(sink)), 0);
		if (n <= 0)
			return -1;
		left -= (size_t)n;
	}
	return 0;
}

static void *poller(void *arg)
{
	int fd = dial();
	while (__atomic_load_n(&polling, __ATOMIC_ACQUIRE)) {
		uint64_t t0 = bench_now_ns();
		if (fd < 0 || scrape(fd)) {
			if (fd >= 0)
				close(fd);
			fd = dial();
		} else if (nscrapes < (int)(sizeof(scrape_ms) / sizeof(scrape_ms[0]))) {
			scrape_ms[nscrapes++] = (double)(bench_now_ns() - t0) / 1e6;
		}
		uint64_t spent = bench_now_ns() - t0;
		if (spent < 100000000ull)
			usleep((useconds_t)((100000000ull - spent) / 1000));
	}
	if (fd >= 0)
		close(fd);
	return arg;
}

/* ------------------------------------------------------------ the workloads */

static void run_pairs(int w, long n)
{
	if (w == W_MALLOC) {
		for (long i = 0; i < n; i++) {
			void *p = mcg_malloc(64);
			__asm__ volatile("" : : "r"(p) : "memory");
			mcg_free(p);
		}
	} else {
		for (long i = 0; i < n; i++) {
			void *p = mcg_malloc_account(256, tenant[i & (TENANTS - 1)]);
			__asm__ volatile("" : : "r"(p) : "memory");
			mcg_free(p);
		}
	}
}

/* One measurement of @n pairs of workload @w under variant @v: ns per pair; *@cpu: CPU ns. */
static double measure(int w, int v, long n, double *cpu)
{
	pthread_t t;
	if (v != V_OFF && mcg_control_start(sock_path)) {
		fprintf(stderr, "memcg bench control: cannot start the control socket\n");
		exit(1);
	}
	if (v == V_POLL) {
		__atomic_store_n(&polling, 1, __ATOMIC_RELEASE);
		bench_start_thread(&t, poller, NULL);
		usleep(20000); /* its first scrape under way */
	}
	run_pairs(w, n / 16); /* warm */
	uint64_t c0 = bench_thread_cpu_ns(), t0 = bench_now_ns();
	run_pairs(w, n);
	uint64_t t1 = bench_now_ns(), c1 = bench_thread_cpu_ns();
	if (v == V_POLL) {
		__atomic_store_n(&polling, 0, __ATOMIC_RELEASE);
		pthread_join(t, NULL);
	}
	if (v != V_OFF)
		mcg_control_stop();
	*cpu = (double)(c1 - c0) / (double)n;
	return (double)(t1 - t0) / (double)n;
}

int bench_control_main(int argc, char **argv)
{
	struct bench_opts o;
	if (bench_parse_opts(argc, argv, &o))
		return 2;
	int runs = o.smoke ? 1 : (o.runs == 5 ? 41 : MCG_MIN(o.runs, MAX_RUNS));
	char dir[] = "/tmp/memcg-bench-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	snprintf(sock_path, sizeof(sock_path), "%s/control.sock", dir);
	static void *held[TENANTS][1000];
	for (int i = 0; i < TENANTS; i++) {
		char name[32];
		snprintf(name, sizeof(name), "bench-control-%d", i);
		if (mcg_group_create(NULL, name, &tenant[i])) {
			fprintf(stderr, "memcg bench control: cannot create the groups\n");
			return 1;
		}
		for (int j = 0; j < 1000; j++)
			held[i][j] = mcg_malloc_account(128, tenant[i]);
	}

	/* Pairs per measurement: about 0.1 s of the off variant (smoke: 200k). */
	long n[NR_W];
	for (int w = 0; w < NR_W; w++) {
		if (o.smoke) {
			n[w] = 200000;
			continue;
		}
		double cpu, ns = measure(w, V_OFF, 2000000, &cpu);
		n[w] = (long)(0.1e9 / (ns > 0.5 ? ns : 0.5));
	}
	bench_progress("control: %d round(s), variants interleaved; %ld / %ld pairs per "
	               "measurement",
	               runs, n[W_MALLOC], n[W_ACCOUNT]);
	static double ns[NR_W][NR_V][MAX_RUNS], cpu[NR_W][NR_V][MAX_RUNS];
	for (int r = 0; r < runs; r++)
		for (int w = 0; w < NR_W; w++)
			for (int k = 0; k < NR_V; k++) {
				int v = (k + r) % NR_V; /* the order rotates */
				ns[w][v][r] = measure(w, v, n[w], &cpu[w][v][r]);
			}

	if (!o.json) {
		printf("memcg bench control: wall ns per pair with the control socket off, on "
		       "(idle), and polled\nevery 100 ms; medians of %d interleaved rounds, "
		       "ratios round by round, target <= 1.00\n(3 %% tie band); the same ratios "
		       "of the thread's CPU time beside them\n",
		       runs);
		printf("%-8s %8s %8s %8s %8s %-5s %8s %-5s | %-6s %8s %8s\n", "workload", "off",
		       "on", "poll", "on/off", "", "poll/off", "", "CPU ns", "on/off", "poll/off");
	}
	for (int w = 0; w < NR_W; w++) {
		double med[NR_V], cmed[NR_V];
		for (int v = 0; v < NR_V; v++) {
			med[v] = bench_median(ns[w][v], runs);
			cmed[v] = bench_median(cpu[w][v], runs);
		}
		double on = bench_ratio_median(ns[w][V_ON], ns[w][V_OFF], runs);
		double pl = bench_ratio_median(ns[w][V_POLL], ns[w][V_OFF], runs);
		double con = bench_ratio_median(cpu[w][V_ON], cpu[w][V_OFF], runs);
		double cpl = bench_ratio_median(cpu[w][V_POLL], cpu[w][V_OFF], runs);
		enum bench_verdict von = bench_judge_le(on, 1.0), vpl = bench_judge_le(pl, 1.0);
		if (o.json) {
			char extra[200];
			for (int v = 0; v < NR_V; v++) {
				snprintf(extra, sizeof(extra),
				         "\"workload\":\"%s\",\"cpu_ns\":%.3f", wnames[w], cmed[v]);
				bench_emit_json("control", vnames[v], extra, med[v], "ns/pair");
			}
			snprintf(extra, sizeof(extra),
			         "\"workload\":\"%s\",\"pass\":%s,\"verdict\":\"%s\","
			         "\"cpu_ratio\":%.4f",
			         wnames[w], bench_verdict_met(von) ? "true" : "false",
			         bench_verdict_name(von), con);
			bench_emit_json("control", "on/off", extra, on, "ratio");
			snprintf(extra, sizeof(extra),
			         "\"workload\":\"%s\",\"pass\":%s,\"verdict\":\"%s\","
			         "\"cpu_ratio\":%.4f",
			         wnames[w], bench_verdict_met(vpl) ? "true" : "false",
			         bench_verdict_name(vpl), cpl);
			bench_emit_json("control", "poll/off", extra, pl, "ratio");
		} else {
			printf("%-8s %8.2f %8.2f %8.2f %8.3f %-5s %8.3f %-5s | %6.2f %8.3f %8.3f\n",
			       wnames[w], med[V_OFF], med[V_ON], med[V_POLL], on,
			       bench_verdict_name(von), pl, bench_verdict_name(vpl), cmed[V_OFF],
			       con, cpl);
		}
	}
	double p50 = bench_median(scrape_ms, nscrapes),
	       p100 = bench_percentile(scrape_ms, nscrapes, 100);
	if (o.json) {
		char extra[64];
		snprintf(extra, sizeof(extra), "\"scrapes\":%d,\"worst_ms\":%.3f", nscrapes, p100);
		bench_emit_json("control", "scrape", extra, p50, "ms");
	} else {
		printf("a scrape (`metrics`, %d groups, every cache): median %.2f ms, worst %.2f "
		       "ms "
		       "over %d\n",
		       TENANTS + 1, p50, p100, nscrapes);
	}
	for (int i = 0; i < TENANTS; i++) {
		for (int j = 0; j < 1000; j++)
			mcg_free(held[i][j]);
		mcg_group_remove(tenant[i]);
		mcg_group_put(tenant[i]);
	}
	rmdir(dir);
	return nscrapes > 0 || !runs ? 0 : 1;
}
