/* SPDX-License-Identifier: MIT */
/* bench/bench.c - placeholder until the harness lands (being written). */
#include <stdio.h>

#include "commands.h"

int mcg_cmd_bench(int argc, char **argv)
{
	fprintf(stderr, "memcg bench: not built yet\n");
	return 2;
}
