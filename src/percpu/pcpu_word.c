/* SPDX-License-Identifier: MIT */
/*
 * percpu/pcpu_word.c - the locked path of per-CPU words (see pcpu_word.h): the
 * same operations as the rseq sections, under this CPU's header lock.
 */
#include "percpu/pcpu_word.h"

static struct mcg_pcpu_word *word_lock_mine(struct mcg_pcpu_word *base)
{
	struct mcg_pcpu_word *w = mcg_pcpu_word_of(base, mcg_percpu_cpu());
	mcg_lock(&w->lock);
	return w;
}

/* The first word of @w keyed @key, or NULL (lock held). */
static uint64_t *word_find(struct mcg_pcpu_word *w, uint64_t key)
{
	for (unsigned i = 0; i < MCG_PCPU_WORDS; i++)
		if (mcg_pcpu_word_key(MCG_READ_ONCE(w->words[i])) == key)
			return &w->words[i];
	return NULL;
}

int mcg_cpulock_word_consume(struct mcg_pcpu_word *base, uint64_t key, uint64_t n)
{
	struct mcg_pcpu_word *w = word_lock_mine(base);
	int r = MCG_PCPU_FAIL;
	uint64_t *p = w->stopped ? NULL : word_find(w, key);
	if (p) {
		uint64_t v = MCG_READ_ONCE(*p);
		if (mcg_pcpu_word_count(v) >= n) {
			MCG_WRITE_ONCE(*p, v - (n << MCG_PCPU_WORD_KEY_BITS));
			r = MCG_PCPU_OK;
		}
	}
	mcg_unlock(&w->lock);
	return r;
}

int mcg_cpulock_word_refill(struct mcg_pcpu_word *base, uint64_t key, uint64_t n, uint64_t limit)
{
	struct mcg_pcpu_word *w = word_lock_mine(base);
	int r = MCG_PCPU_FAIL;
	uint64_t *p = w->stopped ? NULL : word_find(w, key);
	if (p) {
		uint64_t v = MCG_READ_ONCE(*p);
		if (mcg_pcpu_word_count(v) + n <= limit) {
			MCG_WRITE_ONCE(*p, v + (n << MCG_PCPU_WORD_KEY_BITS));
			r = MCG_PCPU_OK;
		}
	}
	mcg_unlock(&w->lock);
	return r;
}

int mcg_cpulock_word_exchange(struct mcg_pcpu_word *base, uint64_t i, uint64_t nw, uint64_t *old)
{
	struct mcg_pcpu_word *w = word_lock_mine(base);
	int r = MCG_PCPU_FAIL;
	if (!w->stopped) {
		*old = MCG_READ_ONCE(w->words[i]);
		MCG_WRITE_ONCE(w->words[i], nw);
		r = MCG_PCPU_OK;
	}
	mcg_unlock(&w->lock);
	return r;
}

/* Word @i of this CPU's header if keyed @key, else NULL (lock held). */
static uint64_t *word_at(struct mcg_pcpu_word *w, uint64_t i, uint64_t key)
{
	if (w->stopped || mcg_pcpu_word_key(MCG_READ_ONCE(w->words[i])) != key)
		return NULL;
	return &w->words[i];
}

int mcg_cpulock_word_consume_at(struct mcg_pcpu_word *base, uint64_t i, uint64_t key, uint64_t n)
{
	struct mcg_pcpu_word *w = word_lock_mine(base);
	int r = MCG_PCPU_FAIL;
	uint64_t *p = word_at(w, i, key);
	if (p && mcg_pcpu_word_count(MCG_READ_ONCE(*p)) >= n) {
		MCG_WRITE_ONCE(*p, MCG_READ_ONCE(*p) - (n << MCG_PCPU_WORD_KEY_BITS));
		r = MCG_PCPU_OK;
	}
	mcg_unlock(&w->lock);
	return r;
}

int mcg_cpulock_word_refill_at(struct mcg_pcpu_word *base, uint64_t i, uint64_t key, uint64_t n,
                               uint64_t limit)
{
	struct mcg_pcpu_word *w = word_lock_mine(base);
	int r = MCG_PCPU_FAIL;
	uint64_t *p = word_at(w, i, key);
	if (p && mcg_pcpu_word_count(MCG_READ_ONCE(*p)) + n <= limit) {
		MCG_WRITE_ONCE(*p, MCG_READ_ONCE(*p) + (n << MCG_PCPU_WORD_KEY_BITS));
		r = MCG_PCPU_OK;
	}
	mcg_unlock(&w->lock);
	return r;
}

void mcg_pcpu_word_init(struct mcg_pcpu_word *base, unsigned ncpu, int lock_rank)
{
	for (unsigned c = 0; c < ncpu; c++) {
		struct mcg_pcpu_word *w = mcg_pcpu_word_of(base, c);
		for (unsigned i = 0; i < MCG_PCPU_WORDS; i++)
			w->words[i] = 0;
		w->stopped = 0;
		mcg_lock_init(&w->lock, lock_rank);
	}
}
