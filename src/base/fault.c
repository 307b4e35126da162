/* SPDX-License-Identifier: MIT */
/* base/fault.c - the single fault-injection point (see fault.h). */
#include "base/fault.h"

#include "memcg/debug.h"

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
