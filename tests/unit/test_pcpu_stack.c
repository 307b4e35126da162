/* SPDX-License-Identifier: MIT */
/*
 * test_pcpu_stack.c - the per-CPU stacks' rseq sections (percpu/pcpu_stack.h):
 * push and pop, full and empty, the double-free test on the top slot (an
 * empty stack compares with its NULL slot below), the push that fails
 * while its gate is closed, the pop's guess at the top slot (never trusted
 * unchecked), stop and start.  Pinned to CPU 0.  Then again with MCG_RSEQ=0: the fast
 * paths run the sections in locked mode too, without testing the mode, so there every section must
 * fail and leave the stack alone while the locked path works (the locked twins also run in every
 * other test in locked mode).
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

static void test_push_pop(void)
{
	int a, b;
	CHECK(mcg_rseq_stack_pop(base) == NULL);
	CHECK_EQ(mcg_rseq_stack_push(base, &a), MCG_PCPU_OK);
	CHECK_EQ(mcg_rseq_stack_push(base, &a), MCG_PCPU_DOUBLE); /* the top again */
	CHECK_EQ(mcg_rseq_stack_push(base, &b), MCG_PCPU_OK);
	CHECK_EQ(mcg_rseq_stack_push(base, &a), MCG_PCPU_OK); /* not the top: the flush's job */
	CHECK_EQ(mcg_rseq_stack_push(base, &b), MCG_PCPU_OK);
	CHECK_EQ(mcg_rseq_stack_push(base, &a), MCG_PCPU_FAIL); /* full */
	CHECK(mcg_rseq_stack_pop(base) == &b);
	CHECK(mcg_rseq_stack_pop(base) == &a);
	CHECK(mcg_rseq_stack_pop(base) == &b);
	CHECK(mcg_rseq_stack_pop(base) == &a);
	CHECK(mcg_rseq_stack_pop(base) == NULL); /* empty: NULL, not a stale register */
	CHECK_EQ(base->cur, 0);
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
	CHECK(mcg_rseq_stack_pop(base) == &b);
	CHECK_EQ(mcg_rseq_stack_push_gated(base, &c, &gate), MCG_PCPU_OK);
	CHECK(base->slots[1] == &c);
	CHECK_EQ(mcg_rseq_stack_push_gated(base, &b, &gate), MCG_PCPU_OK);
	CHECK_EQ(mcg_rseq_stack_push_gated(base, &a, &gate), MCG_PCPU_OK);
	CHECK_EQ(mcg_rseq_stack_push_gated(base, &b, &gate), MCG_PCPU_FAIL); /* full */
	CHECK(mcg_rseq_stack_pop(base) == &a);
	CHECK(mcg_rseq_stack_pop(base) == &b);
	CHECK(mcg_rseq_stack_pop(base) == &c);
	CHECK(mcg_rseq_stack_pop(base) == &a);
	CHECK(mcg_rseq_stack_pop(base) == NULL);
	mcg_lock(&base->lock);
	mcg_pcpu_stack_stop(base);
	CHECK_EQ(mcg_rseq_stack_push_gated(base, &a, &gate), MCG_PCPU_FAIL); /* stopped */
	mcg_pcpu_stack_start(base, CAP);
	mcg_unlock(&base->lock);
	CHECK_EQ(base->cur, 0);
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
		CHECK_EQ(base->cur, 0);
		CHECK_EQ(mcg_rseq_stack_push(base, &a), MCG_PCPU_OK); /* the plain push has none */
		CHECK_EQ(mcg_rseq_stack_push_gated(base, &b, &gate), MCG_PCPU_FAIL);
		CHECK_EQ(base->cur, 1);
		CHECK(mcg_rseq_stack_pop(base) == &a);
	}
	gate = 0;
	CHECK_EQ(mcg_rseq_stack_push_gated(base, &a, &gate), MCG_PCPU_OK);
	CHECK(mcg_rseq_stack_pop(base) == &a);
	CHECK_EQ(base->cur, 0);
}

/* top is a guess: a pop returns slots[cur-1] whatever top holds (a stale
 * object, one lower in the stack, garbage), and leaves the slot below it
 * there as the next guess; the batches leave the top slot there too. */
static void test_top_guess(void)
{
	int a, b, c;
	CHECK_EQ(mcg_rseq_stack_push(base, &a), MCG_PCPU_OK);
	CHECK(base->top == &a);
	CHECK_EQ(mcg_rseq_stack_push(base, &b), MCG_PCPU_OK);
	CHECK(base->top == &b);
	base->top = &a; /* lower in the stack */
	CHECK(mcg_rseq_stack_pop(base) == &b);
	CHECK(base->top == &a);
	base->top = &c; /* in no slot */
	CHECK(mcg_rseq_stack_pop(base) == &a);
	CHECK(base->top == NULL); /* slots[-1] */
	void *three[3] = {&a, &b, &c}, *out[2];
	CHECK_EQ(mcg_rseq_stack_push_batch(base, three, 3), 3);
	CHECK(base->top == &c);
	CHECK_EQ(mcg_rseq_stack_pop_batch(base, out, 2), 2);
	CHECK(out[0] == &b && out[1] == &c);
	CHECK(base->top == &a);
	base->top = (void *)(uintptr_t)1;
	CHECK(mcg_rseq_stack_pop(base) == &a);
	CHECK(mcg_rseq_stack_pop(base) == NULL);
	CHECK_EQ(base->cur, 0);
}

static void test_stopped(void)
{
	int a, b;
	CHECK_EQ(mcg_rseq_stack_push(base, &a), MCG_PCPU_OK);
	mcg_lock(&base->lock);
	mcg_pcpu_stack_stop(base);
	CHECK(mcg_rseq_stack_pop(base) == NULL);
	CHECK_EQ(mcg_rseq_stack_push(base, &b), MCG_PCPU_FAIL);
	mcg_pcpu_stack_start(base, CAP);
	mcg_unlock(&base->lock);
	CHECK(mcg_rseq_stack_pop(base) == &a);
	CHECK(mcg_rseq_stack_pop(base) == NULL);
}

/* Locked mode: the sections fail on a started stack, full or empty, and
 * change nothing; the locked path works within cap; stop and start keep
 * the sections out. */
static void test_locked_sections_fail(void)
{
	int a, b;
	CHECK(mcg_rseq_stack_pop(base) == NULL);
	CHECK_EQ(mcg_rseq_stack_push(base, &a), MCG_PCPU_FAIL);
	CHECK_EQ(mcg_rseq_stack_push_gated(base, &a, &gate), MCG_PCPU_FAIL);
	CHECK_EQ(base->cur, 0);
	CHECK_EQ(mcg_cpulock_stack_push(base, &a), MCG_PCPU_OK);
	CHECK_EQ(mcg_cpulock_stack_push(base, &a), MCG_PCPU_DOUBLE);
	CHECK_EQ(mcg_cpulock_stack_push(base, &b), MCG_PCPU_OK);
	CHECK(mcg_rseq_stack_pop(base) == NULL); /* objects there: still fails */
	CHECK_EQ(mcg_rseq_stack_push(base, &a), MCG_PCPU_FAIL);
	void *two[2];
	CHECK_EQ(mcg_rseq_stack_pop_batch(base, two, 2), 0);
	CHECK_EQ(mcg_rseq_stack_push_batch(base, two, 1), 0);
	CHECK_EQ(base->cur, 2);
	mcg_lock(&base->lock);
	mcg_pcpu_stack_stop(base);
	mcg_pcpu_stack_start(base, CAP);
	mcg_unlock(&base->lock);
	CHECK(mcg_rseq_stack_pop(base) == NULL);
	CHECK_EQ(mcg_cpulock_stack_push_batch(base, two, 2), 2);   /* cap 4 */
	CHECK_EQ(mcg_cpulock_stack_push(base, &a), MCG_PCPU_FAIL); /* full */
	CHECK_EQ(mcg_cpulock_stack_pop_batch(base, two, 2), 2);
	CHECK(mcg_cpulock_stack_pop(base) == &b);
	CHECK(mcg_cpulock_stack_pop(base) == &a);
	CHECK(mcg_cpulock_stack_pop(base) == NULL);
	CHECK_EQ(base->cur, 0);
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
	slot_mem = mcg_os_map(MCG_ALIGN_UP((size_t)ncpu * (CAP + 1) * sizeof(void *), 4096), 4096);
	if (!base || !slot_mem)
		return 1;
	for (unsigned cpu = 0; cpu < ncpu; cpu++) {
		struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(base, cpu);
		mcg_lock_init(&st->lock, MCG_RANK_PCPU);
		st->slots = slot_mem + (size_t)cpu * (CAP + 1) + 1; /* after a NULL slot */
		mcg_pcpu_stack_start(st, CAP);
	}
	if (locked) {
		RUN(test_locked_sections_fail);
		return test_done();
	}
	RUN(test_push_pop);
	RUN(test_push_gated);
	RUN(test_gate);
	RUN(test_top_guess);
	RUN(test_stopped);
	int rc = test_done();
	fprintf(stderr, "--- again with MCG_RSEQ=0 (locked mode)\n");
	return test_merge(rc, test_run_locked(argv));
}
