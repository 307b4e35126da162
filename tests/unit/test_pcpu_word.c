/* SPDX-License-Identifier: MIT */
/*
 * test_pcpu_word.c - per-CPU tagged words and per-CPU adds (percpu/pcpu_word.h):
 * consume / refill / exchange semantics, the scan over a CPU's words (any
 * word, the first of two with one key, empty words never match), stop and
 * start, the 16-bit count boundaries, the direct-mapped ops (consume_at,
 * refill_at: one given word only) and banks, and adds summed over CPUs.  The thread is pinned to
 * CPU 0 so that "this CPU's word" is known.  Runs again with MCG_RSEQ=0.
 */
#include <sched.h>
#include <unistd.h>

#include "percpu/pcpu_word.h"
#include "os/os.h"
#include "test.h"

static struct mcg_pcpu_word *words;
static unsigned ncpu;

static void pin_cpu0(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static uint64_t wordi(unsigned i) { return mcg_pcpu_word_of(words, 0)->words[i]; }
static uint64_t word0(void) { return wordi(0); }

static void test_pack(void)
{
	uint64_t w = mcg_pcpu_word_pack(0x7ffdeadbeefull, 64);
	CHECK_EQ(mcg_pcpu_word_key(w), 0x7ffdeadbeefull);
	CHECK_EQ(mcg_pcpu_word_count(w), 64);
	CHECK_EQ(mcg_pcpu_word_count(mcg_pcpu_word_pack(1, 0xfffff)), 0xfffff);
	CHECK_EQ(mcg_pcpu_word_key(mcg_pcpu_word_pack(MCG_PCPU_WORD_KEY_MASK, 0xfffff)),
	         MCG_PCPU_WORD_KEY_MASK);
	/* A key is a 16-byte aligned address below 2^48, and gives it back. */
	void *p = (void *)(uintptr_t)0x7fffdeadbee0ull;
	CHECK_EQ(mcg_pcpu_word_key_of(p), 0x7fffdeadbeeull);
	CHECK(mcg_pcpu_word_ptr(mcg_pcpu_word_key_of(p)) == p);
	CHECK(mcg_pcpu_word_keyable(p));
	CHECK(!mcg_pcpu_word_keyable((char *)p + 8));                         /* misaligned */
	CHECK(!mcg_pcpu_word_keyable((void *)(uintptr_t)0x1000000000000ull)); /* 2^48 */
}

static void test_ops(void)
{
	const uint64_t a = 0x1000, b = 0x2000;
	uint64_t old = 77;
	CHECK_EQ(word0(), 0);
	CHECK_EQ(mcg_pcpu_word_consume(words, a, 1), MCG_PCPU_FAIL);    /* empty */
	CHECK_EQ(mcg_pcpu_word_refill(words, a, 1, 64), MCG_PCPU_FAIL); /* key 0 != a */
	CHECK_EQ(mcg_pcpu_word_exchange(words, 0, mcg_pcpu_word_pack(a, 10), &old), MCG_PCPU_OK);
	CHECK_EQ(old, 0);
	CHECK_EQ(mcg_pcpu_word_consume(words, b, 1), MCG_PCPU_FAIL);  /* other key */
	CHECK_EQ(mcg_pcpu_word_consume(words, a, 11), MCG_PCPU_FAIL); /* too few */
	CHECK_EQ(word0(), mcg_pcpu_word_pack(a, 10));
	CHECK_EQ(mcg_pcpu_word_consume(words, a, 10), MCG_PCPU_OK);
	CHECK_EQ(word0(), mcg_pcpu_word_pack(a, 0)); /* key stays */
	CHECK_EQ(mcg_pcpu_word_consume(words, a, 1), MCG_PCPU_FAIL);
	CHECK_EQ(mcg_pcpu_word_refill(words, a, 64, 64), MCG_PCPU_OK);
	CHECK_EQ(mcg_pcpu_word_refill(words, a, 1, 64), MCG_PCPU_FAIL); /* over limit */
	CHECK_EQ(mcg_pcpu_word_refill(words, b, 1, 64), MCG_PCPU_FAIL);
	CHECK_EQ(word0(), mcg_pcpu_word_pack(a, 64));
	CHECK_EQ(mcg_pcpu_word_consume(words, a, 3), MCG_PCPU_OK);
	CHECK_EQ(mcg_pcpu_word_refill(words, a, 3, 64), MCG_PCPU_OK);
	CHECK_EQ(mcg_pcpu_word_count(word0()), 64);
	/* Largest limit the contract allows, no carry into the key. */
	CHECK_EQ(mcg_pcpu_word_exchange(words, 0, mcg_pcpu_word_pack(b, 0x7fff0), &old),
	         MCG_PCPU_OK);
	CHECK_EQ(old, mcg_pcpu_word_pack(a, 64));
	CHECK_EQ(mcg_pcpu_word_refill(words, b, 0x10, 0x7ffff), MCG_PCPU_FAIL);
	CHECK_EQ(mcg_pcpu_word_refill(words, b, 0xf, 0x7ffff), MCG_PCPU_OK);
	CHECK_EQ(word0(), mcg_pcpu_word_pack(b, 0x7ffff));
	CHECK_EQ(mcg_pcpu_word_exchange(words, 0, 0, &old), MCG_PCPU_OK);
	CHECK_EQ(old, mcg_pcpu_word_pack(b, 0x7ffff));
}

/* Keys in any word: each operation finds its own, the others stay. */
static void test_scan(void)
{
	const unsigned last = MCG_PCPU_WORDS - 1;
	uint64_t old = 77;
	for (unsigned i = 0; i < MCG_PCPU_WORDS; i++)
		CHECK_EQ(wordi(i), 0);
	CHECK_EQ(mcg_pcpu_word_exchange(words, last, mcg_pcpu_word_pack(0x3000, 5), &old),
	         MCG_PCPU_OK);
	CHECK_EQ(old, 0);
	CHECK_EQ(mcg_pcpu_word_exchange(words, 1, mcg_pcpu_word_pack(0x1000, 9), &old),
	         MCG_PCPU_OK);
	CHECK_EQ(mcg_pcpu_word_consume(words, 0x3000, 5), MCG_PCPU_OK); /* the last word */
	CHECK_EQ(wordi(last), mcg_pcpu_word_pack(0x3000, 0));
	CHECK_EQ(wordi(1), mcg_pcpu_word_pack(0x1000, 9));
	CHECK_EQ(mcg_pcpu_word_consume(words, 0x3000, 1), MCG_PCPU_FAIL);
	CHECK_EQ(mcg_pcpu_word_refill(words, 0x3000, 64, 64), MCG_PCPU_OK);
	CHECK_EQ(wordi(last), mcg_pcpu_word_pack(0x3000, 64));
	CHECK_EQ(mcg_pcpu_word_refill(words, 0x1000, 55, 64), MCG_PCPU_OK);
	CHECK_EQ(mcg_pcpu_word_refill(words, 0x1000, 1, 64), MCG_PCPU_FAIL); /* full */
	CHECK_EQ(wordi(1), mcg_pcpu_word_pack(0x1000, 64));
	/* Keys that differ only in the key's top bit (43), or in bit 0 */
	CHECK_EQ(mcg_pcpu_word_consume(words, 0x1001, 1), MCG_PCPU_FAIL);
	CHECK_EQ(mcg_pcpu_word_consume(words, 0x1000 | (UINT64_C(1) << 43), 1), MCG_PCPU_FAIL);
	CHECK_EQ(mcg_pcpu_word_refill(words, 0x2000, 1, 64), MCG_PCPU_FAIL); /* nowhere */
	/* A second word with the key: the first one is used until it goes. */
	CHECK_EQ(mcg_pcpu_word_exchange(words, 0, mcg_pcpu_word_pack(0x1000, 2), &old),
	         MCG_PCPU_OK);
	CHECK_EQ(mcg_pcpu_word_consume(words, 0x1000, 2), MCG_PCPU_OK);
	CHECK_EQ(word0(), mcg_pcpu_word_pack(0x1000, 0));
	CHECK_EQ(mcg_pcpu_word_consume(words, 0x1000, 1), MCG_PCPU_FAIL); /* the first, empty */
	CHECK_EQ(mcg_pcpu_word_exchange(words, 0, 0, &old), MCG_PCPU_OK);
	CHECK_EQ(old, mcg_pcpu_word_pack(0x1000, 0));
	CHECK_EQ(mcg_pcpu_word_consume(words, 0x1000, 64), MCG_PCPU_OK); /* word 1 now */
	CHECK_EQ(wordi(1), mcg_pcpu_word_pack(0x1000, 0));
	/* Every word full of distinct keys: each found. */
	for (unsigned i = 0; i < MCG_PCPU_WORDS; i++)
		CHECK_EQ(mcg_pcpu_word_exchange(words, i, mcg_pcpu_word_pack(0x100 * (i + 1), i),
		                                &old),
		         MCG_PCPU_OK);
	for (unsigned i = 0; i < MCG_PCPU_WORDS; i++) {
		CHECK_EQ(mcg_pcpu_word_refill(words, 0x100 * (i + 1), 1, 64), MCG_PCPU_OK);
		CHECK_EQ(mcg_pcpu_word_consume(words, 0x100 * (i + 1), i + 1), MCG_PCPU_OK);
	}
	for (unsigned i = 0; i < MCG_PCPU_WORDS; i++) {
		CHECK_EQ(wordi(i), mcg_pcpu_word_pack(0x100 * (i + 1), 0));
		CHECK_EQ(mcg_pcpu_word_exchange(words, i, 0, &old), MCG_PCPU_OK);
	}
}

static void test_stop_start(void)
{
	struct mcg_pcpu_word *w = mcg_pcpu_word_of(words, 0);
	uint64_t old = 5;
	CHECK_EQ(mcg_pcpu_word_exchange(words, 0, mcg_pcpu_word_pack(0x40, 8), &old), MCG_PCPU_OK);
	mcg_lock(&w->lock);
	mcg_pcpu_word_stop(w);
	mcg_percpu_fence();
	mcg_unlock(&w->lock); /* stays stopped without the lock */
	CHECK_EQ(mcg_pcpu_word_consume(words, 0x40, 1), MCG_PCPU_FAIL);
	CHECK_EQ(mcg_pcpu_word_refill(words, 0x40, 1, 64), MCG_PCPU_FAIL);
	old = 5;
	CHECK_EQ(mcg_pcpu_word_exchange(words, 0, 0, &old), MCG_PCPU_FAIL);
	CHECK_EQ(old, 5);
	CHECK_EQ(w->words[0], mcg_pcpu_word_pack(0x40, 8));
	CHECK_EQ(mcg_pcpu_word_exchange(words, MCG_PCPU_WORDS - 1, 0, &old), MCG_PCPU_FAIL);
	mcg_lock(&w->lock);
	mcg_pcpu_word_start(w);
	mcg_unlock(&w->lock);
	CHECK_EQ(mcg_pcpu_word_consume(words, 0x40, 8), MCG_PCPU_OK);
	CHECK_EQ(mcg_pcpu_word_exchange(words, 0, 0, &old), MCG_PCPU_OK);
}

/* consume_at / refill_at act on word i alone: a key elsewhere never matches. */
static void test_at(void)
{
	const uint64_t a = 0x1000, b = 0x2000;
	unsigned last = MCG_PCPU_WORDS - 1;
	uint64_t old;
	CHECK_EQ(mcg_pcpu_word_consume_at(words, 2, a, 1), MCG_PCPU_FAIL); /* empty */
	CHECK_EQ(mcg_pcpu_word_exchange(words, 0, mcg_pcpu_word_pack(a, 10), &old), MCG_PCPU_OK);
	CHECK_EQ(mcg_pcpu_word_consume_at(words, 2, a, 1), MCG_PCPU_FAIL); /* a is in word 0 */
	CHECK_EQ(mcg_pcpu_word_refill_at(words, 2, a, 1, 64), MCG_PCPU_FAIL);
	CHECK_EQ(mcg_pcpu_word_consume_at(words, 0, a, 4), MCG_PCPU_OK);
	CHECK_EQ(wordi(0), mcg_pcpu_word_pack(a, 6));
	CHECK_EQ(mcg_pcpu_word_consume_at(words, 0, a, 7), MCG_PCPU_FAIL); /* too few */
	CHECK_EQ(mcg_pcpu_word_consume_at(words, 0, b, 1), MCG_PCPU_FAIL); /* other key */
	CHECK_EQ(mcg_pcpu_word_exchange(words, last, mcg_pcpu_word_pack(b, 0), &old), MCG_PCPU_OK);
	CHECK_EQ(mcg_pcpu_word_refill_at(words, last, b, 64, 64), MCG_PCPU_OK);
	CHECK_EQ(mcg_pcpu_word_refill_at(words, last, b, 1, 64), MCG_PCPU_FAIL); /* over limit */
	CHECK_EQ(mcg_pcpu_word_refill_at(words, last, a, 1, 64), MCG_PCPU_FAIL);
	CHECK_EQ(wordi(last), mcg_pcpu_word_pack(b, 64));
	CHECK_EQ(mcg_pcpu_word_consume_at(words, last, b, 64), MCG_PCPU_OK);
	CHECK_EQ(wordi(last), mcg_pcpu_word_pack(b, 0)); /* the key stays */
	CHECK_EQ(wordi(0), mcg_pcpu_word_pack(a, 6));    /* untouched */
	/* Largest limit the contract allows, no carry into the key. */
	CHECK_EQ(mcg_pcpu_word_exchange(words, 0, mcg_pcpu_word_pack(a, 0x7fff0), &old),
	         MCG_PCPU_OK);
	CHECK_EQ(mcg_pcpu_word_refill_at(words, 0, a, 0x10, 0x7ffff), MCG_PCPU_FAIL);
	CHECK_EQ(mcg_pcpu_word_refill_at(words, 0, a, 0xf, 0x7ffff), MCG_PCPU_OK);
	CHECK_EQ(wordi(0), mcg_pcpu_word_pack(a, 0x7ffff));
	/* Stopped: both fail and change nothing. */
	struct mcg_pcpu_word *w = mcg_pcpu_word_of(words, 0);
	mcg_lock(&w->lock);
	mcg_pcpu_word_stop(w);
	mcg_percpu_fence();
	mcg_unlock(&w->lock);
	CHECK_EQ(mcg_pcpu_word_consume_at(words, 0, a, 1), MCG_PCPU_FAIL);
	CHECK_EQ(mcg_pcpu_word_refill_at(words, last, b, 1, 64), MCG_PCPU_FAIL);
	CHECK_EQ(wordi(0), mcg_pcpu_word_pack(a, 0x7ffff));
	mcg_lock(&w->lock);
	mcg_pcpu_word_start(w);
	mcg_unlock(&w->lock);
	CHECK_EQ(mcg_pcpu_word_exchange(words, 0, 0, &old), MCG_PCPU_OK);
	CHECK_EQ(mcg_pcpu_word_exchange(words, last, 0, &old), MCG_PCPU_OK);
}

/* Banks: bank b of a table is an ordinary header array, apart from the others. */
static void test_banks(void)
{
	const unsigned nbanks = 3;
	size_t size = ((size_t)ncpu * nbanks) << MCG_PCPU_SHIFT;
	struct mcg_pcpu_word *t = mcg_os_map(MCG_ALIGN_UP(size, 4096), 4096);
	REQUIRE(t);
	for (unsigned b = 0; b < nbanks; b++)
		mcg_pcpu_word_init(mcg_pcpu_word_bank(t, ncpu, b), ncpu, MCG_RANK_LEAF);
	CHECK(mcg_pcpu_word_bank(t, ncpu, 0) == t);
	CHECK_EQ((char *)mcg_pcpu_word_bank(t, ncpu, 2) - (char *)t,
	         (long)((2 * ncpu) << MCG_PCPU_SHIFT));
	uint64_t old;
	for (unsigned b = 0; b < nbanks; b++) /* key 0x100 + b in word 1 of each bank */
		CHECK_EQ(mcg_pcpu_word_exchange(mcg_pcpu_word_bank(t, ncpu, b), 1,
		                                mcg_pcpu_word_pack(0x100 + b, b + 1), &old),
		         MCG_PCPU_OK);
	for (unsigned b = 0; b < nbanks; b++) {
		struct mcg_pcpu_word *bank = mcg_pcpu_word_bank(t, ncpu, b);
		CHECK_EQ(mcg_pcpu_word_consume_at(bank, 1, 0x100 + (b + 1) % nbanks, 1),
		         MCG_PCPU_FAIL);
		CHECK_EQ(mcg_pcpu_word_consume_at(bank, 1, 0x100 + b, b + 1), MCG_PCPU_OK);
		CHECK_EQ(mcg_pcpu_word_of(bank, 0)->words[1], mcg_pcpu_word_pack(0x100 + b, 0));
	}
	mcg_os_unmap(t, MCG_ALIGN_UP(size, 4096));
}

static void test_add_sum(void)
{
	size_t size = (size_t)ncpu << MCG_PCPU_SHIFT;
	void *blocks = mcg_os_map(MCG_ALIGN_UP(size, 4096), 4096);
	REQUIRE(blocks);
	for (int i = 0; i < 1000; i++) {
		mcg_pcpu_add(blocks, 8, 3);
		mcg_pcpu_add(blocks, 120, -1);
	}
	CHECK_EQ(mcg_pcpu_sum(blocks, 8, ncpu), 3000);
	CHECK_EQ(mcg_pcpu_sum(blocks, 120, ncpu), -1000);
	CHECK_EQ(mcg_pcpu_sum(blocks, 0, ncpu), 0);
	CHECK_EQ(*(int64_t *)((char *)blocks + 8), 3000); /* all on CPU 0 */
	mcg_os_unmap(blocks, MCG_ALIGN_UP(size, 4096));
}

int main(int argc, char **argv)
{
	(void)argc;
	mcg_percpu_init();
	pin_cpu0();
	ncpu = mcg_os_nr_cpus();
	size_t size = (size_t)ncpu << MCG_PCPU_SHIFT;
	words = mcg_os_map(MCG_ALIGN_UP(size, 4096), 4096);
	if (!words)
		return 1;
	mcg_pcpu_word_init(words, ncpu, MCG_RANK_LEAF);
	fprintf(stderr, "mode: %s\n", mcg_percpu_use_rseq() ? "rseq" : "locked");
	RUN(test_pack);
	RUN(test_ops);
	RUN(test_scan);
	RUN(test_stop_start);
	RUN(test_at);
	RUN(test_banks);
	RUN(test_add_sum);
	return test_done_then_locked(argv);
}
