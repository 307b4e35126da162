/* SPDX-License-Identifier: MIT */
/*
 * percpu/pcpu_stack.h - a per-CPU stack of pointers: the slab fast path.
 *
 * Each CPU has a header { cur, touched, lo, hi, slots, top, lock } at
 * base + (cpu << MCG_PCPU_SHIFT); slots[0, cur) hold objects (pointers,
 * whose low bits the slab layer may use as tags).  The shape is
 * tcmalloc's per-CPU slab: array stacks, so an operation reads the header,
 * touches one slot, and commits by storing `cur` - one store, the last
 * instruction of the rseq critical section.  No ABA (only the CPU's own
 * sections move `cur`), no atomics on the fast path.
 *
 *   pop  : if cur > lo  { obj = slots[cur-1]; top = slots[cur-2]; commit cur-1 }
 *   push : if cur < hi  { slots[cur] = obj; top = obj;   commit cur+1 }
 *   push_gated: push, failing while a gate word is closed
 *
 * `top` is a guess at slots[cur-1], nothing more: the pop reads it and
 * checks it against slots[cur-1]; where they differ it leaves the section
 * (committing nothing), stores the top slot to top and runs again.  So no
 * other operation (drains, the locked path, a section aborted after its
 * store to top, that fix-up landing on another CPU's header after a
 * migration) need keep it right; the batches store it only to guess well.
 * It is there for latency: the pop's result then waits on one load
 * forwarded from the last push (top), where slots[cur-1] waits on two in a
 * row (cur, then the slot at cur); the check is a predicted branch, off
 * the chain of data from a free to the next allocation, and the fix-up is
 * out of line, so the pop's fast line has no taken branch.
 *
 * Stopping a CPU's stack (remote drain, reap): under its lock set lo to
 * MCG_PCPU_STOPPED and hi to 0 so every operation fails to the slow path,
 * then mcg_percpu_fence().  In locked mode every operation takes the lock, so
 * holding it is enough; there lo and hi read stopped all the time, so the
 * rseq sections, which the fast paths try without testing the mode
 * (mcg_percpu_sections()), fail, and the locked path bounds itself by cap.
 *
 * Restarting needs care too, because the fence covers only the stop: a
 * section that begins while the stack is stopped is not aborted when the
 * owner restarts it.  So every section reads its bound (lo for pops, hi for
 * pushes) *before* cur, and the owner publishes cur and the slots before the
 * bounds (release stores, mcg_pcpu_stack_start()).  A section that reads a
 * running bound then reads the restarted cur (x86 keeps loads in order); one
 * that reads a stopped bound fails.  A section that read cur first could
 * pair a stale cur with a restarted bound and commit it over the owner's
 * drain.
 *
 * top needs no ordering: a pop returns it only where it equals slots[cur-1]
 * as read after cur, so the argument above holds for what a pop returns.
 *
 * The rseq sections are x86-64 assembly, below, kept tiny to be reviewed line
 * by line: %rax = this CPU's header, %ecx = cur, %rdx / %r8 = slots.
 */
#ifndef MCG_BASE_PCPU_STACK_H
#define MCG_BASE_PCPU_STACK_H

#include <stdint.h>

#include "base/lock.h"
#include "percpu/percpu.h"

#define MCG_PCPU_STOPPED 0x7fffffffu

struct mcg_pcpu_stack {
	uint32_t cur;     /* objects in slots[0, cur) (offset 0: the asm) */
	uint32_t touched; /* slow path ran since the last reap (relaxed) */
	uint32_t lo;      /* pop only while cur > lo (0, or MCG_PCPU_STOPPED) (8) */
	uint32_t hi;      /* push only while cur < hi (capacity, or 0 stopped) (12) */
	void **slots;     /* capacity entries, after a NULL one: slots[-1] (16) */
	void *top;        /* a guess at slots[cur-1], checked before use (24) */
	uint32_t cap;     /* capacity for the locked path (0 while stopped) */
	mcg_lock_t lock;  /* locked mode: the data; rseq mode: remote owners */
} __attribute__((aligned(MCG_PCPU_STRIDE)));

_Static_assert(__builtin_offsetof(struct mcg_pcpu_stack, lo) == 8 &&
                       __builtin_offsetof(struct mcg_pcpu_stack, hi) == 12 &&
                       __builtin_offsetof(struct mcg_pcpu_stack, slots) == 16 &&
                       __builtin_offsetof(struct mcg_pcpu_stack, top) == 24,
               "the asm's offsets");

_Static_assert(sizeof(struct mcg_pcpu_stack) == MCG_PCPU_STRIDE, "stride");

/* Results of push. */
enum { MCG_PCPU_OK = 0, MCG_PCPU_FAIL = 1, MCG_PCPU_DOUBLE = 2 };

/** mcg_pcpu_stack_of - CPU @cpu's header in the array at @base. */
static inline struct mcg_pcpu_stack *mcg_pcpu_stack_of(struct mcg_pcpu_stack *base, unsigned cpu)
{
	return (struct mcg_pcpu_stack *)((char *)base + ((size_t)cpu << MCG_PCPU_SHIFT));
}

/* A closed gate of mcg_rseq_stack_push_gated() is a multiple of this,
 * below 2^31: more than any capacity, so hi minus it is negative. */
#define MCG_PCPU_GATE_UNIT (1u << 20)

#if MCG_HAVE_RSEQ_ASM
/* clang-format off: the assembly is laid out by hand, one instruction a line. */
/*
 * The rseq descriptor (in section __rseq_cs), the abort handler preceded by
 * the signature (in __rseq_failure), the store of the descriptor into this
 * thread's rseq area, then label 1: the start of the critical section.  The
 * section ends at label 2, just after the commit.  Then %rax = our header.
 */
#define MCG_RSEQ_ENTER(abort)                                                                      \
	".pushsection __rseq_cs, \"aw\"\n\t"                                                       \
	".balign 32\n\t"                                                                           \
	"3:\n\t"                                                                                   \
	".long 0x0, 0x0\n\t"                                                                       \
	".quad 1f, (2f - 1f), 4f\n\t"                                                              \
	".popsection\n\t"                                                                          \
	".pushsection __rseq_failure, \"ax\"\n\t"                                                  \
	".byte 0x0f, 0xb9, 0x3d\n\t" /* ud1 <sig>(%%rip), %%edi: decodes, never runs */            \
	".long %c[rseq_sig]\n\t"                                                                   \
	"4:\n\t"                                                                                   \
	"jmp %l[" #abort "]\n\t"                                                                   \
	".popsection\n\t"                                                                          \
	"leaq 3b(%%rip), %%rax\n\t"                                                                \
	"movq %%rax, %%fs:%c[rseq_cs](%[rseq])\n\t"                                                \
	"1:\n\t"                                                                                   \
	"movl %%fs:%c[rseq_cpu_id](%[rseq]), %%eax\n\t"                                            \
	"shlq %[pcpu_shift], %%rax\n\t"                                                            \
	"addq %[base], %%rax\n\t"

/*
 * Pop this CPU's top object; NULL if the stack is empty or stopped.
 * The output is zeroed on the way to `empty` (out of line, past the
 * section: it commits nothing): GCC takes an asm goto's outputs as
 * unspecified at its labels, so it may merge `return NULL` there with
 * `return obj` and return a stale register from an empty stack (GCC does
 * at -O1; test_pcpu_stack checks it).
 */
static inline void *mcg_rseq_stack_pop(struct mcg_pcpu_stack *base)
{
	void *obj;
retry:
	__asm__ __volatile__ goto(
	        MCG_RSEQ_ENTER(abort) "movl 8(%%rax), %%edx\n\t" /* lo, before cur (see above) */
	                              "movl (%%rax), %%ecx\n\t"  /* cur */
	                              "cmpl %%edx, %%ecx\n\t"    /* cur <= lo: empty or stopped */
	                              "jbe 7f\n\t"
	                              "subl $1, %%ecx\n\t"
	                              "movq 16(%%rax), %%rdx\n\t"        /* slots */
	                              "movq 24(%%rax), %[obj]\n\t"       /* top, a guess */
	                              "cmpq %[obj], (%%rdx,%%rcx,8)\n\t" /* slots[cur-1]? */
	                              "jne 8f\n\t"
	                              "movq -8(%%rdx,%%rcx,8), %%rdx\n\t" /* slots[cur-2]: */
	                              "movq %%rdx, 24(%%rax)\n\t"         /* the next top */
	                              "movl %%ecx, (%%rax)\n\t"           /* commit cur-1 */
	                              "2:\n\t"
	                              ".pushsection __rseq_failure, \"ax\"\n\t"
	                              "7:\n\t" /* empty: out of the section, no commit */
	                              "xorl %k[obj], %k[obj]\n\t" /* NULL: see above */
	                              "jmp %l[empty]\n\t"
	                              "8:\n\t" /* a wrong guess: out of the section, */
	                              "movq (%%rdx,%%rcx,8), %%rdx\n\t" /* the top slot */
	                              "movq %%rdx, 24(%%rax)\n\t" /* is the guess (any CPU's: */
	                              "jmp %l[abort]\n\t"         /* a guess), and again */
	                              ".popsection\n\t"
	        : [obj] "=&r"(obj)
	        : MCG_RSEQ_OPERANDS, [base] "r"(base)
	        : "rax", "rcx", "rdx", "memory", "cc"
	        : abort, empty);
	if (!obj) /* the arrays hold objects only: lets callers skip a test; GCOVR_EXCL_BR_LINE */
		__builtin_unreachable(); /* GCOVR_EXCL_LINE: a hint to the compiler, no code */
	return obj;
abort:
	goto retry;
empty:
	return NULL;
}

/* A push's section: its start and hi (in %edx); then cur (in %ecx) compared
 * with the bound in %edx, the jump to full for the caller to add; then
 * the double-free test (%rdx = slots), the store for the caller to add,
 * and the commit, which ends the section. */
#define MCG_RSEQ_PUSH_HI                                                                           \
	MCG_RSEQ_ENTER(abort) "movl 12(%%rax), %%edx\n\t" /* hi, before cur (see above) */
#define MCG_RSEQ_PUSH_CUR                                                                          \
	"movl (%%rax), %%ecx\n\t" /* cur */                                                        \
	"cmpl %%edx, %%ecx\n\t"   /* cur >= bound: full or stopped */
#define MCG_RSEQ_PUSH_TOP                                                                          \
	"movq 16(%%rax), %%rdx\n\t"          /* slots */                                           \
	"cmpq %[obj], -8(%%rdx,%%rcx,8)\n\t" /* the top slot */                                    \
	"je %l[dfree]\n\t"
#define MCG_RSEQ_PUSH_COMMIT                                                                       \
	"movq %[obj], 24(%%rax)\n\t" /* top */                                                     \
	"addl $1, %%ecx\n\t"                                                                       \
	"movl %%ecx, (%%rax)\n\t" /* commit cur+1 */                                               \
	"2:\n\t"

/* Both pushes' operands: %[obj], and any more given; the labels abort,
 * full and dfree. */
#define MCG_RSEQ_PUSH_OPERANDS(...)                                                                \
	:                                                                                          \
	: MCG_RSEQ_OPERANDS, [base] "r"(base), [obj] "r"(obj)__VA_ARGS__                 \
	: "rax", "rcx", "rdx", "memory", "cc"                                                      \
	: abort, full, dfree

/* mcg_rseq_stack_push() (@gate NULL) and mcg_rseq_stack_push_gated(). */
static mcg_always_inline int mcg_rseq_stack_push_(struct mcg_pcpu_stack *base, void *obj,
                                                  const uint32_t *gate)
{
retry:
	if (gate)
		__asm__ __volatile__ goto(
		        MCG_RSEQ_PUSH_HI
		        "subl %[gate], %%edx\n\t"            /* hi - a closed gate: negative */
		        MCG_RSEQ_PUSH_CUR "jge %l[full]\n\t" /* signed */
		        MCG_RSEQ_PUSH_TOP "movq %[obj], (%%rdx,%%rcx,8)\n\t" /* slots[cur] = obj */
		        MCG_RSEQ_PUSH_COMMIT MCG_RSEQ_PUSH_OPERANDS(, [gate] "m"(*gate)));
	else
		__asm__ __volatile__ goto(MCG_RSEQ_PUSH_HI MCG_RSEQ_PUSH_CUR
		                          "jae %l[full]\n\t" MCG_RSEQ_PUSH_TOP
		                          "movq %[obj], (%%rdx,%%rcx,8)\n\t" /* slots[cur] = obj */
		                          MCG_RSEQ_PUSH_COMMIT MCG_RSEQ_PUSH_OPERANDS());
	return MCG_PCPU_OK;
abort:
	goto retry;
full:
	return MCG_PCPU_FAIL;
dfree:
	return MCG_PCPU_DOUBLE;
}

/*
 * Push @obj; MCG_PCPU_FAIL if the stack is full or stopped, MCG_PCPU_DOUBLE
 * if @obj is the top slot already (an empty stack compares with its NULL
 * slot[-1], so there is no test for empty).
 */
static inline int mcg_rseq_stack_push(struct mcg_pcpu_stack *base, void *obj)
{
	return mcg_rseq_stack_push_(base, obj, NULL);
}

/*
 * mcg_rseq_stack_push() that also fails, as if full, while *@gate is
 * nonzero (a multiple of MCG_PCPU_GATE_UNIT): the section subtracts the
 * gate from hi and compares signed, one instruction where a test and a
 * branch before the section would be two - the slab layer closes the gate
 * of accounted frees while a shrinker runs (cache_fast.h).
 */
static inline int mcg_rseq_stack_push_gated(struct mcg_pcpu_stack *base, void *obj,
                                            const uint32_t *gate)
{
	return mcg_rseq_stack_push_(base, obj, gate);
}

/* Push up to @n (>= 1) objects from @src; return how many were pushed. */
static inline uint32_t mcg_rseq_stack_push_batch(struct mcg_pcpu_stack *base, void *const *src,
                                                 uint32_t n)
{
	uint32_t done = 0;
retry:
	__asm__ __volatile__ goto(
	        MCG_RSEQ_ENTER(abort) "movl 12(%%rax), %%edx\n\t" /* hi, before cur (see above) */
	                              "movl (%%rax), %%ecx\n\t"   /* cur */
	                              "subl %%ecx, %%edx\n\t"     /* room = hi - cur */
	                              "jle %l[full]\n\t"
	                              "cmpl %[n], %%edx\n\t"
	                              "cmova %[n], %%edx\n\t" /* k = min(room, n) */
	                              "movq 16(%%rax), %%r8\n\t"
	                              "leaq (%%r8,%%rcx,8), %%r8\n\t" /* &slots[cur] */
	                              "xorl %%r9d, %%r9d\n\t"
	                              "6:\n\t"
	                              "movq (%[src],%%r9,8), %%r10\n\t"
	                              "movq %%r10, (%%r8,%%r9,8)\n\t"
	                              "addl $1, %%r9d\n\t"
	                              "cmpl %%edx, %%r9d\n\t"
	                              "jb 6b\n\t"
	                              "movl %%edx, (%[done])\n\t"
	                              "movq %%r10, 24(%%rax)\n\t" /* top: the last pushed */
	                              "addl %%edx, %%ecx\n\t"
	                              "movl %%ecx, (%%rax)\n\t" /* commit cur+k */
	                              "2:\n\t"
	        :
	        : MCG_RSEQ_OPERANDS, [base] "r"(base), [src] "r"(src), [n] "r"(n), [done] "r"(&done)
	        : "rax", "rcx", "rdx", "r8", "r9", "r10", "memory", "cc"
	        : abort, full);
	return done;
abort:
	goto retry;
full:
	return 0;
}

/* Pop up to @n (>= 1) objects into @dst; return how many were popped. */
static inline uint32_t mcg_rseq_stack_pop_batch(struct mcg_pcpu_stack *base, void **dst, uint32_t n)
{
	uint32_t done = 0;
retry:
	__asm__ __volatile__ goto(
	        MCG_RSEQ_ENTER(abort) "movl 8(%%rax), %%r8d\n\t" /* lo, before cur (see above) */
	                              "movl (%%rax), %%ecx\n\t"  /* cur */
	                              "movl %%ecx, %%edx\n\t"
	                              "subl %%r8d, %%edx\n\t" /* avail = cur - lo */
	                              "jle %l[empty]\n\t"
	                              "cmpl %[n], %%edx\n\t"
	                              "cmova %[n], %%edx\n\t" /* k = min(avail, n) */
	                              "subl %%edx, %%ecx\n\t" /* new cur */
	                              "movq 16(%%rax), %%r8\n\t"
	                              "leaq (%%r8,%%rcx,8), %%r8\n\t" /* &slots[cur-k] */
	                              "xorl %%r9d, %%r9d\n\t"
	                              "6:\n\t"
	                              "movq (%%r8,%%r9,8), %%r10\n\t"
	                              "movq %%r10, (%[dst],%%r9,8)\n\t"
	                              "addl $1, %%r9d\n\t"
	                              "cmpl %%edx, %%r9d\n\t"
	                              "jb 6b\n\t"
	                              "movl %%edx, (%[done])\n\t"
	                              "movq -8(%%r8), %%r10\n\t"  /* slots[cur-k-1] */
	                              "movq %%r10, 24(%%rax)\n\t" /* is the next top */
	                              "movl %%ecx, (%%rax)\n\t"   /* commit cur-k */
	                              "2:\n\t"
	        :
	        : MCG_RSEQ_OPERANDS, [base] "r"(base), [dst] "r"(dst), [n] "r"(n), [done] "r"(&done)
	        : "rax", "rcx", "rdx", "r8", "r9", "r10", "memory", "cc"
	        : abort, empty);
	return done;
abort:
	goto retry;
empty:
	return 0;
}
/* clang-format on */
#else
static inline void *mcg_rseq_stack_pop(struct mcg_pcpu_stack *b) { return NULL; }
static inline int mcg_rseq_stack_push(struct mcg_pcpu_stack *b, void *o) { return MCG_PCPU_FAIL; }
static inline int mcg_rseq_stack_push_gated(struct mcg_pcpu_stack *b, void *o, const uint32_t *g)
{
	return MCG_PCPU_FAIL;
}
static inline uint32_t mcg_rseq_stack_push_batch(struct mcg_pcpu_stack *b, void *const *s,
                                                 uint32_t n)
{
	return 0;
}
static inline uint32_t mcg_rseq_stack_pop_batch(struct mcg_pcpu_stack *b, void **d, uint32_t n)
{
	return 0;
}
#endif

/* ---- the locked path: same semantics, a lock per CPU slot ---- */

static inline struct mcg_pcpu_stack *mcg_pcpu_stack_lock_mine(struct mcg_pcpu_stack *base)
{
	struct mcg_pcpu_stack *s = mcg_pcpu_stack_of(base, mcg_percpu_cpu());
	mcg_lock(&s->lock);
	return s;
}

void *mcg_cpulock_stack_pop(struct mcg_pcpu_stack *base);
int mcg_cpulock_stack_push(struct mcg_pcpu_stack *base, void *obj);
uint32_t mcg_cpulock_stack_push_batch(struct mcg_pcpu_stack *base, void *const *src, uint32_t n);
uint32_t mcg_cpulock_stack_pop_batch(struct mcg_pcpu_stack *base, void **dst, uint32_t n);

/* ---- the entry points ---- */

/** mcg_pcpu_stack_pop - pop this CPU's top object; NULL if empty or stopped. */
static mcg_always_inline void *mcg_pcpu_stack_pop(struct mcg_pcpu_stack *base)
{
	if (likely(mcg_percpu_use_rseq()))
		return mcg_rseq_stack_pop(base);
	return mcg_cpulock_stack_pop(base);
}

/** mcg_pcpu_stack_push - push @obj on this CPU.  Return _OK, _FAIL (full) or _DOUBLE. */
static mcg_always_inline int mcg_pcpu_stack_push(struct mcg_pcpu_stack *base, void *obj)
{
	if (likely(mcg_percpu_use_rseq()))
		return mcg_rseq_stack_push(base, obj);
	return mcg_cpulock_stack_push(base, obj);
}

/** mcg_pcpu_stack_push_batch - push up to @n objects; return the count pushed. */
static inline uint32_t mcg_pcpu_stack_push_batch(struct mcg_pcpu_stack *base, void *const *src,
                                                 uint32_t n)
{
	if (mcg_percpu_use_rseq())
		return mcg_rseq_stack_push_batch(base, src, n);
	return mcg_cpulock_stack_push_batch(base, src, n);
}

/** mcg_pcpu_stack_pop_batch - pop up to @n objects; return the count popped. */
static inline uint32_t mcg_pcpu_stack_pop_batch(struct mcg_pcpu_stack *base, void **dst, uint32_t n)
{
	if (mcg_percpu_use_rseq())
		return mcg_rseq_stack_pop_batch(base, dst, n);
	return mcg_cpulock_stack_pop_batch(base, dst, n);
}

/** mcg_pcpu_stack_stop - make @s fail every operation (caller holds s->lock). */
static inline void mcg_pcpu_stack_stop(struct mcg_pcpu_stack *s)
{
	MCG_WRITE_ONCE(s->hi, 0);
	MCG_WRITE_ONCE(s->lo, MCG_PCPU_STOPPED);
	s->cap = 0;
}

/** mcg_pcpu_stack_start - let @s run again with capacity @cap (caller holds
 *  s->lock); in locked mode the rseq sections' bounds stay stopped. */
static inline void mcg_pcpu_stack_start(struct mcg_pcpu_stack *s, uint32_t cap)
{
	if (!mcg_percpu_use_rseq()) {
		mcg_pcpu_stack_stop(s);
		s->cap = cap;
		return;
	}
	s->cap = cap;
	__atomic_store_n(&s->lo, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&s->hi, cap, __ATOMIC_RELEASE);
}

#endif /* MCG_BASE_PCPU_STACK_H */
