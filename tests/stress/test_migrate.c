/* SPDX-License-Identifier: MIT */
/*
 * test_migrate.c - the per-CPU fast path under forced migration and
 * preemption, the races no sanitizer can see in rseq sections.
 *
 * More threads than CPUs; each hops to another CPU with sched_setaffinity
 * every few hundred operations while allocating (a cache and kmalloc),
 * freeing, and passing objects to other threads through mailboxes; a thread
 * sends SIGUSR1 (no-op handler) to random workers all the time, which aborts
 * rseq sections in flight.
 *
 * Ownership check: word 1 of every object is its owner tag, claimed with a
 * compare-and-swap from 0 when the allocator hands the object out and reset
 * to 0 just before it is freed.  An object handed to two owners at once
 * fails the CAS.  The rest of the object carries a pattern of (address,
 * owner) checked before free: writes did not collide.  Half the cache's
 * objects are accounted to one of two groups (slab/account.h: freed, they
 * stay charged in the CPU arrays until popped or flushed).  At the end every count is exact: no
 * live object, both groups' memory.current 0, shrink returns every slab,
 * the page allocator and the large mappings back where they started.
 *
 * Runs in the native mode, then again with MCG_RSEQ=0 (TSan builds always
 * use the locked path).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memcg/debug.h"
#include "memcg/group.h"
#include "memcg/kmalloc.h"
#include "memcg/memcg.h"
#include "memcg/slab.h"
#include "os/os.h"
#include "page/large.h"
#include "page/pages.h"
#include "slab/slab.h"
#include "cache_rest.h"
#include "chunk_count.h"
#include "test.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

#define MAX_THREADS 64
#define HELD 48
#define MAILBOXES 256
#define TAG_MAILBOX 0xffffu

static mcg_cache_t *cache;
static mcg_group_t *groups[2];
static double run_seconds;
static int nthreads;
static volatile int stop;
static pthread_t workers[MAX_THREADS];
static void *_Atomic mailbox[MAILBOXES];
static unsigned long errors_double, errors_pattern, errors_null, reports_seen;
static unsigned long ops_total, hops_total, signals_total, large_total;

static void on_report(const mcg_report_t *r)
{
	__atomic_add_fetch(&reports_seen, 1, __ATOMIC_RELAXED);
	fprintf(stderr, "unexpected report: %s of %p in %s\n", mcg_report_kind_name(r->kind),
	        r->addr, r->cache);
}

static void on_usr1(int sig) { (void)sig; }

struct obj {
	uint64_t link;  /* the allocator's free link lives here (cache objects) */
	uint64_t owner; /* 0 free, thread id + 1, or TAG_MAILBOX */
	uint64_t pattern[6];
};

struct held {
	struct obj *p;
	size_t size; /* 0: cache object */
};

static uint64_t pattern_of(const struct obj *o, uint64_t owner, int i)
{
	return ((uint64_t)(uintptr_t)o * 0x9e3779b97f4a7c15ull) ^ (owner << 48) ^ (uint64_t)i;
}

static unsigned words_of(size_t size)
{
	size_t w = (size ? size : sizeof(struct obj)) / 8;
	return w < 2 ? 0 : (unsigned)MCG_MIN(w - 2, 6);
}

/* Claim a new object: owner 0 -> @me; fill its pattern. */
static void claim(struct obj *o, size_t size, uint64_t me)
{
	uint64_t expect = 0;
	if (!__atomic_compare_exchange_n(&o->owner, &expect, me, false, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE))
		__atomic_add_fetch(&errors_double, 1, __ATOMIC_RELAXED);
	unsigned w = words_of(size);
	for (unsigned i = 0; i < w; i++)
		o->pattern[i] = pattern_of(o, me, (int)i);
}

static void check_pattern(struct obj *o, size_t size, uint64_t owner)
{
	unsigned w = words_of(size);
	for (unsigned i = 0; i < w; i++)
		if (o->pattern[i] != pattern_of(o, owner, (int)i)) {
			__atomic_add_fetch(&errors_pattern, 1, __ATOMIC_RELAXED);
			return;
		}
}

/* Give up @o: check it is ours and intact, clear the tag, free it. */
static void release(struct obj *o, size_t size, uint64_t me)
{
	if (__atomic_load_n(&o->owner, __ATOMIC_ACQUIRE) != me)
		__atomic_add_fetch(&errors_double, 1, __ATOMIC_RELAXED);
	check_pattern(o, size, me);
	__atomic_store_n(&o->owner, 0, __ATOMIC_RELEASE);
	if (size)
		mcg_free(o);
	else
		mcg_cache_free(cache, o);
}

static uint64_t rnd_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Mailbox entries are tagged pointers: low bit set = kmalloc'd, size in the object. */
struct mail {
	struct obj o;
	uint64_t size;
};

static void *worker(void *arg)
{
	uint64_t me = (uint64_t)(uintptr_t)arg + 1;
	uint64_t rs = me * 0x2545f4914f6cdd1dull;
	struct held held[HELD];
	int nheld = 0;
	cpu_set_t allowed;
	sched_getaffinity(0, sizeof(allowed), &allowed);
	int ncpu = CPU_COUNT(&allowed);
	unsigned long ops = 0, hops = 0, large = 0;
	int next_hop = 100 + (int)(rnd_next(&rs) % 400);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		uint64_t r = rnd_next(&rs);
		ops++;
		if (--next_hop == 0) {
			next_hop = 100 + (int)(r % 400);
			int k = (int)((r >> 20) % (uint64_t)ncpu), cpu = -1;
			for (int c = 0; c < CPU_SETSIZE; c++)
				if (CPU_ISSET(c, &allowed) && k-- == 0) {
					cpu = c;
					break;
				}
			cpu_set_t one;
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			sched_setaffinity(0, sizeof(one), &one);
			hops++;
		}
		unsigned what = (unsigned)(r >> 8) % 16;
		if (what < 7 && nheld < HELD) {
			struct obj *o;
			size_t size = 0;
			if (what < 4) {
				o = (r >> 50) & 1
				            ? mcg_cache_alloc_account(cache, groups[(r >> 51) & 1])
				            : mcg_cache_alloc(cache);
			} else {
				size = (what == 6 && (r >> 40) % 512 == 0)
				               ? MCG_KMALLOC_MAX_CACHE_SIZE + (r >> 32) % 100000
				               : sizeof(struct mail) + (r >> 32) % 600;
				if (size > MCG_KMALLOC_MAX_CACHE_SIZE)
					large++;
				o = mcg_malloc(size);
			}
			if (!o) {
				__atomic_add_fetch(&errors_null, 1, __ATOMIC_RELAXED);
				continue;
			}
			claim(o, size, me);
			held[nheld++] = (struct held){o, size};
		} else if (what < 13 && nheld > 0) {
			int i = (int)((r >> 24) % (uint64_t)nheld);
			release(held[i].p, held[i].size, me);
			held[i] = held[--nheld];
		} else if (nheld > 0) {
			/* Pass an object through a mailbox; take what was there. */
			int i = (int)((r >> 24) % (uint64_t)nheld);
			struct obj *o = held[i].p;
			size_t size = held[i].size;
			if (size && size < sizeof(struct mail))
				continue;
			check_pattern(o, size, me);
			uint64_t expect = me;
			if (!__atomic_compare_exchange_n(&o->owner, &expect, TAG_MAILBOX, false,
			                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				__atomic_add_fetch(&errors_double, 1, __ATOMIC_RELAXED);
			if (size)
				((struct mail *)o)->size = size;
			else
				o = (struct obj *)((uintptr_t)o | 1); /* cache object */
			held[i] = held[--nheld];
			void *got = __atomic_exchange_n(&mailbox[(r >> 40) % MAILBOXES], o,
			                                __ATOMIC_ACQ_REL);
			if (got) {
				bool is_cache = (uintptr_t)got & 1;
				struct obj *g = (struct obj *)((uintptr_t)got & ~(uintptr_t)1);
				size_t gs = is_cache ? 0 : ((struct mail *)g)->size;
				uint64_t e = TAG_MAILBOX;
				if (!__atomic_compare_exchange_n(&g->owner, &e, me, false,
				                                 __ATOMIC_ACQ_REL,
				                                 __ATOMIC_ACQUIRE))
					__atomic_add_fetch(&errors_double, 1, __ATOMIC_RELAXED);
				unsigned w = words_of(gs);
				for (unsigned k = 0; k < w; k++)
					g->pattern[k] = pattern_of(g, me, (int)k);
				held[nheld++] = (struct held){g, gs};
			}
		}
	}
	for (int i = 0; i < nheld; i++)
		release(held[i].p, held[i].size, me);
	__atomic_add_fetch(&ops_total, ops, __ATOMIC_RELAXED);
	__atomic_add_fetch(&hops_total, hops, __ATOMIC_RELAXED);
	__atomic_add_fetch(&large_total, large, __ATOMIC_RELAXED);
	return NULL;
}

static void *signaller(void *arg)
{
	(void)arg;
	uint64_t rs = 88172645463325252ull;
	unsigned long sent = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		pthread_kill(workers[rnd_next(&rs) % (uint64_t)nthreads], SIGUSR1);
		sent++;
		struct timespec ts = {0, 20000};
		nanosleep(&ts, NULL);
	}
	signals_total = sent;
	return NULL;
}

/* The library's own caches: kmalloc's and the objcg vectors'. */
static bool is_internal(const struct mcg_cache *c)
{
	return !strncmp(c->name, "kmalloc-", 8) || !strncmp(c->name, "objcg-vec-", 10);
}

static size_t kmalloc_active(void)
{
	size_t n = 0;
	mcg_lock(&mcg_cache_list_lock);
	mcg_list_for_each (pos, &mcg_cache_list) {
		struct mcg_cache *c = mcg_list_entry(pos, struct mcg_cache, link);
		if (is_internal(c)) {
			mcg_cache_stats_t st;
			mcg_cache_stats(c, &st);
			n += st.active_objs;
		}
	}
	mcg_unlock(&mcg_cache_list_lock);
	return n;
}

static void shrink_kmalloc(void)
{
	mcg_lock(&mcg_cache_list_lock);
	mcg_list_for_each (pos, &mcg_cache_list) {
		struct mcg_cache *c = mcg_list_entry(pos, struct mcg_cache, link);
		if (is_internal(c))
			mcg_cache_shrink(c);
	}
	mcg_unlock(&mcg_cache_list_lock);
	mcg_large_flush(); /* the retained large blocks too */
}

static void test_migration_and_signals(void)
{
	mcg_set_report_handler(on_report);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);

	/* Warm kmalloc up (its caches live forever) and set the groups up (the
	 * root's statistics and objcgs live forever) before the baselines. */
	mcg_free(mcg_malloc(8));
	mcg_group_root();
	cache = mcg_cache_create("migrate", sizeof(struct obj), 0, 0, NULL);
	REQUIRE(cache);
	shrink_kmalloc();
	size_t pages0 = mcg_pages_in_use();
	size_t mapped0 = mcg_os_mapped_bytes(), chunks0 = chunks_mapped();
	size_t active0 = kmalloc_active(); /* the root group's statistics and objcgs */
	REQUIRE(mcg_group_create(NULL, "migrate-a", &groups[0]) == 0);
	REQUIRE(mcg_group_create(NULL, "migrate-b", &groups[1]) == 0);

	cpu_set_t allowed;
	sched_getaffinity(0, sizeof(allowed), &allowed);
	nthreads = MCG_MIN(MAX_THREADS, 3 * CPU_COUNT(&allowed) + 2);
	if (SANITIZED)
		nthreads = MCG_MIN(nthreads, 6);
	stop = 0;
	for (long t = 0; t < nthreads; t++)
		pthread_create(&workers[t], NULL, worker, (void *)t);
	pthread_t sig;
	pthread_create(&sig, NULL, signaller, NULL);
	struct timespec ts = {(time_t)run_seconds,
	                      (long)((run_seconds - (double)(time_t)run_seconds) * 1e9)};
	nanosleep(&ts, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(sig, NULL);
	for (int t = 0; t < nthreads; t++)
		pthread_join(workers[t], NULL);
	/* Free what is left in the mailboxes. */
	for (int i = 0; i < MAILBOXES; i++) {
		void *got = mailbox[i];
		mailbox[i] = NULL;
		if (!got)
			continue;
		struct obj *g = (struct obj *)((uintptr_t)got & ~(uintptr_t)1);
		CHECK_EQ(g->owner, TAG_MAILBOX);
		g->owner = 0;
		if ((uintptr_t)got & 1)
			mcg_cache_free(cache, g);
		else
			mcg_free(g);
	}
	fprintf(stderr, "%d threads, %.1f s: %lu ops, %lu CPU hops, %lu signals, %lu large\n",
	        nthreads, run_seconds, ops_total, hops_total, signals_total, large_total);
	CHECK_EQ(errors_double, 0);
	CHECK_EQ(errors_pattern, 0);
	CHECK_EQ(errors_null, 0);
	CHECK_EQ(reports_seen, 0);
	CHECK(hops_total > 0);
	CHECK(ops_total > 10000);

	mcg_cache_stats_t st;
	mcg_cache_stats(cache, &st);
	CHECK_EQ(st.active_objs, 0);
	mcg_group_drain_stocks();
	for (int i = 0; i < 2; i++) {
		char buf[64];
		CHECK_EQ(mcg_group_read(groups[i], "memory.current", buf, sizeof(buf)), 2);
		CHECK(!strcmp(buf, "0\n"));
		mcg_group_remove(groups[i]);
		mcg_group_put(groups[i]);
	}
	CHECK(st.num_slabs > 0);
	check_shrink_all_free(cache); /* frees its slabs' objcg vectors too */
	CHECK_EQ(kmalloc_active(), active0);
	shrink_kmalloc();
	CHECK_EQ(mcg_pages_in_use(), pages0);
	/* Large blocks all unmapped; what is new is exactly the chunks (kept mapped). */
	size_t chunks = chunks_mapped();
	CHECK(chunks >= chunks0);
	CHECK_EQ(mcg_os_mapped_bytes(), mapped0 + (chunks - chunks0) * MCG_CHUNK_SIZE);
	CHECK_EQ(mcg_cache_destroy(cache), 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	bool locked = getenv("MCG_TEST_LOCKED") != NULL;
	const char *secs = getenv("MCG_STRESS_SECONDS");
	run_seconds = secs ? atof(secs) : (SANITIZED ? 4.0 : 5.0);
	fprintf(stderr, "per-CPU mode: %s\n",
	        mcg_percpu_mode() == MCG_PERCPU_RSEQ ? "rseq" : "locked");
	/* The mappings are counted exactly at the end: no fitted kmalloc cache
	 * (its CPU arrays are a mapping of their own) may appear meanwhile. */
	if (mcg_option_set("kmalloc_fit", 0)) {
		fprintf(stderr, "cannot turn kmalloc_fit off\n");
		return 1;
	}
	RUN(test_migration_and_signals);
	int rc = test_done();
	if (!locked && mcg_percpu_mode() == MCG_PERCPU_RSEQ) {
		fprintf(stderr, "--- again with MCG_RSEQ=0 (locked path)\n");
		rc = test_merge(rc, test_run_locked(argv));
	}
	return rc;
}
