/* SPDX-License-Identifier: MIT */
/*
 * cache_rest.h - what a cache must look like once every object is freed:
 * mcg_cache_shrink() returns exactly the bytes of every slab the cache had
 * (all of them empty once the CPU arrays are flushed), and leaves no slab
 * and no cached object behind.
 */
#ifndef MCG_TEST_CACHE_REST_H
#define MCG_TEST_CACHE_REST_H

#include "memcg/slab.h"
#include "test.h"

/* Shrink @c, whose objects are all freed; check the exact result. */
static inline void check_shrink_all_free(mcg_cache_t *c)
{
	mcg_cache_stats_t st;
	CHECK_EQ(mcg_cache_stats(c, &st), 0);
	CHECK_EQ(st.active_objs, 0);
	CHECK_EQ(mcg_cache_shrink(c), (long)(st.num_slabs * st.slab_bytes));
	CHECK_EQ(mcg_cache_stats(c, &st), 0);
	CHECK_EQ(st.num_slabs, 0);
	CHECK_EQ(st.num_objs, 0);
	CHECK_EQ(st.cached_objs, 0);
	CHECK_EQ(st.active_objs, 0);
}

#endif /* MCG_TEST_CACHE_REST_H */
