/* SPDX-License-Identifier: MIT */
/*
 * tools/demo_program.c - `memcg demo --program`: a real program on memcg's
 * allocator (the first demo, before the multi-tenant one of cmd_demo.c).
 *
 * Runs a short real workload (an embedded python3 script: a session
 * cache with JSON round trips, string churn and worker threads) twice, on
 * glibc's malloc and on memcg's allocator through the `memcg run` machinery
 * (run.h), checks that both print the same result, and prints the program's
 * slabinfo at exit with a summary (time, peak RSS, caches, slab use).  Then
 * the benchmark summary of `memcg bench slab --smoke` when that benchmark is
 * built.  Without python3, sort(1) over a generated file is the workload.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "demo.h"
#include "run.h"

static const char demo_script[] =
        "import json, random, threading, hashlib\n"
        "\n"
        "def tenant(seed, results):\n"
        "    rnd = random.Random(seed)\n"
        "    cache = {}\n"
        "    log = []\n"
        "    for i in range(60000):\n"
        "        key = 'user:%d' % rnd.randrange(8000)\n"
        "        if key in cache and rnd.random() < 0.6:\n"
        "            doc = json.loads(cache[key])\n"
        "            doc['hits'] += 1\n"
        "            doc['tags'].append(rnd.choice('abcdefgh') * rnd.randrange(1, 40))\n"
        "            doc['tags'] = doc['tags'][-8:]\n"
        "        else:\n"
        "            doc = {'id': key, 'hits': 0, 'tags': [], 'blob': 'x' * rnd.randrange(16, "
        "2000)}\n"
        "        cache[key] = json.dumps(doc)\n"
        "        log.append('%s %d' % (key, len(cache[key])))\n"
        "        if len(log) > 5000:\n"
        "            del log[:2500]\n"
        "        if len(cache) > 6000:\n"
        "            for k in list(cache)[:1000]:\n"
        "                del cache[k]\n"
        "    h = hashlib.sha256()\n"
        "    for k in sorted(cache):\n"
        "        h.update(cache[k].encode())\n"
        "    results[seed] = h.hexdigest()\n"
        "\n"
        "results = {}\n"
        "threads = [threading.Thread(target=tenant, args=(s, results)) for s in range(4)]\n"
        "for t in threads:\n"
        "    t.start()\n"
        "for t in threads:\n"
        "    t.join()\n"
        "digest = hashlib.sha256(''.join(results[s] for s in sorted(results)).encode())\n"
        "print('4 tenants x 60000 requests, cache digest', digest.hexdigest()[:16])\n";

static bool on_path(const char *name)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, p, name);
		if (access(buf, X_OK) == 0)
			return true;
		p += n + (p[n] == ':');
	}
	return false;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* One run: @argv with stdout to @out_path, on the shim if @preload. */
struct demo_run {
	int status;
	double seconds;
	long max_rss_kib;
};

static struct demo_run run_once(char *const argv[], const char *preload, const char *report,
                                const char *out_path)
{
	struct demo_run r = {.status = -1};
	fflush(NULL);
	int saved = dup(1);
	FILE *out = fopen(out_path, "w");
	if (saved < 0 || !out) {
		perror("memcg demo");
		return r;
	}
	dup2(fileno(out), 1);
	fclose(out);
	struct rusage ru = {0};
	double t0 = now_s();
	if (preload) {
		r.status = mcg_run_program(argv, preload, report, &ru);
	} else {
		pid_t pid = fork();
		if (pid == 0) {
			execvp(argv[0], argv);
			_exit(127);
		}
		int st = 0;
		if (pid > 0 && wait4(pid, &st, 0, &ru) == pid)
			r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
	r.seconds = now_s() - t0;
	r.max_rss_kib = ru.ru_maxrss;
	dup2(saved, 1);
	close(saved);
	return r;
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	size_t n;
	while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (cap - len < 2) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	fclose(f);
	if (buf)
		buf[len] = 0;
	return buf;
}

/* Print the caches in use from a slabinfo report, then totals. */
static void print_slabinfo(const char *report)
{
	unsigned long caches = 0, in_use = 0, active_bytes = 0, slab_bytes = 0, active_objs = 0;
	const char *line = report;
	printf("The program's slabinfo at exit (caches with live objects or more than one "
	       "slab):\n");
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		int len = nl ? (int)(nl - line) : (int)strlen(line);
		char name[64];
		unsigned long active, num, objsize, perslab, pages, aslabs, nslabs;
		if (!strncmp(line, "slabinfo", 8) || line[0] == '#') {
			printf("  %.*s\n", len, line);
		} else if (sscanf(line,
		                  "%63s %lu %lu %lu %lu %lu : tunables %*u %*u %*u : slabdata %lu "
		                  "%lu",
		                  name, &active, &num, &objsize, &perslab, &pages, &aslabs,
		                  &nslabs) == 8) {
			caches++;
			in_use += num > 0;
			if (active > 0 || nslabs > 1)
				printf("  %.*s\n", len, line);
			active_objs += active;
			active_bytes += active * objsize;
			slab_bytes += nslabs * pages * 4096;
		}
		line = nl ? nl + 1 : NULL;
	}
	printf("\n%lu caches, %lu with slabs; %lu objects live at exit in %.1f KiB of slabs "
	       "(%.0f %% used)\n",
	       caches, in_use, active_objs, (double)slab_bytes / 1024,
	       slab_bytes ? 100.0 * (double)active_bytes / (double)slab_bytes : 0.0);
}

static int bench_summary(void)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = 0;
	printf("\n== Benchmark summary: memcg bench slab --smoke\n");
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, 2); /* progress and "not built" notes */
		execl(self, self, "bench", "slab", "--smoke", (char *)NULL);
		_exit(127);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		printf("(not available in this build yet: `memcg bench slab` exited with %d)\n",
		       WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	return 0;
}

int mcg_demo_program(void)
{
	char preload[PATH_MAX];
	if (mcg_run_find_preload(preload, sizeof(preload)))
		return 1;
	char dir[] = "/tmp/memcg-demo-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("memcg demo: mkdtemp");
		return 1;
	}
	char script[PATH_MAX], report[PATH_MAX], out_a[PATH_MAX], out_b[PATH_MAX];
	snprintf(script, sizeof(script), "%s/workload.py", dir);
	snprintf(report, sizeof(report), "%s/slabinfo.txt", dir);
	snprintf(out_a, sizeof(out_a), "%s/out-glibc.txt", dir);
	snprintf(out_b, sizeof(out_b), "%s/out-memcg.txt", dir);

	char *py_argv[] = {"python3", script, NULL};
	char *sort_argv[] = {"sort", "-n", script, NULL};
	char *const *wl = py_argv;
	const char *what = "python3: 4 threads, a JSON session cache per thread";
	FILE *f = fopen(script, "w");
	if (!f) {
		perror("memcg demo");
		return 1;
	}
	if (on_path("python3")) {
		fputs(demo_script, f);
	} else {
		/* No python3: sort a generated file instead. */
		unsigned long x = 88172645463325252ul;
		for (int i = 0; i < 400000; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			fprintf(f, "%lu line-%d\n", x % 100000007, i);
		}
		wl = sort_argv;
		what = "sort -n over 400000 generated lines (python3 is not installed)";
	}
	fclose(f);

	printf("memcg demo: a real program on memcg's slab allocator\n\n"
	       "== Workload: %s\n",
	       what);
	struct demo_run a = run_once(wl, NULL, NULL, out_a);
	struct demo_run b = run_once(wl, preload, report, out_b);
	char *res_a = read_text(out_a), *res_b = read_text(out_b), *rep = read_text(report);
	int rc = 0;
	if (a.status != 0 || b.status != 0 || !res_a || !res_b || strcmp(res_a, res_b)) {
		fprintf(stderr,
		        "memcg demo: the workload failed (glibc: status %d, memcg: status %d)"
		        " or their outputs differ\n",
		        a.status, b.status);
		rc = 1;
	} else {
		const char *shown = res_b;
		if (wl == sort_argv)
			shown = "(sorted output identical on both allocators)\n";
		printf("output: %s", shown);
		printf("\n%-18s %10s %14s\n", "allocator", "time (s)", "peak RSS (MiB)");
		printf("%-18s %10.2f %14.1f\n", "glibc malloc", a.seconds, a.max_rss_kib / 1024.0);
		printf("%-18s %10.2f %14.1f\n\n", "memcg (memcg run)", b.seconds,
		       b.max_rss_kib / 1024.0);
		if (rep && strstr(rep, "slabinfo - version"))
			print_slabinfo(rep);
		else {
			fprintf(stderr, "memcg demo: the program left no slabinfo report\n");
			rc = 1;
		}
	}
	free(res_a);
	free(res_b);
	free(rep);
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	if (rc == 0)
		bench_summary();
	return rc;
}
