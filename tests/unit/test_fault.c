/* SPDX-License-Identifier: MIT */
/*
 * test_fault.c - the fault-injection point (base/fault.c): the Nth call
 * fails, and every later one when sticky; the calls and failures counted
 * since the arming; disarmed, nothing fails and the fast test counts
 * nothing (a call that reaches the counter after a disarm does not fail).
 */
#include "base/fault.h"
#include "memcg/debug.h"
#include "test.h"

static void test_nth(void)
{
	mcg_fault_inject(3, 0);
	CHECK(!mcg_fault_should_fail());
	CHECK(!mcg_fault_should_fail());
	CHECK(mcg_fault_should_fail());
	CHECK(!mcg_fault_should_fail());
	CHECK_EQ(mcg_fault_count(), 4);
	CHECK_EQ(mcg_fault_failed(), 1);
	mcg_fault_inject(0, 0);
}

static void test_sticky(void)
{
	mcg_fault_inject(2, 1);
	CHECK(!mcg_fault_should_fail());
	for (int i = 0; i < 5; i++)
		CHECK(mcg_fault_should_fail());
	CHECK_EQ(mcg_fault_count(), 6);
	CHECK_EQ(mcg_fault_failed(), 5);
	mcg_fault_inject(0, 0);
}

static void test_disarmed(void)
{
	mcg_fault_inject(0, 0);
	for (int i = 0; i < 5; i++)
		CHECK(!mcg_fault_should_fail());
	CHECK_EQ(mcg_fault_count(), 0); /* the fast test does not count */
	/* a thread that saw it armed and reaches the counter after the disarm */
	CHECK(!mcg_fault_hit());
	CHECK_EQ(mcg_fault_count(), 1);
	CHECK_EQ(mcg_fault_failed(), 0);
}

int main(void)
{
	RUN(test_nth);
	RUN(test_sticky);
	RUN(test_disarmed);
	return test_done();
}
