/* SPDX-License-Identifier: MIT */
/*
 * main.c - memcg-kvcache: options, start, wait for a signal, stop.
 *
 *   memcg-kvcache [--port N] [--bind ADDR] [--threads N]
 *                 [--tenant NAME:max=256M,low=64M]... [--maxmemory SIZE]
 *                 [--one-group] [--proto-max-bulk-len SIZE] [--config FILE]
 *                 [--control PATH|off]
 *
 * A config file holds the same options, one per line without the dashes
 * ("tenant gold:max=256M,low=64M"; '#' starts a comment).  On SIGINT or
 * SIGTERM the server stops, frees every key and checks that the tenants'
 * memory.current came back to 0 (exit status 1 if not).
 *
 * The control socket (memcg/control.h) is served from start to stop, so
 * `memcg ps`, `memcg top -p PID` and `memcg set -p PID` see and steer the
 * tenants of a running server.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memcg/control.h"
#include "memcg/group.h"
#include "memcg/pressure.h"
#include "server.h"
#include "tenant.h"

#define KV_DEFAULT_PORT 6380

struct options {
	struct kv_server_config server;
	struct kv_tenant_spec tenants[KV_TENANTS_MAX];
	int ntenants;
	const char *maxmemory;
	const char *control; /* socket path; NULL: the default; "off": none */
	bool one_group;
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: memcg-kvcache [options]\n"
	        "  --port N                 TCP port (default %d; 0: any free one)\n"
	        "  --bind ADDR              IPv4 address to listen on (default 127.0.0.1)\n"
	        "  --threads N              worker threads (default: one per CPU)\n"
	        "  --tenant NAME[:k=v,...]  a tenant (repeatable; database 0, 1, ... in order);\n"
	        "                           k is min, low, high or max (its memory.* limit)\n"
	        "                           without any: 16 databases db0..db15, no limits\n"
	        "  --maxmemory SIZE         memory.max of all tenants together\n"
	        "  --one-group              charge every tenant to one group on one LRU\n"
	        "  --proto-max-bulk-len SIZE  longest argument (default 32M)\n"
	        "  --config FILE            read options from FILE, one per line\n"
	        "  --control PATH|off       the control socket (default: memcg's default path)\n",
	        KV_DEFAULT_PORT);
}

static int parse_config(const char *path, struct options *o, int depth);

/* One option: @name without dashes, @value or NULL.  Return: values used (0
   or 1), or -1 on an error (reported). */
static int apply_option(const char *name, const char *value, struct options *o, int depth)
{
	long long n;
	if (!strcmp(name, "one-group")) {
		o->one_group = true;
		return 0;
	}
	if (!value) {
		fprintf(stderr, "memcg-kvcache: --%s needs a value\n", name);
		return -1;
	}
	if (!strcmp(name, "port") || !strcmp(name, "threads")) {
		char *end;
		long v = strtol(value, &end, 10);
		if (*end || v < 0 || v > (name[0] == 'p' ? 65535 : 256)) {
			fprintf(stderr, "memcg-kvcache: bad --%s %s\n", name, value);
			return -1;
		}
		*(name[0] == 'p' ? &o->server.port : &o->server.threads) = (int)v;
	} else if (!strcmp(name, "bind")) {
		free((void *)o->server.bind);
		o->server.bind = strdup(value);
	} else if (!strcmp(name, "control")) {
		free((void *)o->control);
		o->control = strdup(value);
	} else if (!strcmp(name, "maxmemory")) {
		if (!kv_parse_size(value, &n)) {
			fprintf(stderr, "memcg-kvcache: bad --maxmemory %s\n", value);
			return -1;
		}
		free((void *)o->maxmemory);
		o->maxmemory = strdup(value);
	} else if (!strcmp(name, "proto-max-bulk-len")) {
		if (!kv_parse_size(value, &n) || n < 1 || n > (1ll << 32)) {
			fprintf(stderr, "memcg-kvcache: bad --proto-max-bulk-len %s\n", value);
			return -1;
		}
		o->server.max_bulk = (size_t)n;
	} else if (!strcmp(name, "tenant")) {
		char err[256];
		if (o->ntenants == KV_TENANTS_MAX) {
			fprintf(stderr, "memcg-kvcache: at most %d tenants\n", KV_TENANTS_MAX);
			return -1;
		}
		if (kv_tenant_spec_parse(value, &o->tenants[o->ntenants], err, sizeof(err))) {
			fprintf(stderr, "memcg-kvcache: %s\n", err);
			return -1;
		}
		o->ntenants++;
	} else if (!strcmp(name, "config")) {
		if (parse_config(value, o, depth + 1))
			return -1;
	} else {
		fprintf(stderr, "memcg-kvcache: unknown option --%s\n", name);
		usage(stderr);
		return -1;
	}
	return 1;
}

static int parse_config(const char *path, struct options *o, int depth)
{
	if (depth > 4) {
		fprintf(stderr, "memcg-kvcache: config files nested too deep\n");
		return -1;
	}
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "memcg-kvcache: %s: %s\n", path, strerror(errno));
		return -1;
	}
	char line[512];
	int err = 0, lineno = 0;
	while (!err && fgets(line, sizeof(line), f)) {
		lineno++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *name = strtok(line, " \t\r\n");
		char *value = name ? strtok(NULL, " \t\r\n") : NULL;
		if (!name)
			continue;
		if (apply_option(name, value, o, depth) < 0) {
			fprintf(stderr, "memcg-kvcache: %s:%d: in this line\n", path, lineno);
			err = -1;
		}
	}
	fclose(f);
	return err;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	o->server.port = KV_DEFAULT_PORT;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			exit(0);
		}
		if (strncmp(argv[i], "--", 2)) {
			fprintf(stderr, "memcg-kvcache: unexpected '%s'\n", argv[i]);
			usage(stderr);
			return -1;
		}
		int used = apply_option(argv[i] + 2, i + 1 < argc ? argv[i + 1] : NULL, o, 0);
		if (used < 0)
			return -1;
		i += used;
	}
	return 0;
}

/* Every key freed and the stocks drained: the groups must be back at 0. */
static int check_at_rest(struct kv_tenants *ts)
{
	for (int i = 0; i < ts->count; i++)
		kv_flush(&ts->tenant[i]->table);
	mcg_group_drain_stocks();
	long long left = kv_group_value(ts->parent, "memory.current", NULL);
	if (left != 0) {
		fprintf(stderr,
		        "memcg-kvcache: %lld bytes still charged after every key was freed\n",
		        left);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct options o;
	if (parse_args(argc, argv, &o))
		return 2;

	/* Signals are taken by sigwait() below, in this thread only. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	static struct kv_tenants tenants;
	char err[256];
	if (kv_tenants_create(&tenants, "kvcache", o.maxmemory, o.tenants, o.ntenants, o.one_group,
	                      err, sizeof(err))) {
		fprintf(stderr, "memcg-kvcache: %s\n", err);
		return 1;
	}
	/* Global pressure: reclaim before the kernel's OOM killer would act;
	   memory.low keeps a tenant's hot set through it. */
	int perr = mcg_pressure_start(NULL);
	if (perr)
		fprintf(stderr, "memcg-kvcache: global pressure not watched: %s\n",
		        strerror(-perr));

	/* Seen and steered from outside: memcg ps / top -p / set -p. */
	bool control = !o.control || strcmp(o.control, "off");
	if (control) {
		int cerr = mcg_control_start(o.control);
		if (cerr) {
			fprintf(stderr, "memcg-kvcache: control socket: %s\n", strerror(-cerr));
			control = false;
		}
	}

	struct kv_server *srv;
	int e = kv_server_start(&o.server, &tenants, &srv);
	if (e) {
		fprintf(stderr, "memcg-kvcache: cannot listen on port %d: %s\n", o.server.port,
		        strerror(-e));
		if (control)
			mcg_control_stop();
		mcg_pressure_stop();
		kv_tenants_destroy(&tenants);
		return 1;
	}
	printf("memcg-kvcache: listening on %s:%d, %d threads, %d tenants%s\n",
	       o.server.bind ? o.server.bind : "127.0.0.1", kv_server_port(srv),
	       kv_server_context(srv)->threads, tenants.count, o.one_group ? " in one group" : "");
	char path[256];
	if (control && !mcg_control_path(path, sizeof(path)))
		printf("memcg-kvcache: control socket %s (memcg top -p %d)\n", path, (int)getpid());
	fflush(stdout);

	int sig;
	sigwait(&sigs, &sig);

	kv_server_stop(srv);
	if (control)
		mcg_control_stop();
	mcg_pressure_stop();
	int status = check_at_rest(&tenants);
	kv_tenants_destroy(&tenants);
	free((void *)o.server.bind);
	free((void *)o.maxmemory);
	free((void *)o.control);
	return status;
}
