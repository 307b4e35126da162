/* SPDX-License-Identifier: MIT */
/*
 * tenant.c - tenants and their groups (see tenant.h).
 */
#include "tenant.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evict.h"

/* ------------------------------------------------------------ specs */

bool kv_parse_size(const char *s, long long *out)
{
	if (!strcmp(s, "max")) {
		*out = -1;
		return true;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s || errno || *s == '-')
		return false;
	int shift = 0;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	case 't':
	case 'T':
		shift = 40;
		end++;
		break;
	}
	if (*end || v > (unsigned long long)(1ll << 62) >> shift)
		return false;
	*out = (long long)(v << shift);
	return true;
}

int kv_tenant_spec_parse(const char *text, struct kv_tenant_spec *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	const char *colon = strchr(text, ':');
	size_t nlen = colon ? (size_t)(colon - text) : strlen(text);
	if (nlen == 0 || nlen > MCG_GROUP_NAME_MAX) {
		snprintf(err, errlen, "tenant '%s': a name of 1..%d characters first", text,
		         MCG_GROUP_NAME_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < nlen; i++) {
		char c = text[i];
		if (!(c == '-' || c == '_' || c == '.' || (c >= '0' && c <= '9') ||
		      (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
			snprintf(err, errlen, "tenant '%s': names take letters, digits, - _ .",
			         text);
			return -EINVAL;
		}
	}
	memcpy(out->name, text, nlen);
	for (const char *p = colon ? colon + 1 : NULL; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char item[64];
		if (len >= sizeof(item)) {
			snprintf(err, errlen, "tenant '%s': setting too long", text);
			return -EINVAL;
		}
		memcpy(item, p, len);
		item[len] = '\0';
		char *eq = strchr(item, '=');
		long long bytes;
		if (!eq || !kv_parse_size(eq + 1, &bytes)) {
			snprintf(err, errlen, "tenant '%s': '%s' is not key=SIZE", text, item);
			return -EINVAL;
		}
		*eq = '\0';
		char *dst = !strcmp(item, "min")    ? out->min
		            : !strcmp(item, "low")  ? out->low
		            : !strcmp(item, "high") ? out->high
		            : !strcmp(item, "max")  ? out->max
		                                    : NULL;
		if (!dst) {
			snprintf(err, errlen,
			         "tenant '%s': unknown setting '%s' (min, low, high, max)", text,
			         item);
			return -EINVAL;
		}
		snprintf(dst, sizeof(out->max), "%s", eq + 1);
		p = comma ? comma + 1 : NULL;
	}
	return 0;
}

/* ------------------------------------------------------------ groups */

long long kv_group_value(mcg_group_t *g, const char *file, const char *key)
{
	char buf[4096];
	ssize_t n = mcg_group_read(g, file, buf, sizeof(buf));
	if (n <= 0 || (size_t)n >= sizeof(buf))
		return 0;
	const char *p = buf;
	if (key) {
		size_t kl = strlen(key);
		for (p = buf; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
			if (!strncmp(p, key, kl) && p[kl] == ' ')
				break;
		if (!p)
			return 0;
		p += kl + 1;
	}
	return strncmp(p, "max", 3) ? atoll(p) : -1;
}

static const char *const knobs[4] = {"memory.min", "memory.low", "memory.high", "memory.max"};

static const char *spec_knob(const struct kv_tenant_spec *s, int k)
{
	const char *v[4] = {s->min, s->low, s->high, s->max};
	return v[k];
}

static int apply_limits(mcg_group_t *g, const struct kv_tenant_spec *s, char *err, size_t errlen)
{
	for (int k = 0; k < 4; k++) {
		const char *v = spec_knob(s, k);
		if (!*v)
			continue;
		int e = mcg_group_write(g, knobs[k], v);
		if (e) {
			snprintf(err, errlen, "%s: %s = %s: %s", s->name, knobs[k], v,
			         strerror(-e));
			return e;
		}
	}
	return 0;
}

/* --one-group: the sums of the tenants' settings (a tenant without a max
   makes the sum unlimited; the others count what is given). */
static void sum_specs(const struct kv_tenant_spec *specs, int n, struct kv_tenant_spec *sum)
{
	memset(sum, 0, sizeof(*sum));
	snprintf(sum->name, sizeof(sum->name), "all");
	for (int k = 0; k < 4; k++) {
		long long total = 0;
		bool any = false, unlimited = false;
		for (int i = 0; i < n; i++) {
			long long b;
			const char *v = spec_knob(&specs[i], k);
			if (*v && kv_parse_size(v, &b) && b >= 0) {
				total += b;
				any = true;
			} else if (k == 3) {
				unlimited = true;
			}
		}
		char *dst = k == 0 ? sum->min : k == 1 ? sum->low : k == 2 ? sum->high : sum->max;
		if (any && !(k == 3 && unlimited))
			snprintf(dst, sizeof(sum->max), "%lld", total);
	}
}

static int add_tenant(struct kv_tenants *ts, const char *name, mcg_group_t *g)
{
	struct kv_tenant *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	memcpy(t->name, name, strnlen(name, sizeof(t->name) - 1)); /* calloc: NUL-ended */
	t->index = ts->count;
	t->group = g;
	mcg_group_get(g);
	kv_table_init(&t->table, g, ts->evict);
	ts->tenant[ts->count++] = t;
	return 0;
}

int kv_tenants_create(struct kv_tenants *ts, const char *parent_name, const char *maxmemory,
                      const struct kv_tenant_spec *specs, int n, bool one_group, char *err,
                      size_t errlen)
{
	memset(ts, 0, sizeof(*ts));
	if (errlen)
		err[0] = '\0';
	struct kv_tenant_spec defaults[KV_DEFAULT_DBS];
	if (n == 0) {
		memset(defaults, 0, sizeof(defaults));
		for (int i = 0; i < KV_DEFAULT_DBS; i++)
			snprintf(defaults[i].name, sizeof(defaults[i].name), "db%d", i);
		specs = defaults;
		n = KV_DEFAULT_DBS;
	}
	if (n > KV_TENANTS_MAX) {
		snprintf(err, errlen, "at most %d tenants", KV_TENANTS_MAX);
		return -EINVAL;
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			if (!strcmp(specs[i].name, specs[j].name)) {
				snprintf(err, errlen, "tenant '%s' given twice", specs[i].name);
				return -EINVAL;
			}
	int e = kv_evict_create(&ts->evict);
	if (e) {
		snprintf(err, errlen, "list_lru/shrinker: %s", strerror(-e));
		return e;
	}
	e = mcg_group_create(NULL, parent_name, &ts->parent);
	if (e) {
		snprintf(err, errlen, "group %s: %s", parent_name, strerror(-e));
		goto fail;
	}
	if (maxmemory && (e = mcg_group_write(ts->parent, "memory.max", maxmemory))) {
		snprintf(err, errlen, "--maxmemory %s: %s", maxmemory, strerror(-e));
		goto fail;
	}
	if (one_group) {
		struct kv_tenant_spec sum;
		sum_specs(specs, n, &sum);
		if ((e = mcg_group_create(ts->parent, "all", &ts->shared)) ||
		    (e = apply_limits(ts->shared, &sum, err, errlen)))
			goto fail;
	}
	for (int i = 0; i < n; i++) {
		mcg_group_t *g = ts->shared;
		if (!one_group) {
			if ((e = mcg_group_create(ts->parent, specs[i].name, &g))) {
				snprintf(err, errlen, "group %s: %s", specs[i].name, strerror(-e));
				goto fail;
			}
			e = apply_limits(g, &specs[i], err, errlen);
		}
		if (!e)
			e = add_tenant(ts, specs[i].name, g);
		if (!one_group)
			mcg_group_put(g); /* the tenant (and the tree) hold it */
		if (e) {
			if (!one_group)
				mcg_group_remove(g);
			goto fail;
		}
	}
	return 0;
fail:
	if (!*err)
		snprintf(err, errlen, "%s", strerror(-e));
	kv_tenants_destroy(ts);
	return e;
}

void kv_tenants_destroy(struct kv_tenants *ts)
{
	if (ts->evict)
		kv_evict_stop(ts->evict);
	for (int i = 0; i < ts->count; i++) {
		struct kv_tenant *t = ts->tenant[i];
		kv_table_destroy(&t->table);
		if (t->group != ts->shared)
			mcg_group_remove(t->group);
		mcg_group_put(t->group);
		free(t);
	}
	ts->count = 0;
	if (ts->shared) {
		mcg_group_remove(ts->shared);
		mcg_group_put(ts->shared);
	}
	if (ts->parent) {
		mcg_group_remove(ts->parent);
		mcg_group_put(ts->parent);
	}
	kv_evict_destroy(ts->evict);
	memset(ts, 0, sizeof(*ts));
}

struct kv_tenant *kv_tenant_by_name(struct kv_tenants *ts, const char *name, size_t len)
{
	for (int i = 0; i < ts->count; i++)
		if (strlen(ts->tenant[i]->name) == len && !memcmp(ts->tenant[i]->name, name, len))
			return ts->tenant[i];
	return NULL;
}

struct kv_tenant *kv_tenant_by_index(struct kv_tenants *ts, long long i)
{
	return i >= 0 && i < ts->count ? ts->tenant[i] : NULL;
}

/* ------------------------------------------------------------ INFO */

static void info_value(char *buf, size_t len, long long v)
{
	if (v < 0)
		snprintf(buf, len, "max");
	else
		snprintf(buf, len, "%lld", v);
}

void kv_tenants_info(struct kv_tenants *ts, struct kv_buf *out)
{
	for (int i = 0; i < ts->count; i++) {
		struct kv_tenant *t = ts->tenant[i];
		struct kv_table_stats st;
		kv_table_stats(&t->table, &st);
		long reads = st.hits + st.misses;
		char max[24], low[24], line[512];
		info_value(max, sizeof(max), kv_group_value(t->group, "memory.max", NULL));
		info_value(low, sizeof(low), kv_group_value(t->group, "memory.low", NULL));
		int n = snprintf(
		        line, sizeof(line),
		        "tenant_%s:db=%d,keys=%ld,memory_current=%lld,memory_peak=%lld,memory_max=%"
		        "s,"
		        "memory_low=%s,evicted_keys=%ld,expired_keys=%ld,keyspace_hits=%ld,"
		        "keyspace_misses=%ld,hit_ratio=%.4f,oom_events=%lld,"
		        "failed_writes=%ld\r\n",
		        t->name, t->index, st.keys,
		        kv_group_value(t->group, "memory.current", NULL),
		        kv_group_value(t->group, "memory.peak", NULL), max, low, st.evictions,
		        st.expired, st.hits, st.misses,
		        reads ? (double)st.hits / (double)reads : 0.0,
		        kv_group_value(t->group, "memory.events", "oom"), st.failed_writes);
		kv_buf_append(out, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	}
}
