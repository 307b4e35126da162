/* SPDX-License-Identifier: MIT */
/*
 * tools/kvclient.h - what `memcg demo --server`, `memcg bench kvcache` and
 * the kvcache tests need to drive real Redis programs: find and start
 * memcg-kvcache and redis-server on free ports of 127.0.0.1, stop them,
 * speak RESP to them (one request, one reply), read INFO fields, start
 * redis-benchmark and parse its CSV, read a process's RSS.
 *
 * Not thread safe where it says so; no global state but what a call owns.
 */
#ifndef MCG_TOOLS_KVCLIENT_H
#define MCG_TOOLS_KVCLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/** A server process this program started. */
struct kvc_server {
	pid_t pid;
	int port;
	bool redis; /* redis-server (else memcg-kvcache) */
};

/**
 * kvc_find - the path of program @name into @buf: for "memcg-kvcache" the
 * environment's MCG_KVCACHE_BIN, else the directory of this executable,
 * else PATH; for others PATH.  Return: @buf, or NULL if not found.
 */
const char *kvc_find(const char *name, char *buf, size_t len);

/**
 * kvc_start_kvcache - start memcg-kvcache --port 0 with @args (NULL-ended,
 * may be NULL), its stderr to @log (NULL: inherited), and wait until it
 * answers PING.  Return: 0, or -1 (message on stderr; nothing left running).
 */
int kvc_start_kvcache(struct kvc_server *s, const char *const *args, const char *log);

/**
 * kvc_start_redis - start redis-server on a free port of 127.0.0.1 with
 * --save '' --appendonly no and @args, and wait until it answers PING.
 * Return: 0, -1 (failed), or -2 (redis-server is not installed).
 */
int kvc_start_redis(struct kvc_server *s, const char *const *args);

/** kvc_stop - SIGTERM, wait (SIGKILL after 10 s).  Return: its exit status (128+sig if killed). */
int kvc_stop(struct kvc_server *s);

/** kvc_connect - a blocking TCP connection to 127.0.0.1:@port (5 s timeouts), or -1. */
int kvc_connect(int port);

/** A reply: its RESP type character and its text (bulk/status/error/integer), NUL-ended. */
struct kvc_reply {
	char type; /* '+', '-', ':', '$', '*'; 0 on a failure to read */
	char *str; /* malloc'd; NULL for a nil bulk; an array's elements joined by '\n' */
	size_t len;
	long long n; /* an integer's value, an array's or bulk's length (-1: nil) */
};

void kvc_reply_free(struct kvc_reply *r);

/** kvc_call - send @argv[0, @argc) on @fd and read one reply.  Return 0 or -1. */
int kvc_call(int fd, struct kvc_reply *r, int argc, const char *const *argv);

/** kvc_callv - kvc_call() with the arguments as a NULL-ended list of strings. */
int kvc_callv(int fd, struct kvc_reply *r, ...) __attribute__((sentinel));

/** kvc_info - INFO @section of the server on @port, malloc'd (NULL on failure). */
char *kvc_info(int port, const char *section);

/**
 * kvc_info_num - the number at "@field:" in @info, or, with @sub, the
 * number at "@sub=" on the line of @field ("tenant_a:...,keys=3,...").
 * Return: the value, or -1 if absent.
 */
double kvc_info_num(const char *info, const char *field, const char *sub);

/**
 * kvc_spawn - start @argv with stdout to @out_path (NULL: /dev/null),
 * stderr to @err_path (NULL: /dev/null).  Return: the pid, or -1.
 */
pid_t kvc_spawn(char *const argv[], const char *out_path, const char *err_path);

/** kvc_wait - wait for @pid, killing it after @timeout_s.  Return: exit status (128+sig). */
int kvc_wait(pid_t pid, int timeout_s);

/** One test's line of `redis-benchmark --csv`. */
struct kvc_bench_row {
	char test[32];
	double rps, avg_ms, p50_ms, p99_ms;
};

/** kvc_bench_csv - parse up to @max rows of redis-benchmark --csv output in @path.  Return: rows.
 */
int kvc_bench_csv(const char *path, struct kvc_bench_row *rows, int max);

/** kvc_rss_kib - VmRSS of @pid in KiB, or -1. */
long kvc_rss_kib(pid_t pid);

/** kvc_cpu_ns - user + system CPU time of @pid (all its threads) in ns, or -1.
 *  The kernel counts it in clock ticks (/proc/PID/stat): 10 ms resolution. */
double kvc_cpu_ns(pid_t pid);

/** kvc_fill - SET key:%012d (the names redis-benchmark -r uses) for 0..@n-1 in
 *  database @db with @vsize-byte values, pipelined.  Return 0 or -1. */
int kvc_fill(int port, int db, long n, int vsize);

#endif /* MCG_TOOLS_KVCLIENT_H */
