/* SPDX-License-Identifier: MIT */
/*
 * test_slab.c - slabs (slab/slab.c): the flush that puts freed objects back
 * into their slabs and takes their charges with them - for a slab of one
 * objcg's objects (runs of one id) and for one of many objcgs' objects side
 * by side (each object's charge to its own objcg), a double free inside
 * either caught, and every group's usage exact after the drain; the test
 * that a pointer is an object start, at every byte of a slab.
 */
#include "memcg/debug.h"
#include "memcg/group.h"
#include "memcg/slab.h"
#include "slab/slab.h"
#include "test.h"

static int double_frees;

static void capture(const mcg_report_t *r)
{
	if (r->kind == MCG_REPORT_DOUBLE_FREE)
		double_frees++;
}

static long current_of(mcg_group_t *g)
{
	char b[64];
	return mcg_group_read(g, "memory.current", b, sizeof(b)) < 0 ? -1 : atol(b);
}

enum { GROUPS = 5, N = 3000 };

/* @obj's slot as its CPU array holds it when freed: tagged, with its entry's id. */
static void *slot_of(void *obj)
{
	struct mcg_slab *s = mcg_slab_of(obj);
	if (!s)
		return NULL;
	uintptr_t w = s->objcgs;
	uint16_t *v = mcg_slab_vector(w);
	long idx = mcg_slab_index(s, obj);
	return v && idx >= 0 ? (void *)mcg_slot_tagged(obj, v[idx]) : NULL;
}

/* Allocate N objects of @c charged to @g[i % @ng] in turn; free them back
 * through mcg_node_put() in allocation order, @twice freed twice in the
 * same flush; then every group must read 0 after a drain. */
static void flush_and_check(mcg_cache_t *c, mcg_group_t **g, int ng, int twice)
{
	static void *objs[N + 1];
	for (int i = 0; i < N; i++) {
		objs[i] = mcg_cache_alloc_account(c, g[i % ng]);
		REQUIRE(objs[i]);
	}
	mcg_group_drain_stocks();
	for (int j = 0; j < ng; j++)
		CHECK(current_of(g[j]) > 0);
	/* The flush itself, as a CPU array hands objects back (tagged slots). */
	for (int at = 0; at < N; at += 64) {
		void *batch[65];
		int n = 0;
		for (int i = at; i < at + 64 && i < N; i++) {
			batch[n] = slot_of(objs[i]);
			REQUIRE(batch[n]);
			n++;
		}
		if (twice >= at && twice < at + 64) /* the same object again, in the same flush */
			batch[n++] = batch[twice - at];
		mcg_node_put(c, batch, (unsigned)n);
	}
	mcg_group_drain_stocks();
	for (int j = 0; j < ng; j++)
		CHECK_EQ(current_of(g[j]), 0);
	mcg_cache_stats_t st;
	CHECK_EQ(mcg_cache_stats(c, &st), 0);
	CHECK_EQ(st.active_objs, 0);
}

/* A slab's moves between the lists keep the counts: full, then partial, then
 * empty and gone (slabinfo's active and total slabs). */
static void test_list_counts(void)
{
	mcg_cache_t *c = mcg_cache_create("lists", 1024, 0, 0, NULL);
	REQUIRE(c);
	mcg_cache_stats_t st;
	REQUIRE(mcg_cache_stats(c, &st) == 0);
	size_t per = st.objs_per_slab;
	void *o[256];
	REQUIRE(per * 2 <= 256);
	for (size_t i = 0; i < per * 2; i++) /* two full slabs */
		REQUIRE((o[i] = mcg_cache_alloc(c)));
	for (size_t i = 0; i < per * 2; i++) /* every object back in its slab */
		mcg_cache_free(c, o[i]);
	mcg_cache_shrink(c);
	for (size_t i = 0; i < per * 2; i++)
		REQUIRE((o[i] = mcg_cache_alloc(c)));
	mcg_cache_shrink(c); /* the CPU array's spares back: two full slabs */
	REQUIRE(mcg_cache_stats(c, &st) == 0);
	CHECK_EQ(st.active_slabs, 2);
	CHECK_EQ(st.num_slabs, 2);
	mcg_cache_free(c, o[0]); /* one full slab goes partial */
	mcg_cache_shrink(c);
	REQUIRE(mcg_cache_stats(c, &st) == 0);
	CHECK_EQ(st.active_slabs, 2);
	CHECK_EQ(st.num_slabs, 2);
	for (size_t i = 1; i < per; i++) /* and empty: released by the shrink */
		mcg_cache_free(c, o[i]);
	mcg_cache_shrink(c);
	REQUIRE(mcg_cache_stats(c, &st) == 0);
	CHECK_EQ(st.active_slabs, 1);
	CHECK_EQ(st.num_slabs, 1);
	for (size_t i = per; i < per * 2; i++)
		mcg_cache_free(c, o[i]);
	mcg_cache_shrink(c);
	REQUIRE(mcg_cache_stats(c, &st) == 0);
	CHECK_EQ(st.active_slabs, 0);
	CHECK_EQ(st.num_slabs, 0);
	CHECK_EQ(mcg_cache_destroy(c), 0);
}

static void test_flush_charges(void)
{
	mcg_group_t *g[GROUPS];
	for (int j = 0; j < GROUPS; j++) {
		char name[16];
		snprintf(name, sizeof(name), "flush-%d", j);
		REQUIRE(mcg_group_create(NULL, name, &g[j]) == 0);
	}
	mcg_cache_t *c = mcg_cache_create("flush", 96, 0, MCG_CACHE_ACCOUNT, NULL);
	REQUIRE(c);
	/* one objcg: runs of one id */
	flush_and_check(c, g, 1, -1);
	/* five objcgs interleaved: the mixed loop */
	flush_and_check(c, g, GROUPS, -1);
	/* a double free in each kind of flush: reported once, charges exact */
	double_frees = 0;
	flush_and_check(c, g, 1, 70);
	CHECK_EQ(double_frees, 1);
	double_frees = 0;
	flush_and_check(c, g, GROUPS, 1000);
	CHECK_EQ(double_frees, 1);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	for (int j = 0; j < GROUPS; j++) {
		CHECK_EQ(mcg_group_remove(g[j]), 0);
		mcg_group_put(g[j]);
	}
}

/*
 * The object-start test (mcg_slab_index(): a multiply by the inverse of the
 * slot's odd part and a rotation): for slots even and odd, small and large,
 * every byte offset of a slab and a slot's worth on either side gives the
 * object's index exactly where an object starts, and -1 everywhere else.
 */
static void test_object_index(void)
{
	static const size_t sizes[] = {8,   16,   24,   40,   48,   56,   72,   96,    104,  136,
	                               200, 1000, 1072, 1280, 4096, 4368, 5120, 12288, 65536};
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		mcg_cache_t *c = mcg_cache_create("index", sizes[k], 8, 0, NULL);
		REQUIRE(c);
		char *obj = mcg_cache_alloc(c);
		REQUIRE(obj);
		const struct mcg_slab *s = mcg_slab_of(obj);
		REQUIRE(s);
		uint32_t slot = c->slot_size;
		long bad = 0, wrong = 0;
		for (int64_t off = -(int64_t)slot; off < (int64_t)(s->nobjs + 1) * slot; off++) {
			long idx = mcg_slab_index(s, s->base + off);
			bool start = off >= 0 && off % slot == 0 && off / slot < s->nobjs;
			bad += !start && idx != -1;
			wrong += start && idx != off / (int64_t)slot;
		}
		CHECK_EQ(bad, 0);
		CHECK_EQ(wrong, 0);
		CHECK_EQ(mcg_slab_index(s, obj), (obj - s->base) / (long)slot);
		mcg_cache_free(c, obj);
		CHECK_EQ(mcg_cache_destroy(c), 0);
	}
}

int main(void)
{
	mcg_set_report_handler(capture);
	RUN(test_flush_charges);
	RUN(test_list_counts);
	RUN(test_object_index);
	return test_done();
}
