/* SPDX-License-Identifier: MIT */
/*
 * reclaim/budget.h - the process's memory budget for global pressure, and
 * where it comes from (memcg/pressure.h: mcg_pressure_budget_kind_t).
 * Reads files below a root directory (reclaim/sysfiles.h); no state, no
 * locks (the caller serialises starts).
 */
#ifndef MCG_RECLAIM_BUDGET_H
#define MCG_RECLAIM_BUDGET_H

#include "memcg/pressure.h"

/**
 * mcg_budget_detect - fill @st's budget, budget_kind, budget_source and
 * notes (a note per source skipped, appended) from @cfg and the files below
 * @root_dir; @usage_path gets the cgroup's usage file when the budget is
 * that cgroup's limit (else ""), @psi_path its memory.pressure, else
 * /proc/pressure/memory, else "" (both PATH_MAX bytes).
 */
void mcg_budget_detect(const char *root_dir, const mcg_pressure_config_t *cfg,
                       mcg_pressure_status_t *st, char *usage_path, char *psi_path);

#endif /* MCG_RECLAIM_BUDGET_H */
