/* SPDX-License-Identifier: MIT */
/*
 * tools/cmd_stat.c - `memcg stat -p PID [GROUP [FILE]] [--json|--prometheus]`:
 * a running process's cgroup files, read through its control socket.
 *
 *   GROUP FILE   the file as cat prints it (`read`)
 *   GROUP        every file of GROUP and its descendants, as head(1)
 *                prints several files (`stat`)
 *   (none)       the same for every group
 *   --json       JSON instead (`json read`, `json stat`; with no GROUP,
 *                `json all`: info, every group, slabinfo)
 *   --prometheus the Prometheus text format of everything (`metrics`)
 *
 * Exit status: 0; 1 (the process said no: the message on stderr); 2 (usage).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "commands.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: memcg stat (-p PID | -S SOCKET) [GROUP [FILE]] [--json | --prometheus]\n"
	           "  Print a running process's cgroup files as cat prints them: FILE of\n"
	           "  GROUP (a path: /tenant-a/queries), or every file of GROUP and its\n"
	           "  descendants, or of every group.  --json prints JSON; --prometheus the\n"
	           "  Prometheus text format of every group and cache.\n");
}

int mcg_cmd_stat(int argc, char **argv)
{
	pid_t pid = 0;
	const char *sock = NULL, *pos[2] = {NULL, NULL};
	bool json = false, prom = false;
	int npos = 0;
	for (int i = 1; i < argc;) {
		int t = client_take_target(argc, argv, &i, &pid, &sock, "stat");
		if (t < 0)
			return 2;
		if (t)
			continue;
		const char *a = argv[i++];
		if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--prometheus")) {
			prom = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "memcg stat: unknown option '%s'\n", a);
			usage(stderr);
			return 2;
		} else if (npos < 2) {
			pos[npos++] = a;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if ((!pid && !sock) || (json && prom) || (prom && npos)) {
		usage(stderr);
		return 2;
	}
	char group[4096];
	const char *words[5];
	int n = 0;
	if (json)
		words[n++] = "json";
	if (prom) {
		words[n++] = "metrics";
	} else if (npos == 2) {
		words[n++] = "read";
		words[n++] = client_group_path(pos[0], group, sizeof(group));
		words[n++] = pos[1];
	} else if (npos == 1) {
		words[n++] = "stat";
		words[n++] = client_group_path(pos[0], group, sizeof(group));
	} else {
		words[n++] = json ? "all" : "stat";
	}
	return client_run("stat", pid, sock, words, n, true);
}
