/* SPDX-License-Identifier: MIT */
/*
 * slab/slabinfo.c - every cache in /proc/slabinfo "version: 2.1" format.
 *
 * Columns as the kernel prints them: objsize is the slot (object plus
 * alignment and debug bytes), pagesperslab counts 4 KiB pages, the tunables
 * are the CPU array's limit and batch (sharedfactor 0: no shared array).
 * mcg_slabinfo_collect() copies the same figures out for the iface layer's
 * renderers (slabinfo text, JSON, Prometheus).
 *
 * Lock: the cache list lock while walking (and each cache's node locks
 * inside mcg_cache_stats()).
 */
#include <errno.h>
#include <stdio.h>

#include "base/log.h"
#include "slab/slab.h"

const char mcg_slabinfo_header[] =
        "slabinfo - version: 2.1\n"
        "# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : "
        "tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> "
        "<sharedavail>\n";

int mcg_slabinfo_format(char *buf, size_t len, const char *name, const mcg_cache_stats_t *st)
{
	return snprintf(buf, len,
	                "%-17s %6zu %6zu %6zu %4zu %4zu : tunables %4zu %4zu %4d : "
	                "slabdata %6zu %6zu %6d\n",
	                name, st->active_objs, st->num_objs, st->slot_size, st->objs_per_slab,
	                st->slab_bytes / 4096, st->cpu_limit, st->batch, 0, st->active_slabs,
	                st->num_slabs, 0);
}

mcg_public int mcg_slabinfo_write(int fd)
{
	int err = mcg_slab_init();
	if (err)            /* GCOVR_EXCL_BR_LINE: start cannot fail (cache.c) */
		return err; /* GCOVR_EXCL_LINE */
	int r = mcg_fdprintf(fd, "%s", mcg_slabinfo_header);
	if (r < 0)
		return r;
	char line[256];
	mcg_lock(&mcg_cache_list_lock);
	mcg_list_for_each (pos, &mcg_cache_list) {
		struct mcg_cache *c = mcg_list_entry(pos, struct mcg_cache, link);
		mcg_cache_stats_t st;
		mcg_cache_stats(c, &st);
		mcg_slabinfo_format(line, sizeof(line), st.name, &st);
		r = mcg_fdprintf(fd, "%s", line);
		if (r < 0)
			break;
	}
	mcg_unlock(&mcg_cache_list_lock);
	return r < 0 ? r : 0;
}

size_t mcg_slabinfo_collect(struct mcg_slabinfo_row *rows, size_t max)
{
	if (mcg_slab_init()) /* GCOVR_EXCL_BR_LINE: start cannot fail (cache.c) */
		return 0;    /* GCOVR_EXCL_LINE */
	size_t n = 0;
	mcg_lock(&mcg_cache_list_lock);
	mcg_list_for_each (pos, &mcg_cache_list) {
		struct mcg_cache *c = mcg_list_entry(pos, struct mcg_cache, link);
		if (n < max) {
			mcg_cache_stats(c, &rows[n].st);
			snprintf(rows[n].name, sizeof(rows[n].name), "%s", rows[n].st.name);
			rows[n].st.name = NULL;
		}
		n++;
	}
	mcg_unlock(&mcg_cache_list_lock);
	return n;
}
