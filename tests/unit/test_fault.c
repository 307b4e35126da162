/* SPDX-License-Identifier: MIT */
/*
 * test_fault.c - the fault-injection point (base/fault.c): the Nth call
 * fails, and every later one when sticky; the calls and failures counted
 * since the arming; disarmed, nothing fails and the fast test counts
 * nothing (a call that reaches the counter after a disarm does not fail).
 * The I/O point the same way, and its emulated device: only the kinds it
 * was set for wait their bytes' time.
 */
#include <errno.h>
#include <time.h>

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

/* An I/O call that saw the point armed and reaches it after the disarm:
 * counted (its kind is armed) and not failed. */
static void test_io_disarmed(void)
{
	REQUIRE(mcg_fault_inject_io(0, 0, EIO, MCG_FAULT_IO_READ) == 0);
	CHECK_EQ(mcg_fault_io(MCG_FAULT_IO_READ), 0); /* the fast test: not counted */
	CHECK_EQ(mcg_fault_io_count(), 0);
	CHECK_EQ(mcg_fault_io_hit(MCG_FAULT_IO_READ), 0);
	CHECK_EQ(mcg_fault_io_hit(MCG_FAULT_IO_WRITE), 0); /* a kind not armed: not counted */
	CHECK_EQ(mcg_fault_io_count(), 1);
	CHECK_EQ(mcg_fault_io_failed(), 0);
	REQUIRE(mcg_fault_inject_io(2, 0, EIO, MCG_FAULT_IO_READ) == 0);
	CHECK_EQ(mcg_fault_io(MCG_FAULT_IO_READ), 0);
	CHECK_EQ(mcg_fault_io(MCG_FAULT_IO_READ), -EIO);
	CHECK_EQ(mcg_fault_io(MCG_FAULT_IO_READ), 0); /* not sticky */
	CHECK_EQ(mcg_fault_io_failed(), 1);
	REQUIRE(mcg_fault_inject_io(0, 0, 0, 0) == 0);
}

static double seconds_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The emulated device: a transfer of a kind it was not set for, or with
 * the device off, does not wait (at 1 byte a second, 1 MB would take 12
 * days); one of its kind takes its bytes' time: 200,000 bytes at 1 MB/s,
 * 0.2 s. */
static void test_io_rate_kinds(void)
{
	REQUIRE(mcg_fault_io_rate(MCG_FAULT_IO_READ, 1) == 0);
	double t0 = seconds_now();
	mcg_fault_io_wait(MCG_FAULT_IO_WRITE, 1u << 20);
	CHECK(seconds_now() - t0 < 5.0);
	REQUIRE(mcg_fault_io_rate(0, 0) == 0);
	t0 = seconds_now();
	mcg_fault_io_wait(MCG_FAULT_IO_READ, 1u << 20); /* off: the rate is 0 */
	CHECK(seconds_now() - t0 < 5.0);
	REQUIRE(mcg_fault_io_rate(MCG_FAULT_IO_READ, 1000000) == 0);
	t0 = seconds_now();
	mcg_fault_io_wait(MCG_FAULT_IO_READ, 200000);
	CHECK(seconds_now() - t0 >= 0.199);
	REQUIRE(mcg_fault_io_rate(0, 0) == 0);
}

int main(void)
{
	RUN(test_nth);
	RUN(test_sticky);
	RUN(test_disarmed);
	RUN(test_io_disarmed);
	RUN(test_io_rate_kinds);
	return test_done();
}
