/* SPDX-License-Identifier: MIT */
/*
 * os/os.h - the operating system behind one small interface: memory
 * mappings, CPU and NUMA topology, time.
 *
 * Nothing here allocates from the heap (the malloc shim sits above it).  Every
 * mapping request passes the fault-injection point first.
 */
#ifndef MCG_OS_OS_H
#define MCG_OS_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MCG_MAX_NODES 64
#define MCG_MAX_CPUS 4096

/**
 * mcg_os_map - map @size bytes (a multiple of the page size) of zeroed,
 * read-write memory aligned to @align (a power of two >= the page size).
 * Return: the address, or NULL (fault injected or the OS refused).
 */
void *mcg_os_map(size_t size, size_t align);

/** mcg_os_unmap - unmap what mcg_os_map() returned. */
void mcg_os_unmap(void *addr, size_t size);

/**
 * mcg_os_remap - resize the mapping of @old bytes at @addr (from
 * mcg_os_map()) to @new bytes (both multiples of the page size), keeping
 * its contents: a shrink unmaps the tail; a growth extends it where it
 * lies if the address space after it is free, else moves it (page tables,
 * no copy) to a fresh place aligned to @align.  Added pages read as zero.
 * Return: the mapping's address (@addr, or where it moved), or NULL (fault
 * injected or the OS refused: the old mapping is untouched).
 */
void *mcg_os_remap(void *addr, size_t old, size_t new, size_t align);

/** mcg_os_decommit - give the pages back to the OS (they read as zero later). */
void mcg_os_decommit(void *addr, size_t size);

/**
 * mcg_os_hugepage - ask the OS to back [@addr, @addr + @size) (aligned to
 * the huge page size) with huge pages (@on: MADV_HUGEPAGE), or never again
 * (MADV_NOHUGEPAGE: khugepaged then leaves it alone, where it could fill a
 * mostly decommitted range back to a whole huge page).  Without
 * transparent huge pages it is a no-op.
 */
void mcg_os_hugepage(void *addr, size_t size, bool on);

/** mcg_os_bind - prefer NUMA node @node for the pages (no-op on one real node). */
void mcg_os_bind(void *addr, size_t size, unsigned node);

/** mcg_os_mapped - bytes mapped through mcg_os_map() and not yet unmapped. */
size_t mcg_os_mapped(void);

/** The CPUs and nodes sysfs lists. */
struct mcg_os_topology {
	unsigned nr_cpus;  /* possible CPU ids: 0 .. nr_cpus - 1 (at most MCG_MAX_CPUS) */
	unsigned nr_nodes; /* 1 + the highest node with a cpulist (1 without NUMA) */
	uint8_t cpu_node[MCG_MAX_CPUS];
};

/**
 * mcg_os_topology_read - read the topology below @root ("" for the real
 * /sys; a directory that mirrors it for tests) into @t.  No CPU list: the
 * online CPUs (sysconf); no node list: one node.
 */
void mcg_os_topology_read(const char *root, struct mcg_os_topology *t);

/** mcg_os_topology_init - read CPUs and nodes (sysfs, or fake nodes by option). */
void mcg_os_topology_init(void);

/** mcg_os_nr_cpus - possible CPU ids are 0 .. mcg_os_nr_cpus() - 1. */
unsigned mcg_os_nr_cpus(void);
/** mcg_os_nr_nodes - nodes in use (1 .. MCG_MAX_NODES). */
unsigned mcg_os_nr_nodes(void);
/** mcg_os_cpu_node - the node of @cpu (0 when unknown). */
unsigned mcg_os_cpu_node(unsigned cpu);

/** mcg_os_now_ns - CLOCK_MONOTONIC in nanoseconds. */
uint64_t mcg_os_now_ns(void);

/** mcg_os_rss_bytes - this process's resident set (from /proc/self/statm). */
size_t mcg_os_rss_bytes(void);

#endif /* MCG_OS_OS_H */
