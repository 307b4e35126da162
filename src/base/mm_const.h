/* SPDX-License-Identifier: MIT */
/*
 * base/mm_const.h - the numbers memcg keeps as the kernel's mm/ has them,
 * defined once, under the kernel's names with memcg's prefix.
 */
#ifndef MCG_BASE_MM_CONST_H
#define MCG_BASE_MM_CONST_H

#include "memcg/group.h" /* MCG_GROUP_PAGE_SIZE */

/* The page: the unit of charging (public as MCG_GROUP_PAGE_SIZE), and the
 * granule memcg maps, aligns and gives back memory in (x86-64's base page). */
#define MCG_PAGE_SIZE ((size_t)MCG_GROUP_PAGE_SIZE)
#define MCG_PAGE_SHIFT 12
_Static_assert(MCG_PAGE_SIZE == (size_t)1 << MCG_PAGE_SHIFT, "page size and shift");

/* The least reclaim asks of one pass (the kernel's SWAP_CLUSTER_MAX). */
#define MCG_SWAP_CLUSTER_MAX 32ul

/* Reclaim passes without progress before a charge gives up or calls the
 * OOM policy (the kernel's MAX_RECLAIM_RETRIES). */
#define MCG_MAX_RECLAIM_RETRIES 16

#endif /* MCG_BASE_MM_CONST_H */
