/* SPDX-License-Identifier: MIT */
/*
 * memcg/debug.h - what tests, tools and hardened deployments need to see:
 * corruption reports, fault injection, the per-CPU mode and fake NUMA.
 */
#ifndef MEMCG_DEBUG_H
#define MEMCG_DEBUG_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What went wrong, in a report. */
typedef enum mcg_report_kind {
	MCG_REPORT_DOUBLE_FREE = 1,  /**< object freed while already free */
	MCG_REPORT_FOREIGN_PTR,      /**< pointer the allocator does not own */
	MCG_REPORT_WRONG_CACHE,      /**< object of another cache */
	MCG_REPORT_MISALIGNED,       /**< pointer inside, not at the start of, an object */
	MCG_REPORT_FREELIST_CORRUPT, /**< never reported: slabs keep no links in free objects */
	MCG_REPORT_POISON_CORRUPT,   /**< a free object was written (use after free) */
	MCG_REPORT_REDZONE_CORRUPT,  /**< bytes after an object were written (overflow) */
	MCG_REPORT_LEAK,             /**< object still allocated at cache destroy */
} mcg_report_kind_t;

/** One report: the kind, the cache's name ("?" if unknown) and the address. */
typedef struct mcg_report {
	mcg_report_kind_t kind;
	const char *cache;
	const void *addr;
} mcg_report_t;

/** Receives reports.  Runs in the reporting thread; must not allocate. */
typedef void (*mcg_report_fn)(const mcg_report_t *report);

/**
 * mcg_set_report_handler - install @fn (NULL: the default, which prints the
 * report to stderr and aborts, except for MCG_REPORT_LEAK which only prints).
 * The operation that was reported is skipped: the object is not freed.
 * Return: the previous handler.
 */
mcg_report_fn mcg_set_report_handler(mcg_report_fn fn);

/** mcg_report_kind_name - "double-free", "foreign-pointer", ... */
const char *mcg_report_kind_name(mcg_report_kind_t kind);

/**
 * mcg_fault_inject - make the @nth call (1-based) through the library's single
 * fault-injection point fail, and every call after it too when @sticky.
 * 0 disarms.  Every OS memory request and every metadata allocation passes
 * that point.  Process-wide; for tests.
 */
void mcg_fault_inject(unsigned long nth, int sticky);

/** mcg_fault_count - calls through the fault point since the last mcg_fault_inject(). */
unsigned long mcg_fault_count(void);

/** mcg_fault_failed - how many calls the fault point failed since the last arming. */
unsigned long mcg_fault_failed(void);

/** Kinds of I/O calls on backing files (mcg_fault_inject_io()'s @ops). */
enum mcg_fault_io_op {
	MCG_FAULT_IO_OPEN = 1u << 0,     /**< open(2) of a backing file */
	MCG_FAULT_IO_STAT = 1u << 1,     /**< fstat / statx, the O_DIRECT probe */
	MCG_FAULT_IO_READ = 1u << 2,     /**< pread / preadv */
	MCG_FAULT_IO_WRITE = 1u << 3,    /**< pwrite / pwritev (writeback) */
	MCG_FAULT_IO_SYNC = 1u << 4,     /**< fdatasync / fsync / sync_file_range */
	MCG_FAULT_IO_TRUNCATE = 1u << 5, /**< ftruncate, fallocate */
	MCG_FAULT_IO_ALL = 0x3fu,
};

/**
 * mcg_fault_inject_io - make the @nth I/O call (1-based) of the kinds in
 * @ops (0: all) on a backing file fail, and every one after it too when
 * @sticky.  @err is the errno it fails with (EIO, ENOSPC, EINTR, ...), or 0
 * for a short transfer: a read or write moves about half its bytes (as the
 * file's O_DIRECT alignment allows; none at all reads as a failure with
 * EIO), the other kinds fail with EIO.  @nth 0 disarms.  Process-wide; for
 * tests.  Counted apart from mcg_fault_inject()'s memory point.
 * Return: 0, or -EINVAL (@err out of range, unknown @ops bits, or a sticky
 * EINTR, which the library's retry loops would never get past).
 */
int mcg_fault_inject_io(unsigned long nth, int sticky, int err, unsigned ops);

/** mcg_fault_io_count - I/O calls of the armed kinds since the last mcg_fault_inject_io(). */
unsigned long mcg_fault_io_count(void);

/** mcg_fault_io_failed - how many I/O calls were failed (or shortened) since the last arming. */
unsigned long mcg_fault_io_failed(void);

/**
 * mcg_fault_io_rate - emulate a device of @bytes_per_s for backing reads
 * and writes of the kinds in @ops (MCG_FAULT_IO_READ, MCG_FAULT_IO_WRITE;
 * 0: off): each such call first waits its bytes' time on one device clock
 * shared by all threads, after the calls before it (a disk's queue).  For
 * benchmarks on machines whose disk is the host's memory.
 * Return: 0, or -EINVAL (other kinds).
 */
int mcg_fault_io_rate(unsigned ops, unsigned long bytes_per_s);

/** Per-CPU fast-path mechanism in use. */
typedef enum mcg_percpu_mode {
	MCG_PERCPU_RSEQ = 1, /**< restartable sequences (no atomics, no locks) */
	MCG_PERCPU_LOCKED,   /**< a lock per CPU slot (no rseq, TSan, valgrind) */
} mcg_percpu_mode_t;

/** mcg_percpu_mode - the mechanism chosen at initialisation. */
mcg_percpu_mode_t mcg_percpu_mode(void);

/** mcg_nr_cpus - CPU slots (possible CPUs).  mcg_nr_nodes - NUMA nodes in use. */
unsigned mcg_nr_cpus(void);
unsigned mcg_nr_nodes(void);

/** mcg_cpu_node - the node of CPU @cpu. */
unsigned mcg_cpu_node(unsigned cpu);

/** mcg_os_mapped_bytes - bytes currently mapped from the OS (chunks + large blocks). */
size_t mcg_os_mapped_bytes(void);

#ifdef __cplusplus
}
#endif
#endif /* MEMCG_DEBUG_H */
