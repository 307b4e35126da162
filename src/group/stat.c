/* SPDX-License-Identifier: MIT */
/*
 * group/stat.c - memory.stat counters and memory.events.
 *
 * Statistics are per-CPU (an rseq add, or a relaxed atomic add without rseq:
 * percpu/pcpu_word.h) and flushed on read, the kernel's rstat idea: a reader
 * sums every CPU's slots over the subtree.  When a group is freed its totals
 * are folded into its parent's stat_dead, so ancestors never lose history.
 *
 * Events are rare: plain atomics.  An event counts once in the group's
 * events_local and once in events of the group and each ancestor, as the
 * kernel's memcg_memory_event() (here the root counts too).
 *
 * Lock: the tree lock, to walk a subtree and to fold; updates are lockless.
 */
#include <string.h>

#include "base/log.h"
#include "percpu/pcpu_word.h"
#include "group/group.h"
#include "memcg/kmalloc.h"
#include "os/os.h"

_Static_assert(MCG_NR_STATS * 8 <= MCG_PCPU_STRIDE, "stats fit one per-CPU block");

static const struct {
	const char *name;
	bool bytes;
} stat_names[MCG_NR_STATS] = {
        [MCG_STAT_CHARGE_FORCED] = {"charge_forced", false},
        [MCG_STAT_PGSCAN_DIRECT] = {"pgscan_direct", false},
        [MCG_STAT_PGSCAN_KSWAPD] = {"pgscan_kswapd", false},
        [MCG_STAT_PGSCAN_PROACTIVE] = {"pgscan_proactive", false},
        [MCG_STAT_PGSTEAL_DIRECT] = {"pgsteal_direct", false},
        [MCG_STAT_PGSTEAL_KSWAPD] = {"pgsteal_kswapd", false},
        [MCG_STAT_PGSTEAL_PROACTIVE] = {"pgsteal_proactive", false},
        [MCG_STAT_THROTTLE_MS] = {"throttled_ms", false},
};

static const char *const event_names[MCG_NR_EVENTS] = {
        [MCG_EVENT_LOW] = "low", [MCG_EVENT_HIGH] = "high",         [MCG_EVENT_MAX] = "max",
        [MCG_EVENT_OOM] = "oom", [MCG_EVENT_OOM_KILL] = "oom_kill",
};

const char *mcg_group_stat_name(enum mcg_group_stat item, bool *bytes)
{
	if (bytes)
		*bytes = stat_names[item].bytes;
	return stat_names[item].name;
}

const char *mcg_group_event_name(enum mcg_group_event ev) { return event_names[ev]; }

void *mcg_group_stat_alloc(void)
{
	size_t size = (size_t)mcg_os_nr_cpus() << MCG_PCPU_SHIFT;
	void *p = mcg_aligned_alloc(MCG_PCPU_STRIDE, size);
	if (p)
		memset(p, 0, size);
	return p;
}

void mcg_group_stat_free(void *pcpu_stat) { mcg_free(pcpu_stat); }

int64_t mcg_group_stat_local(const mcg_group_t *g, enum mcg_group_stat item)
{
	return mcg_pcpu_sum(g->pcpu_stat, (unsigned)item * 8, mcg_os_nr_cpus());
}

/* Add @g's own and freed descendants' values, then its children's (tree lock held). */
static void flush_subtree_locked(const struct mcg_group *g, int64_t *out)
{
	for (int i = 0; i < MCG_NR_STATS; i++)
		out[i] += mcg_group_stat_local(g, i) + g->stat_dead[i];
	mcg_list_for_each (pos, &g->children)
		flush_subtree_locked(mcg_list_entry(pos, struct mcg_group, sibling), out);
}

void mcg_group_stat_flush(mcg_group_t *g, int64_t *out)
{
	memset(out, 0, sizeof(int64_t) * MCG_NR_STATS);
	mcg_lock(&mcg_group_tree_lock);
	flush_subtree_locked(g, out);
	mcg_unlock(&mcg_group_tree_lock);
}

void mcg_group_stat_fold_locked(mcg_group_t *g)
{
	/* g is unreferenced: no CPU can add to its slots any more. */
	for (int i = 0; i < MCG_NR_STATS; i++)
		g->parent->stat_dead[i] += mcg_group_stat_local(g, i) + g->stat_dead[i];
}

void mcg_group_event(mcg_group_t *g, enum mcg_group_event ev)
{
	__atomic_fetch_add(&g->events_local[ev], 1, __ATOMIC_RELAXED);
	for (; g; g = g->parent)
		__atomic_fetch_add(&g->events[ev], 1, __ATOMIC_RELAXED);
}

long mcg_group_event_read(const mcg_group_t *g, enum mcg_group_event ev, bool local)
{
	return __atomic_load_n(local ? &g->events_local[ev] : &g->events[ev], __ATOMIC_RELAXED);
}
