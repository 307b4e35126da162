/* SPDX-License-Identifier: MIT */
/*
 * tenant.h - tenants: each a memcg group with its own limits and its own
 * keyspace (table.h), numbered like Redis databases.
 *
 *   kvcache                the parent group (--maxmemory: its memory.max)
 *    |- gold               --tenant gold:max=256M,low=64M   (SELECT 0 / AUTH gold)
 *    `- bronze             --tenant bronze:max=64M          (SELECT 1 / AUTH bronze)
 *
 * Without --tenant there are 16 tenants "db0".."db15" without limits, so
 * the server behaves as Redis with its 16 databases.  With --one-group
 * every tenant's keys are charged to one group "all" (its limits the sums
 * of the tenants') on one LRU: the baseline the benchmark compares with.
 *
 * The set of tenants is fixed once the server starts: lookups take no lock.
 */
#ifndef KV_TENANT_H
#define KV_TENANT_H

#include <stdbool.h>
#include <stddef.h>

#include "memcg/group.h"
#include "resp.h"
#include "table.h"

/** Most tenants (databases). */
#define KV_TENANTS_MAX 256
/** Tenants without --tenant: Redis's 16 databases. */
#define KV_DEFAULT_DBS 16

/** A tenant as the command line gives it: "NAME[:key=value,...]". */
struct kv_tenant_spec {
	char name[MCG_GROUP_NAME_MAX + 1];
	/* memory.min, low, high, max as written ("" when not given) */
	char min[24], low[24], high[24], max[24];
};

/**
 * kv_tenant_spec_parse - parse "NAME:max=256M,low=64M" (keys min, low,
 * high, max; sizes with K/M/G/T, or "max").  Return: 0, or -EINVAL with
 * a message in @err.
 */
int kv_tenant_spec_parse(const char *text, struct kv_tenant_spec *out, char *err, size_t errlen);

/** kv_parse_size - "64M" -> bytes (powers of 1024); "max" -> -1.  Return false if malformed. */
bool kv_parse_size(const char *s, long long *out);

struct kv_tenant {
	char name[MCG_GROUP_NAME_MAX + 1];
	int index;          /* its database number */
	mcg_group_t *group; /* where its keys are charged (its own, or the shared one) */
	struct kv_table table;
};

struct kv_tenants {
	int count;
	struct kv_tenant *tenant[KV_TENANTS_MAX];
	mcg_group_t *parent; /* every tenant's group is below it */
	mcg_group_t *shared; /* --one-group: the one group, else NULL */
	struct kv_evict *evict;
};

/**
 * kv_tenants_create - the parent group (@parent_name, with memory.max
 * @maxmemory unless NULL), one group and table per spec (@n 0: the 16
 * default databases), or with @one_group a single group for all.
 * Return: 0, or -errno with a message in @err (nothing left behind).
 * Pair with kv_tenants_destroy().
 */
int kv_tenants_create(struct kv_tenants *ts, const char *parent_name, const char *maxmemory,
                      const struct kv_tenant_spec *specs, int n, bool one_group, char *err,
                      size_t errlen);

/** kv_tenants_destroy - free every key, remove the groups. */
void kv_tenants_destroy(struct kv_tenants *ts);

/** kv_tenant_by_name - the tenant called @name[0, @len), or NULL. */
struct kv_tenant *kv_tenant_by_name(struct kv_tenants *ts, const char *name, size_t len);

/** kv_tenant_by_index - tenant (database) @i, or NULL when out of range. */
struct kv_tenant *kv_tenant_by_index(struct kv_tenants *ts, long long i);

/** kv_group_value - the number in @g's @file (bytes); "max" -> -1; @key: a keyed file's line. */
long long kv_group_value(mcg_group_t *g, const char *file, const char *key);

/** kv_tenants_info - INFO's "tenants" section body, one line per tenant. */
void kv_tenants_info(struct kv_tenants *ts, struct kv_buf *out);

#endif /* KV_TENANT_H */
