/* SPDX-License-Identifier: MIT */
/*
 * slab/kmalloc.c - the malloc family over size-class caches.
 *
 * Size classes: 16..128 in steps of 16, then four per power of two
 * (160, 192, 224, 256, 320, ...) up to 256 KiB: at most 25 % slack.  Sizes
 * up to 4 KiB find their cache with one table load; larger ones with a
 * count-leading-zeros.  Blocks above 256 KiB are LARGE chunks
 * (page/large.h): the same classes on up to 64 MiB, each block its own
 * mapping, retained for reuse when freed, so a reused block is not zero
 * (calloc clears it); realloc resizes one with mremap.  A large block's
 * pages are charged while it is handed out, never while retained.
 *
 * Fast paths first: mcg_malloc and mcg_free are a table load plus the cache
 * fast path (cache_fast.h).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "base/log.h"
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
struct mcg_cache *mcg_kmalloc_small_[KMALLOC_SMALL_MAX / 16 + 1] = {
        /* by (size+15)/16 */ [0 ... KMALLOC_SMALL_MAX / 16] = &mcg_kmalloc_stub_};

static inline size_t class_size(unsigned cls)
{
	if (cls < 8)
		return 16 * (size_t)(cls + 1);
	unsigned b = 7 + (cls - 8) / 4, k = (cls - 8) % 4;
	return (1ul << b) + (size_t)(k + 1) * (1ul << (b - 2));
}

static int kmalloc_init(void);

/* ------------------------------------------------------------ fast paths */

mcg_public mcg_entry_aligned void *mcg_malloc(size_t size) { return mcg_kmalloc_fast(size); }

mcg_public mcg_entry_aligned void mcg_free(void *p) { mcg_kfree_fast(p); }

mcg_noinline void *mcg_kmalloc_small_slow(size_t size, struct mcg_cache *c)
{
	if (c == &mcg_kmalloc_stub_)
		return mcg_kmalloc_slow(size);
	return mcg_cache_alloc_slow(c);
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
		for (size_t i = 0; i < MCG_ARRAY_SIZE(mcg_kmalloc_small_); i++)
			__atomic_store_n(&mcg_kmalloc_small_[i],
			                 mcg_kmalloc_caches_[mcg_kmalloc_class(i * 16)],
			                 __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&kmalloc_init_lock);
	return err;
}

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
