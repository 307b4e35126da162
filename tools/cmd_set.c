/* SPDX-License-Identifier: MIT */
/*
 * tools/cmd_set.c - `memcg set -p PID GROUP FILE VALUE`: write one cgroup file
 * of a running process through its control socket, as `echo VALUE > FILE`
 * would (mcg_group_write(): a bad value changes nothing).  Exit status 0;
 * 1 with the process's reason on stderr; 2 for usage.
 *
 * tools/cmd_set.c also has `memcg ctl -p PID REQUEST...`: one request of the
 * control protocol as it is (create, remove, help...), its reply printed.
 */
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "commands.h"

int mcg_cmd_set(int argc, char **argv)
{
	pid_t pid = 0;
	const char *sock = NULL, *pos[3];
	int npos = 0;
	for (int i = 1; i < argc;) {
		int t = client_take_target(argc, argv, &i, &pid, &sock, "set");
		if (t < 0)
			return 2;
		if (t)
			continue;
		const char *a = argv[i++];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("usage: memcg set (-p PID | -S SOCKET) GROUP FILE VALUE\n"
			       "  Write VALUE to the cgroup file FILE of GROUP in a running "
			       "process\n"
			       "  (memory.max 64M, memory.high max, memory.reclaim 1G...).\n");
			return 0;
		}
		if (npos == 3) {
			npos++;
			break;
		}
		pos[npos++] = a;
	}
	if ((!pid && !sock) || npos != 3) {
		fprintf(stderr, "usage: memcg set (-p PID | -S SOCKET) GROUP FILE VALUE\n");
		return 2;
	}
	char group[4096];
	const char *words[] = {"write", client_group_path(pos[0], group, sizeof(group)), pos[1],
	                       pos[2]};
	return client_run("set", pid, sock, words, 4, false);
}

int mcg_cmd_ctl(int argc, char **argv)
{
	pid_t pid = 0;
	const char *sock = NULL, *words[16];
	int n = 0;
	for (int i = 1; i < argc;) {
		int t = n ? 0 : client_take_target(argc, argv, &i, &pid, &sock, "ctl");
		if (t < 0)
			return 2;
		if (t)
			continue;
		if (n == 16) {
			fprintf(stderr, "memcg ctl: too many words\n");
			return 2;
		}
		words[n++] = argv[i++];
	}
	if ((!pid && !sock) || !n) {
		fprintf(stderr, "usage: memcg ctl (-p PID | -S SOCKET) REQUEST...   (try: help)\n");
		return 2;
	}
	return client_run("ctl", pid, sock, words, n, true);
}
