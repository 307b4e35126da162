/* SPDX-License-Identifier: MIT */
/*
 * base/fault.h - the single fault-injection point.
 *
 * Every OS memory request and every metadata allocation calls
 * mcg_fault_should_fail() first and fails cleanly when it says so.  Tests arm
 * it with mcg_fault_inject() (memcg/debug.h) and sweep N, SQLite style.
 */
#ifndef MCG_BASE_FAULT_H
#define MCG_BASE_FAULT_H

#include <stdbool.h>

#include "base/compiler.h"

extern mcg_hidden unsigned long mcg_fault_armed_nth; /* 0: disarmed */
bool mcg_fault_hit(void);

/** mcg_fault_should_fail - count this call; true if it must fail. */
static inline bool mcg_fault_should_fail(void)
{
	if (likely(__atomic_load_n(&mcg_fault_armed_nth, __ATOMIC_RELAXED) == 0))
		return false;
	return mcg_fault_hit();
}

#endif /* MCG_BASE_FAULT_H */
