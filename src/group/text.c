/* SPDX-License-Identifier: MIT */
/*
 * group/text.c - the cgroup v2 files of a group: mcg_group_read() and
 * mcg_group_write().
 *
 * One table of files (name, show, write).  Values are printed in bytes, one
 * per line, "max" for unlimited; flat-keyed files print "key value" lines,
 * in the kernel's spelling and order.  Writes parse bytes with an optional
 * K/M/G/T suffix (powers of 1024) or "max", tolerate trailing whitespace,
 * round down to pages, and change nothing on any error.
 *
 * Locks: none of its own; memory.stat and cgroup.stat take the tree lock.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/mm_const.h"
#include "base/options.h"
#include "group/group.h"

/* A string builder with snprintf semantics: counts what would be written. */
struct out {
	char *buf;
	size_t len, pos;
};

static void out_printf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_printf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t room = o->pos < o->len ? o->len - o->pos : 0;
	int n = vsnprintf(room ? o->buf + o->pos : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->pos += (size_t)n;
}

/* A limit in pages, printed in bytes or "max". */
static void out_limit(struct out *o, long pages)
{
	if (pages >= MCG_PAGE_COUNTER_MAX)
		out_printf(o, "max\n");
	else
		out_printf(o, "%ld\n", pages * (long)MCG_PAGE_SIZE);
}

/* ------------------------------------------------------------ the files */

static void show_current(mcg_group_t *g, struct out *o)
{
	out_printf(o, "%ld\n", mcg_page_counter_read(&g->memory) * (long)MCG_PAGE_SIZE);
}

static void show_peak(mcg_group_t *g, struct out *o)
{
	out_printf(o, "%ld\n", mcg_page_counter_get(&g->memory, watermark) * (long)MCG_PAGE_SIZE);
}

static void show_min(mcg_group_t *g, struct out *o)
{
	out_limit(o, mcg_page_counter_get(&g->memory, min));
}
static void show_low(mcg_group_t *g, struct out *o)
{
	out_limit(o, mcg_page_counter_get(&g->memory, low));
}
static void show_high(mcg_group_t *g, struct out *o)
{
	out_limit(o, mcg_page_counter_get(&g->memory, high));
}
static void show_max(mcg_group_t *g, struct out *o)
{
	out_limit(o, mcg_page_counter_get(&g->memory, max));
}

/*
 * memory.stat: the memory kinds first, in bytes (the kernel's order), then
 * the counters.  kernel = what accounted objects charged (whole pages, so it
 * includes the sub-page remainder their objcgs keep); file = the page
 * cache's pages (pagecache/, with its own lines after slab: active_file,
 * inactive_file, file_dirty, file_writeback, ...); anon = the rest of
 * memory.current less what the page stocks hold: mcg_charge() pages and the
 * shim's heap.  No counting on the charge fast path: memory.current = anon +
 * file + kernel whenever the stocks hold nothing, and anon is exact at any
 * quiet moment.  slab_* are the bytes in live objects (slab <= kernel).
 */
static void show_stat(mcg_group_t *g, struct out *o)
{
	int64_t v[MCG_NR_STATS];
	struct mcg_objcg_stat ob;
	mcg_group_stat_flush(g, v);
	mcg_objcg_stat(g, &ob);
	const struct mcg_group_reclaim_ops *ops = mcg_group_reclaim_ops_get();
	const struct mcg_group_file_ops *fops = mcg_group_file_ops_get();
	char extra[512] = "", files[1024] = "";
	if (g == mcg_group_root() && ops && ops->root_stat)
		ops->root_stat(extra, sizeof(extra));
	int64_t file = 0;
	if (fops) {
		fops->stat(g, files, sizeof(files));
		file = (int64_t)fops->file_pages(g) * (long)MCG_PAGE_SIZE;
	}
	int64_t sr = ob.used[MCG_OBJCG_SLAB_RECLAIMABLE],
	        su = ob.used[MCG_OBJCG_SLAB_UNRECLAIMABLE];
	int64_t kernel =
	        ob.charged[MCG_OBJCG_SLAB_RECLAIMABLE] + ob.charged[MCG_OBJCG_SLAB_UNRECLAIMABLE];
	int64_t anon = (int64_t)(mcg_page_counter_read(&g->memory) - mcg_stock_cached_subtree(g)) *
	                       (long)MCG_PAGE_SIZE -
	               kernel - file;
	out_printf(o, "anon %lld\nfile %lld\nkernel %lld\n", (long long)(anon > 0 ? anon : 0),
	           (long long)file, (long long)kernel);
	if (files[0])
		out_printf(o, "%s", files);
	out_printf(o, "slab_reclaimable %lld\nslab_unreclaimable %lld\nslab %lld\n", (long long)sr,
	           (long long)su, (long long)(sr + su));
	for (int i = 0; i < MCG_NR_STATS; i++) {
		if (i == MCG_STAT_PGSCAN_DIRECT) /* the kernel's totals first */
			out_printf(o, "pgscan %lld\npgsteal %lld\n",
			           (long long)(v[MCG_STAT_PGSCAN_DIRECT] +
			                       v[MCG_STAT_PGSCAN_KSWAPD] +
			                       v[MCG_STAT_PGSCAN_PROACTIVE]),
			           (long long)(v[MCG_STAT_PGSTEAL_DIRECT] +
			                       v[MCG_STAT_PGSTEAL_KSWAPD] +
			                       v[MCG_STAT_PGSTEAL_PROACTIVE]));
		bool bytes;
		const char *name = mcg_group_stat_name(i, &bytes);
		out_printf(o, "%s %lld\n", name,
		           (long long)(bytes ? v[i] * (long)MCG_PAGE_SIZE : v[i]));
	}
	if (extra[0])
		out_printf(o, "%s", extra);
}

static void show_events_(mcg_group_t *g, struct out *o, bool local)
{
	for (int i = 0; i < MCG_NR_EVENTS; i++)
		out_printf(o, "%s %ld\n", mcg_group_event_name(i),
		           mcg_group_event_read(g, i, local));
}

static void show_events(mcg_group_t *g, struct out *o) { show_events_(g, o, false); }
static void show_events_local(mcg_group_t *g, struct out *o) { show_events_(g, o, true); }

static void show_cgroup_stat(mcg_group_t *g, struct out *o)
{
	mcg_lock(&mcg_group_tree_lock);
	long live = g->nr_descendants, dying = g->nr_dying_descendants;
	mcg_unlock(&mcg_group_tree_lock);
	out_printf(o, "nr_descendants %ld\nnr_dying_descendants %ld\n", live, dying);
}

static int write_min(mcg_group_t *g, long pages)
{
	mcg_page_counter_set_min(&g->memory, pages);
	return 0;
}

static int write_low(mcg_group_t *g, long pages)
{
	mcg_page_counter_set_low(&g->memory, pages);
	return 0;
}

static int write_high(mcg_group_t *g, long pages)
{
	mcg_page_counter_set_high(&g->memory, pages);
	/* As the kernel's memory_high_write(): reclaim down to it, a few tries. */
	const struct mcg_group_reclaim_ops *ops = mcg_group_reclaim_ops_get();
	for (int tries = 0; ops && tries < 16; tries++) {
		long usage = mcg_page_counter_read(&g->memory);
		if (usage <= pages)
			break;
		if (!ops->reclaim(g, (unsigned long)(usage - pages), 0)) {
			mcg_group_drain_stocks();
			if (tries > 0)
				break;
		}
	}
	return 0;
}

static int write_max(mcg_group_t *g, long pages)
{
	mcg_page_counter_set_max(&g->memory, pages);
	long usage = mcg_page_counter_read(&g->memory);
	if (usage <= pages)
		return 0;
	/* Over the new limit: give back stocked pages, then ask reclaim. */
	mcg_group_drain_stocks();
	const struct mcg_group_reclaim_ops *ops = mcg_group_reclaim_ops_get();
	for (int tries = 0; tries < 16; tries++) {
		usage = mcg_page_counter_read(&g->memory);
		if (usage <= pages)
			break;
		unsigned long got = 0;
		if (ops)
			got = ops->reclaim(g, (unsigned long)(usage - pages), 0);
		got += mcg_group_reclaim_hook_call(g, (unsigned long)(usage - pages));
		if (!got)
			break;
	}
	return 0;
}

/* memory.reclaim: reclaim that many bytes, or -EAGAIN (the kernel's memory_reclaim()). */
static int write_reclaim(mcg_group_t *g, long pages)
{
	if (pages >= MCG_PAGE_COUNTER_MAX)
		return -EINVAL; /* "max" is not a byte count */
	if (pages == 0)
		return 0;
	const struct mcg_group_reclaim_ops *ops = mcg_group_reclaim_ops_get();
	if (!ops)
		return -EAGAIN;
	return ops->proactive(g, (unsigned long)pages);
}

/*
 * memory.dirty_ratio, dirty_background_ratio (percent, 0-100) and
 * memory.dirty_bytes, dirty_background_bytes (bytes with a K/M/G/T suffix;
 * dirty_bytes at least two pages, as the kernel's vm.dirty_bytes): the
 * group's dirty limits (pagecache/dirty.c).  A group that never had one
 * written reads the process-wide option (or what its parent had when it was
 * created).  Writing one zeroes its twin, the value first, so a reader
 * never finds both zero.
 */
static long dirty_value(long v, enum mcg_option_id opt) { return v < 0 ? mcg_option(opt) : v; }

static void show_dirty_ratio(mcg_group_t *g, struct out *o)
{
	out_printf(o, "%ld\n", dirty_value(MCG_READ_ONCE(g->dirty_ratio), MCG_OPT_DIRTY_RATIO));
}
static void show_dirty_bg_ratio(mcg_group_t *g, struct out *o)
{
	out_printf(o, "%ld\n",
	           dirty_value(MCG_READ_ONCE(g->dirty_background_ratio),
	                       MCG_OPT_DIRTY_BACKGROUND_RATIO));
}
static void show_dirty_bytes(mcg_group_t *g, struct out *o)
{
	out_printf(o, "%ld\n", dirty_value(MCG_READ_ONCE(g->dirty_bytes), MCG_OPT_DIRTY_BYTES));
}
static void show_dirty_bg_bytes(mcg_group_t *g, struct out *o)
{
	out_printf(o, "%ld\n",
	           dirty_value(MCG_READ_ONCE(g->dirty_background_bytes),
	                       MCG_OPT_DIRTY_BACKGROUND_BYTES));
}

static int parse_bytes(const char *s, unsigned long long *bytes, bool *is_max);

static int parse_ratio(const char *s, int *ratio)
{
	unsigned long long v;
	bool is_max;
	size_t n = strlen(s);
	for (size_t i = 0; i < n; i++)
		if (s[i] >= 'A') /* no suffix and no "max" for a percentage */
			return -EINVAL;
	if (parse_bytes(s, &v, &is_max) || is_max || v > 100)
		return -EINVAL;
	*ratio = (int)v;
	return 0;
}

static int write_dirty_ratio_(int *field, long *twin, const char *text)
{
	int r;
	if (parse_ratio(text, &r))
		return -EINVAL;
	__atomic_store_n(field, r, __ATOMIC_RELAXED);
	__atomic_store_n(twin, 0, __ATOMIC_RELAXED);
	return 0;
}

static int write_dirty_bytes_(long *field, int *twin, const char *text, long least)
{
	unsigned long long v;
	bool is_max;
	if (parse_bytes(text, &v, &is_max) || is_max || v < (unsigned long long)least ||
	    v > (unsigned long long)LONG_MAX)
		return -EINVAL;
	__atomic_store_n(field, (long)v, __ATOMIC_RELAXED);
	__atomic_store_n(twin, 0, __ATOMIC_RELAXED);
	return 0;
}

static int write_dirty_ratio(mcg_group_t *g, const char *text)
{
	return write_dirty_ratio_(&g->dirty_ratio, &g->dirty_bytes, text);
}
static int write_dirty_bg_ratio(mcg_group_t *g, const char *text)
{
	return write_dirty_ratio_(&g->dirty_background_ratio, &g->dirty_background_bytes, text);
}
static int write_dirty_bytes(mcg_group_t *g, const char *text)
{
	return write_dirty_bytes_(&g->dirty_bytes, &g->dirty_ratio, text, 2 * (long)MCG_PAGE_SIZE);
}
static int write_dirty_bg_bytes(mcg_group_t *g, const char *text)
{
	return write_dirty_bytes_(&g->dirty_background_bytes, &g->dirty_background_ratio, text, 1);
}

static const struct group_file {
	const char *name;
	void (*show)(mcg_group_t *g, struct out *o);
	int (*write)(mcg_group_t *g, long pages);            /* NULL: read-only; 0 or -errno */
	int (*write_text)(mcg_group_t *g, const char *text); /* parses its own text */
} files[] = {
        {"memory.current", show_current, NULL, NULL},
        {"memory.min", show_min, write_min, NULL},
        {"memory.low", show_low, write_low, NULL},
        {"memory.high", show_high, write_high, NULL},
        {"memory.max", show_max, write_max, NULL},
        {"memory.reclaim", NULL, write_reclaim, NULL},
        {"memory.peak", show_peak, NULL, NULL},
        {"memory.stat", show_stat, NULL, NULL},
        {"memory.events", show_events, NULL, NULL},
        {"memory.events.local", show_events_local, NULL, NULL},
        {"cgroup.stat", show_cgroup_stat, NULL, NULL},
        {"memory.dirty_ratio", show_dirty_ratio, NULL, write_dirty_ratio},
        {"memory.dirty_background_ratio", show_dirty_bg_ratio, NULL, write_dirty_bg_ratio},
        {"memory.dirty_bytes", show_dirty_bytes, NULL, write_dirty_bytes},
        {"memory.dirty_background_bytes", show_dirty_bg_bytes, NULL, write_dirty_bg_bytes},
};

static const struct group_file *file_find(const char *name)
{
	for (size_t i = 0; i < MCG_ARRAY_SIZE(files); i++)
		if (!strcmp(files[i].name, name))
			return &files[i];
	return NULL;
}

/* ------------------------------------------------------------ parsing */

/*
 * Parse "max" (*@is_max) or bytes[K|M|G|T] (either case) into *@bytes,
 * trailing whitespace allowed.  Return 0 or -EINVAL.
 */
static int parse_bytes(const char *s, unsigned long long *bytes, bool *is_max)
{
	size_t n = strlen(s);
	while (n > 0 &&
	       (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		n--;
	*is_max = false;
	if (n == 3 && !memcmp(s, "max", 3)) {
		*is_max = true;
		return 0;
	}
	size_t i = 0;
	unsigned long long v = 0;
	if (i == n || s[i] < '0' || s[i] > '9')
		return -EINVAL;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		if (v > (~0ull - 9) / 10)
			return -EINVAL;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	unsigned shift = 0;
	if (i < n) {
		switch (s[i]) {
		case 'k':
		case 'K': shift = 10; break;
		case 'm':
		case 'M': shift = 20; break;
		case 'g':
		case 'G': shift = 30; break;
		case 't':
		case 'T': shift = 40; break;
		default: return -EINVAL;
		}
		i++;
	}
	if (i != n)
		return -EINVAL;
	if (shift && v > (~0ull >> shift))
		return -EINVAL;
	*bytes = v << shift;
	return 0;
}

/* Parse "max" or bytes into pages (rounded down).  Return 0 or -EINVAL. */
static int parse_pages(const char *s, long *pages)
{
	unsigned long long v;
	bool is_max;
	if (parse_bytes(s, &v, &is_max))
		return -EINVAL;
	if (is_max) {
		*pages = MCG_PAGE_COUNTER_MAX;
		return 0;
	}
	unsigned long long p = v / (unsigned long long)(long)MCG_PAGE_SIZE;
	*pages = p >= (unsigned long long)MCG_PAGE_COUNTER_MAX ? MCG_PAGE_COUNTER_MAX : (long)p;
	return 0;
}

/* ------------------------------------------------------------ entry points */

mcg_public ssize_t mcg_group_read(mcg_group_t *g, const char *file, char *buf, size_t len)
{
	if (!g || !file || (!buf && len))
		return -EINVAL;
	const struct group_file *f = file_find(file);
	if (!f)
		return -ENOENT;
	if (!f->show)
		return -EACCES; /* write-only (memory.reclaim) */
	struct out o = {buf, len, 0};
	if (len)
		buf[0] = '\0';
	f->show(g, &o);
	return (ssize_t)o.pos;
}

mcg_public int mcg_group_write(mcg_group_t *g, const char *file, const char *text)
{
	if (!g || !file || !text)
		return -EINVAL;
	const struct group_file *f = file_find(file);
	if (!f)
		return -ENOENT;
	if (!f->write && !f->write_text)
		return -EACCES;
	if (g == mcg_group_root() && f->write != write_reclaim)
		return -EINVAL; /* as in the kernel, the root has no limits */
	if (f->write_text)
		return f->write_text(g, text);
	long pages;
	int err = parse_pages(text, &pages);
	if (err)
		return err;
	return f->write(g, pages);
}
