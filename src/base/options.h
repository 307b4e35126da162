/* SPDX-License-Identifier: MIT */
/*
 * base/options.h - the runtime options, all in one table.
 *
 * Each option has a name, a default, a unit, an environment variable and a
 * comment (options.c); `memcg options` prints the table and docs/options.md
 * is generated from it.  The environment is read once, at initialisation,
 * unless mcg_options_use_env(false) was called first.
 */
#ifndef MCG_BASE_OPTIONS_H
#define MCG_BASE_OPTIONS_H

#include <stdbool.h>

enum mcg_option_id {
	MCG_OPT_RSEQ,               /* use rseq for per-CPU data when available */
	MCG_OPT_NUMA_NODES,         /* fake this many NUMA nodes (0: real topology) */
	MCG_OPT_SLAB_DEBUG,         /* poison + red zone on every cache */
	MCG_OPT_CPU_OBJECTS,        /* per-CPU array capacity (0: by object size) */
	MCG_OPT_REAP_MS,            /* reaper period started by the malloc shim (0: off) */
	MCG_OPT_RECURSIVEPROT,      /* cgroup2's memory_recursiveprot mount option */
	MCG_OPT_CONTROL,            /* the malloc shim starts the control socket */
	MCG_OPT_CONTROL_TIMEOUT_MS, /* a control client idle or not reading this long is closed */
	MCG_OPT_LAZY_THREADS,       /* the shim's threads wait for the program's own, or a period */
	/* The page cache (pagecache/): the kernel's vm.dirty_* knobs.  Writing a
	 * ratio zeroes its bytes twin and the other way round; bytes win when
	 * both are nonzero. */
	MCG_OPT_DIRTY_RATIO,            /* % of available memory a domain may hold dirty */
	MCG_OPT_DIRTY_BACKGROUND_RATIO, /* % where background writeback starts */
	MCG_OPT_DIRTY_BYTES,            /* the dirty limit in bytes (0: use the ratio) */
	MCG_OPT_DIRTY_BACKGROUND_BYTES, /* the background threshold in bytes (0: ratio) */
	MCG_OPT_DIRTY_EXPIRE_CS,        /* age at which periodic writeback writes data */
	MCG_OPT_DIRTY_WRITEBACK_CS,     /* period of the periodic writeback (0: none) */
	MCG_OPT_DIRTY_ACCOUNTING,       /* per-group dirty accounting and limits */
	MCG_OPT_FILE_DIRECT_IO,         /* O_DIRECT for backing files where it works */
	MCG_OPT_WRITEBACK_IO_DEPTH,     /* backing writes in flight per writeback */
	MCG_OPT_DIRTY_WRITE_BEHIND,     /* sequential writers' chunks written at once (0: off) */
	MCG_OPT_KMALLOC_FIT,            /* kmalloc makes caches fitted to hot request sizes */
	MCG_OPT_COUNT
};

struct mcg_option {
	const char *name;    /* e.g. "rseq" */
	const char *env;     /* e.g. "MCG_RSEQ" */
	long value;          /* current value */
	long def;            /* default */
	long min, max;       /* accepted range */
	const char *unit;    /* "bool", "count", "ms", ... */
	const char *comment; /* one line */
	int twin;            /* setting it nonzero zeroes this option (0: none) */
};

/** mcg_option - the current value of option @id (reads the environment once). */
long mcg_option(enum mcg_option_id id);

/** mcg_option_table - the table (MCG_OPT_COUNT entries), for printing. */
const struct mcg_option *mcg_option_table(void);

#endif /* MCG_BASE_OPTIONS_H */
