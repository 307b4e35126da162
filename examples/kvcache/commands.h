/* SPDX-License-Identifier: MIT */
/*
 * commands.h - the commands kvcache answers, with Redis 7.0's replies and
 * error texts, word for word (tests/kvcache/test_compare.c holds them
 * against a real redis-server).
 *
 *   PING ECHO QUIT AUTH SELECT INFO DBSIZE FLUSHDB CONFIG GET
 *   GET SET (NX XX GET KEEPTTL EX PX EXAT PXAT) MGET MSET DEL EXISTS
 *   INCR DECR INCRBY DECRBY EXPIRE PEXPIRE (NX XX GT LT) TTL PTTL
 *
 * A command runs in the thread that read it, on the connection's tenant;
 * the tables do their own locking (table.h), so commands take no lock.
 * MSET sets its keys one by one (not atomically, unlike Redis).
 */
#ifndef KV_COMMANDS_H
#define KV_COMMANDS_H

#include <stdbool.h>
#include <stdint.h>

#include "resp.h"
#include "tenant.h"

/** What the whole server shares with its commands (counters: relaxed atomics). */
struct kv_context {
	struct kv_tenants *tenants;
	int port, threads;
	size_t max_bulk;
	int64_t start_ms;
	long connections_received;
	long clients_connected;
	long commands_processed;
};

/** One connection's state as commands see it. */
struct kv_client {
	struct kv_context *ctx;
	struct kv_tenant *tenant; /* SELECT / AUTH change it */
	struct kv_buf *out;       /* replies go here */
	struct kv_buf scratch;    /* SET GET's old value */
	bool close_after_reply;   /* QUIT */
};

/** kv_execute - run the request @argv[0, @argc) (@argc > 0), appending its reply. */
void kv_execute(struct kv_client *c, unsigned argc, const struct kv_arg *argv);

/** kv_info - the INFO text of the sections named in @argv[0, @argc) (none: all). */
void kv_info(struct kv_context *ctx, unsigned argc, const struct kv_arg *argv, struct kv_buf *out);

#endif /* KV_COMMANDS_H */
