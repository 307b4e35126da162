/* SPDX-License-Identifier: MIT */
/*
 * examples/tenants/tenants.c - memcg's multi-tenant pattern in one page:
 * two tenants share one cache of entries; each tenant is a group with a
 * memory.max, each entry is charged to its tenant, and the entries sit on a
 * memcg-aware list_lru with a shrinker.  When a tenant reaches its max, the
 * charge of its next entry reclaims - runs the shrinker on that tenant's
 * own list - instead of failing, so a noisy tenant evicts its own oldest
 * entries and never the quiet tenant's.
 *
 * Build: cc tenants.c $(pkg-config --cflags --libs memcg).  Exits 0 when
 * the quiet tenant kept every entry and neither went over its max.
 * (examples/kvcache is the same pattern in a real server.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memcg/group.h>
#include <memcg/kmalloc.h>
#include <memcg/reclaim.h>

struct entry {
	mcg_lru_link_t link; /* on the list_lru of the group it is charged to */
	char value[1000];
};

static mcg_list_lru_t *lru;
static long evicted;

/* Isolate: under the list's lock, only move the entry to a private list. */
static enum mcg_lru_status isolate(mcg_lru_link_t *item, mcg_list_lru_one_t *list, void *dispose)
{
	mcg_list_lru_isolate_move(list, item, dispose);
	return MCG_LRU_REMOVED;
}

static unsigned long count(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	return mcg_list_lru_shrink_count(lru, sc);
}

/* Scan: take the oldest entries of sc's group, then free them with no lock
 * held.  mcg_free() uncharges each entry from its tenant: that is what
 * reclaim counts as reclaimed. */
static unsigned long scan(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	mcg_lru_link_t dispose = {&dispose, &dispose};
	unsigned long n = mcg_list_lru_shrink_walk(lru, sc, isolate, &dispose);
	while (dispose.next != &dispose) {
		mcg_lru_link_t *l = dispose.next;
		dispose.next = l->next;
		l->next->prev = &dispose;
		mcg_free(l); /* the entry starts with its link */
	}
	__atomic_fetch_add(&evicted, (long)n, __ATOMIC_RELAXED);
	return n;
}

/* Store one entry for @tenant: charged to it, on its list. */
static int put(mcg_group_t *tenant, int i)
{
	struct entry *e = mcg_malloc_account(sizeof(*e), tenant);
	if (!e)
		return -1; /* only when reclaim could free nothing */
	snprintf(e->value, sizeof(e->value), "value %d", i);
	mcg_lru_link_init(&e->link);
	mcg_list_lru_add(lru, &e->link, 0, tenant);
	return 0;
}

static long current(mcg_group_t *g)
{
	char buf[32];
	return mcg_group_read(g, "memory.current", buf, sizeof(buf)) < 0 ? -1 : atol(buf);
}

int main(void)
{
	/* The cache: a memcg-aware shrinker over a list_lru. */
	mcg_shrinker_t *s;
	mcg_shrinker_ops_t ops = {.name = "entries",
	                          .count_objects = count,
	                          .scan_objects = scan,
	                          .flags = MCG_SHRINKER_MEMCG_AWARE};
	if (mcg_shrinker_create(&ops, &s) || mcg_list_lru_create(s, &lru) ||
	    mcg_shrinker_register(s))
		return 1;

	/* Two tenants, 4 MiB each. */
	mcg_group_t *quiet, *noisy;
	if (mcg_group_create(NULL, "quiet", &quiet) || mcg_group_create(NULL, "noisy", &noisy) ||
	    mcg_group_write(quiet, "memory.max", "4M") ||
	    mcg_group_write(noisy, "memory.max", "4M"))
		return 1;

	/* The quiet tenant stores 2 MiB; the noisy one writes 40 MiB, ten times its max. */
	int ok = 1;
	for (int i = 0; i < 2000; i++)
		ok &= put(quiet, i) == 0;
	long peak = 0;
	for (int i = 0; i < 40000; i++) {
		ok &= put(noisy, i) == 0;
		long c = current(noisy);
		peak = c > peak ? c : peak;
	}
	unsigned long kept = mcg_list_lru_count_one(lru, 0, quiet);
	printf("quiet: %lu of 2000 entries kept, memory.current %ld\n", kept, current(quiet));
	printf("noisy: %ld entries evicted, memory.current at most %ld (memory.max 4194304)\n",
	       evicted, peak);
	ok &= kept == 2000 && peak <= 4 << 20;

	/* Tear down: free what is left, then the groups and the shrinker. */
	mcg_shrinker_unregister(s);
	mcg_lru_link_t dispose = {&dispose, &dispose};
	mcg_list_lru_walk(lru, isolate, &dispose, ~0ul);
	while (dispose.next != &dispose) {
		mcg_lru_link_t *l = dispose.next;
		dispose.next = l->next;
		l->next->prev = &dispose;
		mcg_free(l);
	}
	mcg_list_lru_destroy(lru);
	mcg_shrinker_destroy(s);
	mcg_group_drain_stocks();
	ok &= current(quiet) == 0 && current(noisy) == 0;
	mcg_group_remove(quiet);
	mcg_group_remove(noisy);
	mcg_group_put(quiet);
	mcg_group_put(noisy);
	puts(ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
