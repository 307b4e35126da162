/* SPDX-License-Identifier: MIT */
/*
 * fuzz_prom.c - libFuzzer target for the /metrics renderer (iface/prom.c:
 * mcg_prom_render() of a snapshot).
 *
 * Input: a snapshot built from the bytes - groups with any path bytes (no
 * NUL; unique, as real paths are) and file texts in the files' own grammar
 * ("KEY VALUE" lines of known and unknown keys, values numbers, "max" or
 * other words; single values), caches with any names and figures.
 * Checks that the output is the text exposition format 0.0.4 as a scraper
 * reads it: valid UTF-8, every line ends with '\n', "# HELP" and "# TYPE"
 * lines naming a family once each, before its samples; each sample
 * `name{label="value",...} number` with a declared name, label names and
 * escapes (\\ \" \n only) as the format allows, a value strtod() reads
 * whole or +Inf/-Inf/NaN, and no series twice.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iface/out.h"
#include "iface/prom.h"
#include "iface/snapshot.h"
#include "memcg/memcg.h"

#include "fuzz_input.h"

#define FUZZ_ASSERT(c)                                                                             \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #c);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* The checker's own loops and comparisons are not the library's behaviour:
 * no coverage feedback and no comparison tracing from them (each compare
 * would call into libFuzzer; ASan and UBSan still check every access).
 * noinline: inlined into an instrumented caller, they would be instrumented. */
#define FUZZ_CHECKER __attribute__((no_sanitize("coverage"), noinline))

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	mcg_options_use_env(0);
	mcg_option_set("reap_ms", 0);
	return 0;
}

/* Up to @max bytes of the input, none of them NUL, into @buf. */
static size_t bytes(struct in *in, char *buf, size_t max)
{
	size_t n = u8(in) % (max + 1), k = 0;
	while (k < n && in->n) {
		unsigned c = u8(in);
		buf[k++] = (char)(c ? c : 'x');
	}
	buf[k] = '\0';
	return k;
}

static const char *const keys[] = {
        "anon",
        "kernel",
        "slab",
        "pgscan",
        "pgsteal",
        "throttled_ms",
        "low",
        "high",
        "max",
        "oom",
        "oom_kill",
        "nr_descendants",
        "nr_dying_descendants",
        "pressure_running",
        "pressure_budget",
        "pressure_budget_source",
        "pressure_psi",
        "pressure_wakeups",
        "charge_forced",
        "slab_reclaimable",
        "x_y",
        "",
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static void value(struct in *in, struct mcg_out *o)
{
	unsigned v = u8(in);
	switch (v % 6) {
	case 0: mcg_out_printf(o, "%u", u8(in) | u8(in) << 8 | u8(in) << 16); break;
	case 1: mcg_out_puts(o, "max"); break;
	case 2: mcg_out_printf(o, "-%u", u8(in)); break;
	case 3: mcg_out_puts(o, "18446744073709551615"); break;
	case 4: {
		char w[16];
		bytes(in, w, 8);
		for (char *p = w; *p; p++)
			if (*p == '\n')
				*p = ' ';
		mcg_out_puts(o, w);
		break;
	}
	default: mcg_out_printf(o, "%d", (int)(u8(in) << 24 | u8(in))); break;
	}
}

/* A file's text: "KEY VALUE" lines with distinct keys, or a single value. */
static void file_text(struct in *in, struct mcg_out *o, bool flat)
{
	mcg_out_reset(o, 0);
	if (!flat) {
		value(in, o);
		mcg_out_puts(o, "\n");
		return;
	}
	unsigned lines = u8(in) % 8, used = 0;
	for (unsigned i = 0; i < lines; i++) {
		unsigned k = u8(in) % NKEYS;
		if (used & (1u << k))
			continue;
		used |= 1u << k;
		mcg_out_printf(o, "%s ", keys[k]);
		value(in, o);
		mcg_out_puts(o, "\n");
	}
}

/* ------------------------------------------------------------ the checker */

FUZZ_CHECKER static bool utf8_ok(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i], len = c < 0x80             ? 1
		                         : (c & 0xe0) == 0xc0 ? 2
		                         : (c & 0xf0) == 0xe0 ? 3
		                         : (c & 0xf8) == 0xf0 ? 4
		                                              : 0;
		if (!len || i + len > n || (len == 2 && c < 0xc2) || (len == 4 && c > 0xf4))
			return false;
		for (unsigned k = 1; k < len; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
		if (len == 3 && ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] >= 0xa0)))
			return false;
		if (len == 4 && ((c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] >= 0x90)))
			return false;
		i += len;
	}
	return true;
}

FUZZ_CHECKER static bool name_char(char c, bool first, bool colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (colon && c == ':') || (!first && c >= '0' && c <= '9');
}

#define MAX_FAMILIES 256
static char families[MAX_FAMILIES][96];
static int nfamilies;

FUZZ_CHECKER static int family_index(const char *name, size_t n)
{
	for (int i = 0; i < nfamilies; i++)
		if (strlen(families[i]) == n && !memcmp(families[i], name, n))
			return i;
	return -1;
}

/* Series seen: a small open-addressing set of hashes of "name{labels}", and
 * the slots taken, so that emptying it costs the series of one output, not
 * the whole table. */
#define SERIES_SLOTS 65536
static uint64_t series[SERIES_SLOTS];
static uint32_t series_taken[SERIES_SLOTS];
static size_t nseries;

FUZZ_CHECKER static void series_clear(void)
{
	while (nseries)
		series[series_taken[--nseries]] = 0;
}

FUZZ_CHECKER static bool series_add(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	h |= 1;
	for (size_t i = h % SERIES_SLOTS;; i = (i + 1) % SERIES_SLOTS) {
		if (!series[i]) {
			FUZZ_ASSERT(nseries < SERIES_SLOTS - 1); /* the probe always ends */
			series[i] = h;
			series_taken[nseries++] = (uint32_t)i;
			return true;
		}
		if (series[i] == h)
			return false;
	}
}

FUZZ_CHECKER static void check_line_(const char *l, size_t n, int *current);
FUZZ_CHECKER static void check_line(const char *l, size_t n, int *current)
{
	static int trace = -1;
	if (trace < 0)
		trace = getenv("FUZZ_TRACE") != NULL; /* print each line checked */
	if (trace)
		fprintf(stderr, "line: %.*s\n", (int)n, l);
	check_line_(l, n, current);
}

FUZZ_CHECKER static void check_line_(const char *l, size_t n, int *current)
{
	if (n >= 2 && l[0] == '#') {
		FUZZ_ASSERT(n > 7 && (!strncmp(l, "# HELP ", 7) || !strncmp(l, "# TYPE ", 7)));
		const char *name = l + 7;
		size_t k = 0;
		while (7 + k < n && name_char(name[k], k == 0, true))
			k++;
		FUZZ_ASSERT(k > 0 && 7 + k < n && name[k] == ' ');
		if (l[2] == 'T') {
			const char *type = name + k + 1;
			size_t tl = n - 8 - k;
			FUZZ_ASSERT((tl == 7 && !memcmp(type, "counter", 7)) ||
			            (tl == 5 && !memcmp(type, "gauge", 5)) ||
			            (tl == 8 && !memcmp(type, "untyped", 8)));
			FUZZ_ASSERT(family_index(name, k) < 0); /* each family once */
			FUZZ_ASSERT(nfamilies < MAX_FAMILIES && k < sizeof(families[0]));
			memcpy(families[nfamilies], name, k);
			families[nfamilies][k] = '\0';
			*current = nfamilies++;
		}
		return;
	}
	size_t k = 0;
	while (k < n && name_char(l[k], k == 0, true))
		k++;
	FUZZ_ASSERT(k > 0 && k < n);
	int f = family_index(l, k);
	FUZZ_ASSERT(f >= 0 && f == *current); /* declared, and its samples together */
	size_t i = k;
	if (l[i] == '{') {
		i++;
		for (;;) {
			size_t ln = 0;
			while (i + ln < n && name_char(l[i + ln], ln == 0, false))
				ln++;
			FUZZ_ASSERT(ln > 0 && i + ln + 1 < n && l[i + ln] == '=' &&
			            l[i + ln + 1] == '"');
			i += ln + 2;
			while (i < n && l[i] != '"') {
				if (l[i] == '\\') {
					FUZZ_ASSERT(i + 1 < n && strchr("\\\"n", l[i + 1]));
					i++;
				}
				i++;
			}
			FUZZ_ASSERT(i < n);
			i++;
			if (l[i] == ',') {
				i++;
				continue;
			}
			FUZZ_ASSERT(l[i] == '}');
			i++;
			break;
		}
	}
	FUZZ_ASSERT(i < n && l[i] == ' ');
	FUZZ_ASSERT(series_add(l, i)); /* no series twice */
	char num[64];
	size_t vl = n - i - 1;
	FUZZ_ASSERT(vl > 0 && vl < sizeof(num));
	memcpy(num, l + i + 1, vl);
	num[vl] = '\0';
	if (strcmp(num, "+Inf") && strcmp(num, "-Inf") && strcmp(num, "NaN")) {
		char *end;
		strtod(num, &end);
		FUZZ_ASSERT(*end == '\0' && end != num);
	}
}

FUZZ_CHECKER static void check_output(const char *t, size_t n)
{
	FUZZ_ASSERT(utf8_ok((const unsigned char *)t, n));
	FUZZ_ASSERT(n == 0 || t[n - 1] == '\n');
	FUZZ_ASSERT(!memchr(t, '\0', n));
	nfamilies = 0;
	series_clear();
	int current = -1;
	for (size_t at = 0; at < n;) {
		const char *nl = memchr(t + at, '\n', n - at);
		check_line(t + at, (size_t)(nl - (t + at)), &current);
		at = (size_t)(nl - t) + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = {data, size};
	struct mcg_snapshot s;
	mcg_snapshot_init(&s);
	struct mcg_out files[MCG_SNAP_NR_FILES];
	for (int f = 0; f < MCG_SNAP_NR_FILES; f++)
		mcg_out_init(&files[f]);

	unsigned ngroups = 1 + u8(&in) % 6;
	for (unsigned gi = 0; gi < ngroups; gi++) {
		char path[80];
		if (gi == 0) {
			strcpy(path, "/");
		} else { /* unique: "/<index>" and then the input's bytes */
			int p = snprintf(path, sizeof(path), "/%u", gi);
			bytes(&in, path + p, sizeof(path) - (size_t)p - 1);
		}
		const char *texts[MCG_SNAP_NR_FILES];
		for (int f = 0; f < MCG_SNAP_NR_FILES; f++) {
			bool flat = f == MCG_SNAP_STAT || f == MCG_SNAP_EVENTS ||
			            f == MCG_SNAP_EVENTS_LOCAL || f == MCG_SNAP_CGROUP_STAT;
			file_text(&in, &files[f], flat);
			texts[f] = u8(&in) % 8 ? mcg_out_data(&files[f]) : NULL;
		}
		FUZZ_ASSERT(mcg_snapshot_add_group(&s, path, gi ? 1 : 0, texts) == 0);
	}
	unsigned ncaches = u8(&in) % 4;
	for (unsigned ci = 0; ci < ncaches; ci++) {
		char name[40];
		int p = snprintf(name, sizeof(name), "%u", ci); /* unique */
		bytes(&in, name + p, 31 - (size_t)p);
		mcg_cache_stats_t st = {.active_objs = u8(&in),
		                        .cached_objs = u8(&in),
		                        .num_objs = (size_t)u8(&in) << 8,
		                        .slot_size = u8(&in),
		                        .objs_per_slab = u8(&in),
		                        .slab_bytes = (size_t)u8(&in) << 12,
		                        .active_slabs = u8(&in),
		                        .num_slabs = u8(&in)};
		FUZZ_ASSERT(mcg_snapshot_add_cache(&s, name, &st) == 0);
	}

	struct mcg_out o;
	mcg_out_init(&o);
	mcg_prom_render(&o, &s);
	FUZZ_ASSERT(!o.err);
	check_output(mcg_out_data(&o), mcg_out_size(&o));

	mcg_out_free(&o);
	for (int f = 0; f < MCG_SNAP_NR_FILES; f++)
		mcg_out_free(&files[f]);
	mcg_snapshot_free(&s);
	return 0;
}
