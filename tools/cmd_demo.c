/* SPDX-License-Identifier: MIT */
/* tools/cmd_demo.c - placeholder until the demo lands (being written). */
#include <stdio.h>

#include "commands.h"

int mcg_cmd_demo(int argc, char **argv)
{
	fprintf(stderr, "memcg demo: not built yet\n");
	return 2;
}
