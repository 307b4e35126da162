/* SPDX-License-Identifier: MIT */
/*
 * test_bench_stats.c - the benchmarks' statistics (bench/stats.c): medians
 * that leave their input alone, ratios round by round, the worst baseline,
 * percentiles and verdicts, against hand-computed values.
 */
#include <math.h>

#include "stats.h"
#include "test.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

static void test_median_leaves_input_alone(void)
{
	double v[] = {5, 1, 4, 2, 3};
	CHECK(NEAR(bench_median(v, 5), 3));
	/* The caller's order survives: a second array indexed alongside stays paired. */
	CHECK(v[0] == 5 && v[1] == 1 && v[2] == 4 && v[3] == 2 && v[4] == 3);
	double e[] = {4, 1, 3, 2};
	CHECK(NEAR(bench_median(e, 4), 2.5));
	CHECK(NEAR(bench_median(e, 1), 4));
	CHECK(NEAR(bench_median(e, 0), 0));
}

static void test_ratio_median_pairs_rounds(void)
{
	/* Round r of the group against round r of root: 2/1, 2/4, 8/2 -> 2, 0.5, 4. */
	double root[] = {1, 4, 2}, group[] = {2, 2, 8};
	CHECK(NEAR(bench_ratio_median(group, root, 3), 2));
	/* Dividing by root's sorted rounds (1, 2, 4) would have given 2, 1, 2 -> 2: the
	 * same median by chance; this set tells the two apart: 3/1, 1/3, 2/2 -> 1, while
	 * against the sorted root (1, 2, 3) it reads 3, 0.5, 0.67 -> 0.67. */
	double r2[] = {1, 3, 2}, g2[] = {3, 1, 2};
	CHECK(NEAR(bench_ratio_median(g2, r2, 3), 1));
	CHECK(r2[0] == 1 && r2[1] == 3 && r2[2] == 2);
	double z[] = {0, 2}, n[] = {5, 4};
	CHECK(NEAR(bench_ratio_median(n, z, 2), 2)); /* a zero denominator is left out */
	CHECK(NEAR(bench_ratio_median(n, z, 0), 0));
}

static void test_worst_over_baselines(void)
{
	double r[] = {0.5, 1.2, 0.9, 1.1};
	bool use[] = {false, true, true, true};
	int who;
	CHECK(NEAR(bench_worst(r, use, 4, &who), 1.2));
	CHECK_EQ(who, 1);
	use[1] = false;
	CHECK(NEAR(bench_worst(r, use, 4, &who), 1.1));
	CHECK_EQ(who, 3);
	bool none[] = {false, false, false, false};
	CHECK(NEAR(bench_worst(r, none, 4, &who), 0));
	CHECK_EQ(who, -1);
}

static void test_percentile_nearest_rank(void)
{
	double v[100];
	for (int i = 0; i < 100; i++)
		v[i] = 100 - i; /* 100 .. 1, unsorted */
	CHECK(NEAR(bench_percentile(v, 100, 50), 50));
	CHECK(NEAR(bench_percentile(v, 100, 99), 99));
	CHECK(NEAR(bench_percentile(v, 100, 100), 100));
	CHECK(NEAR(bench_percentile(v, 100, 0), 1));
	CHECK(NEAR(v[0], 100));
	double w[] = {7, 3, 9};
	CHECK(NEAR(bench_percentile(w, 3, 50), 7));
	CHECK(NEAR(bench_percentile(w, 0, 50), 0));
}

static void test_mean_stddev(void)
{
	double v[] = {2, 4, 4, 4, 5, 5, 7, 9};
	CHECK(NEAR(bench_mean(v, 8), 5));
	CHECK(fabs(bench_stddev(v, 8) - 2.138089935) < 1e-6);
	CHECK(NEAR(bench_stddev(v, 1), 0));
}

static void test_verdicts(void)
{
	CHECK_EQ(bench_judge_le(1.00, 1.0), BENCH_PASS);
	CHECK_EQ(bench_judge_le(1.02, 1.0), BENCH_TIE);
	CHECK_EQ(bench_judge_le(1.04, 1.0), BENCH_MISS);
	CHECK_EQ(bench_judge_le(1.5, 1.5), BENCH_PASS);
	CHECK_EQ(bench_judge_le(1.54, 1.5), BENCH_TIE);
	CHECK_EQ(bench_judge_le(1.56, 1.5), BENCH_MISS);
	CHECK_EQ(bench_judge_ge(0.95, 0.95), BENCH_PASS);
	CHECK_EQ(bench_judge_ge(0.93, 0.95), BENCH_TIE);
	CHECK_EQ(bench_judge_ge(0.90, 0.95), BENCH_MISS);
	CHECK(bench_verdict_met(BENCH_TIE) && !bench_verdict_met(BENCH_MISS));
	CHECK(!strcmp(bench_verdict_name(BENCH_TIE), "TIE"));
	CHECK(!strcmp(bench_verdict_name(BENCH_MISS), "MISS"));
}

int main(void)
{
	RUN(test_median_leaves_input_alone);
	RUN(test_ratio_median_pairs_rounds);
	RUN(test_worst_over_baselines);
	RUN(test_percentile_nearest_rank);
	RUN(test_mean_stddev);
	RUN(test_verdicts);
	return test_done();
}
