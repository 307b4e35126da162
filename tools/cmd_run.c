/* SPDX-License-Identifier: MIT */
/* tools/cmd_run.c - placeholder until the shim lands (being written). */
#include <stdio.h>

#include "commands.h"

int mcg_cmd_run(int argc, char **argv)
{
	fprintf(stderr, "memcg run: not built yet\n");
	return 2;
}
