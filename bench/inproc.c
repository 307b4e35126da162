/* SPDX-License-Identifier: MIT */
/* bench/inproc.c - allocators side by side in one process (see inproc.h). */
#include "inproc.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"

int bench_fp_open(const char *name, struct bench_fp *a)
{
	memset(a, 0, sizeof(*a));
	a->name = name;
	a->baseline = strcmp(name, "memcg") && strcmp(name, BENCH_OTHER_SHIM);
	if (!strcmp(name, "glibc")) {
		/* The process's malloc: glibc's, as no worker of this kind preloads one. */
		a->malloc_fn = malloc;
		a->free_fn = free;
		a->handle = RTLD_DEFAULT;
		return 0;
	}
	const char *path = baseline_lib(name);
	if (!path) {
		fprintf(stderr, "memcg bench: %s: no library to load\n", name);
		return -1;
	}
	a->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!a->handle) {
		fprintf(stderr, "memcg bench: dlopen %s: %s\n", path, dlerror());
		return -1;
	}
	*(void **)&a->malloc_fn = dlsym(a->handle, "malloc");
	*(void **)&a->free_fn = dlsym(a->handle, "free");
	if (!a->malloc_fn || !a->free_fn) {
		fprintf(stderr, "memcg bench: %s has no malloc/free of its own\n", path);
		return -1;
	}
	return 0;
}

const char *bench_fp_release(const struct bench_fp *a)
{
	return baseline_release(a->name, a->handle);
}
