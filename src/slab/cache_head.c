/* SPDX-License-Identifier: MIT */
/*
 * slab/cache_head.c - where caches' heads live: struct mcg_cache, its node
 * lists and its per-CPU array headers, one block per cache.
 *
 * Every head of a process is the same size (the CPUs and the nodes are
 * fixed), and every head is written whole when its cache is created.  A
 * process has dozens of caches (the kmalloc classes alone are 52), so a
 * mapping per head - a page each, mostly empty - would be resident memory
 * spent for nothing.  Heads are cut from shared blocks instead, in order;
 * a destroyed cache's head goes on a free list for the next one, and the
 * blocks stay mapped: they hold at most as many heads as were ever alive
 * at once.  The per-CPU slot arrays are not part of the head: each cache
 * maps its own, resident only once its objects pass through them.
 *
 * Lock: mcg_cache_list_lock (held by the callers), which the fork handlers
 * take.
 */
#include <string.h>

#include "base/mm_const.h"
#include "os/os.h"
#include "slab/slab.h"

#define HEAD_BLOCK_BYTES (64u << 10)

static struct {
	char *next, *end; /* the rest of the current block */
	void *free;       /* freed heads, each holding the next one's address */
} heads;

void *mcg_cache_head_alloc(size_t size)
{
	void *h = heads.free;
	if (h) {
		memcpy(&heads.free, h, sizeof(void *));
		memset(h, 0, size);
		return h;
	}
	if ((size_t)(heads.end - heads.next) < size) {
		size_t block = MCG_ALIGN_UP(MCG_MAX((size_t)HEAD_BLOCK_BYTES, size), MCG_PAGE_SIZE);
		char *b = mcg_os_map(block, MCG_PAGE_SIZE);
		if (!b)
			return NULL;
		heads.next = b; /* the old block's tail is left unused */
		heads.end = b + block;
	}
	h = heads.next;
	heads.next += size;
	return h;
}

void mcg_cache_head_free(void *h)
{
	memcpy(h, &heads.free, sizeof(void *));
	heads.free = h;
}
