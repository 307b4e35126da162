/* SPDX-License-Identifier: MIT */
/* bench/bench.c - `memcg bench NAME`: dispatch to a benchmark program. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "harness.h"

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
} benches[] = {
        {"slab", bench_slab_main, "seed 001 alloc/free pairs, seed 000 1M frees, grow/shrink, RSS"},
        {"charge", bench_charge_main,
         "seed 002: spin/mutex res_counter, atomic, stock; pair and held"},
        {"reclaim", bench_reclaim_main, "seed 003: postmark under reclaim, shrinker scalability"},
        {"objcg", bench_objcg_main, "seed 000: accounted frees, alive/removed group; pairs; bytes"},
        {"kvcache", bench_kvcache_main,
         "examples/kvcache under redis-benchmark: tenants vs one group vs redis-server"},
        {"control", bench_control_main,
         "the control socket off / on / polled: its cost to the fast paths"},
        {"dirty", bench_dirty_main,
         "seed 004: page cache dirty limits - overhead, throughput, bound, fairness, pauses"},
        {"programs", bench_programs_main,
         "real programs (python3, sqlite3, xz, sort, gcc, perl, a cache server) on each malloc"},
};

int mcg_cmd_bench(int argc, char **argv)
{
	if (argc >= 2) {
		for (size_t i = 0; i < sizeof(benches) / sizeof(benches[0]); i++)
			if (!strcmp(argv[1], benches[i].name))
				return benches[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "usage: memcg bench NAME [--json] [--smoke] [--runs N] [--threads N]\n");
	for (size_t i = 0; i < sizeof(benches) / sizeof(benches[0]); i++)
		fprintf(stderr, "  %-8s %s\n", benches[i].name, benches[i].help);
	return 2;
}
