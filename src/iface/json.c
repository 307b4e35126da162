/* SPDX-License-Identifier: MIT */
/* iface/json.c - snapshots as JSON (see json.h).  No locks. */
#include "iface/json.h"

#include <string.h>

#include "iface/escape.h"

/* A value: a number when it is one, else a string. */
static void json_scalar(struct mcg_out *o, const char *v, size_t n)
{
	long long x;
	if (mcg_snap_number(v, n, &x))
		mcg_out_printf(o, "%lld", x);
	else
		mcg_json_string(o, v, n);
}

void mcg_json_file_value(struct mcg_out *o, const char *text)
{
	const char *p = text;
	struct mcg_kv kv;
	if (!mcg_snap_next_kv(&p, &kv)) {
		mcg_out_puts(o, "null");
		return;
	}
	if (!kv.key_len && !*p) { /* one line, one value */
		json_scalar(o, kv.val, kv.val_len);
		return;
	}
	p = text;
	mcg_out_write(o, "{", 1);
	for (bool first = true; mcg_snap_next_kv(&p, &kv); first = false) {
		if (!first)
			mcg_out_write(o, ",", 1);
		if (kv.key_len) {
			mcg_json_string(o, kv.key, kv.key_len);
			mcg_out_write(o, ":", 1);
			json_scalar(o, kv.val, kv.val_len);
		} else { /* a line with no value: the key alone */
			mcg_json_string(o, kv.val, kv.val_len);
			mcg_out_puts(o, ":null");
		}
	}
	mcg_out_write(o, "}", 1);
}

void mcg_json_group(struct mcg_out *o, const struct mcg_snapshot *s, const struct mcg_snap_group *g)
{
	const char *path = mcg_snap_path(s, g);
	mcg_out_puts(o, "{\"path\":");
	mcg_json_string(o, path, strlen(path));
	for (int f = 0; f < MCG_SNAP_NR_FILES; f++) {
		mcg_out_printf(o, ",\"%s\":", mcg_snap_file_name(f));
		mcg_json_file_value(o, mcg_snap_text(s, g, f));
	}
	mcg_out_write(o, "}", 1);
}

void mcg_json_caches(struct mcg_out *o, const struct mcg_snapshot *s)
{
	mcg_out_write(o, "[", 1);
	for (size_t i = 0; i < s->nr_caches; i++) {
		const struct mcg_slabinfo_row *r = &s->caches[i];
		const mcg_cache_stats_t *st = &r->st;
		if (i)
			mcg_out_write(o, ",", 1);
		mcg_out_puts(o, "{\"name\":");
		mcg_json_string(o, r->name, strlen(r->name));
		mcg_out_printf(o,
		               ",\"active_objs\":%zu,\"num_objs\":%zu,\"cached_objs\":%zu,"
		               "\"objsize\":%zu,\"object_size\":%zu,\"objperslab\":%zu,"
		               "\"pagesperslab\":%zu,\"limit\":%zu,\"batchcount\":%zu,"
		               "\"active_slabs\":%zu,\"num_slabs\":%zu,\"purged_bytes\":%zu,"
		               "\"accounted\":%s}",
		               st->active_objs, st->num_objs, st->cached_objs, st->slot_size,
		               st->object_size, st->objs_per_slab, st->slab_bytes / 4096,
		               st->cpu_limit, st->batch, st->active_slabs, st->num_slabs,
		               st->purged_bytes, st->flags & MCG_CACHE_ACCOUNT ? "true" : "false");
	}
	mcg_out_write(o, "]", 1);
}

void mcg_json_snapshot(struct mcg_out *o, const struct mcg_snapshot *s)
{
	mcg_out_puts(o, "{\"groups\":[");
	for (size_t i = 0; i < s->nr_groups; i++) {
		if (i)
			mcg_out_write(o, ",", 1);
		mcg_json_group(o, s, &s->groups[i]);
	}
	mcg_out_write(o, "]", 1);
	if (s->nr_caches) {
		mcg_out_puts(o, ",\"slabinfo\":");
		mcg_json_caches(o, s);
	}
	if (s->process.have)
		mcg_out_printf(o,
		               ",\"memory\":{\"mapped_bytes\":%zu,\"large_in_use_bytes\":%zu,"
		               "\"large_retained_bytes\":%zu,\"large_retained_cap_bytes\":%zu}",
		               s->process.mapped, s->process.large.in_use,
		               s->process.large.retained, s->process.large.cap);
	mcg_out_write(o, "}", 1);
}
