/* SPDX-License-Identifier: MIT */
/*
 * pagecache/page.c - cached pages: their memory, allocation with the
 * charge, freeing with the uncharge, and the data lock's slow path (see
 * page.h).
 *
 * Descriptors come from an unaccounted slab cache ("fpage"), data from
 * 2 MiB blocks backed by huge pages where the OS can (pgdata.h: 4 KiB
 * aligned to 4 KiB, what O_DIRECT needs); the charge is one page per page
 * to the group, through its pcg (mcg_pcg_charge_page()), so memory.current
 * counts file pages as the kernel's does, and the allocators' own slack (a
 * partly used slab or block) is nobody's.
 *
 * Locks: none here but the data lock itself; allocation and freeing run
 * with no page-cache lock held (they take the allocators' locks and charge).
 */
#include "pagecache/page.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "base/fault.h"
#include "base/log.h"
#include "percpu/percpu.h"
#include "memcg/slab.h"
#include "os/os.h"
#include "pagecache/inode.h"
#include "pagecache/pcg.h"
#include "pagecache/pgdata.h"

static mcg_cache_t *desc_cache;
static pthread_once_t caches_once = PTHREAD_ONCE_INIT;

static void caches_init_once(void)
{
	desc_cache = mcg_cache_create("fpage", sizeof(struct mcg_fpage), 0, 0, NULL);
	/* mcg_die() aborts, and an aborted process writes no coverage. */
	if (!desc_cache)                                               /* GCOVR_EXCL_BR_LINE */
		mcg_die("no memory for the page cache's slab caches"); /* GCOVR_EXCL_LINE */
}

void mcg_fpage_init(void) { pthread_once(&caches_once, caches_init_once); }

struct mcg_fpage *mcg_fpage_alloc(struct mcg_pcg *pcg, struct mcg_inode *inode, uint64_t index,
                                  unsigned flags)
{
	/* A fault point for each allocation: the caches fail only when the
	 * OS refuses memory, and each failure has its own clean-up. */
	struct mcg_fpage *p = mcg_fault_should_fail() ? NULL : mcg_cache_alloc(desc_cache);
	if (!p)
		return NULL;
	void *data = mcg_pgdata_alloc();
	if (!data) {
		mcg_cache_free(desc_cache, p);
		return NULL;
	}
	struct mcg_pcg *live = mcg_pcg_charge_page(pcg, flags);
	if (!live) {
		mcg_pgdata_free(data);
		mcg_cache_free(desc_cache, p);
		return NULL;
	}
	memset(p, 0, sizeof(*p));
	p->refcnt = 1;
	p->index = index;
	p->inode = inode;
	p->pcg = live;
	p->data = data;
	unsigned node = mcg_os_cpu_node(mcg_percpu_cpu());
	p->nid = (uint16_t)(node < live->nr_nodes ? node : 0);
	mcg_list_init(&p->lru);
	mcg_inode_get(inode); /* a page keeps its file */
	return p;
}

/* The memory goes after the grace period: a read section may still copy it. */
static void fpage_free_rcu(struct mcg_rcu_head *h)
{
	struct mcg_fpage *p = mcg_container_of(h, struct mcg_fpage, rcu);
	mcg_pgdata_free(p->data);
	mcg_cache_free(desc_cache, p);
}

static struct mcg_rcu_kind fpage_rcu = {.free = fpage_free_rcu};

void mcg_fpage_free_(struct mcg_fpage *p)
{
	uint32_t f = mcg_fpage_flags(p);
	MCG_BUG_ON(f & (PG_LRU | PG_DIRTY | PG_WRITEBACK));
	struct mcg_inode *in = p->inode;
	/* The charge goes now (reclaim counts it): a read section touches the
	 * page's flags, data lock and data only, never its pcg or file. */
	mcg_pcg_uncharge_page(p->pcg);
	mcg_rcu_retire(&fpage_rcu, &p->rcu);
	mcg_inode_put(in);
}

void mcg_fpage_dispose(struct mcg_list *dispose)
{
	mcg_list_for_each_safe (pos, tmp, dispose) {
		struct mcg_fpage *p = mcg_list_entry(pos, struct mcg_fpage, lru);
		mcg_list_del(&p->lru);
		mcg_fpage_free_(p);
	}
}

void mcg_fpage_data_wait_(struct mcg_fpage *p, bool writer)
{
	for (unsigned spins = 0;; spins++) {
		uint32_t v = __atomic_load_n(&p->data_lock, __ATOMIC_RELAXED);
		if (writer ? v == 0 : !(v & MCG_FPAGE_DATA_WRITER)) {
			uint32_t want = writer ? MCG_FPAGE_DATA_WRITER : v + 1;
			if (__atomic_compare_exchange_n(&p->data_lock, &v, want, false,
			                                __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
				return;
			continue;
		}
		if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#endif
		} else {
			sched_yield();
		}
	}
}
