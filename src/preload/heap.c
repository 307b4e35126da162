/* SPDX-License-Identifier: MIT */
/*
 * preload/heap.c - the shim's heap group.
 *
 * The protocol with `memcg run --max SIZE --high SIZE` (tools/cmd_run.c) is
 * two environment variables, read once by the constructor: MCG_HEAP_MAX and
 * MCG_HEAP_HIGH, in memory.max's syntax (bytes, K/M/G/T, "max").  If either
 * is set, the constructor creates the group "heap" under the root with those
 * limits and installs the reclaim machinery (so memory.high throttles); from
 * then on every allocation of the shim (preload/malloc.c) is charged to the
 * group's anon objcg and shows as "anon" in its memory.stat.  Over
 * memory.max an allocation fails with ENOMEM: the program sees malloc return
 * NULL.  Blocks allocated before the constructor ran (the dynamic loader's,
 * libc's start-up) stay unaccounted; realloc keeps a block's accounting.
 *
 * Only the malloc family is charged: memory the program maps itself (its
 * own mmap, CPython's small-object arenas) is not.  Every process that
 * inherits the variables gets its own heap group with those limits: groups
 * are per process.  Fork: the slab layer's pthread_atfork handlers take the
 * group layer's locks too (the tree lock, every objcg's spin lock, every
 * CPU's stock words), so a child that allocates finds them free.  At exit (preload/exit_report.c)
 * the reporting process appends the group's memory.current, memory.stat and
 * memory.events to its slabinfo report.
 *
 * No locks here.  Nothing allocates from the program's heap: the group's
 * own memory comes from memcg's internal, unaccounted calls.
 */
#include "preload/heap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "group/group.h"
#include "memcg/reclaim.h"
#include "slab/kmalloc_fast.h"

mcg_hidden struct mcg_objcg *mcg_preload_heap;
static mcg_group_t *heap_group;

static int set_limit(mcg_group_t *g, const char *file, const char *var)
{
	const char *v = getenv(var);
	if (!v || !*v)
		return 0;
	int err = mcg_group_write(g, file, v);
	if (err)
		mcg_log("%s=%s: not a valid %s value; the heap is not accounted", var, v, file);
	return err;
}

__attribute__((constructor)) static void heap_start(void)
{
	const char *max = getenv("MCG_HEAP_MAX"), *high = getenv("MCG_HEAP_HIGH");
	if ((!max || !*max) && (!high || !*high))
		return;
	mcg_group_t *g;
	if (mcg_group_create(NULL, "heap", &g)) {
		mcg_log("cannot create the heap group; the heap is not accounted");
		return;
	}
	if (set_limit(g, "memory.max", "MCG_HEAP_MAX") ||
	    set_limit(g, "memory.high", "MCG_HEAP_HIGH")) {
		mcg_group_remove(g);
		mcg_group_put(g);
		return;
	}
	mcg_reclaim_init();
	heap_group = g;
	mcg_preload_heap = mcg_objcg_of(g, MCG_OBJCG_ANON);
	mcg_kmalloc_arrays_off(); /* malloc's slow path tests the group (malloc.c) */
}

/* Write @text, all of it, to @fd. */
static void write_all(int fd, const char *text, size_t len)
{
	while (len) {
		ssize_t n = write(fd, text, len);
		if (n <= 0)
			return;
		text += n;
		len -= (size_t)n;
	}
}

void mcg_preload_heap_report(int fd)
{
	static const char *const files[] = {"memory.current", "memory.max",  "memory.high",
	                                    "memory.peak",    "memory.stat", "memory.events"};
	if (!heap_group)
		return;
	mcg_group_drain_stocks(); /* at rest: memory.current = anon + kernel */
	char buf[4096];
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		int n = snprintf(buf, sizeof(buf), "# %s of the heap group\n", files[i]);
		write_all(fd, buf, (size_t)n);
		ssize_t len = mcg_group_read(heap_group, files[i], buf, sizeof(buf));
		if (len > 0)
			write_all(fd, buf,
			          (size_t)len < sizeof(buf) ? (size_t)len : sizeof(buf) - 1);
	}
}
