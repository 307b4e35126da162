/* SPDX-License-Identifier: MIT */
/* tools/demo.h - the parts of `memcg demo` (cmd_demo.c). */
#ifndef MCG_TOOLS_DEMO_H
#define MCG_TOOLS_DEMO_H

/**
 * mcg_demo_program - a python3 workload (sort(1) without python3) on glibc
 * and under `memcg run`, its slabinfo and a summary, then the slab
 * benchmark's smoke run (demo_program.c).  Return: the exit status.
 */
int mcg_demo_program(void);

/**
 * mcg_demo_server - memcg-kvcache with three tenants driven by
 * redis-benchmark for @seconds, a line per tenant each second, then a
 * summary (demo_server.c).  Return: the exit status.
 */
int mcg_demo_server(int seconds);

#endif
