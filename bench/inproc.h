/* SPDX-License-Identifier: MIT */
/*
 * bench/inproc.h - allocators side by side in one process, each called
 * through function pointers: the like-with-like comparison that judged
 * malloc-level figures use.
 *
 * memcg's shim (libmemcg-preload.so) and each baseline's library are loaded
 * with dlopen(RTLD_LOCAL): none of them becomes the process's malloc, and
 * dlsym() on its handle gives its own malloc and free - the very entry
 * points a program reaches under LD_PRELOAD.  glibc is the process's own
 * malloc.  So every allocator runs the same loop (an indirect call each
 * way), in the same process, on the same clock, in alternating blocks: the
 * VM's speed swings between processes (10-30 %) do not reach the ratios.
 * jemalloc's initial-exec TLS needs static TLS room that dlopen only finds
 * when the process started with glibc.rtld.optional_static_tls raised;
 * bench_worker_run() starts every worker that way (baseline.c).
 *
 * Only in a worker process: a loaded library stays for the process's life.
 */
#ifndef MCG_BENCH_INPROC_H
#define MCG_BENCH_INPROC_H

#include <stdbool.h>
#include <stddef.h>

/** One allocator reached through function pointers. */
struct bench_fp {
	const char *name; /* "memcg" (the shim), "glibc", "jemalloc", "mimalloc", "tcmalloc" */
	void *(*malloc_fn)(size_t);
	void (*free_fn)(void *);
	void *handle;  /* its dlopen() handle (glibc: RTLD_DEFAULT's libc) */
	bool baseline; /* not memcg (nor another build of its shim, baseline.h) */
};

/**
 * bench_fp_open - load allocator @name into this process (see above) and
 * fill @a.  Return: 0, or -1 with a note on stderr (not installed, or the
 * library would not load).
 */
int bench_fp_open(const char *name, struct bench_fp *a);

/**
 * bench_fp_release - ask @a to give its free memory back to the OS (the call
 * baseline_release() names).  Return: the name of the call, or "none".
 */
const char *bench_fp_release(const struct bench_fp *a);

#endif /* MCG_BENCH_INPROC_H */
