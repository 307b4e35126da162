/* SPDX-License-Identifier: MIT */
/* base/options.c - the runtime option table (see options.h). */
#include "base/options.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "base/compiler.h"
#include "base/log.h"
#include "memcg/memcg.h"

static struct mcg_option options[MCG_OPT_COUNT] = {
        [MCG_OPT_RSEQ] = {"rseq", "MCG_RSEQ", 1, 1, 0, 1, "bool",
                          "use rseq critical sections for per-CPU data when glibc registered rseq"},
        [MCG_OPT_NUMA_NODES] =
                {"numa_nodes", "MCG_NUMA_NODES", 0, 0, 0, 64, "count",
                 "fake this many NUMA nodes, CPUs spread evenly (0: the real topology)"},
        [MCG_OPT_SLAB_DEBUG] =
                {"slab_debug", "MCG_SLAB_DEBUG", 0, 0, 0, 1, "bool",
                 "poison and red-zone every cache (slower; catches use-after-free and overflows)"},
        [MCG_OPT_CPU_OBJECTS] =
                {"cpu_objects", "MCG_CPU_OBJECTS", 0, 0, 0, 4096, "count",
                 "per-CPU array capacity of every cache (0: chosen by object size)"},
        [MCG_OPT_REAP_MS] = {"reap_ms", "MCG_REAP_MS", 1000, 1000, 0, 3600000, "ms",
                             "period of memory aging: idle CPU arrays, empty slabs and the free "
                             "pages inside idle partly used slabs go back to the OS (the malloc "
                             "shim's reaper thread, else steps in the slow paths; 0: off)"},
        [MCG_OPT_RECURSIVEPROT] =
                {"memory_recursiveprot", "MCG_RECURSIVEPROT", 0, 0, 0, 1, "bool",
                 "cgroup2's memory_recursiveprot: a parent's unclaimed min/low protects its "
                 "children in proportion to their unprotected usage"},
        [MCG_OPT_CONTROL] = {"control", "MCG_CONTROL", 1, 1, 0, 1, "bool",
                             "the malloc shim (memcg run) starts the control socket for memcg "
                             "ps/stat/set/top; the library alone never does"},
        [MCG_OPT_CONTROL_TIMEOUT_MS] =
                {"control_timeout_ms", "MCG_CONTROL_TIMEOUT_MS", 10000, 10000, 100, 3600000, "ms",
                 "a control socket client that sends no whole request, or does not read its "
                 "reply, for this long is disconnected"},
        [MCG_OPT_LAZY_THREADS] =
                {"lazy_threads", "MCG_LAZY_THREADS", 1, 1, 0, 1, "bool",
                 "the malloc shim starts its threads (reaper, control socket) only once the "
                 "program has a thread of its own or has run one reap period (1 s when aging is "
                 "off): a second thread makes glibc take a single-threaded program's locks "
                 "(stdio, mutexes) with atomic instructions; 0: at start (memcg run's default)"},
        [MCG_OPT_DIRTY_RATIO] = {"dirty_ratio", "MCG_DIRTY_RATIO", 20, 20, 0, 100, "%",
                                 "dirty (+ writeback) page-cache memory a domain (the process, "
                                 "a group) may hold, in % of its available memory; writers "
                                 "are throttled around it",
                                 MCG_OPT_DIRTY_BYTES},
        [MCG_OPT_DIRTY_BACKGROUND_RATIO] = {"dirty_background_ratio", "MCG_DIRTY_BACKGROUND_RATIO",
                                            10, 10, 0, 100, "%",
                                            "dirty page-cache memory, in % of available "
                                            "memory, above which the flushers write back",
                                            MCG_OPT_DIRTY_BACKGROUND_BYTES},
        [MCG_OPT_DIRTY_BYTES] = {"dirty_bytes", "MCG_DIRTY_BYTES", 0, 0, 0, LONG_MAX, "bytes",
                                 "the dirty limit in bytes (0: dirty_ratio applies; nonzero "
                                 "zeroes dirty_ratio)",
                                 MCG_OPT_DIRTY_RATIO},
        [MCG_OPT_DIRTY_BACKGROUND_BYTES] = {"dirty_background_bytes", "MCG_DIRTY_BACKGROUND_BYTES",
                                            0, 0, 0, LONG_MAX, "bytes",
                                            "the background writeback threshold in bytes (0: "
                                            "dirty_background_ratio applies)",
                                            MCG_OPT_DIRTY_BACKGROUND_RATIO},
        [MCG_OPT_DIRTY_EXPIRE_CS] = {"dirty_expire_centisecs", "MCG_DIRTY_EXPIRE_CENTISECS", 3000,
                                     3000, 0, 8640000, "cs",
                                     "periodic writeback writes files dirty for longer than "
                                     "this"},
        [MCG_OPT_DIRTY_WRITEBACK_CS] = {"dirty_writeback_centisecs",
                                        "MCG_DIRTY_WRITEBACK_CENTISECS", 500, 500, 0, 8640000, "cs",
                                        "period at which the flusher threads look for expired "
                                        "dirty data (0: no periodic writeback)"},
        [MCG_OPT_DIRTY_ACCOUNTING] = {"dirty_accounting", "MCG_DIRTY_ACCOUNTING", 1, 1, 0, 1,
                                      "bool",
                                      "count dirty and writeback pages per group and apply "
                                      "each group's dirty limits (0: the process-wide domain "
                                      "only)"},
        [MCG_OPT_FILE_DIRECT_IO] = {"file_direct_io", "MCG_FILE_DIRECT_IO", 1, 1, 0, 1, "bool",
                                    "the page cache reads and writes backing files with "
                                    "O_DIRECT where the file system allows it (0: buffered "
                                    "I/O and sync_file_range)"},
        [MCG_OPT_WRITEBACK_IO_DEPTH] = {"writeback_io_depth", "MCG_WRITEBACK_IO_DEPTH", 8, 8, 1, 16,
                                        "count",
                                        "backing writes (runs of up to 4 MiB) one writeback of "
                                        "a file keeps in flight, on a pool of as many threads "
                                        "(1: one at a time, in the writing thread)"},
        [MCG_OPT_DIRTY_WRITE_BEHIND] = {"dirty_write_behind", "MCG_DIRTY_WRITE_BEHIND", 4L << 20,
                                        4L << 20, 0, 1L << 30, "bytes",
                                        "write-behind: a handle writing a file sequentially has "
                                        "each aligned chunk of this many bytes written as soon "
                                        "as it is complete, while its domains are under their "
                                        "background thresholds (0: off)"},
        [MCG_OPT_KMALLOC_FIT] = {"kmalloc_fit", "MCG_KMALLOC_FIT", 1, 1, 0, 1, "bool",
                                 "malloc makes a cache of exactly a request size that dominates "
                                 "its size class when the class's slot wastes more than 1/8 "
                                 "of it (at most 16; 0: no new ones, those made stay)"},
};

static bool options_use_env = true;
static int options_loaded; /* 0: no, 1: loading/loaded */

static void options_load(void)
{
	if (__atomic_exchange_n(&options_loaded, 1, __ATOMIC_ACQ_REL))
		return;
	for (int i = 0; i < MCG_OPT_COUNT; i++) {
		struct mcg_option *o = &options[i];
		if (!options_use_env)
			continue;
		const char *s = getenv(o->env);
		if (!s || !*s)
			continue;
		char *end;
		errno = 0;
		long v = strtol(s, &end, 10);
		if (errno || *end || v < o->min || v > o->max) {
			mcg_log("ignoring %s=%s: expected %s in %ld..%ld", o->env, s, o->unit,
			        o->min, o->max);
			continue;
		}
		o->value = v;
		if (o->twin && v)
			options[o->twin].value = 0;
	}
}

long mcg_option(enum mcg_option_id id)
{
	if (unlikely(!__atomic_load_n(&options_loaded, __ATOMIC_ACQUIRE)))
		options_load();
	return __atomic_load_n(&options[id].value, __ATOMIC_RELAXED);
}

const struct mcg_option *mcg_option_table(void)
{
	options_load();
	return options;
}

mcg_public int mcg_options_use_env(int use)
{
	if (__atomic_load_n(&options_loaded, __ATOMIC_ACQUIRE))
		return -EBUSY;
	options_use_env = use != 0;
	return 0;
}

mcg_public int mcg_option_set(const char *name, long value)
{
	if (!name)
		return -EINVAL;
	for (int i = 0; i < MCG_OPT_COUNT; i++) {
		struct mcg_option *o = &options[i];
		const char *a = o->name, *b = name;
		while (*a && *a == *b)
			a++, b++;
		if (*a || *b)
			continue;
		if (value < o->min || value > o->max)
			return -EINVAL;
		options_load();
		__atomic_store_n(&o->value, value, __ATOMIC_RELAXED);
		if (o->twin && value)
			__atomic_store_n(&options[o->twin].value, 0, __ATOMIC_RELAXED);
		return 0;
	}
	return -ENOENT;
}
