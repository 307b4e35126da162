/* SPDX-License-Identifier: MIT */
/*
 * test_snapshot.c - snapshots of groups and caches (iface/snapshot.c):
 *
 *   /            depth 0
 *   |- s-a       depth 1
 *   |  |- x      depth 2
 *   |  `- y      depth 2     (y's files: what mcg_group_read() says)
 *   `- s-b       depth 1     (removed before the last snapshot: gone)
 *
 * in depth-first order with their paths, a subtree from its base, paths
 * only, the caches, a 300-level chain, the line splitter and the number
 * parser, and a fault sweep: every failure is -ENOMEM with every group
 * reference dropped (the removed groups are freed: no dying descendants).
 * x and y hold accounted objects, some freed into the CPU arrays still
 * charged: every group's memory.stat in a snapshot (one scan of the arrays
 * for all of them) equals its own mcg_group_read() at rest.
 */
#include <errno.h>

#include "group_file.h"
#include "iface/snapshot.h"
#include "memcg/debug.h"
#include "memcg/slab.h"
#include "test.h"

static mcg_group_t *a, *x, *y, *b;
static mcg_cache_t *acc;
static void *objs[2][300];

static void setup(void)
{
	mcg_group_create(NULL, "s-a", &a);
	mcg_group_create(a, "x", &x);
	mcg_group_create(a, "y", &y);
	mcg_group_create(NULL, "s-b", &b);
	mcg_group_write(y, "memory.max", "12M");
	mcg_charge(y, 3, 0);
	/* Accounted objects; every other one freed: charged objects in the arrays. */
	acc = mcg_cache_create("snap-accounted", 192, 0, MCG_CACHE_ACCOUNT, NULL);
	for (int g = 0; g < 2; g++)
		for (int i = 0; i < 300; i++)
			objs[g][i] = mcg_cache_alloc_account(acc, g ? y : x);
	for (int g = 0; g < 2; g++)
		for (int i = 0; i < 300; i += 2) {
			mcg_cache_free(acc, objs[g][i]);
			objs[g][i] = NULL;
		}
}

static void test_stat_at_rest_equals_reads(void)
{
	struct mcg_snapshot s;
	mcg_snapshot_init(&s);
	REQUIRE(mcg_snapshot_take(&s, NULL, MCG_SNAP_FILES) == 0);
	mcg_group_t *gs[] = {mcg_group_root(), a, x, y, b};
	for (size_t i = 0; i < 5 && i < s.nr_groups; i++) {
		char buf[4096];
		mcg_group_read(gs[i], "memory.stat", buf, sizeof(buf));
		if (strcmp(mcg_snap_text(&s, &s.groups[i], MCG_SNAP_STAT), buf))
			CHECK(!fprintf(stderr, "%s: '%s' vs '%s'\n",
			               mcg_snap_path(&s, &s.groups[i]),
			               mcg_snap_text(&s, &s.groups[i], MCG_SNAP_STAT), buf));
	}
	/* 150 live objects of 194 charged bytes each in x. */
	CHECK_EQ(key_of(mcg_snap_text(&s, &s.groups[2], MCG_SNAP_STAT), "slab_unreclaimable"),
	         150 * 194);
	mcg_snapshot_free(&s);
}

/* Objects of the library's caches, all together (slabinfo's figures). */
static size_t objects_out(void)
{
	struct mcg_slabinfo_row rows[256];
	size_t n = mcg_slabinfo_collect(rows, 256), total = 0;
	for (size_t i = 0; i < n && i < 256; i++)
		total += rows[i].st.active_objs;
	return total;
}

/* A snapshot taken and freed keeps no object (its reading slots included). */
static void test_no_object_kept(void)
{
	mcg_group_t *kept;
	REQUIRE(mcg_group_create(NULL, "kept", &kept) == 0);
	struct mcg_snapshot s;
	mcg_snapshot_init(&s);
	REQUIRE(mcg_snapshot_take(&s, NULL, MCG_SNAP_FILES | MCG_SNAP_CACHES) == 0);
	mcg_snapshot_free(&s);
	mcg_slab_shrink_all();
	size_t before = objects_out();
	for (int i = 0; i < 5; i++) {
		mcg_snapshot_init(&s);
		REQUIRE(mcg_snapshot_take(&s, NULL, MCG_SNAP_FILES | MCG_SNAP_CACHES) == 0);
		mcg_snapshot_free(&s);
	}
	mcg_slab_shrink_all();
	CHECK_EQ(objects_out(), before);
	mcg_group_remove(kept);
	mcg_group_put(kept);
}

static void test_tree_in_order(void)
{
	struct mcg_snapshot s;
	mcg_snapshot_init(&s);
	REQUIRE(mcg_snapshot_take(&s, NULL, MCG_SNAP_FILES) == 0);
	static const char *const paths[] = {"/", "/s-a", "/s-a/x", "/s-a/y", "/s-b"};
	static const unsigned depths[] = {0, 1, 2, 2, 1};
	CHECK_EQ(s.nr_groups, 5);
	for (size_t i = 0; i < 5 && i < s.nr_groups; i++) {
		CHECK(!strcmp(mcg_snap_path(&s, &s.groups[i]), paths[i]));
		CHECK_EQ(s.groups[i].depth, depths[i]);
	}
	CHECK_EQ(s.nr_caches, 0);
	/* y's files are what the text interface prints. */
	const struct mcg_snap_group *gy = &s.groups[3];
	for (int f = 0; f < MCG_SNAP_NR_FILES; f++) {
		char buf[4096];
		mcg_group_read(y, mcg_snap_file_name(f), buf, sizeof(buf));
		if (strcmp(mcg_snap_text(&s, gy, f), buf))
			CHECK(!fprintf(stderr, "%s: '%s' vs '%s'\n", mcg_snap_file_name(f),
			               mcg_snap_text(&s, gy, f), buf));
	}
	CHECK(!strcmp(mcg_snap_text(&s, gy, MCG_SNAP_MAX), "12582912\n"));
	CHECK(!strcmp(mcg_snap_text(&s, &s.groups[0], MCG_SNAP_MAX), "max\n"));
	mcg_snapshot_free(&s);
	CHECK(s.groups == NULL && s.nr_groups == 0);
}

static void test_subtree_paths_only_and_caches(void)
{
	mcg_cache_t *c = mcg_cache_create("snap-cache", 100, 0, 0, NULL);
	void *o[10];
	for (int i = 0; i < 10; i++)
		o[i] = mcg_cache_alloc(c);
	struct mcg_snapshot s;
	mcg_snapshot_init(&s);
	REQUIRE(mcg_snapshot_take(&s, a, MCG_SNAP_CACHES) == 0);
	CHECK_EQ(s.nr_groups, 3);
	CHECK(!strcmp(mcg_snap_path(&s, &s.groups[0]), "/s-a"));
	CHECK(!strcmp(mcg_snap_path(&s, &s.groups[2]), "/s-a/y"));
	CHECK_EQ(s.groups[0].depth, 0);
	CHECK_EQ(s.groups[2].depth, 1);
	CHECK(!strcmp(mcg_snap_text(&s, &s.groups[2], MCG_SNAP_MAX), "")); /* paths only */
	size_t found = 0;
	for (size_t i = 0; i < s.nr_caches; i++) {
		if (strcmp(s.caches[i].name, "snap-cache"))
			continue;
		found++;
		CHECK_EQ(s.caches[i].st.object_size, 100);
		CHECK(s.caches[i].st.name == NULL);
	}
	CHECK_EQ(found, 1);
	mcg_snapshot_free(&s);
	for (int i = 0; i < 10; i++)
		mcg_cache_free(c, o[i]);
	CHECK_EQ(mcg_cache_destroy(c), 0);
}

static void test_deep_chain(void)
{
	mcg_group_t *chain[300], *p = NULL;
	for (int i = 0; i < 300; i++) {
		char name[8];
		snprintf(name, sizeof(name), "d%d", i);
		REQUIRE(mcg_group_create(p ? p : b, name, &chain[i]) == 0);
		p = chain[i];
	}
	struct mcg_snapshot s;
	mcg_snapshot_init(&s);
	REQUIRE(mcg_snapshot_take(&s, b, 0) == 0);
	CHECK_EQ(s.nr_groups, 301);
	const char *last = mcg_snap_path(&s, &s.groups[300]);
	CHECK(!strncmp(last, "/s-b/d0/d1/d2/", 14));
	CHECK(strlen(last) > 300 * 2 && !strcmp(last + strlen(last) - 10, "/d298/d299"));
	CHECK_EQ(s.groups[300].depth, 300);
	mcg_snapshot_free(&s);
	for (int i = 299; i >= 0; i--) {
		CHECK_EQ(mcg_group_remove(chain[i]), 0);
		mcg_group_put(chain[i]);
	}
}

static void test_kv_and_numbers(void)
{
	const char *t = "anon 4096\nmax\nkey with spaces 7\n";
	struct mcg_kv kv;
	REQUIRE(mcg_snap_next_kv(&t, &kv));
	CHECK(kv.key_len == 4 && !strncmp(kv.key, "anon", 4) && kv.val_len == 4);
	REQUIRE(mcg_snap_next_kv(&t, &kv));
	CHECK(kv.key_len == 0 && kv.val_len == 3 && !strncmp(kv.val, "max", 3));
	REQUIRE(mcg_snap_next_kv(&t, &kv));
	CHECK(kv.key_len == 3 && kv.val_len == 13);
	CHECK(!mcg_snap_next_kv(&t, &kv));
	long long v;
	CHECK(mcg_snap_number("12345", 5, &v) && v == 12345);
	CHECK(mcg_snap_number("-7", 2, &v) && v == -7);
	CHECK(mcg_snap_number("9223372036854775807", 19, &v) && v == 9223372036854775807LL);
	CHECK(!mcg_snap_number("9223372036854775808", 19, &v));
	CHECK(!mcg_snap_number("max", 3, &v));
	CHECK(!mcg_snap_number("", 0, &v));
	CHECK(!mcg_snap_number("-", 1, &v));
	CHECK(!mcg_snap_number("12a", 3, &v));
	CHECK(!mcg_snap_number("99999999999999999999", 20, &v)); /* past 2^63 by the product */
	CHECK(!mcg_snap_number("1-2", 3, &v));                   /* below '0' */
	CHECK(!mcg_snap_number("1 2", 3, &v));
	CHECK(mcg_snap_number("-9223372036854775807", 20, &v) && v == -9223372036854775807LL);
}

/*
 * A fault sweep over the walk of a chain deeper than the walk's first
 * stack (16 frames): each attempt is whole or -ENOMEM, and a walk stopped
 * in the middle dropped the references of the groups it was visiting:
 * removed, every group of the chain goes at once.
 */
static void test_deep_walk_fault_sweep(void)
{
	enum { DEPTH = 20 };
	mcg_group_t *top, *chain[DEPTH], *p;
	REQUIRE(mcg_group_create(NULL, "s-deep", &top) == 0);
	p = top;
	for (int i = 0; i < DEPTH; i++) {
		char name[8];
		snprintf(name, sizeof(name), "e%d", i);
		REQUIRE(mcg_group_create(p, name, &chain[i]) == 0);
		p = chain[i];
	}
	int done = 0, failed = 0;
	for (unsigned long n = 1; n < 1000 && !done; n++) {
		struct mcg_snapshot s;
		mcg_snapshot_init(&s);
		mcg_fault_inject(n, 0);
		int err = mcg_snapshot_take(&s, top, 0);
		unsigned long hit = mcg_fault_failed();
		mcg_fault_inject(0, 0);
		if (hit) {
			failed++;
			CHECK_EQ(err, -ENOMEM);
		} else {
			CHECK_EQ(err, 0);
			CHECK_EQ(s.nr_groups, DEPTH + 1);
			CHECK_EQ(s.groups[DEPTH].depth, DEPTH);
			done = 1;
		}
		mcg_snapshot_free(&s);
	}
	CHECK(done);
	CHECK(failed >= 3);
	long dying = read_key(mcg_group_root(), "cgroup.stat", "nr_dying_descendants");
	for (int i = DEPTH - 1; i >= 0; i--) {
		CHECK_EQ(mcg_group_remove(chain[i]), 0);
		mcg_group_put(chain[i]);
	}
	CHECK_EQ(mcg_group_remove(top), 0);
	mcg_group_put(top);
	mcg_group_drain_stocks();
	CHECK_EQ(read_key(mcg_group_root(), "cgroup.stat", "nr_dying_descendants"), dying);
}

static void test_fault_sweep(void)
{
	int done = 0, failed = 0;
	for (unsigned long n = 1; n < 10000 && !done; n++) {
		struct mcg_snapshot s;
		mcg_snapshot_init(&s);
		mcg_fault_inject(n, 0);
		int err = mcg_snapshot_take(&s, NULL, MCG_SNAP_FILES | MCG_SNAP_CACHES);
		unsigned long hit = mcg_fault_failed();
		mcg_fault_inject(0, 0);
		CHECK(err == 0 || err == -ENOMEM);
		if (err)
			failed++;
		if (!hit) {
			CHECK_EQ(err, 0);
			CHECK_EQ(s.nr_groups, 5);
			done = 1;
		}
		mcg_snapshot_free(&s);
	}
	CHECK(done);
	CHECK(failed > 3);
	/* Every reference the failed walks took was dropped: removed groups go at once. */
	mcg_group_t *gs[] = {x, y, a, b};
	mcg_uncharge(y, 3);
	for (int g = 0; g < 2; g++)
		for (int i = 1; i < 300; i += 2)
			mcg_cache_free(acc, objs[g][i]);
	CHECK_EQ(mcg_cache_destroy(acc), 0);
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(mcg_group_remove(gs[i]), 0);
		mcg_group_put(gs[i]);
	}
	mcg_group_drain_stocks();
	CHECK_EQ(read_key(mcg_group_root(), "cgroup.stat", "nr_dying_descendants"), 0);
	CHECK_EQ(read_key(mcg_group_root(), "cgroup.stat", "nr_descendants"), 0);
}

int main(void)
{
	setup();
	RUN(test_tree_in_order);
	RUN(test_no_object_kept);
	RUN(test_stat_at_rest_equals_reads);
	RUN(test_subtree_paths_only_and_caches);
	RUN(test_deep_chain);
	RUN(test_kv_and_numbers);
	RUN(test_deep_walk_fault_sweep);
	RUN(test_fault_sweep);
	return test_done();
}
