/* SPDX-License-Identifier: MIT */
/* bench/bench_charge.c - placeholder: being written. */
#include <stdio.h>

#include "harness.h"

int bench_charge_main(int argc, char **argv)
{
	fprintf(stderr, "memcg bench charge: not built yet\n");
	return 2;
}
