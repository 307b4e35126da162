/* SPDX-License-Identifier: MIT */
/*
 * test_reclaim_recursiveprot.c - cgroup2's memory_recursiveprot mount
 * option (option memory_recursiveprot, MCG_RECURSIVEPROT), as
 * Documentation/admin-guide/cgroup-v2.rst states it: "Recursively apply
 * memory.min and memory.low protection to entire subtrees, without
 * requiring explicit downward propagation into leaf cgroups.  This allows
 * protecting entire subtrees from one another, while retaining free
 * competition within those subtrees."  The arithmetic is the kernel's
 * effective_protection(): a parent's protection that its children do not
 * claim goes to them in proportion to their unprotected usage.
 *
 * Sizes in pages.  Default off, as in the kernel.
 */
#include <errno.h>

#include "memcg/group.h"
#include "memcg/memcg.h"
#include "memcg/reclaim.h"
#include "base/options.h"
#include "memcontrol.h"
#include "pcache.h"
#include "test.h"

static void set_prot(int on) { CHECK_EQ(mcg_option_set("memory_recursiveprot", on), 0); }

static long elow_of(mcg_group_t *g)
{
	unsigned long emin, elow;
	mcg_reclaim_protection(NULL, g, &emin, &elow);
	return (long)elow;
}

static long emin_of(mcg_group_t *g)
{
	unsigned long emin, elow;
	mcg_reclaim_protection(NULL, g, &emin, &elow);
	return (long)emin;
}

/*
 *   root
 *   └─ A  low 100, min 100, usage 120
 *      ├─ B  low 0                       usage 60, all in its child E
 *      │  └─ E  low 0                    usage 60
 *      ├─ C  low 0                       usage 20
 *      └─ D  low 20, min 20              usage 40
 *
 * A's children claim min(usage, low) = 20 (D): 80 unclaimed, shared in
 * proportion to the unprotected usage (B 60, C 20, D 20 of 100):
 *
 *                     off    on
 *   B elow/emin        0     48   = 80 * 60 / 100
 *   E elow/emin        0     48   = B's 48 * 60 / 60 (down to the leaf)
 *   C elow/emin        0     16   = 80 * 20 / 100
 *   D elow/emin       20     36   = 20 + 80 * 20 / 100
 *   sum B + C + D     20    100   = A's protection, all of it
 */
static void test_arithmetic(void)
{
	mcg_group_t *a, *b, *c, *d, *e;
	REQUIRE(mcg_group_create(NULL, "rp-a", &a) == 0);
	REQUIRE(mcg_group_create(a, "b", &b) == 0);
	REQUIRE(mcg_group_create(b, "e", &e) == 0);
	REQUIRE(mcg_group_create(a, "c", &c) == 0);
	REQUIRE(mcg_group_create(a, "d", &d) == 0);
	set_bytes(a, "memory.low", 100);
	set_bytes(a, "memory.min", 100);
	set_bytes(d, "memory.low", 20);
	set_bytes(d, "memory.min", 20);
	CHECK_EQ(alloc_anon(e, 60), 60);
	CHECK_EQ(alloc_anon(c, 20), 20);
	CHECK_EQ(alloc_anon(d, 40), 40);
	mcg_group_drain_stocks();
	CHECK_EQ(current_pages(a), 120);

	set_prot(0);
	CHECK_EQ(elow_of(a), 100);
	CHECK_EQ(elow_of(b), 0);
	CHECK_EQ(elow_of(e), 0);
	CHECK_EQ(elow_of(c), 0);
	CHECK_EQ(elow_of(d), 20);
	CHECK_EQ(emin_of(b), 0);
	CHECK_EQ(emin_of(d), 20);

	set_prot(1);
	CHECK_EQ(elow_of(a), 100);
	CHECK_EQ(elow_of(b), 48);
	CHECK_EQ(elow_of(e), 48);
	CHECK_EQ(elow_of(c), 16);
	CHECK_EQ(elow_of(d), 36);
	CHECK_EQ(elow_of(b) + elow_of(c) + elow_of(d), 100);
	CHECK_EQ(emin_of(b), 48); /* memory.min follows the same rule */
	CHECK_EQ(emin_of(e), 48);
	CHECK_EQ(emin_of(c), 16);
	CHECK_EQ(emin_of(d), 36);

	/*
	 * Overcommitted (children claim more than A affords): shares in
	 * proportion to the claims, with or without the option.  D and C
	 * claim 40 + 20 = 60 > A's 30: D gets 30 * 40 / 60, C 30 * 20 / 60.
	 */
	set_bytes(a, "memory.low", 30);
	set_bytes(d, "memory.low", 40);
	set_bytes(c, "memory.low", 20);
	for (int on = 0; on <= 1; on++) {
		set_prot(on);
		CHECK_EQ(elow_of(d), 20);
		CHECK_EQ(elow_of(c), 10);
		CHECK_EQ(elow_of(b), 0);
	}
	set_prot(0);
	CHECK_EQ(mcg_uncharge(e, 60), 0);
	CHECK_EQ(mcg_uncharge(c, 20), 0);
	CHECK_EQ(mcg_uncharge(d, 40), 0);
	mcg_group_t *all[] = {e, b, c, d, a};
	for (int i = 0; i < 5; i++) {
		CHECK_EQ(mcg_group_remove(all[i]), 0);
		mcg_group_put(all[i]);
	}
}

/*
 * Behaviour: a protected subtree is protected as a whole.
 *
 *   root
 *   ├─ A  low 100            (no protection below it)
 *   │  ├─ B  cache 60
 *   │  └─ C  cache 20
 *   └─ X  cache 100          (unprotected)
 *
 * Reclaim 150 from the root.  Off: B and C have no protection of their
 * own and lose memory with X.  On: A's 100 covers B (75) and C (25)
 * beyond their usage: everything comes from X, B and C keep all 80 pages,
 * and no "low" event is counted on them (they were never reclaimed).
 */
static void run_subtree(int on, long *bc_left, long *x_left, long *low_events)
{
	struct pcache pc;
	REQUIRE(pc_init(&pc, 16) == 0);
	mcg_group_t *a, *b, *c, *x;
	REQUIRE(mcg_group_create(NULL, "rs-a", &a) == 0);
	REQUIRE(mcg_group_create(a, "b", &b) == 0);
	REQUIRE(mcg_group_create(a, "c", &c) == 0);
	REQUIRE(mcg_group_create(NULL, "rs-x", &x) == 0);
	set_bytes(a, "memory.low", 100);
	CHECK_EQ(pc_fill(&pc, b, 60), 0);
	CHECK_EQ(pc_fill(&pc, c, 20), 0);
	CHECK_EQ(pc_fill(&pc, x, 100), 0);
	mcg_group_drain_stocks();
	set_prot(on);
	mcg_reclaim(NULL, 150, MCG_RECLAIM_PROACTIVE);
	set_prot(0);
	*bc_left = current_pages(b) + current_pages(c);
	*x_left = current_pages(x);
	*low_events = read_key(b, "memory.events", "low") + read_key(c, "memory.events", "low");
	pc_destroy(&pc);
	mcg_group_t *all[] = {b, c, a, x};
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(current_pages(all[i]), 0);
		CHECK_EQ(mcg_group_remove(all[i]), 0);
		mcg_group_put(all[i]);
	}
}

static void test_subtree_protected(void)
{
	long bc, x, low;
	run_subtree(1, &bc, &x, &low);
	fprintf(stderr, "on:  B+C %ld, X %ld, low events %ld\n", bc, x, low);
	CHECK_EQ(bc, 80);
	CHECK(x < 10);
	CHECK_EQ(low, 0);
	run_subtree(0, &bc, &x, &low);
	fprintf(stderr, "off: B+C %ld, X %ld, low events %ld\n", bc, x, low);
	CHECK(bc < 80); /* without the option the leaves were not protected */
	CHECK_EQ(low, 0);
}

/* The option is off by default, as the kernel's mount option. */
static void test_default_off(void)
{
	if (getenv("MCG_RECURSIVEPROT"))
		SKIP("MCG_RECURSIVEPROT is set in the environment: the default is not in effect");
	mcg_group_t *a, *b;
	REQUIRE(mcg_group_create(NULL, "rd-a", &a) == 0);
	REQUIRE(mcg_group_create(a, "b", &b) == 0);
	set_bytes(a, "memory.low", 50);
	CHECK_EQ(alloc_anon(b, 40), 40);
	mcg_group_drain_stocks();
	CHECK_EQ(elow_of(b), 0);
	set_prot(1);
	CHECK_EQ(elow_of(b), 50); /* 50 * 40 / 40: more than its usage, fully protected */
	set_prot(0);
	CHECK_EQ(mcg_uncharge(b, 40), 0);
	mcg_group_remove(b);
	mcg_group_put(b);
	mcg_group_remove(a);
	mcg_group_put(a);
}

/* A value out of range is refused and changes nothing. */
static void test_bad_value(void)
{
	long before = mcg_option(MCG_OPT_RECURSIVEPROT);
	CHECK_EQ(mcg_option_set("memory_recursiveprot", 2), -EINVAL);
	CHECK_EQ(mcg_option_set("memory_recursiveprot", -1), -EINVAL);
	CHECK_EQ(mcg_option(MCG_OPT_RECURSIVEPROT), before);
}

/*
 * The arithmetic's edges, on:
 *
 *   root
 *   └─ A  min 100
 *      ├─ C  min 0    usage 20
 *      └─ D  min 50   usage 40
 *
 * D uses less than it claims: its 40 are protected and it takes no share
 * of the unclaimed 60; C takes all of it (60 * 20 / (60 - 40)).  With C's
 * usage gone, A's usage is what its children claim: nothing is shared
 * (the division would be by zero), D keeps its 40.  And the calls' NULLs:
 * no group is the target's own (0, 0); no place for a result, none written.
 */
static void test_arithmetic_edges(void)
{
	mcg_group_t *a, *c, *d;
	REQUIRE(mcg_group_create(NULL, "rpe-a", &a) == 0);
	REQUIRE(mcg_group_create(a, "c", &c) == 0);
	REQUIRE(mcg_group_create(a, "d", &d) == 0);
	set_bytes(a, "memory.min", 100);
	set_bytes(d, "memory.min", 50);
	CHECK_EQ(alloc_anon(c, 20), 20);
	CHECK_EQ(alloc_anon(d, 40), 40);
	mcg_group_drain_stocks();
	set_prot(1);
	CHECK_EQ(emin_of(d), 40);
	CHECK_EQ(emin_of(c), 60);
	CHECK_EQ(mcg_uncharge(c, 20), 0);
	mcg_group_drain_stocks();
	CHECK_EQ(current_pages(a), 40);
	CHECK_EQ(emin_of(d), 40);
	unsigned long emin = 7, elow = 7;
	mcg_reclaim_protection(a, NULL, &emin, &elow);
	CHECK_EQ(emin, 0);
	CHECK_EQ(elow, 0);
	mcg_reclaim_protection(NULL, d, NULL, NULL); /* computed, not written */
	CHECK_EQ(emin_of(d), 40);
	set_prot(0);
	CHECK_EQ(mcg_uncharge(d, 40), 0);
	mcg_group_t *all[] = {c, d, a};
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(mcg_group_remove(all[i]), 0);
		mcg_group_put(all[i]);
	}
}

int main(void)
{
	mcg_reclaim_init();
	RUN(test_default_off);
	RUN(test_arithmetic);
	RUN(test_arithmetic_edges);
	RUN(test_subtree_protected);
	RUN(test_bad_value);
	return test_done();
}
