/* SPDX-License-Identifier: MIT */
/*
 * page/chunk.c - the chunk ownership bitmap (see chunk.h).
 *
 * 2^47 bytes of address space / 4 MiB chunks = 2^25 bits = 4 MiB of bitmap in
 * bss: the kernel maps it lazily, so only the pages covering live chunks are
 * ever resident (a few).
 */
#include "page/chunk.h"

uint64_t mcg_chunk_map_[MCG_CHUNK_MAP_WORDS];

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
