/* SPDX-License-Identifier: MIT */
/*
 * tools/commands.h - the memcg CLI's subcommands, one file each.
 * Each takes the arguments after its name (argv[0] is the subcommand) and
 * returns the process exit status.
 */
#ifndef MCG_TOOLS_COMMANDS_H
#define MCG_TOOLS_COMMANDS_H

int mcg_cmd_run(int argc, char **argv);      /* cmd_run.c */
int mcg_cmd_bench(int argc, char **argv);    /* bench/bench.c */
int mcg_cmd_demo(int argc, char **argv);     /* cmd_demo.c */
int mcg_cmd_options(int argc, char **argv);  /* cmd_options.c */
int mcg_cmd_slabinfo(int argc, char **argv); /* cmd_options.c */
int mcg_cmd_ps(int argc, char **argv);       /* cmd_ps.c */
int mcg_cmd_stat(int argc, char **argv);     /* cmd_stat.c */
int mcg_cmd_set(int argc, char **argv);      /* cmd_set.c */
int mcg_cmd_ctl(int argc, char **argv);      /* cmd_set.c */
int mcg_cmd_top(int argc, char **argv);      /* cmd_top.c */

#endif
