/* SPDX-License-Identifier: MIT */
/*
 * page/large.c - large blocks and the retained cache (see large.h).
 *
 * Bins: one per class from the first above MCG_KMALLOC_MAX_CACHE_SIZE's
 * power of two (320 KiB) to MCG_LARGE_CLASS_MAX, each a LIFO list through
 * the chunks' link (the most recently freed block is the most likely to be
 * resident and cache-warm), and a mask of the bins that hold any, so "the
 * smallest larger block" is one count-trailing-zeros.  The age list (the
 * chunks' large_lru) orders every retained block by when it was retained:
 * eviction takes the oldest, aging walks from the oldest to the first
 * young one.
 *
 * Why a cap of a floor plus half the recent peak: a program that keeps
 * cycling a few buffers of a few hundred KiB (request buffers, a growing
 * string, I/O buffers) finds them all retained whatever its size, at a
 * cost of at most MCG_LARGE_RETAIN_FLOOR of RSS; one that moves large
 * blocks in waves keeps half a wave for the next, and what it retains is
 * never more than half of what it had in use a moment ago.  The peak is
 * that of the last one or two aging periods, so the cap falls with use.
 */
#include "base/mm_const.h"
#include "page/large.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "base/lock.h"
#include "base/log.h"
#include "memcg/kmalloc.h" /* MCG_KMALLOC_MAX_CACHE_SIZE */
#include "os/os.h"

#define FIRST_SHIFT 18 /* classes of (2^18, 2^19] first: above the kmalloc caches */
#define LAST_SHIFT 25  /* classes of (2^25, 2^26] last: up to MCG_LARGE_CLASS_MAX */
#define LARGE_BINS ((LAST_SHIFT - FIRST_SHIFT + 1) * 4)
#define WHOLE_CLASSES 8 /* a retained block up to 8 classes (4x) larger goes out whole */

_Static_assert(MCG_KMALLOC_MAX_CACHE_SIZE == (size_t)1 << FIRST_SHIFT, "first large class");
_Static_assert(MCG_LARGE_CLASS_MAX == (size_t)1 << (LAST_SHIFT + 1), "last large class");
_Static_assert(LARGE_BINS <= 64, "one mask word");

static struct {
	mcg_lock_t lock;
	struct mcg_list bins[LARGE_BINS]; /* retained chunks by class, newest first */
	struct mcg_list age;              /* retained chunks, oldest first */
	uint64_t nonempty;                /* bit b: bins[b] holds a chunk */
	uint64_t step;                    /* aging steps so far */
	size_t retained;                  /* map_size of retained chunks (written under the lock) */
	size_t peak_prev;                 /* the most in use over the period before the last */
} large;

/* Outside the lock (atomics): bytes handed out, and their most since the last step. */
static size_t large_in_use, large_peak;
static pthread_once_t large_once = PTHREAD_ONCE_INIT;

static void large_init_once(void)
{
	mcg_lock_init(&large.lock, MCG_RANK_LARGE);
	for (unsigned b = 0; b < LARGE_BINS; b++)
		mcg_list_init(&large.bins[b]);
	mcg_list_init(&large.age);
}

static void large_init(void) { pthread_once(&large_once, large_init_once); }

/* The bin of usable size @usable, or -1 if it is not a class size. */
static int bin_of(size_t usable)
{
	if (usable <= MCG_KMALLOC_MAX_CACHE_SIZE || usable > MCG_LARGE_CLASS_MAX)
		return -1;
	unsigned b = 63u - (unsigned)__builtin_clzl(usable - 1); /* 2^b < usable <= 2^(b+1) */
	size_t step = (size_t)1 << (b - 2);
	if (usable % step)
		return -1;
	return (int)((b - FIRST_SHIFT) * 4 + (usable - ((size_t)1 << b)) / step - 1);
}

size_t mcg_large_usable(size_t size)
{
	if (size > MCG_KMALLOC_MAX_CACHE_SIZE && size <= MCG_LARGE_CLASS_MAX) {
		unsigned b = 63u - (unsigned)__builtin_clzl(size - 1);
		size_t step = (size_t)1 << (b - 2);
		return (size + step - 1) & ~(step - 1);
	}
	/* Room for the header's offset and mcg_os_map()'s alignment slack. */
	if (size > SIZE_MAX - 2 * MCG_CHUNK_SIZE)
		return 0;
	return MCG_ALIGN_UP(size ? size : 1, MCG_PAGE_SIZE);
}

size_t mcg_large_cap(void)
{
	size_t p = __atomic_load_n(&large_peak, __ATOMIC_RELAXED);
	size_t q = __atomic_load_n(&large.peak_prev, __ATOMIC_RELAXED);
	return MCG_LARGE_RETAIN_FLOOR + MCG_MAX(p, q) / 2;
}

size_t mcg_large_retained(void) { return __atomic_load_n(&large.retained, __ATOMIC_RELAXED); }

size_t mcg_large_in_use(void) { return __atomic_load_n(&large_in_use, __ATOMIC_RELAXED); }

static void in_use_add(size_t bytes)
{
	size_t now = __atomic_add_fetch(&large_in_use, bytes, __ATOMIC_RELAXED);
	size_t peak = __atomic_load_n(&large_peak, __ATOMIC_RELAXED);
	/* Racy against the step's reset, but we can live with a watermark
	 * that misses one block for one period. */
	while (now > peak && !__atomic_compare_exchange_n(&large_peak, &peak, now, true,
	                                                  __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* ------------------------------------------------------------ the cache */

/* Take retained chunk @c out of its bin and the age list (large lock). */
static void unretain_locked(struct mcg_chunk *c, int bin)
{
	mcg_list_del(&c->link);
	mcg_list_del(&c->large_lru);
	if (mcg_list_empty(&large.bins[bin]))
		large.nonempty &= ~(1ull << bin);
	c->large_cached = 0;
	__atomic_sub_fetch(&large.retained, c->map_size, __ATOMIC_RELAXED);
}

/* Move the oldest retained chunk onto @gone (large lock). */
static void evict_oldest_locked(struct mcg_list *gone)
{
	struct mcg_chunk *c = mcg_list_entry(large.age.next, struct mcg_chunk, large_lru);
	unretain_locked(c, bin_of(c->large_size));
	mcg_list_add_tail(&c->link, gone);
}

/* Unmap the chunks on @gone.  Return: their bytes. */
static size_t unmap_list(struct mcg_list *gone)
{
	size_t bytes = 0;
	while (!mcg_list_empty(gone)) {
		struct mcg_chunk *c = mcg_list_entry(gone->next, struct mcg_chunk, link);
		mcg_list_del(&c->link);
		mcg_chunk_unregister(c);
		bytes += c->map_size;
		mcg_os_unmap(c, c->map_size);
	}
	return bytes;
}

/*
 * Resize the mapping of chunk @c (out of every list) to @map bytes, its
 * block keeping its offset: in place, or moved (mremap) when it grows and
 * the space after it is taken.  Return: its chunk, or NULL (@c untouched).
 */
static struct mcg_chunk *remap_chunk(struct mcg_chunk *c, size_t map)
{
	size_t off = (size_t)((char *)c->large_ptr - (char *)c), old = c->map_size;
	/* Off the map while it moves: once moved, its old place may be mapped
	 * and registered by another thread before we could unregister it. */
	if (map > old)
		mcg_chunk_unregister(c);
	struct mcg_chunk *n = mcg_os_remap(c, old, map, MCG_CHUNK_SIZE);
	if (!n) {
		mcg_chunk_register(c);
		return NULL;
	}
	n->map_size = map;
	n->large_size = map - off;
	n->large_ptr = (char *)n + off;
	if (n != c) { /* its list heads moved with it: unlinked, self-pointing */
		mcg_list_init(&n->link);
		mcg_list_init(&n->large_lru);
	}
	if (map > old)
		mcg_chunk_register(n);
	return n;
}

/*
 * A retained chunk for a block of usable size @usable (of bin @bin), or
 * NULL if none.  The rule, in order:
 *   1. the newest of its class;
 *   2. the smallest larger one up to four times its size, handed out
 *      whole, with no OS call and no page to fault in;
 *   3. the largest smaller one, grown (mremap): its resident pages serve,
 *      only the rest is faulted in;
 *   4. the smallest larger one, cut down to the class (its tail unmapped).
 * So a burst of blocks of other classes takes the retained ones instead of
 * mapping beside them.  Why whole up to 4x and not 2x: a block cut down
 * loses resident pages that the next larger request faults back in, and a
 * grown one faults its growth: buffers spread over 256 KiB - 1 MiB (a
 * server's request buffers) keep cutting and growing each other with 2x,
 * and take each other whole with 4x.  What
 * a whole block costs is RSS it already had: the unasked-for part stays
 * resident, and charged, while the block is in use, where a cut would
 * have given it back.
 */
static struct mcg_chunk *take_retained(size_t usable, int bin)
{
	mcg_lock(&large.lock);
	uint64_t any = large.nonempty, up = any & (~0ull << bin), down = any & ~up;
	if (!any) {
		mcg_unlock(&large.lock);
		return NULL;
	}
	int b = up ? __builtin_ctzll(up) : -1;
	if (b < 0 || (b > bin + WHOLE_CLASSES && down))
		b = 63 - __builtin_clzll(down);
	struct mcg_chunk *c = mcg_list_entry(large.bins[b].next, struct mcg_chunk, link);
	unretain_locked(c, b);
	mcg_unlock(&large.lock);
	if (b >= bin && b <= bin + WHOLE_CLASSES)
		return c;
	struct mcg_chunk *n = remap_chunk(c, MCG_UNIT_SIZE + usable);
	if (!n) { /* a growth the OS refused: give the block back to it */
		mcg_chunk_unregister(c);
		mcg_os_unmap(c, c->map_size);
	}
	return n;
}

void *mcg_large_alloc(size_t size, size_t align)
{
	if (align > MCG_CHUNK_SIZE / 2)
		return NULL;
	large_init();
	size_t usable = mcg_large_usable(size);
	if (!usable)
		return NULL;
	/* Past the header's descriptor area (see chunk.h): it must read zero. */
	size_t off = align > MCG_UNIT_SIZE ? align : MCG_UNIT_SIZE;
	int bin = off == MCG_UNIT_SIZE ? bin_of(usable) : -1;
	struct mcg_chunk *c = bin >= 0 ? take_retained(usable, bin) : NULL;
	if (c) {
		c->large_zero = 0;
	} else {
		c = mcg_os_map(off + usable, MCG_CHUNK_SIZE);
		if (!c)
			return NULL;
		c->magic = MCG_CHUNK_MAGIC;
		c->kind = MCG_CHUNK_LARGE;
		c->map_size = off + usable;
		c->large_size = usable;
		c->large_ptr = (char *)c + off;
		c->large_zero = 1;
		mcg_list_init(&c->link);
		mcg_list_init(&c->large_lru);
		mcg_chunk_register(c);
	}
	c->large_objcg = NULL;
	in_use_add(c->map_size);
	return c->large_ptr;
}

int mcg_large_free(struct mcg_chunk *c)
{
	int bin = (char *)c->large_ptr - (char *)c == (ptrdiff_t)MCG_UNIT_SIZE
	                  ? bin_of(c->large_size)
	                  : -1;
	struct mcg_list gone = MCG_LIST_INIT(gone);
	mcg_lock(&large.lock);
	if (c->large_cached) {
		mcg_unlock(&large.lock);
		return -EALREADY;
	}
	__atomic_sub_fetch(&large_in_use, c->map_size, __ATOMIC_RELAXED);
	size_t cap = mcg_large_cap();
	if (bin >= 0 && c->map_size <= cap) {
		while (large.retained + c->map_size > cap)
			evict_oldest_locked(&gone);
		c->large_cached = 1;
		c->large_stamp = large.step;
		mcg_list_add(&c->link, &large.bins[bin]);
		mcg_list_add_tail(&c->large_lru, &large.age);
		large.nonempty |= 1ull << bin;
		__atomic_add_fetch(&large.retained, c->map_size, __ATOMIC_RELAXED);
	} else {
		mcg_list_add_tail(&c->link, &gone);
	}
	mcg_unlock(&large.lock);
	unmap_list(&gone);
	return 0;
}

struct mcg_chunk *mcg_large_resize(struct mcg_chunk *c, size_t size)
{
	size_t usable = mcg_large_usable(size);
	if (!usable)
		return NULL;
	size_t old = c->map_size, map = (size_t)((char *)c->large_ptr - (char *)c) + usable;
	if (map == old)
		return c;
	struct mcg_chunk *n = remap_chunk(c, map);
	if (!n)
		return NULL;
	if (map > old)
		in_use_add(map - old);
	else
		__atomic_sub_fetch(&large_in_use, old - map, __ATOMIC_RELAXED);
	return n;
}

size_t mcg_large_age(void)
{
	large_init();
	struct mcg_list gone = MCG_LIST_INIT(gone);
	mcg_lock(&large.lock);
	large.step++;
	while (!mcg_list_empty(&large.age)) {
		struct mcg_chunk *c = mcg_list_entry(large.age.next, struct mcg_chunk, large_lru);
		if (c->large_stamp + 2 > large.step)
			break; /* retained since the last step: it stays one more */
		evict_oldest_locked(&gone);
	}
	/* The cap follows use: this period's peak becomes the one before. */
	__atomic_store_n(&large.peak_prev, __atomic_load_n(&large_peak, __ATOMIC_RELAXED),
	                 __ATOMIC_RELAXED);
	__atomic_store_n(&large_peak, __atomic_load_n(&large_in_use, __ATOMIC_RELAXED),
	                 __ATOMIC_RELAXED);
	size_t cap = mcg_large_cap();
	while (large.retained > cap)
		evict_oldest_locked(&gone);
	mcg_unlock(&large.lock);
	return unmap_list(&gone);
}

size_t mcg_large_flush(void)
{
	large_init();
	struct mcg_list gone = MCG_LIST_INIT(gone);
	mcg_lock(&large.lock);
	while (!mcg_list_empty(&large.age))
		evict_oldest_locked(&gone);
	mcg_unlock(&large.lock);
	return unmap_list(&gone);
}

void mcg_large_lock_all(void)
{
	large_init();
	mcg_lock_raw(&large.lock);
}

void mcg_large_unlock_all(void) { mcg_unlock_raw(&large.lock); }
