/* SPDX-License-Identifier: MIT */
/*
 * percpu/pcpu_word.h - per-CPU tagged counter words, and per-CPU adds: the
 * charge stock's fast path and the per-CPU statistics.
 *
 * Each CPU has a header { stopped, words[MCG_PCPU_WORDS], lock } at
 * base + (cpu << MCG_PCPU_SHIFT).  Each word packs a key (the low 44 bits:
 * a pointer to a 16-byte aligned object below 2^48, shifted right by 4,
 * mcg_pcpu_word_key_of(); 0 = empty) and a count (the high 20 bits).
 * Operations are rseq critical sections whose commit is one store of one
 * word, the last instruction (percpu/percpu.h).  consume and refill scan the
 * words in order and act on the first whose key is K (a key normally sits
 * in one word; if a caller installed it twice, the later copy is only found
 * once the first leaves):
 *
 *   consume  : if !stopped && words[i].key == K && count >= n  { commit count - n }
 *   refill   : if !stopped && words[i].key == K && count + n <= limit { commit count + n }
 *              (limit and n at most 0x7ffff: count + n may not carry out
 *              of the count's 20 bits into nothing)
 *   exchange : if !stopped { *old = words[i]; commit words[i] = new }   (i given)
 *
 * consume_at and refill_at do the same on word i alone (i given): a
 * direct-mapped table, where each key has its own word, spread over banks
 * of these headers (mcg_pcpu_word_bank()) when it needs more words than
 * one header holds.
 *
 * Stopping (remote drain): under the lock set `stopped`, mcg_percpu_fence(),
 * then the words are the stopper's until mcg_pcpu_word_start().  As in
 * percpu/pcpu_stack.h, a section that begins while stopped is not aborted by
 * the restart, so every section reads `stopped` *before* any word, and the
 * owner publishes the words before clearing `stopped` (a release store).  In
 * locked mode every operation takes the lock, so holding it is enough.
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
#include "percpu/pcpu_stack.h" /* MCG_RSEQ_ENTER, MCG_PCPU_OK / _FAIL */

#define MCG_PCPU_WORD_KEY_BITS 44
#define MCG_PCPU_WORD_KEY_MASK ((UINT64_C(1) << MCG_PCPU_WORD_KEY_BITS) - 1)
#define MCG_PCPU_WORD_COUNT_MAX 0xfffffu
_Static_assert(MCG_PCPU_WORD_KEY_BITS == 44, "the assembly shifts the count out by 64 - 44 = 20");
/* Words per CPU (the charge stock's entries); at most 9 fit beside the lock. */
#define MCG_PCPU_WORDS 7

struct mcg_pcpu_word {
	uint32_t stopped; /* nonzero: every operation fails (offset 0: the asm) */
	uint32_t pad_;
	uint64_t words[MCG_PCPU_WORDS]; /* key | count << 44 (offset 8: the asm) */
	mcg_lock_t lock;                /* locked mode: the data; rseq mode: remote owners */
} __attribute__((aligned(MCG_PCPU_STRIDE)));

_Static_assert(sizeof(struct mcg_pcpu_word) == MCG_PCPU_STRIDE, "stride");
_Static_assert(__builtin_offsetof(struct mcg_pcpu_word, words) == 8, "the asm's offsets");

/** mcg_pcpu_word_keyable - can @p be a key: 16-byte aligned, below 2^48? */
static inline bool mcg_pcpu_word_keyable(const void *p)
{
	return !((uintptr_t)p & 15) && !((uintptr_t)p >> (MCG_PCPU_WORD_KEY_BITS + 4));
}

/** mcg_pcpu_word_key_of - the key of @p (mcg_pcpu_word_keyable()). */
static inline uint64_t mcg_pcpu_word_key_of(const void *p) { return (uintptr_t)p >> 4; }

/** mcg_pcpu_word_ptr - the pointer key @key stands for. */
static inline void *mcg_pcpu_word_ptr(uint64_t key) { return (void *)(uintptr_t)(key << 4); }

/** mcg_pcpu_word_pack - the word for @key (44-bit, may be 0) holding @count. */
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
/* The assembly is laid out by hand, one instruction a line. */
/* clang-format off */
/*
 * The scan shared by consume and refill: %rax = this CPU's header; fail if
 * stopped (read first: see above); then %rdx walks the words up to %r8 until
 * one whose key is %[key] (its key bits xor the key, shifted out the count,
 * are 0), %rcx = that word; no such word: fail.
 */
#define MCG_PCPU_WORD_SCAN(fail)                                                                   \
	"cmpl $0, (%%rax)\n\t"          /* stopped?  (before any word) */                          \
	"jne %l[" #fail "]\n\t"                                                                    \
	"leaq 8(%%rax), %%rdx\n\t"      /* p = &words[0] */                                        \
	"leaq %c[end](%%rax), %%r8\n\t" /* &words[MCG_PCPU_WORDS] */                               \
	"5:\n\t"                                                                                   \
	"movq (%%rdx), %%rcx\n\t"       /* w = *p */                                               \
	"movq %%rcx, %%r9\n\t"                                                                     \
	"xorq %[key], %%r9\n\t"                                                                    \
	"shlq $20, %%r9\n\t"            /* ZF: w's key == key */                                   \
	"je 6f\n\t"                                                                                \
	"addq $8, %%rdx\n\t"                                                                       \
	"cmpq %%r8, %%rdx\n\t"                                                                     \
	"jb 5b\n\t"                                                                                \
	"jmp %l[" #fail "]\n\t"         /* no word for key */                                      \
	"6:\n\t"

#define MCG_PCPU_WORD_END (8 + 8 * MCG_PCPU_WORDS)

/* Take @n from the count of the word keyed @key: see the scan above. */
static inline int mcg_rseq_word_consume(struct mcg_pcpu_word *base, uint64_t key, uint64_t n)
{
	uint64_t delta = n << MCG_PCPU_WORD_KEY_BITS;
retry:
	__asm__ __volatile__ goto(
	        MCG_RSEQ_ENTER(abort)
	        MCG_PCPU_WORD_SCAN(fail)
	        "cmpq %[delta], %%rcx\n\t" /* count < n  <=>  w < delta (key < 2^44) */
	        "jb %l[fail]\n\t"
	        "subq %[delta], %%rcx\n\t"
	        "movq %%rcx, (%%rdx)\n\t"  /* commit count - n */
	        "2:\n\t"
	        :
	        : MCG_RSEQ_OPERANDS, [base] "r"(base), [key] "r"(key), [delta] "r"(delta),
	          [end] "i"(MCG_PCPU_WORD_END)
	        : "rax", "rcx", "rdx", "r8", "r9", "memory", "cc"
	        : abort, fail);
	return MCG_PCPU_OK;
abort:
	goto retry;
fail:
	return MCG_PCPU_FAIL;
}

/* Add @n to the count of the word keyed @key if it stays <= @limit. */
static inline int mcg_rseq_word_refill(struct mcg_pcpu_word *base, uint64_t key, uint64_t n,
                                       uint64_t limit)
{
	uint64_t delta = n << MCG_PCPU_WORD_KEY_BITS;
	uint64_t top = mcg_pcpu_word_pack(key, (uint32_t)limit); /* w + delta <= top */
retry:
	__asm__ __volatile__ goto(
	        MCG_RSEQ_ENTER(abort)
	        MCG_PCPU_WORD_SCAN(fail)
	        "leaq (%%rcx,%[delta]), %%r9\n\t" /* count + n (no carry: limit < 2^19) */
	        "cmpq %[top], %%r9\n\t"
	        "ja %l[fail]\n\t"
	        "movq %%r9, (%%rdx)\n\t"           /* commit count + n */
	        "2:\n\t"
	        :
	        : MCG_RSEQ_OPERANDS, [base] "r"(base), [key] "r"(key), [delta] "r"(delta),
	          [top] "r"(top), [end] "i"(MCG_PCPU_WORD_END)
	        : "rax", "rcx", "rdx", "r8", "r9", "memory", "cc"
	        : abort, fail);
	return MCG_PCPU_OK;
abort:
	goto retry;
fail:
	return MCG_PCPU_FAIL;
}

/* Replace word @i (< MCG_PCPU_WORDS) with @nw, the previous one into *@old. */
static inline int mcg_rseq_word_exchange(struct mcg_pcpu_word *base, uint64_t i, uint64_t nw,
                                         uint64_t *old)
{
retry:
	__asm__ __volatile__ goto(
	        MCG_RSEQ_ENTER(abort)
	        "cmpl $0, (%%rax)\n\t"            /* stopped?  (before the word) */
	        "jne %l[fail]\n\t"
	        "movq 8(%%rax,%[i],8), %%rcx\n\t" /* words[i] */
	        "movq %%rcx, (%[old])\n\t"        /* a local: rewritten on restart */
	        "movq %[nw], 8(%%rax,%[i],8)\n\t" /* commit the new word */
	        "2:\n\t"
	        :
	        : MCG_RSEQ_OPERANDS, [base] "r"(base), [i] "r"(i), [nw] "r"(nw),
	          [old] "r"(old)
	        : "rax", "rcx", "memory", "cc"
	        : abort, fail);
	return MCG_PCPU_OK;
abort:
	goto retry;
fail:
	return MCG_PCPU_FAIL;
}
/*
 * The check shared by consume_at and refill_at: %rax = this CPU's header;
 * fail if stopped (read first), %rcx = words[i], fail unless its key is
 * %[key].
 */
#define MCG_PCPU_WORD_AT(fail)                                                                     \
	"cmpl $0, (%%rax)\n\t"            /* stopped?  (before the word) */                        \
	"jne %l[" #fail "]\n\t"                                                                    \
	"movq 8(%%rax,%[i],8), %%rcx\n\t" /* w = words[i] */                                       \
	"movq %%rcx, %%r9\n\t"                                                                     \
	"xorq %[key], %%r9\n\t"                                                                    \
	"shlq $20, %%r9\n\t"              /* ZF: w's key == key */                                 \
	"jne %l[" #fail "]\n\t"

/* Take @n from the count of word @i if it is keyed @key. */
static inline int mcg_rseq_word_consume_at(struct mcg_pcpu_word *base, uint64_t i, uint64_t key,
                                           uint64_t n)
{
	uint64_t delta = n << MCG_PCPU_WORD_KEY_BITS;
retry:
	__asm__ __volatile__ goto(
	        MCG_RSEQ_ENTER(abort)
	        MCG_PCPU_WORD_AT(fail)
	        "cmpq %[delta], %%rcx\n\t"          /* count < n */
	        "jb %l[fail]\n\t"
	        "subq %[delta], %%rcx\n\t"
	        "movq %%rcx, 8(%%rax,%[i],8)\n\t"   /* commit count - n */
	        "2:\n\t"
	        :
	        : MCG_RSEQ_OPERANDS, [base] "r"(base), [i] "r"(i), [key] "r"(key),
	          [delta] "r"(delta)
	        : "rax", "rcx", "r9", "memory", "cc"
	        : abort, fail);
	return MCG_PCPU_OK;
abort:
	goto retry;
fail:
	return MCG_PCPU_FAIL;
}

/* Add @n to the count of word @i if it is keyed @key and stays <= @limit
 * (@n, @limit <= 0x7ffff: see above). */
static inline int mcg_rseq_word_refill_at(struct mcg_pcpu_word *base, uint64_t i, uint64_t key,
                                          uint64_t n, uint64_t limit)
{
	uint64_t delta = n << MCG_PCPU_WORD_KEY_BITS;
	uint64_t top = mcg_pcpu_word_pack(key, (uint32_t)limit);
retry:
	__asm__ __volatile__ goto(
	        MCG_RSEQ_ENTER(abort)
	        MCG_PCPU_WORD_AT(fail)
	        "leaq (%%rcx,%[delta]), %%r9\n\t"   /* count + n */
	        "cmpq %[top], %%r9\n\t"
	        "ja %l[fail]\n\t"
	        "movq %%r9, 8(%%rax,%[i],8)\n\t"    /* commit count + n */
	        "2:\n\t"
	        :
	        : MCG_RSEQ_OPERANDS, [base] "r"(base), [i] "r"(i), [key] "r"(key),
	          [delta] "r"(delta), [top] "r"(top)
	        : "rax", "rcx", "r9", "memory", "cc"
	        : abort, fail);
	return MCG_PCPU_OK;
abort:
	goto retry;
fail:
	return MCG_PCPU_FAIL;
}
/* clang-format on */

static inline void mcg_rseq_add(void *base, uint64_t offset, int64_t delta)
{
retry:
	__asm__ __volatile__ goto(
	        MCG_RSEQ_ENTER(
	                abort) "addq %[delta], (%%rax,%[off])\n\t" /* commit: the add itself */
	                       "2:\n\t"
	        :
	        : MCG_RSEQ_OPERANDS, [base] "r"(base), [off] "r"(offset), [delta] "r"(delta)
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
static inline int mcg_rseq_word_exchange(struct mcg_pcpu_word *b, uint64_t i, uint64_t w,
                                         uint64_t *o)
{
	return MCG_PCPU_FAIL;
}
static inline int mcg_rseq_word_consume_at(struct mcg_pcpu_word *b, uint64_t i, uint64_t k,
                                           uint64_t n)
{
	return MCG_PCPU_FAIL;
}
static inline int mcg_rseq_word_refill_at(struct mcg_pcpu_word *b, uint64_t i, uint64_t k,
                                          uint64_t n, uint64_t l)
{
	return MCG_PCPU_FAIL;
}
static inline void mcg_rseq_add(void *b, uint64_t o, int64_t d) {}
#endif

/* ---- the locked path: same semantics, a lock per CPU slot (pcpu_word.c) ---- */

int mcg_cpulock_word_consume(struct mcg_pcpu_word *base, uint64_t key, uint64_t n);
int mcg_cpulock_word_refill(struct mcg_pcpu_word *base, uint64_t key, uint64_t n, uint64_t limit);
int mcg_cpulock_word_exchange(struct mcg_pcpu_word *base, uint64_t i, uint64_t nw, uint64_t *old);
int mcg_cpulock_word_consume_at(struct mcg_pcpu_word *base, uint64_t i, uint64_t key, uint64_t n);
int mcg_cpulock_word_refill_at(struct mcg_pcpu_word *base, uint64_t i, uint64_t key, uint64_t n,
                               uint64_t limit);

/* ---- the entry points ---- */

/**
 * mcg_pcpu_word_consume - take @n from the count of this CPU's (first) word keyed
 * @key (nonzero), if it holds that many.  _OK or _FAIL.
 */
static mcg_always_inline int mcg_pcpu_word_consume(struct mcg_pcpu_word *base, uint64_t key,
                                                   uint64_t n)
{
	if (likely(mcg_percpu_use_rseq()))
		return mcg_rseq_word_consume(base, key, n);
	return mcg_cpulock_word_consume(base, key, n);
}

/**
 * mcg_pcpu_word_refill - add @n to this CPU's (first) word keyed @key (nonzero)
 * if its count stays <= @limit.
 * Requires @limit < 2^19 and @n <= @limit (so the count cannot carry into bit 64).
 */
static mcg_always_inline int mcg_pcpu_word_refill(struct mcg_pcpu_word *base, uint64_t key,
                                                  uint64_t n, uint64_t limit)
{
	if (likely(mcg_percpu_use_rseq()))
		return mcg_rseq_word_refill(base, key, n, limit);
	return mcg_cpulock_word_refill(base, key, n, limit);
}

/**
 * mcg_pcpu_word_exchange - install @nw as this CPU's word @i (< MCG_PCPU_WORDS),
 * the previous word into *@old, unless stopped.  _OK or _FAIL.
 */
static inline int mcg_pcpu_word_exchange(struct mcg_pcpu_word *base, unsigned i, uint64_t nw,
                                         uint64_t *old)
{
	if (likely(mcg_percpu_use_rseq()))
		return mcg_rseq_word_exchange(base, i, nw, old);
	return mcg_cpulock_word_exchange(base, i, nw, old);
}

/**
 * mcg_pcpu_word_consume_at - take @n from this CPU's word @i (< MCG_PCPU_WORDS)
 * if it is keyed @key (nonzero) and holds that many.  _OK or _FAIL.
 * Requires @n <= MCG_PCPU_WORD_COUNT_MAX (a larger one would wrap in the shift).
 */
static mcg_always_inline int mcg_pcpu_word_consume_at(struct mcg_pcpu_word *base, unsigned i,
                                                      uint64_t key, uint64_t n)
{
	if (likely(mcg_percpu_use_rseq()))
		return mcg_rseq_word_consume_at(base, i, key, n);
	return mcg_cpulock_word_consume_at(base, i, key, n);
}

/**
 * mcg_pcpu_word_refill_at - add @n to this CPU's word @i if it is keyed @key
 * and its count stays <= @limit (the limits of mcg_pcpu_word_refill()).
 */
static mcg_always_inline int mcg_pcpu_word_refill_at(struct mcg_pcpu_word *base, unsigned i,
                                                     uint64_t key, uint64_t n, uint64_t limit)
{
	if (likely(mcg_percpu_use_rseq()))
		return mcg_rseq_word_refill_at(base, i, key, n, limit);
	return mcg_cpulock_word_refill_at(base, i, key, n, limit);
}

/**
 * mcg_pcpu_word_bank - bank @b of a table of banks at @base over @ncpu CPUs.
 * A direct-mapped table with more words per CPU than one header holds is
 * kept as banks of headers, bank-major, each bank an ordinary array of
 * per-CPU headers (so the sections and their stride are the same): slot s
 * is word s % MCG_PCPU_WORDS of bank s / MCG_PCPU_WORDS.
 */
static inline struct mcg_pcpu_word *mcg_pcpu_word_bank(struct mcg_pcpu_word *base, unsigned ncpu,
                                                       unsigned b)
{
	return (struct mcg_pcpu_word *)((char *)base + (((size_t)b * ncpu) << MCG_PCPU_SHIFT));
}

/** mcg_pcpu_word_stop - make @w fail every operation (caller holds w->lock; then fence). */
static inline void mcg_pcpu_word_stop(struct mcg_pcpu_word *w) { MCG_WRITE_ONCE(w->stopped, 1); }

/** mcg_pcpu_word_start - let @w run again, its words published first (caller holds w->lock). */
static inline void mcg_pcpu_word_start(struct mcg_pcpu_word *w)
{
	__atomic_store_n(&w->stopped, 0, __ATOMIC_RELEASE);
}

/** mcg_pcpu_word_init - set up the @ncpu headers at @base: every word empty, running. */
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
