/* SPDX-License-Identifier: MIT */
/*
 * test_objcg_fault.c - allocation failure swept over the accounted path,
 * SQLite style (as test_slab_fault.c): make the Nth call through the fault
 * point fail (once, or from then on), run the sequence below, and require
 * "correct result or clean error, nothing leaked, every counter exact" at
 * every N, until the sequence runs with no failure injected.
 *
 *     root
 *      `- fa             600 objects of an ACCOUNT cache (entered), a 1 MiB
 *          |             accounted block
 *          |- fb  max 64K   4000 B blocks until the charge fails (ENOMEM)
 *          `- fc         200 kmalloc accounted blocks; removed while they
 *                        live: mcg_obj_group() says fa, fa's slab unchanged
 *
 * What can fail: group creation (the group, its per-CPU statistics, its
 * objcgs: -ENOMEM and no group left), the cache's creation, new slabs and
 * the per-slab objcg vectors (NULL, errno ENOMEM, nothing charged: fa's slab
 * is exactly the slots of its live objects after every failure), the large
 * block's mapping.  The charge failure comes from fb's memory.max.
 *
 * After each N: the root's memory.current, slab and kernel are 0 after a
 * drain, no group is left (live or dying), every cache's active objects
 * less the slabs' objcg vectors are back to their count before the sweep (a
 * leaked group or objcg would be a live kmalloc object), and the page
 * allocator's bytes in use too.
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>

#include "memcg/debug.h"
#include "memcg/kmalloc.h"
#include "memcg/slab.h"
#include "os/os.h"
#include "page/pages.h"
#include "group/objcg.h" /* mcg_objcg_id_t: a vector entry, charged with its object */
#include "slab/slab.h"
#include "group_file.h"
#include "test.h"

#define PAGE 4096l
#define NA 600
#define NB 64
#define NC 200

static int reports;
static void on_report(const mcg_report_t *r)
{
	(void)r;
	reports++;
}

static long slab_of(mcg_group_t *g) { return read_key(g, "memory.stat", "slab"); }

/* Slabs of @c that carry an objcg vector (node locks taken). */
static size_t vectors_of(struct mcg_cache *c)
{
	size_t n = 0;
	for (unsigned i = 0; i < c->nr_nodes; i++) {
		struct mcg_cache_node *nd = &c->nodes[i];
		struct mcg_list *lists[] = {&nd->partial, &nd->full, &nd->empty};
		mcg_lock(&nd->lock);
		for (int l = 0; l < 3; l++)
			mcg_list_for_each (pos, lists[l])
				n += mcg_list_entry(pos, struct mcg_slab, link)->objcgs != 0;
		mcg_unlock(&nd->lock);
	}
	return n;
}

/*
 * Active objects of every cache, less the objcg vectors (a kmalloc object
 * per slab that ever held an accounted object, freed with the slab: which
 * slabs have one depends on where objects landed, a slab that also holds
 * long-lived objects keeps its vector).  A leaked group, objcg or vector of
 * a released slab shows here.
 */
static size_t active_objects(void)
{
	size_t n = 0, vectors = 0;
	mcg_lock(&mcg_cache_list_lock);
	mcg_list_for_each (pos, &mcg_cache_list) {
		struct mcg_cache *c = mcg_list_entry(pos, struct mcg_cache, link);
		mcg_cache_stats_t st;
		mcg_cache_stats(c, &st);
		n += st.active_objs;
		vectors += vectors_of(c);
	}
	mcg_unlock(&mcg_cache_list_lock);
	return n - vectors;
}

static void shrink_all(void)
{
	mcg_lock(&mcg_cache_list_lock);
	mcg_list_for_each (pos, &mcg_cache_list)
		mcg_cache_shrink(mcg_list_entry(pos, struct mcg_cache, link));
	mcg_unlock(&mcg_cache_list_lock);
}

/*
 * Drain the stocks (their words hold references to objcgs) and shrink every
 * cache until nothing changes: a slab's objcg vector is a kmalloc object
 * that lives as long as the slab, so shrinking one cache can empty a slab
 * of another.
 */
static void settle(void)
{
	mcg_group_drain_stocks();
	size_t before;
	int rounds = 0;
	do {
		before = mcg_pages_in_use();
		shrink_all();
	} while (mcg_pages_in_use() != before && ++rounds < 8);
}

/* After a failed allocation in @g: nothing was charged for it. */
static void check_nothing_charged(mcg_group_t *g, long live)
{
	mcg_group_drain_stocks();
	CHECK_EQ(slab_of(g), live);
	CHECK_EQ(read_long(g, "memory.current"),
	         read_key(g, "memory.stat", "anon") + read_key(g, "memory.stat", "kernel"));
}

static unsigned long fails_group, fails_cache, fails_alloc, fails_max;

/* Create @name under @parent; on failure check that nothing is left. */
static int create(mcg_group_t *parent, const char *name, mcg_group_t **out)
{
	int r = mcg_group_create(parent, name, out);
	if (r) {
		CHECK_EQ(r, -ENOMEM);
		mcg_group_t *g;
		CHECK_EQ(mcg_group_lookup(parent, name, &g), -ENOENT);
		fails_group++;
	}
	return r;
}

static void drop(mcg_group_t *g)
{
	if (!g)
		return;
	if (mcg_group_is_online(g))
		CHECK_EQ(mcg_group_remove(g), 0);
	mcg_group_put(g);
}

/* The operation sequence.  Return 0 if it completed, -ENOMEM on a clean failure. */
static int sequence(void)
{
	static void *oa[NA], *ob[NB], *oc[NC];
	int err = 0, na = 0, nb = 0, nc = 0;
	long live_a = 0, live_c = 0, live_b = 0;
	void *big = NULL;
	mcg_group_t *fa = NULL, *fb = NULL, *fc = NULL;
	mcg_cache_t *k = NULL;

	if (create(NULL, "fa", &fa))
		return -ENOMEM;
	if (create(fa, "fb", &fb) || create(fa, "fc", &fc)) {
		err = -ENOMEM;
		goto out;
	}
	CHECK_EQ(mcg_group_write(fb, "memory.max", "64K"), 0);
	k = mcg_cache_create("objcg-fault", 136, 0, MCG_CACHE_ACCOUNT, NULL);
	if (!k) {
		CHECK_EQ(errno, ENOMEM);
		fails_cache++;
		err = -ENOMEM;
		goto out;
	}
	mcg_cache_stats_t st;
	mcg_cache_stats(k, &st);
	long slot = (long)(st.slot_size + sizeof(mcg_objcg_id_t));

	/* fa: cache objects through the current group (new slabs, vectors) */
	mcg_group_t *prev = mcg_group_enter(fa);
	for (; na < NA; na++) {
		errno = 0;
		oa[na] = mcg_cache_alloc(k);
		if (!oa[na]) {
			CHECK_EQ(errno, ENOMEM);
			fails_alloc++;
			err = -ENOMEM;
			break;
		}
		memset(oa[na], na & 0xff, 136);
		live_a += slot;
	}
	mcg_group_leave(prev);
	if (err)
		check_nothing_charged(fa, live_a);
	errno = 0;
	big = mcg_malloc_account(1 << 20, fa);
	if (!big) {
		CHECK_EQ(errno, ENOMEM);
		fails_alloc++;
		err = -ENOMEM;
		mcg_group_drain_stocks();
		CHECK(read_long(fa, "memory.current") < live_a + 2 * PAGE);
	} else {
		memset(big, 3, 1 << 20);
		live_a += 1 << 20; /* a large block counts in slab as its size */
	}

	/* fc: kmalloc accounted blocks, mixed sizes */
	for (; nc < NC; nc++) {
		errno = 0;
		oc[nc] = mcg_malloc_account((size_t)(16 + nc * 37 % 3000), fc);
		if (!oc[nc]) {
			CHECK_EQ(errno, ENOMEM);
			fails_alloc++;
			err = -ENOMEM;
			check_nothing_charged(fc, live_c);
			break;
		}
		live_c += (long)(mcg_malloc_usable_size(oc[nc]) + sizeof(mcg_objcg_id_t));
	}

	/* fb: over its max the charge fails (or a fault comes first) */
	for (; nb < NB; nb++) {
		errno = 0;
		ob[nb] = mcg_malloc_account(4000, fb);
		if (!ob[nb])
			break;
		live_b += (long)(4096 + sizeof(mcg_objcg_id_t));
	}
	CHECK(nb < NB);
	CHECK_EQ(errno, ENOMEM);
	if (read_key(fb, "memory.events", "max") > 0)
		fails_max++;
	check_nothing_charged(fb, live_b);
	CHECK(read_long(fb, "memory.current") <= 64 * 1024);

	/* remove fc with its blocks live: fa holds them now */
	mcg_group_drain_stocks();
	long before = read_long(fa, "memory.current"), slab_before = slab_of(fa);
	CHECK_EQ(mcg_group_remove(fc), 0);
	mcg_group_put(fc);
	fc = NULL;
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(fa, "memory.current"), before);
	CHECK_EQ(slab_of(fa), slab_before);
	if (nc) {
		mcg_group_t *owner = NULL;
		CHECK_EQ(mcg_obj_group(oc[0], &owner), 0);
		CHECK(owner == fa);
		mcg_group_put(owner);
	}
	CHECK_EQ(slab_of(fa), live_a + live_b + live_c);

out:
	for (int i = 0; i < na; i++) {
		const unsigned char *b = oa[i];
		CHECK(b[0] == (unsigned char)(i & 0xff) && b[135] == (unsigned char)(i & 0xff));
		mcg_cache_free(k, oa[i]);
	}
	for (int i = 0; i < nb; i++)
		mcg_free(ob[i]);
	for (int i = 0; i < nc; i++)
		mcg_free(oc[i]);
	mcg_free(big);
	if (fa) {
		mcg_group_drain_stocks();
		CHECK_EQ(read_long(fa, "memory.current"), 0);
		CHECK_EQ(slab_of(fa), 0);
	}
	if (k)
		CHECK_EQ(mcg_cache_destroy(k), 0);
	drop(fb);
	drop(fc);
	drop(fa);
	return err;
}

static void sweep(int sticky)
{
	/*
	 * One CPU for the whole sweep.  Objects land on the slabs behind the
	 * running CPU's arrays; after a migration an accounted object can land
	 * on a slab that holds a long-lived object and never had a vector, and
	 * that vector (possibly a new kmalloc slab) then lives as long as the
	 * slab: more pages in use, but no leak.  On one CPU every run places
	 * its objects as the warm-up did, so pages in use must come back exactly.
	 */
	cpu_set_t old, one;
	CHECK_EQ(sched_getaffinity(0, sizeof(old), &old), 0);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	CHECK_EQ(sched_setaffinity(0, sizeof(one), &one), 0);

	CHECK_EQ(sequence(), 0); /* warm: kmalloc classes and chunks exist */
	settle();
	size_t active0 = active_objects(), pages0 = mcg_pages_in_use();
	size_t mapped0 = mcg_os_mapped_bytes();
	mcg_group_t *root = mcg_group_root();
	unsigned long n;
	int clean_failures = 0;
	fails_group = fails_cache = fails_alloc = fails_max = 0;
	for (n = 1; n < 20000; n++) {
		mcg_fault_inject(n, sticky);
		int r = sequence();
		unsigned long failed = mcg_fault_failed();
		mcg_fault_inject(0, 0);
		mcg_group_drain_stocks();
		CHECK_EQ(read_long(root, "memory.current"), 0);
		CHECK_EQ(read_key(root, "memory.stat", "slab"), 0);
		CHECK_EQ(read_key(root, "memory.stat", "kernel"), 0);
		CHECK_EQ(read_key(root, "cgroup.stat", "nr_descendants"), 0);
		CHECK_EQ(read_key(root, "cgroup.stat", "nr_dying_descendants"), 0);
		settle();
		CHECK_EQ(active_objects(), active0);
		CHECK_EQ(mcg_pages_in_use(), pages0);
		CHECK_EQ(mcg_os_mapped_bytes(), mapped0); /* warm, one CPU: no new chunk */
		if (failed == 0) {
			CHECK_EQ(r, 0);
			break;
		}
		clean_failures += r != 0;
	}
	fprintf(stderr,
	        "%s sweep: %lu points, %d ended in a clean error (groups %lu, cache %lu, "
	        "allocations %lu); fb hit its max in %lu runs\n",
	        sticky ? "sticky" : "single", n, clean_failures, fails_group, fails_cache,
	        fails_alloc, fails_max);
	CHECK(n >= 10);
	CHECK(n < 20000);
	CHECK(fails_group > 0);
	CHECK(fails_cache > 0);
	CHECK(fails_alloc > 0);
	CHECK(fails_max > 0);
	CHECK_EQ(sched_setaffinity(0, sizeof(old), &old), 0);
}

static void test_sweep_single(void) { sweep(0); }

static void test_sweep_sticky(void) { sweep(1); }

static void test_no_reports(void) { CHECK_EQ(reports, 0); }

int main(void)
{
	mcg_set_report_handler(on_report);
	RUN(test_sweep_single);
	RUN(test_sweep_sticky);
	RUN(test_no_reports);
	return test_done();
}
