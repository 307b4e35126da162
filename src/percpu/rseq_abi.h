/* SPDX-License-Identifier: MIT */
/*
 * percpu/rseq_abi.h - the kernel's rseq ABI as memcg's critical sections use
 * it, in one place: the signature that must precede every abort handler, and
 * the offsets of the two fields of the thread's struct rseq that a section
 * touches (cpu_id, read to find this CPU's data; rseq_cs, written to arm the
 * section).  The assembly takes them, and the per-CPU shift, as named
 * operands (MCG_RSEQ_OPERANDS); the offsets are pinned to the kernel's own
 * struct rseq where the headers have it.
 *
 * glibc (>= 2.35) registers each thread's struct rseq and publishes where it
 * is: __rseq_offset from the thread pointer, __rseq_size.
 */
#ifndef MCG_PERCPU_RSEQ_ABI_H
#define MCG_PERCPU_RSEQ_ABI_H

#include <stddef.h>

/* The x86 signature (the kernel's RSEQ_SIG): the 4 bytes before an abort
 * handler, as the operand of a ud1 that decodes but never runs. */
#define MCG_RSEQ_SIG 0x53053053
/* struct rseq: __u32 cpu_id_start; __u32 cpu_id; __u64 rseq_cs; ... */
#define MCG_RSEQ_CPU_ID_OFFSET 4
#define MCG_RSEQ_CS_OFFSET 8

#if defined(__has_include)
#if __has_include(<linux/rseq.h>)
#include <linux/rseq.h>
_Static_assert(offsetof(struct rseq, cpu_id) == MCG_RSEQ_CPU_ID_OFFSET, "rseq ABI: cpu_id");
_Static_assert(offsetof(struct rseq, rseq_cs) == MCG_RSEQ_CS_OFFSET, "rseq ABI: rseq_cs");
#if defined(__x86_64__) && defined(RSEQ_SIG)
_Static_assert(RSEQ_SIG == MCG_RSEQ_SIG, "rseq ABI: signature");
#endif
#endif
#endif

/* glibc's rseq registration (glibc >= 2.35). */
extern const ptrdiff_t __rseq_offset;
extern const unsigned int __rseq_size;

/*
 * The input operands every rseq section takes: %[rseq] (this thread's
 * struct rseq, from the thread pointer: mcg_rseq_offset), the signature,
 * the two field offsets, and the per-CPU shift (percpu.h).
 */
#define MCG_RSEQ_OPERANDS                                                                          \
	[rseq] "r"(mcg_rseq_offset), [rseq_sig] "i"(MCG_RSEQ_SIG),                                 \
	        [rseq_cpu_id] "i"(MCG_RSEQ_CPU_ID_OFFSET), [rseq_cs] "i"(MCG_RSEQ_CS_OFFSET),      \
	        [pcpu_shift] "i"(MCG_PCPU_SHIFT)

#endif /* MCG_PERCPU_RSEQ_ABI_H */
