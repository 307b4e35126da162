/* SPDX-License-Identifier: MIT */
/*
 * tools/run.h - running a program on memcg's allocator (cmd_run.c), shared
 * by `memcg run` and `memcg demo`.
 */
#ifndef MCG_TOOLS_RUN_H
#define MCG_TOOLS_RUN_H

#include <stddef.h>
#include <sys/resource.h>

/**
 * mcg_run_find_preload - the path of libmemcg-preload.so: $MCG_PRELOAD_LIB if
 * set, else next to the running memcg binary (a build directory), else in a
 * ../lib* directory beside it (an installation).  Writes an absolute path
 * into @buf.  Return: 0, or -ENOENT after printing why on stderr.
 */
int mcg_run_find_preload(char *buf, size_t len);

/**
 * mcg_run_program - fork, exec @argv (PATH searched) with the shim preloaded
 * (appended to any LD_PRELOAD), and wait for it.
 * @preload:     the shim, from mcg_run_find_preload().
 * @report_path: where the program's slabinfo goes at exit (truncated now);
 *               NULL: to its stderr.
 * @ru:          if not NULL, receives the child's resource usage.
 * SIGINT and SIGQUIT are ignored while waiting (the terminal sends them to
 * the program too); SIGTERM and SIGHUP are forwarded to it.
 * Return: the exit status as a shell reports it (128 + signal if killed,
 * 127 if it could not be executed, 126 if not permitted), or -errno if
 * nothing was started.
 */
int mcg_run_program(char *const argv[], const char *preload, const char *report_path,
                    struct rusage *ru);

#endif
