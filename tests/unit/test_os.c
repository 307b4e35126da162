/* SPDX-License-Identifier: MIT */
/*
 * test_os.c - topology (os/os.c) and fake NUMA: with MCG_NUMA_NODES=4 set
 * before the library initialises, mcg_nr_nodes() is 4, allocation works, and
 * an object freed on a CPU of another node goes back to its own node's slab.
 * The fake-NUMA part runs in a re-executed copy of this binary.
 */
#include <sched.h>
#include <unistd.h>

#include "memcg/debug.h"
#include "memcg/slab.h"
#include "os/os.h"
#include "slab/slab.h"
#include "test.h"

static void pin(int cpu)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	CHECK_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
}

static void test_topology(void)
{
	unsigned ncpu = mcg_nr_cpus();
	CHECK(ncpu >= 1 && ncpu <= MCG_MAX_CPUS);
	CHECK(ncpu >= (unsigned)sysconf(_SC_NPROCESSORS_ONLN));
	CHECK(mcg_nr_nodes() >= 1);
	for (unsigned c = 0; c < ncpu; c++)
		CHECK(mcg_cpu_node(c) < mcg_nr_nodes());
	CHECK_EQ(mcg_cpu_node(ncpu + 5), 0);
	CHECK(mcg_os_rss_bytes() > 0);
	size_t m = mcg_os_mapped();
	void *p = mcg_os_map(1 << 20, 1 << 21);
	REQUIRE(p);
	CHECK_EQ((uintptr_t)p % (1 << 21), 0);
	CHECK_EQ(mcg_os_mapped(), m + (1 << 20));
	memset(p, 1, 1 << 20);
	mcg_os_decommit(p, 1 << 20);
	CHECK_EQ(((char *)p)[4096], 0);
	mcg_os_unmap(p, 1 << 20);
	CHECK_EQ(mcg_os_mapped(), m);
	CHECK(mcg_os_now_ns() > 0);
}

static void test_fake_numa(void)
{
	CHECK_EQ(mcg_nr_nodes(), 4);
	mcg_cache_t *c = mcg_cache_create("numa", 128, 0, 0, NULL);
	REQUIRE(c);
	CHECK_EQ(c->nr_nodes, 4);
	cpu_set_t allowed;
	sched_getaffinity(0, sizeof(allowed), &allowed);
	int a = -1, b = -1;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed))
			continue;
		if (a < 0)
			a = cpu;
		else if (b < 0 && mcg_cpu_node((unsigned)cpu) != mcg_cpu_node((unsigned)a))
			b = cpu;
	}
	enum { N = 3000 };
	static void *objs[N];
	pin(a);
	unsigned na = mcg_cpu_node((unsigned)a);
	for (int i = 0; i < N; i++) {
		objs[i] = mcg_cache_alloc(c);
		REQUIRE(objs[i]);
		memset(objs[i], 7, 128);
		CHECK_EQ(mcg_slab_of(objs[i])->node, na);
	}
	mcg_lock(&c->nodes[na].lock);
	CHECK(mcg_node_objects_out(c, na) >= N);
	mcg_unlock(&c->nodes[na].lock);
	if (b < 0) {
		fprintf(stderr, "one node among the allowed CPUs: cross-node free not tested\n");
	} else {
		unsigned nb = mcg_cpu_node((unsigned)b);
		pin(b);
		for (int i = 0; i < N; i++)
			mcg_cache_free(c, objs[i]);
		mcg_cache_shrink(c);
		/* Back to node @na's slabs; node @nb never had any. */
		mcg_lock(&c->nodes[na].lock);
		CHECK_EQ(mcg_node_objects_out(c, na), 0);
		mcg_unlock(&c->nodes[na].lock);
		CHECK_EQ(c->nodes[nb].nr_partial + c->nodes[nb].nr_full + c->nodes[nb].nr_empty, 0);
		/* Allocating on @nb now takes slabs of @nb. */
		void *o = mcg_cache_alloc(c);
		CHECK_EQ(mcg_slab_of(o)->node, nb);
		mcg_cache_free(c, o);
		for (int i = 0; i < N; i++)
			objs[i] = NULL;
	}
	for (int i = 0; i < N; i++)
		mcg_cache_free(c, objs[i]);
	mcg_cache_stats_t st;
	mcg_cache_stats(c, &st);
	CHECK_EQ(st.active_objs, 0);
	mcg_cache_shrink(c);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	sched_setaffinity(0, sizeof(allowed), &allowed);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (getenv("MCG_TEST_FAKE_NUMA")) {
		RUN(test_fake_numa);
		return test_done();
	}
	RUN(test_topology);
	int rc = test_done();
	fprintf(stderr, "--- again with MCG_NUMA_NODES=4\n");
	return test_merge(rc, test_rerun(argv, "MCG_NUMA_NODES", "4", "MCG_TEST_FAKE_NUMA"));
}
