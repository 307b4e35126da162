/* SPDX-License-Identifier: MIT */
/*
 * fuzz_api.c - libFuzzer target: the input is a program of operations on a
 * small world, run against memcg and against a model of what memcg must do.
 *
 * The world: up to MAX_GROUPS groups created during the input (a tree below
 * the root; each remembered as a record for the whole input, so an object's
 * charge can be followed through removals to the nearest online ancestor),
 * up to MAX_CACHES caches, up to MAX_OBJS live objects (cache objects and
 * kmalloc blocks, accounted or not), pages charged with mcg_charge(), one
 * memcg-aware shrinker over one list_lru that frees the objects put on it,
 * an OOM policy that frees its victim's objects, and MAX_FILES files
 * through the page cache (memcg/file.h) - written, read, fsynced,
 * truncated, with injected I/O errors - each with a copy of its bytes.
 *
 * Each operation is one byte of opcode plus argument bytes (missing bytes
 * read as 0); the operation table, ops[], is where a new part of the API
 * gets its operations.  Invariants:
 *  - after each operation with the "check" bit, and at the end: with the
 *    stocks drained, every group's memory.current equals the model's - its
 *    subtree's mcg_charge() pages plus, for each objcg (group, kind) whose
 *    nearest online ancestor is in the subtree, its live bytes rounded up to
 *    pages; the root's likewise against its usage when the input began;
 *    nr_descendants and oom_kill events as the model counts them; every
 *    live object's mcg_obj_group() is its objcg's nearest online ancestor;
 *  - a successful charge takes no group above max(memory.max, its usage
 *    before) unless forced;
 *  - an object never overlaps another live one, and its bytes are as its
 *    owner last wrote them when it is freed (nothing lost or doubled);
 *  - a file reads back what was written to it, whatever I/O failed meanwhile
 *    (a failed writeback keeps the pages dirty); at the end, once fsync
 *    succeeds, the backing file holds exactly those bytes; the page cache's
 *    pages are part of memory.current ("file" in memory.stat), and gone
 *    once the files are closed and the caches dropped;
 *  - at the end, after freeing everything: every cache is empty and
 *    destroys, every group's usage is 0, the root is back where it began,
 *    and no report but the expected leaks at a busy cache's destroy.
 *
 * Throttling above memory.high sleeps up to 2 s in the charging thread: the
 * fuzzer replaces nanosleep() (the library's only sleep there) by a counter,
 * so inputs that go over high stay fast.  A writer held over its dirty
 * limit by a sticky write fault would spin for ever on that counter (the
 * library holds it until its pages can be written): after REPAIR_SLEEPS
 * throttling sleeps in one operation the fault is disarmed, as a device
 * repaired, and the writer must get through with nothing lost.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memcg/debug.h"
#include "memcg/file.h"
#include "memcg/group.h"
#include "memcg/kmalloc.h"
#include "memcg/memcg.h"
#include "memcg/reclaim.h"
#include "memcg/slab.h"

#include "fuzz_input.h"

/* The model's and the checker's own loops and comparisons are not the
 * library's behaviour: no coverage feedback and no comparison tracing from
 * them (each compare would call into libFuzzer; ASan and UBSan still check
 * every access).  noinline: inlined into an instrumented caller, they would
 * be instrumented. */
#define FUZZ_CHECKER __attribute__((no_sanitize("coverage"), noinline))

#define FUZZ_ASSERT(c)                                                                             \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #c);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#define MAX_GROUPS 16 /* records; record 0 is the root */
#define MAX_CACHES 3
#define MAX_OBJS 64
#define MAX_ENTER 4
#define PAGE MCG_GROUP_PAGE_SIZE
#define UNITS_PER_PAGE (PAGE / 2) /* accounted charges are in 2-byte units */
#define MAX_OPS 256

/* ------------------------------------------------------------ the model */

enum kind { UNRECL, RECL, NKINDS };

struct grec {
	mcg_group_t *g; /* valid while held */
	int parent;     /* record index; -1 for the root */
	bool used, online, held;
	long charged;       /* pages through mcg_charge() */
	long units[NKINDS]; /* live accounted units of this group's objcgs */
	long oom_kills;     /* the policy picked it */
	char name[8];
};

struct hdr { /* at the start of every object of at least sizeof(struct hdr) bytes */
	mcg_lru_link_t link;
	uint32_t id;
	uint32_t magic;
};

struct obj {
	void *p;
	size_t size; /* bytes the owner uses (the pattern covers them) */
	int cache;   /* cache slot, -1 for kmalloc */
	int origin;  /* group record it was charged to; -1: not accounted */
	enum kind kind;
	long units; /* charge in 2-byte units */
	bool on_lru;
	uint32_t id;
};

static struct {
	struct grec grp[MAX_GROUPS];
	int ngroups;
	mcg_cache_t *cache[MAX_CACHES];
	size_t cache_size[MAX_CACHES], cache_charge[MAX_CACHES];
	unsigned cache_flags[MAX_CACHES];
	struct obj obj[MAX_OBJS];
	int nobj;
	uint32_t next_id;
	mcg_group_t *enter_prev[MAX_ENTER];
	int entered[MAX_ENTER]; /* record entered at each depth */
	int depth;
	bool registered, policy;
	long root_base; /* root usage (pages) when the input began */
	unsigned long leaks_expected;
	unsigned long reports[MCG_REPORT_LEAK + 1];
	const void *busy; /* an object a call is using: the OOM policy leaves it */
} w;

#define MAX_FILES 2
#define FILE_MAX (192 << 10) /* bytes a file of the world may hold */

struct fstate {
	mcg_file_t *h; /* NULL: closed */
	bool used;     /* opened during this input (the first open truncates) */
	size_t size;
	uint8_t *copy; /* FILE_MAX bytes: what the file must read */
};
static struct fstate files[MAX_FILES];
static char file_dir[64];
static bool io_armed; /* an I/O fault may still fire: errors are allowed */

static mcg_shrinker_t *shrinker;
static mcg_list_lru_t *lru;
static unsigned long sleeps;

/* A sticky fault on writes holds a writer over its dirty limit for ever:
 * errors lose nothing, so the pages stay dirty and the throttle holds the
 * writers back (pagecache/writeback.c).  The world's device is repaired
 * (the fault disarmed) once one operation has been throttled this many
 * times; the writer must then get through, with nothing lost. */
#define REPAIR_SLEEPS 2000
static unsigned long op_sleeps; /* throttling sleeps in the current operation */

/* The library's throttling sleep, counted instead of slept (see the banner). */
int nanosleep(const struct timespec *req, struct timespec *rem)
{
	(void)req;
	(void)rem;
	sleeps++;
	if (++op_sleeps == REPAIR_SLEEPS && io_armed)
		FUZZ_ASSERT(mcg_fault_inject_io(0, 0, 0, 0) == 0);
	return 0;
}

static void report(const mcg_report_t *r)
{
	FUZZ_ASSERT(r->kind >= 1 && r->kind <= MCG_REPORT_LEAK);
	w.reports[r->kind]++;
}

/* The record an objcg of record @r belongs to now: its nearest online ancestor. */
FUZZ_CHECKER static int owner_of(int r)
{
	while (r > 0 && !w.grp[r].online)
		r = w.grp[r].parent;
	return r;
}

FUZZ_CHECKER static bool in_subtree(int r, int top)
{
	for (; r >= 0; r = w.grp[r].parent)
		if (r == top)
			return true;
	return false;
}

static long div_up(long a, long b) { return (a + b - 1) / b; }

/* What @top's memory.current must be (pages) with the stocks drained. */
FUZZ_CHECKER static long model_usage(int top)
{
	long pages = 0;
	for (int r = 0; r < w.ngroups; r++) {
		if (in_subtree(r, top))
			pages += w.grp[r].charged;
		if (in_subtree(owner_of(r), top))
			for (int k = 0; k < NKINDS; k++)
				pages += div_up(w.grp[r].units[k], UNITS_PER_PAGE);
	}
	return pages;
}

FUZZ_CHECKER static long read_long(mcg_group_t *g, const char *file, const char *key)
{
	char buf[4096];
	ssize_t n = mcg_group_read(g, file, buf, sizeof(buf));
	FUZZ_ASSERT(n > 0 && (size_t)n < sizeof(buf));
	if (!key) {
		if (!strcmp(buf, "max\n"))
			return -1;
		return atol(buf);
	}
	size_t kl = strlen(key);
	for (char *l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, key, kl) && l[kl] == ' ')
			return atol(l + kl + 1);
	FUZZ_ASSERT(!"key not found");
	return 0;
}

static long usage_pages(mcg_group_t *g) { return read_long(g, "memory.current", NULL) / PAGE; }

FUZZ_CHECKER static void check_world(void)
{
	mcg_group_drain_stocks();
	for (int r = 0; r < w.ngroups; r++) {
		struct grec *x = &w.grp[r];
		if (!x->held && r)
			continue;
		mcg_group_t *g = r ? x->g : mcg_group_root();
		/* the page cache's pages: what memory.stat says of them, checked
		 * against memory.current (and at the end, gone) */
		long file_pages = read_long(g, "memory.stat", "file") / (long)PAGE;
		long want = model_usage(r) + (r ? 0 : w.root_base) + file_pages;
		long got = usage_pages(g);
		if (got != want) {
			fprintf(stderr, "group %d (%s, %s): memory.current %ld pages, model %ld\n",
			        r, x->name, x->online ? "online" : "removed", got, want);
			FUZZ_ASSERT(got == want);
		}
		long desc = 0;
		for (int s = 1; s < w.ngroups; s++)
			desc += s != r && w.grp[s].online && in_subtree(s, r);
		FUZZ_ASSERT(read_long(g, "cgroup.stat", "nr_descendants") == desc);
		if (r) {
			long kills = 0;
			for (int s = 1; s < w.ngroups; s++)
				kills += in_subtree(s, r) ? w.grp[s].oom_kills : 0;
			FUZZ_ASSERT(read_long(g, "memory.events", "oom_kill") == kills);
			FUZZ_ASSERT(read_long(g, "memory.events.local", "oom_kill") ==
			            x->oom_kills);
		}
	}
	for (int i = 0; i < w.nobj; i++) {
		struct obj *o = &w.obj[i];
		mcg_group_t *g = NULL;
		int ret = mcg_obj_group(o->p, &g);
		if (o->origin < 0) {
			FUZZ_ASSERT(ret == -ENOENT);
			continue;
		}
		FUZZ_ASSERT(ret == 0);
		int own = owner_of(o->origin);
		FUZZ_ASSERT(g == (own ? w.grp[own].g : mcg_group_root()));
		mcg_group_put(g);
	}
	for (int k = 1; k <= MCG_REPORT_LEAK; k++)
		FUZZ_ASSERT(w.reports[k] == (k == MCG_REPORT_LEAK ? w.leaks_expected : 0));
}

/* ------------------------------------------------------------ objects */

static uint8_t pattern(uint32_t id, size_t i) { return (uint8_t)(id * 31 + i * 7 + 1); }

/* The pattern repeats every PERIOD bytes (7 is odd): a range is written as
 * its first period, then copied onto itself in doubling steps, and checked
 * as its first period against pattern() and every byte against the one a
 * period before - each byte compared, in a few memcmp() calls. */
#define PERIOD 256

FUZZ_CHECKER static void pattern_fill(uint8_t *b, size_t from, size_t to, uint32_t id)
{
	size_t n = to > from ? to - from : 0, first = n < PERIOD ? n : PERIOD;
	for (size_t i = 0; i < first; i++)
		b[from + i] = pattern(id, from + i);
	for (size_t k = first; k < n; k *= 2)
		memcpy(b + from + k, b + from, k < n - k ? k : n - k);
}

/* Whether b[from, to) is pattern @id. */
FUZZ_CHECKER static bool pattern_ok(const uint8_t *b, size_t from, size_t to, uint32_t id)
{
	size_t n = to > from ? to - from : 0, first = n < PERIOD ? n : PERIOD;
	for (size_t i = 0; i < first; i++)
		if (b[from + i] != pattern(id, from + i))
			return false;
	return n <= PERIOD || !memcmp(b + from + PERIOD, b + from, n - PERIOD);
}

/* Whether b[0, n) is all zeros. */
FUZZ_CHECKER static bool all_zero(const uint8_t *b, size_t n)
{
	return !n || (!b[0] && !memcmp(b, b + 1, n - 1));
}

FUZZ_CHECKER static void obj_fill(struct obj *o)
{
	size_t from = o->size >= sizeof(struct hdr) ? sizeof(struct hdr) : 0;
	if (from) {
		struct hdr *h = o->p;
		mcg_lru_link_init(&h->link);
		h->id = o->id;
		h->magic = 0x6d636721;
	}
	pattern_fill(o->p, from, o->size, o->id);
}

FUZZ_CHECKER static void obj_verify(const struct obj *o)
{
	size_t from = o->size >= sizeof(struct hdr) ? sizeof(struct hdr) : 0;
	if (from) {
		const struct hdr *h = o->p;
		FUZZ_ASSERT(h->id == o->id && h->magic == 0x6d636721);
	}
	FUZZ_ASSERT(pattern_ok(o->p, from, o->size, o->id));
}

/* Record a new object: it overlaps no live one; count its charge. */
FUZZ_CHECKER static void obj_add(void *p, size_t size, size_t usable, int cache, int origin,
                                 enum kind kind, long units)
{
	FUZZ_ASSERT(w.nobj < MAX_OBJS);
	for (int i = 0; i < w.nobj; i++) {
		const struct obj *o = &w.obj[i];
		size_t osz = o->cache >= 0 ? w.cache_size[o->cache] : mcg_malloc_usable_size(o->p);
		FUZZ_ASSERT((char *)p + usable <= (char *)o->p || (char *)o->p + osz <= (char *)p);
	}
	struct obj *o = &w.obj[w.nobj++];
	*o = (struct obj){p, size, cache, origin, kind, units, false, ++w.next_id};
	if (origin >= 0)
		w.grp[origin].units[kind] += units;
	obj_fill(o);
}

/* Forget object @i (its memory already freed or about to be). */
FUZZ_CHECKER static void obj_forget(int i)
{
	struct obj *o = &w.obj[i];
	if (o->origin >= 0)
		w.grp[o->origin].units[o->kind] -= o->units;
	w.obj[i] = w.obj[--w.nobj];
}

static void obj_release(int i)
{
	struct obj *o = &w.obj[i];
	obj_verify(o);
	if (o->cache >= 0)
		mcg_cache_free(w.cache[o->cache], o->p);
	else
		mcg_free(o->p);
}

FUZZ_CHECKER static int obj_find(const void *p)
{
	for (int i = 0; i < w.nobj; i++)
		if (w.obj[i].p == p)
			return i;
	FUZZ_ASSERT(!"object not in the model");
	return -1;
}

/* Take object @i off the list_lru (with the group it is charged to now). */
static void obj_lru_del(int i)
{
	struct obj *o = &w.obj[i];
	if (!o->on_lru)
		return;
	int own = owner_of(o->origin);
	FUZZ_ASSERT(mcg_list_lru_del(lru, &((struct hdr *)o->p)->link, 0,
	                             own ? w.grp[own].g : mcg_group_root()) == 1);
	o->on_lru = false;
}

static void obj_free(int i)
{
	obj_lru_del(i);
	obj_release(i);
	obj_forget(i);
}

/* ------------------------------------------------------------ callbacks */

static enum mcg_lru_status isolate(mcg_lru_link_t *item, mcg_list_lru_one_t *l, void *dispose)
{
	mcg_list_lru_isolate_move(l, item, dispose);
	return MCG_LRU_REMOVED;
}

static unsigned long count_objects(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	return mcg_list_lru_shrink_count(lru, sc);
}

static unsigned long scan_objects(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	mcg_lru_link_t dispose = {&dispose, &dispose};
	unsigned long n = mcg_list_lru_shrink_walk(lru, sc, isolate, &dispose);
	unsigned long freed = 0;
	while (dispose.next != &dispose) {
		mcg_lru_link_t *l = dispose.next;
		dispose.next = l->next;
		l->next->prev = &dispose;
		int i = obj_find(l);
		FUZZ_ASSERT(w.obj[i].on_lru);
		w.obj[i].on_lru = false;
		obj_release(i);
		obj_forget(i);
		freed++;
	}
	FUZZ_ASSERT(freed == n);
	return freed;
}

/* The OOM policy: "kill" the group over its limit - free its subtree's objects. */
static mcg_group_t *oom_policy(mcg_group_t *over, unsigned long nr_pages, void *arg)
{
	int top = -1;
	for (int r = 1; r < w.ngroups; r++)
		if (w.grp[r].held && w.grp[r].g == over && w.grp[r].online)
			top = r;
	if (top < 0)
		return NULL;
	for (int i = w.nobj - 1; i >= 0; i--)
		if (w.obj[i].p != w.busy && w.obj[i].origin >= 0 &&
		    in_subtree(owner_of(w.obj[i].origin), top))
			obj_free(i);
	w.grp[top].oom_kills++;
	return over;
}

/* ------------------------------------------------------------ operations */

static unsigned u16(struct in *in) { return u8(in) | u8(in) << 8; }

/* A held group record picked by the input, or 0 (the root). */
static int pick_group(struct in *in)
{
	int held[MAX_GROUPS], n = 0;
	for (int r = 0; r < w.ngroups; r++)
		if (!r || w.grp[r].held)
			held[n++] = r;
	return held[u8(in) % n];
}

static mcg_group_t *gptr(int r) { return r ? w.grp[r].g : mcg_group_root(); }

static void op_group_create(struct in *in)
{
	int parent = pick_group(in);
	unsigned nm = u8(in);
	if (w.ngroups == MAX_GROUPS)
		return;
	char name[8];
	snprintf(name, sizeof(name), "g%u", nm % 4);
	mcg_group_t *g = NULL;
	int ret = mcg_group_create(gptr(parent), name, &g);
	bool clash = false;
	for (int r = 1; r < w.ngroups; r++)
		clash |= w.grp[r].online && w.grp[r].parent == parent &&
		         !strcmp(w.grp[r].name, name);
	if (parent && !w.grp[parent].online) {
		FUZZ_ASSERT(ret == -ENOENT);
	} else if (clash) {
		FUZZ_ASSERT(ret == -EEXIST);
	} else {
		FUZZ_ASSERT(ret == 0);
		struct grec *x = &w.grp[w.ngroups++];
		*x = (struct grec){
		        .g = g, .parent = parent, .used = true, .online = true, .held = true};
		snprintf(x->name, sizeof(x->name), "%s", name);
	}
}

static void op_group_remove(struct in *in)
{
	int r = pick_group(in);
	int ret = mcg_group_remove(gptr(r));
	if (!r) {
		FUZZ_ASSERT(ret == -EINVAL);
		return;
	}
	bool children = false;
	for (int s = 1; s < w.ngroups; s++)
		children |= w.grp[s].online && w.grp[s].parent == r;
	if (!w.grp[r].online)
		FUZZ_ASSERT(ret == -ENOENT);
	else if (children)
		FUZZ_ASSERT(ret == -EBUSY);
	else {
		FUZZ_ASSERT(ret == 0);
		w.grp[r].online = false;
	}
}

/* Drop our reference: only a removed group we are not in and hold no pages of. */
static void op_group_put(struct in *in)
{
	int r = pick_group(in);
	if (!r || w.grp[r].online || w.grp[r].charged)
		return;
	for (int d = 0; d < w.depth; d++)
		if (w.entered[d] == r)
			return;
	mcg_group_put(w.grp[r].g);
	w.grp[r].held = false;
	w.grp[r].g = NULL;
}

static void op_enter(struct in *in)
{
	int r = pick_group(in);
	if (w.depth == MAX_ENTER)
		return;
	w.enter_prev[w.depth] = mcg_group_enter(gptr(r));
	w.entered[w.depth++] = r;
	FUZZ_ASSERT(mcg_group_current() == gptr(r));
}

static void op_leave(struct in *in)
{
	if (!w.depth)
		return;
	w.depth--;
	mcg_group_leave(w.enter_prev[w.depth]);
	FUZZ_ASSERT(mcg_group_current() ==
	            (w.depth ? gptr(w.entered[w.depth - 1]) : mcg_group_root()));
}

static int current_record(void) { return w.depth ? w.entered[w.depth - 1] : 0; }

static void op_limit(struct in *in)
{
	static const char *const files[] = {"memory.max", "memory.high", "memory.low",
	                                    "memory.min"};
	int r = pick_group(in);
	unsigned f = u8(in) % 4, v = u16(in);
	char text[32];
	if (v >= 0xf000)
		snprintf(text, sizeof(text), "max");
	else
		snprintf(text, sizeof(text), "%uK", (v % 1024) * 4);
	int ret = mcg_group_write(gptr(r), files[f], text);
	FUZZ_ASSERT(ret == (r ? 0 : -EINVAL));
}

static void op_cache_create(struct in *in)
{
	unsigned s = u8(in) % MAX_CACHES, sz = u16(in), fl = u8(in);
	if (w.cache[s])
		return;
	size_t size = 1 + sz % 2048;
	if (sz >= 0xff00)
		size = 16384 + (sz & 0xff) * 64;
	unsigned flags = 0;
	flags |= fl & 1 ? MCG_CACHE_ACCOUNT : 0;
	flags |= fl & 2 ? MCG_CACHE_RECLAIMABLE : 0;
	flags |= fl & 4 ? MCG_CACHE_HWCACHE_ALIGN : 0;
	flags |= (fl & 0x18) == 0x08 ? MCG_CACHE_POISON : 0;
	flags |= (fl & 0x18) == 0x10 ? MCG_CACHE_REDZONE : 0;
	size_t align = fl & 0x20 ? (size_t)8 << (fl >> 6) : 0;
	mcg_cache_t *c = mcg_cache_create("fuzz", size, align, flags, NULL);
	FUZZ_ASSERT(c);
	mcg_cache_stats_t st;
	FUZZ_ASSERT(mcg_cache_stats(c, &st) == 0);
	FUZZ_ASSERT(st.object_size == size && st.slot_size >= size && st.active_objs == 0);
	FUZZ_ASSERT(st.charge_size == st.slot_size + 2);
	w.cache[s] = c;
	w.cache_size[s] = size;
	w.cache_charge[s] = st.charge_size;
	w.cache_flags[s] = flags;
}

static void op_cache_destroy(struct in *in)
{
	unsigned s = u8(in) % MAX_CACHES;
	if (!w.cache[s])
		return;
	unsigned long live = 0;
	for (int i = 0; i < w.nobj; i++)
		live += w.obj[i].cache == (int)s;
	mcg_cache_stats_t st;
	FUZZ_ASSERT(mcg_cache_stats(w.cache[s], &st) == 0 && st.active_objs == live);
	int ret = mcg_cache_destroy(w.cache[s]);
	if (live) {
		FUZZ_ASSERT(ret == -EBUSY);
		w.leaks_expected += live;
		return;
	}
	FUZZ_ASSERT(ret == 0);
	w.cache[s] = NULL;
}

/* An allocation: where from (cache or kmalloc), accounted to whom. */
static void op_alloc(struct in *in)
{
	unsigned src = u8(in), how = u8(in), sz = u16(in);
	int target = pick_group(in);
	if (w.nobj == MAX_OBJS)
		return;
	void *p;
	int origin = -1, cache = -1;
	enum kind kind = UNRECL;
	size_t size, usable;
	long units = 0;
	if (src % 4 != 3 && w.cache[src % 4]) { /* a cache */
		cache = (int)(src % 4);
		mcg_cache_t *c = w.cache[cache];
		size = usable = w.cache_size[cache];
		kind = w.cache_flags[cache] & MCG_CACHE_RECLAIMABLE ? RECL : UNRECL;
		if (how & 1) {
			p = mcg_cache_alloc_account(c, how & 2 ? gptr(target) : NULL);
			origin = how & 2 ? target : current_record();
		} else {
			p = mcg_cache_alloc(c);
			if (w.cache_flags[cache] & MCG_CACHE_ACCOUNT)
				origin = current_record();
		}
		units = (long)w.cache_charge[cache] / 2;
	} else { /* kmalloc: small, medium, or large (mapped directly) */
		size = (how & 0xc) == 0xc ? 300000 + sz * 4u : (how & 4 ? sz : sz % 512);
		if (how & 0x10)
			size = (size % 64) + 1;
		mcg_group_t *g = how & 2 ? gptr(target) : NULL;
		if (how & 1) {
			p = how & 0x20 ? mcg_calloc_account(1, size, g)
			               : mcg_malloc_account(size, g);
			origin = how & 2 ? target : current_record();
		} else {
			p = how & 0x20 ? mcg_calloc(1, size) : mcg_malloc(size);
		}
		if (!p && !size)
			return; /* malloc(0) may return NULL */
		if (p && (how & 0x20))
			FUZZ_ASSERT(all_zero(p, size));
		usable = p ? mcg_malloc_usable_size(p) : 0;
		FUZZ_ASSERT(!p || usable >= size);
		units = size > MCG_KMALLOC_MAX_CACHE_SIZE ? (long)usable / 2 : (long)usable / 2 + 1;
	}
	if (!p) { /* over a limit: nothing charged (the next check proves it) */
		FUZZ_ASSERT(origin >= 0 && errno == ENOMEM);
		return;
	}
	obj_add(p, size, usable, cache, origin, kind, units);
	/* accounted objects with room for a link go on the shrinker's list */
	struct obj *o = &w.obj[w.nobj - 1];
	if (origin >= 0 && size >= sizeof(struct hdr) && (how & 0x40)) {
		int own = owner_of(origin);
		FUZZ_ASSERT(mcg_list_lru_add(lru, &((struct hdr *)p)->link, 0, gptr(own)) == 1);
		o->on_lru = true;
	}
}

static void op_free(struct in *in)
{
	unsigned i = u8(in);
	if (w.nobj)
		obj_free((int)(i % (unsigned)w.nobj));
}

/* realloc of a kmalloc block: the charge moves with it, the contents kept. */
static void op_realloc(struct in *in)
{
	unsigned i = u8(in), sz = u16(in);
	if (!w.nobj)
		return;
	int k = (int)(i % (unsigned)w.nobj);
	struct obj *o = &w.obj[k];
	if (o->cache >= 0 || o->on_lru)
		return;
	obj_verify(o);
	size_t size = 1 + sz % 4096;
	void *old_p = o->p;
	w.busy = old_p;
	void *p = mcg_realloc(old_p, size);
	w.busy = NULL;
	k = obj_find(old_p); /* the OOM policy may have moved it in the table */
	o = &w.obj[k];
	if (!p) {
		FUZZ_ASSERT(errno == ENOMEM && o->origin >= 0);
		return;
	}
	struct obj old = *o;
	size_t keep = old.size < size ? old.size : size;
	FUZZ_ASSERT(pattern_ok(p, old.size >= sizeof(struct hdr) ? sizeof(struct hdr) : 0, keep,
	                       old.id));
	obj_forget(k);
	size_t usable = mcg_malloc_usable_size(p);
	obj_add(p, size, usable, -1, old.origin, UNRECL, (long)usable / 2 + 1);
}

static void op_charge(struct in *in)
{
	int r = pick_group(in);
	unsigned n = 1 + u8(in) % 80, fl = u8(in);
	unsigned flags = (fl & 1 ? MCG_CHARGE_FORCE : 0) | (fl & 2 ? MCG_CHARGE_NORECLAIM : 0);
	mcg_group_t *g = gptr(r);
	bool limit_check = !(flags & MCG_CHARGE_FORCE);
	long before[MAX_GROUPS];
	if (limit_check) {
		mcg_group_drain_stocks();
		for (int s = r; s > 0; s = w.grp[s].parent)
			if (w.grp[s].held) /* ancestors we let go of are not looked at */
				before[s] = usage_pages(w.grp[s].g);
	}
	int ret = mcg_charge(g, n, flags);
	if (ret) {
		FUZZ_ASSERT(ret == -ENOMEM && !(flags & MCG_CHARGE_FORCE));
		return;
	}
	w.grp[r].charged += n;
	if (limit_check) {
		mcg_group_drain_stocks();
		for (int s = r; s > 0; s = w.grp[s].parent) {
			if (!w.grp[s].held)
				continue;
			long max = read_long(w.grp[s].g, "memory.max", NULL);
			long now = usage_pages(w.grp[s].g);
			FUZZ_ASSERT(max < 0 ||
			            now <= (max / (long)PAGE > before[s] ? max / (long)PAGE
			                                                 : before[s]));
		}
	}
}

static void op_uncharge(struct in *in)
{
	int r = pick_group(in);
	unsigned n = 1 + u8(in) % 80;
	if (!w.grp[r].charged)
		return;
	if (n > w.grp[r].charged)
		n = (unsigned)w.grp[r].charged;
	FUZZ_ASSERT(mcg_uncharge(gptr(r), n) == 0);
	w.grp[r].charged -= n;
}

static void op_reclaim(struct in *in)
{
	int r = pick_group(in);
	unsigned n = u8(in), fl = u8(in) % 3;
	unsigned flags = fl == 1 ? MCG_RECLAIM_BACKGROUND : fl == 2 ? MCG_RECLAIM_PROACTIVE : 0;
	if (n & 0x80) {
		char text[32];
		snprintf(text, sizeof(text), "%u", (n & 0x7f) * PAGE);
		int ret = mcg_group_write(gptr(r), "memory.reclaim", text);
		FUZZ_ASSERT(ret == 0 || ret == -EAGAIN);
	} else {
		mcg_reclaim(gptr(r), n, flags);
	}
}

static void op_shrinker(struct in *in)
{
	(void)in;
	if (w.registered)
		mcg_shrinker_unregister(shrinker);
	else
		FUZZ_ASSERT(mcg_shrinker_register(shrinker) == 0);
	w.registered = !w.registered;
}

static void op_policy(struct in *in)
{
	(void)in;
	w.policy = !w.policy;
	mcg_oom_set_policy(w.policy ? oom_policy : NULL, NULL);
}

static void op_lru_del(struct in *in)
{
	unsigned i = u8(in);
	if (w.nobj)
		obj_lru_del((int)(i % (unsigned)w.nobj));
}

static void op_shrink(struct in *in)
{
	unsigned s = u8(in) % (MAX_CACHES + 1);
	if (s == MAX_CACHES)
		mcg_slab_shrink_all();
	else if (w.cache[s])
		FUZZ_ASSERT(mcg_cache_shrink(w.cache[s]) >= 0);
}

/* ------------------------------------------------------------ files */

static void file_path(int k, char *p, size_t len) { snprintf(p, len, "%s/f%d", file_dir, k); }

static void op_file_open(struct in *in)
{
	unsigned k = u8(in) % MAX_FILES, how = u8(in);
	int r = pick_group(in);
	struct fstate *f = &files[k];
	if (f->h)
		return;
	char p[96];
	file_path((int)k, p, sizeof(p));
	mcg_file_opts_t o = {.group = how & 1 ? gptr(r) : NULL,
	                     .flags = how & 2 ? MCG_FILE_NO_DIRECT : 0};
	int ret = mcg_file_open(p, O_RDWR | O_CREAT | (f->used ? 0 : O_TRUNC), 0600, &o, &f->h);
	if (ret) {
		FUZZ_ASSERT(io_armed || ret == -ENOMEM);
		f->h = NULL;
		return;
	}
	if (!f->used)
		f->size = 0;
	f->used = true;
	FUZZ_ASSERT(mcg_file_size(f->h) == (off_t)f->size);
}

static void op_file_close(struct in *in)
{
	struct fstate *f = &files[u8(in) % MAX_FILES];
	if (f->h) {
		FUZZ_ASSERT(mcg_file_close(f->h) == 0);
		f->h = NULL;
	}
}

static void op_file_write(struct in *in)
{
	struct fstate *f = &files[u8(in) % MAX_FILES];
	size_t off = (size_t)u16(in) * 3 % FILE_MAX, len = 1 + u16(in) % 20000;
	unsigned seed = u8(in);
	if (!f->h)
		return;
	if (len > FILE_MAX - off)
		len = FILE_MAX - off;
	static uint8_t buf[20000];
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed + i * 13);
	ssize_t ret = mcg_file_pwrite(f->h, buf, len, (off_t)off);
	if (ret < 0) { /* over a limit, or a writeback error refusing new data */
		if (ret != -ENOMEM && ret != -EIO && ret != -ENOSPC)
			fprintf(stderr, "file_write: %s\n", strerror((int)-ret));
		FUZZ_ASSERT(ret == -ENOMEM || ret == -EIO || ret == -ENOSPC);
		return;
	}
	FUZZ_ASSERT((size_t)ret <= len);
	if (off > f->size) /* a hole reads as zeros */
		memset(f->copy + f->size, 0, off - f->size);
	memcpy(f->copy + off, buf, (size_t)ret);
	if (off + (size_t)ret > f->size && ret > 0)
		f->size = off + (size_t)ret;
	FUZZ_ASSERT(mcg_file_size(f->h) == (off_t)f->size);
}

static void op_file_read(struct in *in)
{
	struct fstate *f = &files[u8(in) % MAX_FILES];
	size_t off = (size_t)u16(in) * 3 % (FILE_MAX + 4096), len = 1 + u16(in) % 30000;
	if (!f->h)
		return;
	static uint8_t buf[30000];
	ssize_t ret = mcg_file_pread(f->h, buf, len, (off_t)off);
	if (ret < 0) { /* an injected read failure comes back with its errno */
		FUZZ_ASSERT(ret == -ENOMEM || (io_armed && (ret == -EIO || ret == -ENOSPC)));
		return;
	}
	size_t want = off >= f->size ? 0 : f->size - off < len ? f->size - off : len;
	/* Short where a page could not be brought in - no memory to charge
	 * it (as -ENOMEM may come back at any time), or an injected I/O
	 * failure - after others were copied, as the kernel's read does. */
	FUZZ_ASSERT(
	        (size_t)ret == want ||
	        ((size_t)ret < want && (io_armed || (ret > 0 && (off + (size_t)ret) % 4096 == 0))));
	FUZZ_ASSERT(!memcmp(buf, f->copy + off, (size_t)ret));
}

static void op_file_fsync(struct in *in)
{
	struct fstate *f = &files[u8(in) % MAX_FILES];
	if (!f->h)
		return;
	int ret = mcg_file_fsync(f->h);
	FUZZ_ASSERT(ret == 0 || ret == -EIO || ret == -ENOSPC);
}

static void op_file_truncate(struct in *in)
{
	struct fstate *f = &files[u8(in) % MAX_FILES];
	size_t size = (size_t)u16(in) * 3 % FILE_MAX;
	if (!f->h || io_armed) /* a failed ftruncate leaves the cache as it may */
		return;
	int ret = mcg_file_truncate(f->h, (off_t)size);
	FUZZ_ASSERT(ret == 0);
	if (size > f->size)
		memset(f->copy + f->size, 0, size - f->size);
	f->size = size;
	FUZZ_ASSERT(mcg_file_size(f->h) == (off_t)size);
}

/* The Nth backing read, write or sync (not truncate) fails with EIO or ENOSPC. */
static void op_io_fault(struct in *in)
{
	unsigned nth = 1 + u8(in) % 6, kinds = u8(in), err = u8(in) % 2 ? EIO : ENOSPC;
	unsigned ops = (kinds & 1 ? MCG_FAULT_IO_READ : 0) | (kinds & 2 ? MCG_FAULT_IO_WRITE : 0) |
	               (kinds & 4 ? MCG_FAULT_IO_SYNC : 0) | (kinds & 8 ? MCG_FAULT_IO_OPEN : 0);
	if (!ops)
		ops = MCG_FAULT_IO_WRITE;
	FUZZ_ASSERT(mcg_fault_inject_io(nth, (kinds & 16) != 0, (int)err, ops) == 0);
	io_armed = true;
}

static void op_drop_caches(struct in *in)
{
	(void)in;
	FUZZ_ASSERT(mcg_file_drop_caches() >= 0);
}

/* The operation table: a new part of the API adds its operations here. */
static const struct {
	const char *name;
	void (*fn)(struct in *in);
} ops[] = {
        {"group_create", op_group_create},
        {"group_remove", op_group_remove},
        {"group_put", op_group_put},
        {"enter", op_enter},
        {"leave", op_leave},
        {"limit", op_limit},
        {"cache_create", op_cache_create},
        {"cache_destroy", op_cache_destroy},
        {"alloc", op_alloc},
        {"alloc", op_alloc},
        {"free", op_free},
        {"realloc", op_realloc},
        {"charge", op_charge},
        {"uncharge", op_uncharge},
        {"reclaim", op_reclaim},
        {"shrinker", op_shrinker},
        {"oom_policy", op_policy},
        {"lru_del", op_lru_del},
        {"shrink", op_shrink},
        {"file_open", op_file_open},
        {"file_close", op_file_close},
        {"file_write", op_file_write},
        {"file_write", op_file_write},
        {"file_read", op_file_read},
        {"file_fsync", op_file_fsync},
        {"file_truncate", op_file_truncate},
        {"io_fault", op_io_fault},
        {"drop_caches", op_drop_caches},
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

/* ------------------------------------------------------------ the input */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void remove_files(void)
{
	char p[96];
	for (int k = 0; k < MAX_FILES; k++) {
		file_path(k, p, sizeof(p));
		unlink(p);
	}
	rmdir(file_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	mcg_options_use_env(0);
	mcg_option_set("reap_ms", 0);
	mcg_set_report_handler(report);
	FUZZ_ASSERT(mcg_shrinker_create(&(mcg_shrinker_ops_t){.name = "fuzz",
	                                                      .count_objects = count_objects,
	                                                      .scan_objects = scan_objects,
	                                                      .flags = MCG_SHRINKER_MEMCG_AWARE},
	                                &shrinker) == 0);
	FUZZ_ASSERT(mcg_list_lru_create(shrinker, &lru) == 0);
	snprintf(file_dir, sizeof(file_dir), "/tmp/memcg-fuzz-api-%d", (int)getpid());
	FUZZ_ASSERT(mkdir(file_dir, 0700) == 0 || errno == EEXIST);
	atexit(remove_files);
	for (int k = 0; k < MAX_FILES; k++)
		FUZZ_ASSERT((files[k].copy = calloc(1, FILE_MAX)));
	return 0;
}

/* Undo everything, checking each step; the world is empty again after. */
/* Every file's bytes on disk, once fsync succeeds: nothing written was lost. */
static void files_teardown(void)
{
	mcg_fault_inject_io(0, 0, 0, 0);
	io_armed = false;
	for (int k = 0; k < MAX_FILES; k++) {
		struct fstate *f = &files[k];
		if (!f->used)
			continue;
		if (!f->h) {
			char p[96];
			file_path(k, p, sizeof(p));
			FUZZ_ASSERT(mcg_file_open(p, O_RDWR, 0, NULL, &f->h) == 0);
		}
		int ret = mcg_file_fsync(f->h); /* reports an error of before, once */
		if (ret)
			ret = mcg_file_fsync(f->h);
		FUZZ_ASSERT(ret == 0);
		FUZZ_ASSERT(mcg_file_close(f->h) == 0);
		f->h = NULL;
		char p[96];
		file_path(k, p, sizeof(p));
		int fd = open(p, O_RDONLY);
		FUZZ_ASSERT(fd >= 0);
		struct stat sb;
		FUZZ_ASSERT(fstat(fd, &sb) == 0 && (size_t)sb.st_size == f->size);
		static uint8_t disk[FILE_MAX];
		FUZZ_ASSERT(pread(fd, disk, f->size, 0) == (ssize_t)f->size);
		FUZZ_ASSERT(!memcmp(disk, f->copy, f->size));
		close(fd);
		f->used = false;
	}
	FUZZ_ASSERT(mcg_file_drop_caches() >= 0);
}

static void teardown(void)
{
	while (w.depth)
		op_leave(&(struct in){NULL, 0});
	check_world();
	files_teardown();
	while (w.nobj)
		obj_free(w.nobj - 1);
	for (int r = 0; r < w.ngroups; r++)
		if (w.grp[r].charged) {
			FUZZ_ASSERT(mcg_uncharge(gptr(r), (unsigned long)w.grp[r].charged) == 0);
			w.grp[r].charged = 0;
		}
	if (w.registered)
		mcg_shrinker_unregister(shrinker);
	mcg_oom_set_policy(NULL, NULL);
	for (int s = 0; s < MAX_CACHES; s++)
		if (w.cache[s]) {
			mcg_cache_stats_t st;
			FUZZ_ASSERT(mcg_cache_stats(w.cache[s], &st) == 0 && st.active_objs == 0);
			FUZZ_ASSERT(mcg_cache_destroy(w.cache[s]) == 0);
		}
	check_world();
	for (int r = 1; r < w.ngroups; r++)
		if (w.grp[r].held)
			FUZZ_ASSERT(usage_pages(w.grp[r].g) == 0);
	/* remove children before parents: records are in creation order */
	for (int r = w.ngroups - 1; r > 0; r--) {
		if (w.grp[r].online) {
			FUZZ_ASSERT(mcg_group_remove(w.grp[r].g) == 0);
			w.grp[r].online = false;
		}
		if (w.grp[r].held)
			mcg_group_put(w.grp[r].g);
	}
	mcg_group_drain_stocks();
	if (usage_pages(mcg_group_root()) != w.root_base)
		fprintf(stderr, "root: %ld pages, began with %ld\n", usage_pages(mcg_group_root()),
		        w.root_base);
	FUZZ_ASSERT(usage_pages(mcg_group_root()) == w.root_base);
	FUZZ_ASSERT(read_long(mcg_group_root(), "cgroup.stat", "nr_descendants") == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	memset(&w, 0, sizeof(w));
	w.ngroups = 1;
	w.grp[0] = (struct grec){.parent = -1, .used = true, .online = true, .held = true};
	mcg_group_drain_stocks();
	w.root_base = usage_pages(mcg_group_root());
	struct in in = {data, size};
	static int trace = -1;
	if (trace < 0)
		trace = getenv("FUZZ_TRACE") != NULL; /* print each operation */
	for (int n = 0; in.n && n < MAX_OPS; n++) {
		unsigned op = u8(&in);
		if (trace)
			fprintf(stderr, "op %s%s (%zu bytes left)\n", ops[(op & 0x7f) % NOPS].name,
			        op & 0x80 ? " +check" : "", in.n);
		op_sleeps = 0;
		ops[(op & 0x7f) % NOPS].fn(&in);
		if (op & 0x80)
			check_world();
	}
	teardown();
	return 0;
}
