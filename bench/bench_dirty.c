/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_dirty.c - `memcg bench dirty`: seed 004 (per-group dirty
 * limits) measured on memcg's page cache (memcg/file.h), against the
 * kernel's page cache and O_DIRECT in the same run.
 *
 * Cases (--case NAME runs one):
 *   overhead   - the seed's table: a mixed read/write 4 KiB workload over a
 *                working set in the cache (every write round starts with the
 *                pages clean: most writes dirty a page, the path the
 *                accounting is on), root group and child group, the option
 *                dirty_accounting on vs off, rounds interleaved in this
 *                process; target on/off <= 1.005 (seed: 0.14 %).
 *   throughput - 1 MiB sequential writes + fsync of 1 GiB (memcg vs
 *                pwrite(2) + fsync, and O_DIRECT): >= 0.9x the kernel's;
 *                random 4 KiB rewrites of cached pages: >= 5x O_DIRECT;
 *                random 4 KiB reads of cached pages: >= 2x pread(2) of a file
 *                the kernel has cached.
 *   bound      - writers in a group with memory.dirty_bytes L, its dirty +
 *                writeback sampled every ms: never above L * 33/32 + 32
 *                pages per writer; then writeback stalled (every backing
 *                write fails, injected): the writers block and nothing grows.
 *   fairness   - two groups with equal limits, a writer each: bytes written
 *                per 1 s window within 0.9-1.1 of each other (after a 2 s
 *                warm-up while the rates converge).
 *   pause      - the pauses of those writers (p50/p99/max each): p99 <=
 *                200 ms; a light writer below its freerun never pauses.
 * --plot FILE.png draws the fairness run (gnuplot): each group's dirty
 * pages against its setpoint, freerun and limit, and every pause.
 *
 * Clocks: wall time (bench_now_ns) for everything judged; the overhead
 * case prints thread CPU time beside it.  --smoke: small sizes, seconds.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/options.h"
#include "harness.h"
#include "memcg/debug.h"
#include "memcg/file.h"
#include "memcg/group.h"
#include "memcg/memcg.h"
#include "pagecache/dirty.h"
#include "pagecache/pcg.h"

extern char **environ;

#define KIB 1024L
#define MIB (1024L * 1024L)
#define PAGE 4096L
#define MAX_WRITERS 8
#define MAX_ROUNDS 64

enum { C_OVERHEAD, C_THROUGHPUT, C_BOUND, C_FAIRNESS, C_PAUSE, NR_CASES };
static const char *const case_names[] = {"overhead", "throughput", "bound",
                                         "fairness", "pause",      NULL};

static struct {
	bool smoke, json;
	int runs, threads;
	char dir[2048];
	const char *plot;
	long device_mbs; /* the fairness case's emulated device (MB/s; 0: the real one) */
	int misses;
} cfg = {.device_mbs = 200};

/* ------------------------------------------------------------ output */

/* One result: a table line, or a JSON row with its target and verdict. */
static void report(const char *bench, const char *variant, double value, const char *unit, char cmp,
                   double target, const char *note)
{
	const char *verdict = "-";
	if (cmp) {
		enum bench_verdict v =
		        cmp == '<' ? bench_judge_le(value, target) : bench_judge_ge(value, target);
		verdict = bench_verdict_name(v);
		cfg.misses += v == BENCH_MISS;
	}
	if (cfg.json) {
		char extra[256] = "";
		if (cmp)
			snprintf(extra, sizeof(extra), "\"target\":\"%s %g\",\"pass\":\"%s\"",
			         cmp == '<' ? "<=" : ">=", target, verdict);
		bench_emit_json(bench, variant, extra[0] ? extra : NULL, value, unit);
		return;
	}
	char tgt[32] = "";
	if (cmp)
		snprintf(tgt, sizeof(tgt), "%s %g", cmp == '<' ? "<=" : ">=", target);
	printf("  %-10s %-30s %12.4g %-8s %-12s %-5s %s\n", bench, variant, value, unit, tgt,
	       verdict, note ? note : "");
}

static char *path_in(const char *name)
{
	static char p[4][PATH_MAX];
	static int k;
	char *b = p[k++ % 4];
	snprintf(b, PATH_MAX, "%s/%s", cfg.dir, name);
	return b;
}

static void *xmalloc_aligned(size_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, 4096, n)) {
		fprintf(stderr, "memcg bench dirty: out of memory\n");
		exit(1);
	}
	memset(p, 0x5a, n);
	return p;
}

/* @n bytes (a multiple of 2 MiB) in 2 MiB pages where the OS gives them:
 * the copy floor's source, mapped as the kernel's direct map and memcg's
 * page data (pagecache/pgdata.h) are, so it is the floor of both. */
static char *xmalloc_huge(size_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, 2 * MIB, n)) {
		fprintf(stderr, "memcg bench dirty: out of memory\n");
		exit(1);
	}
	madvise(p, n, MADV_HUGEPAGE); /* (a hint: 4 KiB pages without THP) */
	memset(p, 0x5a, n);
	return p;
}

static unsigned rnd(unsigned *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

static double secs(uint64_t ns) { return (double)ns / 1e9; }

static mcg_file_t *mopen(const char *name, int flags, mcg_group_t *g)
{
	mcg_file_t *f;
	mcg_file_opts_t o = {g, 0};
	int err = mcg_file_open(path_in(name), flags, 0644, &o, &f);
	if (err) {
		fprintf(stderr, "memcg bench dirty: open %s: %s\n", name, strerror(-err));
		exit(1);
	}
	return f;
}

/* Write @size bytes of @f (memcg) and fsync: a cached, clean working set. */
static void mfill(mcg_file_t *f, long size, char *buf)
{
	for (long at = 0; at < size; at += MIB)
		mcg_file_pwrite(f, buf, (size_t)MCG_MIN(MIB, size - at), at);
	mcg_file_fsync(f);
}

static int kopen(const char *name, int flags)
{
	int fd = open(path_in(name), flags | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "memcg bench dirty: open %s: %s\n", name, strerror(errno));
		exit(1);
	}
	return fd;
}

static void kfill(int fd, long size, char *buf)
{
	for (long at = 0; at < size; at += MIB)
		if (pwrite(fd, buf, (size_t)MCG_MIN(MIB, size - at), at) < 0)
			exit(1);
	fsync(fd);
}

static mcg_group_t *mkgroup(const char *name)
{
	mcg_group_t *g;
	if (mcg_group_create(NULL, name, &g)) {
		fprintf(stderr, "memcg bench dirty: cannot create group %s\n", name);
		exit(1);
	}
	return g;
}

static void rmgroup(mcg_group_t *g)
{
	mcg_group_remove(g);
	mcg_group_put(g);
}

/* ------------------------------------------------------------ overhead */

enum { O_ROOT_ON, O_ROOT_OFF, O_CHILD_ON, O_CHILD_OFF, NR_O };

static void case_overhead(void)
{
	long ws = cfg.smoke ? 4 * MIB : 64 * MIB, pages = ws / PAGE;
	long ops = cfg.smoke ? 4096 : 4 * pages, slice = cfg.smoke ? 1024 : 4096;
	int rounds = MCG_MIN(cfg.smoke ? 1 : 4 * cfg.runs + 1, MAX_ROUNDS);
	mcg_group_t *child = mkgroup("bench-dirty-child");
	char *buf = xmalloc_aligned(MIB);
	/* A file per group, twice the working set: "on" works on one half,
	 * "off" on the other (swapped each round), both with the same history. */
	mcg_file_t *f[2] = {mopen("ov-root", O_RDWR | O_CREAT | O_TRUNC, NULL),
	                    mopen("ov-child", O_RDWR | O_CREAT | O_TRUNC, child)};
	mfill(f[0], 2 * ws, buf);
	mfill(f[1], 2 * ws, buf);
	bench_progress("overhead: %ld ops (4 KiB, half writes) over %ld MiB in the cache per "
	               "variant, in slices of %ld taking turns, %d rounds",
	               ops, ws / MIB, slice, rounds);
	/* Wall per round (for ns/op), and per slice: a variant's slice is judged
	 * against its twin's of the same cycle, a few milliseconds apart, so
	 * that a preemption spoils one pair of 16 per round, not the round. */
	enum { MAX_CYCLES = 64 };
	int cycles = (int)MCG_MIN((ops + slice - 1) / slice, MAX_CYCLES), nslices = 0;
	static double wall[NR_O][MAX_ROUNDS];
	static double swall[NR_O][MAX_ROUNDS * MAX_CYCLES], scpu[NR_O][MAX_ROUNDS * MAX_CYCLES];
	unsigned seed[NR_O], order_seed = 777;
	int last = -1;
	/* Round -1 warms up: every page active and every path hot.  In a round
	 * the variants take turns slice by slice, so that the machine's drifts
	 * fall on all of them alike. */
	for (int r = -1; r < rounds; r++) {
		mcg_file_fsync(f[0]); /* every page clean: writes dirty pages */
		mcg_file_fsync(f[1]);
		for (int v = 0; v < NR_O; v++) {
			seed[v] = 12345u + (unsigned)(r + 1);
			if (r >= 0)
				wall[v][r] = 0;
		}
		for (long done = 0; done < ops && done / slice < cycles; done += slice) {
			/* A new order each cycle, drawn at random, never starting
			 * with the variant that ended the last: what a slice finds
			 * warm (its twin's index nodes on the same file, its own
			 * pages after itself) falls on every variant alike. */
			int order[NR_O] = {0, 1, 2, 3};
			do {
				for (int k = NR_O - 1; k > 0; k--) {
					int j = (int)(rnd(&order_seed) % (unsigned)(k + 1)),
					    t = order[k];
					order[k] = order[j];
					order[j] = t;
				}
			} while (order[0] == last);
			last = order[NR_O - 1];
			for (int k = 0; k < NR_O; k++) {
				int v = order[k];
				mcg_file_t *file = f[v >= O_CHILD_ON];
				bool on = v == O_ROOT_ON || v == O_CHILD_ON;
				long half = (on + r + 2) % 2;
				mcg_option_set("dirty_accounting", on);
				uint64_t c0 = bench_thread_cpu_ns(), t0 = bench_now_ns();
				for (long i = 0; i < slice; i++) {
					unsigned x = rnd(&seed[v]);
					off_t at = (off_t)(half * pages +
					                   (long)(x % (unsigned)pages)) *
					           PAGE;
					if (x & (1u << 31))
						mcg_file_pwrite(file, buf, PAGE, at);
					else
						mcg_file_pread(file, buf, PAGE, at);
				}
				if (r >= 0) {
					swall[v][nslices] = (double)(bench_now_ns() - t0);
					scpu[v][nslices] = (double)(bench_thread_cpu_ns() - c0);
					wall[v][r] += swall[v][nslices];
				}
			}
			nslices += r >= 0;
		}
	}
	mcg_option_set("dirty_accounting", 1);
	for (int i = 0; i < 2; i++) {
		int on = i ? O_CHILD_ON : O_ROOT_ON, off = on + 1;
		double ratio = bench_ratio_median(swall[on], swall[off], nslices);
		double cratio = bench_ratio_median(scpu[on], scpu[off], nslices);
		char note[160];
		snprintf(note, sizeof(note), "ns/op on %.0f off %.0f; CPU time on/off %.4f",
		         bench_median(wall[on], rounds) / (double)ops,
		         bench_median(wall[off], rounds) / (double)ops, cratio);
		report("overhead", i ? "child: accounting on/off" : "root: accounting on/off",
		       ratio, "ratio", '<', 1.005, note);
	}
	for (int i = 0; i < 2; i++)
		mcg_file_close(f[i]);
	unlink(path_in("ov-root"));
	unlink(path_in("ov-child"));
	mcg_file_drop_caches();
	rmgroup(child);
	free(buf);
}

/* ------------------------------------------------------------ throughput */

/* memcg (its options as set), the kernel's page cache, O_DIRECT; memcg
 * with write-behind off (dirty_write_behind 0); memcg with neither
 * write-behind nor writes in flight (writeback_io_depth 1). */
enum { T_MCG, T_KERNEL, T_DIRECT, T_MCG_NOWB, T_MCG1, NR_T };

/* One sequential round of a variant: wall time of the writes and of the
 * fsync, the writing thread's CPU time, and its page faults. */
struct seq_round {
	double write_s, sync_s, cpu_s;
	long faults;
};

static long thread_minflt(void)
{
	struct rusage u;
	getrusage(RUSAGE_THREAD, &u);
	return u.ru_minflt;
}

/* Sequential 1 MiB writes of @size bytes and an fsync, by @v. */
static struct seq_round seq_write(int v, long size, char *buf, long depth, long behind)
{
	const char *name = "seq";
	unlink(path_in(name));
	struct seq_round out;
	uint64_t t0, t1, t2, c0, c1;
	long f0, f1;
	if (v == T_MCG || v == T_MCG_NOWB || v == T_MCG1) {
		mcg_option_set("writeback_io_depth", v == T_MCG1 ? 1 : depth);
		mcg_option_set("dirty_write_behind", v == T_MCG ? behind : 0);
		mcg_file_t *f = mopen(name, O_RDWR | O_CREAT | O_TRUNC, NULL);
		f0 = thread_minflt();
		c0 = bench_thread_cpu_ns();
		t0 = bench_now_ns();
		for (long at = 0; at < size; at += MIB)
			mcg_file_pwrite(f, buf, MIB, at);
		t1 = bench_now_ns();
		c1 = bench_thread_cpu_ns();
		f1 = thread_minflt();
		if (mcg_file_fsync(f))
			fprintf(stderr, "memcg bench dirty: fsync failed\n");
		t2 = bench_now_ns();
		mcg_file_close(f);
		mcg_file_drop_caches();
		mcg_option_set("writeback_io_depth", depth);
		mcg_option_set("dirty_write_behind", behind);
	} else {
		int fd = kopen(name, O_RDWR | O_CREAT | O_TRUNC | (v == T_DIRECT ? O_DIRECT : 0));
		f0 = thread_minflt();
		c0 = bench_thread_cpu_ns();
		t0 = bench_now_ns();
		for (long at = 0; at < size; at += MIB)
			if (pwrite(fd, buf, MIB, at) != MIB)
				fprintf(stderr, "memcg bench dirty: write failed: %s\n",
				        strerror(errno));
		t1 = bench_now_ns();
		c1 = bench_thread_cpu_ns();
		f1 = thread_minflt();
		fsync(fd);
		t2 = bench_now_ns();
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
	unlink(path_in(name));
	out.write_s = secs(t1 - t0);
	out.sync_s = secs(t2 - t1);
	out.cpu_s = secs(c1 - c0);
	out.faults = f1 - f0;
	return out;
}

/* @n random 4 KiB ops on @pages pages: ns per op.  @write, @kind T_*. */
static double random_ops(int kind, bool write, void *f, int fd, long pages, long n, char *buf,
                         unsigned seed)
{
	uint64_t t0 = bench_now_ns();
	for (long i = 0; i < n; i++) {
		off_t at = (off_t)(rnd(&seed) % (unsigned)pages) * PAGE;
		if (kind == T_MCG) {
			if (write)
				mcg_file_pwrite(f, buf, PAGE, at);
			else
				mcg_file_pread(f, buf, PAGE, at);
		} else if (write ? pwrite(fd, buf, PAGE, at) != PAGE
		                 : pread(fd, buf, PAGE, at) != PAGE) {
			fprintf(stderr, "memcg bench dirty: random I/O failed: %s\n",
			        strerror(errno));
			exit(1);
		}
	}
	return (double)(bench_now_ns() - t0) / (double)n;
}

/* The copy floor: @n copies of 4 KiB from random pages of @mem (@pages
 * pages, mapped in 2 MiB pages) into @buf - what any read of cached data
 * pays at least. */
static double random_copies(const char *mem, long pages, long n, char *buf, unsigned seed)
{
	uint64_t t0 = bench_now_ns();
	for (long i = 0; i < n; i++) {
		memcpy(buf, mem + (long)(rnd(&seed) % (unsigned)pages) * PAGE, PAGE);
		__asm__ volatile("" : : "r"(buf) : "memory"); /* (the copy is used) */
	}
	return (double)(bench_now_ns() - t0) / (double)n;
}

static double median_of(const struct seq_round *r, int rounds, size_t field)
{
	double v[MAX_ROUNDS];
	for (int i = 0; i < rounds; i++)
		v[i] = *(const double *)((const char *)&r[i] + field);
	return bench_median(v, rounds);
}

static void case_seq(char *buf)
{
	/* 1 GiB a variant (the disk here takes it; smoke: 16 MiB). */
	long size = cfg.smoke ? 16 * MIB : 1024 * MIB;
	int rounds = cfg.smoke ? 1 : MCG_MIN(cfg.runs, 3);
	long depth = mcg_option(MCG_OPT_WRITEBACK_IO_DEPTH);
	long behind = mcg_option(MCG_OPT_DIRTY_WRITE_BEHIND);
	static struct seq_round sr[NR_T][MAX_ROUNDS];
	static double sec[NR_T][MAX_ROUNDS];
	bench_progress("throughput: sequential 1 MiB writes + fsync of %ld MiB, %d rounds; memcg "
	               "at writeback_io_depth %ld, dirty_write_behind %ld, and without each",
	               size / MIB, rounds, depth, behind);
	/* Round -1 warms up (each variant's paths and files once).  The
	 * variants take turns, each first in one round. */
	for (int r = cfg.smoke ? 0 : -1; r < rounds; r++)
		for (int k = 0; k < NR_T; k++) {
			int v = (k + r + NR_T) % NR_T;
			struct seq_round x = seq_write(v, size, buf, depth, behind);
			if (r >= 0) {
				sr[v][r] = x;
				sec[v][r] = x.write_s + x.sync_s;
			}
		}
	double mbs[NR_T];
	for (int v = 0; v < NR_T; v++)
		mbs[v] = (double)size / MIB / bench_median(sec[v], rounds);
	size_t wf = offsetof(struct seq_round, write_s), sf = offsetof(struct seq_round, sync_s);
	char note[256];
	snprintf(note, sizeof(note),
	         "MB/s: memcg %.0f, kernel %.0f, O_DIRECT %.0f; s write + fsync: memcg %.2f + "
	         "%.2f, kernel %.2f + %.2f",
	         mbs[T_MCG], mbs[T_KERNEL], mbs[T_DIRECT], median_of(sr[T_MCG], rounds, wf),
	         median_of(sr[T_MCG], rounds, sf), median_of(sr[T_KERNEL], rounds, wf),
	         median_of(sr[T_KERNEL], rounds, sf));
	report("throughput", "seq write+fsync memcg/kernel",
	       bench_ratio_median(sec[T_KERNEL], sec[T_MCG], rounds), "ratio", '>', 0.9, note);
	report("throughput", "seq write+fsync memcg/O_DIRECT",
	       bench_ratio_median(sec[T_DIRECT], sec[T_MCG], rounds), "ratio", 0, 0, NULL);
	/* What the parts say: the fsync alone (the writeback's depth), the
	 * writes' CPU (copy, page faults, bookkeeping) beside the kernel's. */
	double ks[MAX_ROUNDS], ms[MAX_ROUNDS], m1s[MAX_ROUNDS], kc[MAX_ROUNDS], mc[MAX_ROUNDS];
	double flt[MAX_ROUNDS];
	for (int r = 0; r < rounds; r++) {
		ks[r] = sr[T_KERNEL][r].sync_s;
		ms[r] = sr[T_MCG_NOWB][r].sync_s;
		m1s[r] = sr[T_MCG1][r].sync_s;
		kc[r] = sr[T_KERNEL][r].cpu_s;
		mc[r] = sr[T_MCG][r].cpu_s;
		flt[r] = (double)sr[T_MCG][r].faults;
	}
	snprintf(note, sizeof(note),
	         "write+fsync MB/s %.0f; fsync s: %.2f at depth %ld, %.2f at depth 1, kernel %.2f",
	         mbs[T_MCG_NOWB], bench_median(ms, rounds), depth, bench_median(m1s, rounds),
	         bench_median(ks, rounds));
	report("throughput", "seq no write-behind/kernel",
	       bench_ratio_median(sec[T_KERNEL], sec[T_MCG_NOWB], rounds), "ratio", 0, 0, note);
	snprintf(note, sizeof(note), "write+fsync MB/s %.0f (no write-behind either)", mbs[T_MCG1]);
	report("throughput", "seq depth 1/kernel",
	       bench_ratio_median(sec[T_KERNEL], sec[T_MCG1], rounds), "ratio", 0, 0, note);
	double faults = bench_median(flt, rounds);
	snprintf(note, sizeof(note),
	         "CPU s: memcg %.2f, kernel %.2f; memcg's page faults %.0f (%.0f%% of its pages)",
	         bench_median(mc, rounds), bench_median(kc, rounds), faults,
	         100.0 * faults / ((double)size / PAGE));
	report("throughput", "seq writes' CPU kernel/memcg", bench_ratio_median(kc, mc, rounds),
	       "ratio", 0, 0, note);
}

static void case_throughput(void)
{
	char *buf = xmalloc_aligned(MIB);
	case_seq(buf);

	/* Random 4 KiB rewrites and reads of a cached working set of 64 MiB (a
	 * realistic cache: beyond the CPU's caches, so a read copies from
	 * memory), and reads of 4 MiB (inside them), beside the copy floor: a
	 * memcpy of 4 KiB from a random page of 64 MiB in 2 MiB pages (as the
	 * kernel's direct map and memcg's page data). */
	long ws = cfg.smoke ? 4 * MIB : 64 * MIB, pages = ws / PAGE;
	long small = 4 * MIB, spages = small / PAGE;
	long n = cfg.smoke ? 20000 : 200000, nd = cfg.smoke ? 500 : 4000;
	int rounds = cfg.smoke ? 1 : MCG_MIN(cfg.runs, MAX_ROUNDS);
	mcg_file_t *mf = mopen("rnd-mcg", O_RDWR | O_CREAT | O_TRUNC, NULL);
	mfill(mf, ws, buf);
	int kfd = kopen("rnd-kernel", O_RDWR | O_CREAT | O_TRUNC);
	kfill(kfd, ws, buf);
	int dfd = kopen("rnd-direct", O_RDWR | O_CREAT | O_TRUNC | O_DIRECT);
	kfill(dfd, ws, buf);
	mcg_file_t *msf = mopen("rnd-mcg-small", O_RDWR | O_CREAT | O_TRUNC, NULL);
	mfill(msf, small, buf);
	int ksfd = kopen("rnd-kernel-small", O_RDWR | O_CREAT | O_TRUNC);
	kfill(ksfd, small, buf);
	char *mem = xmalloc_huge((size_t)ws);
	static double w[NR_T][MAX_ROUNDS], rd[2][MAX_ROUNDS], rds[2][MAX_ROUNDS], cp[MAX_ROUNDS];
	bench_progress("throughput: random 4 KiB rewrites and reads over %ld MiB, reads over %ld "
	               "MiB, %d rounds",
	               ws / MIB, small / MIB, rounds);
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < 3; k++) {
			int v = (k + r) % 3; /* T_MCG, T_KERNEL, T_DIRECT */
			w[v][r] = random_ops(v, true, mf, v == T_DIRECT ? dfd : kfd, pages,
			                     v == T_DIRECT ? nd : n, buf, 777u + (unsigned)r);
		}
		for (int k = 0; k < 5; k++) {
			int v = (k + r) % 5; /* 64 MiB: memcg, kernel, copy; 4 MiB: memcg, kernel */
			unsigned sd = 999u + (unsigned)r;
			if (v < 2)
				rd[v][r] = random_ops(v, false, mf, kfd, pages, n, buf, sd);
			else if (v == 2)
				cp[r] = random_copies(mem, pages, n, buf, sd);
			else
				rds[v - 3][r] =
				        random_ops(v - 3, false, msf, ksfd, spages, n, buf, sd);
		}
	}
	char note[256];
	snprintf(note, sizeof(note), "ns/op: memcg %.0f, O_DIRECT %.0f, kernel buffered %.0f",
	         bench_median(w[T_MCG], rounds), bench_median(w[T_DIRECT], rounds),
	         bench_median(w[T_KERNEL], rounds));
	report("throughput", "rand 4K rewrite memcg/O_DIRECT",
	       bench_ratio_median(w[T_DIRECT], w[T_MCG], rounds), "ratio", '>', 5.0, note);
	report("throughput", "rand 4K rewrite memcg/kernel",
	       bench_ratio_median(w[T_KERNEL], w[T_MCG], rounds), "ratio", 0, 0, NULL);
	double mr = bench_median(rd[T_MCG], rounds), kr = bench_median(rd[T_KERNEL], rounds);
	double floor = bench_median(cp, rounds);
	snprintf(note, sizeof(note), "ns/op: memcg %.0f, kernel %.0f (%ld MiB)", mr, kr, ws / MIB);
	report("throughput", "rand 4K cached read memcg/kernel",
	       bench_ratio_median(rd[T_KERNEL], rd[T_MCG], rounds), "ratio", '>', 2.0, note);
	snprintf(note, sizeof(note), "2x needs memcg at kernel/2 = %.0f ns; memcg = copy + %.0f ns",
	         kr / 2, mr - floor);
	report("throughput", "rand 4K copy floor (memcpy)", floor, "ns", 0, 0, note);
	report("throughput", "rand 4K copy floor/kernel read",
	       bench_ratio_median(cp, rd[T_KERNEL], rounds), "ratio", 0, 0,
	       "above 0.5: 2x is out of reach by the copy alone");
	snprintf(note, sizeof(note), "ns/op: memcg %.0f, kernel %.0f (in the CPU's caches)",
	         bench_median(rds[T_MCG], rounds), bench_median(rds[T_KERNEL], rounds));
	report("throughput", "rand 4K read 4 MiB memcg/kernel",
	       bench_ratio_median(rds[T_KERNEL], rds[T_MCG], rounds), "ratio", 0, 0, note);
	mcg_file_close(mf);
	mcg_file_close(msf);
	mcg_file_sync_all();
	mcg_file_drop_caches();
	close(kfd);
	close(dfd);
	close(ksfd);
	unlink(path_in("rnd-mcg"));
	unlink(path_in("rnd-kernel"));
	unlink(path_in("rnd-direct"));
	unlink(path_in("rnd-mcg-small"));
	unlink(path_in("rnd-kernel-small"));
	free(mem);
	free(buf);
}

/* ------------------------------------------------------------ writers */

/* A writer thread: sequential 64 KiB writes over a region, wrapping. */
struct writer {
	int id;
	mcg_file_t *f;
	long region, chunk, gap_us;
	_Atomic long bytes;
	_Atomic int stop;
	pthread_t tid;
	/* pauses (ms) and when (s since the phase began), from the trace */
	double *pause, *pause_t;
	_Atomic int npause;
	int max_pause;
};

static mcg_tls struct writer *this_writer;
static uint64_t phase_t0;

static void trace(const struct mcg_dirty_trace *t, void *arg)
{
	(void)arg;
	struct writer *w = this_writer;
	if (!w || t->pause_ms <= 0)
		return;
	int i = atomic_fetch_add(&w->npause, 1);
	if (i < w->max_pause) {
		w->pause[i] = (double)t->pause_ms;
		w->pause_t[i] = secs(bench_now_ns() - phase_t0);
	}
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	this_writer = w;
	char *buf = xmalloc_aligned((size_t)w->chunk);
	long at = 0;
	while (!atomic_load(&w->stop)) {
		ssize_t n = mcg_file_pwrite(w->f, buf, (size_t)w->chunk, at);
		if (n > 0)
			atomic_fetch_add(&w->bytes, n);
		at = (at + w->chunk) % w->region;
		if (w->gap_us)
			usleep((useconds_t)w->gap_us);
	}
	free(buf);
	return NULL;
}

static void writer_start(struct writer *w, int id, mcg_file_t *f, long region, long chunk,
                         long gap_us)
{
	memset(w, 0, sizeof(*w));
	w->id = id;
	w->f = f;
	w->region = region;
	w->chunk = chunk;
	w->gap_us = gap_us;
	w->max_pause = 1 << 16;
	w->pause = calloc((size_t)w->max_pause, sizeof(double));
	w->pause_t = calloc((size_t)w->max_pause, sizeof(double));
	bench_start_thread(&w->tid, writer_main, w);
}

static void writer_stop(struct writer *w)
{
	atomic_store(&w->stop, 1);
	pthread_join(w->tid, NULL);
}

static int writer_npauses(struct writer *w)
{
	return MCG_MIN(atomic_load(&w->npause), w->max_pause);
}

static void writer_free(struct writer *w)
{
	free(w->pause);
	free(w->pause_t);
}

static long group_dirty(mcg_group_t *g)
{
	struct mcg_pcg *p = mcg_pcg_peek(g);
	return p ? mcg_pcg_read(p, MCG_PC_DIRTY_WB) : 0; /* one counter: no page counted twice */
}

/* Sleep until @t0 + @ms. */
static void sleep_until(uint64_t t0, double ms)
{
	uint64_t until = t0 + (uint64_t)(ms * 1e6), now = bench_now_ns();
	if (until > now)
		usleep((useconds_t)((until - now) / 1000));
}

/* The pause figures of writers @w[0, @n) under @label; p99 judged. */
static void report_pauses(const char *label, struct writer *w, int n)
{
	for (int i = 0; i < n; i++) {
		int np = writer_npauses(&w[i]);
		char variant[64], note[64];
		snprintf(note, sizeof(note), "%d pauses", np);
		snprintf(variant, sizeof(variant), "%s writer %d p50", label, i);
		report("pause", variant, bench_percentile(w[i].pause, np, 50), "ms", 0, 0, note);
		snprintf(variant, sizeof(variant), "%s writer %d p99", label, i);
		report("pause", variant, bench_percentile(w[i].pause, np, 99), "ms", '<', 200,
		       NULL);
		snprintf(variant, sizeof(variant), "%s writer %d max", label, i);
		report("pause", variant, bench_percentile(w[i].pause, np, 100), "ms", 0, 0, NULL);
	}
}

/* ------------------------------------------------------------ bound */

static void case_bound(bool with_pauses)
{
	int nw = cfg.threads > 0 ? MCG_MIN(cfg.threads, MAX_WRITERS) : 2;
	long limit = cfg.smoke ? 2 * MIB : 16 * MIB;
	double run_ms = cfg.smoke ? 1000 : 6000, stall_ms = cfg.smoke ? 600 : 2000;
	mcg_group_t *g = mkgroup("bench-dirty-bound"), *light = mkgroup("bench-dirty-light");
	char lim[32];
	snprintf(lim, sizeof(lim), "%ld", limit);
	mcg_group_write(g, "memory.dirty_bytes", lim);
	mcg_group_write(light, "memory.dirty_bytes", "256M");
	long bound_pages = limit / PAGE * 33 / 32 + 32 * nw;
	bench_progress("bound: %d writers, memory.dirty_bytes %ld MiB, %.0f s, then %.0f s stalled",
	               nw, limit / MIB, run_ms / 1000, stall_ms / 1000);
	struct writer w[MAX_WRITERS + 1];
	mcg_file_t *f[MAX_WRITERS + 1];
	phase_t0 = bench_now_ns();
	mcg_dirty_set_trace(trace, NULL);
	for (int i = 0; i <= nw; i++) {
		char name[32];
		snprintf(name, sizeof(name), "bound%d", i);
		f[i] = mopen(name, O_RDWR | O_CREAT | O_TRUNC, i < nw ? g : light);
		/* The last: the light writer, 256 KiB every 50 ms, far below freerun. */
		writer_start(&w[i], i, f[i], (cfg.smoke ? 8 : 64) * MIB,
		             i < nw ? 64 * KIB : 256 * KIB, i < nw ? 0 : 50000);
	}
	/* Sample every millisecond. */
	long most = 0, most_stall = 0, bytes_mid = 0, bytes_end = 0;
	uint64_t t0 = bench_now_ns();
	bool stalled = false;
	for (long tick = 1;; tick++) {
		sleep_until(t0, (double)tick);
		double ms = (double)(bench_now_ns() - t0) / 1e6;
		long d = group_dirty(g);
		if (!stalled) {
			most = MCG_MAX(most, d);
			if (ms >= run_ms) {
				stalled = true; /* every backing write fails from here */
				mcg_fault_inject_io(1, 1, EIO, MCG_FAULT_IO_WRITE);
			}
		} else {
			most_stall = MCG_MAX(most_stall, d);
			long b = 0;
			for (int i = 0; i < nw; i++)
				b += atomic_load(&w[i].bytes);
			if (ms < run_ms + stall_ms / 2)
				bytes_mid = b; /* the writers reach the limit in the first half */
			bytes_end = b;
			if (ms >= run_ms + stall_ms)
				break;
		}
	}
	mcg_fault_inject_io(0, 0, 0, 0);
	usleep(cfg.smoke ? 100000 : 500000); /* writeback resumes, writers go on */
	for (int i = 0; i <= nw; i++)
		writer_stop(&w[i]);
	mcg_dirty_set_trace(NULL, NULL);
	int errs = 0, clean = 0;
	for (int i = 0; i < nw; i++) {
		errs += mcg_file_fsync(f[i]) == -EIO; /* the stall's errors, once */
		clean += mcg_file_fsync(f[i]) == 0;
	}
	char note[160];
	snprintf(note, sizeof(note),
	         "max %ld of %ld pages (limit %ld pages); fsync after: %d EIO, %d clean", most,
	         bound_pages, limit / PAGE, errs, clean);
	report("bound", "dirty+writeback max/bound", (double)most / (double)bound_pages, "ratio",
	       '<', 1.0, note);
	snprintf(note, sizeof(note), "max %ld of %ld pages while every write failed", most_stall,
	         bound_pages);
	report("bound", "stalled: max/bound", (double)most_stall / (double)bound_pages, "ratio",
	       '<', 1.0, note);
	report("bound", "stalled: written, 2nd half", (double)(bytes_end - bytes_mid) / KIB, "KiB",
	       '<', (double)(32 * PAGE * nw) / KIB, "writers blocked while writeback failed");
	if (with_pauses) {
		report_pauses("bound", w, nw);
		report("pause", "light writer: pauses", writer_npauses(&w[nw]), "count", '<', 0,
		       "256 KiB / 50 ms, below freerun");
	}
	for (int i = 0; i <= nw; i++) {
		mcg_file_close(f[i]);
		writer_free(&w[i]);
		char name[32];
		snprintf(name, sizeof(name), "bound%d", i);
		unlink(path_in(name));
	}
	mcg_file_sync_all();
	mcg_file_drop_caches();
	rmgroup(g);
	rmgroup(light);
}

/* ------------------------------------------------------------ fairness */

static int plot(const char *png, const char *dirty_dat, const char *pause_dat, long limit_pages,
                long bg_pages);

static void case_fairness(bool with_pauses)
{
	long limit = cfg.smoke ? 4 * MIB : 16 * MIB;
	double run_s = cfg.smoke ? 2 : 12, warm_s = cfg.smoke ? 0 : 2;
	mcg_group_t *g[2] = {mkgroup("bench-dirty-a"), mkgroup("bench-dirty-b")};
	char lim[32];
	snprintf(lim, sizeof(lim), "%ld", limit);
	for (int i = 0; i < 2; i++)
		mcg_group_write(g[i], "memory.dirty_bytes", lim);
	bench_progress(
	        "fairness: two groups, memory.dirty_bytes %ld MiB each, a writer each, %.0f s, "
	        "device %s",
	        limit / MIB, run_s, cfg.device_mbs ? "emulated" : "real");
	/* This VM's disk writes from the host's memory (O_DIRECT above 1 GB/s):
	 * faster than two writers dirty pages on two CPUs, so the throttle
	 * would have no bandwidth to share and the writers' rates would be the
	 * scheduler's.  A device of --device-mbs (one queue, the I/O fault
	 * point's emulation) makes writeback the bottleneck, as on a disk. */
	if (cfg.device_mbs)
		mcg_fault_io_rate(MCG_FAULT_IO_WRITE, (unsigned long)cfg.device_mbs * 1000000ul);
	FILE *dd = NULL;
	char dirty_dat[PATH_MAX], pause_dat[PATH_MAX];
	snprintf(dirty_dat, sizeof(dirty_dat), "%s", path_in("dirty.dat"));
	snprintf(pause_dat, sizeof(pause_dat), "%s", path_in("pauses.dat"));
	if (cfg.plot)
		dd = fopen(dirty_dat, "w");
	struct writer w[2];
	mcg_file_t *f[2];
	phase_t0 = bench_now_ns();
	mcg_dirty_set_trace(trace, NULL);
	for (int i = 0; i < 2; i++) {
		f[i] = mopen(i ? "fair-b" : "fair-a", O_RDWR | O_CREAT | O_TRUNC, g[i]);
		writer_start(&w[i], i, f[i], (cfg.smoke ? 16 : 256) * MIB, 64 * KIB, 0);
	}
	int nwin = (int)run_s;
	double worst = 1e9, most = 0;
	long last[2] = {0, 0};
	uint64_t t0 = bench_now_ns();
	for (long tick = 1; tick <= (long)(run_s * 1000); tick++) {
		sleep_until(t0, (double)tick);
		if (dd && tick % 5 == 0)
			fprintf(dd, "%.3f %.3f %.3f\n", (double)tick / 1000,
			        (double)group_dirty(g[0]) * PAGE / MIB,
			        (double)group_dirty(g[1]) * PAGE / MIB);
		if (tick % 1000)
			continue;
		long now[2] = {atomic_load(&w[0].bytes), atomic_load(&w[1].bytes)};
		double a = (double)(now[0] - last[0]), b = (double)(now[1] - last[1]);
		last[0] = now[0];
		last[1] = now[1];
		int win = (int)(tick / 1000);
		if (getenv("MCG_BENCH_DIRTY_VERBOSE"))
			fprintf(stderr, "window %d: a %.1f MiB b %.1f MiB\n", win, a / MIB,
			        b / MIB);
		if (win <= warm_s || a <= 0 || b <= 0)
			continue;
		worst = MCG_MIN(worst, MCG_MIN(a / b, b / a));
		most = MCG_MAX(most, MCG_MAX(a / b, b / a));
	}
	for (int i = 0; i < 2; i++)
		writer_stop(&w[i]);
	mcg_dirty_set_trace(NULL, NULL);
	if (dd)
		fclose(dd);
	char note[200];
	snprintf(note, sizeof(note),
	         "%d windows of 1 s after %.0f s; MiB/s: a %.1f, b %.1f; device %s",
	         nwin - (int)warm_s, warm_s, (double)last[0] / MIB / run_s,
	         (double)last[1] / MIB / run_s, cfg.device_mbs ? "emulated" : "this VM's");
	if (worst > 1e8)
		worst = 0; /* a writer wrote nothing in some window */
	report("fairness", "worst window min(a/b, b/a)", worst, "ratio", '>', 0.9, note);
	report("fairness", "worst window max(a/b, b/a)", most, "ratio", '<', 1.1, NULL);
	if (with_pauses)
		report_pauses("fairness", w, 2);
	if (cfg.plot) {
		FILE *pd = fopen(pause_dat, "w");
		for (int i = 0; pd && i < 2; i++) {
			for (int k = 0; k < writer_npauses(&w[i]); k++)
				fprintf(pd, "%.4f %.1f\n", w[i].pause_t[k], w[i].pause[k]);
			fprintf(pd, "\n\n"); /* a gnuplot data block per writer */
		}
		if (pd)
			fclose(pd);
		long lp = limit / PAGE;
		if (plot(cfg.plot, dirty_dat, pause_dat, lp, lp / 2)) {
			fprintf(stderr, "memcg bench dirty: gnuplot failed: no plot\n");
			cfg.misses += 1000; /* exit status 1 below */
		}
		unlink(dirty_dat);
		unlink(pause_dat);
	}
	for (int i = 0; i < 2; i++) {
		mcg_file_close(f[i]);
		writer_free(&w[i]);
		rmgroup(g[i]);
	}
	mcg_fault_io_rate(0, 0);
	mcg_file_sync_all();
	mcg_file_drop_caches();
	unlink(path_in("fair-a"));
	unlink(path_in("fair-b"));
}

/* ------------------------------------------------------------ the plot */

static int plot(const char *png, const char *dirty_dat, const char *pause_dat, long limit_pages,
                long bg_pages)
{
	char script[PATH_MAX];
	snprintf(script, sizeof(script), "%s", path_in("plot.gp"));
	FILE *s = fopen(script, "w");
	if (!s)
		return -1;
	double lim = (double)limit_pages * PAGE / MIB, bg = (double)bg_pages * PAGE / MIB;
	double freerun = (lim + bg) / 2, setpoint = (freerun + lim) / 2;
	fprintf(s,
	        "set terminal png size 1100,900\n"
	        "set output '%s'\n"
	        "set multiplot layout 2,1 title 'memcg bench dirty: two groups, memory.dirty_bytes "
	        "%.0fM each, one writer each' noenhanced\n"
	        "set termoption noenhanced\n"
	        "set xlabel 'time (s)'\nset ylabel 'dirty + writeback (MiB)'\n"
	        "set yrange [0:%g]\nset key outside right\n"
	        "plot '%s' using 1:2 with lines lw 1 title 'group a', "
	        "'' using 1:3 with lines lw 1 title 'group b', "
	        "%g with lines dt 2 lw 2 title 'setpoint', %g with lines dt 3 title 'freerun', "
	        "%g with lines lw 2 title 'limit'\n"
	        "set ylabel 'pause (ms)'\nset yrange [0:*]\n"
	        "plot '%s' index 0 using 1:2 with points pt 7 ps 0.4 title 'writer a', "
	        "'' index 1 using 1:2 with points pt 7 ps 0.4 title 'writer b'\n"
	        "unset multiplot\n",
	        png, lim, lim * 1.25, dirty_dat, setpoint, freerun, lim, pause_dat);
	fclose(s);
	pid_t pid;
	char *argv[] = {"gnuplot", script, NULL};
	int err = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ);
	int status = 1;
	if (!err)
		waitpid(pid, &status, 0);
	unlink(script);
	struct stat st;
	return !err && WIFEXITED(status) && !WEXITSTATUS(status) && !stat(png, &st) &&
	                       st.st_size > 0
	               ? 0
	               : -1;
}

/* ------------------------------------------------------------ main */

int bench_dirty_main(int argc, char **argv)
{
	char *args[64];
	const char *only;
	const char *dir = NULL;
	int nargs = bench_take_case(argc, argv, "dirty", case_names, &only, args);
	if (nargs < 0)
		return 2;
	/* --plot FILE and --dir DIR, then the common options. */
	int k = 0;
	for (int i = 0; i < nargs; i++) {
		if (!strcmp(args[i], "--plot") && i + 1 < nargs)
			cfg.plot = args[++i];
		else if (!strcmp(args[i], "--dir") && i + 1 < nargs)
			dir = args[++i];
		else if (!strcmp(args[i], "--device-mbs") && i + 1 < nargs)
			cfg.device_mbs = atol(args[++i]);
		else
			args[k++] = args[i];
	}
	args[k] = NULL;
	struct bench_opts o;
	if (bench_parse_opts(k, args, &o))
		return 2;
	cfg.smoke = o.smoke;
	cfg.json = o.json;
	cfg.runs = o.runs;
	cfg.threads = o.threads;
	snprintf(cfg.dir, sizeof(cfg.dir), "%s/memcg-bench-dirty.XXXXXX", dir ? dir : ".");
	if (!mkdtemp(cfg.dir)) {
		fprintf(stderr, "memcg bench dirty: mkdtemp %s: %s\n", cfg.dir, strerror(errno));
		return 1;
	}
	mcg_option_set("dirty_accounting", 1);
	if (!cfg.json)
		printf("memcg bench dirty (seed 004): files in %s%s\n"
		       "  %-10s %-30s %12s %-8s %-12s %-5s %s\n",
		       cfg.dir, cfg.smoke ? " (smoke: sizes cut, nothing judged meaningfully)" : "",
		       "bench", "variant", "value", "unit", "target", "", "");
	bool all = !only;
	if (all || !strcmp(only, "overhead"))
		case_overhead();
	if (all || !strcmp(only, "throughput"))
		case_throughput();
	if (all || !strcmp(only, "bound") || !strcmp(only, "pause"))
		case_bound(all || !strcmp(only, "pause"));
	if (all || !strcmp(only, "fairness") || !strcmp(only, "pause"))
		case_fairness(all || !strcmp(only, "pause"));
	mcg_file_drop_caches();
	rmdir(cfg.dir);
	if (!cfg.json)
		printf("%d target(s) missed\n", cfg.misses % 1000);
	return cfg.misses >= 1000 ? 1 : 0;
}
