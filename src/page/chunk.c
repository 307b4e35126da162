/* SPDX-License-Identifier: MIT */
/*
 * page/chunk.c - the chunk ownership map (see chunk.h).
 *
 * 2^47 bytes of address space / 4 MiB chunks = 2^25 bytes = 32 MiB of map
 * in bss: the kernel maps it lazily, so only the pages covering live chunks
 * are ever resident (a few).
 */
#include "page/chunk.h"

uint8_t mcg_chunk_map_[MCG_CHUNK_MAP_SIZE];

void mcg_chunk_register(struct mcg_chunk *c)
{
	__atomic_store_n(&mcg_chunk_map_[(uintptr_t)c >> MCG_CHUNK_SHIFT], 1, __ATOMIC_RELEASE);
}

void mcg_chunk_unregister(struct mcg_chunk *c)
{
	__atomic_store_n(&mcg_chunk_map_[(uintptr_t)c >> MCG_CHUNK_SHIFT], 0, __ATOMIC_RELEASE);
}
