/* SPDX-License-Identifier: MIT */
/*
 * control_target.c - a program that uses memory groups, for the control
 * socket's integration tests (test_control.c): tests drive it from outside
 * with the memcg CLI and compare with what it reads inside.
 *
 * It serves its control socket (mcg_control_start(NULL)), and its metrics
 * when MCG_METRICS_LISTEN is set, then makes this hierarchy:
 *
 *   /                  (root)
 *   |- tenant-a        max 64M, high 48M, low 1M: 1000 objects of an
 *   |  |                accounted 256-byte cache
 *   |  `- cache        max 8M: 64 KiB of kmalloc, accounted
 *   |- tenant b        max 32M (a space in its name): 4 blocks of 1 MiB
 *   `- q"u\ote ünï     quotes, a backslash and UTF-8 in its name: nothing
 *
 * prints "ready PID", and answers lines on stdin, one reply each:
 *   read GROUP FILE   the file as mcg_group_read() gives it, then "--end--"
 *   alloc GROUP BYTES mcg_malloc_account(): "ok" or "fail" (kept until exit)
 *   open DIR          chmod the socket 0666 and DIR 0755 (the SO_PEERCRED
 *                     test needs a socket other users can reach): "ok"
 *   exit              frees everything, removes the groups, exits 0
 * Group paths on stdin are percent-encoded as on the socket ("tenant%20b").
 * It exits by itself after 120 s (a test that died leaves nothing behind).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "iface/escape.h"
#include "memcg/control.h"
#include "memcg/group.h"
#include "memcg/kmalloc.h"
#include "memcg/slab.h"

#define MAX_ALLOCS 4096

static void *allocs[MAX_ALLOCS];
static int nallocs;

static mcg_group_t *make(mcg_group_t *parent, const char *name, const char *max)
{
	mcg_group_t *g;
	if (mcg_group_create(parent, name, &g) || (max && mcg_group_write(g, "memory.max", max))) {
		fprintf(stderr, "control_target: cannot create %s\n", name);
		exit(1);
	}
	return g;
}

static mcg_group_t *lookup(const char *encoded)
{
	char path[4096];
	if (mcg_percent_decode(encoded, strlen(encoded), path) < 0)
		return NULL;
	mcg_group_t *g;
	return mcg_group_lookup(NULL, path, &g) ? NULL : g;
}

int main(void)
{
	alarm(120);
	int err = mcg_control_start(NULL);
	if (err) {
		fprintf(stderr, "control_target: mcg_control_start: %s\n", strerror(-err));
		return 1;
	}
	const char *listen = getenv("MCG_METRICS_LISTEN");
	if (listen && *listen && (err = mcg_metrics_start(NULL))) {
		fprintf(stderr, "control_target: mcg_metrics_start: %s\n", strerror(-err));
		return 1;
	}
	mcg_group_t *a = make(NULL, "tenant-a", "64M"), *ac = make(a, "cache", "8M"),
	            *b = make(NULL, "tenant b", "32M"),
	            *q = make(NULL, "q\"u\\ote \xc3\xbcn\xc3\xaf", NULL);
	mcg_group_write(a, "memory.high", "48M");
	mcg_group_write(a, "memory.low", "1M");

	mcg_cache_t *c = mcg_cache_create("target-objects", 256, 0, MCG_CACHE_ACCOUNT, NULL);
	void *objs[1000];
	mcg_group_t *prev = mcg_group_enter(a);
	for (int i = 0; i < 1000; i++)
		objs[i] = mcg_cache_alloc(c);
	mcg_group_leave(prev);
	for (int i = 0; i < 64; i++)
		allocs[nallocs++] = mcg_malloc_account(1024, ac);
	for (int i = 0; i < 4; i++)
		allocs[nallocs++] = mcg_malloc_account(1 << 20, b);

	printf("ready %ld\n", (long)getpid());
	fflush(stdout);
	char line[8192];
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		char w1[4096], w2[4096];
		if (sscanf(line, "read %4095s %4095s", w1, w2) == 2) {
			mcg_group_t *g = lookup(w1);
			char text[8192] = "";
			if (g)
				mcg_group_read(g, w2, text, sizeof(text));
			mcg_group_put(g);
			printf("%s--end--\n", text);
		} else if (sscanf(line, "alloc %4095s %4095s", w1, w2) == 2) {
			mcg_group_t *g = lookup(w1);
			void *p = g && nallocs < MAX_ALLOCS
			                  ? mcg_malloc_account(strtoul(w2, NULL, 0), g)
			                  : NULL;
			mcg_group_put(g);
			if (p)
				allocs[nallocs++] = p;
			printf("%s\n", p ? "ok" : "fail");
		} else if (sscanf(line, "open %4095s", w1) == 1) {
			char path[256];
			bool ok = !mcg_control_path(path, sizeof(path)) && !chmod(path, 0666) &&
			          !chmod(w1, 0755);
			printf("%s\n", ok ? "ok" : "fail");
		} else if (!strcmp(line, "exit")) {
			break;
		} else {
			printf("?\n");
		}
		fflush(stdout);
	}
	for (int i = 0; i < nallocs; i++)
		mcg_free(allocs[i]);
	for (int i = 0; i < 1000; i++)
		mcg_cache_free(c, objs[i]);
	mcg_metrics_stop();
	mcg_control_stop();
	mcg_group_remove(ac);
	mcg_group_remove(a);
	mcg_group_remove(b);
	mcg_group_remove(q);
	mcg_group_put(ac);
	mcg_group_put(a);
	mcg_group_put(b);
	mcg_group_put(q);
	mcg_cache_destroy(c);
	return 0;
}
