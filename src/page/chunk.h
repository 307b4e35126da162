/* SPDX-License-Identifier: MIT */
/*
 * page/chunk.h - chunks: the unit of memory memcg takes from the OS.
 *
 * A chunk is MCG_CHUNK_SIZE bytes aligned to its size, so any address inside
 * it finds the chunk header by masking.  A chunk is either
 *  - SLABS: unit 0 holds this header (with a descriptor area and an object
 *    bitmap area per unit, owned by the slab layer); units 1..63 are handed
 *    out in power-of-two spans by the page allocator (pages.c);
 *  - LARGE: one block of a kmalloc too big for a size class (page/large.h);
 *    the block starts at MCG_UNIT_SIZE (or its alignment) so the descriptor
 *    area of the header stays untouched zero: a slab lookup of a LARGE
 *    block's address finds "no slab" without testing the kind.  A freed
 *    LARGE chunk may stay mapped (and registered) for reuse, marked
 *    large_cached.
 * A process-wide map with one byte per possible chunk says which chunks
 * are memcg's: the O(1) test that rejects foreign pointers.
 *
 * Glossary: unit = MCG_UNIT_SIZE bytes; span = 2^k contiguous units.
 */
#ifndef MCG_PAGE_CHUNK_H
#define MCG_PAGE_CHUNK_H

#include <stdbool.h>
#include <stdint.h>

#include "base/compiler.h"
#include "base/list.h"

#define MCG_CHUNK_SHIFT 22
#define MCG_CHUNK_SIZE (1ul << MCG_CHUNK_SHIFT)
#define MCG_UNIT_SHIFT 16
#define MCG_UNIT_SIZE (1ul << MCG_UNIT_SHIFT)
#define MCG_UNITS_PER_CHUNK (1u << (MCG_CHUNK_SHIFT - MCG_UNIT_SHIFT))
#define MCG_UNIT_META_SHIFT 7
#define MCG_UNIT_META_SIZE                                                                         \
	(1u << MCG_UNIT_META_SHIFT) /* bytes of descriptor per unit (slab layer) */
#define MCG_MIN_SLOT 16             /* smallest object slot: bitmap sizing */
#define MCG_UNIT_BITMAP_WORDS (MCG_UNIT_SIZE / MCG_MIN_SLOT / 64)
#define MCG_VA_BITS 47
#define MCG_CHUNK_MAGIC 0x6d636763u /* "mcgc" */

enum mcg_chunk_kind { MCG_CHUNK_SLABS = 1, MCG_CHUNK_LARGE = 2 };

struct mcg_chunk {
	uint32_t magic;
	uint16_t node;
	uint16_t kind;             /* enum mcg_chunk_kind */
	uint64_t free_units;       /* SLABS: bit u set = unit u free (page lock) */
	struct mcg_list link;      /* SLABS: the node's chunk list (page lock) */
	size_t map_size;           /* bytes mapped for this chunk */
	size_t large_size;         /* LARGE: usable bytes of the block */
	void *large_ptr;           /* LARGE: the block */
	void *large_objcg;         /* LARGE: the objcg charged for it, or NULL */
	uint32_t idle_steps;       /* SLABS: aging steps found it all free in a row (page lock) */
	uint16_t large_cached;     /* LARGE: 1 while retained for reuse (large lock) */
	uint16_t large_zero;       /* LARGE: the block reads zero (a fresh mapping; its owner) */
	struct mcg_list large_lru; /* LARGE, retained: the age list, oldest first (large lock) */
	uint64_t large_stamp;      /* LARGE, retained: the aging step it was retained at */
	char pad_[256 - 96];
	/* SLABS only, below: */
	unsigned char meta[MCG_UNITS_PER_CHUNK][MCG_UNIT_META_SIZE];
	uint64_t bitmap[MCG_UNITS_PER_CHUNK][MCG_UNIT_BITMAP_WORDS];
};

_Static_assert(offsetof(struct mcg_chunk, meta) == 256, "chunk header layout");
_Static_assert(sizeof(struct mcg_chunk) <= MCG_UNIT_SIZE, "header fits unit 0");

#define MCG_CHUNK_MAP_SIZE (1ul << (MCG_VA_BITS - MCG_CHUNK_SHIFT))

/* One byte per possible chunk (nonzero: memcg's): 32 MiB of zero-fill bss,
 * touched only where chunks live.  Bytes, not bits: the fast path's test is
 * one load and compare.  Static, so the fast path indexes it directly. */
extern mcg_hidden uint8_t mcg_chunk_map_[MCG_CHUNK_MAP_SIZE];

/* Is the chunk of index @idx (an address >> MCG_CHUNK_SHIFT) memcg's? */
static inline bool mcg_chunk_idx_owned(uintptr_t idx)
{
	/* One compare rejects addresses past the 47-bit user space too. */
	return likely(idx < MCG_CHUNK_MAP_SIZE) &&
	       __atomic_load_n(&mcg_chunk_map_[idx], __ATOMIC_ACQUIRE);
}

/** mcg_chunk_of - the memcg chunk holding @p, or NULL if memcg does not own it. */
static inline struct mcg_chunk *mcg_chunk_of(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	if (unlikely(!mcg_chunk_idx_owned(a >> MCG_CHUNK_SHIFT)))
		return NULL;
	return (struct mcg_chunk *)(a & ~(MCG_CHUNK_SIZE - 1));
}

/** mcg_chunk_register / unregister - mark the chunk at @c as memcg's or not. */
void mcg_chunk_register(struct mcg_chunk *c);
void mcg_chunk_unregister(struct mcg_chunk *c);

/**
 * mcg_chunk_slab_desc - the descriptor of the unit holding @p, which lies in
 * a chunk memcg owns (SLABS or LARGE: a LARGE chunk's descriptors read zero).
 */
static inline void *mcg_chunk_slab_desc(const void *p)
{
	/* &chunk->meta[unit], as one shift and two masks: the unit's index is
	 * shifted straight to its byte offset (MCG_UNIT_META_SIZE, 2^7). */
	uintptr_t a = (uintptr_t)p;
	uintptr_t off = (a >> (MCG_UNIT_SHIFT - MCG_UNIT_META_SHIFT)) &
	                ((uintptr_t)(MCG_UNITS_PER_CHUNK - 1) << MCG_UNIT_META_SHIFT);
	return (char *)(a & ~(MCG_CHUNK_SIZE - 1)) + offsetof(struct mcg_chunk, meta) + off;
}

/** mcg_chunk_owned - does memcg own the chunk holding @p? */
static inline bool mcg_chunk_owned(const void *p)
{
	return mcg_chunk_idx_owned((uintptr_t)p >> MCG_CHUNK_SHIFT);
}

/** mcg_chunk_unit - the unit index of @p within its chunk @c. */
static inline unsigned mcg_chunk_unit(const struct mcg_chunk *c, const void *p)
{
	return (unsigned)(((uintptr_t)p - (uintptr_t)c) >> MCG_UNIT_SHIFT);
}

#endif /* MCG_PAGE_CHUNK_H */
