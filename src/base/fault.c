/* SPDX-License-Identifier: MIT */
/* base/fault.c - the fault-injection points, memory and I/O (see fault.h). */
#include "base/fault.h"

#include <errno.h>
#include <time.h>

#include "memcg/debug.h"
#include "os/os.h"

unsigned long mcg_fault_armed_nth;
static unsigned long fault_calls, fault_failures;
static int fault_sticky;

bool mcg_fault_hit(void)
{
	unsigned long n = __atomic_add_fetch(&fault_calls, 1, __ATOMIC_RELAXED);
	unsigned long nth = __atomic_load_n(&mcg_fault_armed_nth, __ATOMIC_RELAXED);
	if (nth == 0)
		return false;
	if (n == nth || (fault_sticky && n > nth)) {
		__atomic_add_fetch(&fault_failures, 1, __ATOMIC_RELAXED);
		return true;
	}
	return false;
}

mcg_public void mcg_fault_inject(unsigned long nth, int sticky)
{
	__atomic_store_n(&mcg_fault_armed_nth, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&fault_calls, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&fault_failures, 0, __ATOMIC_RELAXED);
	fault_sticky = sticky;
	__atomic_store_n(&mcg_fault_armed_nth, nth, __ATOMIC_SEQ_CST);
}

mcg_public unsigned long mcg_fault_count(void)
{
	return __atomic_load_n(&fault_calls, __ATOMIC_RELAXED);
}

mcg_public unsigned long mcg_fault_failed(void)
{
	return __atomic_load_n(&fault_failures, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------ I/O */

unsigned long mcg_fault_io_armed_nth;
static unsigned long io_calls, io_failures;
static int io_sticky, io_err;
static unsigned io_ops;

int mcg_fault_io_hit(unsigned op)
{
	if (!(op & __atomic_load_n(&io_ops, __ATOMIC_RELAXED)))
		return 0;
	unsigned long n = __atomic_add_fetch(&io_calls, 1, __ATOMIC_RELAXED);
	unsigned long nth = __atomic_load_n(&mcg_fault_io_armed_nth, __ATOMIC_RELAXED);
	if (nth == 0 || !(n == nth || (io_sticky && n > nth)))
		return 0;
	__atomic_add_fetch(&io_failures, 1, __ATOMIC_RELAXED);
	int err = __atomic_load_n(&io_err, __ATOMIC_RELAXED);
	return err ? -err : MCG_FAULT_IO_SHORT_;
}

mcg_public int mcg_fault_inject_io(unsigned long nth, int sticky, int err, unsigned ops)
{
	if (err < 0 || err > 4095 || (sticky && err == EINTR) || (ops & ~MCG_FAULT_IO_ALL))
		return -EINVAL;
	__atomic_store_n(&mcg_fault_io_armed_nth, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&io_calls, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&io_failures, 0, __ATOMIC_RELAXED);
	io_sticky = sticky;
	__atomic_store_n(&io_err, err, __ATOMIC_RELAXED);
	__atomic_store_n(&io_ops, ops ? ops : MCG_FAULT_IO_ALL, __ATOMIC_RELAXED);
	__atomic_store_n(&mcg_fault_io_armed_nth, nth, __ATOMIC_SEQ_CST);
	return 0;
}

mcg_public unsigned long mcg_fault_io_count(void)
{
	return __atomic_load_n(&io_calls, __ATOMIC_RELAXED);
}

mcg_public unsigned long mcg_fault_io_failed(void)
{
	return __atomic_load_n(&io_failures, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------ an emulated device */

unsigned long mcg_fault_io_rate_;
static unsigned io_rate_ops;
static uint64_t device_free_ns; /* when the device is done with what it was given */

void mcg_fault_io_wait(unsigned op, size_t bytes)
{
	unsigned long rate = __atomic_load_n(&mcg_fault_io_rate_, __ATOMIC_RELAXED);
	if (!rate || !(op & __atomic_load_n(&io_rate_ops, __ATOMIC_RELAXED)))
		return;
	uint64_t cost = (uint64_t)((unsigned __int128)bytes * 1000000000u / rate);
	uint64_t now = mcg_os_now_ns(), old = __atomic_load_n(&device_free_ns, __ATOMIC_RELAXED),
	         end;
	do /* the request's turn: after the requests queued before it */
		end = (old > now ? old : now) + cost;
	while (!__atomic_compare_exchange_n(&device_free_ns, &old, end, true, __ATOMIC_RELAXED,
	                                    __ATOMIC_RELAXED));
	struct timespec ts = {(time_t)((end - now) / 1000000000u),
	                      (long)((end - now) % 1000000000u)};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

mcg_public int mcg_fault_io_rate(unsigned ops, unsigned long bytes_per_s)
{
	if (ops & ~(unsigned)(MCG_FAULT_IO_READ | MCG_FAULT_IO_WRITE))
		return -EINVAL;
	__atomic_store_n(&io_rate_ops, ops, __ATOMIC_RELAXED);
	__atomic_store_n(&mcg_fault_io_rate_, ops ? bytes_per_s : 0, __ATOMIC_RELEASE);
	return 0;
}
