/* SPDX-License-Identifier: MIT */
/* reclaim/oom.h - the OOM policy's side for the charge path (see oom.c). */
#ifndef MCG_RECLAIM_OOM_H
#define MCG_RECLAIM_OOM_H

#include <stdbool.h>

#include "memcg/reclaim.h"

/**
 * mcg_oom_invoke - ask the OOM policy for a victim in @over's subtree
 * (a charge of @nr_pages failed after reclaim).  Counts "oom_kill" on the
 * victim.  Return: true when a victim was killed (the caller retries).
 * A charge made by the policy itself never recurses: it returns false.
 */
bool mcg_oom_invoke(mcg_group_t *over, unsigned long nr_pages);

#endif /* MCG_RECLAIM_OOM_H */
