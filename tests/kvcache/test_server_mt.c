/* SPDX-License-Identifier: MIT */
/*
 * test_server_mt.c - redis-benchmark against memcg-kvcache (a smoke run,
 * small counts): SET, GET, INCR, MSET and PING, pipelined and not, from
 * several connections at once on two tenants (two benchmark processes in
 * parallel, one on --dbnum 0, one authenticated as db5), so every worker
 * thread serves and the tables are shared across threads.  Every request
 * must succeed (redis-benchmark exits 0, prints no error, reports every
 * test), the keys must be where the clients put them, and the server must
 * come back to 0 bytes at rest.  Under TSan the server itself is checked.
 */
#include "kvtest.h"
#include "progs.h"
#include "test.h"

static struct kvc_server kv;
static char bench[4096];

static void test_benchmark_two_tenants(void)
{
	char port[16], out0[64], out1[64], err0[64], err1[64];
	snprintf(port, sizeof(port), "%d", kv.port);
	snprintf(out0, sizeof(out0), "/tmp/kvcache-bench-%d-0.csv", (int)getpid());
	snprintf(out1, sizeof(out1), "/tmp/kvcache-bench-%d-1.csv", (int)getpid());
	snprintf(err0, sizeof(err0), "/tmp/kvcache-bench-%d-0.err", (int)getpid());
	snprintf(err1, sizeof(err1), "/tmp/kvcache-bench-%d-1.err", (int)getpid());
	char *a0[] = {bench,     "-p",   port,    "-t", "set,get,incr,mset,ping",
	              "-n",      "3000", "-c",    "4",  "-P",
	              "8",       "-r",   "1000",  "-d", "256",
	              "--dbnum", "0",    "--csv", NULL};
	char *a1[] = {bench, "-p",  port, "-t",  "set,get", "-n",  "2000",  "-c", "3",
	              "-r",  "500", "-d", "100", "-a",      "db5", "--csv", NULL};
	pid_t p0 = kvc_spawn(a0, out0, err0), p1 = kvc_spawn(a1, out1, err1);
	REQUIRE(p0 > 0 && p1 > 0);
	CHECK_EQ(kvc_wait(p0, 120), 0);
	CHECK_EQ(kvc_wait(p1, 120), 0);
	struct kvc_bench_row rows[16];
	int n0 = kvc_bench_csv(out0, rows, 16);
	CHECK_EQ(n0, 6); /* SET GET INCR MSET PING_INLINE PING_MBULK */
	for (int i = 0; i < n0; i++)
		CHECK(rows[i].rps > 0);
	CHECK_EQ(kvc_bench_csv(out1, rows, 16), 2);
	for (const char *e = err0; e; e = e == err0 ? err1 : NULL) {
		char *text = prog_read_file(e);
		/* redis-cli's warning about -a on the command line is the only one. */
		CHECK(text && !strstr(text, "ERR") && !strstr(text, "rror"));
		if (text && (strstr(text, "ERR") || strstr(text, "rror")))
			fprintf(stderr, "  %s: %s\n", e, text);
		free(text);
	}
	unlink(out0), unlink(out1), unlink(err0), unlink(err1);

	char *info = kvc_info(kv.port, "tenants");
	REQUIRE(info);
	/* key:__rand_int__, counter:__rand_int__ and MSET's key{tag}:__rand_int__,
	   over 1000 names each (500 for db5). */
	double k0 = kvc_info_num(info, "tenant_db0", "keys");
	double k5 = kvc_info_num(info, "tenant_db5", "keys");
	CHECK(k0 > 1000 && k0 <= 3001);
	CHECK(k5 > 300 && k5 <= 500);
	CHECK_EQ(kvc_info_num(info, "tenant_db1", "keys"), 0);
	CHECK_EQ(kvc_info_num(info, "tenant_db0", "evicted_keys"), 0);
	free(info);
}

/* --config: the same options from a file; bad options are refused. */
static void test_config_file(void)
{
	char path[64];
	snprintf(path, sizeof(path), "/tmp/kvcache-test-%d.conf", (int)getpid());
	FILE *f = fopen(path, "w");
	REQUIRE(f);
	fputs("# two tenants\nthreads 1\ntenant alpha:max=8M,low=2M\n\ntenant beta  # no limits\n",
	      f);
	fclose(f);
	const char *args[] = {"--config", path, NULL};
	struct kvc_server s;
	REQUIRE(kvc_start_kvcache(&s, args, NULL) == 0);
	char *info = kvc_info(s.port, "tenants");
	CHECK_EQ(kvc_info_num(info, "tenant_alpha", "memory_max"), 8 << 20);
	CHECK_EQ(kvc_info_num(info, "tenant_alpha", "memory_low"), 2 << 20);
	CHECK_EQ(kvc_info_num(info, "tenant_beta", "db"), 1);
	CHECK(info && !strstr(info, "tenant_db0"));
	free(info);
	int fd = kvc_connect(s.port);
	struct kvc_reply r;
	CHECK(fd >= 0 && !kvc_callv(fd, &r, "SELECT", "2", NULL));
	CHECK(r.type == '-' && r.str && !strcmp(r.str, "ERR DB index is out of range"));
	kvc_reply_free(&r);
	close(fd);
	CHECK_EQ(kvc_stop(&s), 0);

	f = fopen(path, "w");
	REQUIRE(f);
	fputs("tenant bad:swap=1M\n", f);
	fclose(f);
	char bin[4096];
	REQUIRE(kvc_find("memcg-kvcache", bin, sizeof(bin)));
	char *argv[] = {bin, "--config", path, NULL};
	struct prog_result pr = prog_run(argv, NULL, NULL, NULL, 30);
	CHECK_EQ(pr.status, 2);
	CHECK(strstr(pr.err, "unknown setting 'swap'") != NULL);
	prog_result_free(&pr);
	unlink(path);
}

int main(void)
{
	kvtest_need("redis-benchmark", bench, sizeof(bench));
	const char *args[] = {"--threads", "2", NULL};
	if (kvc_start_kvcache(&kv, args, NULL)) {
		printf("FAIL: memcg-kvcache did not start\n");
		return 1;
	}
	RUN(test_benchmark_two_tenants);
	RUN(test_config_file);
	int st = kvc_stop(&kv);
	if (st != 0) {
		fprintf(stderr, "memcg-kvcache exited with %d\n", st);
		test_failed++;
	}
	return test_done();
}
