/* SPDX-License-Identifier: MIT */
/*
 * test_table.c - examples/kvcache/{table,evict,tenant}.c in one process:
 * the keyspace's operations, expiry (lazy and active), and eviction by
 * memcg reclaim - a tenant at its memory.max loses its own least recently
 * used keys and never another tenant's, with no OOM event; referenced
 * keys get their second chance; every byte comes back at rest.
 *
 *   kvcache
 *    |- a   max 4M   (a hot set of 1M, never over its max)
 *    `- b   max 4M   (writes 40M: ten times its max)
 */
#include <stdio.h>
#include <string.h>

#include "evict.h"
#include "memcg/group.h"
#include "table.h"
#include "tenant.h"
#include "test.h"

#define MIB (1024 * 1024)

static void copy_out(void *arg, const char *val, size_t len)
{
	struct kv_buf *b = arg;
	b->len = 0;
	kv_buf_append(b, val, len);
}

static bool get_is(struct kv_table *t, const char *key, const char *want)
{
	struct kv_buf b = {0};
	bool found = kv_get(t, key, strlen(key), copy_out, &b);
	bool ok = want ? found && b.len == strlen(want) && !memcmp(b.data, want, b.len) : !found;
	kv_buf_free(&b);
	return ok;
}

static int make(struct kv_tenants *ts, const char *a, const char *b, bool one_group)
{
	struct kv_tenant_spec specs[2];
	char err[256];
	if (kv_tenant_spec_parse(a, &specs[0], err, sizeof(err)) ||
	    kv_tenant_spec_parse(b, &specs[1], err, sizeof(err)))
		return -1;
	int e = kv_tenants_create(ts, "kvtest", NULL, specs, 2, one_group, err, sizeof(err));
	if (e)
		fprintf(stderr, "kv_tenants_create: %s\n", err);
	return e;
}

static long long current(mcg_group_t *g) { return kv_group_value(g, "memory.current", NULL); }

static void set(struct kv_table *t, const char *k, const char *v)
{
	CHECK_EQ(kv_set(t, k, strlen(k), v, strlen(v), 0, 0, NULL, NULL, NULL), KV_OK);
}

static void test_operations(void)
{
	struct kv_tenants ts;
	REQUIRE(!make(&ts, "a", "b", false));
	struct kv_table *t = &ts.tenant[0]->table;
	set(t, "k", "v1");
	CHECK(get_is(t, "k", "v1"));
	CHECK(get_is(&ts.tenant[1]->table, "k", NULL)); /* another tenant's keyspace */
	bool found = false;
	CHECK_EQ(kv_set(t, "k", 1, "v2", 2, 0, KV_SET_NX, NULL, NULL, &found), KV_NOT_DONE);
	CHECK(found);
	CHECK_EQ(kv_set(t, "x", 1, "v", 1, 0, KV_SET_XX, NULL, NULL, &found), KV_NOT_DONE);
	CHECK(!found && !kv_exists(t, "x", 1));
	long long v = 0;
	CHECK_EQ(kv_incr(t, "n", 1, 41, &v), KV_OK);
	CHECK_EQ(kv_incr(t, "n", 1, 1, &v), KV_OK);
	CHECK_EQ(v, 42);
	CHECK(get_is(t, "n", "42"));
	CHECK_EQ(kv_incr(t, "k", 1, 1, &v), KV_NOT_INT);
	set(t, "big", "9223372036854775807");
	CHECK_EQ(kv_incr(t, "big", 3, 1, &v), KV_OVERFLOW);
	/* Growing past the block's room moves the value to a new entry. */
	set(t, "g", "9");
	for (int i = 0; i < 3; i++)
		CHECK_EQ(kv_incr(t, "g", 1, 1000000000000000000ll, &v), KV_OK);
	CHECK(get_is(t, "g", "3000000000000000009"));
	CHECK_EQ(kv_count(t), 4);
	CHECK(kv_del(t, "k", 1));
	CHECK(!kv_del(t, "k", 1));
	CHECK_EQ(kv_count(t), 3);
	/* Many keys: the stripes grow their buckets and find every key. */
	char key[32];
	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "key:%d", i);
		set(t, key, key);
	}
	int wrong = 0;
	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "key:%d", i);
		wrong += !get_is(t, key, key);
	}
	CHECK_EQ(wrong, 0);
	struct kv_table_stats st;
	kv_table_stats(t, &st);
	CHECK_EQ(st.keys, 20003);
	CHECK_EQ(st.evictions, 0);
	kv_flush(t);
	CHECK_EQ(kv_count(t), 0);
	mcg_group_drain_stocks();
	CHECK_EQ(current(ts.tenant[0]->group), 0);
	kv_tenants_destroy(&ts);
}

static void test_expiry(void)
{
	struct kv_tenants ts;
	REQUIRE(!make(&ts, "a", "b", false));
	struct kv_table *t = &ts.tenant[0]->table;
	int64_t now = kv_now_ms();
	CHECK_EQ(kv_set(t, "gone", 4, "v", 1, now - 1, 0, NULL, NULL, NULL), KV_OK);
	CHECK_EQ(kv_set(t, "later", 5, "v", 1, now + 100000, 0, NULL, NULL, NULL), KV_OK);
	CHECK_EQ(kv_count(t), 2); /* counted until someone looks, as DBSIZE in Redis */
	CHECK_EQ(kv_ttl(t, "gone", 4), -2);
	CHECK_EQ(kv_count(t), 1);
	int64_t ttl = kv_ttl(t, "later", 5);
	CHECK(ttl > 99000 && ttl <= 100000);
	CHECK(kv_expire(t, "later", 5, now + 50000, KV_EXP_LT));
	CHECK(!kv_expire(t, "later", 5, now + 60000, KV_EXP_LT));
	CHECK(!kv_expire(t, "later", 5, now + 60000, KV_EXP_NX));
	CHECK(kv_expire(t, "later", 5, now - 1, 0)); /* in the past: deleted */
	CHECK(!kv_exists(t, "later", 5));
	/* Active expiry finds keys nobody reads again. */
	char key[32];
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "e%d", i);
		kv_set(t, key, strlen(key), "v", 1, now - 1, 0, NULL, NULL, NULL);
	}
	CHECK_EQ(kv_expire_cycle(t, KV_STRIPES), 1000);
	struct kv_table_stats st;
	kv_table_stats(t, &st);
	CHECK_EQ(st.keys, 0);
	CHECK_EQ(st.volatile_keys, 0);
	CHECK_EQ(st.expired, 1001);
	kv_tenants_destroy(&ts);
}

static void fill(struct kv_table *t, const char *prefix, long from, long to, size_t vsize)
{
	static char val[4096];
	memset(val, 'v', sizeof(val));
	char key[48];
	long nomem = 0;
	for (long i = from; i < to; i++) {
		int n = snprintf(key, sizeof(key), "%s:%ld", prefix, i);
		nomem += kv_set(t, key, (size_t)n, val, vsize, 0, 0, NULL, NULL, NULL) != KV_OK;
	}
	CHECK_EQ(nomem, 0);
}

static long present(struct kv_table *t, const char *prefix, long from, long to)
{
	char key[48];
	long n = 0;
	for (long i = from; i < to; i++) {
		int len = snprintf(key, sizeof(key), "%s:%ld", prefix, i);
		n += kv_exists(t, key, (size_t)len);
	}
	return n;
}

/* b writes ten times its max; reclaim evicts b's keys, never a's. */
static void test_eviction_stays_in_its_tenant(void)
{
	struct kv_tenants ts;
	REQUIRE(!make(&ts, "a:max=4M", "b:max=4M", false));
	struct kv_tenant *a = ts.tenant[0], *b = ts.tenant[1];
	long hot = MIB / 512; /* 1M of 256 B values: about 1.5M charged */
	fill(&a->table, "a", 0, hot, 256);
	long b_keys = 40L * MIB / 256;
	fill(&b->table, "b", 0, b_keys, 256);
	CHECK_EQ(present(&a->table, "a", 0, hot), hot);
	struct kv_table_stats sa, sb;
	kv_table_stats(&a->table, &sa);
	kv_table_stats(&b->table, &sb);
	CHECK_EQ(sa.evictions, 0);
	CHECK(sb.evictions > b_keys / 2);
	CHECK_EQ(sb.keys + sb.evictions, b_keys);
	CHECK(present(&b->table, "b", b_keys - 100, b_keys) >= 90); /* the newest stay */
	CHECK(current(b->group) <= 4 * MIB);
	CHECK(current(b->group) > 2 * MIB); /* it uses its memory */
	CHECK_EQ(kv_group_value(b->group, "memory.events", "oom"), 0);
	CHECK_EQ(kv_group_value(a->group, "memory.events", "oom"), 0);
	CHECK_EQ(sb.failed_writes, 0);
	kv_tenants_destroy(&ts);
}

/* With one group (the benchmark's baseline) the same writes push a out. */
static void test_one_group_shares_the_lru(void)
{
	struct kv_tenants ts;
	REQUIRE(!make(&ts, "a:max=4M", "b:max=4M", true));
	struct kv_tenant *a = ts.tenant[0], *b = ts.tenant[1];
	CHECK(a->group == b->group && a->group == ts.shared);
	CHECK_EQ(kv_group_value(ts.shared, "memory.max", NULL), 8 * MIB);
	long hot = MIB / 512;
	fill(&a->table, "a", 0, hot, 256);
	fill(&b->table, "b", 0, 40L * MIB / 256, 256);
	CHECK(present(&a->table, "a", 0, hot) < hot / 10);
	kv_tenants_destroy(&ts);
}

/* A key read since reclaim last passed is rotated, not evicted. */
static void test_referenced_keys_survive(void)
{
	struct kv_tenants ts;
	REQUIRE(!make(&ts, "a:max=4M", "b", false));
	struct kv_table *t = &ts.tenant[0]->table;
	fill(t, "hot", 0, 100, 256);
	struct kv_buf buf = {0};
	char key[32];
	for (long round = 0; round < 40; round++) {
		for (int i = 0; i < 100; i++) {
			int n = snprintf(key, sizeof(key), "hot:%d", i);
			kv_get(t, key, (size_t)n, copy_out, &buf);
		}
		fill(t, "cold", round * 1024, (round + 1) * 1024, 256); /* 10M in all */
	}
	kv_buf_free(&buf);
	CHECK_EQ(present(t, "hot", 0, 100), 100);
	struct kv_table_stats st;
	kv_table_stats(t, &st);
	CHECK(st.evictions > 20000);
	kv_tenants_destroy(&ts);
}

static void test_specs(void)
{
	struct kv_tenant_spec s;
	char err[256];
	CHECK_EQ(kv_tenant_spec_parse("gold:max=256M,low=64M", &s, err, sizeof(err)), 0);
	CHECK(!strcmp(s.name, "gold") && !strcmp(s.max, "256M") && !strcmp(s.low, "64M"));
	CHECK(!s.min[0] && !s.high[0]);
	CHECK_EQ(kv_tenant_spec_parse("plain", &s, err, sizeof(err)), 0);
	CHECK(!strcmp(s.name, "plain") && !s.max[0]);
	CHECK(kv_tenant_spec_parse(":max=1M", &s, err, sizeof(err)) < 0);
	CHECK(kv_tenant_spec_parse("a/b", &s, err, sizeof(err)) < 0);
	CHECK(kv_tenant_spec_parse("a:max=lots", &s, err, sizeof(err)) < 0);
	CHECK(kv_tenant_spec_parse("a:swap=1M", &s, err, sizeof(err)) < 0);
	CHECK(strstr(err, "unknown setting 'swap'") != NULL);
	long long b;
	CHECK(kv_parse_size("64M", &b) && b == 64ll << 20);
	CHECK(kv_parse_size("max", &b) && b == -1);
	CHECK(!kv_parse_size("-1", &b) && !kv_parse_size("1Q", &b) && !kv_parse_size("", &b));
	/* Sixteen databases by default, none limited. */
	struct kv_tenants ts;
	REQUIRE(!kv_tenants_create(&ts, "kvtest", "64M", NULL, 0, false, err, sizeof(err)));
	CHECK_EQ(ts.count, 16);
	CHECK(!strcmp(ts.tenant[15]->name, "db15"));
	CHECK(kv_tenant_by_index(&ts, 16) == NULL && kv_tenant_by_index(&ts, -1) == NULL);
	CHECK(kv_tenant_by_name(&ts, "db3", 3) == ts.tenant[3]);
	CHECK_EQ(kv_group_value(ts.tenant[0]->group, "memory.max", NULL), -1);
	CHECK_EQ(kv_group_value(ts.parent, "memory.max", NULL), 64 << 20);
	kv_tenants_destroy(&ts);
}

int main(void)
{
	kv_hash_seed(1, 2);
	RUN(test_specs);
	RUN(test_operations);
	RUN(test_expiry);
	RUN(test_eviction_stays_in_its_tenant);
	RUN(test_one_group_shares_the_lru);
	RUN(test_referenced_keys_survive);
	return test_done();
}
