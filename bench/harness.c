/* SPDX-License-Identifier: MIT */
/* bench/harness.c - shared benchmark plumbing (see harness.h). */
#include "harness.h"

#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memcg/group.h"

int bench_parse_opts(int argc, char **argv, struct bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->runs = 5;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			o->json = true;
		} else if (!strcmp(argv[i], "--smoke")) {
			o->smoke = true;
		} else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
			o->runs = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			o->threads = atoi(argv[++i]);
		} else {
			fprintf(stderr, "memcg bench: unknown option '%s'\n", argv[i]);
			return 2;
		}
	}
	if (o->smoke)
		o->runs = 1;
	if (o->runs < 1)
		o->runs = 1;
	return 0;
}

uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t bench_thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

long bench_rss_kib(void)
{
	/* open/read, not stdio: no malloc in the allocator being measured. */
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	long size, resident;
	if (sscanf(buf, "%ld %ld", &size, &resident) != 2)
		return -1;
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

bool bench_f1_args(int argc, char **argv, int max_threads, int max_rounds, struct bench_f1_args *a)
{
	if (argc < (max_rounds ? 4 : 3))
		return false;
	a->size = strtoul(argv[0], NULL, 0);
	a->threads = atoi(argv[1]);
	a->n = strtoul(argv[2], NULL, 0);
	a->rounds = max_rounds ? atoi(argv[3]) : 0;
	return a->threads >= 1 && a->threads <= max_threads &&
	       (!max_rounds || (a->rounds >= 1 && a->rounds <= max_rounds));
}

void bench_print_threads(const double *ms, const double *cpu_ms, int n)
{
	for (int i = 0; i < n; i++)
		printf("%.4f ", ms[i]);
	for (int i = 0; i < n; i++)
		printf("%.4f ", cpu_ms[i]);
	printf("\n");
}

void bench_progress(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "[bench] ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

void bench_emit_json(const char *bench, const char *variant, const char *extra, double value,
                     const char *unit)
{
	printf("{\"bench\":\"%s\",\"variant\":\"%s\"%s%s,\"value\":%.6g,\"unit\":\"%s\"}\n", bench,
	       variant, extra ? "," : "", extra ? extra : "", value, unit);
	fflush(stdout);
}

void bench_pin_to(int cpu)
{
	if (cpu < 0)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

int bench_allowed_cpus(int *cpus, int max)
{
	cpu_set_t set;
	int n = 0;
	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	for (int i = 0; i < CPU_SETSIZE && n < max; i++)
		if (CPU_ISSET(i, &set))
			cpus[n++] = i;
	return n;
}

int bench_thread_cpu(int i)
{
	int cpus[CPU_SETSIZE], n = bench_allowed_cpus(cpus, CPU_SETSIZE);
	return n ? cpus[i % n] : -1;
}

void bench_start_thread(pthread_t *tid, void *(*fn)(void *), void *arg)
{
	if (pthread_create(tid, NULL, fn, arg)) {
		fprintf(stderr, "memcg bench: pthread_create failed\n");
		_exit(1);
	}
}

int bench_take_case(int argc, char **argv, const char *bench, const char *const *cases,
                    const char **only, char **args)
{
	int nargs = 0;
	*only = NULL;
	for (int i = 0; i < argc && nargs < 63; i++) {
		if (!strcmp(argv[i], "--case") && i + 1 < argc)
			*only = argv[++i];
		else
			args[nargs++] = argv[i];
	}
	args[nargs] = NULL;
	if (!*only)
		return nargs;
	for (const char *const *c = cases; *c; c++)
		if (!strcmp(*only, *c))
			return nargs;
	fprintf(stderr, "memcg bench %s: unknown case '%s' (", bench, *only);
	for (const char *const *c = cases; *c; c++)
		fprintf(stderr, "%s%s", c == cases ? "" : ", ", *c);
	fprintf(stderr, ")\n");
	return -1;
}

int bench_threads(const struct bench_opts *o, int max)
{
	int cpus[CPU_SETSIZE];
	int n = o->threads > 0 ? o->threads : bench_allowed_cpus(cpus, CPU_SETSIZE);
	return n < 1 ? 1 : n > max ? max : n;
}

long long bench_group_key(struct mcg_group *g, const char *file, const char *key)
{
	char buf[8192];
	if (mcg_group_read(g, file, buf, sizeof(buf)) < 0)
		return -1;
	size_t kl = strlen(key);
	for (const char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, key, kl) && l[kl] == ' ')
			return atoll(l + kl + 1);
	return -1;
}
