/* SPDX-License-Identifier: MIT */
/* bench/bench_slab.c - placeholder: being written. */
#include <stdio.h>

#include "harness.h"

int bench_slab_main(int argc, char **argv)
{
	fprintf(stderr, "memcg bench slab: not built yet\n");
	return 2;
}
