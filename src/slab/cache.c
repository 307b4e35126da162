/* SPDX-License-Identifier: MIT */
/*
 * slab/cache.c - object caches: the public calls, their slow paths, and the
 * cache's life (create, destroy, fork).
 *
 * The fast paths come first (cache_fast.h does the work): pop or push on this
 * CPU's array.  The slow paths below them move a batch between the array and
 * the node's slabs (slab.c).  Locks: see slab.h.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "base/mm_const.h"
#include "base/fault.h"
#include "base/log.h"
#include "base/options.h"
#include "os/os.h"
#include "page/pages.h"
#include "slab/account.h"

/* ------------------------------------------------------------ fast paths */

mcg_cold void *mcg_null_einval(void)
{
	errno = EINVAL;
	return NULL;
}

/* Every exit a return or a tail call: no frame on the fast paths. */
mcg_public mcg_entry_aligned void *mcg_cache_alloc(mcg_cache_t *c)
{
	if (unlikely(!c))
		return mcg_null_einval();
	if (unlikely(c->flags & MCG_CACHE_ACCOUNT)) /* charge the current group */
		return mcg_cache_alloc_current(c);
	return mcg_cache_alloc_fast(c);
}

mcg_public mcg_entry_aligned void mcg_cache_free(mcg_cache_t *c, void *obj)
{
	if (unlikely(!obj))
		return;
	if (unlikely(!mcg_chunk_owned(obj))) {
		mcg_cache_free_slow(c, obj, NULL, MCG_FREE_UNCHECKED);
		return;
	}
	/* A unit that holds no slab has cache NULL and start_test 0: with c NULL
	 * too, mcg_slab_index() fails and the slow path sorts it out. */
	struct mcg_slab *s = mcg_slab_unit(obj);
	if (unlikely(s->cache != c)) {
		mcg_cache_free_slow(c, obj, s, MCG_FREE_UNCHECKED);
		return;
	}
	mcg_cache_free_fast(c, s, obj);
}

/* ------------------------------------------------------------ slow paths */

/* This CPU's node, its array of @c marked busy for aging; no lock held. */
static unsigned current_node_touch(struct mcg_cache *c)
{
	mcg_slab_age_tick();
	unsigned cpu = mcg_percpu_cpu();
	struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(c->pcpu, cpu);
	if (!MCG_READ_ONCE(st->touched))
		MCG_WRITE_ONCE(st->touched, 1);
	return mcg_os_cpu_node(cpu);
}

mcg_noinline void *mcg_cache_alloc_slow(struct mcg_cache *c)
{
	if (!mcg_percpu_use_rseq()) /* the fast path's pop failed: locked mode */
		return mcg_cache_alloc_cpulock(c);
	return mcg_cache_refill(c);
}

mcg_noinline void *mcg_cache_refill(struct mcg_cache *c)
{
	if (c->debug)
		return mcg_debug_alloc(c);
	void *objs[MCG_BATCH_MAX];
	uint64_t fresh;
	unsigned node = current_node_touch(c);
	unsigned n = mcg_node_take(c, node, objs, c->batch, &fresh);
	if (unlikely(n == 0)) {
		errno = ENOMEM;
		return NULL;
	}
	if (fresh)
		mcg_construct_fresh(c, objs, n, fresh);
	if (n > 1) {
		uint32_t pushed = mcg_pcpu_stack_push_batch(c->pcpu, objs + 1, n - 1);
		if (pushed < n - 1)
			mcg_node_put(c, objs + 1 + pushed, n - 1 - pushed);
	}
	return objs[0];
}

/* The fast paths of locked mode (no rseq): a lock per CPU slot. */
mcg_noinline void *mcg_cache_alloc_cpulock(struct mcg_cache *c)
{
	void *obj = mcg_cache_pop_cpulock(c);
	return obj ? obj : mcg_cache_refill(c);
}

mcg_noinline void mcg_cache_free_cpulock(struct mcg_cache *c, struct mcg_slab *s, void *obj)
{
	int r = mcg_cpulock_stack_push(c->pcpu, obj);
	if (r != MCG_PCPU_OK)
		mcg_cache_free_slow(c, obj, s, r == MCG_PCPU_FAIL ? MCG_FREE_FLUSH : r);
}

mcg_noinline void mcg_cache_free_slow(struct mcg_cache *c, void *obj, struct mcg_slab *s, int why)
{
	void *slot = obj; /* from a push: tagged if its slab has a vector (cache_fast.h) */
	if (why != MCG_FREE_UNCHECKED && why != MCG_FREE_MISALIGNED)
		obj = mcg_slot_obj((uintptr_t)obj);
	switch (why) {
	case MCG_FREE_UNCHECKED:
		if (!c) {
			mcg_report(MCG_REPORT_FOREIGN_PTR, NULL, obj);
		} else if (!s || !s->cache) {
			mcg_report(MCG_REPORT_FOREIGN_PTR, c, obj);
		} else {
			mcg_report(MCG_REPORT_WRONG_CACHE, c, obj);
		}
		return;
	case MCG_FREE_MISALIGNED:
		/* c NULL and a unit without a slab meet here (mcg_cache_free()). */
		mcg_report(s->cache ? MCG_REPORT_MISALIGNED : MCG_REPORT_FOREIGN_PTR, c, obj);
		return;
	case MCG_PCPU_DOUBLE: mcg_report(MCG_REPORT_DOUBLE_FREE, c, obj); return;
	default: break;
	}
	if (c->debug) {
		mcg_debug_free(c, slot);
		return;
	}
	if (why == MCG_PCPU_FAIL && !mcg_percpu_use_rseq()) { /* a section failed: locked mode */
		mcg_cache_free_cpulock(c, s, slot);
		return;
	}
	/* The array is full (or stopped): flush its top batch and @obj. */
	void *objs[MCG_BATCH_MAX + 1];
	current_node_touch(c);
	unsigned n = mcg_pcpu_stack_pop_batch(c->pcpu, objs, c->batch);
	objs[n++] = slot;
	mcg_node_put(c, objs, n);
}

/* ------------------------------------------------------------ life */

mcg_lock_t mcg_cache_list_lock;
struct mcg_list mcg_cache_list = MCG_LIST_INIT(mcg_cache_list);
static pthread_once_t slab_once = PTHREAD_ONCE_INIT;
static int slab_init_error;

/* Every slab's spin lock, each node's lists walked under the node lock the
 * caller holds.  A slab's lock is also taken with no node lock held (the
 * flush in slab_free_run(), the sole-objcg note in account.c): a child
 * forked while another thread held one would find the slab locked by a
 * thread it does not have, and its bitmap half changed. */
static void fork_slab_locks(bool lock)
{
	mcg_list_for_each (pos, &mcg_cache_list) {
		struct mcg_cache *c = mcg_list_entry(pos, struct mcg_cache, link);
		for (unsigned n = 0; n < c->nr_nodes; n++) {
			struct mcg_list *lists[3] = {&c->nodes[n].partial, &c->nodes[n].full,
			                             &c->nodes[n].empty};
			for (int l = 0; l < 3; l++)
				mcg_list_for_each (sp, lists[l]) {
					struct mcg_slab *s =
					        mcg_list_entry(sp, struct mcg_slab, link);
					if (lock)
						mcg_spin_lock_raw(&s->lock);
					else
						mcg_spin_unlock_raw(&s->lock);
				}
		}
	}
}

static void (*fork_upper_lock)(void), (*fork_upper_unlock)(void);

void mcg_slab_set_fork_hooks(void (*lock)(void), void (*unlock)(void))
{
	/* Under the cache list lock: no fork is between its prepare and release. */
	mcg_lock(&mcg_cache_list_lock);
	fork_upper_lock = lock;
	fork_upper_unlock = unlock;
	mcg_unlock(&mcg_cache_list_lock);
}

static void fork_prepare(void)
{
	/* Every lock in rank order, the group layer's included (group.h);
	 * the reaper's first (it takes no other under it). */
	mcg_reaper_fork_prepare();
	mcg_group_fork_lock_drain();
	mcg_lock_raw(&mcg_cache_list_lock);
	mcg_group_fork_lock_tree();
	unsigned ncpu = mcg_os_nr_cpus();
	mcg_list_for_each (pos, &mcg_cache_list) {
		struct mcg_cache *c = mcg_list_entry(pos, struct mcg_cache, link);
		for (unsigned cpu = 0; cpu < ncpu; cpu++)
			mcg_lock_raw(&mcg_pcpu_stack_of(c->pcpu, cpu)->lock);
	}
	mcg_list_for_each (pos, &mcg_cache_list) {
		struct mcg_cache *c = mcg_list_entry(pos, struct mcg_cache, link);
		for (unsigned n = 0; n < c->nr_nodes; n++)
			mcg_lock_raw(&c->nodes[n].lock);
	}
	fork_slab_locks(true);
	mcg_pages_lock_all();
	mcg_group_fork_lock_leaves();
	if (fork_upper_lock)
		fork_upper_lock();
}

static void fork_release(void)
{
	if (fork_upper_unlock)
		fork_upper_unlock();
	mcg_group_fork_unlock_leaves();
	mcg_pages_unlock_all();
	fork_slab_locks(false);
	unsigned ncpu = mcg_os_nr_cpus();
	mcg_list_for_each (pos, &mcg_cache_list) {
		struct mcg_cache *c = mcg_list_entry(pos, struct mcg_cache, link);
		for (unsigned n = 0; n < c->nr_nodes; n++)
			mcg_unlock_raw(&c->nodes[n].lock);
		for (unsigned cpu = 0; cpu < ncpu; cpu++)
			mcg_unlock_raw(&mcg_pcpu_stack_of(c->pcpu, cpu)->lock);
	}
	mcg_group_fork_unlock_tree();
	mcg_unlock_raw(&mcg_cache_list_lock);
	mcg_group_fork_unlock_drain();
}

static void fork_parent(void)
{
	fork_release();
	mcg_reaper_fork_parent();
}

static void fork_child(void)
{
	fork_release();
	mcg_reaper_fork_child();
	mcg_percpu_after_fork_child();
	/* Only this thread lives on: those that were reclaiming are gone. */
	mcg_reclaim_gate_ = mcg_reclaim_state_current ? MCG_PCPU_GATE_UNIT : 0;
}

/*
 * mcg_pages_init() cannot fail, and pthread_atfork() fails only when it
 * cannot allocate its handler's entry - glibc keeps a process's first 48
 * handlers in static storage: no test can make the start fail (its callers'
 * failure branches are marked GCOVR_EXCL, "start cannot fail").  The error
 * is kept all the same: another libc, or a process with many handlers, may
 * allocate.
 */
static void slab_init_once(void)
{
	mcg_lock_init(&mcg_cache_list_lock, MCG_RANK_CACHE_LIST);
	mcg_percpu_init();
	slab_init_error = mcg_pages_init();
	mcg_objcg_set_array_hooks(mcg_slab_drain_units, mcg_slab_scan_units);
	if (!slab_init_error) /* GCOVR_EXCL_BR_LINE: start cannot fail (slab_init_once) */
		slab_init_error = -pthread_atfork(fork_prepare, fork_parent, fork_child);
}

int mcg_slab_init(void)
{
	pthread_once(&slab_once, slab_init_once);
	return slab_init_error;
}

/* Slab geometry: the smallest span of units with >= 8 objects and <= 1/8 waste. */
static unsigned slab_units_for(size_t slot)
{
	unsigned units = 1;
	while (units < MCG_UNITS_PER_CHUNK / 2 && units * MCG_UNIT_SIZE < 8 * slot)
		units *= 2;
	while (units < MCG_UNITS_PER_CHUNK / 2 &&
	       (units * MCG_UNIT_SIZE) % slot > units * MCG_UNIT_SIZE / 8)
		units *= 2;
	return units;
}

static uint32_t cpu_cap_for(size_t slot)
{
	long opt = mcg_option(MCG_OPT_CPU_OBJECTS);
	if (opt > 0)
		return (uint32_t)opt;
	/* 64 KiB of objects (the kernel's SLAB kept 30-54 KiB), 2 to 256:
	 * what an idle CPU array holds until aging, per CPU and class. */
	size_t cap = 65536 / slot;
	return (uint32_t)MCG_MAX(2, MCG_MIN(cap, 256));
}

struct mcg_cache *mcg_cache_create_internal(const char *name, size_t size, size_t align,
                                            unsigned flags, mcg_ctor_t ctor)
{
	if (mcg_option(MCG_OPT_SLAB_DEBUG))
		flags |= MCG_CACHE_POISON | MCG_CACHE_REDZONE;
	if (align == 0)
		align = size >= 16 ? 16 : 8;
	if (flags & MCG_CACHE_HWCACHE_ALIGN)
		align = MCG_MAX(align, (size_t)MCG_CACHELINE);
	bool debug = flags & (MCG_CACHE_POISON | MCG_CACHE_REDZONE);
	/* A red zone: the object's padding to 8 bytes and 8 more. */
	size_t redzone = (flags & MCG_CACHE_REDZONE) ? MCG_ALIGN_UP(size, 8) + 8 - size : 0;
	size_t slot = MCG_ALIGN_UP(MCG_MAX(size + redzone, (size_t)MCG_MIN_SLOT), align);
	slot = MCG_ALIGN_UP(slot, 8);
	unsigned units = slab_units_for(slot);
	size_t objs = units * MCG_UNIT_SIZE / slot;
	if (objs == 0 || slot > UINT32_MAX) {
		errno = EINVAL;
		return NULL;
	}

	unsigned ncpu = mcg_os_nr_cpus(), nnodes = mcg_os_nr_nodes();
	uint32_t cap = cpu_cap_for(slot);
	size_t off_nodes = MCG_ALIGN_UP(sizeof(struct mcg_cache), 64);
	size_t off_pcpu =
	        MCG_ALIGN_UP(off_nodes + nnodes * sizeof(struct mcg_cache_node), MCG_PCPU_STRIDE);
	size_t head = off_pcpu + (size_t)ncpu * MCG_PCPU_STRIDE;
	/* Each CPU's slots follow a NULL slot of their own: the push compares
	 * the object with slots[cur - 1] without testing cur for 0. */
	size_t slot_bytes = MCG_ALIGN_UP((size_t)ncpu * (cap + 1) * sizeof(void *), MCG_PAGE_SIZE);
	void **slots = mcg_os_map(slot_bytes, MCG_PAGE_SIZE);
	mcg_lock(&mcg_cache_list_lock);
	char *mem = slots ? mcg_cache_head_alloc(head) : NULL;
	mcg_unlock(&mcg_cache_list_lock);
	if (!mem) {
		if (slots)
			mcg_os_unmap(slots, slot_bytes);
		errno = ENOMEM;
		return NULL;
	}

	struct mcg_cache *c = (struct mcg_cache *)mem;
	c->pcpu = (struct mcg_pcpu_stack *)(mem + off_pcpu);
	c->slot_size = (uint32_t)slot;
	c->flags = flags;
	c->recip = ((1ull << MCG_RECIP_SHIFT) + slot - 1) / slot;
	c->shift = (uint32_t)__builtin_ctzl(slot);
	uint64_t odd = slot >> c->shift, inv = odd; /* right in 3 bits: odd * odd = 1 mod 8 */
	for (int i = 0; i < 5; i++)                 /* Newton: 6, 12, 24, 48, 96 bits */
		inv *= 2 - odd * inv;
	c->inv = inv;
	c->debug = debug;
	c->objcg_kind = (flags & MCG_CACHE_RECLAIMABLE) ? MCG_OBJCG_SLAB_RECLAIMABLE
	                                                : MCG_OBJCG_SLAB_UNRECLAIMABLE;
	/* The slot and its vector entry (exactly: a unit is the entry's size). */
	c->charge_units = (uint32_t)((slot + sizeof(mcg_objcg_id_t)) / MCG_OBJCG_UNIT);
	c->cpu_cap = cap;
	c->batch = MCG_MAX(1u, MCG_MIN(cap / 2, (uint32_t)MCG_BATCH_MAX));
	c->objs_per_slab = (uint32_t)objs;
	c->slab_units = units;
	c->object_size = size;
	c->align = align;
	c->redzone = redzone;
	c->ctor = ctor;
	c->slot_mem = slots;
	c->slot_bytes = slot_bytes;
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->nr_nodes = nnodes;
	c->nodes = (struct mcg_cache_node *)(mem + off_nodes);
	for (unsigned n = 0; n < nnodes; n++) {
		struct mcg_cache_node *cn = &c->nodes[n];
		mcg_lock_init(&cn->lock, MCG_RANK_NODE);
		mcg_list_init(&cn->partial);
		mcg_list_init(&cn->full);
		mcg_list_init(&cn->empty);
	}
	for (unsigned cpu = 0; cpu < ncpu; cpu++) {
		struct mcg_pcpu_stack *st = mcg_pcpu_stack_of(c->pcpu, cpu);
		mcg_lock_init(&st->lock, MCG_RANK_PCPU);
		st->slots = c->slot_mem + (size_t)cpu * (cap + 1) + 1;
		if (debug)
			mcg_pcpu_stack_stop(st);
		else
			mcg_pcpu_stack_start(st, cap);
	}
	mcg_lock(&mcg_cache_list_lock);
	mcg_list_add_tail(&c->link, &mcg_cache_list);
	mcg_unlock(&mcg_cache_list_lock);
	return c;
}

mcg_public mcg_cache_t *mcg_cache_create(const char *name, size_t size, size_t align,
                                         unsigned flags, mcg_ctor_t ctor)
{
	if (!name || size == 0 || size > MCG_CACHE_MAX_SIZE || (align & (align - 1)) ||
	    align > MCG_PAGE_SIZE || (flags & ~MCG_CACHE_FLAGS_ALL)) {
		errno = EINVAL;
		return NULL;
	}
	int err = mcg_slab_init();
	if (err) {            /* GCOVR_EXCL_BR_LINE: start cannot fail (slab_init_once) */
		errno = -err; /* GCOVR_EXCL_LINE */
		return NULL;  /* GCOVR_EXCL_LINE */
	}
	return mcg_cache_create_internal(name, size, align, flags, ctor);
}

/* Report every object still out of a slab of @c (arrays already drained). */
static size_t cache_report_live(struct mcg_cache *c)
{
	size_t live = 0;
	for (unsigned n = 0; n < c->nr_nodes; n++) {
		struct mcg_cache_node *cn = &c->nodes[n];
		mcg_lock(&cn->lock);
		struct mcg_list *lists[2] = {&cn->partial, &cn->full};
		for (int l = 0; l < 2; l++) {
			mcg_list_for_each (pos, lists[l]) {
				struct mcg_slab *s = mcg_list_entry(pos, struct mcg_slab, link);
				mcg_spin_lock(&s->lock);
				for (uint32_t i = 0; i < s->nobjs; i++) {
					if (!(s->bitmap[i >> 6] & (1ull << (i & 63))))
						continue;
					live++;
					mcg_report(MCG_REPORT_LEAK, c,
					           s->base + (size_t)i * c->slot_size);
				}
				mcg_spin_unlock(&s->lock);
			}
		}
		mcg_unlock(&cn->lock);
	}
	return live;
}

mcg_public int mcg_cache_destroy(mcg_cache_t *c)
{
	if (!c)
		return -EINVAL;
	mcg_cache_drain_all(c);
	if (cache_report_live(c))
		return -EBUSY;
	mcg_lock(&mcg_cache_list_lock);
	mcg_list_del(&c->link);
	mcg_unlock(&mcg_cache_list_lock);
	for (unsigned n = 0; n < c->nr_nodes; n++) {
		mcg_node_release_empty(c, n, 0, SIZE_MAX);
		mcg_lock_destroy(&c->nodes[n].lock);
	}
	unsigned ncpu = mcg_os_nr_cpus();
	for (unsigned cpu = 0; cpu < ncpu; cpu++)
		mcg_lock_destroy(&mcg_pcpu_stack_of(c->pcpu, cpu)->lock);
	mcg_os_unmap(c->slot_mem, c->slot_bytes);
	mcg_lock(&mcg_cache_list_lock);
	mcg_cache_head_free(c);
	mcg_unlock(&mcg_cache_list_lock);
	return 0;
}

mcg_public int mcg_cache_stats(mcg_cache_t *c, mcg_cache_stats_t *st)
{
	if (!c || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->name = c->name;
	st->object_size = c->object_size;
	st->slot_size = c->slot_size;
	st->charge_size = (size_t)c->charge_units * MCG_OBJCG_UNIT;
	st->objs_per_slab = c->objs_per_slab;
	st->slab_bytes = (size_t)c->slab_units * MCG_UNIT_SIZE;
	st->cpu_limit = c->debug ? 0 : c->cpu_cap;
	st->batch = c->batch;
	st->flags = c->flags;
	size_t out = 0;
	for (unsigned n = 0; n < c->nr_nodes; n++) {
		struct mcg_cache_node *cn = &c->nodes[n];
		mcg_lock(&cn->lock);
		size_t slabs = cn->nr_partial + cn->nr_full + cn->nr_empty;
		st->num_slabs += slabs;
		st->active_slabs += cn->nr_partial + cn->nr_full;
		st->num_objs += slabs * c->objs_per_slab;
		out += mcg_node_objects_out(c, n);
		mcg_unlock(&cn->lock);
	}
	if (!c->debug) {
		unsigned ncpu = mcg_os_nr_cpus();
		for (unsigned cpu = 0; cpu < ncpu; cpu++) {
			uint32_t cur = MCG_READ_ONCE(mcg_pcpu_stack_of(c->pcpu, cpu)->cur);
			st->cached_objs += cur;
		}
	}
	st->purged_bytes = __atomic_load_n(&c->purged_pages, __ATOMIC_RELAXED) * MCG_PAGE_SIZE;
	/* Racy while running (arrays move under us); exact at rest. */
	st->active_objs = out > st->cached_objs ? out - st->cached_objs : 0;
	return 0;
}
