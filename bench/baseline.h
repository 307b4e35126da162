/* SPDX-License-Identifier: MIT */
/*
 * bench/baseline.h - the allocators a benchmark compares, and how a workload
 * runs under each of them in its own process.
 *
 * A variant is memcg's malloc shim (libmemcg-preload.so), a baseline malloc
 * (glibc's own, or jemalloc / mimalloc / tcmalloc), each brought in with
 * LD_PRELOAD and called as a program calls malloc (through the PLT), or one
 * of memcg's direct APIs (the cache API, or mcg_malloc) called straight
 * from the static library - labelled as such, for information: a program
 * does not reach memcg that way.  Every measurement runs in a fresh child:
 * the benchmark re-executes /proc/self/exe with a hidden worker argument
 * list (the environment carries LD_PRELOAD for a preloaded variant, and no
 * LD_PRELOAD otherwise), and the child prints its results, numbers
 * separated by white space, on stdout (a pipe to the parent).  So no
 * allocator sees another's heap.  Comparisons in one process, every
 * allocator through function pointers, are in inproc.h.
 *
 * A variant whose library is not installed is left out with a note on
 * stderr, never an error.  Sanitizer builds keep only glibc and the direct
 * APIs (the sanitizer runtime owns malloc there; a preloaded allocator
 * cannot come first).
 */
#ifndef MCG_BENCH_BASELINE_H
#define MCG_BENCH_BASELINE_H

#include <stdbool.h>
#include <stddef.h>

/** How a variant allocates. */
enum bench_kind {
	BENCH_MCG_CACHE,   /* mcg_cache_alloc / mcg_cache_free, direct (static library) */
	BENCH_MCG_KMALLOC, /* mcg_malloc / mcg_free, direct (static library) */
	BENCH_LIBC,        /* malloc / free: glibc, or the preloaded library (memcg's shim too) */
	BENCH_FP,          /* malloc / free through function pointers (inproc.h) */
};

/** One allocator under test. */
struct bench_variant {
	const char *name; /* "memcg", "mcg-cache", "mcg_malloc", "glibc", "jemalloc", ... */
	enum bench_kind kind;
	const char *preload; /* path of the library to LD_PRELOAD, or NULL */
	bool baseline;       /* not memcg: a reference to compare against */
	bool direct;         /* a direct API of memcg's (not what a program calls) */
};

/** Most variants bench_variants_find() returns. */
#define BENCH_MAX_VARIANTS 8

/**
 * bench_variants_find - the variants available on this machine: memcg (the
 * shim, preloaded), mcg-cache and mcg_malloc (direct), glibc, then each
 * preloadable baseline; a preloaded one only if its library exists and, run
 * once as a probe worker, really serves malloc.  Missing or failing ones are
 * skipped with a note on stderr.
 * @out: room for BENCH_MAX_VARIANTS entries.
 * @probe_argv: the worker arguments for the probe (argv for
 *              bench_worker_run(); the variant name is appended).
 * Return: the number of variants.
 */
int bench_variants_find(struct bench_variant *out, const char *const *probe_argv);

/**
 * bench_worker_run - run one worker child for @v and collect its numbers.
 * @v:    the variant (decides LD_PRELOAD).
 * @argv: the worker's arguments after the program name, NULL-terminated,
 *        e.g. {"bench", "slab", "--worker", "pair", "mcg", "64", ..., NULL}.
 * @vals: where the numbers the child prints go; @max: room in @vals.
 *
 * The child's stderr is the parent's.  Return: the count of numbers read,
 * or -1 (with a note on stderr) if the child failed or printed something
 * that is not a number.
 */
int bench_worker_run(const struct bench_variant *v, const char *const *argv, double *vals, int max);

/*
 * Another build of memcg's shim, for comparing two builds like with like:
 * with MCG_BENCH_OTHER_SHIM=PATH in the environment, the in-process
 * comparisons that take it (`memcg bench slab`'s pair) load PATH beside
 * this build's shim as the allocator BENCH_OTHER_SHIM, for information:
 * never a baseline, never judged.
 */
#define BENCH_OTHER_SHIM "memcg-other"
#define BENCH_OTHER_SHIM_ENV "MCG_BENCH_OTHER_SHIM"

/**
 * baseline_lib - the library file of allocator @name ("memcg": the shim;
 * "jemalloc", "mimalloc", "tcmalloc"; BENCH_OTHER_SHIM: $MCG_BENCH_OTHER_SHIM),
 * or NULL (not installed or not set, or "glibc", which is no library of its
 * own to load).
 */
const char *baseline_lib(const char *name);

/**
 * baseline_check_self - in a worker: does malloc in this process come from
 * the allocator @name says ("memcg", "glibc", "jemalloc", ...)?  The direct
 * variants and sanitizer builds always pass.  Return 0, or -1 with a note.
 */
int baseline_check_self(const char *name);

/**
 * baseline_release - in a worker: ask allocator @name to give its free
 * memory back to the OS, as far as it has a call for that (memcg
 * mcg_slab_shrink_all(), glibc malloc_trim(0), jemalloc
 * "arena.<all>.purge", mimalloc mi_collect(true), tcmalloc
 * MallocExtension_ReleaseFreeMemory()).  @handle: where to look the call
 * up - a dlopen() handle of the allocator's library, or RTLD_DEFAULT for
 * the process's preloaded malloc.
 * Return: the name of the call made, or "none" if there is none.
 */
const char *baseline_release(const char *name, void *handle);

/** baseline_release_name - the call baseline_release() makes for @name, or "none". */
const char *baseline_release_name(const char *name);

#endif /* MCG_BENCH_BASELINE_H */
