/* SPDX-License-Identifier: MIT */
/*
 * server.h - the network side: a listening socket and a thread per CPU,
 * each with its own epoll set and its own connections.
 *
 * Every worker waits on the one listening socket (EPOLLEXCLUSIVE: a new
 * connection wakes one of them) and keeps the connections it accepted for
 * their whole life, so a connection's buffers are only ever touched by
 * one thread and need no lock.  A readable connection: read, parse and run
 * every complete request (pipelining), append the replies, write what the
 * socket takes; the rest waits for EPOLLOUT.  A client that does not read
 * its replies is not read from either once KV_OUT_HIGH bytes are pending,
 * so its buffers stay bounded; so is its input (max_bulk per argument,
 * KV_QUERY_MAX per pending request: over it the connection is closed, as
 * Redis does over client-query-buffer-limit).
 *
 * A cron thread runs active expiry every 100 ms.
 */
#ifndef KV_SERVER_H
#define KV_SERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "commands.h"

/** Replies pending past which a connection's input is left unread. */
#define KV_OUT_HIGH (1u << 20)

struct kv_server_config {
	const char *bind;  /* address to listen on; NULL: 127.0.0.1 */
	int port;          /* 0: any free port (kv_server_port() tells which) */
	int threads;       /* workers; 0: the CPUs this process may use */
	size_t max_bulk;   /* longest argument; 0: KV_MAX_BULK_DEFAULT */
	unsigned max_args; /* most arguments; 0: KV_MAX_ARGS_DEFAULT */
};

struct kv_server;

/**
 * kv_server_start - listen and start the workers and the cron thread,
 * serving @tenants (which must outlive the server).
 * Return: 0, or -errno (nothing left running).  Pair with kv_server_stop().
 */
int kv_server_start(const struct kv_server_config *cfg, struct kv_tenants *tenants,
                    struct kv_server **out);

/** kv_server_port - the port it listens on. */
int kv_server_port(const struct kv_server *s);

/** kv_server_context - the counters and settings commands see. */
struct kv_context *kv_server_context(struct kv_server *s);

/** kv_server_stop - stop the threads, close every connection, free the server. */
void kv_server_stop(struct kv_server *s);

#endif /* KV_SERVER_H */
