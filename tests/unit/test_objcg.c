/* SPDX-License-Identifier: MIT */
/*
 * test_objcg.c - accounted objects (group/objcg.c, slab/account.c): what an
 * accounted allocation charges and where, the memory.stat kinds, exactness
 * at rest, removal (reparenting), max, realloc, large blocks, frees from
 * other threads and groups, bad arguments.  Runs again with MCG_RSEQ=0.
 *
 *     root
 *      `- p
 *          `- c   (removed in test_remove_reparents)
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "group/group.h"
#include "memcg/debug.h"
#include "memcg/kmalloc.h"
#include "memcg/reclaim.h"
#include "memcg/slab.h"
#include "group/objcg.h" /* mcg_objcg_id_t: a vector entry, charged with its object */
#include "os/os.h"
#include "slab/account.h" /* mcg_objcg_give */
#include "slab/slab.h"
#include "group_file.h"
#include "cache_rest.h"
#include "test.h"

#define PAGE 4096l
#define N 1000

static mcg_group_t *p, *c;

static long current_bytes(mcg_group_t *g)
{
	char b[64];
	if (mcg_group_read(g, "memory.current", b, sizeof(b)) < 0)
		return -1;
	return atol(b);
}

/* At rest: memory.current = anon + kernel, exactly. */
static void check_parts(mcg_group_t *g)
{
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(g),
	         read_key(g, "memory.stat", "anon") + read_key(g, "memory.stat", "kernel"));
	CHECK(read_key(g, "memory.stat", "slab") <= read_key(g, "memory.stat", "kernel"));
}

static void setup(void)
{
	REQUIRE(mcg_group_create(NULL, "p", &p) == 0);
	REQUIRE(mcg_group_create(p, "c", &c) == 0);
}

static void teardown(void)
{
	if (mcg_group_is_online(c))
		mcg_group_remove(c);
	mcg_group_put(c);
	mcg_group_remove(p), mcg_group_put(p);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(mcg_group_root()), 0);
	CHECK_EQ(read_key(mcg_group_root(), "memory.stat", "slab"), 0);
	CHECK_EQ(read_key(mcg_group_root(), "cgroup.stat", "nr_dying_descendants"), 0);
}

static void test_cache_account(void)
{
	setup();
	mcg_cache_t *k = mcg_cache_create("acct", 100, 0, MCG_CACHE_ACCOUNT, NULL);
	REQUIRE(k);
	mcg_cache_stats_t st;
	mcg_cache_stats(k, &st);
	long per = (long)(st.slot_size + sizeof(mcg_objcg_id_t));
	void *o[N];
	mcg_group_t *prev = mcg_group_enter(c);
	for (int i = 0; i < N; i++)
		REQUIRE((o[i] = mcg_cache_alloc(k)));
	mcg_group_leave(prev);
	mcg_group_drain_stocks();
	CHECK_EQ(read_key(c, "memory.stat", "slab_unreclaimable"), N * per);
	CHECK_EQ(read_key(c, "memory.stat", "slab_reclaimable"), 0);
	CHECK_EQ(read_key(c, "memory.stat", "slab"), N * per);
	CHECK_EQ(read_key(p, "memory.stat", "slab"), N * per); /* hierarchical */
	/* whole pages, the remainder of the last one included */
	CHECK_EQ(read_key(c, "memory.stat", "kernel"), (N * per + PAGE - 1) / PAGE * PAGE);
	CHECK_EQ(current_bytes(c), read_key(c, "memory.stat", "kernel"));
	check_parts(c);
	check_parts(p);
	mcg_group_t *owner = NULL;
	CHECK_EQ(mcg_obj_group(o[0], &owner), 0);
	CHECK(owner == c);
	mcg_group_put(owner);
	for (int i = 0; i < N; i++)
		mcg_cache_free(k, o[i]);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(c), 0);
	CHECK_EQ(read_key(c, "memory.stat", "slab"), 0);
	CHECK_EQ(read_key(c, "memory.stat", "kernel"), 0);
	CHECK_EQ(mcg_cache_destroy(k), 0);
	teardown();
}

/* Destroying a cache returns the charge of the freed objects its CPU
 * arrays held: nothing is left charged, no objcg is kept alive. */
static void test_destroy_returns_array_charges(void)
{
	setup();
	mcg_cache_t *k = mcg_cache_create("acct-destroy", 48, 0, MCG_CACHE_ACCOUNT, NULL);
	REQUIRE(k);
	mcg_group_t *prev = mcg_group_enter(c);
	for (int i = 0; i < 100; i++) {
		void *o = mcg_cache_alloc(k);
		REQUIRE(o);
		mcg_cache_free(k, o); /* the second and later reuse the charged object */
	}
	mcg_group_leave(prev);
	CHECK(current_bytes(c) > 0); /* a page charged, a freed object holds some */
	CHECK_EQ(mcg_cache_destroy(k), 0);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(c), 0);
	CHECK_EQ(read_key(c, "memory.stat", "kernel"), 0);
	teardown();
}

/*
 * A charge travels with its object through the CPU array (slab/account.h):
 * a freed accounted object stays charged (not in use: memory.stat's slab
 * does not count it) until the object leaves the array.  Popped for the
 * same objcg, nothing moves; for another, the charge moves to it; for an
 * unaccounted allocation, it goes back.  One CPU, so the array is LIFO.
 */
static void test_charge_travels_with_object(void)
{
	cpu_set_t old, one;
	REQUIRE(sched_getaffinity(0, sizeof(old), &old) == 0);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	REQUIRE(sched_setaffinity(0, sizeof(one), &one) == 0);
	mcg_group_t *a = NULL, *b = NULL, *owner = NULL;
	REQUIRE(mcg_group_create(NULL, "travel-a", &a) == 0);
	REQUIRE(mcg_group_create(NULL, "travel-b", &b) == 0);
	mcg_cache_t *k = mcg_cache_create("acct-travel", 64, 0, 0, NULL);
	REQUIRE(k);
	void *o = mcg_cache_alloc_account(k, a);
	REQUIRE(o);
	mcg_cache_free(k, o);
	CHECK(current_bytes(a) > 0);                     /* still charged, */
	CHECK_EQ(read_key(a, "memory.stat", "slab"), 0); /* not in use */
	void *o2 = mcg_cache_alloc_account(k, a);        /* the same object, its charge kept */
	CHECK(o2 == o);
	CHECK_EQ(read_key(a, "memory.stat", "slab"), 64 + (long)sizeof(mcg_objcg_id_t));
	mcg_cache_free(k, o2);
	void *o3 = mcg_cache_alloc_account(k, b); /* the charge moves to b */
	CHECK(o3 == o);
	CHECK_EQ(mcg_obj_group(o3, &owner), 0);
	CHECK(owner == b);
	mcg_group_put(owner);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(a), 0);
	CHECK_EQ(read_key(b, "memory.stat", "slab"), 64 + (long)sizeof(mcg_objcg_id_t));
	mcg_cache_free(k, o3);
	void *o4 = mcg_cache_alloc(k); /* unaccounted: the charge goes back */
	CHECK(o4 == o);
	CHECK_EQ(mcg_obj_group(o4, &owner), -ENOENT);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(b), 0);
	mcg_cache_free(k, o4);
	/* freed and drained: the drain gives the charge back, the object stays,
	 * its slot no longer naming a: a's next allocation charges it again */
	void *o5 = mcg_cache_alloc_account(k, a);
	REQUIRE(o5);
	mcg_cache_free(k, o5);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(a), 0);
	CHECK(mcg_cache_alloc_account(k, a) == o5);
	CHECK_EQ(read_key(a, "memory.stat", "slab"), 64 + (long)sizeof(mcg_objcg_id_t));
	CHECK(current_bytes(a) > 0);
	mcg_cache_free(k, o5);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(a), 0);
	CHECK(mcg_cache_alloc_account(k, b) == o5); /* charged to b from nothing */
	CHECK_EQ(read_key(b, "memory.stat", "slab"), 64 + (long)sizeof(mcg_objcg_id_t));
	mcg_cache_free(k, o5);
	CHECK_EQ(mcg_cache_destroy(k), 0); /* the flush gives the charge back */
	REQUIRE(sched_setaffinity(0, sizeof(old), &old) == 0);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(b), 0);
	CHECK_EQ(mcg_group_remove(a), 0);
	CHECK_EQ(mcg_group_remove(b), 0);
	mcg_group_put(a);
	mcg_group_put(b);
	CHECK_EQ(read_key(mcg_group_root(), "cgroup.stat", "nr_dying_descendants"), 0);
}

/* Pin the thread to the CPU it runs on (one CPU array); *@old: its mask. */
static void pin_here(cpu_set_t *old)
{
	cpu_set_t one;
	REQUIRE(sched_getaffinity(0, sizeof(*old), old) == 0);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	REQUIRE(sched_setaffinity(0, sizeof(one), &one) == 0);
}

/* @n top-level groups, named @prefix-i. */
static void groups_create(mcg_group_t **g, int n, const char *prefix)
{
	for (int i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "%s-%d", prefix, i);
		REQUIRE(mcg_group_create(NULL, name, &g[i]) == 0);
	}
}

/* Unpin (@old), then the root at rest: nothing charged, nothing dying. */
static void unpin_root_at_rest(const cpu_set_t *old)
{
	REQUIRE(sched_setaffinity(0, sizeof(*old), old) == 0);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(mcg_group_root()), 0);
	CHECK_EQ(read_key(mcg_group_root(), "cgroup.stat", "nr_dying_descendants"), 0);
}

/*
 * The byte stock is direct-mapped: 16 groups taking turns on one CPU each
 * keep a word of their own there (a stock of 7 shared words kept 7).
 */
static void test_stock_holds_many_objcgs(void)
{
	enum { NG = 16 };
	cpu_set_t old;
	pin_here(&old);
	mcg_cache_t *k = mcg_cache_create("acct-many", 64, 0, 0, NULL);
	REQUIRE(k);
	mcg_group_t *g[NG];
	void *o[NG];
	groups_create(g, NG, "many");
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < NG; i++) {
			REQUIRE(o[i] = mcg_cache_alloc_account(k, g[i]));
			if (round < 2)
				mcg_cache_free(k, o[i]);
		}
	int stocked = 0;
	for (int i = 0; i < NG; i++)
		stocked += mcg_objcg_stocked_here(mcg_objcg_of(g[i], k->objcg_kind)) > 0;
	CHECK(stocked >= NG - 1);
	for (int i = 0; i < NG; i++) {
		mcg_cache_free(k, o[i]);
		mcg_group_drain_stocks();
		CHECK_EQ(current_bytes(g[i]), 0);
		CHECK_EQ(mcg_group_remove(g[i]), 0);
		mcg_group_put(g[i]);
	}
	CHECK_EQ(mcg_cache_destroy(k), 0);
	unpin_root_at_rest(&old);
}

/*
 * Gives into a full byte stock word (a flush of 65 objects of 1024 B gives
 * 33 345 units, 16 pages; the word holds 64): the whole pages of the word
 * and of the give go back together, and the word keeps less than a page,
 * so that the next give fits; a give larger than a word does the same.
 * Every unit comes back: exact at rest.
 */
static void test_stock_trim_keeps_under_a_page(void)
{
	setup();
	cpu_set_t old;
	pin_here(&old);
	struct mcg_objcg *x = mcg_objcg_of(c, MCG_OBJCG_SLAB_UNRECLAIMABLE);
	static const uint64_t gives[] = {33345, 33345, 33345, 33345, 16705, 140000,
	                                 4225,  33345, 33345, 33345, 33345};
	uint64_t total = 0;
	for (unsigned i = 0; i < sizeof(gives) / sizeof(gives[0]); i++)
		total += gives[i];
	mcg_group_drain_stocks();
	REQUIRE(mcg_objcg_charge(x, total, 0) == 0);
	mcg_group_drain_stocks(); /* the charge's surplus out of the word: it starts empty */
	CHECK_EQ(mcg_objcg_stocked_here(x), 0);
	int trims = 0;
	for (unsigned i = 0; i < sizeof(gives) / sizeof(gives[0]); i++) {
		uint64_t before = mcg_objcg_stocked_here(x);
		mcg_objcg_give(x, gives[i]);
		uint64_t after = mcg_objcg_stocked_here(x);
		CHECK(after <= MCG_OBJCG_STOCK_UNITS);
		if (before + gives[i] > MCG_OBJCG_STOCK_UNITS) { /* trimmed */
			CHECK(after < MCG_OBJCG_UNITS_PER_PAGE);
			trims++;
		} else { /* it fitted */
			CHECK_EQ(after, before + gives[i]);
		}
	}
	CHECK_EQ(trims, 3); /* the 4th give, the one beyond a word, the last */
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(c), 0);
	unpin_root_at_rest(&old);
	teardown();
}

/*
 * Frees that take turns among more objcgs than a flush holds charges for
 * (MCG_CHARGES_MAX): every batch switches objcg at every object and fills
 * its charges mid-batch, which must give them back and go on.  Each group
 * ends at 0 exactly: no charge lost, none given twice.
 */
static void test_flush_many_objcgs(void)
{
	enum { NG = 2 * MCG_CHARGES_MAX + 22, PER = 4 };
	cpu_set_t old;
	pin_here(&old); /* one CPU array */
	mcg_cache_t *k = mcg_cache_create("acct-turns", 64, 0, 0, NULL);
	REQUIRE(k);
	static mcg_group_t *g[NG];
	static void *o[PER][NG];
	groups_create(g, NG, "turns");
	for (int r = 0; r < PER; r++)
		for (int i = 0; i < NG; i++)
			REQUIRE(o[r][i] = mcg_cache_alloc_account(k, g[i]));
	for (int r = 0; r < PER; r++)
		for (int i = 0; i < NG; i++)
			mcg_cache_free(k, o[r][i]);
	check_shrink_all_free(k); /* the array's rest back to the slabs */
	mcg_group_drain_stocks();
	for (int i = 0; i < NG; i++) {
		CHECK_EQ(current_bytes(g[i]), 0);
		CHECK_EQ(mcg_group_remove(g[i]), 0);
		mcg_group_put(g[i]);
	}
	CHECK_EQ(mcg_cache_destroy(k), 0);
	unpin_root_at_rest(&old);
}

/*
 * Frees inside a shrinker uncharge at once: reclaim counts its progress
 * from the counters, so the objects must not stay charged in a CPU array
 * (16 objects fit in one).  A global shrinker frees accounted objects of
 * c; mcg_reclaim() must see their pages, and c's memory.current must drop
 * before any drain.  Then a free outside reclaim leaves its charge with
 * the object again (the fast path is back).
 */
enum { SHRINK_OBJS = 16, SHRINK_SIZE = 1024 };
static mcg_cache_t *shrink_cache;
static void *shrink_objs[SHRINK_OBJS];
static int shrink_live;
static unsigned shrink_reclaiming;

static unsigned long shrink_count(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	(void)s;
	(void)sc;
	return (unsigned long)shrink_live;
}

static unsigned long shrink_scan(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	(void)s;
	unsigned long freed = 0;
	shrink_reclaiming = mcg_reclaim_gate_; /* the free fast path's gate */
	while (shrink_live > 0 && freed < sc->nr_to_scan) {
		mcg_cache_free(shrink_cache, shrink_objs[--shrink_live]);
		freed++;
	}
	return freed;
}

static void test_shrinker_frees_uncharge_at_once(void)
{
	setup();
	REQUIRE(shrink_cache = mcg_cache_create("acct-shrink", SHRINK_SIZE, 0,
	                                        MCG_CACHE_ACCOUNT | MCG_CACHE_RECLAIMABLE, NULL));
	mcg_group_t *prev = mcg_group_enter(c);
	for (shrink_live = 0; shrink_live < SHRINK_OBJS; shrink_live++)
		REQUIRE(shrink_objs[shrink_live] = mcg_cache_alloc(shrink_cache));
	void *extra = mcg_cache_alloc(shrink_cache);
	REQUIRE(extra);
	mcg_group_leave(prev);
	mcg_shrinker_t *s = NULL;
	mcg_shrinker_ops_t ops = {.count_objects = shrink_count, .scan_objects = shrink_scan};
	REQUIRE(mcg_shrinker_create(&ops, &s) == 0 && mcg_shrinker_register(s) == 0);
	long before = current_bytes(c);
	mcg_reclaim_result_t res;
	CHECK_EQ(mcg_reclaim_gate_, 0);
	mcg_reclaim_ex(NULL, 32, MCG_RECLAIM_PROACTIVE, &res);
	CHECK_EQ(shrink_live, 0);
	CHECK_EQ(shrink_reclaiming, MCG_PCPU_GATE_UNIT); /* this thread, counted while it shrank */
	CHECK_EQ(mcg_reclaim_gate_, 0);
	/* 16 x 1026 B: 4 pages, less what the objcg keeps as a partial page */
	CHECK(res.reclaimed >= 3);
	CHECK(current_bytes(c) <= before - 3 * PAGE);
	long after = current_bytes(c);
	mcg_cache_free(shrink_cache, extra); /* outside reclaim: charged in the array */
	CHECK_EQ(current_bytes(c), after);
	mcg_shrinker_destroy(s);
	CHECK_EQ(mcg_cache_destroy(shrink_cache), 0);
	check_parts(c);
	CHECK_EQ(current_bytes(c), 0);
	teardown();
}

static void test_reclaimable_and_explicit(void)
{
	setup();
	mcg_cache_t *k = mcg_cache_create("rcl", 64, 0, MCG_CACHE_RECLAIMABLE, NULL);
	REQUIRE(k);
	void *o = mcg_cache_alloc(k); /* no ACCOUNT flag: not charged */
	void *a = mcg_cache_alloc_account(k, c);
	REQUIRE(o && a);
	mcg_group_t *owner = NULL;
	CHECK_EQ(mcg_obj_group(o, &owner), -ENOENT);
	mcg_group_drain_stocks();
	CHECK_EQ(read_key(c, "memory.stat", "slab_reclaimable"), 64 + (long)sizeof(mcg_objcg_id_t));
	CHECK_EQ(read_key(c, "memory.stat", "slab_unreclaimable"), 0);
	check_parts(c);
	mcg_cache_free(k, a);
	mcg_cache_free(k, o);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(c), 0);
	CHECK_EQ(mcg_cache_destroy(k), 0);
	teardown();
}

/*
 * A thread that never entered a group allocates from an MCG_CACHE_ACCOUNT
 * cache for the root: its TLS slot_bits start as the root's (ids 1-3), so
 * the object freed and allocated again comes back from its slot still
 * charged to the root; entering a group moves the charge on the next
 * allocation.  One CPU, so the array is LIFO.
 */
static void root_then_group_body(mcg_group_t *g)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	REQUIRE(sched_setaffinity(0, sizeof(one), &one) == 0);
	mcg_cache_t *k = mcg_cache_create("acct-root", 64, 0, MCG_CACHE_ACCOUNT, NULL);
	REQUIRE(k);
	mcg_group_t *owner = NULL;
	long slab0 = read_key(mcg_group_root(), "memory.stat", "slab");
	void *o = mcg_cache_alloc(k);  /* no group entered in this thread */
	void *o2 = mcg_cache_alloc(k); /* from the refilled array: untagged */
	REQUIRE(o && o2);
	CHECK_EQ(read_key(mcg_group_root(), "memory.stat", "slab"),
	         slab0 + 2 * (64 + (long)sizeof(mcg_objcg_id_t)));
	mcg_cache_free(k, o2);
	mcg_cache_free(k, o);
	CHECK(mcg_cache_alloc(k) == o); /* from its slot: the root's still */
	CHECK_EQ(mcg_obj_group(o, &owner), 0);
	CHECK(owner == mcg_group_root());
	mcg_group_put(owner);
	CHECK_EQ(read_key(mcg_group_root(), "memory.stat", "slab"),
	         slab0 + 64 + (long)sizeof(mcg_objcg_id_t));
	mcg_cache_free(k, o);
	mcg_group_t *prev = mcg_group_enter(g);
	CHECK(mcg_cache_alloc(k) == o); /* the charge moves to g */
	mcg_group_leave(prev);
	CHECK_EQ(mcg_obj_group(o, &owner), 0);
	CHECK(owner == g);
	mcg_group_put(owner);
	CHECK_EQ(read_key(g, "memory.stat", "slab"), 64 + (long)sizeof(mcg_objcg_id_t));
	CHECK_EQ(read_key(mcg_group_root(), "memory.stat", "slab"),
	         slab0 + 64 + (long)sizeof(mcg_objcg_id_t)); /* g's are the root's too */
	mcg_cache_free(k, o);
	CHECK_EQ(mcg_cache_destroy(k), 0);
}

static void *root_then_group(void *arg)
{
	root_then_group_body(arg);
	return NULL;
}

static void test_root_without_entering(void)
{
	setup();
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, root_then_group, c) == 0);
	pthread_join(t, NULL);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(c), 0);
	teardown();
}

static void test_kmalloc_account(void)
{
	setup();
	void *a = mcg_malloc_account(1000, c);      /* kmalloc-1024 */
	char *z = mcg_calloc_account(10, 10, NULL); /* the current group: root */
	REQUIRE(a && z);
	for (int i = 0; i < 100; i++)
		CHECK_EQ(z[i], 0);
	mcg_group_drain_stocks();
	CHECK_EQ(read_key(c, "memory.stat", "slab_unreclaimable"),
	         1024 + (long)sizeof(mcg_objcg_id_t));
	/* realloc: the new block is charged where the old one was */
	a = mcg_realloc(a, 5000);
	REQUIRE(a);
	mcg_group_drain_stocks();
	CHECK_EQ(read_key(c, "memory.stat", "slab_unreclaimable"),
	         5120 + (long)sizeof(mcg_objcg_id_t));
	/* a large block (mapped on its own): whole pages */
	void *big = mcg_malloc_account(1 << 20, c);
	REQUIRE(big);
	mcg_group_t *owner = NULL;
	CHECK_EQ(mcg_obj_group(big, &owner), 0);
	CHECK(owner == c);
	mcg_group_put(owner);
	mcg_group_drain_stocks();
	CHECK(current_bytes(c) >= (1 << 20) + 5120);
	check_parts(c);
	mcg_free(big);
	mcg_free(a);
	mcg_free(z);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(c), 0);
	teardown();
}

static void test_remove_reparents(void)
{
	setup();
	void *o[N];
	for (int i = 0; i < N; i++)
		REQUIRE((o[i] = mcg_malloc_account(64, c)));
	mcg_group_drain_stocks();
	long before = current_bytes(p);
	CHECK(before >= N * (64 + (long)sizeof(mcg_objcg_id_t)));
	CHECK_EQ(mcg_group_remove(c), 0);
	mcg_group_t *owner = NULL;
	CHECK_EQ(mcg_obj_group(o[0], &owner), 0);
	CHECK(owner == p); /* reparented at once */
	mcg_group_put(owner);
	mcg_group_put(c); /* the last reference: the removed group goes now */
	c = NULL;
	CHECK_EQ(read_key(p, "cgroup.stat", "nr_dying_descendants"), 0);
	CHECK_EQ(current_bytes(p), before); /* every byte still charged, to p */
	CHECK_EQ(read_key(p, "memory.stat", "slab"), N * (64 + (long)sizeof(mcg_objcg_id_t)));
	check_parts(p);
	for (int i = 0; i < N; i++)
		mcg_free(o[i]);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(p), 0);
	mcg_group_remove(p), mcg_group_put(p);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(mcg_group_root()), 0);
	CHECK_EQ(read_key(mcg_group_root(), "cgroup.stat", "nr_dying_descendants"), 0);
}

static void test_max_fails_cleanly(void)
{
	setup();
	CHECK_EQ(mcg_group_write(c, "memory.max", "64K"), 0);
	void *o[64];
	int n = 0, fails = 0;
	/* Until four failures in a row: a failed charge drains the stocks, so
	 * the next one may still fit (what the stocks held comes back). */
	while (n < 64 && fails < 4) {
		errno = 0;
		if ((o[n] = mcg_malloc_account(4000, c))) {
			n++;
			fails = 0;
		} else {
			CHECK_EQ(errno, ENOMEM);
			fails++;
		}
	}
	/* 16 pages hold 15 objects of 4 KiB + 2 B, and a stock's leftovers
	 * may keep the last one out */
	CHECK(n >= 14 && n <= 15);
	CHECK(read_key(c, "memory.events", "max") > 0);
	CHECK(read_key(c, "memory.events", "oom") > 0);
	mcg_group_drain_stocks();
	CHECK(current_bytes(c) <= 64 * 1024);
	for (int i = 0; i < n; i++)
		mcg_free(o[i]);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(c), 0);
	teardown();
}

static void *free_all(void *arg)
{
	void **o = arg;
	for (int i = 0; i < N; i++)
		mcg_free(o[i]);
	return NULL;
}

static void test_free_elsewhere(void)
{
	setup();
	mcg_group_t *other;
	REQUIRE(mcg_group_create(p, "other", &other) == 0);
	void *o[N];
	for (int i = 0; i < N; i++)
		REQUIRE((o[i] = mcg_malloc_account(32, c)));
	/* freed by a thread in no group */
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, free_all, o) == 0);
	pthread_join(t, NULL);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(c), 0);
	/* freed by a thread in another group */
	for (int i = 0; i < N; i++)
		REQUIRE((o[i] = mcg_malloc_account(32, c)));
	mcg_group_t *prev = mcg_group_enter(other);
	free_all(o);
	mcg_group_leave(prev);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(c), 0);
	CHECK_EQ(current_bytes(other), 0);
	mcg_group_remove(other), mcg_group_put(other);
	teardown();
}

static int reports;
static void count_report(const mcg_report_t *r)
{
	(void)r;
	reports++;
}

static void test_bad_arguments_and_double_free(void)
{
	setup();
	errno = 0;
	CHECK(mcg_cache_alloc_account(NULL, c) == NULL);
	CHECK_EQ(errno, EINVAL);
	mcg_group_t *g = NULL;
	/* a NULL group: the current one */
	mcg_cache_t *k = mcg_cache_create("acct-current", 64, 0, 0, NULL);
	REQUIRE(k);
	mcg_group_t *prev = mcg_group_enter(c);
	void *o = mcg_cache_alloc_account(k, NULL);
	mcg_group_leave(prev);
	REQUIRE(o);
	CHECK_EQ(mcg_obj_group(o, &g), 0);
	CHECK(g == c);
	mcg_group_put(g);
	CHECK_EQ(read_key(c, "memory.stat", "slab"), 64 + (long)sizeof(mcg_objcg_id_t));
	mcg_cache_free(k, o);
	CHECK_EQ(mcg_cache_destroy(k), 0);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(c), 0);
	CHECK_EQ(mcg_obj_group(NULL, &g), -EINVAL);
	int local;
	CHECK_EQ(mcg_obj_group(&local, &g), -EINVAL);
	void *u = mcg_malloc(10);
	CHECK_EQ(mcg_obj_group(u, &g), -ENOENT);
	mcg_free(u);
	/* a double free is reported and uncharges once */
	mcg_report_fn old = mcg_set_report_handler(count_report);
	void *a = mcg_malloc_account(48, c);
	REQUIRE(a);
	mcg_free(a);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(c), 0);
	mcg_free(a);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(c), 0);
	CHECK_EQ(reports, 1);
	mcg_set_report_handler(old);
	teardown();
}

/*
 * A flush whose objects switch between runs at every step: plain objects
 * of a slab with a vector, objects of two groups, objects whose charge a
 * drain already took (tagged, id 0), and one freed twice, apart, so that
 * the flush finds its bit clear: each charge comes back once, the double
 * free is reported once, and the slabs hold no object at the end.
 */
static void test_flush_mixed_runs(void)
{
	enum { M = 600 };
	cpu_set_t old;
	pin_here(&old); /* one CPU array: every free lands in its flushes */
	mcg_cache_t *k = mcg_cache_create("acct-mixed", 64, 0, 0, NULL);
	REQUIRE(k);
	mcg_group_t *g[2];
	groups_create(g, 2, "mixed");
	static void *o[M];
	for (int i = 0; i < M; i++) /* plain, g0, g1, g0, plain, ... */
		REQUIRE(o[i] = i % 4 ? mcg_cache_alloc_account(k, g[i % 4 == 2])
		                     : mcg_cache_alloc(k));
	mcg_group_drain_stocks();
	CHECK_EQ(read_key(g[0], "memory.stat", "slab"),
	         M / 2 * (long)(64 + sizeof(mcg_objcg_id_t)));
	CHECK_EQ(read_key(g[1], "memory.stat", "slab"),
	         M / 4 * (long)(64 + sizeof(mcg_objcg_id_t)));
	for (int i = 0; i < M / 3; i++)
		mcg_cache_free(k, o[i]);
	mcg_group_drain_stocks(); /* the array's charges taken: those slots read id 0 */
	mcg_report_fn prev = mcg_set_report_handler(count_report);
	reports = 0;
	mcg_cache_free(k, o[M / 3 + 1]); /* a g0 object, */
	mcg_cache_free(k, o[M / 3]);
	mcg_cache_free(k, o[M / 3 + 1]); /* freed again, not the top: the flush finds it */
	for (int i = M / 3 + 2; i < M; i++)
		mcg_cache_free(k, o[i]);
	check_shrink_all_free(k); /* every array flushed */
	CHECK_EQ(reports, 1);
	mcg_set_report_handler(prev);
	mcg_group_drain_stocks();
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(current_bytes(g[i]), 0);
		CHECK_EQ(read_key(g[i], "memory.stat", "slab"), 0);
		CHECK_EQ(mcg_group_remove(g[i]), 0);
		mcg_group_put(g[i]);
	}
	CHECK_EQ(mcg_cache_destroy(k), 0); /* no object left out */
	unpin_root_at_rest(&old);
}

/*
 * Tenants allocating what other tenants freed: a ring of live objects of
 * many groups in an MCG_CACHE_ACCOUNT cache (its slabs mixed), each step
 * freeing the oldest and allocating in its place for another group than
 * the freed object's - the charge moves from the one to the other
 * (mcg_cache_alloc_objcg_slow()'s retag).  More groups than a CPU has
 * stock words, so some share a word and the moves meet words they cannot
 * use (the fallbacks to the counters).  Halfway one group is removed with
 * objects live: its objects' charges, reparented, move on and come back
 * exactly.  Every object is its new group's; each group's memory.stat
 * counts its live objects; at the end nothing is left anywhere.
 */
static void test_retag_moves_charges(void)
{
	enum { NG = MCG_OBJCG_STOCK_SLOTS + 8, RING = 24, STEPS = 20000, SIZE = 512 };
	cpu_set_t old;
	pin_here(&old); /* one CPU array: each allocation pops the object just freed */
	mcg_cache_t *k = mcg_cache_create("acct-retag", SIZE, 0, MCG_CACHE_ACCOUNT, NULL);
	REQUIRE(k);
	static mcg_group_t *g[NG];
	groups_create(g, NG, "retag");
	void *ring[RING];
	int owner[RING];
	long live[NG] = {0};
	for (int j = 0; j < RING; j++) { /* interleaved: mixed slabs */
		owner[j] = j % NG;
		REQUIRE(ring[j] = mcg_cache_alloc_account(k, g[owner[j]]));
		live[owner[j]]++;
	}
	bool removed = false;
	long wrong = 0;
	for (int i = 0; i < STEPS; i++) {
		int j = i % RING;
		if (i == STEPS / 2) { /* group 0 goes with objects live */
			CHECK(live[0] > 0);
			CHECK_EQ(mcg_group_remove(g[0]), 0);
			removed = true;
		}
		mcg_cache_free(k, ring[j]);
		live[owner[j]]--;
		int next = (owner[j] + 1 + i / RING) % NG;
		if (removed && next == 0)
			next = 1;
		if (next == owner[j])
			next = (next + 1) % NG ? (next + 1) % NG : 1;
		REQUIRE(ring[j] = mcg_cache_alloc_account(k, g[next]));
		owner[j] = next;
		live[next]++;
		mcg_group_t *who = NULL;
		REQUIRE(mcg_obj_group(ring[j], &who) == 0);
		wrong += who != g[next];
		mcg_group_put(who);
	}
	CHECK_EQ(wrong, 0);
	CHECK_EQ(live[0], 0); /* the removed group's objects all moved on */
	mcg_group_drain_stocks();
	for (int i = 1; i < NG; i++)
		CHECK_EQ(read_key(g[i], "memory.stat", "slab"),
		         live[i] * (long)(SIZE + sizeof(mcg_objcg_id_t)));
	for (int j = 0; j < RING; j++)
		mcg_cache_free(k, ring[j]);
	check_shrink_all_free(k);
	mcg_group_drain_stocks();
	mcg_group_put(g[0]);
	for (int i = 1; i < NG; i++) {
		CHECK_EQ(current_bytes(g[i]), 0);
		CHECK_EQ(read_key(g[i], "memory.stat", "slab"), 0);
		CHECK_EQ(mcg_group_remove(g[i]), 0);
		mcg_group_put(g[i]);
	}
	CHECK_EQ(mcg_cache_destroy(k), 0);
	unpin_root_at_rest(&old);
}

/* The sole objcg bits every unit descriptor of @obj's slab holds: the same
 * in all of them, else ~0. */
static uintptr_t sole_bits_of(const void *obj)
{
	struct mcg_slab *s = mcg_slab_of(obj);
	uintptr_t bits = mcg_slab_sole_bits(__atomic_load_n(&s->objcgs, __ATOMIC_RELAXED));
	for (unsigned u = 0; u < s->units; u++) {
		const char *in_unit = s->base + ((size_t)u << MCG_UNIT_SHIFT);
		if (mcg_slab_sole_bits(mcg_slab_unit(in_unit)->objcgs) != bits)
			return ~(uintptr_t)0;
	}
	return bits;
}

static uintptr_t sole_bits_for(mcg_group_t *g, mcg_cache_t *k)
{
	return (uintptr_t)mcg_objcg_of(g, k->objcg_kind)->id << MCG_SLOT_ID_SHIFT;
}

/*
 * A slab of an MCG_CACHE_ACCOUNT cache names its sole objcg while its
 * accounted objects are all one objcg's (frees then tag them without
 * reading the vector), in every unit's descriptor; the first object of
 * another objcg drops it until the slab is empty, and then it starts
 * afresh.  The charges come back to their own groups throughout; a kmalloc
 * cache's slabs (accounted and plain objects mixed) never name one.
 */
static void test_sole_objcg(void)
{
	enum { M = 8 };
	cpu_set_t old;
	pin_here(&old); /* one CPU array: the objects come from one slab */
	/* 10 objects of 12000 B a slab, over two units */
	mcg_cache_t *k = mcg_cache_create("acct-sole", 12000, 0, MCG_CACHE_ACCOUNT, NULL);
	REQUIRE(k);
	mcg_cache_stats_t st;
	mcg_cache_stats(k, &st);
	mcg_group_t *g[2];
	groups_create(g, 2, "sole");
	void *a[M], *b;
	for (int i = 0; i < M; i++)
		REQUIRE(a[i] = mcg_cache_alloc_account(k, g[0]));
	struct mcg_slab *s = mcg_slab_of(a[0]);
	REQUIRE(s && s->units > 1); /* several unit descriptors to keep alike */
	for (int i = 0; i < M; i++)
		REQUIRE(mcg_slab_of(a[i]) == s);
	CHECK_EQ(s->sole, MCG_SOLE_ONE);
	CHECK_EQ(sole_bits_of(a[0]), sole_bits_for(g[0], k));
	mcg_cache_free(k, a[M - 1]); /* a free and a pop of g0's: still g0's alone */
	REQUIRE(a[M - 1] = mcg_cache_alloc_account(k, g[0]));
	CHECK_EQ(sole_bits_of(a[0]), sole_bits_for(g[0], k));
	REQUIRE(b = mcg_cache_alloc_account(k, g[1]));
	REQUIRE(mcg_slab_of(b) == s);
	CHECK_EQ(s->sole, MCG_SOLE_MIXED);
	CHECK_EQ(sole_bits_of(a[0]), 0);
	mcg_cache_free(k, b); /* the vector names g1: its charge goes back to g1 */
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(g[1]), 0);
	CHECK_EQ(read_key(g[0], "memory.stat", "slab"), M * (long)st.charge_size);
	REQUIRE(b = mcg_cache_alloc_account(k, g[0])); /* mixed stays mixed */
	CHECK_EQ(sole_bits_of(a[0]), 0);
	mcg_cache_free(k, b);
	for (int i = 0; i < M; i++)
		mcg_cache_free(k, a[i]);
	mcg_cache_drain_all(k); /* every object back: the slab is empty, kept */
	CHECK_EQ(s->inuse, 0);
	CHECK_EQ(s->sole, MCG_SOLE_UNSET);
	CHECK_EQ(sole_bits_of(a[0]), 0);
	for (int i = 0; i < M; i++) /* g1 has it to itself now */
		REQUIRE(a[i] = mcg_cache_alloc_account(k, g[1]));
	REQUIRE(mcg_slab_of(a[0]) == s);
	CHECK_EQ(sole_bits_of(a[0]), sole_bits_for(g[1], k));
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(g[0]), 0);
	CHECK_EQ(read_key(g[1], "memory.stat", "slab"), M * (long)st.charge_size);
	for (int i = 0; i < M; i++)
		mcg_cache_free(k, a[i]);
	/* kmalloc caches: plain objects (entry 0) come and go unseen */
	void *km = mcg_malloc_account(64, g[0]);
	REQUIRE(km);
	CHECK_EQ(sole_bits_of(km), 0);
	mcg_free(km);
	mcg_group_drain_stocks();
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(current_bytes(g[i]), 0);
		CHECK_EQ(mcg_group_remove(g[i]), 0);
		mcg_group_put(g[i]);
	}
	CHECK_EQ(mcg_cache_destroy(k), 0);
	unpin_root_at_rest(&old);
}

/*
 * An accounted allocation whose charge fails puts the object it popped
 * back as it was: a fresh object of a slab whose sole objcg is another
 * group's goes back uncharged, not tagged with that objcg (whose charge
 * it does not carry: the flush would give back units never charged).
 */
static void test_failed_charge_keeps_the_slot(void)
{
	cpu_set_t old;
	pin_here(&old);
	mcg_cache_t *k = mcg_cache_create("acct-fail", 64, 0, MCG_CACHE_ACCOUNT, NULL);
	REQUIRE(k);
	mcg_group_t *g[2];
	groups_create(g, 2, "fail");
	CHECK_EQ(mcg_group_write(g[1], "memory.max", "0"), 0);
	void *a = mcg_cache_alloc_account(k, g[0]); /* the array fills from one slab */
	REQUIRE(a);
	CHECK_EQ(sole_bits_of(a), sole_bits_for(g[0], k));
	for (int i = 0; i < 3; i++) {
		errno = 0;
		CHECK(mcg_cache_alloc_account(k, g[1]) == NULL);
		CHECK_EQ(errno, ENOMEM);
	}
	mcg_cache_free(k, a);
	mcg_cache_drain_all(k); /* the flush: one charge back, g0's */
	mcg_group_drain_stocks();
	/* Units given back that were never charged would stay as leftover
	 * (under a page: memory.current cannot show them). */
	struct mcg_objcg *x = mcg_objcg_of(g[0], k->objcg_kind);
	CHECK_EQ(x->leftover, 0);
	CHECK_EQ(x->charged, 0);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(current_bytes(g[i]), 0);
		CHECK_EQ(read_key(g[i], "memory.stat", "slab"), 0);
		CHECK_EQ(mcg_group_remove(g[i]), 0);
		mcg_group_put(g[i]);
	}
	CHECK_EQ(mcg_cache_destroy(k), 0);
	unpin_root_at_rest(&old);
}

/*
 * Objects whose charge exceeds what a byte stock word counts (a 256 KiB
 * object is 131073 units of 2 B; a flush gives back runs of many 16 KiB
 * ones): they must bypass the words, never wrap in them.  Exact in use and
 * at rest.
 */
static void test_huge_objects_charge_exactly(void)
{
	setup();
	static const size_t sizes[] = {MCG_CACHE_MAX_SIZE, 16384};
	for (int s = 0; s < 2; s++) {
		mcg_cache_t *k =
		        mcg_cache_create("acct-huge", sizes[s], 0, MCG_CACHE_ACCOUNT, NULL);
		REQUIRE(k);
		mcg_cache_stats_t st;
		mcg_cache_stats(k, &st);
		CHECK_EQ(st.charge_size, st.slot_size + sizeof(mcg_objcg_id_t));
		enum { M = 40 };
		void *o[M];
		for (int round = 0; round < 3; round++) {
			mcg_group_t *prev = mcg_group_enter(c);
			for (int i = 0; i < M; i++)
				REQUIRE((o[i] = mcg_cache_alloc(k)));
			mcg_group_leave(prev);
			mcg_group_drain_stocks();
			CHECK_EQ(read_key(c, "memory.stat", "slab"), M * (long)st.charge_size);
			check_parts(c);
			for (int i = 0; i < M; i++)
				mcg_cache_free(k, o[i]);
			check_shrink_all_free(k); /* the arrays flush: runs of M objects */
			mcg_group_drain_stocks();
			CHECK_EQ(current_bytes(c), 0);
			CHECK_EQ(read_key(c, "memory.stat", "slab"), 0);
		}
		CHECK_EQ(mcg_cache_destroy(k), 0);
	}
	teardown();
}

/*
 * The retag of an object whose charge is more than a stock word holds (a
 * 256 KiB object): another group's allocation pops it, the word cannot
 * give its units, and the general path moves the charge instead - exact.
 */
static void test_retag_huge_object(void)
{
	cpu_set_t old;
	pin_here(&old); /* one CPU array: the allocation pops the object just freed */
	mcg_cache_t *k =
	        mcg_cache_create("acct-retag-huge", MCG_CACHE_MAX_SIZE, 0, MCG_CACHE_ACCOUNT, NULL);
	REQUIRE(k);
	mcg_cache_stats_t st;
	mcg_cache_stats(k, &st);
	CHECK(st.charge_size / MCG_OBJCG_UNIT > MCG_OBJCG_STOCK_UNITS);
	mcg_group_t *g[2];
	groups_create(g, 2, "rhuge");
	void *a = mcg_cache_alloc_account(k, g[0]);
	void *b = mcg_cache_alloc_account(k, g[1]);
	REQUIRE(a && b);
	CHECK(mcg_slab_of(a) == mcg_slab_of(b)); /* one slab, two objcgs: mixed */
	CHECK_EQ(sole_bits_of(a), 0);
	mcg_cache_free(k, a);
	void *a2 = mcg_cache_alloc_account(k, g[1]);
	REQUIRE(a2);
	if (mcg_percpu_mode() == MCG_PERCPU_RSEQ)
		CHECK(a2 == a); /* the popped object, retagged */
	mcg_group_t *who = NULL;
	REQUIRE(mcg_obj_group(a2, &who) == 0);
	CHECK(who == g[1]);
	mcg_group_put(who);
	mcg_group_drain_stocks();
	CHECK_EQ(read_key(g[0], "memory.stat", "slab"), 0);
	CHECK_EQ(current_bytes(g[0]), 0);
	CHECK_EQ(read_key(g[1], "memory.stat", "slab"), 2 * (long)st.charge_size);
	mcg_cache_free(k, a2);
	mcg_cache_free(k, b);
	check_shrink_all_free(k);
	mcg_group_drain_stocks();
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(current_bytes(g[i]), 0);
		CHECK_EQ(read_key(g[i], "memory.stat", "slab"), 0);
		CHECK_EQ(mcg_group_remove(g[i]), 0);
		mcg_group_put(g[i]);
	}
	CHECK_EQ(mcg_cache_destroy(k), 0);
	unpin_root_at_rest(&old);
}

/*
 * Objcg ids are 16-bit: 65 535 objcgs, 3 per group.  Creating groups until
 * none fits fails with -ENOSPC, cleanly; the group holding the last id
 * charges as any other (its id is all ones in a slot); a removed group's
 * ids come back.
 */
static void test_ids_run_out(void)
{
	setup();
	enum { MAXG = MCG_OBJCG_IDS / MCG_NR_OBJCG_KINDS };
	mcg_group_t **gs = calloc(MAXG, sizeof(*gs)), *extra = NULL;
	REQUIRE(gs);
	char name[32];
	int n = 0, err;
	for (;;) {
		snprintf(name, sizeof(name), "g%d", n);
		if ((err = mcg_group_create(p, name, &gs[n])))
			break;
		REQUIRE(++n < MAXG);
	}
	CHECK_EQ(err, -ENOSPC);
	/* ids 1..65535, the root's, p's and c's 9 of them taken */
	CHECK_EQ(n, (int)((MCG_OBJCG_IDS - 1) / MCG_NR_OBJCG_KINDS) - 3);
	CHECK_EQ(read_key(p, "cgroup.stat", "nr_descendants"), n + 1);
	mcg_group_t *last = gs[n - 1];
	CHECK_EQ(mcg_objcg_of(last, MCG_OBJCG_SLAB_UNRECLAIMABLE)->id, 0xffff - 2);
	CHECK_EQ(mcg_objcg_of(last, MCG_OBJCG_ANON)->id, 0xffff);
	mcg_cache_t *k = mcg_cache_create("acct-ids", 64, 0, 0, NULL);
	REQUIRE(k);
	void *o = mcg_cache_alloc_account(k, last);
	REQUIRE(o);
	mcg_cache_free(k, o);
	CHECK(mcg_cache_alloc_account(k, last) == o); /* from its slot, still charged */
	CHECK_EQ(read_key(last, "memory.stat", "slab"), 64 + (long)sizeof(mcg_objcg_id_t));
	mcg_cache_free(k, o);
	CHECK_EQ(mcg_cache_destroy(k), 0);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(last), 0);
	CHECK_EQ(mcg_group_remove(gs[0]), 0);
	mcg_group_put(gs[0]);
	CHECK_EQ(mcg_group_create(p, "again", &gs[0]), 0);
	CHECK_EQ(mcg_group_create(p, "one-more", &extra), -ENOSPC);
	/* A removed group whose slab objcg still has an object keeps that id:
	 * two ids come back, a new group's third does not fit and the two it
	 * took are given back - until the object goes. */
	k = mcg_cache_create("acct-ids2", 64, 0, 0, NULL);
	REQUIRE(k);
	o = mcg_cache_alloc_account(k, gs[1]);
	REQUIRE(o);
	CHECK_EQ(mcg_group_remove(gs[1]), 0);
	mcg_group_put(gs[1]);
	for (int i = 0; i < 2; i++) /* twice: the two ids were given back the first time */
		CHECK_EQ(mcg_group_create(p, "partial", &extra), -ENOSPC);
	CHECK(extra == NULL);
	mcg_cache_free(k, o);
	CHECK_EQ(mcg_cache_destroy(k), 0); /* the object's objcg reference goes with its slot */
	mcg_group_drain_stocks();
	CHECK_EQ(mcg_group_create(p, "partial", &gs[1]), 0);
	for (int i = 0; i < n; i++) {
		CHECK_EQ(mcg_group_remove(gs[i]), 0);
		mcg_group_put(gs[i]);
	}
	free(gs);
	teardown();
}

/* Objcgs on @g's list (its own three and those inherited from removed descendants). */
static long objcgs_of(mcg_group_t *g)
{
	long n = 0;
	mcg_lock(&mcg_group_tree_lock);
	mcg_list_for_each (pos, &g->objcgs)
		n++;
	mcg_unlock(&mcg_group_tree_lock);
	return n;
}

/*
 * Groups created, used and removed one after another, no drain between:
 * what stays charged for them is bounded by the stocks, not by the churn.
 * A removed group's objcgs give their stock words and leftover back at
 * removal and keep no leftover afterwards (before, each kept about a page
 * for good: 4 KiB and an objcg per removed group, until someone drained).
 */
static void test_churn_strands_no_charge(void)
{
	setup();
	mcg_cache_t *k = mcg_cache_create("acct-churn", 200, 0, MCG_CACHE_ACCOUNT, NULL);
	REQUIRE(k);
	enum { GROUPS = 2000, OBJS = 100 };
	void *o[OBJS];
	for (int i = 0; i < GROUPS; i++) {
		char name[32];
		snprintf(name, sizeof(name), "churn-%d", i);
		mcg_group_t *g = NULL;
		REQUIRE(mcg_group_create(p, name, &g) == 0);
		for (int j = 0; j < OBJS; j++)
			REQUIRE((o[j] = mcg_cache_alloc_account(k, g)));
		void *big = mcg_malloc_account(3000, g); /* another objcg kind's cache */
		mcg_free(big);
		for (int j = 0; j < OBJS; j++)
			mcg_cache_free(k, o[j]);
		CHECK_EQ(mcg_group_remove(g), 0);
		mcg_group_put(g);
	}
	/* Bounded by the stocks, not by the churn: p's own page stock entry and
	 * the byte stock's words on each CPU, and a few objects in the arrays
	 * (before, each removed group kept about a page and its objcg). */
	long ncpu = (long)mcg_os_nr_cpus();
	long slack =
	        ((MCG_GROUP_STOCK_PAGES + MCG_OBJCG_STOCK_SLOTS * MCG_OBJCG_STOCK_PAGES) * ncpu +
	         16) *
	        PAGE;
	CHECK(current_bytes(p) <= slack);
	CHECK(objcgs_of(p) <= 3 + MCG_OBJCG_STOCK_SLOTS * ncpu + 2 * MCG_NR_OBJCG_KINDS);
	CHECK_EQ(read_key(p, "cgroup.stat", "nr_dying_descendants"), 0);
	mcg_group_drain_stocks();
	CHECK_EQ(current_bytes(p), 0);
	CHECK_EQ(objcgs_of(p), 3);
	CHECK_EQ(mcg_cache_destroy(k), 0);
	teardown();
}

int main(int argc, char **argv)
{
	(void)argc;
	RUN(test_cache_account);
	RUN(test_destroy_returns_array_charges);
	RUN(test_charge_travels_with_object);
	RUN(test_stock_holds_many_objcgs);
	RUN(test_stock_trim_keeps_under_a_page);
	RUN(test_flush_many_objcgs);
	RUN(test_reclaimable_and_explicit);
	RUN(test_shrinker_frees_uncharge_at_once);
	RUN(test_root_without_entering);
	RUN(test_kmalloc_account);
	RUN(test_remove_reparents);
	RUN(test_max_fails_cleanly);
	RUN(test_free_elsewhere);
	RUN(test_bad_arguments_and_double_free);
	RUN(test_flush_mixed_runs);
	RUN(test_retag_moves_charges);
	RUN(test_retag_huge_object);
	RUN(test_sole_objcg);
	RUN(test_failed_charge_keeps_the_slot);
	RUN(test_huge_objects_charge_exactly);
	RUN(test_churn_strands_no_charge);
	RUN(test_ids_run_out);
	return test_done_then_locked(argv);
}
