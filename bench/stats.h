/* SPDX-License-Identifier: MIT */
/*
 * bench/stats.h - the statistics every `memcg bench` program judges by:
 * medians that leave their input alone, ratios taken pair by pair (round r
 * of one variant against round r of another, never against a sorted copy),
 * the worst ratio over baselines, percentiles, and target verdicts.
 *
 * Verdicts: a ratio within BENCH_TIE_BAND (3 %) of its target is a TIE -
 * inside the noise of the machines these run on - and counts as met; a
 * MISS is a finding, printed as such, never an error exit.
 *
 * Pure functions of their arguments: no allocator state, no clock, no I/O
 * (tests/unit/test_bench_stats.c).
 */
#ifndef MCG_BENCH_STATS_H
#define MCG_BENCH_STATS_H

#include <stdbool.h>

/** The half-width of a tie around a target, as a fraction of it. */
#define BENCH_TIE_BAND 0.03

/** Most values bench_median() and bench_percentile() take (more: the first this many). */
#define BENCH_STATS_MAX 65536

/** bench_median - the median of @v[0, @n) (0 for @n <= 0); @v is not changed. */
double bench_median(const double *v, int n);

/** bench_percentile - the @p-th percentile (0..100, nearest rank) of @v[0, @n);
 *  0 for @n <= 0; @v is not changed. */
double bench_percentile(const double *v, int n, double p);

/** bench_mean / bench_stddev (sample, n - 1) of @v[0, @n); 0 when undefined. */
double bench_mean(const double *v, int n);
double bench_stddev(const double *v, int n);

/**
 * bench_ratio_median - the median over i of @num[i] / @den[i], i < @n: each
 * round's figure divided by the same round's figure of the reference (pairs
 * with a zero or negative denominator are left out).  0 if none is left.
 */
double bench_ratio_median(const double *num, const double *den, int n);

/**
 * bench_worst - the largest of @ratio[i] over the i < @n with @use[i] (the
 * baselines), *@who set to that i (-1 and a return of 0 if none).  A target
 * "memcg <= every baseline" is judged on this, never on a baseline picked.
 */
double bench_worst(const double *ratio, const bool *use, int n, int *who);

/** A target's outcome. */
enum bench_verdict {
	BENCH_PASS, /* met outright */
	BENCH_TIE,  /* within BENCH_TIE_BAND of the target: met, inside the noise */
	BENCH_MISS, /* not met */
};

/** bench_judge_le - the verdict on "@value <= @target" (a cost: lower is better). */
enum bench_verdict bench_judge_le(double value, double target);

/** bench_judge_ge - the verdict on "@value >= @target" (a rate: higher is better). */
enum bench_verdict bench_judge_ge(double value, double target);

/** bench_verdict_name - "PASS", "TIE" or "MISS". */
const char *bench_verdict_name(enum bench_verdict v);

/** bench_verdict_met - PASS or TIE. */
static inline bool bench_verdict_met(enum bench_verdict v) { return v != BENCH_MISS; }

#endif /* MCG_BENCH_STATS_H */
