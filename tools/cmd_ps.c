/* SPDX-License-Identifier: MIT */
/*
 * tools/cmd_ps.c - `memcg ps [--json]`: the processes that serve a control
 * socket this user may reach (root: everyone's), each asked for its `info`
 * (pid, command, groups, memory.current of the root, metrics address).
 * Sockets of processes that no longer exist are removed (stale: a process
 * killed by a signal leaves its socket behind); a socket nobody answers is
 * listed as such.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "commands.h"

/* The value of line "@key VALUE" of an `info` body, into @buf. */
static const char *info_value(const char *body, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);
	for (const char *p = body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, key, kl) && p[kl] == ' ') {
			const char *v = p + kl + 1, *nl = strchr(v, '\n');
			size_t n = nl ? (size_t)(nl - v) : strlen(v);
			snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), v);
			return buf;
		}
	}
	snprintf(buf, len, "-");
	return buf;
}

static int by_pid(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

int mcg_cmd_ps(int argc, char **argv)
{
	bool json = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: memcg ps [--json]\n"
			       "  List the processes that serve a memcg control socket: pid, "
			       "groups,\n"
			       "  the root's memory.current, the metrics address, the command.\n"
			       "  Sockets of processes that are gone are removed.\n");
			return 0;
		} else {
			fprintf(stderr, "memcg ps: unknown option '%s'\n", argv[i]);
			return 2;
		}
	}
	char *dirs[CLIENT_MAX_DIRS];
	int nd = client_dirs(dirs, CLIENT_MAX_DIRS);
	long *pids = NULL;
	char **paths = NULL;
	size_t n = 0, cap = 0;
	int stale = 0;
	for (int d = 0; d < nd; d++) {
		DIR *dir = opendir(dirs[d]);
		struct dirent *e;
		while (dir && (e = readdir(dir))) {
			char *end;
			long pid = strtol(e->d_name, &end, 10);
			if (pid <= 0 || strcmp(end, ".sock"))
				continue;
			char path[512];
			snprintf(path, sizeof(path), "%s/%s", dirs[d], e->d_name);
			if (!client_pid_alive((pid_t)pid)) {
				if (unlink(path) == 0)
					stale++;
				continue;
			}
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				pids = realloc(pids, cap * sizeof(*pids));
				paths = realloc(paths, cap * sizeof(*paths));
				if (!pids || !paths)
					return 1;
			}
			pids[n] = pid;
			paths[n++] = strdup(path);
		}
		if (dir)
			closedir(dir);
		free(dirs[d]);
	}
	/* Sorted by pid (paths follow their pids). */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && by_pid(&pids[j - 1], &pids[j]) > 0; j--) {
			long t = pids[j];
			pids[j] = pids[j - 1];
			pids[j - 1] = t;
			char *p = paths[j];
			paths[j] = paths[j - 1];
			paths[j - 1] = p;
		}

	if (json)
		printf("[");
	else
		printf("%8s %6s %12s %-21s %s\n", "PID", "GROUPS", "CURRENT", "METRICS", "COMMAND");
	size_t shown = 0;
	for (size_t i = 0; i < n; i++) {
		struct client c;
		int err = client_connect(&c, (pid_t)pids[i], paths[i]);
		char *body = NULL, msg[256];
		size_t len;
		if (!err) {
			const char *w[] = {"json", "info"};
			err = client_request(&c, json ? w : w + 1, json ? 2 : 1, &body, &len, msg,
			                     sizeof(msg), 5000);
			client_close(&c);
		} else {
			snprintf(msg, sizeof(msg), "%s", strerror(-err));
		}
		if (json) {
			if (!err) {
				len = strcspn(body, "\n");
				printf("%s%.*s", shown++ ? "," : "", (int)len, body);
			}
		} else if (!err) {
			char v[5][256];
			printf("%8s %6s %12s %-21s %s\n", info_value(body, "pid", v[0], 256),
			       info_value(body, "groups", v[1], 256),
			       info_value(body, "memory_current", v[2], 256),
			       info_value(body, "metrics", v[3], 256),
			       info_value(body, "command", v[4], 256));
		} else {
			printf("%8ld %6s %12s %-21s (%s: %s)\n", pids[i], "-", "-", "-",
			       err == -ECONNREFUSED ? "not answering" : "cannot ask", msg);
		}
		free(body);
		free(paths[i]);
	}
	if (json)
		printf("]\n");
	if (stale && !json)
		fprintf(stderr, "memcg ps: removed %d stale socket%s of processes that are gone\n",
		        stale, stale == 1 ? "" : "s");
	free(pids);
	free(paths);
	return 0;
}
