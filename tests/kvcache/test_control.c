/* SPDX-License-Identifier: MIT */
/*
 * test_control.c - a running memcg-kvcache seen and steered from outside
 * through its control socket: `memcg ps` lists it, `memcg top -p PID`
 * shows its tenants with the memory their keys hold, `memcg set -p PID`
 * lowers a tenant's memory.max and the server evicts that tenant's keys
 * down to it (INFO tenants says so); --control off serves no socket.
 *
 * The sockets go to a private XDG_RUNTIME_DIR, so nothing else on the
 * machine is listed or touched.
 */
#include <stdlib.h>
#include <string.h>

#include "kvtest.h"
#include "progs.h"
#include "test.h"

#define MIB (1024.0 * 1024.0)
#define KEYS 20000L /* x ~390 B charged each: ~7.5M in gold */

static char dir[64];

/* Run `memcg @args...` with its stdout to a file; return its exit status and
   the output (malloc'd, in *@out). */
static int memcg(char **out, const char *const *args)
{
	char *argv[16] = {(char *)prog_memcg_bin()};
	int n = 1;
	for (; *args && n < 15; args++)
		argv[n++] = (char *)*args;
	argv[n] = NULL;
	char path[256];
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	pid_t pid = kvc_spawn(argv, path, NULL);
	int status = pid > 0 ? kvc_wait(pid, 60) : -1;
	*out = prog_read_file(path);
	return status;
}

static void test_top_stat_set(void)
{

	const char *args[] = {"--tenant", "gold:max=64M", "--tenant", "bronze:max=16M", NULL};
	struct kvc_server kv;
	REQUIRE(kvc_start_kvcache(&kv, args, NULL) == 0);
	REQUIRE(kvc_fill(kv.port, 0, KEYS, 256) == 0);
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)kv.pid);

	/* memcg ps: this server, by pid. */
	char *out;
	CHECK_EQ(memcg(&out, (const char *const[]){"ps", NULL}), 0);
	CHECK(out && strstr(out, pid));
	free(out);

	/* memcg top -p: both tenants, gold holding its keys. */
	CHECK_EQ(memcg(&out, (const char *const[]){"top", "-p", pid, "-d", "0.2", "--once",
	                                           "--json", NULL}),
	         0);
	const char key[] = "{\"path\":\"/kvcache/gold\",\"current\":";
	const char *gold = out ? strstr(out, key) : NULL;
	CHECK(gold);
	CHECK(out && strstr(out, "{\"path\":\"/kvcache/bronze\","));
	double current = gold ? atof(gold + strlen(key)) : 0;
	free(out);
	fprintf(stderr, "  memcg top: gold holds %.1fM for %ld keys\n", current / MIB, KEYS);
	CHECK(current > 4 * MIB && current <= 64 * MIB);
	CHECK_EQ(memcg(&out, (const char *const[]){"stat", "-p", pid, "/kvcache/gold",
	                                           "memory.current", NULL}),
	         0);
	CHECK(out && atof(out) > 4 * MIB);
	free(out);

	/* memcg set -p: gold's max below what it holds; the next write evicts
	   gold's keys down to it, and INFO shows the new max. */
	CHECK_EQ(memcg(&out, (const char *const[]){"set", "-p", pid, "/kvcache/gold", "memory.max",
	                                           "2M", NULL}),
	         0);
	free(out);
	REQUIRE(kvc_fill(kv.port, 0, 100, 256) == 0);
	char *info = kvc_info(kv.port, "tenants");
	REQUIRE(info);
	CHECK_EQ(kvc_info_num(info, "tenant_gold", "memory_max"), 2 * MIB);
	CHECK(kvc_info_num(info, "tenant_gold", "memory_current") <= 2 * MIB);
	CHECK(kvc_info_num(info, "tenant_gold", "evicted_keys") > 0);
	CHECK_EQ(kvc_info_num(info, "tenant_bronze", "evicted_keys"), 0);
	free(info);
	/* A bad value: refused, nothing changed. */
	CHECK(memcg(&out, (const char *const[]){"set", "-p", pid, "/kvcache/gold", "memory.max",
	                                        "lots", NULL}) != 0);
	free(out);
	CHECK_EQ(kvc_stop(&kv), 0);
}

/* --control off: no socket, so memcg top -p finds none. */
static void test_control_off(void)
{
	struct kvc_server kv;
	char pid[16], *out;
	const char *off[] = {"--control", "off", NULL};
	REQUIRE(kvc_start_kvcache(&kv, off, NULL) == 0);
	snprintf(pid, sizeof(pid), "%d", (int)kv.pid);
	CHECK(memcg(&out, (const char *const[]){"top", "-p", pid, "--once", NULL}) != 0);
	free(out);
	CHECK_EQ(kvc_stop(&kv), 0);
}

int main(void)
{
	char bin[4096];
	kvtest_need("memcg-kvcache", bin, sizeof(bin));
	if (!prog_memcg_bin())
		return test_skip("MCG_BIN is not set");
	if (!prog_mkdtemp(dir) || setenv("XDG_RUNTIME_DIR", dir, 1)) {
		perror("test_control: a private XDG_RUNTIME_DIR");
		return 1;
	}
	RUN(test_top_stat_set);
	RUN(test_control_off);
	prog_rmtree(dir);
	return test_done();
}
