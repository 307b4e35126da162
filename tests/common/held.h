/* SPDX-License-Identifier: MIT */
/*
 * held.h - what the process holds, for tests that check a failed or
 * refused call gives everything back: the objects handed out by the kmalloc
 * caches (exact at rest) and the descriptors open.
 */
#ifndef MCG_TEST_HELD_H
#define MCG_TEST_HELD_H

#include <dirent.h>
#include <stddef.h>

#include "memcg/kmalloc.h"
#include "memcg/slab.h"
#include "slab/kmalloc_fast.h"

/* Objects handed out by every kmalloc cache, fitted ones included (exact at rest). */
static inline size_t held_kmalloc_objects(void)
{
	size_t n = 0;
	for (unsigned i = 0; i < KMALLOC_CLASSES; i++) {
		mcg_cache_stats_t st;
		if (mcg_kmalloc_caches_[i] && !mcg_cache_stats(mcg_kmalloc_caches_[i], &st))
			n += st.active_objs;
	}
	for (unsigned i = 0; i < mcg_kmalloc_fit_count(); i++) {
		mcg_cache_stats_t st;
		if (!mcg_cache_stats(mcg_kmalloc_fitted_[i], &st))
			n += st.active_objs;
	}
	return n;
}

/* Descriptors this process has open (/proc/self/fd, less the one reading it). */
static inline int held_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;
}

#endif /* MCG_TEST_HELD_H */
