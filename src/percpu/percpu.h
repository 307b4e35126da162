/* SPDX-License-Identifier: MIT */
/*
 * percpu/percpu.h - per-CPU data: which mechanism, which CPU, and the fence.
 *
 * Two mechanisms with the same semantics (chosen once, at initialisation):
 *  - MCG_PERCPU_RSEQ: restartable sequences.  An operation on a CPU's data is
 *    an rseq critical section (percpu/pcpu_stack.h; the ABI in
 *    percpu/rseq_abi.h) that the kernel aborts if the
 *    thread is preempted, migrated or signalled; its commit is one store.
 *    A remote owner (drain, reap) first *stops* the CPU's data so new sections
 *    fail to the slow path, then calls mcg_percpu_fence(), which restarts every
 *    section in flight (membarrier's rseq command).  After it, the remote
 *    owner has the data to itself until it starts it again.
 *  - MCG_PERCPU_LOCKED: a lock per CPU slot, the slot chosen by
 *    sched_getcpu().  Migration after the choice is harmless: the lock
 *    protects the slot, not the CPU.  Used without rseq (valgrind, old
 *    kernels, GLIBC_TUNABLES=glibc.pthread.rseq=0, MCG_RSEQ=0) and in TSan
 *    builds, which cannot model rseq.  Its paths are named `cpulock`
 *    (mcg_cpulock_stack_pop(), mcg_cache_alloc_cpulock()); the suffix
 *    `_locked` keeps its one meaning, "the caller holds the lock".
 *
 * Per-CPU headers are MCG_PCPU_STRIDE bytes apart, so the address of CPU c's
 * header is base + (c << MCG_PCPU_SHIFT): one shift in a critical section.
 */
#ifndef MCG_BASE_PERCPU_H
#define MCG_BASE_PERCPU_H

#include <sched.h>
#include <stdint.h>

#include "base/compiler.h"
#include "memcg/debug.h"
#include "percpu/rseq_abi.h"

#define MCG_PCPU_SHIFT 7
#define MCG_PCPU_STRIDE (1u << MCG_PCPU_SHIFT)

/** The mechanism in use; set by mcg_percpu_init(). */
extern mcg_hidden mcg_percpu_mode_t mcg_percpu_mode_;

/** __rseq_offset, copied at init so fast paths read it without the GOT;
 *  in locked mode the offset of a zeroed area (mcg_percpu_sections()). */
extern mcg_hidden ptrdiff_t mcg_rseq_offset;

/** mcg_percpu_init - choose the mechanism (idempotent; call before any use). */
void mcg_percpu_init(void);

/** mcg_percpu_use_rseq - true when rseq critical sections are in use. */
static inline bool mcg_percpu_use_rseq(void)
{
	return mcg_config_rseq_asm && !mcg_config_tsan && mcg_percpu_mode_ == MCG_PERCPU_RSEQ;
}

/**
 * mcg_percpu_sections - may a fast path run a per-CPU stack's rseq section
 * without testing the mode?  Yes wherever the sections are built: in locked
 * mode they run too, and fail.  There mcg_rseq_offset points at a zeroed
 * thread-local area (percpu.c), so a section takes CPU 0's header, which
 * like every header reads stopped in locked mode (percpu/pcpu_stack.h; the
 * kmalloc stub's zeroed headers read empty and full at once), and its
 * descriptor store lands in that area.  Valid once mcg_percpu_init()
 * has run (before it mcg_rseq_offset is 0): every caller's cache or pointer
 * exists only after it, except mcg_malloc()'s, whose table entries hold
 * no arrays until then (slab/kmalloc_fast.h).
 */
static inline bool mcg_percpu_sections(void) { return mcg_config_rseq_asm && !mcg_config_tsan; }

/** mcg_percpu_rseq_area - this thread's struct rseq (valid in rseq mode). */
static inline volatile uint32_t *mcg_percpu_rseq_area(void)
{
	return (volatile uint32_t *)((char *)__builtin_thread_pointer() + mcg_rseq_offset);
}

/**
 * mcg_percpu_cpu - the CPU the thread runs on now (it may move right after).
 */
static inline unsigned mcg_percpu_cpu(void)
{
	if (mcg_percpu_use_rseq())
		return mcg_percpu_rseq_area()[MCG_RSEQ_CPU_ID_OFFSET / 4];
	int c = sched_getcpu();
	return c < 0 ? 0 : (unsigned)c;
}

/**
 * mcg_percpu_fence - after stopping a CPU's data, wait until no critical
 * section that saw it running can still commit.  No-op in locked mode.
 */
void mcg_percpu_fence(void);

/** mcg_percpu_after_fork_child - re-arm the mechanism in a forked child. */
void mcg_percpu_after_fork_child(void);

#endif /* MCG_BASE_PERCPU_H */
