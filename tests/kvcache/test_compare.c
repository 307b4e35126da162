/* SPDX-License-Identifier: MIT */
/*
 * test_compare.c - memcg-kvcache answers as Redis 7.0 does.
 *
 * A real redis-server is started on a free port of 127.0.0.1 (--save ''
 * --appendonly no, both servers with a 1 MiB proto-max-bulk-len), then:
 *  1. commands.txt - every supported command with its error cases - goes
 *     through redis-cli --no-raw to each server: the outputs (replies with
 *     their types) must be identical line for line;
 *  2. raw protocol: requests redis-cli cannot send (bad lengths, inline
 *     quoting, limits, pipelines) on fresh connections: identical bytes,
 *     including the server closing the connection after a protocol error;
 *  3. expiry with real waits (PX, PEXPIRE, lazy expiry): identical replies;
 *  4. what only kvcache has (AUTH names a tenant, INFO's tenants section),
 *     against written-out expectations;
 *  5. at SIGTERM kvcache frees every key and finds its groups at 0 (exit 0).
 */
#include <time.h>

#include "kvtest.h"
#include "progs.h"
#include "test.h"

static struct kvc_server redis, kv;
static char cli[4096];

static void test_redis_cli_script(void)
{
	char script[4096];
	kvtest_source("tests/kvcache/commands.txt", script, sizeof(script));
	char rport[16], kport[16];
	snprintf(rport, sizeof(rport), "%d", redis.port);
	snprintf(kport, sizeof(kport), "%d", kv.port);
	char *ra[] = {cli, "--no-raw", "-p", rport, NULL};
	char *ka[] = {cli, "--no-raw", "-p", kport, NULL};
	struct prog_result r = prog_run(ra, NULL, NULL, script, 60);
	struct prog_result k = prog_run(ka, NULL, NULL, script, 60);
	REQUIRE(r.status == 0 && k.status == 0);
	CHECK(prog_count(r.out, "\n") > 200); /* the script ran */
	CHECK(prog_count(r.out, "(error) ERR") > 50);
	/* Line by line, with the command that produced a difference. */
	int line = 1, diffs = 0;
	const char *a = r.out, *b = k.out;
	while (*a || *b) {
		const char *ae = strchr(a, '\n'), *be = strchr(b, '\n');
		size_t al = ae ? (size_t)(ae - a) : strlen(a),
		       bl = be ? (size_t)(be - b) : strlen(b);
		if (al != bl || memcmp(a, b, al)) {
			if (diffs++ < 10)
				fprintf(stderr, "  output line %d: redis '%.*s' kvcache '%.*s'\n",
				        line, (int)al, a, (int)bl, b);
		}
		a += al + (ae ? 1 : 0);
		b += bl + (be ? 1 : 0);
		line++;
	}
	CHECK_EQ(diffs, 0);
	prog_result_free(&r);
	prog_result_free(&k);
}

struct raw_case {
	const char *name;
	const char *req;
	size_t len; /* 0: strlen */
};

static void compare_raw(const char *name, const char *req, size_t len)
{
	struct kv_buf a = {0}, b = {0};
	CHECK_EQ(kvtest_raw(redis.port, req, len, 300, &a), 0);
	CHECK_EQ(kvtest_raw(kv.port, req, len, 300, &b), 0);
	CHECK(a.len > 0);
	bool same = a.len == b.len && !memcmp(a.data, b.data, a.len);
	CHECK(same);
	if (!same)
		fprintf(stderr, "  %s: redis '%.*s' kvcache '%.*s'\n", name,
		        (int)(a.len < 80 ? a.len : 80), a.data, (int)(b.len < 80 ? b.len : 80),
		        b.data);
	kv_buf_free(&a);
	kv_buf_free(&b);
}

static void test_raw_protocol(void)
{
	static const struct raw_case cases[] = {
	        {"multibulk", "*1\r\n$4\r\nPING\r\n", 0},
	        {"negative bulk", "*2\r\n$3\r\nGET\r\n$-1\r\n", 0},
	        {"not a bulk", "*1\r\n+PING\r\n", 0},
	        {"bad count", "*abc\r\n", 0},
	        {"count over INT_MAX", "*3000000000\r\n", 0},
	        {"leading zero count", "*01\r\n$4\r\nPING\r\n", 0},
	        {"plus count", "*+1\r\n", 0},
	        {"leading zero bulk", "*1\r\n$04\r\nPING\r\n", 0},
	        {"bulk over the limit", "*2\r\n$4\r\nECHO\r\n$1048577\r\n", 0},
	        {"inline", "PING\r\n", 0},
	        {"inline LF only", "PING\nECHO x\n", 0},
	        {"inline blanks", "  ECHO   a   \r\n", 0},
	        {"inline escapes", "ECHO \"a\\x41\\n\\t\\\\\"\r\n", 0},
	        {"inline bad hex", "ECHO \"\\x4g\"\r\n", 0},
	        {"inline single quotes", "ECHO 'it\\'s'\r\n", 0},
	        {"unbalanced quotes", "SET a \"b\r\n", 0},
	        {"quote then text", "ECHO \"a\"b\r\n", 0},
	        {"empty lines", "\r\n\r\nPING\r\n", 0},
	        {"empty multibulks", "*0\r\n*-1\r\nPING\r\n", 0},
	        {"bulk trailer unchecked", "*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n", 0},
	        {"empty bulk", "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", 0},
	        {"quit closes", "QUIT\r\nPING\r\n", 0},
	        {"pipeline", "SET p 1\r\nINCR p\r\nGET p\r\nDEL p\r\n", 0},
	        {"unknown with newline arg", "*2\r\n$3\r\nFOO\r\n$3\r\na\nb\r\n", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		compare_raw(cases[i].name, cases[i].req,
		            cases[i].len ? cases[i].len : strlen(cases[i].req));

	/* The limits: 64 KiB lines, 1 MiB arguments (both servers configured so). */
	size_t n = 65600;
	char *big = malloc(1048576 + 64);
	REQUIRE(big);
	memset(big, 'A', n);
	compare_raw("too big inline", big, n);
	big[0] = '*';
	compare_raw("too big count", big, n);
	memcpy(big, "*1\r\n$", 5);
	compare_raw("too big bulk count", big, n);
	int h = snprintf(big, 64, "*2\r\n$4\r\nECHO\r\n$1048576\r\n");
	memset(big + h, 'x', 1048576);
	memcpy(big + h + 1048576, "\r\n", 2);
	compare_raw("bulk at the limit", big, (size_t)h + 1048578);
	free(big);
}

static void call(int fd, struct kvc_reply *r, const char *a, const char *b, const char *c,
                 const char *d)
{
	const char *argv[4] = {a, b, c, d};
	int argc = d ? 4 : c ? 3 : b ? 2 : 1;
	if (kvc_call(fd, r, argc, argv))
		r->type = 0;
}

static void sleep_ms(long ms)
{
	struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&d, NULL);
}

/* Both servers, the same requests, with waits for keys to expire. */
static void test_expiry_in_time(void)
{
	int fds[2] = {kvc_connect(redis.port), kvc_connect(kv.port)};
	REQUIRE(fds[0] >= 0 && fds[1] >= 0);
	const char *steps[][4] = {
	        {"SET", "e1", "v", NULL}, {"PEXPIRE", "e1", "150", NULL}, {"SET", "e2", "v", "PX"},
	        {"SET", "e3", "v", NULL}, {"EXPIRE", "e3", "100", NULL},  {"TTL", "e3", NULL, NULL},
	};
	struct kvc_reply r[2];
	for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		for (int i = 0; i < 2; i++) {
			if (!strcmp(steps[s][0], "SET") && steps[s][3]) {
				const char *argv[5] = {"SET", "e2", "v", "PX", "150"};
				kvc_call(fds[i], &r[i], 5, argv);
			} else {
				call(fds[i], &r[i], steps[s][0], steps[s][1], steps[s][2],
				     steps[s][3]);
			}
		}
		CHECK(r[0].type && r[0].type == r[1].type && r[0].n == r[1].n);
		CHECK((!r[0].str && !r[1].str) ||
		      (r[0].str && r[1].str && !strcmp(r[0].str, r[1].str)));
		kvc_reply_free(&r[0]);
		kvc_reply_free(&r[1]);
	}
	for (int i = 0; i < 2; i++) {
		call(fds[i], &r[i], "EXISTS", "e1", "e2", NULL);
		CHECK(r[i].type == ':' && r[i].n == 2);
		kvc_reply_free(&r[i]);
	}
	sleep_ms(300);
	for (int i = 0; i < 2; i++) {
		call(fds[i], &r[i], "GET", "e1", NULL, NULL);
		CHECK(r[i].type == '$' && r[i].n == -1);
		kvc_reply_free(&r[i]);
		call(fds[i], &r[i], "TTL", "e2", NULL, NULL);
		CHECK(r[i].type == ':' && r[i].n == -2);
		kvc_reply_free(&r[i]);
		call(fds[i], &r[i], "DBSIZE", NULL, NULL, NULL);
		CHECK(r[i].type == ':');
		kvc_reply_free(&r[i]);
	}
	close(fds[0]);
	close(fds[1]);
}

static void expect(int fd, const char *a, const char *b, const char *c, char type, const char *text)
{
	struct kvc_reply r;
	call(fd, &r, a, b, c, NULL);
	CHECK_EQ(r.type, type);
	bool ok = text ? r.str && !strcmp(r.str, text) : !r.str;
	CHECK(ok);
	if (!ok)
		fprintf(stderr, "  %s %s: got '%s'\n", a, b ? b : "", r.str ? r.str : "(nil)");
	kvc_reply_free(&r);
}

static void test_tenants_by_auth_and_info(void)
{
	int fd = kvc_connect(kv.port);
	REQUIRE(fd >= 0);
	expect(fd, "AUTH", "db3", NULL, '+', "OK");
	expect(fd, "SET", "who", "three", '+', "OK");
	expect(fd, "SELECT", "3", NULL, '+', "OK");
	expect(fd, "GET", "who", NULL, '$', "three");
	expect(fd, "AUTH", "db4", "any-password", '+', "OK");
	expect(fd, "GET", "who", NULL, '$', NULL);
	expect(fd, "AUTH", "nosuch", NULL, '-',
	       "WRONGPASS invalid username-password pair or user is disabled.");
	expect(fd, "AUTH", NULL, NULL, '-', "ERR wrong number of arguments for 'auth' command");
	const char *four[] = {"AUTH", "a", "b", "c"};
	struct kvc_reply r;
	REQUIRE(!kvc_call(fd, &r, 4, four));
	CHECK(r.type == '-' && !strcmp(r.str, "ERR syntax error"));
	kvc_reply_free(&r);
	expect(fd, "INFO", "nosuchsection", NULL, '$', "");
	call(fd, &r, "INFO", NULL, NULL, NULL);
	CHECK(r.type == '$');
	static const char *const heads[] = {"# Server\r\n", "# Clients\r\n",  "# Memory\r\n",
	                                    "# Stats\r\n",  "# Keyspace\r\n", "# Tenants\r\n"};
	for (int i = 0; i < 6; i++)
		CHECK(r.str && strstr(r.str, heads[i]));
	CHECK(r.str && strstr(r.str, "db3:keys=1,expires=0,avg_ttl=0\r\n"));
	kvc_reply_free(&r);
	char *info = kvc_info(kv.port, "tenants");
	REQUIRE(info);
	CHECK(!strncmp(info, "# Tenants\r\n", 11));
	CHECK_EQ(prog_count(info, "\ntenant_db"), 16);
	CHECK_EQ(kvc_info_num(info, "tenant_db3", "keys"), 1);
	CHECK_EQ(kvc_info_num(info, "tenant_db3", "keyspace_hits"), 1);
	CHECK_EQ(kvc_info_num(info, "tenant_db4", "keyspace_misses"), 1);
	CHECK(kvc_info_num(info, "tenant_db3", "memory_current") > 0);
	CHECK(strstr(info, "tenant_db3:db=3,keys=1,memory_current=") != NULL);
	CHECK(strstr(info, ",memory_max=max,") != NULL);
	free(info);
	close(fd);
}

int main(void)
{
	kvtest_need("redis-cli", cli, sizeof(cli));
	char tmp[4096];
	kvtest_need("redis-server", tmp, sizeof(tmp));
	const char *rargs[] = {"--proto-max-bulk-len", "1mb", NULL};
	const char *kargs[] = {"--proto-max-bulk-len", "1M", "--threads", "2", NULL};
	if (kvc_start_redis(&redis, rargs)) {
		printf("FAIL: redis-server did not start\n");
		return 1;
	}
	if (kvc_start_kvcache(&kv, kargs, NULL)) {
		kvc_stop(&redis);
		printf("FAIL: memcg-kvcache did not start\n");
		return 1;
	}
	fprintf(stderr, "redis-server on port %d, memcg-kvcache on port %d\n", redis.port, kv.port);
	RUN(test_redis_cli_script);
	RUN(test_raw_protocol);
	RUN(test_expiry_in_time);
	RUN(test_tenants_by_auth_and_info);
	kvc_stop(&redis);
	int st = kvc_stop(&kv);
	if (st != 0) {
		fprintf(stderr, "memcg-kvcache exited with %d (not at rest?)\n", st);
		test_failed++;
	}
	return test_done();
}
