/* SPDX-License-Identifier: MIT */
/*
 * iface/prom.c - a snapshot in the Prometheus text exposition format (see
 * prom.h for the families).
 *
 * Families are written one after another, each walking every group (the
 * format wants a family's samples together).  memory.stat's items are
 * sorted into families by a table (bytes, counters, the root's pressure
 * lines); a numeric item the table does not know goes to the catch-all
 * gauge memcg_memory_stat, so new items show up without a change here.
 * A family whose samples would all be missing (pressure lines outside the
 * root) is left out, HELP and TYPE included.
 *
 * No locks.
 */
#include "iface/prom.h"

#include <stddef.h>
#include <string.h>

#include "iface/escape.h"

/* ------------------------------------------------------------ writing */

struct family {
	const char *name, *type, *help;
};

static void family_head(struct mcg_out *o, const struct family *f)
{
	mcg_out_printf(o, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, f->type);
}

/* name{group="PATH" (the caller adds labels, then closes with sample_end). */
static void sample_start(struct mcg_out *o, const char *name, const char *label, const char *value,
                         size_t n)
{
	mcg_out_printf(o, "%s{%s=\"", name, label);
	mcg_prom_label(o, value, n);
	mcg_out_write(o, "\"", 1);
}

static void sample_label(struct mcg_out *o, const char *label, const char *value, size_t n)
{
	mcg_out_printf(o, ",%s=\"", label);
	mcg_prom_label(o, value, n);
	mcg_out_write(o, "\"", 1);
}

/* "} SECONDS\n" of @ms milliseconds, exactly: 1500 is 1.500, -1 is -0.001. */
static void sample_end_ms(struct mcg_out *o, long long ms)
{
	unsigned long long a = ms < 0 ? 0ull - (unsigned long long)ms : (unsigned long long)ms;
	mcg_out_printf(o, "} %s%llu.%03llu\n", ms < 0 ? "-" : "", a / 1000, a % 1000);
}

static void sample_group(struct mcg_out *o, const char *name, const struct mcg_snapshot *s,
                         const struct mcg_snap_group *g)
{
	const char *path = mcg_snap_path(s, g);
	sample_start(o, name, "group", path, strlen(path));
}

/* ------------------------------------------------------------ group files */

/* One value per group from a single-value file; "max" is +Inf. */
static void family_single(struct mcg_out *o, const struct mcg_snapshot *s, const struct family *f,
                          enum mcg_snap_file file)
{
	family_head(o, f);
	for (size_t i = 0; i < s->nr_groups; i++) {
		const struct mcg_snap_group *g = &s->groups[i];
		const char *p = mcg_snap_text(s, g, file);
		struct mcg_kv kv;
		long long v;
		if (!mcg_snap_next_kv(&p, &kv) || kv.key_len)
			continue;
		bool inf = kv.val_len == 3 && !memcmp(kv.val, "max", 3);
		if (!inf && !mcg_snap_number(kv.val, kv.val_len, &v))
			continue;
		sample_group(o, f->name, s, g);
		if (inf)
			mcg_out_puts(o, "} +Inf\n");
		else
			mcg_out_printf(o, "} %lld\n", v);
	}
}

/* One sample per "key value" line of a flat-keyed file, the key as @label. */
static void family_keyed(struct mcg_out *o, const struct mcg_snapshot *s, const struct family *f,
                         enum mcg_snap_file file, const char *label)
{
	family_head(o, f);
	for (size_t i = 0; i < s->nr_groups; i++) {
		const struct mcg_snap_group *g = &s->groups[i];
		const char *p = mcg_snap_text(s, g, file);
		struct mcg_kv kv;
		long long v;
		while (mcg_snap_next_kv(&p, &kv)) {
			if (!kv.key_len || !mcg_snap_number(kv.val, kv.val_len, &v))
				continue;
			sample_group(o, f->name, s, g);
			sample_label(o, label, kv.key, kv.key_len);
			mcg_out_printf(o, "} %lld\n", v);
		}
	}
}

/* ------------------------------------------------------------ memory.stat */

enum stat_family {
	SF_BYTES,
	SF_TOTAL,
	SF_THROTTLED,
	SF_OTHER,
	SF_PRESSURE_RUNNING,
	SF_PRESSURE_BUDGET,
	SF_PRESSURE_WAKEUPS,
	SF_PRESSURE_PSI_EVENTS,
	SF_PRESSURE_RECLAIMED,
	SF_INFO, /* strings: memcg_pressure_info's labels */
	SF_NR
};

static const struct family stat_families[SF_NR] = {
        [SF_BYTES] = {"memcg_memory_stat_bytes", "gauge",
                      "memory.stat items in bytes (anon, kernel, slab...), descendants included"},
        [SF_TOTAL] = {"memcg_memory_stat_total", "counter",
                      "memory.stat counters (pgscan, pgsteal, charge_forced...), descendants "
                      "included"},
        [SF_THROTTLED] = {"memcg_memory_throttled_seconds_total", "counter",
                          "time charges slept over memory.high (memory.stat throttled_ms)"},
        [SF_OTHER] = {"memcg_memory_stat", "gauge", "other numeric memory.stat items"},
        [SF_PRESSURE_RUNNING] = {"memcg_pressure_running", "gauge",
                                 "1 while the global pressure reclaimer runs"},
        [SF_PRESSURE_BUDGET] = {"memcg_pressure_budget_bytes", "gauge",
                                "the process's memory budget global pressure keeps to"},
        [SF_PRESSURE_WAKEUPS] = {"memcg_pressure_wakeups_total", "counter",
                                 "wakeups of the global pressure reclaimer"},
        [SF_PRESSURE_PSI_EVENTS] = {"memcg_pressure_psi_events_total", "counter",
                                    "PSI events that woke the global pressure reclaimer"},
        [SF_PRESSURE_RECLAIMED] = {"memcg_pressure_reclaimed_bytes_total", "counter",
                                   "bytes the global pressure reclaimer reclaimed"},
        [SF_INFO] = {"memcg_pressure_info", "gauge",
                     "where the global pressure budget comes from and how PSI is watched"},
};

static const struct {
	const char *key;
	enum stat_family f;
} stat_items[] = {
        {"anon", SF_BYTES},
        {"kernel", SF_BYTES},
        {"slab_reclaimable", SF_BYTES},
        {"slab_unreclaimable", SF_BYTES},
        {"slab", SF_BYTES},
        {"charge_forced", SF_TOTAL},
        {"pgscan", SF_TOTAL},
        {"pgsteal", SF_TOTAL},
        {"pgscan_direct", SF_TOTAL},
        {"pgscan_kswapd", SF_TOTAL},
        {"pgscan_proactive", SF_TOTAL},
        {"pgsteal_direct", SF_TOTAL},
        {"pgsteal_kswapd", SF_TOTAL},
        {"pgsteal_proactive", SF_TOTAL},
        {"throttled_ms", SF_THROTTLED},
        {"pressure_running", SF_PRESSURE_RUNNING},
        {"pressure_budget", SF_PRESSURE_BUDGET},
        {"pressure_wakeups", SF_PRESSURE_WAKEUPS},
        {"pressure_psi_events", SF_PRESSURE_PSI_EVENTS},
        {"pressure_reclaimed", SF_PRESSURE_RECLAIMED},
        {"pressure_budget_source", SF_INFO},
        {"pressure_psi", SF_INFO},
};

static enum stat_family stat_family_of(const struct mcg_kv *kv)
{
	for (size_t i = 0; i < sizeof(stat_items) / sizeof(stat_items[0]); i++)
		if (strlen(stat_items[i].key) == kv->key_len &&
		    !memcmp(stat_items[i].key, kv->key, kv->key_len))
			return stat_items[i].f;
	return SF_OTHER;
}

/* The samples of stat family @f (its head before the first one). */
static void family_stat(struct mcg_out *o, const struct mcg_snapshot *s, enum stat_family f)
{
	const struct family *fam = &stat_families[f];
	bool headed = false;
	for (size_t i = 0; i < s->nr_groups; i++) {
		const struct mcg_snap_group *g = &s->groups[i];
		const char *p = mcg_snap_text(s, g, MCG_SNAP_STAT);
		struct mcg_kv kv;
		long long v;
		while (mcg_snap_next_kv(&p, &kv)) {
			if (!kv.key_len || stat_family_of(&kv) != f ||
			    !mcg_snap_number(kv.val, kv.val_len, &v))
				continue;
			if (!headed)
				family_head(o, fam);
			headed = true;
			sample_group(o, fam->name, s, g);
			if (f == SF_BYTES || f == SF_TOTAL || f == SF_OTHER)
				sample_label(o, "item", kv.key, kv.key_len);
			if (f == SF_THROTTLED)
				sample_end_ms(o, v);
			else
				mcg_out_printf(o, "} %lld\n", v);
		}
	}
}

/* memcg_pressure_info{group,budget_source,psi} 1, for groups with those lines. */
static void family_pressure_info(struct mcg_out *o, const struct mcg_snapshot *s)
{
	const struct family *fam = &stat_families[SF_INFO];
	bool headed = false;
	for (size_t i = 0; i < s->nr_groups; i++) {
		const struct mcg_snap_group *g = &s->groups[i];
		const char *p = mcg_snap_text(s, g, MCG_SNAP_STAT);
		struct mcg_kv kv, source = {0}, psi = {0};
		while (mcg_snap_next_kv(&p, &kv)) {
			if (kv.key_len == 22 && !memcmp(kv.key, "pressure_budget_source", 22))
				source = kv;
			if (kv.key_len == 12 && !memcmp(kv.key, "pressure_psi", 12))
				psi = kv;
		}
		if (!source.key || !psi.key)
			continue;
		if (!headed)
			family_head(o, fam);
		headed = true;
		sample_group(o, fam->name, s, g);
		sample_label(o, "budget_source", source.val, source.val_len);
		sample_label(o, "psi", psi.val, psi.val_len);
		mcg_out_puts(o, "} 1\n");
	}
}

/* ------------------------------------------------------------ cgroup.stat */

static void family_cgroup_stat(struct mcg_out *o, const struct mcg_snapshot *s,
                               const struct family *f, const char *key)
{
	family_head(o, f);
	size_t kl = strlen(key);
	for (size_t i = 0; i < s->nr_groups; i++) {
		const struct mcg_snap_group *g = &s->groups[i];
		const char *p = mcg_snap_text(s, g, MCG_SNAP_CGROUP_STAT);
		struct mcg_kv kv;
		long long v;
		while (mcg_snap_next_kv(&p, &kv)) {
			if (kv.key_len != kl || memcmp(kv.key, key, kl) ||
			    !mcg_snap_number(kv.val, kv.val_len, &v))
				continue;
			sample_group(o, f->name, s, g);
			mcg_out_printf(o, "} %lld\n", v);
		}
	}
}

/* ------------------------------------------------------------ caches */

static void sample_cache(struct mcg_out *o, const char *name, const struct mcg_slabinfo_row *r)
{
	sample_start(o, name, "cache", r->name, strlen(r->name));
}

/* Family @f: one sample per cache, the size_t at @off in its statistics. */
static void family_cache_field(struct mcg_out *o, const struct mcg_snapshot *s,
                               const struct family *f, size_t off)
{
	family_head(o, f);
	for (size_t i = 0; i < s->nr_caches; i++) {
		sample_cache(o, f->name, &s->caches[i]);
		mcg_out_printf(o, "} %zu\n",
		               *(const size_t *)((const char *)&s->caches[i].st + off));
	}
}

static void families_caches(struct mcg_out *o, const struct mcg_snapshot *s)
{
	static const struct family
	        objects = {"memcg_slab_objects", "gauge",
	                   "objects of a cache: handed out (active), free in "
	                   "per-CPU arrays (cached), slots in all slabs (total)"},
	        slabs = {"memcg_slab_slabs", "gauge",
	                 "slabs of a cache: holding objects (active), all (total)"},
	        objsize = {"memcg_slab_object_size_bytes", "gauge",
	                   "bytes per object slot (alignment and debug bytes "
	                   "included)"},
	        perslab = {"memcg_slab_objects_per_slab", "gauge", "object slots per slab"},
	        slabsize = {"memcg_slab_slab_size_bytes", "gauge", "bytes per slab"},
	        purged = {"memcg_slab_purged_bytes", "gauge",
	                  "bytes of pages inside free slots of partly used slabs given back "
	                  "to the OS and not handed out since"};
	if (!s->nr_caches)
		return;
	family_head(o, &objects);
	for (size_t i = 0; i < s->nr_caches; i++) {
		const struct mcg_slabinfo_row *r = &s->caches[i];
		static const char *const states[] = {"active", "cached", "total"};
		size_t v[] = {r->st.active_objs, r->st.cached_objs, r->st.num_objs};
		for (int k = 0; k < 3; k++) {
			sample_cache(o, objects.name, r);
			sample_label(o, "state", states[k], strlen(states[k]));
			mcg_out_printf(o, "} %zu\n", v[k]);
		}
	}
	family_head(o, &slabs);
	for (size_t i = 0; i < s->nr_caches; i++) {
		const struct mcg_slabinfo_row *r = &s->caches[i];
		sample_cache(o, slabs.name, r);
		mcg_out_printf(o, ",state=\"active\"} %zu\n", r->st.active_slabs);
		sample_cache(o, slabs.name, r);
		mcg_out_printf(o, ",state=\"total\"} %zu\n", r->st.num_slabs);
	}
	family_cache_field(o, s, &objsize, offsetof(mcg_cache_stats_t, slot_size));
	family_cache_field(o, s, &perslab, offsetof(mcg_cache_stats_t, objs_per_slab));
	family_cache_field(o, s, &slabsize, offsetof(mcg_cache_stats_t, slab_bytes));
	family_cache_field(o, s, &purged, offsetof(mcg_cache_stats_t, purged_bytes));
}

static void families_process(struct mcg_out *o, const struct mcg_snapshot *s)
{
	static const struct family
	        mapped = {"memcg_mapped_bytes", "gauge",
	                  "bytes memcg holds mapped from the OS: chunks of slabs and large "
	                  "blocks, resident or not"},
	        large = {"memcg_large_bytes", "gauge",
	                 "large blocks (above 256 KiB): handed out, each with its 64 KiB header "
	                 "(in_use); freed and kept for reuse, resident and charged to no group "
	                 "(retained); the most retained allowed now (cap)"};
	if (!s->process.have)
		return;
	family_head(o, &mapped);
	mcg_out_printf(o, "%s %zu\n", mapped.name, s->process.mapped);
	family_head(o, &large);
	mcg_out_printf(o, "%s{state=\"in_use\"} %zu\n", large.name, s->process.large.in_use);
	mcg_out_printf(o, "%s{state=\"retained\"} %zu\n", large.name, s->process.large.retained);
	mcg_out_printf(o, "%s{state=\"cap\"} %zu\n", large.name, s->process.large.cap);
}

/* ------------------------------------------------------------ all */

void mcg_prom_render(struct mcg_out *o, const struct mcg_snapshot *s)
{
	static const struct family groups = {"memcg_groups", "gauge",
	                                     "groups in the process (the root included)"},
	                           current = {"memcg_memory_current_bytes", "gauge",
	                                      "memory.current: bytes charged to the group and its "
	                                      "descendants"},
	                           peak = {"memcg_memory_peak_bytes", "gauge",
	                                   "memory.peak: the most memory.current has been"},
	                           min = {"memcg_memory_min_bytes", "gauge", "memory.min"},
	                           low = {"memcg_memory_low_bytes", "gauge", "memory.low"},
	                           high = {"memcg_memory_high_bytes", "gauge",
	                                   "memory.high (+Inf: max)"},
	                           max = {"memcg_memory_max_bytes", "gauge",
	                                  "memory.max (+Inf: max)"},
	                           events = {"memcg_memory_events_total", "counter",
	                                     "memory.events: limit events of the group and its "
	                                     "descendants"},
	                           events_local = {"memcg_memory_events_local_total", "counter",
	                                           "memory.events.local: limit events of the group "
	                                           "itself"},
	                           desc = {"memcg_cgroup_descendants", "gauge",
	                                   "cgroup.stat nr_descendants: online descendants"},
	                           dying = {"memcg_cgroup_dying_descendants", "gauge",
	                                    "cgroup.stat nr_dying_descendants: removed descendants "
	                                    "still referenced"};
	family_head(o, &groups);
	mcg_out_printf(o, "%s %zu\n", groups.name, s->nr_groups);
	family_single(o, s, &current, MCG_SNAP_CURRENT);
	family_single(o, s, &peak, MCG_SNAP_PEAK);
	family_single(o, s, &min, MCG_SNAP_MIN);
	family_single(o, s, &low, MCG_SNAP_LOW);
	family_single(o, s, &high, MCG_SNAP_HIGH);
	family_single(o, s, &max, MCG_SNAP_MAX);
	family_keyed(o, s, &events, MCG_SNAP_EVENTS, "event");
	family_keyed(o, s, &events_local, MCG_SNAP_EVENTS_LOCAL, "event");
	for (int f = 0; f < SF_INFO; f++)
		family_stat(o, s, (enum stat_family)f);
	family_pressure_info(o, s);
	family_cgroup_stat(o, s, &desc, "nr_descendants");
	family_cgroup_stat(o, s, &dying, "nr_dying_descendants");
	families_caches(o, s);
	families_process(o, s);
}
