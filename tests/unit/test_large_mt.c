/* SPDX-License-Identifier: MIT */
/*
 * test_large_mt.c - large blocks under concurrency (page/large.c through
 * slab/kmalloc.c): workers malloc, calloc, realloc and free large blocks
 * of many classes (some accounted to a group, some aligned past the
 * header's unit, which are never retained), and hand some to another
 * worker to free, while an ager runs aging steps and now and then a flush
 * or a malloc_trim-style shrink.
 *
 * Checked as it runs: every block keeps the bytes its owner wrote (one per
 * page, at the block's two ends too), a calloc'd block reads zero at every
 * page (a retained block that was not cleared would show its last user's
 * bytes there), and the retained bytes never pass the cap (the ager alone
 * steps, so the cap only falls under it).  At rest: the group's
 * memory.current is 0, no large byte is in use, and after a shrink
 * nothing is retained and memcg maps exactly what it did before, plus any
 * chunk it created.  Some allocations must have been served by reuse.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "memcg/debug.h"
#include "memcg/group.h"
#include "memcg/kmalloc.h"
#include "memcg/memcg.h"
#include "memcg/slab.h"
#include "os/os.h"
#include "page/chunk.h"
#include "page/large.h"
#include "chunk_count.h"
#include "stress.h"
#include "test.h"

#define WORKERS 4
#define SLOTS 8
#define MAILBOXES 16
#define PAGE 4096

struct block {
	unsigned char *p;
	size_t size;
	unsigned char tag;
};

static mcg_group_t *grp;
static void *mailbox[MAILBOXES]; /* a block one worker left for another to free */
static size_t mailbox_size[MAILBOXES];
static unsigned char mailbox_tag[MAILBOXES];
static pthread_mutex_t mailbox_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;
static unsigned long ops_total, reused_total, calloc_total;
static unsigned long ops_live; /* ops so far, while the workers run */

static size_t pick_size(unsigned *seed)
{
	unsigned r = stress_rnd(seed) % 100;
	if (r < 60)
		return 256 * 1024 + 1 + stress_rnd(seed) % (768 * 1024);
	return 1024 * 1024 + stress_rnd(seed) % (3 * 1024 * 1024);
}

/* Write @tag at both ends of @p and at the start of every page. */
static void tag_block(unsigned char *p, size_t size, unsigned char tag)
{
	for (size_t o = 0; o < size; o += PAGE)
		p[o] = tag;
	p[size - 1] = tag;
}

static bool tag_ok(const unsigned char *p, size_t size, unsigned char tag)
{
	for (size_t o = 0; o < size; o += PAGE)
		if (p[o] != tag)
			return false;
	return p[size - 1] == tag;
}

static void check_and_free(unsigned char *p, size_t size, unsigned char tag)
{
	CHECK(tag_ok(p, size, tag));
	mcg_free(p);
}

static void *worker(void *arg)
{
	unsigned seed = 0x9e3779b9u * (unsigned)((uintptr_t)arg + 1);
	struct block b[SLOTS] = {{0}};
	unsigned long ops = 0, reused = 0, callocs = 0;
	unsigned char next_tag = (unsigned char)((uintptr_t)arg * 40 + 1);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		struct block *s = &b[stress_rnd(&seed) % SLOTS];
		unsigned r = stress_rnd(&seed) % 100;
		ops++;
		__atomic_add_fetch(&ops_live, 1, __ATOMIC_RELAXED);
		if (!s->p) {
			size_t size = pick_size(&seed);
			unsigned char *p;
			if (r < 30) {
				p = mcg_calloc(1, size);
				CHECK(!p || tag_ok(p, size, 0));
				callocs++;
			} else if (r < 60) {
				p = mcg_malloc_account(size, grp);
			} else if (r < 65) {
				p = mcg_aligned_alloc(128 * 1024, size);
				CHECK(p && (uintptr_t)p % (128 * 1024) == 0);
			} else {
				p = mcg_malloc(size);
			}
			if (!p) {
				CHECK(p != NULL);
				break;
			}
			reused += !mcg_chunk_of(p)->large_zero;
			next_tag =
			        (unsigned char)(next_tag + 1) ? (unsigned char)(next_tag + 1) : 1;
			s->p = p;
			s->size = size;
			s->tag = next_tag;
			tag_block(p, size, s->tag);
		} else if (r < 40) {
			check_and_free(s->p, s->size, s->tag);
			s->p = NULL;
		} else if (r < 55) {
			/* Leave it for another worker; free what was there. */
			unsigned i = stress_rnd(&seed) % MAILBOXES;
			pthread_mutex_lock(&mailbox_lock);
			void *old = mailbox[i];
			size_t old_size = mailbox_size[i];
			unsigned char old_tag = mailbox_tag[i];
			mailbox[i] = s->p;
			mailbox_size[i] = s->size;
			mailbox_tag[i] = s->tag;
			pthread_mutex_unlock(&mailbox_lock);
			if (old)
				check_and_free(old, old_size, old_tag);
			s->p = NULL;
		} else {
			size_t size = pick_size(&seed);
			CHECK(tag_ok(s->p, s->size, s->tag));
			unsigned char *q = mcg_realloc(s->p, size);
			if (!q) {
				CHECK(q != NULL);
				break;
			}
			size_t kept = MCG_MIN(size, s->size);
			for (size_t o = 0; o < kept; o += PAGE)
				CHECK(q[o] == s->tag);
			s->p = q;
			s->size = size;
			tag_block(q, size, s->tag);
		}
	}
	for (int i = 0; i < SLOTS; i++)
		if (b[i].p)
			check_and_free(b[i].p, b[i].size, b[i].tag);
	__atomic_add_fetch(&ops_total, ops, __ATOMIC_RELAXED);
	__atomic_add_fetch(&reused_total, reused, __ATOMIC_RELAXED);
	__atomic_add_fetch(&calloc_total, callocs, __ATOMIC_RELAXED);
	return NULL;
}

/* Aging steps every millisecond; a flush or a shrink now and then. */
static void *ager(void *arg)
{
	(void)arg;
	unsigned n = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		size_t retained = mcg_large_retained();
		CHECK(retained <= mcg_large_cap());
		if (++n % 50 == 0)
			mcg_large_flush();
		else if (n % 77 == 0)
			mcg_slab_shrink_all();
		else
			mcg_large_age();
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void test_concurrent(void)
{
	/* What lives forever first: the kmalloc classes, the root group. */
	mcg_free(mcg_malloc(8));
	mcg_group_root();
	mcg_slab_shrink_all();
	size_t mapped0 = mcg_os_mapped_bytes(), chunks0 = chunks_mapped();
	size_t in_use0 = mcg_large_in_use();
	REQUIRE(mcg_group_create(NULL, "large-mt", &grp) == 0);
	stop = 0;
	pthread_t w[WORKERS], a;
	for (long t = 0; t < WORKERS; t++)
		pthread_create(&w[t], NULL, worker, (void *)t);
	pthread_create(&a, NULL, ager, NULL);
	double secs = stress_seconds(1.5);
	struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
	nanosleep(&ts, NULL);
	/* And at least a few hundred operations, however slow the machine
	 * (a sanitizer, other load): up to a minute more. */
	for (int i = 0; i < 6000 && __atomic_load_n(&ops_live, __ATOMIC_RELAXED) <= 300; i++) {
		struct timespec tick = {0, 10000000};
		nanosleep(&tick, NULL);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int t = 0; t < WORKERS; t++)
		pthread_join(w[t], NULL);
	pthread_join(a, NULL);
	for (int i = 0; i < MAILBOXES; i++) {
		if (mailbox[i])
			check_and_free(mailbox[i], mailbox_size[i], mailbox_tag[i]);
		mailbox[i] = NULL;
	}
	fprintf(stderr, "%d workers: %lu ops, %lu blocks reused, %lu callocs\n", WORKERS, ops_total,
	        reused_total, calloc_total);
	CHECK(ops_total > 100);
	CHECK(reused_total > 0);
	CHECK(calloc_total > 0);

	/* At rest: nothing charged, nothing in use; after a shrink, nothing kept. */
	mcg_group_drain_stocks();
	char buf[64];
	CHECK_EQ(mcg_group_read(grp, "memory.current", buf, sizeof(buf)), 2);
	CHECK(!strcmp(buf, "0\n"));
	CHECK_EQ(mcg_large_in_use(), in_use0);
	CHECK(mcg_large_retained() <= mcg_large_cap());
	CHECK_EQ(mcg_group_remove(grp), 0);
	mcg_group_put(grp);
	mcg_slab_shrink_all();
	CHECK_EQ(mcg_large_retained(), 0);
	size_t chunks = chunks_mapped();
	CHECK(chunks >= chunks0);
	CHECK_EQ(mcg_os_mapped_bytes(), mapped0 + (chunks - chunks0) * MCG_CHUNK_SIZE);
}

int main(void)
{
	/* The ager alone runs aging steps: no inline ones from the slow paths. */
	if (mcg_option_set("reap_ms", 0))
		return test_skip("reap_ms cannot be set");
	RUN(test_concurrent);
	return test_done();
}
