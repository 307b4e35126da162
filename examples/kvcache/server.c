/* SPDX-License-Identifier: MIT */
/*
 * server.c - workers, connections and the cron thread (see server.h).
 *
 * Locks: none of its own.  A connection belongs to the worker that
 * accepted it; the context's counters are relaxed atomics; stopping is an
 * eventfd every worker watches, and a flag.
 */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* A pending request may not exceed this (arguments and their framing). */
#define KV_QUERY_MAX(max_bulk) ((max_bulk)*2 + (1u << 20))
#define KV_READ_CHUNK 16384
#define KV_MAX_WORKERS 256
#define KV_CRON_MS 100
/* Stripes each tenant's active expiry looks at per cron tick. */
#define KV_EXPIRE_STRIPES 4

struct conn {
	int fd;
	uint32_t events;  /* what epoll watches for it */
	bool close;       /* close once the replies are written */
	struct kv_buf in; /* bytes read, not yet parsed: [in_pos, len) */
	size_t in_pos;
	struct kv_buf out; /* replies not yet written: [out_pos, len) */
	size_t out_pos;
	struct kv_parser parser;
	struct kv_client client;
	struct conn *prev, *next; /* the worker's connections */
};

struct worker {
	struct kv_server *srv;
	pthread_t thread;
	int epfd;
	struct conn *conns;
};

struct kv_server {
	struct kv_context ctx;
	struct kv_server_config cfg;
	int listen_fd, stop_fd;
	int nworkers;
	struct worker workers[KV_MAX_WORKERS];
	pthread_t cron;
	bool cron_started;
	int stopping; /* atomic */
};

/* epoll data: the two special descriptors, else a connection. */
static char tag_listen, tag_stop;

/* ------------------------------------------------------------ connections */

static void conn_close(struct worker *w, struct conn *c)
{
	epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	kv_buf_free(&c->in);
	kv_buf_free(&c->out);
	kv_buf_free(&c->client.scratch);
	kv_parser_free(&c->parser);
	free(c);
	__atomic_fetch_sub(&w->srv->ctx.clients_connected, 1, __ATOMIC_RELAXED);
}

static void conn_accept(struct worker *w)
{
	struct kv_server *s = w->srv;
	for (;;) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return; /* EAGAIN: another worker took it, or none left */
		struct conn *c = calloc(1, sizeof(*c));
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
		if (c)
			c->events = EPOLLIN;
		if (!c || epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			free(c);
			close(fd);
			continue;
		}
		c->fd = fd;
		kv_parser_init(&c->parser, s->cfg.max_bulk, s->cfg.max_args);
		c->client = (struct kv_client){.ctx = &s->ctx,
		                               .tenant = kv_tenant_by_index(s->ctx.tenants, 0),
		                               .out = &c->out};
		c->next = w->conns;
		if (c->next)
			c->next->prev = c;
		w->conns = c;
		__atomic_fetch_add(&s->ctx.connections_received, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&s->ctx.clients_connected, 1, __ATOMIC_RELAXED);
	}
}

/* Write what the socket takes, then watch for what the connection needs:
   room to write while replies are pending, input while it may read (not
   closing, fewer than KV_OUT_HIGH bytes pending).  Return false if the
   connection is dead or done. */
static bool conn_flush(struct worker *w, struct conn *c)
{
	while (c->out_pos < c->out.len) {
		ssize_t n = write(c->fd, c->out.data + c->out_pos, c->out.len - c->out_pos);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0)
			return false;
		c->out_pos += (size_t)n;
	}
	if (c->out_pos == c->out.len)
		c->out_pos = c->out.len = 0;
	size_t pending = c->out.len - c->out_pos;
	if (c->close && !pending)
		return false;
	uint32_t events =
	        (pending ? EPOLLOUT : 0) | (!c->close && pending < KV_OUT_HIGH ? EPOLLIN : 0);
	if (events != c->events) {
		struct epoll_event ev = {.events = events, .data.ptr = c};
		epoll_ctl(w->epfd, EPOLL_CTL_MOD, c->fd, &ev);
		c->events = events;
	}
	return true;
}

/* Run every complete request in the input buffer. */
static void conn_process(struct conn *c)
{
	while (!c->close && c->out.len - c->out_pos < KV_OUT_HIGH) {
		const char *err = NULL;
		enum kv_parse r = kv_parse(&c->parser, c->in.data, c->in.len, &c->in_pos, &err);
		if (r == KV_PARSE_MORE)
			break;
		if (r == KV_PARSE_ERROR) {
			kv_reply_error(&c->out, "%s", err + 0);
			c->close = true;
			break;
		}
		if (c->parser.argc == 0)
			continue;
		kv_execute(&c->client, c->parser.argc, c->parser.argv);
		if (c->client.close_after_reply)
			c->close = true;
	}
	/* Keep only the unparsed bytes. */
	if (c->in_pos == c->in.len) {
		c->in.len = c->in_pos = 0;
	} else if (c->in_pos > 0) {
		memmove(c->in.data, c->in.data + c->in_pos, c->in.len - c->in_pos);
		c->in.len -= c->in_pos;
		c->in_pos = 0;
	}
}

/* Read what is there and process it.  Return false if the connection is dead. */
static bool conn_read(struct worker *w, struct conn *c)
{
	size_t limit = KV_QUERY_MAX(w->srv->cfg.max_bulk);
	for (;;) {
		if (!kv_buf_reserve(&c->in, KV_READ_CHUNK))
			return false;
		ssize_t n = read(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0)
			return false;
		c->in.len += (size_t)n;
		conn_process(c);
		if (c->in.len > limit || c->out.oom)
			return false;
		if (c->close || c->out.len - c->out_pos >= KV_OUT_HIGH)
			break;
		if ((size_t)n < KV_READ_CHUNK)
			break;
	}
	return true;
}

/* ------------------------------------------------------------ threads */

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct epoll_event evs[64];
	while (!__atomic_load_n(&w->srv->stopping, __ATOMIC_ACQUIRE)) {
		int n = epoll_wait(w->epfd, evs, 64, -1);
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;
			if (p == &tag_stop)
				break;
			if (p == &tag_listen) {
				conn_accept(w);
				continue;
			}
			struct conn *c = p;
			bool alive = !(evs[i].events & EPOLLERR);
			if (alive && (evs[i].events & EPOLLOUT))
				alive = conn_flush(w, c);
			if (alive && (evs[i].events & (EPOLLIN | EPOLLHUP)) && !c->close)
				alive = conn_read(w, c);
			/* Requests left while replies were over the mark run now. */
			if (alive && c->in.len && !c->close)
				conn_process(c);
			if (alive)
				alive = conn_flush(w, c);
			if (!alive)
				conn_close(w, c);
		}
	}
	return NULL;
}

static void *cron_main(void *arg)
{
	struct kv_server *s = arg;
	struct kv_tenants *ts = s->ctx.tenants;
	while (!__atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE)) {
		struct timespec d = {0, KV_CRON_MS * 1000000L};
		nanosleep(&d, NULL);
		for (int i = 0; i < ts->count; i++)
			kv_expire_cycle(&ts->tenant[i]->table, KV_EXPIRE_STRIPES);
	}
	return NULL;
}

static int listen_on(const struct kv_server_config *cfg)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)cfg->port)};
	if (inet_pton(AF_INET, cfg->bind ? cfg->bind : "127.0.0.1", &a.sin_addr) != 1)
		return -EINVAL;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 511)) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

static int allowed_cpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	int n = CPU_COUNT(&set);
	return n < 1 ? 1 : n;
}

int kv_server_start(const struct kv_server_config *cfg, struct kv_tenants *tenants,
                    struct kv_server **out)
{
	struct kv_server *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cfg = *cfg;
	if (!s->cfg.max_bulk)
		s->cfg.max_bulk = KV_MAX_BULK_DEFAULT;
	if (!s->cfg.max_args)
		s->cfg.max_args = KV_MAX_ARGS_DEFAULT;
	s->nworkers = cfg->threads > 0 ? cfg->threads : allowed_cpus();
	if (s->nworkers > KV_MAX_WORKERS)
		s->nworkers = KV_MAX_WORKERS;
	s->stop_fd = -1;
	s->listen_fd = listen_on(cfg);
	if (s->listen_fd < 0) {
		int e = s->listen_fd;
		free(s);
		return e;
	}
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	getsockname(s->listen_fd, (struct sockaddr *)&a, &alen);
	s->ctx = (struct kv_context){.tenants = tenants,
	                             .port = ntohs(a.sin_port),
	                             .threads = s->nworkers,
	                             .max_bulk = s->cfg.max_bulk,
	                             .start_ms = kv_now_ms()};
	s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int err = s->stop_fd < 0 ? -errno : 0;
	int started = 0;
	for (; !err && started < s->nworkers; started++) {
		struct worker *w = &s->workers[started];
		w->srv = s;
		w->epfd = epoll_create1(EPOLL_CLOEXEC);
		struct epoll_event l = {.events = EPOLLIN | EPOLLEXCLUSIVE,
		                        .data.ptr = &tag_listen};
		struct epoll_event st = {.events = EPOLLIN, .data.ptr = &tag_stop};
		if (w->epfd < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, s->listen_fd, &l) ||
		    epoll_ctl(w->epfd, EPOLL_CTL_ADD, s->stop_fd, &st))
			err = -errno;
		else
			err = -pthread_create(&w->thread, NULL, worker_main, w);
		if (err) {
			if (w->epfd >= 0)
				close(w->epfd);
			break;
		}
	}
	s->nworkers = started;
	if (!err) {
		err = -pthread_create(&s->cron, NULL, cron_main, s);
		s->cron_started = !err;
	}
	if (err) {
		kv_server_stop(s);
		return err;
	}
	*out = s;
	return 0;
}

int kv_server_port(const struct kv_server *s) { return s->ctx.port; }

struct kv_context *kv_server_context(struct kv_server *s) { return &s->ctx; }

void kv_server_stop(struct kv_server *s)
{
	__atomic_store_n(&s->stopping, 1, __ATOMIC_RELEASE);
	if (s->stop_fd >= 0) {
		uint64_t one = 1;
		if (write(s->stop_fd, &one, sizeof(one)) < 0)
			perror("kvcache: stop");
	}
	for (int i = 0; i < s->nworkers; i++) {
		struct worker *w = &s->workers[i];
		pthread_join(w->thread, NULL);
		while (w->conns)
			conn_close(w, w->conns);
		close(w->epfd);
	}
	if (s->cron_started)
		pthread_join(s->cron, NULL);
	close(s->listen_fd);
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	free(s);
}
