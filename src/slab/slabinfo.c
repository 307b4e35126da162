/* SPDX-License-Identifier: MIT */
/*
 * slab/slabinfo.c - every cache in /proc/slabinfo "version: 2.1" format.
 *
 * Columns as the kernel prints them: objsize is the slot (object plus
 * alignment and debug bytes), pagesperslab counts 4 KiB pages, the tunables
 * are the CPU array's limit and batch (sharedfactor 0: no shared array).
 */
#include <errno.h>

#include "base/log.h"
#include "slab/slab.h"

mcg_public int mcg_slabinfo_write(int fd)
{
	int err = mcg_slab_init();
	if (err)
		return err;
	int r = mcg_fdprintf(fd, "slabinfo - version: 2.1\n"
	                         "# name            <active_objs> <num_objs> <objsize> "
	                         "<objperslab> <pagesperslab> : tunables <limit> "
	                         "<batchcount> <sharedfactor> : slabdata <active_slabs> "
	                         "<num_slabs> <sharedavail>\n");
	if (r < 0)
		return r;
	mcg_lock(&mcg_cache_list_lock);
	mcg_list_for_each (pos, &mcg_cache_list) {
		struct mcg_cache *c = mcg_list_entry(pos, struct mcg_cache, link);
		mcg_cache_stats_t st;
		mcg_cache_stats(c, &st);
		r = mcg_fdprintf(fd,
		                 "%-17s %6zu %6zu %6zu %4zu %4zu : tunables %4zu %4zu %4d : "
		                 "slabdata %6zu %6zu %6d\n",
		                 st.name, st.active_objs, st.num_objs, st.slot_size,
		                 st.objs_per_slab, st.slab_bytes / 4096, st.cpu_limit, st.batch, 0,
		                 st.active_slabs, st.num_slabs, 0);
		if (r < 0)
			break;
	}
	mcg_unlock(&mcg_cache_list_lock);
	return r < 0 ? r : 0;
}
