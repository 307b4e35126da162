/* SPDX-License-Identifier: MIT */
/*
 * chunk_count.h - how many chunks memcg holds (SLABS and LARGE), counted in
 * the process-wide chunk map (page/chunk.h).  At rest, with no large block
 * live, what memcg maps beyond its caches' metadata is exactly these
 * chunks: a test that may create chunks checks its mapped bytes against
 * them instead of a bare ">=".  Reads the whole 32 MiB map: call it at
 * rest, a few times per test.
 */
#ifndef MCG_TEST_CHUNK_COUNT_H
#define MCG_TEST_CHUNK_COUNT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "page/chunk.h"

static inline size_t chunks_mapped(void)
{
	size_t n = 0;
	for (size_t i = 0; i < MCG_CHUNK_MAP_SIZE; i += 8) {
		uint64_t w;
		memcpy(&w, &mcg_chunk_map_[i], 8);
		for (; w; w &= w - 1)
			n++; /* registered entries hold 1: one bit each */
	}
	return n;
}

#endif /* MCG_TEST_CHUNK_COUNT_H */
