/* SPDX-License-Identifier: MIT */
/*
 * pagecache/errseq.h - error sequences (the kernel's lib/errseq.c): one
 * 32-bit word per file records the latest writeback error so that every
 * open handle learns of each error once, at its next fsync.
 *
 *   bits 0-11  the errno (positive)
 *   bit  12    SEEN: some handle has reported this error
 *   bits 13-31 a counter, bumped by a new error only if the last one was seen
 *
 * A handle samples the word at open (mcg_errseq_sample(): 0 when the error
 * there was never seen, so the first handle to look reports it) and
 * compares at fsync (mcg_errseq_check_and_advance()): a different word is an
 * error to report, after which the handle's sample is the word with SEEN set.
 * Two errors before anyone looked count as one (the later errno wins).
 *
 * Locks: none; the word is updated with compare-and-swap.  A handle's
 * sample is its own (the caller serialises calls on one sample).
 */
#ifndef MCG_PAGECACHE_ERRSEQ_H
#define MCG_PAGECACHE_ERRSEQ_H

#include <stdbool.h>
#include <stdint.h>

typedef uint32_t mcg_errseq_t;

#define MCG_ERRSEQ_SHIFT 12
#define MCG_ERRSEQ_ERRNO_MASK ((1u << MCG_ERRSEQ_SHIFT) - 1)
#define MCG_ERRSEQ_SEEN (1u << MCG_ERRSEQ_SHIFT)
#define MCG_ERRSEQ_CTR_INC (1u << (MCG_ERRSEQ_SHIFT + 1))

/**
 * mcg_errseq_set - record error @err (a negative errno, -1..-4095) in @eseq.
 * Return: the new word.
 */
static inline mcg_errseq_t mcg_errseq_set(mcg_errseq_t *eseq, int err)
{
	mcg_errseq_t old = __atomic_load_n(eseq, __ATOMIC_RELAXED);
	if (err >= 0 || -err > (int)MCG_ERRSEQ_ERRNO_MASK)
		return old;
	for (;;) {
		mcg_errseq_t next =
		        (old & ~(MCG_ERRSEQ_ERRNO_MASK | MCG_ERRSEQ_SEEN)) | (uint32_t)-err;
		if (old & MCG_ERRSEQ_SEEN)
			next += MCG_ERRSEQ_CTR_INC; /* only a seen error makes a new one */
		if (next == old)
			return old;
		if (__atomic_compare_exchange_n(eseq, &old, next, false, __ATOMIC_RELEASE,
		                                __ATOMIC_RELAXED))
			return next;
		/* raced with another update: old is the word now */
	}
}

/** mcg_errseq_sample - what a new handle starts from: 0 if the error there was never seen. */
static inline mcg_errseq_t mcg_errseq_sample(const mcg_errseq_t *eseq)
{
	mcg_errseq_t old = __atomic_load_n(eseq, __ATOMIC_ACQUIRE);
	return (old & MCG_ERRSEQ_SEEN) ? old : 0;
}

/** mcg_errseq_check - the error since @since (negative errno), or 0; changes nothing. */
static inline int mcg_errseq_check(const mcg_errseq_t *eseq, mcg_errseq_t since)
{
	mcg_errseq_t cur = __atomic_load_n(eseq, __ATOMIC_ACQUIRE);
	return cur == since ? 0 : -(int)(cur & MCG_ERRSEQ_ERRNO_MASK);
}

/**
 * mcg_errseq_check_and_advance - report the error recorded since *@since
 * (a negative errno) once: mark it SEEN and move *@since to it.
 * Return: that error, or 0.
 */
static inline int mcg_errseq_check_and_advance(mcg_errseq_t *eseq, mcg_errseq_t *since)
{
	mcg_errseq_t old = __atomic_load_n(eseq, __ATOMIC_ACQUIRE);
	if (old == *since)
		return 0;
	mcg_errseq_t next = old | MCG_ERRSEQ_SEEN;
	if (next != old) /* a lost race is fine: a writer or another reader updated it */
		__atomic_compare_exchange_n(eseq, &old, next, false, __ATOMIC_ACQ_REL,
		                            __ATOMIC_RELAXED);
	*since = next;
	return -(int)(next & MCG_ERRSEQ_ERRNO_MASK);
}

#endif /* MCG_PAGECACHE_ERRSEQ_H */
