/* SPDX-License-Identifier: MIT */
/*
 * test_reclaim_fault.c - allocation failure in the reclaim paths, swept
 * over N (SQLite style, as test_slab_fault.c): the Nth call through the
 * single fault point fails (once, or from then on when sticky), and a
 * sequence runs that touches every metadata allocation of src/reclaim:
 *
 *   shrinker create + register, a memcg- and NUMA-aware list_lru and a
 *   plain one (its own id), three new groups under a parent with
 *   memory.max (their per-group info, id chunks and per-node lists are
 *   allocated on their first add), objects added on every node, reclaim
 *   forced by memory.max, memory.reclaim, mcg_reclaim(), list_lru walk and
 *   del, a group removed with objects on its lists (reparented; dels
 *   through the removed group), teardown.
 *
 * Every point must end in "correct result or clean -ENOMEM": objects
 * whose add failed are uncharged and freed by the caller; at the end of
 * each run every counter is exact (objects alive = objects on the lists =
 * pages charged to the parent; zero after teardown), kmalloc holds exactly
 * the objects it held before (slabinfo), no shrinker id is left taken and
 * the root's usage is back to its start.  The objects themselves come
 * from libc so that ASan's leak check sees them.  A last sweep covers the
 * global pressure monitor's set-up (eventfd, thread), and a test the
 * start of the memory.high worker (the thread of the worker queue).
 *
 * main() runs everything again with MCG_NUMA_NODES=2 (per-node lists).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memcg/debug.h"
#include "memcg/group.h"
#include "memcg/pressure.h"
#include "memcg/reclaim.h"
#include "memcg/slab.h"
#include "reclaim/shrinker.h"
#include "group_file.h"
#include "test.h"

#define PAGE ((long)MCG_GROUP_PAGE_SIZE)
#define NR_OBJS 240
#define MAX_PAGES 160 /* the parent's memory.max: forces reclaim while filling */

struct fobj {
	mcg_lru_link_t link;
	mcg_group_t *g; /* charged one page; referenced */
	unsigned nid;
	int slot;
};

static struct {
	mcg_shrinker_t *s;
	mcg_list_lru_t *lru;
	struct fobj *slot[NR_OBJS]; /* live objects by slot (single thread: no lock) */
	long live;
} fc;

static void obj_free(struct fobj *o)
{
	fc.slot[o->slot] = NULL;
	fc.live--;
	CHECK_EQ(mcg_uncharge(o->g, 1), 0);
	mcg_group_put(o->g);
	free(o);
}

static unsigned long dispose_all(mcg_lru_link_t *dispose)
{
	unsigned long n = 0;
	while (dispose->next != dispose) {
		mcg_lru_link_t *l = dispose->next;
		l->next->prev = l->prev;
		l->prev->next = l->next;
		obj_free((struct fobj *)l);
		n++;
	}
	return n;
}

static enum mcg_lru_status isolate_all(mcg_lru_link_t *item, mcg_list_lru_one_t *list, void *arg)
{
	mcg_list_lru_isolate_move(list, item, arg);
	return MCG_LRU_REMOVED;
}

/* Every third object is kept (rotated), the others isolated. */
static enum mcg_lru_status isolate_some(mcg_lru_link_t *item, mcg_list_lru_one_t *list, void *arg)
{
	if (((struct fobj *)item)->slot % 3 == 0)
		return MCG_LRU_ROTATE;
	mcg_list_lru_isolate_move(list, item, arg);
	return MCG_LRU_REMOVED;
}

static unsigned long f_count(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	(void)s;
	return mcg_list_lru_shrink_count(fc.lru, sc);
}

static unsigned long f_scan(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	(void)s;
	mcg_lru_link_t dispose = {&dispose, &dispose};
	mcg_list_lru_shrink_walk(fc.lru, sc, isolate_all, &dispose);
	return dispose_all(&dispose);
}

static long usage_pages(mcg_group_t *g)
{
	char b[64];
	mcg_group_drain_stocks();
	if (mcg_group_read(g, "memory.current", b, sizeof(b)) < 0)
		return -1;
	return atol(b) / PAGE;
}

/* Objects held by the kmalloc caches (slabinfo's active_objs, exact). */
static long kmalloc_objects(void)
{
	int fd = memfd_create("slabinfo", 0);
	if (fd < 0)
		return -1;
	long total = 0;
	if (mcg_slabinfo_write(fd) == 0) {
		static char buf[1 << 16];
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = 0;
		for (char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
			char name[64];
			long active;
			if (sscanf(p, "%63s %ld", name, &active) == 2 &&
			    !strncmp(name, "kmalloc-", 8))
				total += active;
		}
	} else {
		total = -1;
	}
	close(fd);
	return total;
}

/* Add one object charged to @g on node @nid; clean failure leaves nothing. */
static int add_one(mcg_group_t *g, int slot, unsigned nid)
{
	struct fobj *o = calloc(1, sizeof(*o));
	if (!o)
		abort();
	int err = mcg_charge(g, 1, 0);
	if (err) {
		free(o);
		return err;
	}
	mcg_group_get(g);
	o->g = g;
	o->nid = nid;
	o->slot = slot;
	fc.slot[slot] = o;
	fc.live++;
	int r = mcg_list_lru_add(fc.lru, &o->link, nid, g);
	if (r != 1) {
		CHECK_EQ(r, -ENOMEM);
		obj_free(o); /* not on any list: uncharge and free it ourselves */
		return r;
	}
	return 0;
}

static long nr_live_slots(void)
{
	long n = 0;
	for (int i = 0; i < NR_OBJS; i++)
		n += fc.slot[i] != NULL;
	return n;
}

/*
 * The sequence.  Return: 0 when it ran with no failure seen by it,
 * -ENOMEM when some step failed cleanly.
 */
static int sequence(void)
{
	int err = 0, r;
	unsigned nodes = mcg_nr_nodes();
	mcg_shrinker_ops_t ops = {.name = "fault",
	                          .count_objects = f_count,
	                          .scan_objects = f_scan,
	                          .batch = 16,
	                          .flags = MCG_SHRINKER_MEMCG_AWARE | MCG_SHRINKER_NUMA_AWARE};
	memset(&fc, 0, sizeof(fc));
	r = mcg_shrinker_create(&ops, &fc.s);
	if (r) {
		CHECK_EQ(r, -ENOMEM);
		return r;
	}
	r = mcg_list_lru_create(fc.s, &fc.lru);
	if (r) {
		CHECK_EQ(r, -ENOMEM);
		mcg_shrinker_destroy(fc.s);
		return r;
	}
	mcg_list_lru_t *plain = NULL;
	r = mcg_list_lru_create(NULL, &plain);
	if (r) {
		CHECK_EQ(r, -ENOMEM);
		err = r;
		plain = NULL;
	}
	CHECK_EQ(mcg_shrinker_register(fc.s), 0);

	mcg_group_t *p = NULL, *c[3] = {NULL, NULL, NULL};
	r = mcg_group_create(NULL, "fault-p", &p);
	if (r) {
		CHECK_EQ(r, -ENOMEM);
		err = r;
		goto teardown;
	}
	char max[32];
	snprintf(max, sizeof(max), "%ld", MAX_PAGES * PAGE);
	CHECK_EQ(mcg_group_write(p, "memory.max", max), 0);
	for (int i = 0; i < 3; i++) {
		char name[16];
		snprintf(name, sizeof(name), "c%d", i);
		r = mcg_group_create(p, name, &c[i]);
		if (r) {
			CHECK_EQ(r, -ENOMEM);
			err = r;
			goto teardown;
		}
	}

	/* Fill: more than memory.max, so charges reclaim (the shrinker frees). */
	for (int i = 0; i < NR_OBJS; i++) {
		r = add_one(c[i % 3], i, (unsigned)(i / 3) % nodes);
		if (r) {
			CHECK_EQ(r, -ENOMEM);
			err = r;
		}
	}
	CHECK_EQ(fc.live, nr_live_slots());
	CHECK_EQ((long)mcg_list_lru_count(fc.lru), fc.live);
	CHECK(usage_pages(p) <= MAX_PAGES);
	CHECK_EQ(usage_pages(p), fc.live);
	CHECK(fc.live > 0 || err);
	long sum = 0;
	for (int i = 0; i < 3; i++)
		sum += usage_pages(c[i]);
	CHECK_EQ(sum, fc.live);

	/* Plain (not memcg-aware) list_lru: add and del one object on it. */
	if (plain) {
		mcg_lru_link_t l = {NULL, NULL};
		r = mcg_list_lru_add(plain, &l, 0, c[0]);
		CHECK_EQ(r, 1); /* its lists exist since create */
		CHECK_EQ(mcg_list_lru_count(plain), 1);
		CHECK_EQ(mcg_list_lru_del(plain, &l, 0, NULL), 1);
	}

	/* memory.reclaim and a direct reclaim call. */
	long before = fc.live;
	r = mcg_group_write(c[0], "memory.reclaim", "65536");
	CHECK(r == 0 || r == -EAGAIN);
	unsigned long got = mcg_reclaim(c[2], 8, 0);
	CHECK(got <= (unsigned long)before);
	CHECK_EQ(usage_pages(p), fc.live);

	/* Walk: isolate two thirds of what is left of c[2] and c[0] everywhere. */
	mcg_lru_link_t dispose = {&dispose, &dispose};
	for (unsigned nid = 0; nid < nodes; nid++) {
		unsigned long nr = ~0ul;
		mcg_list_lru_walk_one(fc.lru, nid, c[2], isolate_some, &dispose, &nr);
	}
	dispose_all(&dispose);
	CHECK_EQ((long)mcg_list_lru_count(fc.lru), fc.live);

	/* Del by hand every fifth live object. */
	for (int i = 0; i < NR_OBJS; i += 5) {
		struct fobj *o = fc.slot[i];
		if (!o)
			continue;
		CHECK_EQ(mcg_list_lru_del(fc.lru, &o->link, o->nid, o->g), 1);
		obj_free(o);
	}
	CHECK_EQ((long)mcg_list_lru_count(fc.lru), fc.live);

	/* Remove c1 with objects on its lists: they move to p's lists. */
	long on_c1 = 0, on_p = 0;
	for (unsigned nid = 0; nid < nodes; nid++) {
		on_c1 += (long)mcg_list_lru_count_one(fc.lru, nid, c[1]);
		on_p += (long)mcg_list_lru_count_one(fc.lru, nid, p);
	}
	CHECK_EQ(mcg_group_remove(c[1]), 0);
	long on_p2 = 0;
	for (unsigned nid = 0; nid < nodes; nid++) {
		CHECK_EQ(mcg_list_lru_count_one(fc.lru, nid, c[1]), 0);
		on_p2 += (long)mcg_list_lru_count_one(fc.lru, nid, p);
	}
	CHECK_EQ(on_p2, on_p + on_c1);
	CHECK_EQ((long)mcg_list_lru_count(fc.lru), fc.live);
	/* Del through the removed group finds them in the parent's lists. */
	for (int i = 1; i < NR_OBJS; i += 3 * 4) {
		struct fobj *o = fc.slot[i];
		if (!o || o->g != c[1])
			continue;
		CHECK_EQ(mcg_list_lru_del(fc.lru, &o->link, o->nid, o->g), 1);
		obj_free(o);
	}
	/* An add for the removed group lands in the parent's lists too. */
	r = add_one(c[1], 1, 0);
	if (r) {
		CHECK_EQ(r, -ENOMEM);
		err = r;
	}
	CHECK_EQ((long)mcg_list_lru_count(fc.lru), fc.live);
	CHECK_EQ(usage_pages(p), fc.live);

teardown:
	mcg_shrinker_unregister(fc.s);
	mcg_lru_link_t rest = {&rest, &rest};
	mcg_list_lru_walk(fc.lru, isolate_all, &rest, ~0ul);
	dispose_all(&rest);
	CHECK_EQ(fc.live, 0);
	CHECK_EQ(nr_live_slots(), 0);
	CHECK_EQ(mcg_list_lru_count(fc.lru), 0);
	mcg_list_lru_destroy(fc.lru);
	mcg_list_lru_destroy(plain);
	mcg_shrinker_destroy(fc.s);
	if (p)
		CHECK_EQ(usage_pages(p), 0);
	for (int i = 0; i < 3; i++) {
		if (!c[i])
			continue;
		if (mcg_group_is_online(c[i]))
			CHECK_EQ(mcg_group_remove(c[i]), 0);
		mcg_group_put(c[i]);
	}
	if (p) {
		CHECK_EQ(mcg_group_remove(p), 0);
		mcg_group_put(p);
	}
	return err;
}

/*
 * Sweep N = 1, 2, ... until a run sees no failure.  @warm: the process
 * already ran the sequence, so nothing is allocated for good any more and
 * kmalloc must come back exactly to its start at every N.
 */
static void sweep(int sticky, int warm)
{
	long kobj0 = kmalloc_objects(), root0 = usage_pages(mcg_group_root());
	int ids0 = mcg_shrinker_ids_in_use();
	unsigned long n;
	int clean_failures = 0;
	for (n = 1; n < 5000; n++) {
		mcg_fault_inject(n, sticky);
		int r = sequence();
		unsigned long failed = mcg_fault_failed();
		mcg_fault_inject(0, 0);
		CHECK_EQ(mcg_shrinker_ids_in_use(), ids0);
		CHECK_EQ(usage_pages(mcg_group_root()), root0);
		long kobj = kmalloc_objects();
		if (warm)
			CHECK_EQ(kobj, kobj0);
		else
			CHECK(kobj >= kobj0);
		if (failed == 0) {
			CHECK_EQ(r, 0);
			break;
		}
		clean_failures += r != 0;
	}
	fprintf(stderr, "%s %s sweep (%u nodes): %lu points, %d ended in a clean error\n",
	        warm ? "warm" : "cold", sticky ? "sticky" : "single", mcg_nr_nodes(), n,
	        clean_failures);
	CHECK(n >= 10);
	CHECK(n < 5000);
	CHECK(clean_failures > 0);
}

static void test_sweep_cold(void) { sweep(0, 0); }

/* With no fault armed the sequence completes (and warms every one-time allocation). */
static void test_sequence_clean(void) { CHECK_EQ(sequence(), 0); }

static void test_sweep_single(void) { sweep(0, 1); }

static void test_sweep_sticky(void) { sweep(1, 1); }

/*
 * The memory.high worker (callers that cannot sleep): its thread is
 * created on the first queued group and passes the fault point.  Refused,
 * the charge still succeeds and the queued reference is dropped at once;
 * then it starts, and takes and drops its references as it works.  Runs
 * first: the worker is process-wide.
 */
static void test_worker_fault(void)
{
	mcg_reclaim_init();
	mcg_group_t *warm;
	REQUIRE(mcg_group_create(NULL, "fault-warm", &warm) == 0); /* one-time allocations */
	mcg_group_remove(warm);
	mcg_group_put(warm);
	long kobj0 = kmalloc_objects();
	for (int round = 0; round < 2; round++) {
		mcg_group_t *g;
		REQUIRE(mcg_group_create(NULL, "fault-w", &g) == 0);
		CHECK_EQ(mcg_group_write(g, "memory.high", "65536"), 0); /* 16 pages */
		mcg_fault_inject(round == 0 ? 1 : 0, 1);
		for (int i = 0; i < 32; i++)
			CHECK_EQ(mcg_charge(g, 1, MCG_CHARGE_NOWAIT), 0);
		unsigned long failed = mcg_fault_failed();
		mcg_fault_inject(0, 0);
		if (round == 0)
			CHECK(failed >= 1);
		CHECK(read_key(g, "memory.events", "high") > 0);
		CHECK_EQ(mcg_uncharge(g, 32), 0);
		CHECK_EQ(mcg_group_remove(g), 0);
		mcg_group_put(g);
		/* Freed once the worker (if any) dropped its reference. */
		long kobj = -1;
		for (int t = 0; t < 200 && (kobj = kmalloc_objects()) != kobj0; t++)
			usleep(10000);
		CHECK_EQ(kobj, kobj0);
	}
}

/*
 * A group removed before it ever had lists, with every allocation failing
 * during the removal: an object added for it afterwards still lands in
 * its parent's list (the removal allocates nothing; a list allocated for
 * an offline group dies at once).
 */
static void test_removed_without_lists(void)
{
	mcg_shrinker_ops_t ops = {.count_objects = f_count,
	                          .scan_objects = f_scan,
	                          .flags = MCG_SHRINKER_MEMCG_AWARE};
	memset(&fc, 0, sizeof(fc));
	REQUIRE(mcg_shrinker_create(&ops, &fc.s) == 0);
	REQUIRE(mcg_list_lru_create(fc.s, &fc.lru) == 0);
	mcg_group_t *p, *g;
	REQUIRE(mcg_group_create(NULL, "fault-rp", &p) == 0);
	REQUIRE(mcg_group_create(p, "g", &g) == 0);
	mcg_fault_inject(1, 1);
	CHECK_EQ(mcg_group_remove(g), 0);
	mcg_fault_inject(0, 0);
	CHECK_EQ(add_one(g, 0, 0), 0);
	CHECK_EQ(mcg_list_lru_count_one(fc.lru, 0, g), 0);
	CHECK_EQ(mcg_list_lru_count_one(fc.lru, 0, p), 1);
	CHECK_EQ(mcg_list_lru_del(fc.lru, &fc.slot[0]->link, 0, g), 1);
	obj_free(fc.slot[0]);
	CHECK_EQ(fc.live, 0);
	mcg_list_lru_destroy(fc.lru);
	mcg_shrinker_destroy(fc.s);
	mcg_group_put(g);
	mcg_group_remove(p);
	mcg_group_put(p);
}

/* The pressure monitor's set-up: start fails cleanly (nothing running) or works. */
static void test_pressure_sweep(void)
{
	char dir[] = "/tmp/mcg-fault-XXXXXX";
	REQUIRE(mkdtemp(dir));
	REQUIRE(mcg_pressure_set_root(dir) == 0);
	unsigned long n;
	int failures = 0;
	for (n = 1; n < 100; n++) {
		mcg_fault_inject(n, 0);
		int r = mcg_pressure_start(NULL);
		unsigned long failed = mcg_fault_failed();
		mcg_fault_inject(0, 0);
		mcg_pressure_status_t st;
		CHECK_EQ(mcg_pressure_status(&st), 0);
		if (r) {
			CHECK_EQ(r, -ENOMEM);
			CHECK_EQ(st.running, 0);
			CHECK_EQ(mcg_pressure_balance(), -ENOTCONN);
			failures++;
		} else {
			CHECK_EQ(st.running, 1);
			mcg_pressure_stop();
			CHECK_EQ(mcg_pressure_status(&st), 0);
			CHECK_EQ(st.running, 0);
		}
		if (failed == 0) {
			CHECK_EQ(r, 0);
			break;
		}
	}
	CHECK(failures >= 1);
	CHECK(n < 100);
	mcg_pressure_set_root(NULL);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	(void)argc;
	RUN(test_worker_fault);
	RUN(test_sweep_cold);
	RUN(test_sequence_clean);
	RUN(test_sweep_single);
	RUN(test_sweep_sticky);
	RUN(test_pressure_sweep);
	RUN(test_removed_without_lists);
	int rc = test_done();
	if (getenv("MCG_TEST_FAKE_NUMA"))
		return rc;
	fprintf(stderr, "--- again with MCG_NUMA_NODES=2\n");
	return test_merge(rc, test_rerun(argv, "MCG_NUMA_NODES", "2", "MCG_TEST_FAKE_NUMA"));
}
