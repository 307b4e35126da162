/* SPDX-License-Identifier: MIT */
/*
 * page/chunk.c - the chunk ownership bitmap (see chunk.h).
 *
 * 2^47 bytes of address space / 4 MiB chunks = 2^25 bits = 4 MiB of bitmap,
 * reserved once and touched only where chunks live (a few pages).
 */
#include "page/chunk.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>

uint64_t *mcg_chunk_map_;
static pthread_mutex_t chunk_map_lock = PTHREAD_MUTEX_INITIALIZER;

#define CHUNK_MAP_BYTES ((1ul << (MCG_VA_BITS - MCG_CHUNK_SHIFT)) / 8)

int mcg_chunk_map_init(void)
{
	if (__atomic_load_n(&mcg_chunk_map_, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&chunk_map_lock);
	if (!mcg_chunk_map_) {
		/* Not through the fault point: a process-lifetime reservation. */
		void *p = mmap(NULL, CHUNK_MAP_BYTES, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p != MAP_FAILED)
			__atomic_store_n(&mcg_chunk_map_, (uint64_t *)p, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&chunk_map_lock);
	return mcg_chunk_map_ ? 0 : -ENOMEM;
}

void mcg_chunk_register(struct mcg_chunk *c)
{
	uintptr_t idx = (uintptr_t)c >> MCG_CHUNK_SHIFT;
	__atomic_or_fetch(&mcg_chunk_map_[idx >> 6], 1ull << (idx & 63), __ATOMIC_RELEASE);
}

void mcg_chunk_unregister(struct mcg_chunk *c)
{
	uintptr_t idx = (uintptr_t)c >> MCG_CHUNK_SHIFT;
	__atomic_and_fetch(&mcg_chunk_map_[idx >> 6], ~(1ull << (idx & 63)), __ATOMIC_RELEASE);
}
