/* SPDX-License-Identifier: MIT */
/*
 * test_table_mt.c - the kvcache table from four threads at once while
 * reclaim evicts (the tenants sit at their memory.max, so every thread's
 * allocations run the shrinker, whose isolate callback tries the stripes
 * the other threads hold), with active expiry and INFO-style stats
 * readers running beside.  TSan checks the locking.
 *
 *   kvtest
 *    |- a  max 2M   random SET/GET/DEL/EXPIRE over 20 000 keys
 *    |- b  max 2M   the same
 *    `- c           INCR of one counter by every thread: exact at the end
 *
 * Afterwards: the counter is exact, every tenant's key count equals the
 * keys that answer EXISTS, a and b stayed under their max with no OOM,
 * and once everything is freed every group is back at 0 bytes.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "memcg/group.h"
#include "table.h"
#include "tenant.h"
#include "test.h"

#define THREADS 4
#define OPS 20000
#define KEYS 20000

static struct kv_tenants ts;
static int stop_readers;

static void sink(void *arg, const char *val, size_t len)
{
	(void)arg;
	(void)val;
	(void)len;
}

static void *worker(void *arg)
{
	unsigned long long x = 0x9E3779B97F4A7C15ull * ((unsigned long long)(long)arg + 1);
	char key[32], val[300];
	memset(val, 'v', sizeof(val));
	for (int i = 0; i < OPS; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		struct kv_table *t = &ts.tenant[x & 1]->table;
		int n = snprintf(key, sizeof(key), "k%llu", (x >> 8) % KEYS);
		switch ((x >> 40) % 8) {
		case 0: kv_del(t, key, (size_t)n); break;
		case 1: kv_expire(t, key, (size_t)n, kv_now_ms() + 100000, 0); break;
		case 2:
		case 3: kv_get(t, key, (size_t)n, sink, NULL); break;
		default:
			kv_set(t, key, (size_t)n, val, 64 + (x >> 20) % 236, 0, 0, NULL, NULL,
			       NULL);
		}
		long long v;
		kv_incr(&ts.tenant[2]->table, "counter", 7, 1, &v);
	}
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop_readers, __ATOMIC_RELAXED)) {
		struct kv_buf b = {0};
		kv_tenants_info(&ts, &b);
		kv_buf_free(&b);
		for (int i = 0; i < 2; i++)
			kv_expire_cycle(&ts.tenant[i]->table, 8);
	}
	return NULL;
}

static long count_present(struct kv_table *t)
{
	char key[32];
	long n = 0;
	for (int i = 0; i < KEYS; i++)
		n += kv_exists(t, key, (size_t)snprintf(key, sizeof(key), "k%d", i));
	return n;
}

static void test_threads_under_reclaim(void)
{
	struct kv_tenant_spec specs[3];
	char err[256];
	REQUIRE(!kv_tenant_spec_parse("a:max=2M", &specs[0], err, sizeof(err)));
	REQUIRE(!kv_tenant_spec_parse("b:max=2M", &specs[1], err, sizeof(err)));
	REQUIRE(!kv_tenant_spec_parse("c", &specs[2], err, sizeof(err)));
	REQUIRE(!kv_tenants_create(&ts, "kvtest", NULL, specs, 3, false, err, sizeof(err)));
	pthread_t w[THREADS], r;
	pthread_create(&r, NULL, reader, NULL);
	for (long i = 0; i < THREADS; i++)
		pthread_create(&w[i], NULL, worker, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(w[i], NULL);
	__atomic_store_n(&stop_readers, 1, __ATOMIC_RELAXED);
	pthread_join(r, NULL);

	long long counter = 0;
	CHECK_EQ(kv_incr(&ts.tenant[2]->table, "counter", 7, 0, &counter), KV_OK);
	CHECK_EQ(counter, THREADS * OPS);
	long evicted = 0;
	for (int i = 0; i < 2; i++) {
		struct kv_tenant *t = ts.tenant[i];
		struct kv_table_stats st;
		kv_table_stats(&t->table, &st);
		CHECK_EQ(st.keys, count_present(&t->table));
		CHECK_EQ(st.failed_writes, 0);
		evicted += st.evictions;
		CHECK(kv_group_value(t->group, "memory.peak", NULL) <= 2 << 20);
		CHECK_EQ(kv_group_value(t->group, "memory.events", "oom"), 0);
	}
	CHECK(evicted > 1000); /* reclaim did run */
	for (int i = 0; i < 3; i++)
		kv_flush(&ts.tenant[i]->table);
	mcg_group_drain_stocks();
	CHECK_EQ(kv_group_value(ts.parent, "memory.current", NULL), 0);
	kv_tenants_destroy(&ts);
}

int main(void)
{
	RUN(test_threads_under_reclaim);
	return test_done();
}
