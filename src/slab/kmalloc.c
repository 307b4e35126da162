/* SPDX-License-Identifier: MIT */
/*
 * slab/kmalloc.c - the malloc family over size-class caches.
 *
 * Size classes: 16..128 in steps of 16, then four per power of two
 * (160, 192, 224, 256, 320, ...) up to 256 KiB: at most 25 % slack.  Sizes
 * up to 8 KiB find their cache with one table load; larger ones with a
 * count-leading-zeros.
 *
 * Fitted caches: a request size (a 16-byte granule of the table) that
 * dominates its class - at least half the class's refills, in a class
 * whose slot wastes more than 1/8 of itself and that holds 256 KiB of slabs -
 * gets a cache of exactly its size, and its table entry is pointed at it
 * (a release store; the fast path loads it with acquire).  The evidence is
 * sampled on the refill paths only: one sample per refill of a class
 * cache, counted per class and per granule, halved as a class passes 4096.
 * At most KMALLOC_FIT_MAX are made, never destroyed (aging, shrinking and
 * slabinfo treat them as any cache); frees need nothing (an object's slab
 * names its cache).  One maker at a time (fit_busy, taken with an
 * exchange and never waited for); the cache itself is made as any
 * (mcg_cache_create_internal(): the cache list lock, memory mapped, no
 * malloc), under the cache list lock as kmalloc_init() on a first call:
 * the malloc family's callers hold no lock ranked above it (the library
 * allocates before it takes its locks, or under ranks below it; debug
 * builds check).
 *
 * Blocks above 256 KiB are LARGE chunks (page/large.h): the same classes on
 * up to 64 MiB, each block its own mapping, retained for reuse when freed,
 * so a reused block is not zero (calloc clears it); realloc resizes one
 * with mremap.  A large block's pages are charged while it is handed out,
 * never while retained.
 *
 * Fast paths first: mcg_malloc and mcg_free are a table load plus the cache
 * fast path (cache_fast.h).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "base/log.h"
#include "base/options.h"
#include "memcg/kmalloc.h"
#include "os/os.h" /* MCG_MAX_CPUS */
#include "page/large.h"
#include "slab/account.h"
#include "slab/kmalloc_fast.h"

/*
 * Until kmalloc_init() has run, every entry of mcg_kmalloc_small_ names the
 * stub: a cache whose CPU arrays are always empty (zeroed: cur = lo = 0, in
 * bss, never written in rseq mode), so the malloc fast path needs no test
 * for "not initialised yet" - its pop fails, and the slow path, which knows
 * the size, finds the stub.
 */
static struct mcg_pcpu_stack kmalloc_stub_pcpu[MCG_MAX_CPUS];
struct mcg_cache mcg_kmalloc_stub_ = {.pcpu = kmalloc_stub_pcpu};

struct mcg_cache *mcg_kmalloc_caches_[KMALLOC_CLASSES];
struct mcg_kmalloc_entry mcg_kmalloc_small_[KMALLOC_SMALL_MAX / 16 + 1] = {
        /* by (size+15)/16 */ [0 ... KMALLOC_SMALL_MAX / 16] = {NULL, &mcg_kmalloc_stub_}};

int mcg_kmalloc_arrays_off_;

/* Point entry @e at cache @c: its arrays first (kmalloc_fast.h), none
 * while the table holds none. */
static void small_entry_set(struct mcg_kmalloc_entry *e, struct mcg_cache *c)
{
	struct mcg_pcpu_stack *pcpu = mcg_kmalloc_arrays_off_ ? NULL : c->pcpu;
	__atomic_store_n(&e->pcpu, pcpu, __ATOMIC_RELEASE);
	__atomic_store_n(&e->cache, c, __ATOMIC_RELEASE);
}

void mcg_kmalloc_arrays_off(void)
{
	mcg_kmalloc_arrays_off_ = 1;
	for (size_t i = 0; i < MCG_ARRAY_SIZE(mcg_kmalloc_small_); i++)
		__atomic_store_n(&mcg_kmalloc_small_[i].pcpu, NULL, __ATOMIC_RELEASE);
}

static inline size_t class_size(unsigned cls)
{
	if (cls < 8)
		return 16 * (size_t)(cls + 1);
	unsigned b = 7 + (cls - 8) / 4, k = (cls - 8) % 4;
	return (1ul << b) + (size_t)(k + 1) * (1ul << (b - 2));
}

struct mcg_cache *mcg_kmalloc_fitted_[KMALLOC_FIT_MAX];

static int kmalloc_init(void);
static void fit_sample(size_t size, struct mcg_cache *c);

/* ------------------------------------------------------------ fast paths */

mcg_public mcg_entry_aligned void *mcg_malloc(size_t size) { return mcg_kmalloc_fast(size); }

mcg_public mcg_entry_aligned void mcg_free(void *p) { mcg_kfree_fast(p); }

/* mcg_cache_alloc_cpulock() (locked mode: every allocation comes here)
 * with the size, so that a refill is sampled as in rseq mode. */
static mcg_noinline void *kmalloc_cpulock(size_t size, struct mcg_cache *c)
{
	void *obj = mcg_cache_pop_cpulock(c);
	if (obj)
		return obj;
	fit_sample(size, c);
	return mcg_cache_refill(c);
}

mcg_noinline void *mcg_kmalloc_small_slow(size_t size, struct mcg_cache *c)
{
	if (c == &mcg_kmalloc_stub_)
		return mcg_kmalloc_slow(size);
	if (!mcg_percpu_use_rseq())
		return kmalloc_cpulock(size, c);
	if (unlikely(mcg_kmalloc_arrays_off_)) { /* no pop yet: the cache's own */
		void *obj = mcg_cache_pop(c);
		if (obj)
			return obj;
	}
	fit_sample(size, c); /* the pop found the array empty: a refill */
	return mcg_cache_refill(c);
}

mcg_noinline void *mcg_kmalloc_entry_slow(size_t size, struct mcg_kmalloc_entry *e)
{
	return mcg_kmalloc_small_slow(size, __atomic_load_n(&e->cache, __ATOMIC_ACQUIRE));
}

mcg_noinline void mcg_kfree_slow(void *p)
{
	if (!p) /* free(NULL): nothing to do */
		return;
	struct mcg_chunk *ch = mcg_chunk_of(p);
	if (ch && ch->kind == MCG_CHUNK_LARGE && p == ch->large_ptr) {
		struct mcg_objcg *x = ch->large_objcg;
		unsigned long pages = ch->large_size / MCG_GROUP_PAGE_SIZE;
		if (mcg_large_free(ch)) { /* retained already: nothing changed */
			mcg_report(MCG_REPORT_DOUBLE_FREE, NULL, p);
			return;
		}
		if (x)
			mcg_objcg_uncharge_pages(x, pages);
		return;
	}
	if (ch) { /* misaligned, in a slab or not (the report tells) */
		struct mcg_slab *s = mcg_slab_unit(p);
		mcg_cache_free_slow(s->cache, p, s, MCG_FREE_MISALIGNED);
		return;
	}
	mcg_cache_free_slow(NULL, p, NULL, MCG_FREE_UNCHECKED);
}

/* ------------------------------------------------------------ accounted */

static void *large_alloc(size_t size, size_t align, struct mcg_objcg *x);

/* The first call: the classes do not exist yet (out of line: no frame on the fast path). */
static mcg_noinline void *kmalloc_objcg_first(size_t size, struct mcg_objcg *x)
{
	if (kmalloc_init()) {
		errno = ENOMEM;
		return NULL;
	}
	return mcg_kmalloc_objcg(size, x);
}

/* mcg_kmalloc_objcg() of @size <= KMALLOC_SMALL_MAX past its pop (@slot as
 * for mcg_cache_alloc_objcg_slow()), the stub included. */
static mcg_noinline void *kmalloc_objcg_small_slow(size_t size, struct mcg_objcg *x,
                                                   struct mcg_cache *c, uintptr_t slot)
{
	if (c == &mcg_kmalloc_stub_) /* its arrays are always empty: slot is 0 */
		return kmalloc_objcg_first(size, x);
	/* Nothing popped: a refill.  In locked mode every accounted call comes
	 * here with slot 0: there only the plain path's refills are samples. */
	if (!slot && mcg_percpu_use_rseq())
		fit_sample(size, c);
	return mcg_cache_alloc_objcg_slow(c, x, slot);
}

/* mcg_kmalloc_objcg(), inline in the public call too (no jump between them). */
static mcg_always_inline void *kmalloc_objcg(size_t size, struct mcg_objcg *x)
{
	if (likely(size <= KMALLOC_SMALL_MAX)) {
		/* mcg_cache_alloc_objcg(), its slow path given the size */
		struct mcg_cache *c = mcg_kmalloc_small_cache(size);
		uintptr_t slot;
		void *obj = mcg_cache_pop_charged(c, &x->slot_bits, &slot);
		return likely(obj) ? obj : kmalloc_objcg_small_slow(size, x, c, slot);
	}
	struct mcg_cache *c = mcg_kmalloc_large_cache(size);
	if (unlikely((uintptr_t)c <= 1))
		return c ? large_alloc(size, 16, x) : kmalloc_objcg_first(size, x);
	return mcg_cache_alloc_objcg(c, x);
}

void *mcg_kmalloc_objcg(size_t size, struct mcg_objcg *x) { return kmalloc_objcg(size, x); }

/* mcg_malloc_account() for the current group (out of line: it may call
 * mcg_group_root(), which would give the inline path a stack frame). */
static mcg_noinline void *kmalloc_current(size_t size)
{
	return mcg_kmalloc_objcg(size, mcg_objcg_of(NULL, MCG_OBJCG_SLAB_UNRECLAIMABLE));
}

mcg_public void *mcg_malloc_account(size_t size, mcg_group_t *g)
{
	if (unlikely(!g))
		return kmalloc_current(size);
	return kmalloc_objcg(size, mcg_objcg_of(g, MCG_OBJCG_SLAB_UNRECLAIMABLE));
}

struct mcg_objcg *mcg_kmalloc_objcg_of(const void *p)
{
	struct mcg_slab *s = mcg_slab_of(p);
	if (s) {
		mcg_objcg_id_t *v = mcg_slab_vector(__atomic_load_n(&s->objcgs, __ATOMIC_ACQUIRE));
		long idx = mcg_slab_index(s, p);
		return v && idx >= 0 ? mcg_objcg_from_id(v[idx]) : NULL;
	}
	struct mcg_chunk *ch = mcg_chunk_of(p);
	if (ch && ch->kind == MCG_CHUNK_LARGE && p == ch->large_ptr)
		return ch->large_objcg;
	return NULL;
}

/* ------------------------------------------------------------ set-up */

static pthread_mutex_t kmalloc_init_lock = PTHREAD_MUTEX_INITIALIZER;

/* Create the missing size-class caches.  Return 0 or -errno (retried later). */
static int kmalloc_init(void)
{
	int err = mcg_slab_init();
	if (err)            /* GCOVR_EXCL_BR_LINE: start cannot fail (cache.c) */
		return err; /* GCOVR_EXCL_LINE */
	pthread_mutex_lock(&kmalloc_init_lock);
	for (unsigned cls = 0; cls < KMALLOC_CLASSES && !err; cls++) {
		if (mcg_kmalloc_caches_[cls])
			continue;
		size_t sz = class_size(cls);
		char name[MCG_CACHE_NAME_MAX];
		if (sz % 1024 == 0)
			snprintf(name, sizeof(name), "kmalloc-%zuk", sz / 1024);
		else
			snprintf(name, sizeof(name), "kmalloc-%zu", sz);
		struct mcg_cache *c = mcg_cache_create_internal(name, sz, 0, 0, NULL);
		if (!c)
			err = -ENOMEM;
		else
			__atomic_store_n(&mcg_kmalloc_caches_[cls], c, __ATOMIC_RELEASE);
	}
	if (!err) /* the objcg vectors' caches live as long as kmalloc's */
		err = mcg_slab_vectors_init();
	if (!err) {
		/* Only the entries still on the stub: a later call (threads that
		 * met the stub at once all come here) must not take a granule
		 * back from its fitted cache. */
		for (size_t i = 0; i < MCG_ARRAY_SIZE(mcg_kmalloc_small_); i++)
			if (__atomic_load_n(&mcg_kmalloc_small_[i].cache, __ATOMIC_RELAXED) ==
			    &mcg_kmalloc_stub_) /* fit_make() needs its class there */
				small_entry_set(&mcg_kmalloc_small_[i],
				                mcg_kmalloc_caches_[mcg_kmalloc_class(i * 16)]);
	}
	pthread_mutex_unlock(&kmalloc_init_lock);
	return err;
}

/* ------------------------------------------------------------ fitted caches */

#define FIT_GRANULES (KMALLOC_SMALL_MAX / 16 + 1)
#define FIT_CHECK_EVERY 4           /* a granule's samples between two looks */
#define FIT_DECAY 4096              /* a class's samples at which its counts halve */
#define FIT_MIN_BYTES (256ul << 10) /* a class's slabs in use before it is worth a cache */

/* Samples (refills) per class and per granule, relaxed: a heuristic's. */
static uint32_t fit_class_samples[KMALLOC_CLASSES];
static uint32_t fit_granule_samples[FIT_GRANULES];
static unsigned fit_count; /* entries of mcg_kmalloc_fitted_ in use (fit_busy) */
/* Held by the one thread making a fitted cache (a child forked meanwhile
 * keeps it held and makes none: its classes serve it as before). */
static int fit_busy;

/* Make the fitted cache of granule @g (whose class's cache is @c) when
 * it is still wanted; fit_busy held. */
static void fit_make(size_t g, struct mcg_cache *c)
{
	unsigned nfit = __atomic_load_n(&fit_count, __ATOMIC_RELAXED);
	if (nfit >= KMALLOC_FIT_MAX ||
	    __atomic_load_n(&mcg_kmalloc_small_[g].cache, __ATOMIC_RELAXED) != c)
		return;
	mcg_cache_stats_t st; /* the slabs that hold objects */
	if (mcg_cache_stats(c, &st) || st.active_slabs * st.slab_bytes < FIT_MIN_BYTES)
		return;
	char name[MCG_CACHE_NAME_MAX];
	snprintf(name, sizeof(name), "kmalloc-%zu", g * 16);
	struct mcg_cache *f = mcg_cache_create_internal(name, g * 16, 0, 0, NULL);
	if (!f) /* no memory now: a later sample tries again */
		return;
	__atomic_store_n(&mcg_kmalloc_fitted_[nfit], f, __ATOMIC_RELEASE);
	__atomic_store_n(&fit_count, nfit + 1, __ATOMIC_RELEASE);
	small_entry_set(&mcg_kmalloc_small_[g], f);
}

/* Halve class @cls's counts (by the one sampler that reached FIT_DECAY), so
 * that the sizes of the last few thousand refills decide, not a start's. */
static mcg_noinline void fit_decay(unsigned cls)
{
	size_t lo = class_size(cls - 1) / 16 + 1, hi = class_size(cls) / 16;
	for (size_t g = lo; g <= hi && g < FIT_GRANULES; g++) {
		uint32_t v = __atomic_load_n(&fit_granule_samples[g], __ATOMIC_RELAXED);
		__atomic_fetch_sub(&fit_granule_samples[g], v / 2, __ATOMIC_RELAXED);
	}
	__atomic_fetch_sub(&fit_class_samples[cls], FIT_DECAY / 2, __ATOMIC_RELAXED);
}

/* A refill of class cache @c for @size: count it; every FIT_CHECK_EVERY
 * samples of a granule, see whether it has earned a cache of its own - at
 * least half its class's samples, a class slot that it leaves more than
 * 1/8 empty, and FIT_MIN_BYTES of the class's slabs in use. */
static mcg_noinline void fit_sample(size_t size, struct mcg_cache *c)
{
	if (__atomic_load_n(&fit_count, __ATOMIC_RELAXED) >= KMALLOC_FIT_MAX ||
	    !mcg_option(MCG_OPT_KMALLOC_FIT))
		return;
	unsigned cls = mcg_kmalloc_class(size);
	size_t g = (size + 15) >> 4, cs = class_size(cls);
	/* Classes up to 128 B are granules; a fitted cache's refills are not
	 * samples, nor a debug cache's calls (it has no CPU arrays: every call
	 * is a "refill"). */
	if (cls < 8 || c != __atomic_load_n(&mcg_kmalloc_caches_[cls], __ATOMIC_RELAXED) ||
	    c->debug)
		return;
	uint32_t n = __atomic_add_fetch(&fit_class_samples[cls], 1, __ATOMIC_RELAXED);
	uint32_t k = __atomic_add_fetch(&fit_granule_samples[g], 1, __ATOMIC_RELAXED);
	if (n == FIT_DECAY)
		fit_decay(cls);
	if (k % FIT_CHECK_EVERY || 2 * k < n || cs - g * 16 <= cs / 8)
		return;
	if (__atomic_exchange_n(&fit_busy, 1, __ATOMIC_ACQUIRE))
		return; /* another thread is making one: this sample's look is skipped */
	fit_make(g, c);
	__atomic_store_n(&fit_busy, 0, __ATOMIC_RELEASE);
}

unsigned mcg_kmalloc_fit_count(void) { return __atomic_load_n(&fit_count, __ATOMIC_ACQUIRE); }

/* A large block (retained or new), charged to @x (NULL: not accounted). */
static void *large_alloc(size_t size, size_t align, struct mcg_objcg *x)
{
	mcg_slab_age_tick(); /* a slow path as any: it may run an aging step */
	/* GCOVR_EXCL_BR_START: the slab layer's start cannot fail (cache.c) */
	void *p = mcg_slab_init() == 0 ? mcg_large_alloc(size, align) : NULL;
	/* GCOVR_EXCL_BR_STOP */
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	if (x) {
		struct mcg_chunk *ch = mcg_chunk_of(p);
		if (mcg_objcg_charge_pages(x, ch->large_size / MCG_GROUP_PAGE_SIZE, 0)) {
			mcg_large_free(ch);
			errno = ENOMEM;
			return NULL;
		}
		ch->large_objcg = x;
	}
	return p;
}

mcg_noinline void *mcg_kmalloc_slow(size_t size)
{
	if (size > MCG_KMALLOC_MAX_CACHE_SIZE)
		return large_alloc(size, 16, NULL);
	if (kmalloc_init()) {
		errno = ENOMEM;
		return NULL;
	}
	return mcg_malloc(size);
}

/* ------------------------------------------------------------ the family */

mcg_public size_t mcg_malloc_usable_size(const void *p)
{
	if (!p)
		return 0;
	struct mcg_chunk *ch = mcg_chunk_of(p);
	if (!ch)
		return 0;
	if (ch->kind == MCG_CHUNK_LARGE)
		return p == ch->large_ptr ? ch->large_size : 0;
	struct mcg_slab *s = mcg_slab_of(p);
	if (!s || !s->cache || mcg_slab_index(s, p) < 0)
		return 0;
	return s->cache->object_size;
}

void *mcg_kcalloc_objcg(size_t n, size_t size, struct mcg_objcg *x)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = x ? mcg_kmalloc_objcg(total, x) : mcg_malloc(total);
	/* A new mapping reads zero; a retained block holds its last user's
	 * bytes, resident: clearing them costs less than giving the pages back
	 * and faulting them in again (MADV_DONTNEED). */
	if (p && (total <= MCG_KMALLOC_MAX_CACHE_SIZE || !mcg_chunk_of(p)->large_zero))
		memset(p, 0, total);
	return p;
}

mcg_public void *mcg_calloc(size_t n, size_t size) { return mcg_kcalloc_objcg(n, size, NULL); }

mcg_public void *mcg_calloc_account(size_t n, size_t size, mcg_group_t *g)
{
	return mcg_kcalloc_objcg(n, size, mcg_objcg_of(g, MCG_OBJCG_SLAB_UNRECLAIMABLE));
}

/*
 * realloc of large block @ch to @size (large too): its mapping resized in
 * place or moved (mremap: no copy), its charge moved by the difference;
 * the growth is charged first, so a failure leaves the block as it was.
 */
static mcg_noinline void *large_resize(struct mcg_chunk *ch, size_t size)
{
	struct mcg_objcg *x = ch->large_objcg;
	size_t usable = mcg_large_usable(size);
	unsigned long old_pages = ch->large_size / MCG_GROUP_PAGE_SIZE;
	unsigned long new_pages = usable / MCG_GROUP_PAGE_SIZE;
	if (!usable ||
	    (x && new_pages > old_pages && mcg_objcg_charge_pages(x, new_pages - old_pages, 0))) {
		errno = ENOMEM;
		return NULL;
	}
	struct mcg_chunk *n = mcg_large_resize(ch, size);
	if (!n) {
		if (x && new_pages > old_pages)
			mcg_objcg_uncharge_pages(x, new_pages - old_pages);
		errno = ENOMEM;
		return NULL;
	}
	if (x && new_pages < old_pages)
		mcg_objcg_uncharge_pages(x, old_pages - new_pages);
	return n->large_ptr;
}

mcg_public int mcg_kmalloc_large_stats(struct mcg_large_stats *st)
{
	if (!st)
		return -EINVAL;
	st->in_use = mcg_large_in_use();
	st->retained = mcg_large_retained();
	st->cap = mcg_large_cap();
	return 0;
}

/* The new block is charged where the old one was (or not at all). */
mcg_public void *mcg_realloc(void *p, size_t size)
{
	if (!p)
		return mcg_malloc(size);
	if (size == 0) {
		mcg_free(p); /* as glibc: free, and return NULL */
		return NULL;
	}
	size_t usable = mcg_malloc_usable_size(p);
	if (usable == 0) {
		mcg_cache_free_slow(NULL, p, NULL, MCG_FREE_UNCHECKED);
		errno = EINVAL;
		return NULL;
	}
	if (size <= usable && size > usable / 2)
		return p;
	if (size <= usable && usable <= 16)
		return p;
	if (size > MCG_KMALLOC_MAX_CACHE_SIZE && usable > MCG_KMALLOC_MAX_CACHE_SIZE) {
		struct mcg_chunk *ch = mcg_chunk_of(p);
		if (ch->kind == MCG_CHUNK_LARGE) /* not an aligned slab object */
			return large_resize(ch, size);
	}
	struct mcg_objcg *x = mcg_kmalloc_objcg_of(p); /* alive: p holds charges */
	void *q = x ? mcg_kmalloc_objcg(size, x) : mcg_malloc(size);
	if (!q)
		return NULL;
	memcpy(q, p, MCG_MIN(size, usable));
	mcg_free(p);
	return q;
}

void *mcg_kaligned_objcg(size_t align, size_t size, struct mcg_objcg *x)
{
	if (align == 0 || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	if (align <= 16)
		return x ? mcg_kmalloc_objcg(size, x) : mcg_malloc(size);
	size_t want = MCG_MAX(size, align);
	if (want <= MCG_KMALLOC_MAX_CACHE_SIZE && align <= MCG_UNIT_SIZE) {
		/* A class whose size is a multiple of @align: slabs are unit aligned,
		 * so every object in it is aligned. */
		for (unsigned cls = mcg_kmalloc_class(want); cls < KMALLOC_CLASSES; cls++) {
			if (class_size(cls) % align)
				continue;
			struct mcg_cache *c =
			        __atomic_load_n(&mcg_kmalloc_caches_[cls], __ATOMIC_ACQUIRE);
			if (!c) {
				if (kmalloc_init()) {
					errno = ENOMEM;
					return NULL;
				}
				c = mcg_kmalloc_caches_[cls];
			}
			return x ? mcg_cache_alloc_objcg(c, x) : mcg_cache_alloc_fast(c);
		}
	}
	return large_alloc(size ? size : 1, align, x);
}

mcg_public void *mcg_aligned_alloc(size_t align, size_t size)
{
	return mcg_kaligned_objcg(align, size, NULL);
}

mcg_public int mcg_posix_memalign(void **out, size_t align, size_t size)
{
	if (!out || align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	int saved = errno;
	void *p = mcg_aligned_alloc(align, size);
	if (!p) {
		int e = errno;
		errno = saved;
		return e == EINVAL ? EINVAL : ENOMEM;
	}
	*out = p;
	return 0;
}
