/* SPDX-License-Identifier: MIT */
/*
 * test_os.c - topology (os/os.c) and fake NUMA: with MCG_NUMA_NODES=4 set
 * before the library initialises, mcg_nr_nodes() is 4, allocation works, and
 * an object freed on a CPU of another node goes back to its own node's slab.
 * The fake-NUMA part runs in a re-executed copy of this binary.  The
 * sysfs topology is also read from fake trees (cpulists with ranges and
 * commas, garbage, missing files, more CPUs and nodes than memcg keeps),
 * and mcg_os_map's alignments.
 */
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
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

static char fake_root[64];

/* Write @text to @path below the fake root, making its directories. */
static void put(const char *path, const char *text)
{
	char full[256];
	snprintf(full, sizeof(full), "%s/%s", fake_root, path);
	for (char *p = full + strlen(fake_root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(full, 0700);
		*p = '/';
	}
	FILE *f = fopen(full, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_topology_from_sysfs(void)
{
	snprintf(fake_root, sizeof(fake_root), "/tmp/memcg-test-os-%d", (int)getpid());
	mkdir(fake_root, 0700);
	struct mcg_os_topology t;

	/* nothing there: the online CPUs, one node */
	mcg_os_topology_read(fake_root, &t);
	CHECK_EQ(t.nr_cpus, (unsigned)sysconf(_SC_NPROCESSORS_ONLN));
	CHECK_EQ(t.nr_nodes, 1);

	/* ranges and commas; node 1 without a cpulist; node 2 with CPUs 4-5,8 */
	put("sys/devices/system/cpu/possible", "0-3,4,5-8\n");
	put("sys/devices/system/node/possible", "0-2\n");
	put("sys/devices/system/node/node0/cpulist", "0-3\n");
	put("sys/devices/system/node/node2/cpulist", "4-5,8\n");
	mcg_os_topology_read(fake_root, &t);
	CHECK_EQ(t.nr_cpus, 9);
	CHECK_EQ(t.nr_nodes, 3);
	CHECK_EQ(t.cpu_node[3], 0);
	CHECK_EQ(t.cpu_node[4], 2);
	CHECK_EQ(t.cpu_node[8], 2);
	CHECK_EQ(t.cpu_node[6], 0); /* in no list */

	/* garbage: no CPUs read (the online ones), nodes stop at the garbage */
	put("sys/devices/system/cpu/possible", "x0-3\n");
	put("sys/devices/system/node/possible", "0,q\n");
	mcg_os_topology_read(fake_root, &t);
	CHECK_EQ(t.nr_cpus, (unsigned)sysconf(_SC_NPROCESSORS_ONLN));
	CHECK_EQ(t.nr_nodes, 1);

	/* more than memcg keeps: clamped */
	char many[64];
	snprintf(many, sizeof(many), "0-%u\n", MCG_MAX_CPUS + 100);
	put("sys/devices/system/cpu/possible", many);
	snprintf(many, sizeof(many), "0-%u\n", MCG_MAX_NODES + 3);
	put("sys/devices/system/node/possible", many);
	mcg_os_topology_read(fake_root, &t);
	CHECK_EQ(t.nr_cpus, MCG_MAX_CPUS);
	CHECK_EQ(t.nr_nodes, 3); /* the highest node with a cpulist */

	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", fake_root);
	CHECK_EQ(system(cmd), 0);
}

/* Odd sysfs text: no newline at the end, CPUs out of order, a range with
 * no end (no CPUs), a node whose cpulist cannot be read (a directory). */
static void test_topology_odd_files(void)
{
	snprintf(fake_root, sizeof(fake_root), "/tmp/memcg-test-os-%d", (int)getpid());
	mkdir(fake_root, 0700);
	put("sys/devices/system/cpu/possible", "3,1,5-");
	put("sys/devices/system/node/possible", "0-1");
	put("sys/devices/system/node/node0/cpulist", "2,0-1");
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/sys/devices/system/node/node1", fake_root);
	mkdir(dir, 0700);
	snprintf(dir, sizeof(dir), "%s/sys/devices/system/node/node1/cpulist", fake_root);
	REQUIRE(mkdir(dir, 0700) == 0);
	struct mcg_os_topology t;
	mcg_os_topology_read(fake_root, &t);
	CHECK_EQ(t.nr_cpus, 4);
	CHECK_EQ(t.nr_nodes, 1); /* node 1 unreadable */
	CHECK_EQ(t.cpu_node[2], 0);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", fake_root);
	CHECK_EQ(system(cmd), 0);
}

static void test_map_alignments(void)
{
	size_t m = mcg_os_mapped();
	void *p = mcg_os_map(8192, 0); /* below a page: page aligned */
	REQUIRE(p);
	CHECK_EQ((uintptr_t)p % 4096, 0);
	CHECK_EQ(mcg_os_mapped(), m + 8192);
	mcg_os_unmap(p, 8192);
	mcg_os_unmap(NULL, 8192); /* nothing */
	CHECK_EQ(mcg_os_mapped(), m);
	mcg_os_bind(NULL, 4096, 0); /* one real node: nothing to do */
	mcg_os_bind(NULL, 4096, 63);
}

/* Digits ended by a character past '9' (a list that stops there) and a
 * list that opens with one below '0' (nothing read: the online CPUs). */
static void test_topology_cpulist_stops(void)
{
	snprintf(fake_root, sizeof(fake_root), "/tmp/memcg-test-os-%d", (int)getpid());
	mkdir(fake_root, 0700);
	struct mcg_os_topology t;
	put("sys/devices/system/cpu/possible", "0-2a,7\n");
	mcg_os_topology_read(fake_root, &t);
	CHECK_EQ(t.nr_cpus, 3);
	put("sys/devices/system/cpu/possible", "5:,9\n");
	mcg_os_topology_read(fake_root, &t);
	CHECK_EQ(t.nr_cpus, 6);
	put("sys/devices/system/cpu/possible", " 0-3\n");
	mcg_os_topology_read(fake_root, &t);
	CHECK_EQ(t.nr_cpus, (unsigned)sysconf(_SC_NPROCESSORS_ONLN));
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", fake_root);
	CHECK_EQ(system(cmd), 0);
}

/*
 * mcg_os_remap: the same size returns the block as it is; growing a block
 * whose next page is taken moves it (page aligned, its bytes kept, the
 * mapped count up by the growth); with the address space limited
 * (RLIMIT_AS) a new mapping and a move both fail with NULL and the count
 * unchanged, the block still there.
 */
static void test_remap_moves_and_fails(void)
{
	size_t page = 4096, m = mcg_os_mapped();
	char *a = mcg_os_map(2 * page, 0);
	REQUIRE(a);
	memset(a, 0x5a, 2 * page);
	/* Take the page after the block so that it cannot grow in place. */
	void *next = mmap(a + 2 * page, page, PROT_READ,
	                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (next != a + 2 * page) { /* taken already: as good for the test */
		if (next != MAP_FAILED)
			munmap(next, page);
		next = NULL;
	}
	CHECK(mcg_os_remap(a, 2 * page, 2 * page, 0) == a);
	CHECK_EQ(mcg_os_mapped(), m + 2 * page);
	char *b = mcg_os_remap(a, 2 * page, 4 * page, 0);
	REQUIRE(b);
	CHECK(b != a);
	CHECK_EQ((uintptr_t)b % page, 0);
	CHECK_EQ(mcg_os_mapped(), m + 4 * page);
	CHECK(b[0] == 0x5a && b[2 * page - 1] == 0x5a && b[2 * page] == 0);
	/* Limited: room for nothing more. */
	struct rlimit saved;
	REQUIRE(getrlimit(RLIMIT_AS, &saved) == 0);
	char buf[128];
	FILE *f = fopen("/proc/self/statm", "r");
	REQUIRE(f);
	REQUIRE(fgets(buf, sizeof(buf), f));
	fclose(f);
	unsigned long long vm_pages = strtoull(buf, NULL, 10);
	struct rlimit tight = {vm_pages * page + (1 << 20), saved.rlim_max};
	if (saved.rlim_cur != RLIM_INFINITY && saved.rlim_cur < tight.rlim_cur)
		tight.rlim_cur = saved.rlim_cur;
	REQUIRE(setrlimit(RLIMIT_AS, &tight) == 0);
	void *big = mcg_os_map(64ul << 20, 0);
	void *moved = mcg_os_remap(b, 4 * page, 64ul << 20, 0);
	setrlimit(RLIMIT_AS, &saved);
	CHECK(big == NULL);
	CHECK(moved == NULL);
	CHECK_EQ(mcg_os_mapped(), m + 4 * page);
	CHECK(b[0] == 0x5a && b[2 * page - 1] == 0x5a);
	if (big)
		mcg_os_unmap(big, 64ul << 20);
	mcg_os_unmap(moved ? moved : b, moved ? 64ul << 20 : 4 * page);
	if (next)
		munmap(next, page);
	CHECK_EQ(mcg_os_mapped(), m);
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
	RUN(test_topology_from_sysfs);
	RUN(test_topology_odd_files);
	RUN(test_map_alignments);
	RUN(test_topology_cpulist_stops);
	RUN(test_remap_moves_and_fails);
	int rc = test_done();
	fprintf(stderr, "--- again with MCG_NUMA_NODES=4\n");
	return test_merge(rc, test_rerun(argv, "MCG_NUMA_NODES", "4", "MCG_TEST_FAKE_NUMA"));
}
