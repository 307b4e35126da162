/* SPDX-License-Identifier: MIT */
/*
 * test_pcpu_stack.c - the per-CPU stacks' rseq sections (percpu/pcpu_stack.h):
 * push on the free side and pop from the alloc side, the swap that hands
 * freed objects over, batches, full and empty, the double-free test on the
 * top slot (an empty side compares with its NULL slot below), the push that
 * fails while its gate is closed, stop and start.  Pinned to CPU 0.  Then again with MCG_RSEQ=0:
 * the fast paths run the sections in locked mode too, without testing the mode, so there every
 * section must fail and leave the stack alone while the locked path works (the locked twins also
 * run in every other test in locked mode).
 */
#include <stdlib.h>
#include <sched.h>

#include "percpu/pcpu_stack.h"
#include "os/os.h"
#include "test.h"

enum { CAP = 4 };

static struct mcg_pcpu_stack *base;
static void **slot_mem;
static uint32_t gate; /* mcg_rseq_stack_push_gated()'s: open (0) but in test_gate */

static void pin_cpu0(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* The free side's count and slot @i, the alloc side's count (CPU 0's stacks). */
static uint32_t free_cur(void) { return mcg_pcpu_stack_free_side(base)->cur; }
static void *free_slot(uint32_t i) { return mcg_pcpu_stack_free_side(base)->slots[i]; }
static uint32_t alloc_cur(void) { return mcg_pcpu_stack_alloc_side(base)->cur; }

/* Pushes go on the free side, pops come off the alloc side: a swap hands
 * the freed objects over when the alloc side is empty. */
static void test_push_pop(void)
{
	int a, b;
	CHECK(mcg_rseq_stack_pop(base) == NULL);
	CHECK_EQ(mcg_rseq_stack_swap(base), MCG_PCPU_FAIL); /* both empty */
	CHECK_EQ(mcg_rseq_stack_push(base, &a), MCG_PCPU_OK);
	CHECK_EQ(mcg_rseq_stack_push(base, &a), MCG_PCPU_DOUBLE); /* the top again */
	CHECK_EQ(mcg_rseq_stack_push(base, &b), MCG_PCPU_OK);
	CHECK_EQ(mcg_rseq_stack_push(base, &a), MCG_PCPU_OK); /* not the top: the flush's job */
	CHECK_EQ(mcg_rseq_stack_push(base, &b), MCG_PCPU_OK);
	CHECK_EQ(mcg_rseq_stack_push(base, &a), MCG_PCPU_FAIL); /* full */
	CHECK_EQ(free_cur(), CAP);
	CHECK(mcg_rseq_stack_pop(base) == NULL); /* the alloc side is empty */
	uint32_t which = base->which;
	CHECK_EQ(mcg_rseq_stack_swap(base), MCG_PCPU_OK);
	CHECK_EQ(base->which, which ^ MCG_PCPU_SIDE_STRIDE);
	CHECK_EQ(alloc_cur(), CAP);
	CHECK_EQ(free_cur(), 0);
	CHECK_EQ(mcg_rseq_stack_swap(base), MCG_PCPU_OK); /* not empty: pop, no swap */
	CHECK_EQ(base->which, which ^ MCG_PCPU_SIDE_STRIDE);
	CHECK_EQ(mcg_rseq_stack_push(base, &a), MCG_PCPU_OK); /* the other side again */
	CHECK(mcg_rseq_stack_pop(base) == &b);
	CHECK(mcg_rseq_stack_pop(base) == &a);
	CHECK(mcg_rseq_stack_pop(base) == &b);
	CHECK(mcg_rseq_stack_pop(base) == &a);
	CHECK(mcg_rseq_stack_pop(base) == NULL); /* empty: NULL, not a stale register */
	CHECK_EQ(mcg_rseq_stack_swap(base), MCG_PCPU_OK);
	CHECK(mcg_rseq_stack_pop(base) == &a);
	CHECK_EQ(mcg_pcpu_stack_count(base), 0);
}

/* A refill's batch goes on the alloc side, a flush's comes off the free side. */
static void test_batches(void)
{
	int a, b, c;
	void *in[3] = {&a, &b, &c}, *out[3] = {NULL, NULL, NULL};
	CHECK_EQ(mcg_rseq_stack_push_batch(base, in, 3), 3);
	CHECK_EQ(alloc_cur(), 3);
	CHECK_EQ(mcg_rseq_stack_push_batch(base, in, 3), 1); /* room for one */
	CHECK_EQ(mcg_rseq_stack_pop_batch(base, out, 2), 0); /* the free side is empty */
	CHECK(mcg_rseq_stack_pop(base) == &a);
	CHECK(mcg_rseq_stack_pop(base) == &c);
	CHECK_EQ(mcg_rseq_stack_push(base, &b), MCG_PCPU_OK);
	CHECK_EQ(mcg_rseq_stack_push(base, &c), MCG_PCPU_OK);
	CHECK_EQ(mcg_rseq_stack_pop_batch(base, out, 3), 2);
	CHECK(out[0] == &b && out[1] == &c);
	CHECK_EQ(free_cur(), 0);
	CHECK(mcg_rseq_stack_pop(base) == &b);
	CHECK(mcg_rseq_stack_pop(base) == &a);
	CHECK_EQ(mcg_pcpu_stack_count(base), 0);
}

/* mcg_rseq_stack_push_gated() with its gate open: the same results as a
 * push (the gate is subtracted from hi and compared signed: full and
 * stopped still fail). */
static void test_push_gated(void)
{
	int a, b, c;
	CHECK_EQ(mcg_rseq_stack_push_gated(base, &a, &gate), MCG_PCPU_OK);
	CHECK_EQ(mcg_rseq_stack_push_gated(base, &a, &gate), MCG_PCPU_DOUBLE); /* the top again */
	CHECK_EQ(mcg_rseq_stack_push_gated(base, &b, &gate), MCG_PCPU_OK);
	CHECK(free_slot(1) == &b);
	CHECK_EQ(mcg_rseq_stack_push_gated(base, &c, &gate), MCG_PCPU_OK);
	CHECK_EQ(mcg_rseq_stack_push_gated(base, &b, &gate), MCG_PCPU_OK);
	CHECK_EQ(mcg_rseq_stack_push_gated(base, &a, &gate), MCG_PCPU_FAIL); /* full */
	CHECK_EQ(mcg_rseq_stack_swap(base), MCG_PCPU_OK);
	CHECK(mcg_rseq_stack_pop(base) == &b);
	CHECK(mcg_rseq_stack_pop(base) == &c);
	CHECK(mcg_rseq_stack_pop(base) == &b);
	CHECK(mcg_rseq_stack_pop(base) == &a);
	CHECK(mcg_rseq_stack_pop(base) == NULL);
	mcg_lock(&base->lock);
	mcg_pcpu_stack_stop(base);
	CHECK_EQ(mcg_rseq_stack_push_gated(base, &a, &gate), MCG_PCPU_FAIL); /* stopped */
	mcg_pcpu_stack_start(base, CAP);
	mcg_unlock(&base->lock);
	CHECK_EQ(mcg_pcpu_stack_count(base), 0);
}

/* A closed gate (any multiple of MCG_PCPU_GATE_UNIT) fails the gated push
 * as if full, empty stack or not, and changes nothing; open, it pushes. */
static void test_gate(void)
{
	int a, b;
	const uint32_t closed[] = {MCG_PCPU_GATE_UNIT, 3 * MCG_PCPU_GATE_UNIT,
	                           2047 * MCG_PCPU_GATE_UNIT};
	for (unsigned i = 0; i < sizeof(closed) / sizeof(closed[0]); i++) {
		gate = closed[i];
		CHECK_EQ(mcg_rseq_stack_push_gated(base, &a, &gate), MCG_PCPU_FAIL);
		CHECK_EQ(free_cur(), 0);
		CHECK_EQ(mcg_rseq_stack_push(base, &a), MCG_PCPU_OK); /* the plain push has none */
		CHECK_EQ(mcg_rseq_stack_push_gated(base, &b, &gate), MCG_PCPU_FAIL);
		CHECK_EQ(free_cur(), 1);
		CHECK_EQ(mcg_rseq_stack_swap(base), MCG_PCPU_OK);
		CHECK(mcg_rseq_stack_pop(base) == &a);
	}
	gate = 0;
	CHECK_EQ(mcg_rseq_stack_push_gated(base, &a, &gate), MCG_PCPU_OK);
	CHECK_EQ(mcg_rseq_stack_swap(base), MCG_PCPU_OK);
	CHECK(mcg_rseq_stack_pop(base) == &a);
	CHECK_EQ(mcg_pcpu_stack_count(base), 0);
}

static void test_stopped(void)
{
	int a, b;
	CHECK_EQ(mcg_rseq_stack_push(base, &a), MCG_PCPU_OK);
	mcg_lock(&base->lock);
	mcg_pcpu_stack_stop(base);
	CHECK(mcg_rseq_stack_pop(base) == NULL);
	CHECK_EQ(mcg_rseq_stack_push(base, &b), MCG_PCPU_FAIL);
	CHECK_EQ(mcg_rseq_stack_swap(base), MCG_PCPU_FAIL);
	void *one[1];
	CHECK_EQ(mcg_rseq_stack_pop_batch(base, one, 1), 0);
	CHECK_EQ(mcg_rseq_stack_push_batch(base, one, 1), 0);
	mcg_pcpu_stack_start(base, CAP);
	mcg_unlock(&base->lock);
	CHECK_EQ(mcg_rseq_stack_swap(base), MCG_PCPU_OK);
	CHECK(mcg_rseq_stack_pop(base) == &a);
	CHECK(mcg_rseq_stack_pop(base) == NULL);
}

/* Locked mode: the sections fail on a started stack, full or empty, and
 * change nothing; the locked path works within cap, its pop swapping the
 * sides itself; stop and start keep the sections out. */
static void test_locked_sections_fail(void)
{
	int a, b;
	CHECK(mcg_rseq_stack_pop(base) == NULL);
	CHECK_EQ(mcg_rseq_stack_push(base, &a), MCG_PCPU_FAIL);
	CHECK_EQ(mcg_rseq_stack_push_gated(base, &a, &gate), MCG_PCPU_FAIL);
	CHECK_EQ(mcg_pcpu_stack_count(base), 0);
	CHECK_EQ(mcg_cpulock_stack_push(base, &a), MCG_PCPU_OK);
	CHECK_EQ(mcg_cpulock_stack_push(base, &a), MCG_PCPU_DOUBLE);
	CHECK_EQ(mcg_cpulock_stack_push(base, &b), MCG_PCPU_OK);
	CHECK(mcg_rseq_stack_pop(base) == NULL); /* objects there: still fails */
	CHECK_EQ(mcg_rseq_stack_push(base, &a), MCG_PCPU_FAIL);
	CHECK_EQ(mcg_rseq_stack_swap(base), MCG_PCPU_FAIL);
	void *two[2] = {&a, &b};
	CHECK_EQ(mcg_rseq_stack_pop_batch(base, two, 2), 0);
	CHECK_EQ(mcg_rseq_stack_push_batch(base, two, 1), 0);
	CHECK_EQ(free_cur(), 2);
	mcg_lock(&base->lock);
	mcg_pcpu_stack_stop(base);
	mcg_pcpu_stack_start(base, CAP);
	mcg_unlock(&base->lock);
	CHECK(mcg_rseq_stack_pop(base) == NULL);
	CHECK(mcg_cpulock_stack_pop(base) == &b); /* swapped: the freed objects */
	CHECK_EQ(alloc_cur(), 1);
	CHECK_EQ(mcg_cpulock_stack_push_batch(base, two, 2), 2); /* on the alloc side */
	CHECK_EQ(alloc_cur(), 3);
	CHECK_EQ(mcg_cpulock_stack_push(base, &b), MCG_PCPU_OK); /* on the free side */
	CHECK_EQ(mcg_cpulock_stack_pop_batch(base, two, 2), 1);
	CHECK(two[0] == &b);
	CHECK_EQ(mcg_pcpu_stack_count(base), 3);
	while (mcg_cpulock_stack_pop(base))
		;
	CHECK_EQ(mcg_pcpu_stack_count(base), 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	mcg_percpu_init();
	bool locked = getenv("MCG_TEST_LOCKED") != NULL;
	if (!mcg_percpu_use_rseq() && !(locked && mcg_percpu_sections()))
		return test_skip("no rseq sections in this build or on this system");
	pin_cpu0();
	unsigned ncpu = mcg_os_nr_cpus();
	base = mcg_os_map(MCG_ALIGN_UP((size_t)ncpu << MCG_PCPU_SHIFT, 4096), 4096);
	slot_mem =
	        mcg_os_map(MCG_ALIGN_UP((size_t)ncpu * 2 * (CAP + 1) * sizeof(void *), 4096), 4096);
	if (!base || !slot_mem)
		return 1;
	for (unsigned cpu = 0; cpu < ncpu; cpu++) {
		struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(base, cpu);
		mcg_lock_init(&st->lock, MCG_RANK_PCPU);
		void **mine = slot_mem + (size_t)cpu * 2 * (CAP + 1);
		mcg_pcpu_stack_init(st, mine + 1, mine + CAP + 2); /* each after a NULL slot */
		mcg_pcpu_stack_start(st, CAP);
	}
	if (locked) {
		RUN(test_locked_sections_fail);
		return test_done();
	}
	RUN(test_push_pop);
	RUN(test_batches);
	RUN(test_push_gated);
	RUN(test_gate);
	RUN(test_stopped);
	int rc = test_done();
	fprintf(stderr, "--- again with MCG_RSEQ=0 (locked mode)\n");
	return test_merge(rc, test_run_locked(argv));
}
