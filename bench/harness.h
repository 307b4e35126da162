/* SPDX-License-Identifier: MIT */
/*
 * bench/harness.h - what every `memcg bench` program shares: options,
 * clocks, statistics, and the output (a table for people, one JSON object
 * per line with --json).  Benchmarks run their baselines in the same run,
 * interleaved, and report medians and ratios.
 */
#ifndef MCG_BENCH_HARNESS_H
#define MCG_BENCH_HARNESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stats.h"

struct bench_opts {
	bool json;   /* --json: one object per line on stdout */
	bool smoke;  /* --smoke: tiny sizes, one run: proves it works, measures nothing */
	int runs;    /* --runs N: repetitions for medians (default 5, smoke 1) */
	int threads; /* --threads N: 0 = the benchmark's default */
};

/** bench_parse_opts - parse the common flags; return 0, or 2 on a bad flag. */
int bench_parse_opts(int argc, char **argv, struct bench_opts *o);

/** bench_now_ns - CLOCK_MONOTONIC in ns. */
uint64_t bench_now_ns(void);

/**
 * bench_thread_cpu_ns - CPU time of the calling thread (user + system) in ns.
 * Unlike bench_now_ns() it does not count time the thread was preempted, so
 * single-threaded loops measure the same on a busy machine.
 */
uint64_t bench_thread_cpu_ns(void);

/**
 * bench_take_case - split `--case NAME` out of @argv (@argc entries): *@only
 * gets NAME (NULL if absent), @args (room for 64) the other arguments,
 * NULL-terminated.  NAME must be one of @cases (NULL-terminated), else a
 * message names @bench and its cases.  Return: the count in @args, or -1.
 */
int bench_take_case(int argc, char **argv, const char *bench, const char *const *cases,
                    const char **only, char **args);
/** bench_threads - the thread count: --threads, else the CPUs allowed; 1..@max. */
int bench_threads(const struct bench_opts *o, int max);

/** bench_pin_to - run the calling thread on CPU @cpu only (nothing if @cpu < 0). */
void bench_pin_to(int cpu);
/** bench_allowed_cpus - the CPUs this process may run on, in order, into @cpus; how many (<= @max).
 */
int bench_allowed_cpus(int *cpus, int max);
/** bench_thread_cpu - where worker thread @i runs: the allowed CPUs in turn (-1: unknown). */
int bench_thread_cpu(int i);
/** bench_start_thread - pthread_create(@tid, @fn, @arg), or exit the process (a
 *  thread missing at a barrier would hang the others). */
void bench_start_thread(pthread_t *tid, void *(*fn)(void *), void *arg);

/** bench_rss_kib - this process's resident set (from /proc/self/statm) in KiB, or -1. */
long bench_rss_kib(void);

/** The free1m workers' arguments: SIZE THREADS NOBJ, and ROUNDS for the -ab ones. */
struct bench_f1_args {
	size_t size, n;
	int threads, rounds;
};

/**
 * bench_f1_args - parse them into @a: threads 1..@max_threads and, when
 * @max_rounds is nonzero, a fourth argument, rounds 1..@max_rounds.
 * Return: false if one is missing or out of range (a usage error).
 */
bool bench_f1_args(int argc, char **argv, int max_threads, int max_rounds, struct bench_f1_args *a);

/** bench_print_threads - one line on stdout: @ms[0, @n) (each thread's wall
 *  ms), then @cpu_ms[0, @n) (its CPU ms), as the free1m workers print them. */
void bench_print_threads(const double *ms, const double *cpu_ms, int n);

/** bench_progress - a progress line on stderr (never stdout). */
void bench_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/**
 * bench_emit_json - one JSON line: {"bench":..,"variant":..,<extra>,"value":..,"unit":..}.
 * @extra is a fragment of JSON members without braces (e.g. "\"size\":64,\"threads\":2"),
 * or NULL.
 */
void bench_emit_json(const char *bench, const char *variant, const char *extra, double value,
                     const char *unit);

/* Benchmarks: each a `memcg bench NAME` program. */
int bench_slab_main(int argc, char **argv);     /* bench_slab.c */
int bench_charge_main(int argc, char **argv);   /* bench_charge.c */
int bench_reclaim_main(int argc, char **argv);  /* bench_reclaim.c */
int bench_objcg_main(int argc, char **argv);    /* bench_objcg.c */
int bench_kvcache_main(int argc, char **argv);  /* bench_kvcache.c */
int bench_control_main(int argc, char **argv);  /* bench_control.c */
int bench_dirty_main(int argc, char **argv);    /* bench_dirty.c */
int bench_programs_main(int argc, char **argv); /* bench_programs.c */

/** bench_group_key - the value of line "@key N" of @file (memory.stat...) of group @g, or -1. */
struct mcg_group;
long long bench_group_key(struct mcg_group *g, const char *file, const char *key);

#endif /* MCG_BENCH_HARNESS_H */
