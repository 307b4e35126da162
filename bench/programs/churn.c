/* SPDX-License-Identifier: MIT */
/*
 * bench/programs/churn.c - memcg-churn: the long-running cache server of
 * `memcg bench programs`, as a program of its own that any malloc can be
 * preloaded into (it links nothing of memcg's).
 *
 * The model: a cache of values keyed by slot, filled to a budget of live
 * bytes and then kept there by LRU eviction while requests come in.
 *   fill   values are set under random keys until the budget is reached;
 *   churn  OPS requests: a key, 80 % of the time from the hot fifth of the
 *          key space; a hit moves the entry to the LRU head (10 % of hits
 *          replace the value with one of a new size, 3 % grow it with
 *          realloc), a miss sets a new value and evicts from the LRU tail
 *          until the budget holds again.  Every 4096 requests a burst of
 *          four request buffers of 256 KiB - 1 MiB is allocated and
 *          written, and freed 1024 requests later;
 *   idle   IDLE_MS of nothing: no allocation, no free; the cache keeps its
 *          entries (a server between bursts of traffic).
 * Value sizes are skewed small: 70 % in 16-256 B, 25 % in 256 B - 4 KiB,
 * 5 % in 4-64 KiB (an octave at random within the range, then a size at
 * random within the octave).  Every value is written in full when set, and
 * its first and last bytes are checked on every hit: a value that changed
 * under some allocator is reported, exit status 3.
 *
 * Live bytes are what the program holds: the values and request buffers
 * (the bytes it asked malloc for) plus its own entry table (from mmap,
 * written in full at the start, the same for every allocator).  RSS comes
 * from /proc/self/statm.  Both are sampled every 100 ms; each sample is a
 * line on stdout, written with write(2):
 *   S <ms since start> <phase F|C|I> <rss KiB> <live KiB>
 * and at the end
 *   E <fill ms> <churn ms> <entries> <hits> <misses> <live KiB>
 * When the churn ends (the bursts freed) and NOTIFY_FD is given, one byte
 * is written to it and it is closed: the benchmark times the work up to
 * there and goes on while this program idles.
 *
 * Deterministic: a fixed-seed generator; the same requests for every
 * allocator.  Nothing here allocates but the cache (the table and output
 * buffers are mmap'd or on the stack).
 *
 * Usage: memcg-churn BUDGET_KIB OPS IDLE_MS [NOTIFY_FD]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SAMPLE_NS 100000000ull /* 100 ms */
#define BURST_EVERY 4096       /* requests between bursts */
#define BURST_HOLD 1024        /* requests a burst's buffers live */
#define BURST_BUFS 4
#define BURST_MIN (256u << 10)
#define BURST_MAX (1u << 20)
#define NIL UINT32_MAX

/* Value sizes: a range of octaves [lo_shift, hi_shift) taken with weight pct. */
static const struct {
	unsigned lo_shift, hi_shift, pct;
} size_mix[] = {
        {4, 8, 70},  /* 16 B - 256 B */
        {8, 12, 25}, /* 256 B - 4 KiB */
        {12, 16, 5}, /* 4 KiB - 64 KiB */
};

struct entry {
	char *val;
	uint32_t size; /* 0: the slot holds nothing */
	uint32_t prev, next;
};

static struct entry *table; /* one slot per key */
static uint32_t nkeys, lru_head = NIL, lru_tail = NIL;
static uint64_t live, table_bytes, entries, hits, misses;
static uint64_t rng = 0x9e3779b97f4a7c15ull, t_start, t_next_sample;

static uint64_t next_rand(void)
{
	rng ^= rng >> 12; /* xorshift64* */
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	char line[160];
	int n = snprintf(line, sizeof(line), "memcg-churn: %s\n", what);
	if (write(2, line, (size_t)n) < 0)
		_exit(2);
	_exit(what[0] == 'v' ? 3 : 1); /* "value ...": corruption */
}

static void out(const char *line, int n)
{
	if (write(1, line, (size_t)n) != n)
		die("cannot write the samples");
}

static long rss_kib(void)
{
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	long size, resident;
	if (sscanf(buf, "%ld %ld", &size, &resident) != 2)
		return -1;
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void sample(char phase)
{
	char line[96];
	uint64_t t = now_ns();
	int n = snprintf(line, sizeof(line), "S %llu %c %ld %llu\n",
	                 (unsigned long long)((t - t_start) / 1000000), phase, rss_kib(),
	                 (unsigned long long)((live + table_bytes) >> 10));
	out(line, n);
	t_next_sample = t + SAMPLE_NS;
}

static uint32_t value_size(void)
{
	unsigned pct = (unsigned)(next_rand() % 100), i = 0;
	while (pct >= size_mix[i].pct) {
		pct -= size_mix[i].pct;
		i++;
	}
	unsigned shift = size_mix[i].lo_shift +
	                 (unsigned)(next_rand() % (size_mix[i].hi_shift - size_mix[i].lo_shift));
	return (1u << shift) + (uint32_t)(next_rand() % (1u << shift));
}

/* The expected value size, from size_mix (an octave [2^k, 2^(k+1)) averages 1.5 * 2^k). */
static double mean_value_size(void)
{
	double mean = 0;
	for (size_t i = 0; i < sizeof(size_mix) / sizeof(size_mix[0]); i++) {
		double m = 0;
		for (unsigned k = size_mix[i].lo_shift; k < size_mix[i].hi_shift; k++)
			m += 1.5 * (double)(1u << k);
		mean += m / (size_mix[i].hi_shift - size_mix[i].lo_shift) * size_mix[i].pct / 100.0;
	}
	return mean;
}

static char tag(uint32_t key, uint32_t size) { return (char)((key * 31u) ^ size); }

static void lru_unlink(uint32_t k)
{
	struct entry *e = &table[k];
	if (e->prev != NIL)
		table[e->prev].next = e->next;
	else
		lru_head = e->next;
	if (e->next != NIL)
		table[e->next].prev = e->prev;
	else
		lru_tail = e->prev;
}

static void lru_push_head(uint32_t k)
{
	struct entry *e = &table[k];
	e->prev = NIL;
	e->next = lru_head;
	if (lru_head != NIL)
		table[lru_head].prev = k;
	lru_head = k;
	if (lru_tail == NIL)
		lru_tail = k;
}

/* Write a new value of @size under @k (which holds none). */
static void set_value(uint32_t k, uint32_t size)
{
	char *v = malloc(size);
	if (!v)
		die("out of memory");
	memset(v, tag(k, size), size);
	table[k].val = v;
	table[k].size = size;
	live += size;
	entries++;
}

static void drop_value(uint32_t k)
{
	live -= table[k].size;
	entries--;
	free(table[k].val);
	table[k].val = NULL;
	table[k].size = 0;
}

static void evict_to(uint64_t budget)
{
	while (live > budget && lru_tail != NIL) {
		uint32_t k = lru_tail;
		lru_unlink(k);
		drop_value(k);
	}
}

static void check_value(uint32_t k)
{
	const struct entry *e = &table[k];
	char t = tag(k, e->size);
	if (e->val[0] != t || e->val[e->size - 1] != t)
		die("value changed under the allocator");
}

static void request(uint32_t k, uint64_t budget)
{
	struct entry *e = &table[k];
	if (!e->size) {
		misses++;
		set_value(k, value_size());
		lru_push_head(k);
		evict_to(budget);
		return;
	}
	hits++;
	check_value(k);
	lru_unlink(k);
	lru_push_head(k);
	unsigned r = (unsigned)(next_rand() % 100);
	if (r < 10) { /* a SET over an existing key: a value of a new size */
		drop_value(k);
		set_value(k, value_size());
	} else if (r < 13 && e->size < (64u << 10)) { /* an APPEND: the value grows */
		uint32_t grown = e->size + e->size / 2 + 1;
		if (grown > (64u << 10))
			grown = 64u << 10;
		char *v = realloc(e->val, grown);
		if (!v)
			die("out of memory");
		live += grown - e->size;
		e->val = v;
		e->size = grown;
		memset(v, tag(k, grown), grown); /* the new tag, first to last byte */
	}
	evict_to(budget);
}

static char *bursts[BURST_BUFS];
static uint32_t burst_sizes[BURST_BUFS];

static void burst_alloc(void)
{
	for (int i = 0; i < BURST_BUFS; i++) {
		uint32_t size = BURST_MIN + (uint32_t)(next_rand() % (BURST_MAX - BURST_MIN + 1));
		if (!(bursts[i] = malloc(size)))
			die("out of memory");
		memset(bursts[i], i, size); /* a request read into it */
		burst_sizes[i] = size;
		live += size;
	}
}

static void burst_free(void)
{
	for (int i = 0; i < BURST_BUFS; i++) {
		if (!bursts[i])
			continue;
		free(bursts[i]);
		bursts[i] = NULL;
		live -= burst_sizes[i];
	}
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: memcg-churn BUDGET_KIB OPS IDLE_MS [NOTIFY_FD]\n");
		return 2;
	}
	uint64_t budget = strtoull(argv[1], NULL, 0) << 10, ops = strtoull(argv[2], NULL, 0);
	uint64_t idle_ms = strtoull(argv[3], NULL, 0);
	int notify = argc > 4 ? atoi(argv[4]) : -1;
	if (budget < (64u << 10) || budget > (1ull << 36))
		die("BUDGET_KIB: 64 .. 2^26");
	/* Keys: twice what the budget holds, so about half the cold requests miss. */
	double keys = 2.0 * (double)budget / mean_value_size();
	nkeys = keys < 64 ? 64 : (uint32_t)keys;
	table_bytes = (uint64_t)nkeys * sizeof(struct entry);
	table = mmap(NULL, table_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (table == MAP_FAILED)
		die("cannot map the table");
	for (uint32_t k = 0; k < nkeys; k++)
		table[k] = (struct entry){NULL, 0, NIL, NIL};

	t_start = now_ns();
	sample('F');
	while (live < budget) {
		request((uint32_t)(next_rand() % nkeys), budget);
		if (now_ns() >= t_next_sample)
			sample('F');
	}
	uint64_t t_fill = now_ns();
	uint32_t hot = nkeys / 5 ? nkeys / 5 : 1;
	for (uint64_t i = 0; i < ops; i++) {
		uint64_t r = next_rand();
		uint32_t k = r % 100 < 80 ? (uint32_t)((r >> 8) % hot)
		                          : hot + (uint32_t)((r >> 8) % (nkeys - hot));
		request(k, budget);
		if (i % BURST_EVERY == 0)
			burst_alloc();
		else if (i % BURST_EVERY == BURST_HOLD)
			burst_free();
		if (!(i & 63) && now_ns() >= t_next_sample)
			sample('C');
	}
	burst_free();
	uint64_t t_churn = now_ns();
	sample('C');
	if (notify >= 0) {
		if (write(notify, "c", 1) != 1)
			die("cannot notify");
		close(notify);
	}

	/* Idle: a sample every 100 ms on the clock, nothing else. */
	uint64_t t_idle = now_ns();
	for (uint64_t n = 1; n <= idle_ms / 100; n++) {
		uint64_t at = t_idle + n * SAMPLE_NS;
		struct timespec ts = {(time_t)(at / 1000000000ull), (long)(at % 1000000000ull)};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		sample('I');
	}

	char line[160];
	int n = snprintf(line, sizeof(line), "E %llu %llu %llu %llu %llu %llu\n",
	                 (unsigned long long)((t_fill - t_start) / 1000000),
	                 (unsigned long long)((t_churn - t_fill) / 1000000),
	                 (unsigned long long)entries, (unsigned long long)hits,
	                 (unsigned long long)misses,
	                 (unsigned long long)((live + table_bytes) >> 10));
	out(line, n);
	for (uint32_t k = 0; k < nkeys; k++)
		if (table[k].size)
			drop_value(k);
	munmap(table, table_bytes);
	return live ? 1 : 0;
}
