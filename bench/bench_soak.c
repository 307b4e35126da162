/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_soak.c - `memcg bench soak [--minutes N | --seconds N | --smoke]
 * [--threads N] [--json]`: a long run of everything at once, then proof that
 * nothing was lost.
 *
 * The world: a parent group "soak" with memory.max = SOAK_PARENT_MAX and
 * SOAK_SLOTS tenant slots below it, each holding a group with its own
 * memory.max (a quarter of the parent's: together they ask for twice what
 * the parent allows, so both levels reclaim).  Workers (--threads, default
 * 4) each loop: take a slot's group (a reference), enter it and do a burst
 * of operations - accounted cache objects and kmalloc blocks (small, large,
 * realloc'd) kept in a private ring and freed in turn, mcg_charge() pages,
 * entries of a reclaimable accounted cache put on a memcg-aware list_lru
 * (freed only by its shrinker, i.e. by reclaim), reads of memory.stat, an
 * explicit mcg_reclaim(), limit changes, a private cache created, used and
 * destroyed, its own file through the page cache (written, read back
 * against a copy, fsynced, truncated; its pages charged to the group it is
 * in) - then leave.  One churn thread replaces slots' groups all the
 * time: the new group goes in, the old one is removed while workers are
 * still in it and still allocate in it; now and then it arms an I/O fault
 * (a backing read, write or sync fails with EIO or ENOSPC).  An OOM policy "kills" the tenant
 * over its limit: its workers free their private objects at their next step.
 * A further part of the library adds its work to worker_step()'s table.
 *
 * Through the run the main thread samples, once a second (--sample-ms), the
 * RSS and the parent's memory.current, and checks:
 *  - memory.current of the parent <= its memory.max (nothing is forced);
 *  - RSS <= RSS at start + 2 x SOAK_PARENT_MAX + SOAK_RSS_SLACK: the live
 *    bytes are charged, so bounded by the parent's limit; the rest is free
 *    objects waiting in CPU arrays and partly used slabs (at most as much
 *    again), and the sanitizer's and threads' own memory (the slack).
 * At the end, with every worker stopped: once fsync succeeds each file on
 * disk holds every byte written to it (a failed writeback lost nothing);
 * with the files closed, the caches dropped and every object freed: every
 * group's usage is 0, the root's is back to where it began, every cache is
 * empty and destroys, and once the slabs are shrunk and aged the mapped
 * bytes and the RSS are back within SOAK_MAPPED_SLACK and SOAK_RSS_END_SLACK
 * of the start (chunks kept for reuse, the threads' stacks), and every
 * cache holds as many objects as at the start but for at most
 * SOAK_META_OBJS (the library's tables, grown once; vectors of their slabs).  The series of samples
 * is printed (JSON rows with --json).  Exit status 0 only if every check held.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "memcg/debug.h"
#include "memcg/file.h"
#include "memcg/group.h"
#include "memcg/kmalloc.h"
#include "memcg/reclaim.h"
#include "memcg/slab.h"

#define SOAK_SLOTS 8
#define SOAK_PARENT_MAX (64L << 20)
#define SOAK_TENANT_MAX (SOAK_PARENT_MAX / 4)
#define SOAK_RSS_SLACK (64L << 20)
#define SOAK_MAPPED_SLACK (16L << 20)
#define SOAK_RSS_END_SLACK (16L << 20)
#define SOAK_META_OBJS                                                                             \
	32 /* objects the library's tables (and their slabs' vectors) keep once grown */
#define SOAK_MAX_CACHES 128

/* Under TSan the shadow of every address ever touched stays resident, and
 * large blocks come back at new addresses: RSS says nothing about the
 * library there, so neither RSS check applies (the series is still
 * reported); the release and ASan builds check both. */
#ifdef __SANITIZE_THREAD__
static const bool soak_tsan = true;
#else
static const bool soak_tsan = false;
#endif
#define SOAK_RING 1024 /* private objects a worker holds at most */
#define SOAK_BURST 256 /* operations per visit to a group */
#define SOAK_MAX_SAMPLES 4096
#define SOAK_FILE_MAX (256 << 10) /* bytes of a worker's file */
#define MCG_SOAK_MIN(a, b) ((a) < (b) ? (a) : (b))

struct slot {
	pthread_mutex_t lock;
	mcg_group_t *g;     /* the slot's reference */
	unsigned gen;       /* bumped on each replacement */
	atomic_uint killed; /* generation the OOM policy killed, +1; 0: none */
};

enum held_kind { H_CACHE, H_KMALLOC, H_CHARGE };
struct held {
	void *p;
	mcg_group_t *g; /* H_CHARGE: the group (referenced); else NULL */
	unsigned long pages;
	int slot;
	unsigned gen;
	enum held_kind kind;
};

struct entry { /* an object of the reclaimable cache, on the list_lru */
	mcg_lru_link_t link;
	unsigned long stamp;
};

struct worker {
	pthread_t tid;
	int id;
	uint64_t rng;
	struct held ring[SOAK_RING];
	unsigned head, n;
	unsigned long ops, allocs, enomem, charges, entries, reclaims, caches, oom_frees;
	/* its file through the page cache, charged to the group it is in, and
	 * what the file must hold */
	mcg_file_t *file;
	char path[64];
	uint8_t *copy;
	size_t size;
	unsigned long file_writes, file_reads, file_syncs, file_errors;
};

static struct {
	mcg_group_t *parent;
	struct slot slots[SOAK_SLOTS];
	mcg_cache_t *objs, *entries; /* accounted; entries also reclaimable */
	mcg_shrinker_t *shrinker;
	mcg_list_lru_t *lru;
	atomic_bool stop;
	atomic_ulong replaced, oom_kills, shrunk, shrink_calls, io_faults;
} S;

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ------------------------------------------------------------ the shrinker */

static enum mcg_lru_status isolate(mcg_lru_link_t *item, mcg_list_lru_one_t *l, void *dispose)
{
	mcg_list_lru_isolate_move(l, item, dispose);
	return MCG_LRU_REMOVED;
}

static unsigned long free_disposed(mcg_lru_link_t *dispose)
{
	unsigned long n = 0;
	while (dispose->next != dispose) {
		mcg_lru_link_t *l = dispose->next;
		dispose->next = l->next;
		l->next->prev = dispose;
		mcg_cache_free(S.entries, l); /* the link is the entry's first member */
		n++;
	}
	return n;
}

static unsigned long count_objects(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	return mcg_list_lru_shrink_count(S.lru, sc);
}

static unsigned long scan_objects(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	mcg_lru_link_t dispose = {&dispose, &dispose};
	mcg_list_lru_shrink_walk(S.lru, sc, isolate, &dispose);
	unsigned long n = free_disposed(&dispose);
	S.shrunk += n;
	S.shrink_calls++;
	return n;
}

/* ------------------------------------------------------------ the OOM policy */

static mcg_group_t *oom_policy(mcg_group_t *over, unsigned long nr_pages, void *arg)
{
	for (int i = 0; i < SOAK_SLOTS; i++) {
		struct slot *s = &S.slots[i];
		pthread_mutex_lock(&s->lock);
		bool hit = s->g == over;
		unsigned gen = s->gen;
		pthread_mutex_unlock(&s->lock);
		if (hit) {
			atomic_store(&s->killed, gen + 1);
			S.oom_kills++;
			return over;
		}
	}
	return NULL; /* the parent itself: reclaim has done what it can */
}

/* ------------------------------------------------------------ groups */

static mcg_group_t *slot_group_new(int i, unsigned gen)
{
	char name[32];
	snprintf(name, sizeof(name), "t%d-%u", i, gen);
	mcg_group_t *g;
	int err = mcg_group_create(S.parent, name, &g);
	if (err) {
		fprintf(stderr, "soak: create %s: %s\n", name, strerror(-err));
		exit(1);
	}
	char max[32];
	snprintf(max, sizeof(max), "%ld", SOAK_TENANT_MAX);
	mcg_group_write(g, "memory.max", max);
	mcg_group_write(g, "memory.low", i % 2 ? "2M" : "0");
	return g;
}

/* Replace slot @i's group: the old one is removed while workers may be in it. */
static void slot_replace(int i)
{
	struct slot *s = &S.slots[i];
	pthread_mutex_lock(&s->lock);
	mcg_group_t *old = s->g;
	s->g = slot_group_new(i, ++s->gen);
	pthread_mutex_unlock(&s->lock);
	if (mcg_group_remove(old)) {
		fprintf(stderr, "soak: remove failed\n");
		exit(1);
	}
	mcg_group_put(old);
	S.replaced++;
}

static mcg_group_t *slot_take(int i, unsigned *gen)
{
	struct slot *s = &S.slots[i];
	pthread_mutex_lock(&s->lock);
	mcg_group_t *g = s->g;
	mcg_group_get(g);
	*gen = s->gen;
	pthread_mutex_unlock(&s->lock);
	return g;
}

static void *churn_main(void *arg)
{
	uint64_t r = 0x9e3779b97f4a7c15ull;
	for (unsigned long i = 0; !S.stop; i++) {
		slot_replace((int)(rnd(&r) % SOAK_SLOTS));
		if (i % 32 == 0) { /* a backing read, write or sync soon fails */
			uint64_t f = rnd(&r);
			mcg_fault_inject_io(1 + f % 64, 0, f & 1 ? EIO : ENOSPC,
			                    MCG_FAULT_IO_READ | MCG_FAULT_IO_WRITE |
			                            MCG_FAULT_IO_SYNC);
			S.io_faults++;
		}
		usleep(2000 + rnd(&r) % 8000);
	}
	return NULL;
}

/* ------------------------------------------------------------ workers */

static void held_free(struct held *h)
{
	switch (h->kind) {
	case H_CACHE: mcg_cache_free(S.objs, h->p); break;
	case H_KMALLOC: mcg_free(h->p); break;
	case H_CHARGE:
		mcg_uncharge(h->g, h->pages);
		mcg_group_put(h->g);
		break;
	}
}

static void ring_pop(struct worker *w)
{
	struct held *h = &w->ring[w->head];
	held_free(h);
	w->head = (w->head + 1) % SOAK_RING;
	w->n--;
}

static void ring_push(struct worker *w, struct held h)
{
	if (w->n == SOAK_RING)
		ring_pop(w);
	w->ring[(w->head + w->n) % SOAK_RING] = h;
	w->n++;
}

/* The OOM policy killed this slot's tenant: free what we hold of it. */
static void ring_kill(struct worker *w, int slot, unsigned gen)
{
	unsigned keep = 0;
	struct held tmp[SOAK_RING];
	for (unsigned k = 0; k < w->n; k++) {
		struct held *h = &w->ring[(w->head + k) % SOAK_RING];
		if (h->slot == slot && h->gen == gen) {
			held_free(h);
			w->oom_frees++;
		} else {
			tmp[keep++] = *h;
		}
	}
	memcpy(w->ring, tmp, keep * sizeof(tmp[0]));
	w->head = 0;
	w->n = keep;
}

/* A file operation: write, read back against the copy, fsync, truncate.
 * Errors are the injected ones (and ENOMEM at a limit): nothing is lost. */
static void file_step(struct worker *w, uint64_t r)
{
	static __thread uint8_t buf[16384];
	size_t off = (r >> 16) % SOAK_FILE_MAX, len = 1 + (r >> 36) % sizeof(buf);
	if (len > SOAK_FILE_MAX - off)
		len = SOAK_FILE_MAX - off;
	switch ((r >> 8) % 8) {
	case 0:
	case 1:
	case 2:
	case 3: {
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)(r + i);
		ssize_t n = mcg_file_pwrite(w->file, buf, len, (off_t)off);
		if (n < 0) {
			w->file_errors++;
			return;
		}
		if (off > w->size)
			memset(w->copy + w->size, 0, off - w->size);
		memcpy(w->copy + off, buf, (size_t)n);
		if (n > 0 && off + (size_t)n > w->size)
			w->size = off + (size_t)n;
		w->file_writes++;
		return;
	}
	case 4:
	case 5: {
		ssize_t n = mcg_file_pread(w->file, buf, len, (off_t)off);
		if (n < 0) {
			w->file_errors++;
			return;
		}
		size_t want = off >= w->size ? 0 : MCG_SOAK_MIN(w->size - off, len);
		if ((size_t)n > want || memcmp(buf, w->copy + off, (size_t)n)) {
			fprintf(stderr, "soak: worker %d read back other bytes at %zu\n", w->id,
			        off);
			exit(1);
		}
		w->file_reads++;
		return;
	}
	case 6:
		if (mcg_file_fsync(w->file))
			w->file_errors++;
		w->file_syncs++;
		return;
	default:
		if ((r >> 11) % 8 == 0 && mcg_file_truncate(w->file, (off_t)off) == 0) {
			if (off > w->size)
				memset(w->copy + w->size, 0, off - w->size);
			w->size = off;
		}
		return;
	}
}

/* One operation inside group @g (entered) of slot @slot. */
static void worker_step(struct worker *w, mcg_group_t *g, int slot, unsigned gen)
{
	uint64_t r = rnd(&w->rng);
	unsigned what = r % 100;
	w->ops++;
	if (what < 30) { /* an accounted cache object (current group) */
		void *p = mcg_cache_alloc(S.objs);
		if (!p) {
			w->enomem++;
			return;
		}
		memset(p, (int)w->id, 64);
		ring_push(w, (struct held){p, NULL, 0, slot, gen, H_CACHE});
		w->allocs++;
	} else if (what < 50) { /* a kmalloc block: small, page sized or large */
		size_t size = (r >> 8) % 4 == 0    ? 4096 + (r >> 16) % 60000
		              : (r >> 8) % 64 == 1 ? 300000 + (r >> 16) % 200000
		                                   : 1 + (r >> 16) % 1024;
		void *p = (r >> 40) % 2 ? mcg_malloc_account(size, NULL)
		                        : mcg_calloc_account(1, size, g);
		if (!p) {
			w->enomem++;
			return;
		}
		if ((r >> 44) % 8 == 0) { /* realloc: the charge moves with it */
			void *q = mcg_realloc(p, size / 2 + 1);
			if (q)
				p = q;
		}
		memset(p, 0x5a, size / 2 + 1 < size ? size / 2 + 1 : size);
		ring_push(w, (struct held){p, NULL, 0, slot, gen, H_KMALLOC});
		w->allocs++;
	} else if (what < 55) { /* pages through mcg_charge() */
		unsigned long pages = 1 + (r >> 8) % 16;
		if (mcg_charge(g, pages, (r >> 16) % 4 == 0 ? MCG_CHARGE_NOWAIT : 0)) {
			w->enomem++;
			return;
		}
		mcg_group_get(g);
		ring_push(w, (struct held){NULL, g, pages, slot, gen, H_CHARGE});
		w->charges++;
	} else if (what < 85) { /* a cache entry: freed only by reclaim */
		struct entry *e = mcg_cache_alloc(S.entries);
		if (!e) {
			w->enomem++;
			return;
		}
		mcg_lru_link_init(&e->link);
		e->stamp = w->ops;
		if (mcg_list_lru_add(S.lru, &e->link, 0, g) != 1) {
			mcg_cache_free(S.entries, e);
			return;
		}
		w->entries++;
	} else if (what < 92) { /* give back in turn */
		if (w->n)
			ring_pop(w);
	} else if (what < 95) {
		file_step(w, r);
	} else if (what < 97) {
		char buf[2048];
		mcg_group_read(g, "memory.stat", buf, sizeof(buf));
		mcg_group_read(S.parent, "memory.events", buf, sizeof(buf));
	} else if (what < 98) {
		mcg_reclaim(g, 8, (r >> 8) % 2 ? MCG_RECLAIM_PROACTIVE : 0);
		w->reclaims++;
	} else if (what < 99) { /* the tenant's limit moves; the parent's holds */
		char max[32];
		snprintf(max, sizeof(max), "%ld",
		         (r >> 8) % 2 ? SOAK_TENANT_MAX : SOAK_TENANT_MAX / 8);
		mcg_group_write(g, "memory.max", max);
		mcg_group_write(g, "memory.high", (r >> 9) % 4 ? "max" : "12M");
	} else { /* a private cache: created, used, destroyed */
		mcg_cache_t *c = mcg_cache_create("soak-private", 32 + (r >> 8) % 512, 0,
		                                  MCG_CACHE_ACCOUNT, NULL);
		if (!c)
			return;
		void *objs[32];
		int n = 0;
		for (; n < 32; n++)
			if (!(objs[n] = mcg_cache_alloc(c)))
				break;
		while (n)
			mcg_cache_free(c, objs[--n]);
		if (mcg_cache_destroy(c)) {
			fprintf(stderr, "soak: private cache busy at destroy\n");
			exit(1);
		}
		w->caches++;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	while (!S.stop) {
		int slot = (int)(rnd(&w->rng) % SOAK_SLOTS);
		unsigned gen;
		mcg_group_t *g = slot_take(slot, &gen);
		mcg_group_t *prev = mcg_group_enter(g);
		for (int k = 0; k < SOAK_BURST && !S.stop; k++) {
			unsigned killed = atomic_exchange(&S.slots[slot].killed, 0);
			if (killed)
				ring_kill(w, slot, killed - 1);
			worker_step(w, g, slot, gen);
		}
		mcg_group_leave(prev);
		mcg_group_put(g);
	}
	while (w->n)
		ring_pop(w);
	return NULL;
}

/* ------------------------------------------------------------ the run */

struct sample {
	double t;
	long rss_kib, usage_kib, entries;
};

static long read_current(mcg_group_t *g)
{
	char buf[64];
	if (mcg_group_read(g, "memory.current", buf, sizeof(buf)) <= 0)
		return -1;
	return atol(buf);
}

/* Active objects per cache, from mcg_slabinfo_write()'s text. */
struct cache_count {
	char name[40];
	long active;
};

static int slab_snapshot(struct cache_count *out, int max)
{
	static char text[1 << 16];
	int fd[2], n = 0;
	if (pipe(fd))
		return 0;
	mcg_slabinfo_write(fd[1]);
	close(fd[1]);
	ssize_t r, len = 0;
	while ((r = read(fd[0], text + len, sizeof(text) - 1 - (size_t)len)) > 0)
		len += r;
	close(fd[0]);
	text[len] = '\0';
	for (char *l = text; l && *l && n < max; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (*l != '#' && strncmp(l, "slabinfo", 8) &&
		    sscanf(l, "%39s %ld", out[n].name, &out[n].active) == 2)
			n++;
	return n;
}

static long snapshot_active(const struct cache_count *c, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(c[i].name, name))
			return c[i].active;
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: memcg bench soak [--minutes N | --seconds N | --smoke] [--threads N]"
	        " [--sample-ms N] [--json]\n");
}

int bench_soak_main(int argc, char **argv)
{
	double seconds = 60;
	int threads = 4, sample_ms = 1000;
	bool json = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--minutes") && i + 1 < argc)
			seconds = atof(argv[++i]) * 60;
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--smoke"))
			seconds = 4, sample_ms = 250;
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--sample-ms") && i + 1 < argc)
			sample_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--json"))
			json = true;
		else {
			usage();
			return 2;
		}
	}
	if (seconds <= 0 || threads < 1 || threads > 64 || sample_ms < 10) {
		usage();
		return 2;
	}

	mcg_group_drain_stocks();
	long root0 = read_current(mcg_group_root());
	long rss0 = bench_rss_kib();
	size_t mapped0 = mcg_os_mapped_bytes();
	static struct cache_count caches0[SOAK_MAX_CACHES], caches1[SOAK_MAX_CACHES];
	int ncaches0 = slab_snapshot(caches0, SOAK_MAX_CACHES);

	S.objs = mcg_cache_create("soak-objs", 192, 0, MCG_CACHE_ACCOUNT, NULL);
	S.entries = mcg_cache_create("soak-entries", 256, 0,
	                             MCG_CACHE_ACCOUNT | MCG_CACHE_RECLAIMABLE, NULL);
	if (!S.objs || !S.entries ||
	    mcg_shrinker_create(&(mcg_shrinker_ops_t){.name = "soak",
	                                              .count_objects = count_objects,
	                                              .scan_objects = scan_objects,
	                                              .flags = MCG_SHRINKER_MEMCG_AWARE},
	                        &S.shrinker) ||
	    mcg_list_lru_create(S.shrinker, &S.lru) || mcg_shrinker_register(S.shrinker) ||
	    mcg_group_create(NULL, "soak", &S.parent)) {
		fprintf(stderr, "soak: setup failed\n");
		return 1;
	}
	char max[32];
	snprintf(max, sizeof(max), "%ld", SOAK_PARENT_MAX);
	mcg_group_write(S.parent, "memory.max", max);
	for (int i = 0; i < SOAK_SLOTS; i++) {
		pthread_mutex_init(&S.slots[i].lock, NULL);
		S.slots[i].g = slot_group_new(i, 0);
	}
	mcg_oom_set_policy(oom_policy, NULL);

	struct worker *ws = calloc((size_t)threads, sizeof(*ws));
	for (int i = 0; i < threads; i++) {
		ws[i].id = i;
		ws[i].rng = 0x2545f4914f6cdd1dull * (uint64_t)(i + 1);
		snprintf(ws[i].path, sizeof(ws[i].path), "/tmp/memcg-soak-%d-%d", (int)getpid(), i);
		ws[i].copy = calloc(1, SOAK_FILE_MAX);
		if (!ws[i].copy || mcg_file_open(ws[i].path, O_RDWR | O_CREAT | O_TRUNC, 0600, NULL,
		                                 &ws[i].file)) {
			fprintf(stderr, "soak: cannot open %s\n", ws[i].path);
			return 1;
		}
		bench_start_thread(&ws[i].tid, worker_main, &ws[i]);
	}
	pthread_t churn;
	bench_start_thread(&churn, churn_main, NULL);

	static struct sample series[SOAK_MAX_SAMPLES];
	int ns = 0, every = 1;
	long rss_bound = rss0 + (2 * SOAK_PARENT_MAX + SOAK_RSS_SLACK) / 1024;
	long rss_max = 0, over_max = 0, over_rss = 0;
	uint64_t t0 = bench_now_ns();
	for (;;) {
		usleep((useconds_t)sample_ms * 1000);
		double t = (double)(bench_now_ns() - t0) / 1e9;
		long rss = bench_rss_kib(), cur = read_current(S.parent);
		rss_max = rss > rss_max ? rss : rss_max;
		if (cur > SOAK_PARENT_MAX) {
			over_max++;
			fprintf(stderr, "soak: t=%.1f s parent memory.current %ld > max %ld\n", t,
			        cur, SOAK_PARENT_MAX);
		}
		if (!soak_tsan && rss > rss_bound) {
			over_rss++;
			fprintf(stderr, "soak: t=%.1f s RSS %ld KiB > bound %ld KiB\n", t, rss,
			        rss_bound);
		}
		if (ns == SOAK_MAX_SAMPLES) { /* keep every other sample: a long run fits */
			for (int k = 0; k < ns / 2; k++)
				series[k] = series[2 * k];
			ns /= 2;
			every *= 2;
		}
		static long tick;
		if (tick++ % every == 0)
			series[ns++] = (struct sample){t, rss, cur / 1024,
			                               (long)mcg_list_lru_count(S.lru)};
		if (t >= seconds)
			break;
	}
	S.stop = true;
	for (int i = 0; i < threads; i++)
		pthread_join(ws[i].tid, NULL);
	pthread_join(churn, NULL);
	double elapsed = (double)(bench_now_ns() - t0) / 1e9;

	/* The files: once fsync succeeds, each holds every byte written to it. */
	mcg_fault_inject_io(0, 0, 0, 0);
	int bad = 0;
	for (int i = 0; i < threads; i++) {
		struct worker *w = &ws[i];
		int err = mcg_file_fsync(w->file); /* an error of before, reported once */
		if (err)
			err = mcg_file_fsync(w->file);
		mcg_file_close(w->file);
		int fd = open(w->path, O_RDONLY);
		struct stat sb;
		uint8_t *disk = malloc(SOAK_FILE_MAX);
		bool same = !err && fd >= 0 && disk && fstat(fd, &sb) == 0 &&
		            (size_t)sb.st_size == w->size &&
		            pread(fd, disk, w->size, 0) == (ssize_t)w->size &&
		            !memcmp(disk, w->copy, w->size);
		if (!same) {
			fprintf(stderr, "soak: worker %d's file lost data (fsync %d)\n", i, err);
			bad++;
		}
		free(disk);
		if (fd >= 0)
			close(fd);
		unlink(w->path);
		free(w->copy);
	}
	mcg_file_drop_caches();

	/* Everything back: the entries, the groups, the caches. */
	mcg_lru_link_t dispose = {&dispose, &dispose};
	mcg_list_lru_walk(S.lru, isolate, &dispose, ~0ul);
	unsigned long left_entries = free_disposed(&dispose);
	mcg_oom_set_policy(NULL, NULL);
	mcg_group_drain_stocks();
	for (int i = 0; i < SOAK_SLOTS; i++) {
		long u = read_current(S.slots[i].g);
		if (u != 0) {
			fprintf(stderr, "soak: slot %d memory.current %ld at rest, not 0\n", i, u);
			bad++;
		}
		mcg_group_remove(S.slots[i].g);
		mcg_group_put(S.slots[i].g);
	}
	long parent_end = read_current(S.parent);
	if (parent_end != 0) {
		fprintf(stderr, "soak: parent memory.current %ld at rest, not 0\n", parent_end);
		bad++;
	}
	mcg_group_remove(S.parent);
	mcg_group_put(S.parent);
	mcg_shrinker_destroy(S.shrinker);
	mcg_list_lru_destroy(S.lru);
	mcg_cache_stats_t st1, st2;
	mcg_cache_stats(S.objs, &st1);
	mcg_cache_stats(S.entries, &st2);
	if (st1.active_objs || st2.active_objs || mcg_cache_destroy(S.objs) ||
	    mcg_cache_destroy(S.entries)) {
		fprintf(stderr, "soak: caches not empty at the end (%zu, %zu objects)\n",
		        st1.active_objs, st2.active_objs);
		bad++;
	}
	mcg_group_drain_stocks();
	long root_end = read_current(mcg_group_root());
	if (root_end != root0) {
		fprintf(stderr, "soak: root memory.current %ld at the end, %ld at the start\n",
		        root_end, root0);
		bad++;
	}
	/* Memory back to the OS: free objects to their slabs, empty slabs and
	 * chunks unmapped (a chunk goes at its second idle aging step). */
	mcg_slab_shrink_all();
	for (int k = 0; k < 3; k++)
		mcg_slab_reap_all();
	size_t mapped_end = mcg_os_mapped_bytes();
	/* No object lost: every cache holds what it held at the start, but for a
	 * few objects of the library's own tables, grown once. */
	int ncaches1 = slab_snapshot(caches1, SOAK_MAX_CACHES);
	long grown = 0;
	for (int i = 0; i < ncaches1; i++) {
		long d = caches1[i].active - snapshot_active(caches0, ncaches0, caches1[i].name);
		if (d > 0) {
			grown += d;
			fprintf(stderr, "soak: cache %s holds %ld objects more than at the start\n",
			        caches1[i].name, d);
		}
	}
	if (grown > SOAK_META_OBJS) {
		fprintf(stderr, "soak: %ld objects more than at the start (at most %d expected)\n",
		        grown, SOAK_META_OBJS);
		bad++;
	}
	long rss_end = bench_rss_kib();
	if (!soak_tsan && rss_end > rss0 + SOAK_RSS_END_SLACK / 1024) {
		fprintf(stderr, "soak: RSS %ld KiB at the end, %ld at the start\n", rss_end, rss0);
		bad++;
	}
	if (mapped_end > mapped0 + SOAK_MAPPED_SLACK) {
		fprintf(stderr, "soak: %zu bytes mapped at the end, %zu at the start\n", mapped_end,
		        mapped0);
		bad++;
	}

	unsigned long ops = 0, allocs = 0, enomem = 0, charges = 0, entries = 0, reclaims = 0,
	              caches = 0, oom_frees = 0, fw = 0, fr = 0, fs = 0, fe = 0;
	for (int i = 0; i < threads; i++) {
		ops += ws[i].ops, allocs += ws[i].allocs, enomem += ws[i].enomem;
		charges += ws[i].charges, entries += ws[i].entries, reclaims += ws[i].reclaims;
		caches += ws[i].caches, oom_frees += ws[i].oom_frees;
		fw += ws[i].file_writes, fr += ws[i].file_reads, fs += ws[i].file_syncs;
		fe += ws[i].file_errors;
	}
	free(ws);

	if (json) {
		for (int k = 0; k < ns; k++) {
			char extra[96];
			snprintf(extra, sizeof(extra),
			         "\"t\":%.1f,\"usage_kib\":%ld,\"entries\":%ld", series[k].t,
			         series[k].usage_kib, series[k].entries);
			bench_emit_json("soak", "rss", extra, (double)series[k].rss_kib, "KiB");
		}
		char extra[512];
		snprintf(extra, sizeof(extra),
		         "\"seconds\":%.0f,\"threads\":%d,\"ops\":%lu,\"allocs\":%lu,"
		         "\"enomem\":%lu,\"groups_replaced\":%lu,\"oom_kills\":%lu,"
		         "\"shrunk\":%lu,\"rss_max_kib\":%ld,\"rss_bound_kib\":%ld,"
		         "\"rss_end_kib\":%ld,\"mapped_end\":%zu,\"over_max\":%ld,"
		         "\"over_rss\":%ld",
		         elapsed, threads, ops, allocs, enomem, (unsigned long)S.replaced,
		         (unsigned long)S.oom_kills, (unsigned long)S.shrunk, rss_max, rss_bound,
		         rss_end, mapped_end, over_max, over_rss);
		bench_emit_json("soak", "failures", extra, bad + over_max + over_rss, "count");
	} else {
		printf("memcg bench soak: %.0f s, %d workers + churn, parent max %ld MiB, %d "
		       "tenant "
		       "slots of %ld MiB\n",
		       elapsed, threads, SOAK_PARENT_MAX >> 20, SOAK_SLOTS, SOAK_TENANT_MAX >> 20);
		printf("RSS bound: RSS(0) + 2 x parent max + %ld MiB = %ld KiB\n",
		       SOAK_RSS_SLACK >> 20, rss_bound);
		printf("%8s %10s %12s %9s\n", "t (s)", "RSS KiB", "parent KiB", "entries");
		for (int k = 0; k < ns; k++)
			printf("%8.1f %10ld %12ld %9ld\n", series[k].t, series[k].rss_kib,
			       series[k].usage_kib, series[k].entries);
		printf("ops %lu: allocs %lu, ENOMEM %lu, charges %lu, entries %lu (%lu freed by "
		       "%lu shrinker calls, %lu at the end), reclaims %lu, private caches %lu\n",
		       ops, allocs, enomem, charges, entries, (unsigned long)S.shrunk,
		       (unsigned long)S.shrink_calls, left_entries, reclaims, caches);
		printf("files: %lu writes, %lu reads checked, %lu fsyncs, %lu errors from %lu "
		       "injected I/O faults; every byte on disk at the end\n",
		       fw, fr, fs, fe, (unsigned long)S.io_faults);
		printf("groups replaced while in use %lu, OOM kills %lu (%lu objects freed)\n",
		       (unsigned long)S.replaced, (unsigned long)S.oom_kills, oom_frees);
		printf("RSS max %ld KiB (bound %ld); parent over max %ld times; RSS over bound %ld "
		       "times\n",
		       rss_max, rss_bound, over_max, over_rss);
		printf("at rest: every group's memory.current 0, root %ld (start %ld), caches "
		       "empty: %s; objects beyond the start %ld (library tables); mapped %zu bytes "
		       "(start %zu), RSS %ld KiB (start %ld)\n",
		       root_end, root0, bad ? "NO (see above)" : "yes", grown, mapped_end, mapped0,
		       rss_end, rss0);
		printf("%s\n", bad + over_max + over_rss ? "FAIL" : "PASS");
	}
	return bad + over_max + over_rss ? 1 : 0;
}
