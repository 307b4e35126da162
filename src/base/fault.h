/* SPDX-License-Identifier: MIT */
/*
 * base/fault.h - the fault-injection points: one for memory, one for I/O.
 *
 * Every OS memory request and every metadata allocation calls
 * mcg_fault_should_fail() first and fails cleanly when it says so.  Tests arm
 * it with mcg_fault_inject() (memcg/debug.h) and sweep N, SQLite style.
 *
 * Every call the page cache makes on a backing file (open, stat, read,
 * write, sync, truncate) calls mcg_fault_io() first: armed with
 * mcg_fault_inject_io(), the Nth such call (of the kinds armed) fails with
 * the armed errno, or transfers only part of what it was asked (a short
 * read or write, which the caller must loop over).  Separate counts, so a
 * memory sweep is not shifted by I/O and the other way round.  The same
 * point can emulate a slower device (mcg_fault_io_rate()): reads and
 * writes then take their bytes' time on one shared device clock, one
 * after another, as requests queue on a disk.
 */
#ifndef MCG_BASE_FAULT_H
#define MCG_BASE_FAULT_H

#include <stdbool.h>
#include <stddef.h>

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

extern mcg_hidden unsigned long mcg_fault_io_armed_nth; /* 0: disarmed */
int mcg_fault_io_hit(unsigned op);

/**
 * mcg_fault_io - count this I/O call of kind @op (MCG_FAULT_IO_* of
 * memcg/debug.h).  Return: 0 (go ahead), a negative errno to fail with, or
 * MCG_FAULT_IO_SHORT_ (transfer about half, as the caller's alignment allows).
 */
static inline int mcg_fault_io(unsigned op)
{
	if (likely(__atomic_load_n(&mcg_fault_io_armed_nth, __ATOMIC_RELAXED) == 0))
		return 0;
	return mcg_fault_io_hit(op);
}

extern mcg_hidden unsigned long mcg_fault_io_rate_; /* bytes per second; 0: off */
void mcg_fault_io_wait(unsigned op, size_t bytes);

/**
 * mcg_fault_io_delay - an emulated device (mcg_fault_io_rate()): sleep
 * until a transfer of @bytes of kind @op has had its turn on it.
 */
static inline void mcg_fault_io_delay(unsigned op, size_t bytes)
{
	if (unlikely(__atomic_load_n(&mcg_fault_io_rate_, __ATOMIC_RELAXED)))
		mcg_fault_io_wait(op, bytes);
}

/** What mcg_fault_io() returns for an injected short transfer. */
#define MCG_FAULT_IO_SHORT_ 1

#endif /* MCG_BASE_FAULT_H */
