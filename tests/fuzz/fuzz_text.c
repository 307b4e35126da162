/* SPDX-License-Identifier: MIT */
/*
 * fuzz_text.c - libFuzzer target for the cgroup v2 text files
 * (mcg_group_write / mcg_group_read, group/text.c).
 *
 * Input: [op][group][file selector][buffer length][value bytes...].  The file
 * is one of the known names, a mangled one, or bytes taken from the input; the
 * value is arbitrary bytes, embedded NULs included (the C string ends at the
 * first).  Every write is checked against a parser written here from the
 * documented grammar (bytes with an optional K/M/G/T suffix, or "max";
 * trailing whitespace tolerated; rounded down to pages for the limits;
 * memory.dirty_*: a percentage 0-100 without suffix, or a byte count, at
 * least two pages for dirty_bytes, never "max"; writing one zeroes its twin
 * ratio or byte count): the return value, the value read back, and that a
 * rejected write changed no file.  Every
 * read is checked for snprintf semantics at the given buffer length, and
 * against a full read.
 *
 * The world: groups "fz" and "fz/c", with a few pages charged to the child
 * so that lowering a limit below the usage runs the reclaim paths.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memcg/group.h"
#include "memcg/memcg.h"
#include "memcg/reclaim.h"

/* The largest limit in pages; written values at or above it read "max". */
#define PAGES_MAX (LONG_MAX / (long)MCG_GROUP_PAGE_SIZE)

#define FUZZ_ASSERT(c)                                                                             \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #c);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static mcg_group_t *groups[3]; /* root, fz, fz/c */

static const char *const files[] = {
        "memory.current",
        "memory.min",
        "memory.low",
        "memory.high",
        "memory.max",
        "memory.reclaim",
        "memory.peak",
        "memory.stat",
        "memory.events",
        "memory.events.local",
        "cgroup.stat",
        "memory.dirty_ratio",
        "memory.dirty_background_ratio",
        "memory.dirty_bytes",
        "memory.dirty_background_bytes",
};
#define NFILES (sizeof(files) / sizeof(files[0]))
/* The files a write sets: the four limits (files[1..4]), then the dirty
 * limits (files[11..14]: ratio, background ratio, bytes, background bytes). */
#define NSET 8
static const char *const limits[NSET] = {
        "memory.min",         "memory.low",
        "memory.high",        "memory.max",
        "memory.dirty_ratio", "memory.dirty_background_ratio",
        "memory.dirty_bytes", "memory.dirty_background_bytes",
};
#define DIRTY0 11 /* files[] index of memory.dirty_ratio */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	mcg_options_use_env(0);
	mcg_option_set("reap_ms", 0);
	mcg_reclaim_init();
	groups[0] = mcg_group_root();
	FUZZ_ASSERT(mcg_group_create(NULL, "fz", &groups[1]) == 0);
	FUZZ_ASSERT(mcg_group_create(groups[1], "c", &groups[2]) == 0);
	FUZZ_ASSERT(mcg_charge(groups[2], 3, 0) == 0);
	return 0;
}

/* The documented grammar, parsed independently: 0 and *bytes (*is_max for
 * "max"), *digits_only when no suffix follows the number; or -EINVAL. */
static int ref_bytes(const char *s, unsigned long long *bytes, bool *is_max, bool *digits_only)
{
	size_t n = strlen(s);
	while (n && strchr("\n \t\r", s[n - 1]))
		n--;
	*is_max = n == 3 && !strncmp(s, "max", 3);
	*digits_only = false;
	if (*is_max)
		return 0;
	size_t digits = strspn(s, "0123456789");
	if (digits == 0 || digits > n)
		return -EINVAL;
	unsigned long long v = 0;
	for (size_t i = 0; i < digits && i < n; i++)
		if (__builtin_mul_overflow(v, 10ull, &v) ||
		    __builtin_add_overflow(v, (unsigned long long)(s[i] - '0'), &v))
			return -EINVAL;
	unsigned long long mul = 1;
	if (digits < n) {
		if (digits + 1 != n)
			return -EINVAL;
		const char *sfx = strchr("kKmMgGtT", s[digits]);
		if (!sfx || !s[digits])
			return -EINVAL;
		mul = 1ull << (10 * (1 + (sfx - "kKmMgGtT") / 2));
	}
	if (__builtin_mul_overflow(v, mul, &v))
		return -EINVAL;
	*bytes = v;
	*digits_only = digits == n;
	return 0;
}

/* A limit: 0 and *pages (rounded down; PAGES_MAX for "max" and above), or -EINVAL. */
static int ref_parse(const char *s, long *pages)
{
	unsigned long long v = 0;
	bool is_max, digits_only;
	if (ref_bytes(s, &v, &is_max, &digits_only))
		return -EINVAL;
	if (is_max) {
		*pages = PAGES_MAX;
		return 0;
	}
	v /= MCG_GROUP_PAGE_SIZE;
	*pages = v >= (unsigned long long)PAGES_MAX ? PAGES_MAX : (long)v;
	return 0;
}

/* A dirty limit (files[DIRTY0 + d]): 0 and the value it reads back, or -EINVAL. */
static int ref_dirty(int d, const char *s, unsigned long long *value)
{
	bool is_max, digits_only;
	if (ref_bytes(s, value, &is_max, &digits_only) || is_max)
		return -EINVAL;
	if (d < 2) /* a percentage */
		return digits_only && *value <= 100 ? 0 : -EINVAL;
	unsigned long long least = d == 2 ? 2ull * MCG_GROUP_PAGE_SIZE : 1;
	return *value >= least && *value <= (unsigned long long)LONG_MAX ? 0 : -EINVAL;
}

static void read_full(mcg_group_t *g, const char *file, char *buf, size_t len)
{
	ssize_t n = mcg_group_read(g, file, buf, len);
	FUZZ_ASSERT(n >= 0 && (size_t)n < len);
}

static void check_write(mcg_group_t *g, bool is_root, const char *file, const char *value)
{
	char before[NSET][64], after[64];
	for (int i = 0; i < NSET; i++)
		read_full(g, limits[i], before[i], sizeof(before[i]));

	int ret = mcg_group_write(g, file, value);

	int idx = -1;
	for (size_t i = 0; i < NFILES; i++)
		if (!strcmp(file, files[i]))
			idx = (int)i;
	bool is_limit = idx >= 1 && idx <= 4, is_reclaim = idx == 5, is_dirty = idx >= DIRTY0;
	long pages = 0;
	unsigned long long dirty = 0;
	int parsed = is_dirty ? ref_dirty(idx - DIRTY0, value, &dirty) : ref_parse(value, &pages);
	if (idx < 0)
		FUZZ_ASSERT(ret == -ENOENT);
	else if (!is_limit && !is_reclaim && !is_dirty)
		FUZZ_ASSERT(ret == -EACCES);
	else if ((is_limit || is_dirty) && is_root)
		FUZZ_ASSERT(ret == -EINVAL);
	else if (parsed)
		FUZZ_ASSERT(ret == -EINVAL);
	else if (is_reclaim)
		/* nothing reclaimable is ever there: 0 bytes succeed, else -EAGAIN */
		FUZZ_ASSERT(pages >= PAGES_MAX ? ret == -EINVAL : ret == (pages ? -EAGAIN : 0));
	else
		FUZZ_ASSERT(ret == 0);

	/* the file written (limits[set]) and, for a dirty limit, its twin */
	int set = ret ? -1 : is_limit ? idx - 1 : is_dirty ? 4 + idx - DIRTY0 : -1;
	int twin = set >= 4 ? 4 + (set - 4 + 2) % 4 : -1;
	for (int i = 0; i < NSET; i++) {
		read_full(g, limits[i], after, sizeof(after));
		char want[64];
		if (i == set && is_limit && pages >= PAGES_MAX)
			snprintf(want, sizeof(want), "max\n");
		else if (i == set && is_limit)
			snprintf(want, sizeof(want), "%lld\n",
			         (long long)pages * MCG_GROUP_PAGE_SIZE);
		else if (i == set)
			snprintf(want, sizeof(want), "%llu\n", dirty);
		else if (i == twin)
			snprintf(want, sizeof(want), "0\n");
		else
			snprintf(want, sizeof(want), "%s", before[i]);
		if (strcmp(after, want)) {
			fprintf(stderr, "%s: \"%s\", want \"%s\"\n", limits[i], after, want);
			FUZZ_ASSERT(!strcmp(after, want));
		}
	}
}

static void check_read(mcg_group_t *g, const char *file, size_t len)
{
	static char full[8192], part[8192];
	ssize_t n = mcg_group_read(g, file, full, sizeof(full));
	int idx = -1;
	for (size_t i = 0; i < NFILES; i++)
		if (!strcmp(file, files[i]))
			idx = (int)i;
	if (idx < 0) {
		FUZZ_ASSERT(n == -ENOENT);
		return;
	}
	if (idx == 5) {
		FUZZ_ASSERT(n == -EACCES);
		return;
	}
	FUZZ_ASSERT(n > 0 && (size_t)n < sizeof(full) && full[n - 1] == '\n');
	FUZZ_ASSERT(strlen(full) == (size_t)n);
	/* a short buffer: the same length reported, a NUL-terminated prefix */
	memset(part, 0x5a, sizeof(part));
	ssize_t m = mcg_group_read(g, file, len ? part : NULL, len);
	FUZZ_ASSERT(m == n || idx == 7); /* memory.stat reads the live counters twice */
	if (len) {
		size_t kept = strlen(part);
		FUZZ_ASSERT(kept == ((size_t)m < len ? (size_t)m : len - 1));
		FUZZ_ASSERT(idx == 7 || !memcmp(part, full, kept));
		FUZZ_ASSERT(len == sizeof(part) || part[len] == 0x5a); /* nothing past len */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	uint8_t op = data[0], gsel = data[1], fsel = data[2], blen = data[3];
	data += 4;
	size -= 4;
	mcg_group_t *g = groups[gsel % 3];

	/* The file name: a known one, a mangled one, or the input's bytes up to a NUL or '='. */
	char name[96], value[512];
	const uint8_t *rest = data;
	size_t rest_len = size;
	switch (fsel % 4) {
	case 0:
	case 1: snprintf(name, sizeof(name), "%s", files[(fsel >> 2) % NFILES]); break;
	case 2: {
		const char *f = files[(fsel >> 2) % NFILES];
		size_t l = strlen(f);
		snprintf(name, sizeof(name), "%s", f);
		if (size) { /* change, cut or extend it by one byte */
			size_t at = data[0] % (l + 1);
			name[at] = (char)(data[0] & 1 ? data[0] : 0);
			if (at == l)
				name[l + 1] = '\0';
			rest++;
			rest_len--;
		}
		break;
	}
	default: {
		size_t l = 0;
		while (l < size && l < sizeof(name) - 1 && data[l] && data[l] != '=')
			l++;
		memcpy(name, data, l);
		name[l] = '\0';
		rest = data + l + (l < size);
		rest_len = size - l - (l < size);
	}
	}
	/* The value: the rest, embedded NULs and all; the C string ends at the first. */
	size_t vl = rest_len < sizeof(value) - 1 ? rest_len : sizeof(value) - 1;
	memcpy(value, rest, vl);
	value[vl] = '\0';

	bool is_root = g == groups[0];
	if (op & 1) {
		check_write(g, is_root, name, value);
	}
	if (op & 2)
		check_read(g, name, blen);
	if (op & 4) /* the limits back where the world starts */
		for (int i = 0; i < 4 && !is_root; i++)
			FUZZ_ASSERT(mcg_group_write(g, limits[i], i < 2 ? "0" : "max") == 0);
	return 0;
}
