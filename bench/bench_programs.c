/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_programs.c - `memcg bench programs`: real programs on memcg's
 * malloc shim and on every baseline malloc.
 *
 * Programs (each skipped with a note when not installed):
 *   python  python3 running bench/programs/workload.py: dicts, strings,
 *           JSON, sorting, four threads;
 *   sqlite  the sqlite3 shell on an in-memory database: a generated SQL
 *           file of inserts in transactions, indexes, point queries,
 *           aggregates, a join, an update and a delete;
 *   xz      xz -1, one thread, compressing a generated log;
 *   sort    sort(1) (LC_ALL=C, its default threads) on generated text lines;
 *   gcc     gcc -O2 -c on a generated C file (the driver, cc1 and as);
 *   perl    perl running bench/programs/workload.pl: a log written with
 *           sprintf, parsed with regular expressions, hashes, sort, a
 *           bounded cache;
 *   churn   memcg-churn (bench/programs/churn.c): a cache server filled to
 *           a budget, churned by LRU with mixed sizes and bursts of large
 *           buffers, then idle; its RSS and live bytes every 100 ms.
 *
 * Like with like: every allocator runs each program through the same
 * mechanism - the program exec'd with LD_PRELOAD of memcg's shim or of
 * jemalloc, mimalloc or tcmalloc, or with no LD_PRELOAD for glibc (the
 * caller's own LD_PRELOAD removed), the environment otherwise the same
 * (LC_ALL=C, fixed hash seeds, TMPDIR in the work directory) - on the same
 * inputs, generated once, deterministically, before the first run.  Runs are
 * interleaved: in every round each program runs under every allocator in
 * turn (A B C D E), the order rotated from round to round.  Each run is
 * timed whole, from posix_spawn to the exit the parent sees (wall), with
 * the CPU time (user + system) and the peak RSS of wait4()'s rusage, which
 * counts the descendants a program waited for (gcc's cc1 and as).  Every
 * program's output (a file it writes, or its stdout) must be the same
 * under every allocator as under glibc, and in every round as in the
 * first: a difference is reported as a failure (exit status 1), as is a
 * program that fails.
 *
 * The churn program times its churn alone: it writes a byte to a pipe when
 * the churn ends, and the benchmark goes on with the next run while it
 * idles (no allocation, a statm read every 100 ms), collecting it at the
 * end of the round; so its wall time is spawn to that byte, and the idle
 * phases of one round overlap the other runs.
 *
 * Figures: medians over rounds; a ratio is the median over rounds of each
 * round's figure over the same round's figure of the reference (stats.h).
 * A baseline's ratio is to the best baseline (lowest median); memcg's is
 * the worst over every baseline (bench_worst), which is what is judged.
 *
 * Targets (stats.h verdicts, TIE within 3 %):
 *   time    the geometric mean over programs of memcg's wall ratio <= 1.0,
 *           and no program's > 1.10;
 *   memory  each program's peak RSS ratio <= 1.05;
 *   churn   steady RSS/live (the median of the last quarter of the churn's
 *           samples) <= jemalloc's, round by round;
 *   idle    RSS after 10 s idle (the median of the samples in the last
 *           sixth of the idle phase: 10-12 s) <= 2 MiB + 1.05 x live.
 *
 * --plot FILE.png draws the churn's RSS and live bytes over time for every
 * allocator (the last round) with gnuplot, when it is installed.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "baseline.h"
#include "harness.h"

extern char **environ;

/*
 * The scripts, built into the binary so that an installed memcg runs them
 * too; written into the work directory before the first run.
 */
#define BENCH_INCBIN(sym, file)                                                                    \
	__asm__(".pushsection .rodata\n.globl " #sym "\n.hidden " #sym "\n" #sym ":\n"             \
	        ".incbin \"" MCG_BENCH_PROGRAMS_DIR "/" file "\"\n.byte 0\n.popsection\n");        \
	extern const char sym[] __attribute__((visibility("hidden")))
BENCH_INCBIN(bench_workload_py, "workload.py");
BENCH_INCBIN(bench_workload_pl, "workload.pl");

#define MAX_RUNS 64
#define MAX_VAR BENCH_MAX_VARIANTS
#define MAX_SAMPLES 4096 /* churn samples kept per run: 100 ms apart */
#define PATH_LEN 512

enum prog_id { P_CHURN, P_PYTHON, P_SQLITE, P_XZ, P_SORT, P_GCC, P_PERL, NPROG };
enum metric { M_WALL, M_CPU, M_RSS, M_STEADY, M_IDLE, NMETRIC };
static const char *const metric_names[NMETRIC] = {"wall", "cpu", "peak_rss", "steady_rss_per_live",
                                                  "idle_rss_per_live"};
static const char *const metric_units[NMETRIC] = {"s", "s", "MiB", "ratio", "ratio"};

/* How big each program's work is: the full run, and --smoke's. */
struct sizes {
	int py_records, pl_lines;
	int sql_users, sql_orders, sql_queries;
	long sort_bytes, xz_bytes;
	int gcc_units;
	long churn_budget_kib, churn_ops, churn_idle_ms;
	int timeout_s;
};
static const struct sizes full_sizes = {
        .py_records = 20000,
        .pl_lines = 70000,
        .sql_users = 25000,
        .sql_orders = 100000,
        .sql_queries = 25000,
        .sort_bytes = 40l << 20,
        .xz_bytes = 16l << 20,
        .gcc_units = 80,
        .churn_budget_kib = 64 << 10,
        .churn_ops = 10000000,
        .churn_idle_ms = 12000,
        .timeout_s = 300,
};
static const struct sizes smoke_sizes = {
        .py_records = 300,
        .pl_lines = 1000,
        .sql_users = 300,
        .sql_orders = 1000,
        .sql_queries = 300,
        .sort_bytes = 256l << 10,
        .xz_bytes = 256l << 10,
        .gcc_units = 8,
        .churn_budget_kib = 2048,
        .churn_ops = 20000,
        .churn_idle_ms = 1200,
        .timeout_s = 60,
};

/* One program: how it is found and run. */
struct program {
	const char *name;      /* "python", ... (--case NAME) */
	const char *exe;       /* what is looked up on PATH ("" for memcg-churn) */
	const char *what;      /* for the table's legend */
	char path[PATH_LEN];   /* the executable found, "" if none */
	char *argv[16];        /* argv[0] = path; strings in arg */
	char arg[8][PATH_LEN]; /* argument strings */
	char in[PATH_LEN];     /* stdin ("": /dev/null) */
	char check[PATH_LEN];  /* the output compared across runs ("": stdout) */
	bool on;               /* found and selected */
	bool have_ref;         /* ref_hash: the output of the first round */
	uint64_t ref_hash;
};

/* One churn sample: ms since the program started, phase, RSS and live KiB. */
struct csample {
	float t_ms;
	char phase;
	long rss_kib, live_kib;
};

/* One run's figures. */
struct result {
	double m[NMETRIC];
	bool ok;
	uint64_t hash;   /* of its output (not the churn's) */
	double live_mib; /* churn: live MiB in the idle phase */
};

struct churn_trace {
	int n;
	struct csample s[MAX_SAMPLES];
};

/* A churn run left idling: collected at the end of its round. */
struct pending {
	pid_t pid;
	int pidfd;
	int var;
	uint64_t t0;
};

struct ctx {
	struct bench_opts o;
	const struct sizes *sz;
	const char *only;
	const char *plot;
	struct bench_variant var[MAX_VAR];
	int nvar;
	char **env[MAX_VAR]; /* each variant's environment */
	char dir[PATH_LEN];  /* the work directory */
	struct program prog[NPROG];
	struct result res[NPROG][MAX_VAR][MAX_RUNS];
	struct churn_trace *trace[MAX_VAR]; /* the last round's churn, per variant */
	struct pending pend[MAX_VAR];
	int npend;
	int met, missed, failed;
};

/*
 * pathf - snprintf into a PATH_LEN buffer.  The work directory's name is
 * short and every name under it ours: a path that does not fit is a bug.
 */
static void pathf(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pathf(char *buf, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, PATH_LEN, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= PATH_LEN) {
		fprintf(stderr, "memcg bench programs: path too long: %.60s...\n", buf);
		abort();
	}
}

/* ================================================================ inputs */

static uint64_t gen_state;
static uint64_t gen_rand(void)
{
	gen_state ^= gen_state >> 12; /* xorshift64*: the same inputs every time */
	gen_state ^= gen_state << 25;
	gen_state ^= gen_state >> 27;
	return gen_state * 2685821657736338717ull;
}
static unsigned gen_below(unsigned n) { return (unsigned)((gen_rand() >> 16) % n); }

static const char *const words[] = {
        "alpha",  "bravo",  "charlie", "delta",  "echo",    "foxtrot",  "golf",    "hotel",
        "india",  "juliet", "kilo",    "lima",   "mike",    "november", "oscar",   "papa",
        "quebec", "romeo",  "sierra",  "tango",  "uniform", "victor",   "whiskey", "xray",
        "yankee", "zulu",   "memory",  "cgroup", "slab",    "page",     "reclaim", "shrink",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

static FILE *open_in(const struct ctx *x, const char *name, char *path)
{
	pathf(path, "%s/%s", x->dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "memcg bench programs: cannot write %s: %s\n", path,
		        strerror(errno));
	return f;
}

static int close_in(FILE *f, const char *path)
{
	if (fclose(f) == 0)
		return 0;
	fprintf(stderr, "memcg bench programs: cannot write %s\n", path);
	return -1;
}

/* Text lines for sort: pseudo-words from a vocabulary, and a number. */
static int gen_sort_input(const struct ctx *x, char *path)
{
	static char vocab[4096][12];
	for (int i = 0; i < 4096; i++) {
		int len = 2 + (int)gen_below(9);
		for (int j = 0; j < len; j++)
			vocab[i][j] = (char)('a' + gen_below(26));
		vocab[i][len] = '\0';
	}
	FILE *f = open_in(x, "lines.txt", path);
	if (!f)
		return -1;
	for (long n = 0; n < x->sz->sort_bytes;) {
		int k = 3 + (int)gen_below(10), w;
		for (int i = 0; i < k; i++) {
			w = fprintf(f, "%s ", vocab[gen_below(4096)]);
			n += w;
		}
		n += fprintf(f, "%u\n", gen_below(1000000));
	}
	return close_in(f, path);
}

/* A service log for xz: timestamps, hosts, requests, latencies. */
static int gen_xz_input(const struct ctx *x, char *path)
{
	static const char *const levels[] = {"INFO", "INFO", "INFO", "WARN", "DEBUG", "ERROR"};
	static const char *const methods[] = {"GET", "GET", "POST", "PUT", "DELETE"};
	static const int status[] = {200, 200, 200, 201, 204, 301, 404, 500};
	FILE *f = open_in(x, "service.log", path);
	if (!f)
		return -1;
	unsigned ms = 0;
	for (long n = 0; n < x->sz->xz_bytes;) {
		ms += gen_below(40);
		n += fprintf(f,
		             "2024-06-01T%02u:%02u:%02u.%03uZ host-%02u svc[%u]: level=%s "
		             "method=%s path=/api/v%u/%s/%s/%u status=%d bytes=%u dur_ms=%u "
		             "user=user-%05u trace=%016llx\n",
		             ms / 3600000 % 24, ms / 60000 % 60, ms / 1000 % 60, ms % 1000,
		             gen_below(16), 1000 + gen_below(64), levels[gen_below(6)],
		             methods[gen_below(5)], 1 + gen_below(3), words[gen_below(NWORDS)],
		             words[gen_below(NWORDS)], gen_below(100000), status[gen_below(8)],
		             gen_below(65536), gen_below(2000), gen_below(20000),
		             (unsigned long long)gen_rand());
	}
	return close_in(f, path);
}

/* SQL for the sqlite3 shell: tables, inserts, indexes, queries. */
static int gen_sql_input(const struct ctx *x, char *path)
{
	const struct sizes *s = x->sz;
	FILE *f = open_in(x, "workload.sql", path);
	if (!f)
		return -1;
	fprintf(f, "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT, email TEXT, city TEXT, "
	           "score REAL);\n"
	           "CREATE TABLE orders(id INTEGER PRIMARY KEY, user_id INTEGER, item TEXT, "
	           "qty INTEGER, price REAL, note TEXT);\n");
	for (int i = 1; i <= s->sql_users; i++) {
		if (i % 5000 == 1)
			fprintf(f, "BEGIN;\n");
		fprintf(f,
		        "INSERT INTO users VALUES(%d,'user %s "
		        "%d','u%d@%s.example','%s',%u.%02u);\n",
		        i, words[gen_below(NWORDS)], i, i, words[gen_below(NWORDS)],
		        words[gen_below(12)], gen_below(100), gen_below(100));
		if (i % 5000 == 0 || i == s->sql_users)
			fprintf(f, "COMMIT;\n");
	}
	for (int i = 1; i <= s->sql_orders; i++) {
		if (i % 5000 == 1)
			fprintf(f, "BEGIN;\n");
		fprintf(f, "INSERT INTO orders VALUES(%d,%u,'item-%u',%u,%u.%02u,'", i,
		        1 + gen_below((unsigned)s->sql_users), gen_below(1000), 1 + gen_below(100),
		        1 + gen_below(500), gen_below(100));
		for (int w = 1 + (int)gen_below(8); w > 0; w--)
			fprintf(f, "%s%s", words[gen_below(NWORDS)], w > 1 ? " " : "");
		fprintf(f, "');\n");
		if (i % 5000 == 0 || i == s->sql_orders)
			fprintf(f, "COMMIT;\n");
	}
	fprintf(f, "CREATE INDEX orders_user ON orders(user_id);\n"
	           "CREATE INDEX users_city ON users(city);\n");
	for (int i = 0; i < s->sql_queries; i++) {
		fprintf(f, "SELECT name, score FROM users WHERE id=%u;\n",
		        1 + gen_below((unsigned)s->sql_users));
		if (i % 4 == 0)
			fprintf(f, "SELECT count(*), sum(qty) FROM orders WHERE user_id=%u;\n",
			        1 + gen_below((unsigned)s->sql_users));
	}
	fprintf(f, "SELECT city, count(*), round(avg(score), 3) FROM users GROUP BY city ORDER BY "
	           "city;\n"
	           "SELECT u.city, round(sum(o.qty * o.price), 2) FROM orders o JOIN users u ON "
	           "u.id = o.user_id GROUP BY u.city ORDER BY 2 DESC LIMIT 5;\n"
	           "UPDATE orders SET qty = qty + 1 WHERE id %% 7 = 0;\n"
	           "DELETE FROM orders WHERE qty > 95;\n"
	           "SELECT count(*), sum(qty) FROM orders;\n"
	           "SELECT item, count(*) FROM orders WHERE note LIKE '%%bravo%%' GROUP BY item "
	           "ORDER BY 2 DESC, 1 LIMIT 5;\n");
	return close_in(f, path);
}

/*
 * A C file for gcc: units of a struct, tables, a loop over a switch, string
 * formatting and calls into the unit before (inlining decisions), the
 * constants drawn at random so no two units are alike.
 */
static int gen_c_input(const struct ctx *x, char *path)
{
	FILE *f = open_in(x, "unit.c", path);
	if (!f)
		return -1;
	fprintf(f, "/* generated by memcg bench programs */\n#include <stdio.h>\n#include "
	           "<stdlib.h>\n#include <string.h>\n\nlong api0(int n);\n"
	           "long api0(int n) { return n; }\n");
	for (int u = 1; u <= x->sz->gcc_units; u++) {
		fprintf(f,
		        "\nstruct rec%d {\n\tint id;\n\tlong total;\n\tdouble w[4];\n\tchar "
		        "name[32];\n\tstruct rec%d *next;\n};\n",
		        u, u);
		fprintf(f, "static const int tab%d[32] = {", u);
		for (int i = 0; i < 32; i++)
			fprintf(f, "%s%u", i ? ", " : "", gen_below(100000));
		fprintf(f, "};\nstatic const char *const names%d[8] = {", u);
		for (int i = 0; i < 8; i++)
			fprintf(f, "%s\"%s-%s\"", i ? ", " : "", words[gen_below(NWORDS)],
			        words[gen_below(NWORDS)]);
		fprintf(f, "};\n");
		fprintf(f,
		        "static long step%d(struct rec%d *r, int n)\n{\n\tlong acc = r->total;\n"
		        "\tfor (int i = 0; i < n; i++) {\n\t\tswitch ((i ^ r->id) & 7) {\n"
		        "\t\tcase 0: acc += tab%d[i & 31] * (long)r->w[i & 3]; break;\n"
		        "\t\tcase 1: acc ^= (long)strlen(names%d[i & 7]) << (i & 15); break;\n"
		        "\t\tcase 2: r->w[i & 3] = r->w[(i + 1) & 3] * 0.%u + (double)acc; break;\n"
		        "\t\tcase 3: if (r->next) acc += r->next->total %% %u; break;\n"
		        "\t\tcase 4: acc = acc * %uL + tab%d[(i * %u) & 31]; break;\n"
		        "\t\tcase 5: if (acc > %uL) acc /= %u; else acc += i; break;\n"
		        "\t\tcase 6: r->name[i & 31] = (char)('a' + (acc & 15)); break;\n"
		        "\t\tdefault: acc -= r->id * %d; break;\n\t\t}\n\t}\n"
		        "\tsnprintf(r->name, sizeof(r->name), \"%%s:%%ld\", names%d[acc & 7], "
		        "acc);\n"
		        "\treturn acc + (long)r->w[0];\n}\n",
		        u, u, u, u, 1 + gen_below(9), 1 + gen_below(1000), 3 + gen_below(100), u,
		        1 + gen_below(31), 1000 + gen_below(100000), 2 + gen_below(9),
		        1 + (int)gen_below(50), u);
		fprintf(f,
		        "long api%d(int n);\nlong api%d(int n)\n{\n\tstruct rec%d a = {.id = %u, "
		        ".total = %u}, b = {.id = n, .next = &a};\n"
		        "\tstruct rec%d *heap = calloc((size_t)n + 1, sizeof(*heap));\n"
		        "\tlong sum = 0;\n\tif (!heap)\n\t\treturn -1;\n"
		        "\tfor (int i = 0; i <= n; i++) {\n\t\theap[i].id = i;\n"
		        "\t\theap[i].next = i ? &heap[i - 1] : &b;\n"
		        "\t\tsum += step%d(&heap[i], %u + i);\n\t}\n"
		        "\tsum += step%d(&b, n) + api%d(n / 2);\n\tfree(heap);\n\treturn sum;\n}\n",
		        u, u, u, gen_below(1000), gen_below(100000), u, u, 8 + gen_below(64), u,
		        u - 1);
	}
	return close_in(f, path);
}

static int write_file(const struct ctx *x, const char *name, const char *text, char *path)
{
	FILE *f = open_in(x, name, path);
	if (!f)
		return -1;
	fputs(text, f);
	return close_in(f, path);
}

/* ================================================================ programs */

/* Find @exe in /usr/bin and /bin first (the Debian packages scripts/deps.sh
 * installs; not a wrapper that a version manager puts first on PATH), then on
 * PATH.  Return true with the path in @buf. */
static bool find_exe(const char *exe, char *buf)
{
	const char *path = getenv("PATH");
	char dirs[4096];
	snprintf(dirs, sizeof(dirs), "/usr/bin:/bin:%s", path ? path : "");
	for (char *save, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(buf, PATH_LEN, "%s/%s", d, exe);
		if (access(buf, X_OK) == 0)
			return true;
	}
	buf[0] = '\0';
	return false;
}

/* memcg-churn: beside this memcg binary (a build directory), else in
 * ../libexec/memcg/ (an installation). */
static bool find_churn(char *buf)
{
	char self[PATH_LEN];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return false;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (!slash)
		return false;
	*slash = '\0';
	pathf(buf, "%s/memcg-churn", self);
	if (access(buf, X_OK) == 0)
		return true;
	pathf(buf, "%s/../libexec/memcg/memcg-churn", self);
	return access(buf, X_OK) == 0;
}

/* Set @p's argv from the strings given (each copied into p->arg). */
static void set_args(struct program *p, int n, ...)
{
	va_list ap;
	va_start(ap, n);
	p->argv[0] = p->path;
	for (int i = 0; i < n && i < 8; i++) {
		snprintf(p->arg[i], PATH_LEN, "%s", va_arg(ap, const char *));
		p->argv[i + 1] = p->arg[i];
	}
	p->argv[n + 1] = NULL;
	va_end(ap);
}

/* Write every selected program's input and set its command line. */
static int prepare(struct ctx *x, struct program *p, enum prog_id id)
{
	const struct sizes *s = x->sz;
	char in[PATH_LEN], n[32];
	gen_state = 0x2545f4914f6cdd1dull + (uint64_t)id; /* each input its own sequence */
	switch (id) {
	case P_CHURN: {
		char budget[32], ops[32], idle[32];
		snprintf(budget, sizeof(budget), "%ld", s->churn_budget_kib);
		snprintf(ops, sizeof(ops), "%ld", s->churn_ops);
		snprintf(idle, sizeof(idle), "%ld", s->churn_idle_ms);
		set_args(p, 4, budget, ops, idle, "3"); /* the notify pipe: fd 3 */
		return 0;
	}
	case P_PYTHON:
		if (write_file(x, "workload.py", bench_workload_py, in))
			return -1;
		snprintf(n, sizeof(n), "%d", s->py_records);
		set_args(p, 2, in, n);
		return 0;
	case P_PERL:
		if (write_file(x, "workload.pl", bench_workload_pl, in))
			return -1;
		snprintf(n, sizeof(n), "%d", s->pl_lines);
		set_args(p, 2, in, n);
		return 0;
	case P_SQLITE:
		if (gen_sql_input(x, p->in))
			return -1;
		set_args(p, 1, ":memory:");
		return 0;
	case P_XZ:
		if (gen_xz_input(x, in))
			return -1;
		set_args(p, 4, "-T1", "-1", "-c", in);
		return 0;
	case P_SORT:
		if (gen_sort_input(x, in))
			return -1;
		pathf(p->check, "%s/sorted.txt", x->dir);
		set_args(p, 3, "-o", p->check, in);
		return 0;
	case P_GCC:
		if (gen_c_input(x, in))
			return -1;
		pathf(p->check, "%s/unit.o", x->dir);
		set_args(p, 5, "-O2", "-c", "-o", p->check, in);
		return 0;
	default: return -1;
	}
}

static const struct {
	const char *name, *exe, *what;
} prog_table[NPROG] = {
        [P_CHURN] = {"churn", "", "memcg-churn: a cache server, LRU churn with bursts, then idle"},
        [P_PYTHON] = {"python", "python3", "python3 workload.py: dicts, strings, json, threads"},
        [P_SQLITE] = {"sqlite", "sqlite3", "sqlite3 :memory: < SQL: inserts, indexes, queries"},
        [P_XZ] = {"xz", "xz", "xz -T1 -1: a generated service log"},
        [P_SORT] = {"sort", "sort", "sort (LC_ALL=C): generated text lines"},
        [P_GCC] = {"gcc", "gcc", "gcc -O2 -c: a generated C file"},
        [P_PERL] = {"perl", "perl", "perl workload.pl: regexes, hashes, sprintf, sort"},
};

/* ================================================================ running */

static void free_env(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

/*
 * Variant @v's environment: ours without LD_PRELOAD and the shim's report
 * variables, then LD_PRELOAD (a preloaded variant) and the settings every
 * program gets alike.  NULL on allocation failure.
 */
static char **program_env(const struct ctx *x, const struct bench_variant *v)
{
	static const char *const drop[] = {
	        "LD_PRELOAD=",     "MCG_REPORT_",        "LC_ALL=", "PYTHONHASHSEED=",
	        "PERL_HASH_SEED=", "PERL_PERTURB_KEYS=", "TMPDIR="};
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 8, sizeof(char *));
	if (!env)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		bool keep = true;
		for (size_t d = 0; d < sizeof(drop) / sizeof(drop[0]); d++)
			keep &= strncmp(environ[i], drop[d], strlen(drop[d])) != 0;
		if (keep && !(env[k++] = strdup(environ[i]))) {
			free_env(env);
			return NULL;
		}
	}
	char buf[PATH_LEN + 16];
	if (v->preload) {
		snprintf(buf, sizeof(buf), "LD_PRELOAD=%s", v->preload);
		env[k++] = strdup(buf);
	}
	snprintf(buf, sizeof(buf), "TMPDIR=%s", x->dir);
	env[k++] = strdup(buf);
	env[k++] = strdup("LC_ALL=C");
	env[k++] = strdup("PYTHONHASHSEED=0");
	env[k++] = strdup("PERL_HASH_SEED=0");
	env[k++] = strdup("PERL_PERTURB_KEYS=0");
	for (size_t i = 0; i < k; i++) {
		if (!env[i]) {
			for (size_t j = 0; j < k; j++)
				free(env[j]);
			free(env);
			return NULL;
		}
	}
	return env;
}

/* The stdout and stderr files of a run. */
static void out_paths(const struct ctx *x, int pi, int vi, char *out, char *err)
{
	pathf(out, "%s/%s-%s.out", x->dir, x->prog[pi].name, x->var[vi].name);
	pathf(err, "%s/%s-%s.err", x->dir, x->prog[pi].name, x->var[vi].name);
}

/*
 * Start program @pi under variant @vi: stdin from its input, stdout and
 * stderr to files; @notify_w (>= 0) becomes its fd 3.  Return the pid, or
 * -1 with a note.
 */
static pid_t start(struct ctx *x, int pi, int vi, int notify_w)
{
	struct program *p = &x->prog[pi];
	char out[PATH_LEN], err[PATH_LEN];
	out_paths(x, pi, vi, out, err);
	posix_spawn_file_actions_t fa;
	int e = posix_spawn_file_actions_init(&fa);
	if (!e)
		e = posix_spawn_file_actions_addopen(&fa, 0, p->in[0] ? p->in : "/dev/null",
		                                     O_RDONLY, 0);
	if (!e)
		e = posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC,
		                                     0644);
	if (!e)
		e = posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC,
		                                     0644);
	if (!e && notify_w >= 0)
		e = posix_spawn_file_actions_adddup2(&fa, notify_w, 3);
	if (!e)
		e = posix_spawn_file_actions_addchdir_np(&fa, x->dir);
	pid_t pid = -1;
	fflush(stdout);
	fflush(stderr);
	if (!e)
		e = posix_spawn(&pid, p->path, &fa, NULL, p->argv, x->env[vi]);
	posix_spawn_file_actions_destroy(&fa);
	if (e) {
		fprintf(stderr, "memcg bench programs: cannot start %s: %s\n", p->path,
		        strerror(e));
		return -1;
	}
	return pid;
}

/* A pidfd for @pid (readable when it exits), or -1 (then waits block). */
static int pid_fd(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

/*
 * Wait for @pid up to @timeout_s (killing it then), reap it; its status
 * and rusage in *@status and *@ru.  Return: 0, or -1 if it was killed for
 * taking too long.
 */
static int reap(pid_t pid, int pidfd, int timeout_s, int *status, struct rusage *ru)
{
	int rc = 0;
	if (pidfd >= 0) {
		struct pollfd pf = {.fd = pidfd, .events = POLLIN};
		int r;
		while ((r = poll(&pf, 1, timeout_s * 1000)) < 0 && errno == EINTR)
			;
		if (r == 0) {
			kill(pid, SIGKILL);
			rc = -1;
		}
		close(pidfd);
	}
	while (wait4(pid, status, 0, ru) < 0 && errno == EINTR)
		;
	return rc;
}

/* FNV-1a of file @path; 0 if it cannot be read. */
static uint64_t hash_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	uint64_t h = 1469598103934665603ull;
	char buf[65536];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			h = (h ^ (unsigned char)buf[i]) * 1099511628211ull;
	close(fd);
	return h;
}

/* Print the tail of a failed run's stderr. */
static void show_err(const struct ctx *x, int pi, int vi)
{
	char out[PATH_LEN], err[PATH_LEN], buf[1024];
	out_paths(x, pi, vi, out, err);
	int fd = open(err, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	off_t size = lseek(fd, 0, SEEK_END);
	lseek(fd, size > (off_t)sizeof(buf) - 1 ? size - (off_t)sizeof(buf) + 1 : 0, SEEK_SET);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		fprintf(stderr, "  --- its stderr (the end):\n%s\n  ---\n", buf);
	}
}

/* A run ended: judge its status and output; fill @r from @ru and @wall. */
static void finish(struct ctx *x, int pi, int vi, int st, bool timed_out, const struct rusage *ru,
                   double wall, struct result *r)
{
	struct program *p = &x->prog[pi];
	const char *vn = x->var[vi].name;
	r->ok = false;
	if (timed_out || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "memcg bench programs: %s under %s %s %d%s\n", p->name, vn,
		        WIFEXITED(st) ? "exited with status" : "was killed by signal",
		        WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
		        timed_out ? " (it ran out of time)" : "");
		show_err(x, pi, vi);
		x->failed++;
		return;
	}
	if (pi != P_CHURN) { /* now: the next run writes over it */
		char out[PATH_LEN], err[PATH_LEN];
		out_paths(x, pi, vi, out, err);
		r->hash = hash_file(p->check[0] ? p->check : out);
	}
	r->m[M_WALL] = wall;
	r->m[M_CPU] = (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) +
	              (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e6;
	r->m[M_RSS] = (double)ru->ru_maxrss / 1024.0;
	r->ok = true;
}

/* One run of an ordinary program: start, wait, judge. */
static void run_program(struct ctx *x, int pi, int vi, struct result *r)
{
	uint64_t t0 = bench_now_ns();
	pid_t pid = start(x, pi, vi, -1);
	if (pid < 0) {
		x->failed++;
		return;
	}
	int st = 0;
	struct rusage ru;
	int to = reap(pid, pid_fd(pid), x->sz->timeout_s, &st, &ru);
	double wall = (double)(bench_now_ns() - t0) / 1e9;
	finish(x, pi, vi, st, to != 0, &ru, wall, r);
}

/*
 * Start the churn under @vi and wait for the end of its churn (its byte on
 * the notify pipe); its wall time is up to there.  It is left idling, to be
 * collected by collect_churn().
 */
static void run_churn(struct ctx *x, int vi, struct result *r)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC)) {
		perror("memcg bench programs: pipe");
		x->failed++;
		return;
	}
	uint64_t t0 = bench_now_ns();
	pid_t pid = start(x, P_CHURN, vi, fds[1]);
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		x->failed++;
		return;
	}
	int pidfd = pid_fd(pid);
	struct pollfd pf = {.fd = fds[0], .events = POLLIN};
	int pr;
	while ((pr = poll(&pf, 1, x->sz->timeout_s * 1000)) < 0 && errno == EINTR)
		;
	char c = 0;
	bool notified = pr > 0 && read(fds[0], &c, 1) == 1;
	r->m[M_WALL] = (double)(bench_now_ns() - t0) / 1e9;
	close(fds[0]);
	if (!notified) { /* it died, or hung: collect it now, as a failure */
		int st = 0;
		struct rusage ru;
		bool killed = reap(pid, pidfd, pr == 0 ? 0 : x->sz->timeout_s, &st, &ru) != 0;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			st = 1 << 8; /* exited without notifying: still a failure */
		finish(x, P_CHURN, vi, st, killed || pr == 0, &ru, 0, r);
		return;
	}
	x->pend[x->npend++] = (struct pending){.pid = pid, .pidfd = pidfd, .var = vi, .t0 = t0};
}

/* Parse churn output @path into @tr; the live MiB of its end line in *@live. */
static int parse_churn(const char *path, struct churn_trace *tr, double *live)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[256];
	tr->n = 0;
	*live = -1;
	while (fgets(line, sizeof(line), f)) {
		struct csample s;
		unsigned long long fill, churn, ents, hits, misses, live_kib;
		if (line[0] == 'S' && tr->n < MAX_SAMPLES &&
		    sscanf(line, "S %f %c %ld %ld", &s.t_ms, &s.phase, &s.rss_kib, &s.live_kib) ==
		            4)
			tr->s[tr->n++] = s;
		else if (sscanf(line, "E %llu %llu %llu %llu %llu %llu", &fill, &churn, &ents,
		                &hits, &misses, &live_kib) == 6)
			*live = (double)live_kib / 1024.0;
	}
	fclose(f);
	return *live > 0 && tr->n > 0 ? 0 : -1;
}

/* Steady and idle RSS/live of trace @tr (see the banner); @idle_ms the idle phase. */
static void churn_figures(const struct churn_trace *tr, long idle_ms, double *steady, double *idle)
{
	double v[MAX_SAMPLES] = {0};
	int nc = 0, first_c = -1, last_c = -1, n = 0;
	for (int i = 0; i < tr->n; i++)
		if (tr->s[i].phase == 'C') {
			if (first_c < 0)
				first_c = i;
			last_c = i;
			nc++;
		}
	if (nc > 0) {
		for (int i = last_c - (nc - 1) / 4; i <= last_c; i++)
			if (tr->s[i].phase == 'C' && tr->s[i].live_kib > 0)
				v[n++] = (double)tr->s[i].rss_kib / (double)tr->s[i].live_kib;
	}
	*steady = bench_median(v, n);
	n = 0;
	double t_idle = last_c >= 0 ? tr->s[last_c].t_ms : 0, from = (double)idle_ms * 5.0 / 6.0;
	for (int i = 0; i < tr->n; i++)
		if (tr->s[i].phase == 'I' && tr->s[i].t_ms - t_idle >= from - 50 &&
		    tr->s[i].live_kib > 0)
			v[n++] = (double)tr->s[i].rss_kib / (double)tr->s[i].live_kib;
	*idle = bench_median(v, n);
}

/* Collect the churns left idling in round @run. */
static void collect_churn(struct ctx *x, int run)
{
	for (int i = 0; i < x->npend; i++) {
		struct pending *pd = &x->pend[i];
		struct result *r = &x->res[P_CHURN][pd->var][run];
		double wall = r->m[M_WALL];
		int st = 0;
		struct rusage ru;
		int to = reap(pd->pid, pd->pidfd, (int)(x->sz->churn_idle_ms / 1000) + 120, &st,
		              &ru);
		finish(x, P_CHURN, pd->var, st, to != 0, &ru, wall, r);
		if (!r->ok)
			continue;
		char out[PATH_LEN], err[PATH_LEN];
		out_paths(x, P_CHURN, pd->var, out, err);
		struct churn_trace *tr = x->trace[pd->var];
		if (parse_churn(out, tr, &r->live_mib)) {
			fprintf(stderr, "memcg bench programs: churn under %s: no samples in %s\n",
			        x->var[pd->var].name, out);
			r->ok = false;
			x->failed++;
			continue;
		}
		churn_figures(tr, x->sz->churn_idle_ms, &r->m[M_STEADY], &r->m[M_IDLE]);
	}
	x->npend = 0;
}

static int var_index(const struct ctx *x, const char *name)
{
	for (int i = 0; i < x->nvar; i++)
		if (!strcmp(x->var[i].name, name))
			return i;
	return -1;
}

/*
 * Compare the outputs of round @run: every run's with the reference run's
 * - glibc's (the system's own malloc), else the first that ran - and that
 * with the first round's.  A run whose output differs is failed.
 */
static void check_outputs(struct ctx *x, int run)
{
	int ig = var_index(x, "glibc");
	for (int pi = 0; pi < NPROG; pi++) {
		struct program *p = &x->prog[pi];
		if (!p->on || pi == P_CHURN)
			continue;
		int ref = ig >= 0 && x->res[pi][ig][run].ok ? ig : -1;
		for (int vi = 0; ref < 0 && vi < x->nvar; vi++)
			if (x->res[pi][vi][run].ok)
				ref = vi;
		if (ref < 0)
			continue;
		uint64_t h = x->res[pi][ref][run].hash;
		if (!p->have_ref) {
			p->have_ref = true;
			p->ref_hash = h;
		} else if (h != p->ref_hash) {
			fprintf(stderr,
			        "memcg bench programs: %s under %s wrote other output in round %d "
			        "than in round 1\n",
			        p->name, x->var[ref].name, run + 1);
			x->res[pi][ref][run].ok = false;
			x->failed++;
		}
		for (int vi = 0; vi < x->nvar; vi++) {
			struct result *r = &x->res[pi][vi][run];
			if (vi == ref || !r->ok || r->hash == h)
				continue;
			fprintf(stderr,
			        "memcg bench programs: %s under %s wrote other output than under "
			        "%s "
			        "(round %d)\n",
			        p->name, x->var[vi].name, x->var[ref].name, run + 1);
			r->ok = false;
			x->failed++;
		}
	}
}

/* Every round: each program under every variant, the order rotated. */
static void measure(struct ctx *x)
{
	for (int run = 0; run < x->o.runs; run++) {
		uint64_t t0 = bench_now_ns();
		for (int pi = 0; pi < NPROG; pi++) {
			if (!x->prog[pi].on)
				continue;
			for (int j = 0; j < x->nvar; j++) {
				int vi = (j + run + pi) % x->nvar;
				struct result *r = &x->res[pi][vi][run];
				memset(r, 0, sizeof(*r));
				if (pi == P_CHURN)
					run_churn(x, vi, r);
				else
					run_program(x, pi, vi, r);
			}
		}
		collect_churn(x, run);
		check_outputs(x, run);
		bench_progress("programs: round %d/%d done (%.1f s)", run + 1, x->o.runs,
		               (double)(bench_now_ns() - t0) / 1e9);
	}
}

/* ================================================================ figures */

/* The figures of metric @m of program @pi, variant @vi, over runs, into @v; how many.
 * A run that failed leaves a 0 (ratios skip it; medians are over the good ones). */
static int series(const struct ctx *x, int pi, int vi, int m, double *v, bool all)
{
	int n = 0;
	for (int r = 0; r < x->o.runs; r++) {
		const struct result *res = &x->res[pi][vi][r];
		if (all)
			v[n++] = res->ok ? res->m[m] : 0;
		else if (res->ok)
			v[n++] = res->m[m];
	}
	return n;
}

static double med(const struct ctx *x, int pi, int vi, int m)
{
	double v[MAX_RUNS];
	return bench_median(v, series(x, pi, vi, m, v, false));
}

/* Round-by-round ratio of @a to @b on metric @m (rounds where both ran). */
static double ratio(const struct ctx *x, int pi, int a, int b, int m)
{
	double va[MAX_RUNS], vb[MAX_RUNS];
	int n = series(x, pi, a, m, va, true);
	series(x, pi, b, m, vb, true);
	for (int i = 0; i < n; i++)
		if (va[i] <= 0)
			vb[i] = 0; /* a failed run of @a: the pair is left out */
	return bench_ratio_median(va, vb, n);
}

static bool ran_all(const struct ctx *x, int pi, int vi)
{
	for (int r = 0; r < x->o.runs; r++)
		if (!x->res[pi][vi][r].ok)
			return false;
	return true;
}

/* The baseline with the lowest median of @m for @pi; -1 if none. */
static int best_baseline(const struct ctx *x, int pi, int m)
{
	int best = -1;
	for (int i = 0; i < x->nvar; i++)
		if (x->var[i].baseline && ran_all(x, pi, i) &&
		    (best < 0 || med(x, pi, i, m) < med(x, pi, best, m)))
			best = i;
	return best;
}

/*
 * The ratio shown for @vi: a baseline's to the best baseline; memcg's the
 * worst over every baseline (*@who: the baseline it is against).
 */
static double shown_ratio(const struct ctx *x, int pi, int vi, int m, int *who)
{
	*who = -1;
	if (x->var[vi].baseline) {
		int b = best_baseline(x, pi, m);
		*who = b;
		return b < 0 ? 0 : ratio(x, pi, vi, b, m);
	}
	double rs[MAX_VAR];
	bool use[MAX_VAR];
	for (int i = 0; i < x->nvar; i++) {
		use[i] = x->var[i].baseline && ran_all(x, pi, i);
		rs[i] = use[i] ? ratio(x, pi, vi, i, m) : 0;
	}
	return bench_worst(rs, use, x->nvar, who);
}

/* Record a target: counted, printed, a JSON line.  Return its verdict's name. */
static const char *target(struct ctx *x, const char *program, const char *name, double value,
                          enum bench_verdict v)
{
	if (bench_verdict_met(v))
		x->met++;
	else
		x->missed++;
	if (x->o.json) {
		char extra[200];
		snprintf(extra, sizeof(extra),
		         "\"program\":\"%s\",\"name\":\"%s\",\"pass\":%s,\"verdict\":\"%s\"",
		         program, name, bench_verdict_met(v) ? "true" : "false",
		         bench_verdict_name(v));
		bench_emit_json("target", "memcg", extra, value, "ratio");
	}
	return bench_verdict_name(v);
}

static void emit_rows(const struct ctx *x, int pi, int m)
{
	for (int vi = 0; vi < x->nvar; vi++) {
		if (!ran_all(x, pi, vi))
			continue;
		int who;
		double r = shown_ratio(x, pi, vi, m, &who);
		char extra[200];
		snprintf(extra, sizeof(extra),
		         "\"program\":\"%s\",\"metric\":\"%s\",\"runs\":%d,\"ratio\":%.4f,\"vs\":"
		         "\"%s\"",
		         x->prog[pi].name, metric_names[m], x->o.runs, r,
		         who >= 0 ? x->var[who].name : "-");
		bench_emit_json("programs", x->var[vi].name, extra, med(x, pi, vi, m),
		                metric_units[m]);
	}
}

/* One table: metric @m of every program (cells: median (ratio)). */
static void print_table(const struct ctx *x, int m, const char *title, const char *fmt)
{
	printf("\n== %s ==\n%-8s", title, "program");
	for (int vi = 0; vi < x->nvar; vi++)
		printf(" %16s", x->var[vi].name);
	printf("\n");
	for (int pi = 0; pi < NPROG; pi++) {
		if (!x->prog[pi].on || ((m == M_STEADY || m == M_IDLE) && pi != P_CHURN))
			continue;
		printf("%-8s", x->prog[pi].name);
		for (int vi = 0; vi < x->nvar; vi++) {
			char cell[48], val[24];
			int who;
			if (!ran_all(x, pi, vi)) {
				printf(" %16s", "failed");
				continue;
			}
			snprintf(val, sizeof(val), fmt, med(x, pi, vi, m));
			snprintf(cell, sizeof(cell), "%s (%.2f)", val,
			         shown_ratio(x, pi, vi, m, &who));
			printf(" %16s", cell);
		}
		printf("\n");
	}
}

/* The targets (see the banner). */
static void judge(struct ctx *x)
{
	int im = var_index(x, "memcg");
	if (im < 0) {
		if (!x->o.json)
			printf("\nno memcg shim: no targets judged\n");
		return;
	}
	if (!x->o.json)
		printf("\n== targets: memcg against the baselines (medians of %d round%s; TIE: "
		       "within 3 %%) ==\n",
		       x->o.runs, x->o.runs > 1 ? "s" : "");
	/* Time: the geometric mean and the worst program. */
	double logsum = 0, worst = 0;
	int n = 0, worst_p = -1;
	for (int pi = 0; pi < NPROG; pi++) {
		int who;
		if (!x->prog[pi].on || !ran_all(x, pi, im))
			continue;
		double r = shown_ratio(x, pi, im, M_WALL, &who);
		if (who < 0 || r <= 0)
			continue;
		logsum += log(r);
		n++;
		if (r > worst) {
			worst = r;
			worst_p = pi;
		}
	}
	if (n) {
		double gm = exp(logsum / n);
		const char *v1 = target(x, "*", "time-geomean", gm, bench_judge_le(gm, 1.0));
		const char *v2 = target(x, x->prog[worst_p].name, "time-worst", worst,
		                        bench_judge_le(worst, 1.10));
		if (!x->o.json)
			printf("time: wall / the fastest baseline's, geometric mean over %d "
			       "programs: %.3f <= 1.00 %s\n"
			       "time: the worst program (%s): %.3f <= 1.10 %s\n",
			       n, gm, v1, x->prog[worst_p].name, worst, v2);
	}
	/* Memory: each program's peak RSS. */
	for (int pi = 0; pi < NPROG; pi++) {
		int who;
		if (!x->prog[pi].on || !ran_all(x, pi, im))
			continue;
		double r = shown_ratio(x, pi, im, M_RSS, &who);
		if (who < 0)
			continue;
		const char *v = target(x, x->prog[pi].name, "peak-rss", r, bench_judge_le(r, 1.05));
		if (!x->o.json)
			printf("memory: %-6s peak RSS / the leanest baseline's (%s): %.3f <= 1.05 "
			       "%s\n",
			       x->prog[pi].name, x->var[who].name, r, v);
	}
	if (!x->prog[P_CHURN].on || !ran_all(x, P_CHURN, im))
		return;
	/* Churn: steady RSS/live against jemalloc's (the leanest baseline's without it). */
	int ij = var_index(x, "jemalloc");
	if (ij < 0 || !ran_all(x, P_CHURN, ij))
		ij = best_baseline(x, P_CHURN, M_STEADY);
	if (ij >= 0) {
		double r = ratio(x, P_CHURN, im, ij, M_STEADY);
		const char *v =
		        target(x, "churn", "steady-rss-per-live", r, bench_judge_le(r, 1.0));
		if (!x->o.json)
			printf("churn: steady RSS/live %.3f, %s's %.3f: ratio %.3f <= 1.00 %s\n",
			       med(x, P_CHURN, im, M_STEADY), x->var[ij].name,
			       med(x, P_CHURN, ij, M_STEADY), r, v);
	}
	/* Idle: back within 2 MiB + 5 % of live. */
	double live[MAX_RUNS], rss[MAX_RUNS];
	int k = 0;
	for (int r = 0; r < x->o.runs; r++) {
		const struct result *res = &x->res[P_CHURN][im][r];
		live[k] = res->live_mib;
		rss[k++] = res->m[M_IDLE] * res->live_mib;
	}
	double lv = bench_median(live, k), rs = bench_median(rss, k), bound = 2.0 + 1.05 * lv;
	const char *v = target(x, "churn", "idle-rss", rs / bound, bench_judge_le(rs, bound));
	if (!x->o.json)
		printf("idle: RSS after %.0f s idle %.1f MiB, live %.1f MiB: <= 2 MiB + 1.05 x "
		       "live "
		       "= %.1f MiB %s\n",
		       (double)x->sz->churn_idle_ms * 5 / 6 / 1000, rs, lv, bound, v);
}

static void report(struct ctx *x)
{
	if (x->o.json) {
		for (int pi = 0; pi < NPROG; pi++) {
			if (!x->prog[pi].on)
				continue;
			for (int m = 0; m < NMETRIC; m++)
				if (pi == P_CHURN || (m != M_STEADY && m != M_IDLE))
					emit_rows(x, pi, m);
		}
	} else {
		printf("\ncells: the median over %d round%s (the ratio: a baseline's to the best "
		       "baseline, memcg's to the worst for it of every baseline, round by round)\n",
		       x->o.runs, x->o.runs > 1 ? "s" : "");
		print_table(x, M_WALL, "wall time, s (churn: its churn phase)", "%.3f");
		print_table(x, M_CPU, "CPU time (user + system), s", "%.3f");
		print_table(x, M_RSS, "peak RSS, MiB", "%.1f");
		if (x->prog[P_CHURN].on) {
			print_table(x, M_STEADY, "churn: RSS / live, the last quarter of the churn",
			            "%.3f");
			print_table(x, M_IDLE, "churn: RSS / live after 10 s idle", "%.3f");
		}
	}
	judge(x);
}

/* ================================================================ plot */

/* Write the last round's churn traces and draw them with gnuplot into @png. */
static int plot(struct ctx *x, const char *png)
{
	static const char *const colors[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd",
	                                     "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f"};
	char gp[PATH_LEN];
	if (!find_exe("gnuplot", gp)) {
		fprintf(stderr, "memcg bench programs: --plot: gnuplot is not installed (Debian: "
		                "gnuplot-nox): no plot drawn\n");
		return 0;
	}
	char script[PATH_LEN];
	pathf(script, "%s/plot.gp", x->dir);
	FILE *s = fopen(script, "w");
	if (!s)
		return -1;
	fprintf(s,
	        "set terminal pngcairo size 1200,900 font ',11'\nset output '%s'\n"
	        "set multiplot layout 2,1 title 'memcg bench programs: churn (a cache server), "
	        "RSS and live bytes, %s'\n"
	        "set grid\nset key outside right top\n"
	        "set xlabel 'seconds from the start of the idle phase (before 0: fill and churn)'\n"
	        "set arrow 1 from 0, graph 0 to 0, graph 1 nohead dt 2 lc rgb 'gray40'\n"
	        "set arrow 2 from 10, graph 0 to 10, graph 1 nohead dt 3 lc rgb 'gray40'\n"
	        "set label 1 'idle' at 0.3, graph 0.93\nset label 2 '10 s' at 10.2, graph 0.93\n"
	        "set ylabel 'MiB'\nset yrange [0:*]\n",
	        png, x->o.smoke ? "smoke sizes" : "the last round");
	int ndrawn = 0;
	char plot_rss[8192] = "", plot_ratio[8192] = "";
	size_t lr = 0, lq = 0;
	for (int vi = 0; vi < x->nvar; vi++) {
		const struct churn_trace *tr = x->trace[vi];
		if (!x->res[P_CHURN][vi][x->o.runs - 1].ok || tr->n == 0)
			continue;
		char dat[PATH_LEN];
		pathf(dat, "%s/churn-%s.dat", x->dir, x->var[vi].name);
		FILE *d = fopen(dat, "w");
		if (!d) {
			fclose(s);
			return -1;
		}
		double t_idle = 0;
		for (int i = 0; i < tr->n; i++)
			if (tr->s[i].phase == 'C')
				t_idle = tr->s[i].t_ms;
		for (int i = 0; i < tr->n; i++)
			fprintf(d, "%.3f %.3f %.3f %d\n", (tr->s[i].t_ms - t_idle) / 1000.0,
			        (double)tr->s[i].rss_kib / 1024.0,
			        (double)tr->s[i].live_kib / 1024.0, tr->s[i].phase != 'F');
		fclose(d);
		const char *c = colors[ndrawn % 8];
		lr += (size_t)snprintf(plot_rss + lr, sizeof(plot_rss) - lr,
		                       "%s'%s' u 1:2 w l lw 2 lc rgb '%s' t '%s', '' u 1:3 w l "
		                       "dt 2 lw 1 lc rgb '%s' %s",
		                       ndrawn ? ", " : "", dat, c, x->var[vi].name, c,
		                       ndrawn ? "notitle" : "t 'live (dashed)'");
		/* RSS / live from the churn on: while filling, live is too small to compare. */
		lq += (size_t)snprintf(
		        plot_ratio + lq, sizeof(plot_ratio) - lq,
		        "%s'%s' u 1:($4 > 0 && $3 > 0 ? $2 / $3 : NaN) w l lw 2 lc rgb "
		        "'%s' t '%s'",
		        ndrawn ? ", " : "", dat, c, x->var[vi].name);
		ndrawn++;
	}
	if (!ndrawn) {
		fclose(s);
		fprintf(stderr, "memcg bench programs: --plot: no churn run to draw\n");
		return 0;
	}
	fprintf(s,
	        "set title 'RSS (solid) and live bytes (dashed), MiB'\nplot %s\n"
	        "set title 'RSS / live (from the end of the fill)'\nset ylabel 'RSS / live'\nset "
	        "yrange [1:*]\nplot %s\n"
	        "unset multiplot\n",
	        plot_rss, plot_ratio);
	fclose(s);
	char *argv[] = {gp, script, NULL};
	pid_t pid;
	fflush(stdout);
	if (posix_spawn(&pid, gp, NULL, NULL, argv, environ)) {
		fprintf(stderr, "memcg bench programs: cannot run gnuplot\n");
		return -1;
	}
	int st = 0;
	struct rusage ru;
	if (reap(pid, pid_fd(pid), 60, &st, &ru) || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "memcg bench programs: gnuplot failed (script %s)\n", script);
		return -1;
	}
	if (!x->o.json)
		printf("\nplot: %s (the churn's RSS and live bytes over time, every allocator)\n",
		       png);
	return 0;
}

/* ================================================================ main */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* The worker: the variant probe of bench_variants_find(). */
static int worker_main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[0], "probe"))
		return 2;
	if (baseline_check_self(argv[1]))
		return 3;
	void *p = malloc(64);
	if (!p)
		return 1;
	*(volatile char *)p = 1;
	free(p);
	printf("1\n");
	return 0;
}

/* Take --plot FILE out of @argv into *@plot; the rest stays in order. */
static int take_plot(int argc, char **argv, const char **plot)
{
	int n = 0;
	*plot = NULL;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--plot") && i + 1 < argc)
			*plot = argv[++i];
		else
			argv[n++] = argv[i];
	}
	argv[n] = NULL;
	return n;
}

static void cleanup(struct ctx *x)
{
	for (int vi = 0; vi < MAX_VAR; vi++) {
		free_env(x->env[vi]);
		free(x->trace[vi]);
	}
	if (x->dir[0])
		nftw(x->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(x);
}

int bench_programs_main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "--worker"))
		return worker_main(argc - 2, argv + 2);
	struct ctx *x = calloc(1, sizeof(*x));
	if (!x)
		return 1;
	static const char *const cases[] = {"churn", "python", "sqlite", "xz",
	                                    "sort",  "gcc",    "perl",   NULL};
	char *args[64];
	argc = take_plot(argc, argv, &x->plot);
	int nargs = bench_take_case(argc, argv, "programs", cases, &x->only, args);
	int rc = nargs < 0 ? 2 : bench_parse_opts(nargs, args, &x->o);
	if (rc) {
		free(x);
		return rc;
	}
	if (x->o.runs > MAX_RUNS)
		x->o.runs = MAX_RUNS;
	x->sz = x->o.smoke ? &smoke_sizes : &full_sizes;
	const char *probe[] = {"bench", "programs", "--worker", "probe", NULL};
	struct bench_variant all[BENCH_MAX_VARIANTS];
	int nall = bench_variants_find(all, probe);
	for (int i = 0; i < nall; i++)
		if (!all[i].direct && all[i].kind == BENCH_LIBC)
			x->var[x->nvar++] = all[i];
	strcpy(x->dir, "/tmp/memcg-bench-programs-XXXXXX");
	if (!mkdtemp(x->dir)) {
		perror("memcg bench programs: mkdtemp");
		x->dir[0] = '\0';
		cleanup(x);
		return 1;
	}
	for (int vi = 0; vi < x->nvar; vi++) {
		x->env[vi] = program_env(x, &x->var[vi]);
		x->trace[vi] = calloc(1, sizeof(struct churn_trace));
		if (!x->env[vi] || !x->trace[vi]) {
			cleanup(x);
			return 1;
		}
	}
	/* The programs: found, selected, their inputs written. */
	int nprog = 0;
	uint64_t t0 = bench_now_ns();
	for (int pi = 0; pi < NPROG; pi++) {
		struct program *p = &x->prog[pi];
		p->name = prog_table[pi].name;
		p->exe = prog_table[pi].exe;
		p->what = prog_table[pi].what;
		if (x->only && strcmp(x->only, p->name))
			continue;
		bool found = pi == P_CHURN ? find_churn(p->path) : find_exe(p->exe, p->path);
		if (!found) {
			fprintf(stderr, "memcg bench programs: %s not found (%s): skipped\n",
			        p->name,
			        pi == P_CHURN ? "no memcg-churn beside memcg or in ../libexec/memcg"
			                      : p->exe);
			continue;
		}
		if (prepare(x, p, (enum prog_id)pi)) {
			cleanup(x);
			return 1;
		}
		p->on = true;
		nprog++;
	}
	if (!x->o.json) {
		printf("memcg bench programs%s: %d round%s; allocators:",
		       x->o.smoke ? " (smoke: figures mean nothing)" : "", x->o.runs,
		       x->o.runs > 1 ? "s" : "");
		for (int vi = 0; vi < x->nvar; vi++)
			printf(" %s", x->var[vi].name);
		printf("\n");
		for (int pi = 0; pi < NPROG; pi++)
			if (x->prog[pi].on)
				printf("  %-7s %s\n", x->prog[pi].name, x->prog[pi].what);
	}
	if (!x->o.smoke)
		bench_progress("programs: inputs written in %.1f s",
		               (double)(bench_now_ns() - t0) / 1e9);
	if (nprog == 0 || x->nvar == 0) {
		fprintf(stderr, "memcg bench programs: nothing to run\n");
		cleanup(x);
		return x->o.smoke ? 77 : 1;
	}
	t0 = bench_now_ns();
	measure(x);
	report(x);
	if (x->plot && x->prog[P_CHURN].on && plot(x, x->plot))
		x->failed++;
	else if (x->plot && !x->prog[P_CHURN].on)
		fprintf(stderr, "memcg bench programs: --plot: the churn did not run: no plot\n");
	if (!x->o.json)
		printf("\ntargets: %d met (PASS or TIE), %d missed; %d run%s failed (%.0f s)\n",
		       x->met, x->missed, x->failed, x->failed == 1 ? "" : "s",
		       (double)(bench_now_ns() - t0) / 1e9);
	rc = x->failed ? 1 : 0;
	cleanup(x);
	return rc;
}
