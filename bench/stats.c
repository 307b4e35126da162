/* SPDX-License-Identifier: MIT */
/* bench/stats.c - the benchmarks' statistics and verdicts (see stats.h). */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* A sorted copy of @v[0, @n) in @tmp (room for BENCH_STATS_MAX); how many. */
static int sorted_copy(const double *v, int n, double *tmp)
{
	if (n > BENCH_STATS_MAX)
		n = BENCH_STATS_MAX;
	memcpy(tmp, v, (size_t)n * sizeof(double));
	qsort(tmp, (size_t)n, sizeof(double), cmp_double);
	return n;
}

double bench_median(const double *v, int n)
{
	if (n <= 0)
		return 0;
	double *tmp = malloc((size_t)(n > BENCH_STATS_MAX ? BENCH_STATS_MAX : n) * sizeof(double));
	if (!tmp)
		return NAN;
	n = sorted_copy(v, n, tmp);
	double m = n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
	free(tmp);
	return m;
}

double bench_percentile(const double *v, int n, double p)
{
	if (n <= 0)
		return 0;
	double *tmp = malloc((size_t)(n > BENCH_STATS_MAX ? BENCH_STATS_MAX : n) * sizeof(double));
	if (!tmp)
		return NAN;
	n = sorted_copy(v, n, tmp);
	if (p < 0)
		p = 0;
	if (p > 100)
		p = 100;
	/* Nearest rank: the smallest value with at least p % of the values at or below it. */
	int rank = (int)ceil(p / 100.0 * n);
	double r = tmp[rank < 1 ? 0 : rank - 1];
	free(tmp);
	return r;
}

double bench_mean(const double *v, int n)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s += v[i];
	return n > 0 ? s / n : 0;
}

double bench_stddev(const double *v, int n)
{
	if (n < 2)
		return 0;
	double m = bench_mean(v, n), s = 0;
	for (int i = 0; i < n; i++)
		s += (v[i] - m) * (v[i] - m);
	return sqrt(s / (n - 1));
}

double bench_ratio_median(const double *num, const double *den, int n)
{
	if (n <= 0)
		return 0;
	double *q = malloc((size_t)n * sizeof(double));
	if (!q)
		return NAN;
	int k = 0;
	for (int i = 0; i < n; i++)
		if (den[i] > 0)
			q[k++] = num[i] / den[i];
	double m = bench_median(q, k);
	free(q);
	return m;
}

double bench_worst(const double *ratio, const bool *use, int n, int *who)
{
	*who = -1;
	for (int i = 0; i < n; i++)
		if (use[i] && (*who < 0 || ratio[i] > ratio[*who]))
			*who = i;
	return *who < 0 ? 0 : ratio[*who];
}

enum bench_verdict bench_judge_le(double value, double target)
{
	if (value <= target)
		return BENCH_PASS;
	return value <= target * (1 + BENCH_TIE_BAND) ? BENCH_TIE : BENCH_MISS;
}

enum bench_verdict bench_judge_ge(double value, double target)
{
	if (value >= target)
		return BENCH_PASS;
	return value >= target * (1 - BENCH_TIE_BAND) ? BENCH_TIE : BENCH_MISS;
}

const char *bench_verdict_name(enum bench_verdict v)
{
	return v == BENCH_PASS ? "PASS" : v == BENCH_TIE ? "TIE" : "MISS";
}
