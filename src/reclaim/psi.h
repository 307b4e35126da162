/* SPDX-License-Identifier: MIT */
/*
 * reclaim/psi.h - how global pressure watches PSI (memcg/pressure.h:
 * mcg_pressure_psi_kind_t).  No state, no locks (the caller serialises).
 */
#ifndef MCG_RECLAIM_PSI_H
#define MCG_RECLAIM_PSI_H

#include "memcg/pressure.h"

/**
 * mcg_psi_setup - choose how to watch @psi_path (PATH_MAX bytes; "" when
 * there is none): arm a trigger ("some 150 ms per 1 s", else per 2 s) on
 * the real file, else poll its avg10, else nothing (@psi_path cleared).
 * Fills @st's psi_kind and psi_source.  @flags: the pressure config's
 * (MCG_PRESSURE_NO_PSI).  Return: the trigger's fd (MCG_PSI_TRIGGER, the
 * caller's to close), or -1.
 */
int mcg_psi_setup(const char *root_dir, unsigned flags, mcg_pressure_status_t *st, char *psi_path);

/** mcg_psi_avg10 - the "some avg10=" figure of @path; -1 when unreadable. */
double mcg_psi_avg10(const char *path);

#endif /* MCG_RECLAIM_PSI_H */
