/* SPDX-License-Identifier: MIT */
/*
 * test_kmem.c - accounted objects under group churn, in the style of the
 * kernel's tools/testing/selftests/cgroup/test_kmem.c, in-process: every
 * check goes through the text files (memory.current, memory.stat,
 * cgroup.stat) and mcg_obj_group().  "slot" below is an object's charge:
 * its slot size plus 8 bytes (its objcg vector entry).
 *
 * test_kmem_drain_lock_order: a REPRODUCER of a core bug (see there).
 *
 * test_kmem_memcg_deletion (the selftest's test_kmem_memcg_deletion):
 *
 *     root
 *      `- kmem          anon 16 pages of its own (mcg_charge)
 *          `- child<i>  i = 0..99, one after another: 2-4 threads each
 *                       allocate and free accounted objects (an ACCOUNT
 *                       cache, an ACCOUNT|RECLAIMABLE cache, kmalloc and
 *                       kcalloc accounted, mixed sizes) and 1-4 anon pages,
 *                       then hold their live set while the main thread checks:
 *                         child slab       == sum of the live slots (exact)
 *                         child slab_reclaimable == the reclaimable ones
 *                         kmem anon        == (16 + the threads' pages) x 4K
 *                         kmem current     == anon + kernel +- 64 pages x CPUs
 *                         slab <= kernel
 *                       then free everything and the child is removed:
 *                         kmem current == anon + kernel == 16 pages, exactly,
 *                         after mcg_group_drain_stocks()
 *     at the end: kmem nr_dying_descendants 0, kmem current 0.
 *
 * test_kmem_reparent_live: 30 groups removed while their objects live:
 *
 *     root
 *      `- kp                 current and slab unchanged by every removal
 *          |- r<i>           i = 0..29, 60 objects each (cache and kmalloc)
 *          |   `- sub        for i % 3 == 0: 30 more, removed before r<i>
 *                            mcg_obj_group() of every such object: kp
 *     every 5 groups the objects of an earlier removed group are freed:
 *     kp slab drops by exactly their slots; at the end kp current 0, slab 0,
 *     kernel 0, nr_dying_descendants 0.
 *
 * test_kmem_dead_cgroups (the selftest's test_kmem_dead_cgroups):
 *
 *     root
 *      `- kd
 *          `- d<r>_<i>       10 rounds x 40 groups created, used by a thread
 *                            (alloc/free), left with 8 live objects, removed:
 *                            nr_dying_descendants of kd is 0 after every round
 *                            (it never grows with churn, even though objects
 *                            of every removed group are still live), and 1
 *                            exactly while the test holds a reference to a
 *                            removed group.  At the end the objects are freed:
 *                            kd current 0.
 *
 * test_kmem_free_elsewhere: objects allocated in one group and freed by
 * threads in another group or in none, concurrently:
 *
 *     root
 *      `- kf
 *          |- a     4 threads in a allocate 4 x 1500 objects; then a thread
 *          |        in b and a thread in no group free them, while b's own
 *          |        thread allocates and frees its own:
 *          `- b     a: current 0 at the end; b: current == its own live
 *                   objects' kernel, slab == their slots; kf: current 0.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "memcg/debug.h"
#include "memcg/kmalloc.h"
#include "memcg/slab.h"
#include "memcontrol.h"
#include "stress.h"

static mcg_cache_t *kacct, *krecl;
static long slot_acct, slot_recl; /* charge per object: slot + vector entry */
static long entry;                /* a vector entry: what a kmalloc block charges beyond its size */

static long cur(mcg_group_t *g)
{
	char b[64];
	if (mcg_group_read(g, "memory.current", b, sizeof(b)) < 0)
		return -1;
	return atol(b);
}

static long mstat(mcg_group_t *g, const char *key) { return read_key(g, "memory.stat", key); }

static long dying(mcg_group_t *g) { return read_key(g, "cgroup.stat", "nr_dying_descendants"); }

/* At rest: memory.current == anon + kernel exactly, slab <= kernel. */
static void check_rest(mcg_group_t *g)
{
	mcg_group_drain_stocks();
	CHECK_EQ(cur(g), mstat(g, "anon") + mstat(g, "kernel"));
	CHECK(mstat(g, "slab") <= mstat(g, "kernel"));
	CHECK_EQ(mstat(g, "slab"), mstat(g, "slab_reclaimable") + mstat(g, "slab_unreclaimable"));
}

static const size_t sizes[] = {8, 24, 64, 100, 250, 500, 1000, 3000, 4096, 9000};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* An accounted object of some kind, and what it charges. */
struct obj {
	void *p;
	int kind; /* 0: kacct, 1: krecl, 2: kmalloc */
	long charge;
};

/* Allocate an object of a random kind in group @g (NULL: the current one). */
static int obj_alloc(struct obj *o, mcg_group_t *g, unsigned *seed)
{
	unsigned r = stress_rnd(seed);
	o->kind = (int)(r % 3);
	switch (o->kind) {
	case 0:
		o->p = g ? mcg_cache_alloc_account(kacct, g) : mcg_cache_alloc(kacct);
		o->charge = slot_acct;
		break;
	case 1:
		o->p = g ? mcg_cache_alloc_account(krecl, g) : mcg_cache_alloc(krecl);
		o->charge = slot_recl;
		break;
	default: {
		size_t sz = sizes[(r >> 8) % NSIZES];
		o->p = (r >> 16) & 1 ? mcg_malloc_account(sz, g) : mcg_calloc_account(1, sz, g);
		o->charge = o->p ? (long)mcg_malloc_usable_size(o->p) + entry : 0;
		break;
	}
	}
	if (!o->p)
		return -1;
	memset(o->p, 0x5a, 8);
	return 0;
}

static void obj_free(struct obj *o)
{
	if (!o->p)
		return;
	CHECK_EQ(((unsigned char *)o->p)[7], 0x5a);
	if (o->kind == 0)
		mcg_cache_free(kacct, o->p);
	else if (o->kind == 1)
		mcg_cache_free(krecl, o->p);
	else
		mcg_free(o->p);
	o->p = NULL;
}

static void setup_caches(void)
{
	kacct = mcg_cache_create("kmem-acct", 200, 0, MCG_CACHE_ACCOUNT, NULL);
	krecl = mcg_cache_create("kmem-recl", 96, 0, MCG_CACHE_ACCOUNT | MCG_CACHE_RECLAIMABLE,
	                         NULL);
	if (!kacct || !krecl) {
		fprintf(stderr, "cannot create the caches\n");
		exit(1);
	}
	mcg_cache_stats_t st;
	mcg_cache_stats(kacct, &st);
	slot_acct = (long)st.charge_size;
	entry = (long)(st.charge_size - st.slot_size); /* a kmalloc block's too */
	mcg_cache_stats(krecl, &st);
	slot_recl = (long)st.charge_size;
}

/* ------------------------------------------------------------ reproducer */

/*
 * REPRODUCER (core bug, found by this file, reported to the lead): in debug
 * builds (the sanitizer builds) mcg_group_drain_stocks() dies with "lock
 * order violated: rank 45 taken while holding rank 90".  group/stock.c's
 * mcg_stock_drain_words() locks every CPU's words (MCG_RANK_LEAF), then
 * unlocks and drains them one CPU at a time, so the byte stock's
 * drain_word() -> units_return() takes an objcg's lock (MCG_RANK_OBJCG)
 * while the later CPUs' word locks are still held.  Needs 2+ CPUs and a
 * stocked word on a CPU before the last one: free accounted objects on
 * every CPU, then drain.
 */
static void *alloc_free_on(void *arg)
{
	unsigned cpu = (unsigned)(uintptr_t)arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	void *p = mcg_malloc_account(100, mcg_group_root());
	mcg_free(p);
	return NULL;
}

static void test_kmem_drain_lock_order(void)
{
	for (unsigned cpu = 0; cpu < mcg_nr_cpus() && cpu < 64; cpu++) {
		pthread_t t;
		pthread_create(&t, NULL, alloc_free_on, (void *)(uintptr_t)cpu);
		pthread_join(t, NULL);
	}
	mcg_group_drain_stocks(); /* debug builds: FATAL lock order violated */
	CHECK_EQ(cur(mcg_group_root()), 0);
}

/* ------------------------------------------------------------ deletion */

#define NCHILDREN 100
#define LIVE 128
#define OPS 2000
#define OWN_ANON 16

struct worker {
	mcg_group_t *g;
	pthread_barrier_t *hold;
	unsigned seed;
	long live_bytes, live_recl, anon_pages;
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	static __thread struct obj live[LIVE];
	mcg_group_t *prev = mcg_group_enter(w->g);
	for (int i = 0; i < OPS; i++) {
		struct obj *o = &live[stress_rnd(&w->seed) % LIVE];
		if (o->p)
			obj_free(o);
		else
			CHECK_EQ(obj_alloc(o, NULL, &w->seed), 0);
	}
	w->anon_pages = 1 + stress_rnd(&w->seed) % 4;
	CHECK_EQ(mcg_charge(NULL, (unsigned long)w->anon_pages, 0), 0);
	w->live_bytes = w->live_recl = 0;
	for (int i = 0; i < LIVE; i++) {
		w->live_bytes += live[i].p ? live[i].charge : 0;
		w->live_recl += live[i].p && live[i].kind == 1 ? live[i].charge : 0;
	}
	pthread_barrier_wait(w->hold); /* live set held */
	pthread_barrier_wait(w->hold); /* main measured */
	for (int i = 0; i < LIVE; i++)
		obj_free(&live[i]);
	CHECK_EQ(mcg_uncharge(NULL, (unsigned long)w->anon_pages), 0);
	mcg_group_leave(prev);
	return NULL;
}

static void test_kmem_memcg_deletion(void)
{
	mcg_group_t *kmem;
	REQUIRE(mcg_group_create(NULL, "kmem", &kmem) == 0);
	REQUIRE(alloc_anon(kmem, OWN_ANON) == OWN_ANON);
	const long slack = 64l * mcg_nr_cpus() * PAGE;
	long worst = 0;
	for (int i = 0; i < NCHILDREN; i++) {
		char name[16];
		snprintf(name, sizeof(name), "child%d", i);
		mcg_group_t *c;
		REQUIRE(mcg_group_create(kmem, name, &c) == 0);
		/* Empty every stock: only c's entries fill while its threads run. */
		mcg_group_drain_stocks();
		int nt = 2 + i % 3;
		pthread_barrier_t hold;
		pthread_barrier_init(&hold, NULL, (unsigned)nt + 1);
		struct worker w[4];
		pthread_t t[4];
		for (int k = 0; k < nt; k++) {
			w[k] = (struct worker){
			        .g = c, .hold = &hold, .seed = 1u + (unsigned)(i * 4 + k)};
			pthread_create(&t[k], NULL, worker, &w[k]);
		}
		pthread_barrier_wait(&hold);
		long bytes = 0, recl = 0, anon = OWN_ANON * PAGE;
		for (int k = 0; k < nt; k++)
			bytes += w[k].live_bytes, recl += w[k].live_recl,
			        anon += w[k].anon_pages * PAGE;
		/* Live objects, stocks full: the stats are exact, current is
		 * within the stock bound of their sum. */
		CHECK_EQ(mstat(c, "slab"), bytes);
		CHECK_EQ(mstat(c, "slab_reclaimable"), recl);
		CHECK_EQ(mstat(kmem, "slab"), bytes);
		CHECK_EQ(mstat(kmem, "anon"), anon);
		long parts = mstat(kmem, "anon") + mstat(kmem, "kernel");
		long now = cur(kmem);
		CHECK(labs(now - parts) <= slack);
		if (labs(now - parts) > worst)
			worst = labs(now - parts);
		CHECK(mstat(kmem, "slab") <= mstat(kmem, "kernel"));
		check_rest(kmem);
		check_rest(c);
		/* drained: each objcg keeps less than a page beyond its objects */
		CHECK(mstat(c, "kernel") >= bytes && mstat(c, "kernel") < bytes + 2 * PAGE);
		pthread_barrier_wait(&hold);
		for (int k = 0; k < nt; k++)
			pthread_join(t[k], NULL);
		pthread_barrier_destroy(&hold);
		mcg_group_drain_stocks();
		CHECK_EQ(cur(c), 0);
		CHECK_EQ(mstat(c, "kernel"), 0);
		CHECK_EQ(mcg_group_remove(c), 0);
		mcg_group_put(c);
		check_rest(kmem);
		CHECK_EQ(cur(kmem), OWN_ANON * PAGE);
		CHECK_EQ(mstat(kmem, "slab"), 0);
	}
	fprintf(stderr,
	        "deletion: worst |current - (anon + kernel)| while live: %ld pages "
	        "(bound %ld)\n",
	        worst / PAGE, slack / PAGE);
	CHECK_EQ(dying(kmem), 0);
	CHECK_EQ(read_key(kmem, "cgroup.stat", "nr_descendants"), 0);
	CHECK_EQ(mcg_uncharge(kmem, OWN_ANON), 0);
	mcg_group_drain_stocks();
	CHECK_EQ(cur(kmem), 0);
	CHECK_EQ(mcg_group_remove(kmem), 0);
	mcg_group_put(kmem);
	CHECK_EQ(dying(mcg_group_root()), 0);
}

/* ------------------------------------------------------------ reparenting */

#define NREMOVED 30
#define PER_GROUP 60
#define PER_SUB 30

static void test_kmem_reparent_live(void)
{
	static struct obj objs[NREMOVED][PER_GROUP + PER_SUB];
	long charge[NREMOVED] = {0};
	mcg_group_t *kp;
	REQUIRE(mcg_group_create(NULL, "kp", &kp) == 0);
	unsigned seed = 12345;
	long live = 0; /* slots of every live object under kp */
	for (int i = 0; i < NREMOVED; i++) {
		char name[16];
		snprintf(name, sizeof(name), "r%d", i);
		mcg_group_t *r, *sub = NULL;
		REQUIRE(mcg_group_create(kp, name, &r) == 0);
		if (i % 3 == 0)
			REQUIRE(mcg_group_create(r, "sub", &sub) == 0);
		int n = sub ? PER_GROUP + PER_SUB : PER_GROUP;
		for (int k = 0; k < n; k++) {
			struct obj *o = &objs[i][k];
			REQUIRE(obj_alloc(o, k < PER_GROUP ? r : sub, &seed) == 0);
			charge[i] += o->charge;
		}
		live += charge[i];
		mcg_group_drain_stocks();
		CHECK_EQ(mstat(r, "slab"), charge[i]);
		long before = cur(kp), slab_before = mstat(kp, "slab");
		CHECK_EQ(slab_before, live);
		if (sub) {
			CHECK_EQ(mcg_group_remove(sub), 0);
			mcg_group_t *owner = NULL;
			CHECK_EQ(mcg_obj_group(objs[i][PER_GROUP].p, &owner), 0);
			CHECK(owner == r); /* one level up */
			mcg_group_put(owner);
			CHECK_EQ(mstat(r, "slab"), charge[i]);
			mcg_group_put(sub);
		}
		CHECK_EQ(mcg_group_remove(r), 0);
		CHECK_EQ(dying(kp), 1); /* we still hold r */
		mcg_group_put(r);
		CHECK_EQ(dying(kp), 0); /* its live objects do not keep it */
		mcg_group_drain_stocks();
		CHECK_EQ(cur(kp), before);
		CHECK_EQ(mstat(kp, "slab"), slab_before);
		check_rest(kp);
		for (int k = 0; k < n; k++) {
			mcg_group_t *owner = NULL;
			CHECK_EQ(mcg_obj_group(objs[i][k].p, &owner), 0);
			CHECK(owner == kp);
			mcg_group_put(owner);
		}
		/* Free the objects of a group removed earlier: kp uncharged. */
		if (i % 5 == 4) {
			int j = i - 3;
			for (int k = 0; k < PER_GROUP + PER_SUB; k++)
				obj_free(&objs[j][k]);
			live -= charge[j];
			charge[j] = 0;
			mcg_group_drain_stocks();
			CHECK_EQ(mstat(kp, "slab"), live);
			CHECK(cur(kp) <= before);
			check_rest(kp);
		}
	}
	CHECK_EQ(read_key(kp, "cgroup.stat", "nr_descendants"), 0);
	for (int i = 0; i < NREMOVED; i++)
		for (int k = 0; k < PER_GROUP + PER_SUB; k++)
			obj_free(&objs[i][k]);
	mcg_group_drain_stocks();
	CHECK_EQ(cur(kp), 0);
	CHECK_EQ(mstat(kp, "slab"), 0);
	CHECK_EQ(mstat(kp, "kernel"), 0);
	CHECK_EQ(dying(kp), 0);
	CHECK_EQ(mcg_group_remove(kp), 0);
	mcg_group_put(kp);
	mcg_group_drain_stocks();
	CHECK_EQ(cur(mcg_group_root()), 0);
}

/* ------------------------------------------------------------ dead cgroups */

#define ROUNDS 10
#define PER_ROUND 40
#define KEEP 8

struct user {
	mcg_group_t *g;
	struct obj *keep;
	unsigned seed;
};

/* In @u->g: allocate and free, then leave KEEP objects live. */
static void *use_group(void *arg)
{
	struct user *u = arg;
	struct obj tmp[32] = {{0}};
	mcg_group_t *prev = mcg_group_enter(u->g);
	for (int i = 0; i < 32; i++)
		CHECK_EQ(obj_alloc(&tmp[i], NULL, &u->seed), 0);
	for (int i = 0; i < KEEP; i++)
		CHECK_EQ(obj_alloc(&u->keep[i], NULL, &u->seed), 0);
	for (int i = 0; i < 32; i++)
		obj_free(&tmp[i]);
	mcg_group_leave(prev);
	return NULL;
}

static void test_kmem_dead_cgroups(void)
{
	static struct obj keep[ROUNDS][PER_ROUND][KEEP];
	mcg_group_t *kd;
	REQUIRE(mcg_group_create(NULL, "kd", &kd) == 0);
	long max_dying = 0;
	for (int r = 0; r < ROUNDS; r++) {
		mcg_group_t *held = NULL;
		for (int i = 0; i < PER_ROUND; i++) {
			char name[16];
			snprintf(name, sizeof(name), "d%d_%d", r, i);
			mcg_group_t *g;
			REQUIRE(mcg_group_create(kd, name, &g) == 0);
			struct user u = {g, keep[r][i], 7u + (unsigned)(r * PER_ROUND + i)};
			pthread_t t;
			pthread_create(&t, NULL, use_group, &u);
			pthread_join(t, NULL);
			CHECK_EQ(mcg_group_remove(g), 0);
			if (i == PER_ROUND / 2)
				held = g; /* one dying group, on purpose */
			else
				mcg_group_put(g);
		}
		CHECK_EQ(dying(kd), 1);
		mcg_group_put(held);
		long d = dying(kd);
		CHECK_EQ(d, 0);
		if (d > max_dying)
			max_dying = d;
		CHECK_EQ(read_key(kd, "cgroup.stat", "nr_descendants"), 0);
		check_rest(kd);
	}
	fprintf(stderr,
	        "dead cgroups: %d groups churned, nr_dying_descendants at most %ld "
	        "after a round\n",
	        ROUNDS * PER_ROUND, max_dying);
	mcg_group_drain_stocks();
	long live = 0;
	for (int r = 0; r < ROUNDS; r++)
		for (int i = 0; i < PER_ROUND; i++)
			for (int k = 0; k < KEEP; k++)
				live += keep[r][i][k].charge;
	CHECK_EQ(mstat(kd, "slab"), live);
	for (int r = 0; r < ROUNDS; r++)
		for (int i = 0; i < PER_ROUND; i++)
			for (int k = 0; k < KEEP; k++)
				obj_free(&keep[r][i][k]);
	mcg_group_drain_stocks();
	CHECK_EQ(cur(kd), 0);
	CHECK_EQ(mstat(kd, "slab"), 0);
	CHECK_EQ(mcg_group_remove(kd), 0);
	mcg_group_put(kd);
	CHECK_EQ(dying(mcg_group_root()), 0);
}

/* ------------------------------------------------------------ free elsewhere */

#define NALLOC 4
#define PER_ALLOC 1500

static struct obj cross[NALLOC * PER_ALLOC];

struct crossing {
	mcg_group_t *g; /* the group the thread is in (NULL: none) */
	int first, step;
	unsigned seed;
	long own; /* b's thread: slots of its own live objects */
};

static void *alloc_in_a(void *arg)
{
	struct crossing *x = arg;
	mcg_group_t *prev = mcg_group_enter(x->g);
	for (int i = x->first; i < NALLOC * PER_ALLOC; i += x->step)
		CHECK_EQ(obj_alloc(&cross[i], NULL, &x->seed), 0);
	mcg_group_leave(prev);
	return NULL;
}

static void *free_crossed(void *arg)
{
	struct crossing *x = arg;
	mcg_group_t *prev = x->g ? mcg_group_enter(x->g) : NULL;
	for (int i = x->first; i < NALLOC * PER_ALLOC; i += x->step)
		obj_free(&cross[i]);
	if (x->g)
		mcg_group_leave(prev);
	return NULL;
}

static void *b_own(void *arg)
{
	struct crossing *x = arg;
	static struct obj mine[256];
	mcg_group_t *prev = mcg_group_enter(x->g);
	for (int i = 0; i < 4000; i++) {
		struct obj *o = &mine[stress_rnd(&x->seed) % 256];
		if (o->p)
			obj_free(o);
		else
			CHECK_EQ(obj_alloc(o, NULL, &x->seed), 0);
	}
	mcg_group_leave(prev);
	x->own = 0;
	for (int i = 0; i < 256; i++)
		x->own += mine[i].p ? mine[i].charge : 0;
	return mine;
}

static void test_kmem_free_elsewhere(void)
{
	mcg_group_t *kf, *a, *b;
	REQUIRE(mcg_group_create(NULL, "kf", &kf) == 0);
	REQUIRE(mcg_group_create(kf, "a", &a) == 0);
	REQUIRE(mcg_group_create(kf, "b", &b) == 0);
	pthread_t t[NALLOC];
	struct crossing al[NALLOC];
	for (int k = 0; k < NALLOC; k++) {
		al[k] = (struct crossing){
		        .g = a, .first = k, .step = NALLOC, .seed = 99u + (unsigned)k};
		pthread_create(&t[k], NULL, alloc_in_a, &al[k]);
	}
	for (int k = 0; k < NALLOC; k++)
		pthread_join(t[k], NULL);
	long in_a = 0;
	for (int i = 0; i < NALLOC * PER_ALLOC; i++)
		in_a += cross[i].charge;
	mcg_group_drain_stocks();
	CHECK_EQ(mstat(a, "slab"), in_a);
	CHECK_EQ(cur(b), 0);
	/* a's objects freed by a thread in b and one in no group, while b's
	 * own thread allocates and frees. */
	struct crossing in_b = {.g = b, .first = 0, .step = 2};
	struct crossing nowhere = {.g = NULL, .first = 1, .step = 2};
	struct crossing own = {.g = b, .seed = 4242};
	pthread_t fb, fn, ob;
	pthread_create(&fb, NULL, free_crossed, &in_b);
	pthread_create(&fn, NULL, free_crossed, &nowhere);
	pthread_create(&ob, NULL, b_own, &own);
	void *mine_ptr = NULL;
	pthread_join(fb, NULL);
	pthread_join(fn, NULL);
	pthread_join(ob, &mine_ptr);
	struct obj *mine = mine_ptr;
	mcg_group_drain_stocks();
	CHECK_EQ(cur(a), 0);
	CHECK_EQ(mstat(a, "slab"), 0);
	CHECK_EQ(mstat(b, "slab"), own.own);
	CHECK_EQ(cur(b), mstat(b, "kernel"));
	CHECK(mstat(b, "kernel") < own.own + 3 * PAGE);
	check_rest(kf);
	/* and b's objects freed by a thread in a */
	mcg_group_t *prev = mcg_group_enter(a);
	for (int i = 0; i < 256; i++)
		obj_free(&mine[i]);
	mcg_group_leave(prev);
	mcg_group_drain_stocks();
	CHECK_EQ(cur(b), 0);
	CHECK_EQ(cur(a), 0);
	CHECK_EQ(cur(kf), 0);
	mcg_group_remove(a), mcg_group_put(a);
	mcg_group_remove(b), mcg_group_put(b);
	mcg_group_remove(kf), mcg_group_put(kf);
	CHECK_EQ(dying(mcg_group_root()), 0);
}

/* Every object was freed: the caches go, the root is back to 0. */
static void test_kmem_at_rest(void)
{
	CHECK_EQ(mcg_cache_destroy(kacct), 0);
	CHECK_EQ(mcg_cache_destroy(krecl), 0);
	mcg_group_drain_stocks();
	CHECK_EQ(cur(mcg_group_root()), 0);
	CHECK_EQ(mstat(mcg_group_root(), "slab"), 0);
	CHECK_EQ(dying(mcg_group_root()), 0);
}

int main(void)
{
	setup_caches();
	RUN(test_kmem_drain_lock_order);
	RUN(test_kmem_memcg_deletion);
	RUN(test_kmem_reparent_live);
	RUN(test_kmem_dead_cgroups);
	RUN(test_kmem_free_elsewhere);
	RUN(test_kmem_at_rest);
	return test_done();
}
