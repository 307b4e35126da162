/* SPDX-License-Identifier: MIT */
/*
 * os/os.c - mappings, topology and time (see os.h).
 *
 * Topology is read once from /sys/devices/system/{cpu/possible,node/node*}
 * with open/read (no heap: this runs inside the malloc shim's first call).
 */
#include "base/mm_const.h"
#include "os/os.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/compiler.h"
#include "base/fault.h"
#include "base/options.h"
#include "memcg/debug.h"

#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h> /* client requests: a few no-op instructions natively */
#else
#define VALGRIND_MAKE_MEM_DEFINED(addr, len) ((void)0)
#endif

static size_t os_mapped_bytes;
static unsigned os_nr_cpus = 1, os_nr_nodes = 1, os_real_nodes = 1;
static uint8_t os_cpu_node[MCG_MAX_CPUS];

void *mcg_os_map(size_t size, size_t align)
{
	if (mcg_fault_should_fail())
		return NULL;
	size_t page = MCG_PAGE_SIZE;
	if (align < page)
		align = page;
	size_t len = size + (align > page ? align : 0);
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (align > page) {
		uintptr_t a = MCG_ALIGN_UP((uintptr_t)p, align);
		size_t head = a - (uintptr_t)p;
		size_t tail = len - head - size; /* align - head: at least a page */
		if (head)
			munmap(p, head);
		munmap((char *)a + size, tail);
		p = (char *)a;
	}
	__atomic_add_fetch(&os_mapped_bytes, size, __ATOMIC_RELAXED);
	return p;
}

/* @size bytes of address space aligned to @align, reserved (no access) for a
 * mapping to be moved onto; NULL if none. */
static void *reserve_aligned(size_t size, size_t align)
{
	size_t len = size + align;
	char *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uintptr_t a = MCG_ALIGN_UP((uintptr_t)p, align);
	size_t head = a - (uintptr_t)p, tail = len - head - size; /* tail: at least a page */
	if (head)
		munmap(p, head);
	munmap((char *)a + size, tail);
	return (void *)a;
}

void *mcg_os_remap(void *addr, size_t old, size_t new, size_t align)
{
	if (new <= old) {
		if (new < old) {
			munmap((char *)addr + new, old - new);
			__atomic_sub_fetch(&os_mapped_bytes, old - new, __ATOMIC_RELAXED);
		}
		return addr;
	}
	if (mcg_fault_should_fail())
		return NULL;
	void *p = mremap(addr, old, new, 0); /* in place: the space after it is free */
	if (p == MAP_FAILED) {
		void *dst = reserve_aligned(new, align < MCG_PAGE_SIZE ? MCG_PAGE_SIZE : align);
		if (!dst)
			return NULL;
		/* Onto the reservation, which the kernel unmaps first. */
		p = mremap(addr, old, new, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
		if (p == MAP_FAILED) {
			munmap(dst, new);
			return NULL;
		}
		/* memcheck loses a mapping moved onto a reservation: the block
		 * is there, its bytes defined (moved, or a fresh tail's zero). */
		VALGRIND_MAKE_MEM_DEFINED(p, new);
	}
	__atomic_add_fetch(&os_mapped_bytes, new - old, __ATOMIC_RELAXED);
	return p;
}

void mcg_os_unmap(void *addr, size_t size)
{
	if (!addr)
		return;
	munmap(addr, size);
	__atomic_sub_fetch(&os_mapped_bytes, size, __ATOMIC_RELAXED);
}

void mcg_os_decommit(void *addr, size_t size) { madvise(addr, size, MADV_DONTNEED); }

void mcg_os_hugepage(void *addr, size_t size, bool on)
{
	madvise(addr, size, on ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
}

void mcg_os_bind(void *addr, size_t size, unsigned node)
{
	if (os_real_nodes <= 1 || node >= os_real_nodes)
		return;
	unsigned long mask = 1ul << node;
	/* MPOL_PREFERRED = 1; failure only loses locality. */
	syscall(SYS_mbind, addr, size, 1, &mask, sizeof(mask) * 8 + 1, 0);
}

size_t mcg_os_mapped(void) { return __atomic_load_n(&os_mapped_bytes, __ATOMIC_RELAXED); }

mcg_public size_t mcg_os_mapped_bytes(void) { return mcg_os_mapped(); }

/* Read a small sysfs file into @buf (NUL-terminated).  Return length or -1. */
static int read_small_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return (int)n;
}

/* Parse a cpulist ("0-3,8,10-11"); call @fn for each CPU.  Return max+1. */
static unsigned parse_cpulist(const char *s, void (*fn)(unsigned cpu, unsigned node, void *arg),
                              unsigned node, void *arg)
{
	unsigned max = 0;
	while (*s && *s != '\n') {
		unsigned a = 0, b;
		if (*s < '0' || *s > '9')
			break;
		while (*s >= '0' && *s <= '9')
			a = a * 10 + (unsigned)(*s++ - '0');
		b = a;
		if (*s == '-') {
			s++;
			b = 0;
			while (*s >= '0' && *s <= '9')
				b = b * 10 + (unsigned)(*s++ - '0');
		}
		for (unsigned c = a; c <= b && c < MCG_MAX_CPUS; c++) {
			if (fn)
				fn(c, node, arg);
			if (c + 1 > max)
				max = c + 1;
		}
		if (*s == ',')
			s++;
	}
	return max;
}

static void set_cpu_node(unsigned cpu, unsigned node, void *arg)
{
	((struct mcg_os_topology *)arg)->cpu_node[cpu] = (uint8_t)node;
}

void mcg_os_topology_read(const char *root, struct mcg_os_topology *t)
{
	char buf[4096], path[256];
	memset(t, 0, sizeof(*t));
	unsigned cpus = 0;
	snprintf(path, sizeof(path), "%s/sys/devices/system/cpu/possible", root);
	if (read_small_file(path, buf, sizeof(buf)) > 0)
		cpus = parse_cpulist(buf, NULL, 0, NULL);
	if (cpus == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		/* sysconf(_SC_NPROCESSORS_ONLN) is at least 1 on Linux */
		cpus = n > 0 ? (unsigned)n : 1; /* GCOVR_EXCL_LINE */
	}
	t->nr_cpus = cpus > MCG_MAX_CPUS ? MCG_MAX_CPUS : cpus;

	/* Which nodes exist: "possible" lists them (absent without NUMA support). */
	unsigned maxnode = 0;
	snprintf(path, sizeof(path), "%s/sys/devices/system/node/possible", root);
	if (read_small_file(path, buf, sizeof(buf)) > 0)
		maxnode = parse_cpulist(buf, NULL, 0, NULL);
	if (maxnode > MCG_MAX_NODES)
		maxnode = MCG_MAX_NODES;
	t->nr_nodes = 1;
	for (unsigned n = 0; n < maxnode; n++) {
		snprintf(path, sizeof(path), "%s/sys/devices/system/node/node%u/cpulist", root, n);
		if (read_small_file(path, buf, sizeof(buf)) < 0)
			continue;
		parse_cpulist(buf, set_cpu_node, n, t);
		if (n + 1 > t->nr_nodes)
			t->nr_nodes = n + 1;
	}
}

void mcg_os_topology_init(void)
{
	static struct mcg_os_topology t;
	mcg_os_topology_read("", &t);
	os_nr_cpus = t.nr_cpus;
	memcpy(os_cpu_node, t.cpu_node, sizeof(os_cpu_node));
	os_real_nodes = t.nr_nodes;
	os_nr_nodes = t.nr_nodes;

	long fake = mcg_option(MCG_OPT_NUMA_NODES);
	if (fake > 0) {
		os_nr_nodes = (unsigned)fake;
		for (unsigned c = 0; c < os_nr_cpus; c++)
			os_cpu_node[c] = (uint8_t)(c * os_nr_nodes / os_nr_cpus);
	}
}

unsigned mcg_os_nr_cpus(void) { return os_nr_cpus; }
unsigned mcg_os_nr_nodes(void) { return os_nr_nodes; }
unsigned mcg_os_cpu_node(unsigned cpu) { return cpu < os_nr_cpus ? os_cpu_node[cpu] : 0; }

uint64_t mcg_os_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

size_t mcg_os_rss_bytes(void)
{
	char buf[256];
	if (read_small_file("/proc/self/statm", buf, sizeof(buf)) <= 0)
		return 0;
	unsigned long size = 0, rss = 0;
	if (sscanf(buf, "%lu %lu", &size, &rss) != 2)
		return 0;
	return rss * (size_t)sysconf(_SC_PAGESIZE);
}
