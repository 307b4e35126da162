/* SPDX-License-Identifier: MIT */
/*
 * tools/cmd_demo.c - `memcg demo`: the README's main command, a multi-tenant
 * server in miniature.
 *
 * Four tenants under a parent group "tenants" (memory.max 192M), each a
 * thread that every 10 ms fills its cache (entries on a memcg-aware
 * list_lru with a shrinker: reclaimable, the page cache's role) on top of
 * an unreclaimable working set (mcg_charge: anon memory's role):
 *
 *   tenants (max 192M)
 *    |- gold    max 96M, low 48M   working set 24M, cache +12M/s
 *    |- silver  max 64M, high 48M  working set 16M, cache +12M/s
 *    |- bronze  max 48M            working set  8M, cache +12M/s
 *    `- rogue   max 48M            working set +8M/s (it leaks), cache +6M/s
 *
 * Each cache entry is a small slab object standing for a 4 KiB page (one
 * page charged per entry), and the working sets are charges without memory
 * behind them, so the demo itself stays small.  When the rogue cannot
 * charge even after reclaim, the OOM policy "kills" it: its working set is
 * released and it starts leaking again.  Every second one line per tenant:
 * memory.current / high / max, pages reclaimed from it (memory.stat
 * pgsteal) and its low, high, max, oom, oom_kill events; then a summary of
 * what the limits did.  Global pressure (memcg/pressure.h) runs alongside
 * and says where this process's real budget comes from.
 *
 * Beside them, a fifth tenant writes a log file through memcg's page cache
 * (memcg/file.h) as fast as it can:
 *
 *   logger  max 32M, memory.dirty_bytes 4M   file writes, 256 KiB at a time
 *
 * Its file pages are charged to it and reclaimed like the caches; its dirty
 * data stays near its 4M limit while the flushers write it out, and its
 * writer is paused (balance_dirty_pages) instead of running ahead; each
 * second a line shows its dirty + writeback pages, its write rate and the
 * time its writer was paused; at the end it fsyncs and reads the file back.
 *
 * `memcg demo --program` runs the first demo instead (demo_program.c);
 * `memcg demo --server` a real server and real clients (demo_server.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "demo.h"
#include "memcg/file.h"
#include "memcg/group.h"
#include "memcg/pressure.h"
#include "memcg/reclaim.h"
#include "memcg/slab.h"

#define MIB (1024.0 * 1024.0)
#define PAGES_PER_MIB 256
#define TICK_MS 10

struct tenant {
	const char *name;
	const char *max, *high, *low; /* NULL: not set */
	long ws_mib;                  /* working set to charge at start */
	long cache_mib_s;             /* cache fill rate */
	long leak_mib_s;              /* working-set growth (the rogue) */
	mcg_group_t *g;
	pthread_t thread;
	long ws_pages;     /* charged working set (atomic: the OOM policy takes it) */
	long entries;      /* cache entries alive (atomic) */
	long min_current;  /* bytes, lowest memory.current after warm-up */
	long peak_current; /* bytes */
	long failed;       /* charges that failed (atomic) */
	long kills;        /* OOM kills (atomic) */
	long ws_charged;   /* pages charged to the working set in all */
};

static struct tenant tenants[] = {
        {.name = "gold", .max = "96M", .low = "48M", .ws_mib = 24, .cache_mib_s = 12},
        {.name = "silver", .max = "64M", .high = "48M", .ws_mib = 16, .cache_mib_s = 12},
        {.name = "bronze", .max = "48M", .ws_mib = 8, .cache_mib_s = 12},
        {.name = "rogue", .max = "48M", .ws_mib = 4, .cache_mib_s = 6, .leak_mib_s = 8},
};
#define NR_TENANTS ((int)(sizeof(tenants) / sizeof(tenants[0])))

static mcg_group_t *parent;
static mcg_cache_t *entry_cache;
static mcg_shrinker_t *shrinker;
static mcg_list_lru_t *lru;
static volatile int stop_tenants;

/* A cache entry: stands for one 4 KiB page charged to its tenant. */
struct entry {
	mcg_lru_link_t link;
	struct tenant *t;
	unsigned long key;
};

/* ------------------------------------------------------------ the shrinker */

static enum mcg_lru_status isolate(mcg_lru_link_t *item, mcg_list_lru_one_t *list, void *arg)
{
	mcg_list_lru_isolate_move(list, item, arg);
	return MCG_LRU_REMOVED;
}

static void dispose_all(mcg_lru_link_t *dispose)
{
	for (mcg_lru_link_t *l = dispose->next, *next; l != dispose; l = next) {
		next = l->next;
		struct entry *e = (struct entry *)l;
		struct tenant *t = e->t;
		mcg_cache_free(entry_cache, e);
		mcg_uncharge(t->g, 1);
		__atomic_fetch_sub(&t->entries, 1, __ATOMIC_RELAXED);
	}
}

static unsigned long cache_count(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	return mcg_list_lru_shrink_count(lru, sc);
}

static unsigned long cache_scan(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	mcg_lru_link_t dispose;
	mcg_lru_link_init(&dispose);
	unsigned long n = mcg_list_lru_shrink_walk(lru, sc, isolate, &dispose);
	dispose_all(&dispose);
	return n;
}

/* ------------------------------------------------------------ the OOM policy */

static struct tenant *tenant_of(mcg_group_t *g)
{
	for (int i = 0; i < NR_TENANTS; i++)
		if (tenants[i].g == g)
			return &tenants[i];
	return NULL;
}

/* Kill the tenant below @over with the largest working set: release it. */
static mcg_group_t *oom_policy(mcg_group_t *over, unsigned long nr_pages, void *arg)
{
	struct tenant *victim = tenant_of(over);
	if (!victim) {
		for (int i = 0; i < NR_TENANTS; i++)
			if (!victim || __atomic_load_n(&tenants[i].ws_pages, __ATOMIC_RELAXED) >
			                       __atomic_load_n(&victim->ws_pages, __ATOMIC_RELAXED))
				victim = &tenants[i];
	}
	long n = __atomic_exchange_n(&victim->ws_pages, 0, __ATOMIC_RELAXED);
	if (n <= 0)
		return NULL;
	mcg_uncharge(victim->g, (unsigned long)n);
	__atomic_fetch_add(&victim->kills, 1, __ATOMIC_RELAXED);
	return victim->g;
}

/* ------------------------------------------------------------ tenants */

static int ws_charge(struct tenant *t, long pages)
{
	if (mcg_charge(t->g, (unsigned long)pages, 0)) {
		__atomic_fetch_add(&t->failed, 1, __ATOMIC_RELAXED);
		return -ENOMEM;
	}
	__atomic_fetch_add(&t->ws_pages, pages, __ATOMIC_RELAXED);
	t->ws_charged += pages;
	return 0;
}

static void *tenant_main(void *arg)
{
	struct tenant *t = arg;
	unsigned long key = 0;
	long per_tick = t->cache_mib_s * PAGES_PER_MIB * TICK_MS / 1000;
	long leak_tick = t->leak_mib_s * PAGES_PER_MIB * TICK_MS / 1000;
	for (long left = t->ws_mib * PAGES_PER_MIB; left > 0; left -= 64)
		ws_charge(t, left < 64 ? left : 64);
	while (!stop_tenants) {
		for (long i = 0; i < per_tick; i++) {
			if (mcg_charge(t->g, 1, 0)) {
				__atomic_fetch_add(&t->failed, 1, __ATOMIC_RELAXED);
				break;
			}
			struct entry *e = mcg_cache_alloc(entry_cache);
			if (!e) {
				mcg_uncharge(t->g, 1);
				break;
			}
			mcg_lru_link_init(&e->link);
			e->t = t;
			e->key = key++;
			__atomic_fetch_add(&t->entries, 1, __ATOMIC_RELAXED);
			mcg_list_lru_add(lru, &e->link, 0, t->g);
		}
		if (leak_tick)
			ws_charge(t, leak_tick);
		usleep(TICK_MS * 1000);
	}
	return NULL;
}

/* ------------------------------------------------------------ reading the files */

static long read_num(mcg_group_t *g, const char *file)
{
	char buf[64];
	if (mcg_group_read(g, file, buf, sizeof(buf)) <= 0)
		return -1;
	return strncmp(buf, "max", 3) ? atol(buf) : -2;
}

static long keyed(mcg_group_t *g, const char *file, const char *key)
{
	char buf[4096];
	if (mcg_group_read(g, file, buf, sizeof(buf)) <= 0)
		return 0;
	size_t kl = strlen(key);
	for (char *p = buf; p && *p;) {
		if (!strncmp(p, key, kl) && p[kl] == ' ')
			return atol(p + kl + 1);
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return 0;
}

static void fmt_bytes(char *buf, size_t len, long v)
{
	if (v == -2)
		snprintf(buf, len, "max");
	else if (v < 0)
		snprintf(buf, len, "?");
	else
		snprintf(buf, len, "%.1fM", (double)v / MIB);
}

static void print_row(const char *label, mcg_group_t *g)
{
	char cur[16], high[16], max[16];
	fmt_bytes(cur, sizeof(cur), read_num(g, "memory.current"));
	fmt_bytes(high, sizeof(high), read_num(g, "memory.high"));
	fmt_bytes(max, sizeof(max), read_num(g, "memory.max"));
	printf("  %-8s %8s %7s %7s | %9.1fM %5ld %5ld %5ld %5ld %8ld\n", label, cur, high, max,
	       (double)keyed(g, "memory.stat", "pgsteal") * 4096 / MIB,
	       keyed(g, "memory.events", "low"), keyed(g, "memory.events", "high"),
	       keyed(g, "memory.events", "max"), keyed(g, "memory.events", "oom"),
	       keyed(g, "memory.events", "oom_kill"));
}

/* ------------------------------------------------------------ the logger */

#define LOG_CHUNK (256L << 10)
#define LOG_REGION (64L << 20) /* the file wraps here: disk use stays bounded */
#define LOG_DIRTY_MIB 4

static struct {
	mcg_group_t *g;
	mcg_file_t *f;
	pthread_t thread;
	char dir[256], path[300];
	long written;    /* bytes (atomic) */
	long errors;     /* writes that failed (atomic) */
	long peak_dirty; /* bytes: dirty + writeback, sampled 10 times a second */
} logger;

static unsigned char log_byte(long off) { return (unsigned char)(off * 2654435761u >> 24); }

static void *logger_main(void *arg)
{
	(void)arg;
	unsigned char *buf = malloc(LOG_CHUNK);
	if (!buf)
		return NULL;
	for (long off = 0; !stop_tenants; off = (off + LOG_CHUNK) % LOG_REGION) {
		for (long i = 0; i < LOG_CHUNK; i++)
			buf[i] = log_byte(off + i);
		ssize_t n = mcg_file_pwrite(logger.f, buf, LOG_CHUNK, off);
		if (n == LOG_CHUNK)
			__atomic_fetch_add(&logger.written, n, __ATOMIC_RELAXED);
		else
			__atomic_fetch_add(&logger.errors, 1, __ATOMIC_RELAXED);
	}
	free(buf);
	return NULL;
}

static int logger_setup(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(logger.dir, sizeof(logger.dir), "%s/memcg-demo.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(logger.dir))
		return -1;
	snprintf(logger.path, sizeof(logger.path), "%s/log", logger.dir);
	if (mcg_group_create(NULL, "logger", &logger.g) ||
	    mcg_group_write(logger.g, "memory.max", "32M") ||
	    mcg_group_write(logger.g, "memory.dirty_bytes", "4M") ||
	    mcg_group_write(logger.g, "memory.dirty_background_bytes", "1M"))
		return -1;
	mcg_file_opts_t o = {logger.g, 0};
	return mcg_file_open(logger.path, O_RDWR | O_CREAT | O_TRUNC, 0600, &o, &logger.f) ? -1 : 0;
}

/* The value of "@key N" in @buf, or 0. */
static long key_in(const char *buf, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, kl) && p[kl] == ' ')
			return atol(p + kl + 1);
	return 0;
}

/* Its dirty + writeback bytes now (one read of memory.stat: no page counted twice). */
static long logger_dirty(void)
{
	char buf[4096];
	if (mcg_group_read(logger.g, "memory.stat", buf, sizeof(buf)) <= 0)
		return 0;
	return key_in(buf, "file_dirty") + key_in(buf, "file_writeback");
}

static void logger_row(long wrote_in_second)
{
	char cur[16], max[16];
	fmt_bytes(cur, sizeof(cur), read_num(logger.g, "memory.current"));
	fmt_bytes(max, sizeof(max), read_num(logger.g, "memory.max"));
	printf("  %-8s %8s %7s %7s | dirty+writeback %4.1fM (limit %dM), wrote %6.1fM/s, "
	       "writer paused %ld ms in all\n",
	       "logger", cur, "-", max, (double)logger_dirty() / MIB, LOG_DIRTY_MIB,
	       (double)wrote_in_second / MIB, keyed(logger.g, "memory.stat", "dirty_throttled_ms"));
}

/* fsync, then read the file back: every byte as written.  0 or -1. */
static int logger_finish(long *checked)
{
	int err = mcg_file_fsync(logger.f);
	mcg_file_close(logger.f);
	*checked = 0;
	int fd = open(logger.path, O_RDONLY);
	unsigned char *buf = malloc(LOG_CHUNK);
	long size = __atomic_load_n(&logger.written, __ATOMIC_RELAXED);
	size = size < LOG_REGION ? size : LOG_REGION;
	for (long off = 0; fd >= 0 && buf && off + LOG_CHUNK <= size; off += LOG_CHUNK) {
		if (pread(fd, buf, LOG_CHUNK, off) != LOG_CHUNK)
			break;
		for (long i = 0; i < LOG_CHUNK; i++)
			if (buf[i] != log_byte(off + i))
				err = -EIO;
		*checked += LOG_CHUNK;
	}
	free(buf);
	if (fd >= 0)
		close(fd);
	unlink(logger.path);
	rmdir(logger.dir);
	mcg_file_drop_caches();
	return err || *checked < size ? -1 : 0;
}

/* ------------------------------------------------------------ setup and teardown */

static int setup(void)
{
	mcg_reclaim_init();
	entry_cache = mcg_cache_create("demo_entry", sizeof(struct entry), 0, MCG_CACHE_RECLAIMABLE,
	                               NULL);
	mcg_shrinker_ops_t ops = {.name = "demo-cache",
	                          .count_objects = cache_count,
	                          .scan_objects = cache_scan,
	                          .seeks = MCG_DEFAULT_SEEKS,
	                          .flags = MCG_SHRINKER_MEMCG_AWARE};
	if (!entry_cache || mcg_shrinker_create(&ops, &shrinker) ||
	    mcg_list_lru_create(shrinker, &lru) || mcg_shrinker_register(shrinker))
		return -1;
	if (mcg_group_create(NULL, "tenants", &parent) ||
	    mcg_group_write(parent, "memory.max", "192M"))
		return -1;
	for (int i = 0; i < NR_TENANTS; i++) {
		struct tenant *t = &tenants[i];
		if (mcg_group_create(parent, t->name, &t->g))
			return -1;
		if ((t->max && mcg_group_write(t->g, "memory.max", t->max)) ||
		    (t->high && mcg_group_write(t->g, "memory.high", t->high)) ||
		    (t->low && mcg_group_write(t->g, "memory.low", t->low)))
			return -1;
	}
	mcg_oom_set_policy(oom_policy, NULL);
	return logger_setup();
}

static void teardown(void)
{
	mcg_oom_set_policy(NULL, NULL);
	mcg_shrinker_unregister(shrinker);
	mcg_lru_link_t dispose;
	mcg_lru_link_init(&dispose);
	mcg_list_lru_walk(lru, isolate, &dispose, ~0UL);
	dispose_all(&dispose);
	for (int i = 0; i < NR_TENANTS; i++) {
		struct tenant *t = &tenants[i];
		long n = __atomic_exchange_n(&t->ws_pages, 0, __ATOMIC_RELAXED);
		if (n > 0)
			mcg_uncharge(t->g, (unsigned long)n);
		mcg_group_remove(t->g);
		mcg_group_put(t->g);
	}
	mcg_group_remove(parent);
	mcg_group_put(parent);
	mcg_group_remove(logger.g);
	mcg_group_put(logger.g);
	mcg_list_lru_destroy(lru);
	mcg_shrinker_destroy(shrinker);
	mcg_cache_destroy(entry_cache);
}

/* ------------------------------------------------------------ the command */

static void usage(FILE *f)
{
	fprintf(f, "usage: memcg demo [--seconds N] [--program | --server]\n"
	           "  Four tenants with limits and protections fill caches on top of\n"
	           "  working sets, one of them leaking; every second their memory and\n"
	           "  events, then what the limits did.  --program: the first demo (a\n"
	           "  python3 workload on memcg's allocator) instead.  --server: memcg-kvcache\n"
	           "  with three tenants, driven by redis-benchmark (20 s).\n");
}

int mcg_cmd_demo(int argc, char **argv)
{
	int seconds = 16;
	bool server = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--program")) {
			return mcg_demo_program();
		} else if (!strcmp(argv[i], "--server")) {
			server = true;
		} else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = atoi(argv[++i]);
			if (seconds < 1 || seconds > 600) {
				usage(stderr);
				return 2;
			}
		} else {
			usage(stderr);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (server)
		return mcg_demo_server(seconds == 16 ? 20 : seconds);
	if (setup()) {
		fprintf(stderr, "memcg demo: setup failed\n");
		return 1;
	}
	mcg_pressure_status_t ps;
	int perr = mcg_pressure_start(NULL);
	mcg_pressure_status(&ps);

	printf("memcg demo: four tenants and a file writer in one process, %d s\n\n", seconds);
	printf("  tenants   max 192M\n"
	       "   |- gold    max 96M, low 48M   working set 24M, cache +12M/s\n"
	       "   |- silver  max 64M, high 48M  working set 16M, cache +12M/s\n"
	       "   |- bronze  max 48M            working set  8M, cache +12M/s\n"
	       "   `- rogue   max 48M            working set +8M/s (leaks), cache +6M/s\n"
	       "  logger    max 32M, memory.dirty_bytes 4M: writes a file as fast as it can\n\n");
	if (perr)
		printf("global pressure: not started (%s)\n\n", strerror(-perr));
	else
		printf("global pressure: budget %.0fM from %s\n  PSI: %s\n  usage: %s\n\n",
		       (double)ps.budget / MIB, ps.budget_source, ps.psi_source, ps.usage_source);

	for (int i = 0; i < NR_TENANTS; i++)
		pthread_create(&tenants[i].thread, NULL, tenant_main, &tenants[i]);
	for (int i = 0; i < NR_TENANTS; i++)
		tenants[i].min_current = -1;
	pthread_create(&logger.thread, NULL, logger_main, NULL);
	long logged = 0;

	for (int s = 1; s <= seconds; s++) {
		/* Sample 10 times a second for the summary's min/peak. */
		for (int k = 0; k < 10; k++) {
			usleep(100000);
			for (int i = 0; i < NR_TENANTS; i++) {
				struct tenant *t = &tenants[i];
				long cur = read_num(t->g, "memory.current");
				if (cur > t->peak_current)
					t->peak_current = cur;
				if (s > 3 && (t->min_current < 0 || cur < t->min_current))
					t->min_current = cur;
			}
			long d = logger_dirty();
			if (d > logger.peak_dirty)
				logger.peak_dirty = d;
		}
		printf("t=%2ds     current    high     max | reclaimed   low  high   max   oom "
		       "oom_kill\n",
		       s);
		print_row("tenants", parent);
		for (int i = 0; i < NR_TENANTS; i++)
			print_row(tenants[i].name, tenants[i].g);
		long w = __atomic_load_n(&logger.written, __ATOMIC_RELAXED);
		logger_row(w - logged);
		logged = w;
	}
	stop_tenants = 1;
	for (int i = 0; i < NR_TENANTS; i++)
		pthread_join(tenants[i].thread, NULL);
	pthread_join(logger.thread, NULL);

	/* ---- the summary */
	printf("\nWhat the limits did:\n");
	long parent_peak = read_num(parent, "memory.peak");
	printf("  tenants: peak %.1fM under its max 192M; the four competed for it, and "
	       "reclaim took %.1fM back from their caches\n",
	       (double)parent_peak / MIB,
	       (double)keyed(parent, "memory.stat", "pgsteal") * 4096 / MIB);
	bool ok = parent_peak <= 192 * MIB + 64.0 * 4096 * 64;
	long rogue_oom = 0;
	for (int i = 0; i < NR_TENANTS; i++) {
		struct tenant *t = &tenants[i];
		long oom = keyed(t->g, "memory.events", "oom");
		long low = keyed(t->g, "memory.events", "low");
		long high = keyed(t->g, "memory.events", "high");
		long max = keyed(t->g, "memory.events", "max");
		double reclaimed = (double)keyed(t->g, "memory.stat", "pgsteal") * 4096 / MIB;
		printf("  %-7s ", t->name);
		if (t->low)
			printf("memory.low %s protected it: it never went below %.1fM after "
			       "warm-up "
			       "(low events %ld: reclaimed below low only when nothing else could "
			       "give); ",
			       t->low, (double)t->min_current / MIB, low);
		if (t->high && !t->leak_mib_s)
			printf("memory.high %s held it near %s (high events %ld); ", t->high,
			       t->high, high);
		if (!t->leak_mib_s)
			printf("peak %.1fM under max %s, %.1fM of cache reclaimed, %ld max events, "
			       "%ld OOM\n",
			       (double)t->peak_current / MIB, t->max, reclaimed, max, oom);
		else
			printf("leaked %.0fM of unreclaimable memory; reclaim took %.1fM of its "
			       "cache; at max %s: %ld max events, %ld OOM, killed %ld times by "
			       "the OOM policy (its working set released), %ld charges refused\n",
			       (double)t->ws_charged / PAGES_PER_MIB, reclaimed, t->max, max, oom,
			       t->kills, t->failed);
		if (!t->leak_mib_s && oom)
			ok = false;
		if (t->leak_mib_s)
			rogue_oom = oom;
	}
	if (ps.running) {
		mcg_pressure_status(&ps);
		printf("  global pressure: %lu checks, %lu over the high watermark (%.0fM), "
		       "%lu PSI events, %.1fM reclaimed\n",
		       ps.wakeups, ps.wakeups_watermark, (double)ps.high / MIB, ps.wakeups_psi,
		       (double)ps.reclaimed / MIB);
	}
	/* The logger: bounded dirty data, a paused writer, nothing lost. */
	long checked, log_oom = keyed(logger.g, "memory.events", "oom");
	long paused = keyed(logger.g, "memory.stat", "dirty_throttled_ms");
	double written = (double)__atomic_load_n(&logger.written, __ATOMIC_RELAXED) / MIB;
	double bound = LOG_DIRTY_MIB * 33.0 / 32 + 32.0 * 4096 / MIB;
	int lerr = logger_finish(&checked);
	printf("  logger  wrote %.0fM through memory.dirty_bytes %dM: its dirty + writeback "
	       "peaked at %.1fM (sampled 10/s; the bound is %.2fM), its writer was paused %ld ms "
	       "in all, %ld OOM; after fsync, %.0fM read back with read(2) %s\n",
	       written, LOG_DIRTY_MIB, (double)logger.peak_dirty / MIB, bound, paused, log_oom,
	       (double)checked / MIB, lerr ? "DIFFERED" : "as written");
	if (lerr || log_oom || logger.errors || (double)logger.peak_dirty / MIB > bound)
		ok = false;
	if (!ok)
		printf("  UNEXPECTED: a well-behaved tenant hit OOM, the parent exceeded its "
		       "max, or the logger's file or dirty bound was wrong.\n");
	else if (rogue_oom)
		printf("  Only the rogue tenant ran out of memory; the others kept working "
		       "within their limits.\n");
	else
		printf("  No tenant ran out of memory in %d s.\n", seconds);
	mcg_pressure_stop();
	teardown();
	return ok ? 0 : 1;
}
