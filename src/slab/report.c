/* SPDX-License-Identifier: MIT */
/*
 * slab/report.c - corruption reports: double free, foreign pointer, poison
 * and red-zone damage, leaks at destroy.  One handler, process-wide.
 */
#include <stdlib.h>

#include "base/log.h"
#include "slab/slab.h"

static mcg_report_fn report_handler;

static const char *const report_names[] = {
        [MCG_REPORT_DOUBLE_FREE] = "double-free",
        [MCG_REPORT_FOREIGN_PTR] = "foreign-pointer",
        [MCG_REPORT_WRONG_CACHE] = "wrong-cache",
        [MCG_REPORT_MISALIGNED] = "misaligned-pointer",
        [MCG_REPORT_FREELIST_CORRUPT] = "freelist-corruption",
        [MCG_REPORT_POISON_CORRUPT] = "poison-overwritten",
        [MCG_REPORT_REDZONE_CORRUPT] = "redzone-overwritten",
        [MCG_REPORT_LEAK] = "leak",
};

mcg_public const char *mcg_report_kind_name(mcg_report_kind_t kind)
{
	if ((unsigned)kind < MCG_ARRAY_SIZE(report_names) && report_names[kind])
		return report_names[kind];
	return "unknown";
}

mcg_public mcg_report_fn mcg_set_report_handler(mcg_report_fn fn)
{
	return __atomic_exchange_n(&report_handler, fn, __ATOMIC_ACQ_REL);
}

void mcg_report(mcg_report_kind_t kind, const struct mcg_cache *c, const void *addr)
{
	mcg_report_t r = {kind, c ? c->name : "?", addr};
	mcg_report_fn fn = __atomic_load_n(&report_handler, __ATOMIC_ACQUIRE);
	if (fn) {
		fn(&r);
		return;
	}
	mcg_log("%s of %p in cache '%s'", mcg_report_kind_name(kind), addr, r.cache);
	if (kind != MCG_REPORT_LEAK)
		abort();
}
