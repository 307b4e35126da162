/* SPDX-License-Identifier: MIT */
/*
 * base/pcpu_word.h - a per-CPU tagged counter word, and per-CPU adds: the
 * charge stock's fast path and the per-CPU statistics.
 *
 * Each CPU has a header { word, stopped, lock } at base + (cpu << MCG_PCPU_SHIFT).
 * The word packs a key (a pointer, low 48 bits; 0 = empty) and a count (the
 * high 16 bits).  Operations are rseq critical sections whose commit is one
 * store of the word, the last instruction (base/percpu.h):
 *
 *   consume  : if !stopped && key == K && count >= n  { commit count - n }
 *   refill   : if !stopped && key == K && count + n <= limit { commit count + n }
 *   exchange : if !stopped { *old = word; commit word = new }
 *
 * Stopping (remote drain): under the lock set `stopped`, mcg_percpu_fence(),
 * then the word is the stopper's until mcg_pcpu_word_start().  In locked mode
 * every operation takes the lock, so holding it is enough.
 *
 * mcg_pcpu_add() adds to a 64-bit slot at a byte offset inside this CPU's
 * MCG_PCPU_STRIDE-byte block of an array laid out the same way (per-CPU
 * statistics): an rseq section whose commit is the add itself (one
 * instruction), or a relaxed atomic add in locked mode.  Readers sum the
 * slots of all CPUs with relaxed loads.
 */
#ifndef MCG_BASE_PCPU_WORD_H
#define MCG_BASE_PCPU_WORD_H

#include <stdint.h>

#include "base/lock.h"
#include "base/pcpu_stack.h" /* MCG_RSEQ_ENTER, MCG_PCPU_OK / _FAIL */

#define MCG_PCPU_WORD_KEY_BITS 48
#define MCG_PCPU_WORD_KEY_MASK ((UINT64_C(1) << MCG_PCPU_WORD_KEY_BITS) - 1)
#define MCG_PCPU_WORD_COUNT_MAX 0xffffu

struct mcg_pcpu_word {
	uint64_t word;    /* key | count << 48 */
	uint32_t stopped; /* nonzero: every operation fails */
	uint32_t pad_;
	mcg_lock_t lock; /* locked mode: the data; rseq mode: remote owners */
} __attribute__((aligned(MCG_PCPU_STRIDE)));

_Static_assert(sizeof(struct mcg_pcpu_word) == MCG_PCPU_STRIDE, "stride");

/** mcg_pcpu_word_pack - the word for @key (48-bit, may be 0) holding @count. */
static inline uint64_t mcg_pcpu_word_pack(uint64_t key, uint32_t count)
{
	return key | ((uint64_t)count << MCG_PCPU_WORD_KEY_BITS);
}

/** mcg_pcpu_word_key / _count - the parts of a word. */
static inline uint64_t mcg_pcpu_word_key(uint64_t w) { return w & MCG_PCPU_WORD_KEY_MASK; }
static inline uint32_t mcg_pcpu_word_count(uint64_t w)
{
	return (uint32_t)(w >> MCG_PCPU_WORD_KEY_BITS);
}

/** mcg_pcpu_word_of - CPU @cpu's header in the array at @base. */
static inline struct mcg_pcpu_word *mcg_pcpu_word_of(struct mcg_pcpu_word *base, unsigned cpu)
{
	return (struct mcg_pcpu_word *)((char *)base + ((size_t)cpu << MCG_PCPU_SHIFT));
}

#if MCG_HAVE_RSEQ_ASM
/* %rax = this CPU's header (MCG_RSEQ_ENTER), %rcx = word, %rdx = scratch. */
static inline int mcg_rseq_word_consume(struct mcg_pcpu_word *base, uint64_t key, uint64_t n)
{
	uint64_t delta = n << MCG_PCPU_WORD_KEY_BITS;
retry:
	__asm__ __volatile__ goto(
	        MCG_RSEQ_ENTER(abort) "cmpl $0, 8(%%rax)\n\t" /* stopped? */
	                              "jne %l[fail]\n\t"
	                              "movq (%%rax), %%rcx\n\t" /* word */
	                              "movq %%rcx, %%rdx\n\t"
	                              "shlq $16, %%rdx\n\t"
	                              "shrq $16, %%rdx\n\t" /* key */
	                              "cmpq %[key], %%rdx\n\t"
	                              "jne %l[fail]\n\t"
	                              "cmpq %[delta], %%rcx\n\t" /* count < n  <=>  word < delta
	                                                            (key < 2^48) */
	                              "jb %l[fail]\n\t"
	                              "subq %[delta], %%rcx\n\t"
	                              "movq %%rcx, (%%rax)\n\t" /* commit count - n */
	                              "2:\n\t"
	        :
	        : [rseq] "r"(mcg_rseq_offset), [base] "r"(base), [key] "r"(key), [delta] "r"(delta)
	        : "rax", "rcx", "rdx", "memory", "cc"
	        : abort, fail);
	return MCG_PCPU_OK;
abort:
	goto retry;
fail:
	return MCG_PCPU_FAIL;
}

static inline int mcg_rseq_word_refill(struct mcg_pcpu_word *base, uint64_t key, uint64_t n,
                                       uint64_t limit)
{
	uint64_t delta = n << MCG_PCPU_WORD_KEY_BITS;
	uint64_t top = mcg_pcpu_word_pack(key, (uint32_t)limit); /* word + delta <= top */
retry:
	__asm__ __volatile__ goto(
	        MCG_RSEQ_ENTER(
	                abort) "cmpl $0, 8(%%rax)\n\t" /* stopped? */
	                       "jne %l[fail]\n\t"
	                       "movq (%%rax), %%rcx\n\t" /* word */
	                       "movq %%rcx, %%rdx\n\t"
	                       "shlq $16, %%rdx\n\t"
	                       "shrq $16, %%rdx\n\t" /* key */
	                       "cmpq %[key], %%rdx\n\t"
	                       "jne %l[fail]\n\t"
	                       "movq %%rcx, %%rdx\n\t"
	                       "addq %[delta], %%rdx\n\t" /* count + n (no carry: limit < 2^16) */
	                       "cmpq %[top], %%rdx\n\t"
	                       "ja %l[fail]\n\t"
	                       "movq %%rdx, (%%rax)\n\t" /* commit count + n */
	                       "2:\n\t"
	        :
	        : [rseq] "r"(mcg_rseq_offset), [base] "r"(base), [key] "r"(key), [delta] "r"(delta),
	          [top] "r"(top)
	        : "rax", "rcx", "rdx", "memory", "cc"
	        : abort, fail);
	return MCG_PCPU_OK;
abort:
	goto retry;
fail:
	return MCG_PCPU_FAIL;
}

static inline int mcg_rseq_word_exchange(struct mcg_pcpu_word *base, uint64_t nw, uint64_t *old)
{
retry:
	__asm__ __volatile__ goto(
	        MCG_RSEQ_ENTER(abort) "cmpl $0, 8(%%rax)\n\t" /* stopped? */
	                              "jne %l[fail]\n\t"
	                              "movq (%%rax), %%rcx\n\t"
	                              "movq %%rcx, (%[old])\n\t" /* a local: rewritten on restart */
	                              "movq %[nw], (%%rax)\n\t"  /* commit the new word */
	                              "2:\n\t"
	        :
	        : [rseq] "r"(mcg_rseq_offset), [base] "r"(base), [nw] "r"(nw), [old] "r"(old)
	        : "rax", "rcx", "memory", "cc"
	        : abort, fail);
	return MCG_PCPU_OK;
abort:
	goto retry;
fail:
	return MCG_PCPU_FAIL;
}

static inline void mcg_rseq_add(void *base, uint64_t offset, int64_t delta)
{
retry:
	__asm__ __volatile__ goto(
	        MCG_RSEQ_ENTER(
	                abort) "addq %[delta], (%%rax,%[off])\n\t" /* commit: the add itself */
	                       "2:\n\t"
	        :
	        :
	        [rseq] "r"(mcg_rseq_offset), [base] "r"(base), [off] "r"(offset), [delta] "r"(delta)
	        : "rax", "memory", "cc"
	        : abort);
	return;
abort:
	goto retry;
}
#else
static inline int mcg_rseq_word_consume(struct mcg_pcpu_word *b, uint64_t k, uint64_t n)
{
	return MCG_PCPU_FAIL;
}
static inline int mcg_rseq_word_refill(struct mcg_pcpu_word *b, uint64_t k, uint64_t n, uint64_t l)
{
	return MCG_PCPU_FAIL;
}
static inline int mcg_rseq_word_exchange(struct mcg_pcpu_word *b, uint64_t w, uint64_t *o)
{
	return MCG_PCPU_FAIL;
}
static inline void mcg_rseq_add(void *b, uint64_t o, int64_t d) {}
#endif

/* ---- the locked path: same semantics, a lock per CPU slot (pcpu_word.c) ---- */

int mcg_locked_word_consume(struct mcg_pcpu_word *base, uint64_t key, uint64_t n);
int mcg_locked_word_refill(struct mcg_pcpu_word *base, uint64_t key, uint64_t n, uint64_t limit);
int mcg_locked_word_exchange(struct mcg_pcpu_word *base, uint64_t nw, uint64_t *old);

/* ---- the entry points ---- */

/** mcg_pcpu_word_consume - take @n from this CPU's count if its key is @key.  _OK or _FAIL. */
static mcg_always_inline int mcg_pcpu_word_consume(struct mcg_pcpu_word *base, uint64_t key,
                                                   uint64_t n)
{
	if (likely(mcg_percpu_use_rseq()))
		return mcg_rseq_word_consume(base, key, n);
	return mcg_locked_word_consume(base, key, n);
}

/**
 * mcg_pcpu_word_refill - add @n if the key is @key and the count stays <= @limit.
 * Requires @limit < 2^15 and @n <= @limit (so the count cannot carry into bit 64).
 */
static mcg_always_inline int mcg_pcpu_word_refill(struct mcg_pcpu_word *base, uint64_t key,
                                                  uint64_t n, uint64_t limit)
{
	if (likely(mcg_percpu_use_rseq()))
		return mcg_rseq_word_refill(base, key, n, limit);
	return mcg_locked_word_refill(base, key, n, limit);
}

/** mcg_pcpu_word_exchange - install @nw, the previous word into *@old, unless stopped. */
static inline int mcg_pcpu_word_exchange(struct mcg_pcpu_word *base, uint64_t nw, uint64_t *old)
{
	if (likely(mcg_percpu_use_rseq()))
		return mcg_rseq_word_exchange(base, nw, old);
	return mcg_locked_word_exchange(base, nw, old);
}

/** mcg_pcpu_word_stop - make @w fail every operation (caller holds w->lock; then fence). */
static inline void mcg_pcpu_word_stop(struct mcg_pcpu_word *w) { MCG_WRITE_ONCE(w->stopped, 1); }

/** mcg_pcpu_word_start - let @w run again (caller holds w->lock). */
static inline void mcg_pcpu_word_start(struct mcg_pcpu_word *w)
{
	__atomic_store_n(&w->stopped, 0, __ATOMIC_RELEASE);
}

/** mcg_pcpu_word_init - set up the @ncpu headers at @base (zeroed memory): empty, running. */
void mcg_pcpu_word_init(struct mcg_pcpu_word *base, unsigned ncpu, int lock_rank);

/**
 * mcg_pcpu_add - add @delta to the 64-bit slot at byte @offset (< MCG_PCPU_STRIDE,
 * 8-aligned) of this CPU's block of @base.
 */
static mcg_always_inline void mcg_pcpu_add(void *base, unsigned offset, int64_t delta)
{
	if (likely(mcg_percpu_use_rseq())) {
		mcg_rseq_add(base, offset, delta);
		return;
	}
	int64_t *slot =
	        (int64_t *)((char *)base + ((size_t)mcg_percpu_cpu() << MCG_PCPU_SHIFT) + offset);
	__atomic_fetch_add(slot, delta, __ATOMIC_RELAXED);
}

/** mcg_pcpu_sum - the sum of slot @offset over the @ncpu blocks of @base (racy snapshot). */
static inline int64_t mcg_pcpu_sum(const void *base, unsigned offset, unsigned ncpu)
{
	int64_t sum = 0;
	for (unsigned c = 0; c < ncpu; c++) {
		const int64_t *slot = (const int64_t *)((const char *)base +
		                                        ((size_t)c << MCG_PCPU_SHIFT) + offset);
		sum += __atomic_load_n(slot, __ATOMIC_RELAXED);
	}
	return sum;
}

#endif /* MCG_BASE_PCPU_WORD_H */
