/* SPDX-License-Identifier: MIT */
/* tools/memcg.c - the memcg command: dispatch to a subcommand. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
} commands[] = {
        {"demo", mcg_cmd_demo, "run the demonstration workload and print what memcg did"},
        {"run", mcg_cmd_run, "run a program on memcg's allocator: memcg run [-o FILE] -- CMD..."},
        {"bench", mcg_cmd_bench,
         "benchmarks against baselines: memcg bench slab [--json] [--smoke]"},
        {"slabinfo", mcg_cmd_slabinfo, "print this process's slabinfo (a self-test)"},
        {"ps", mcg_cmd_ps, "processes with a control socket: memcg ps [--json]"},
        {"stat", mcg_cmd_stat,
         "a process's cgroup files: memcg stat -p PID [GROUP [FILE]] [--json|--prometheus]"},
        {"set", mcg_cmd_set, "write one: memcg set -p PID GROUP FILE VALUE"},
        {"top", mcg_cmd_top, "live view of a process's groups and caches: memcg top -p PID"},
        {"ctl", mcg_cmd_ctl, "one control request as it is: memcg ctl -p PID help"},
        {"options", mcg_cmd_options, "print the runtime option table [--markdown]"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: memcg COMMAND [ARGS...]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "memcg: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
