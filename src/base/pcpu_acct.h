/* SPDX-License-Identifier: MIT */
/*
 * base/pcpu_acct.h - accounted operations on a per-CPU stack
 * (base/pcpu_stack.h): pop or push an object and, in the same rseq critical
 * section, take or give back its charge.
 *
 * Each CPU's stack header holds, beside `cur`, `units` of charge held for
 * one key `acct` (an objcg, group/objcg.h): charged to it, not in use.  cur
 * (low half) and units (high half) form one 64-bit word, so a section that
 * moves an object and its charge commits both with one store:
 *
 *   pop_acct  : if cur > lo && acct == K && units >= n
 *                   { obj = slots[cur-1]; commit (cur-1, units-n) }
 *   push_acct : if cur < hi && acct == K && units + n <= limit
 *                   { slots[cur] = obj; commit (cur+1, units+n) }
 *   add       : if running && acct == K && units + n <= limit { commit units+n }
 *   take      : if running { *key = acct; *units = units; commit units = 0 }
 *   set_key   : if running && units == 0 { commit acct = K }
 *
 * A header's units are charged to its acct while nonzero; acct is only a
 * label while units is 0 (it may name a freed objcg then: only compared).
 * The plain sections store cur's 32 bits alone and leave units alone.
 *
 * Stop / restart as in pcpu_stack.h: every section reads its bound first (lo
 * for pop and the unit operations, hi for push); a stopped header belongs to
 * its stopper, who may take its units (mcg_pcpu_acct_take_stopped()).  These
 * sections exist in rseq mode only: in locked mode `units` stays 0 and the
 * accounted paths use the per-CPU byte stock (group/objcg.h) instead.
 */
#ifndef MCG_BASE_PCPU_ACCT_H
#define MCG_BASE_PCPU_ACCT_H

#include "base/pcpu_stack.h"

/**
 * What one object charges, in the forms the sections compare and add (the
 * cache computes them once: mcg_acct_charge_init()).  An object too large
 * for the array's units gets need = all ones and room = 0: every accounted
 * section misses.
 */
struct mcg_acct_charge {
	uint64_t need;  /* n << 32: pop needs word >= need */
	uint64_t delta; /* (n << 32) + 1: one object and its units */
	uint64_t room;  /* (limit - n + 1) << 32: push needs word < room */
};

/** mcg_acct_charge_init - @ch for objects of @n units, arrays holding at most @limit. */
static inline void mcg_acct_charge_init(struct mcg_acct_charge *ch, uint64_t n, uint64_t limit)
{
	bool fits = n <= limit;
	ch->need = fits ? n << 32 : UINT64_MAX;
	ch->delta = (n << 32) + 1;
	ch->room = fits ? (limit - n + 1) << 32 : 0;
}

#if MCG_HAVE_RSEQ_ASM
/* clang-format off */

/*
 * Pop an object and take its charge @ch from key @key's units; NULL on any
 * miss.  The array is *@basep, read inside the section as a memory operand
 * (as are @ch's fields), so that the caller's fast path keeps no register
 * for it and needs no stack frame.
 */
static inline void *mcg_rseq_stack_pop_acct(struct mcg_pcpu_stack *const *basep, uint64_t key,
                                            const struct mcg_acct_charge *ch)
{
	void *obj;
retry:
	__asm__ __volatile__ goto(
	        MCG_RSEQ_ENTER(abort)
	        "movl 8(%%rax), %%edx\n\t"          /* lo, first */
	        "cmpq %[key], 24(%%rax)\n\t"        /* the units are key's? */
	        "jne %l[miss]\n\t"
	        "movq (%%rax), %%rcx\n\t"           /* cur | units << 32 */
	        "cmpl %%edx, %%ecx\n\t"             /* cur <= lo: empty or stopped */
	        "jbe %l[miss]\n\t"
	        "cmpq %[need], %%rcx\n\t"           /* units < n */
	        "jb %l[miss]\n\t"
	        "movq 16(%%rax), %%rdx\n\t"         /* slots */
	        "subq %[delta], %%rcx\n\t"          /* (cur - 1, units - n) */
	        "movl %%ecx, %%r8d\n\t"             /* cur - 1 */
	        "movq (%%rdx,%%r8,8), %[obj]\n\t"   /* obj = slots[cur-1] */
	        "movq %%rcx, (%%rax)\n\t"           /* commit both */
	        "2:\n\t"
	        : [obj] "=&r"(obj)
	        : [rseq] "r"(mcg_rseq_offset), [base] "m"(*basep), [key] "r"(key),
	          [need] "m"(ch->need), [delta] "m"(ch->delta)
	        : "rax", "rcx", "rdx", "r8", "memory", "cc"
	        : abort, miss);
	if (!obj) /* the arrays hold objects only: lets callers skip a test */
		__builtin_unreachable();
	return obj;
abort:
	goto retry;
miss:
	return NULL;
}

/* Push @obj and give its charge @ch back to key @key's units (array *@basep, as above). */
static inline int mcg_rseq_stack_push_acct(struct mcg_pcpu_stack *const *basep, void *obj,
                                           uint64_t key, const struct mcg_acct_charge *ch)
{
retry:
	__asm__ __volatile__ goto(
	        MCG_RSEQ_ENTER(abort)
	        "movl 12(%%rax), %%edx\n\t"         /* hi, first */
	        "cmpq %[key], 24(%%rax)\n\t"
	        "jne %l[miss]\n\t"
	        "movq (%%rax), %%rcx\n\t"
	        "cmpl %%edx, %%ecx\n\t"             /* cur >= hi: full or stopped */
	        "jae %l[miss]\n\t"
	        "cmpq %[room], %%rcx\n\t"           /* units + n > limit */
	        "jae %l[miss]\n\t"
	        "movq 16(%%rax), %%rdx\n\t"         /* slots */
	        "movl %%ecx, %%r8d\n\t"             /* cur */
	        "testl %%ecx, %%ecx\n\t"
	        "jz 5f\n\t"
	        "cmpq %[obj], -8(%%rdx,%%r8,8)\n\t" /* freed twice in a row? */
	        "je %l[dfree]\n\t"
	        "5:\n\t"
	        "movq %[obj], (%%rdx,%%r8,8)\n\t"   /* slots[cur] = obj */
	        "addq %[delta], %%rcx\n\t"          /* (cur + 1, units + n) */
	        "movq %%rcx, (%%rax)\n\t"           /* commit both */
	        "2:\n\t"
	        :
	        : [rseq] "r"(mcg_rseq_offset), [base] "m"(*basep), [obj] "r"(obj), [key] "r"(key),
	          [room] "m"(ch->room), [delta] "m"(ch->delta)
	        : "rax", "rcx", "rdx", "r8", "memory", "cc"
	        : abort, miss, dfree);
	return MCG_PCPU_OK;
abort:
	goto retry;
miss:
	return MCG_PCPU_FAIL;
dfree:
	return MCG_PCPU_DOUBLE;
}

/* Add @n units of key @key's charge (units + n <= @limit, n <= limit). */
static inline int mcg_rseq_acct_add(struct mcg_pcpu_stack *base, uint64_t key, uint64_t n,
                                    uint64_t limit)
{
	uint64_t room = (limit - n + 1) << 32, delta = n << 32;
retry:
	__asm__ __volatile__ goto(
	        MCG_RSEQ_ENTER(abort)
	        "cmpl $0, 8(%%rax)\n\t"             /* lo: stopped? (first) */
	        "jne %l[miss]\n\t"
	        "cmpq %[key], 24(%%rax)\n\t"
	        "jne %l[miss]\n\t"
	        "movq (%%rax), %%rcx\n\t"
	        "cmpq %[room], %%rcx\n\t"           /* units + n > limit */
	        "jae %l[miss]\n\t"
	        "addq %[delta], %%rcx\n\t"
	        "movq %%rcx, (%%rax)\n\t"           /* commit units + n */
	        "2:\n\t"
	        :
	        : [rseq] "r"(mcg_rseq_offset), [base] "r"(base), [key] "r"(key), [room] "r"(room),
	          [delta] "r"(delta)
	        : "rax", "rcx", "memory", "cc"
	        : abort, miss);
	return MCG_PCPU_OK;
abort:
	goto retry;
miss:
	return MCG_PCPU_FAIL;
}

/* Take this CPU's units (and their key) out of the header. */
static inline int mcg_rseq_acct_take(struct mcg_pcpu_stack *base, uint64_t *key, uint64_t *word)
{
retry:
	__asm__ __volatile__ goto(
	        MCG_RSEQ_ENTER(abort)
	        "cmpl $0, 8(%%rax)\n\t"             /* lo: stopped? (first) */
	        "jne %l[miss]\n\t"
	        "movq 24(%%rax), %%rdx\n\t"
	        "movq (%%rax), %%rcx\n\t"
	        "movq %%rdx, (%[key])\n\t"          /* locals: rewritten on restart */
	        "movq %%rcx, (%[word])\n\t"
	        "movl %%ecx, %%ecx\n\t"             /* units = 0 */
	        "movq %%rcx, (%%rax)\n\t"           /* commit */
	        "2:\n\t"
	        :
	        : [rseq] "r"(mcg_rseq_offset), [base] "r"(base), [key] "r"(key), [word] "r"(word)
	        : "rax", "rcx", "rdx", "memory", "cc"
	        : abort, miss);
	return MCG_PCPU_OK;
abort:
	goto retry;
miss:
	return MCG_PCPU_FAIL;
}

/* Label this CPU's (empty) units with @key. */
static inline int mcg_rseq_acct_set_key(struct mcg_pcpu_stack *base, uint64_t key)
{
retry:
	__asm__ __volatile__ goto(
	        MCG_RSEQ_ENTER(abort)
	        "cmpl $0, 8(%%rax)\n\t"             /* lo: stopped? (first) */
	        "jne %l[miss]\n\t"
	        "cmpl $0, 4(%%rax)\n\t"             /* units held for another key */
	        "jne %l[miss]\n\t"
	        "movq %[key], 24(%%rax)\n\t"        /* commit */
	        "2:\n\t"
	        :
	        : [rseq] "r"(mcg_rseq_offset), [base] "r"(base), [key] "r"(key)
	        : "rax", "memory", "cc"
	        : abort, miss);
	return MCG_PCPU_OK;
abort:
	goto retry;
miss:
	return MCG_PCPU_FAIL;
}
/* clang-format on */
#else
static inline void *mcg_rseq_stack_pop_acct(struct mcg_pcpu_stack *const *b, uint64_t k,
                                            const struct mcg_acct_charge *ch)
{
	return NULL;
}
static inline int mcg_rseq_stack_push_acct(struct mcg_pcpu_stack *const *b, void *o, uint64_t k,
                                           const struct mcg_acct_charge *ch)
{
	return MCG_PCPU_FAIL;
}
static inline int mcg_rseq_acct_add(struct mcg_pcpu_stack *b, uint64_t k, uint64_t n, uint64_t l)
{
	return MCG_PCPU_FAIL;
}
static inline int mcg_rseq_acct_take(struct mcg_pcpu_stack *b, uint64_t *k, uint64_t *w)
{
	return MCG_PCPU_FAIL;
}
static inline int mcg_rseq_acct_set_key(struct mcg_pcpu_stack *b, uint64_t k)
{
	return MCG_PCPU_FAIL;
}
#endif

/**
 * mcg_pcpu_acct_take_stopped - the units (and key) of stopped header @s,
 * which the caller owns (its lock held, stopped, fenced); units become 0.
 */
static inline uint32_t mcg_pcpu_acct_take_stopped(struct mcg_pcpu_stack *s, uint64_t *key)
{
	uint32_t units = MCG_READ_ONCE(s->units);
	*key = MCG_READ_ONCE(s->acct);
	MCG_WRITE_ONCE(s->units, 0);
	return units;
}

#endif /* MCG_BASE_PCPU_ACCT_H */
