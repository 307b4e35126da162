/* SPDX-License-Identifier: MIT */
/*
 * iface/metrics.c - the Prometheus metrics over HTTP: GET /metrics answers
 * a snapshot of every group and cache in the text format (iface/prom.c).
 *
 * The HTTP server is libmicrohttpd's (one internal polling thread, at most
 * 16 connections, 10 s connection timeout), loaded with dlopen() when a
 * server is first started: the library and the malloc shim, which is
 * preloaded into every program `memcg run` starts, do not carry it (and
 * the TLS stack it pulls in) into processes that never serve metrics.
 * Built without its header (libmicrohttpd-dev), or without the library at
 * run time, mcg_metrics_start() says so on stderr and returns -ENOTSUP.
 *
 * The listening socket is made here (numeric address, SO_REUSEADDR, the
 * port it got read back) and handed to the daemon, so a taken port is a
 * plain -EADDRINUSE and port 0 picks a free one.  Replies are rendered into
 * memcg's own buffers (iface/out.h) and handed to the daemon, which frees
 * them with mcg_free() when sent; the request handler holds no lock of its
 * own.
 *
 * Locks: start_lock (MCG_RANK_CONTROL) serialises start and stop (held
 * across the daemon's start and stop, never in the handler); state_lock (a
 * plain mutex, leaf) guards the address and the descriptor for
 * mcg_metrics_address() and the fork handlers.  Fork: the child keeps no
 * server; its copy of the listening socket is closed.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/lock.h"
#include "base/log.h"
#include "iface/metrics.h"
#include "iface/out.h"
#include "iface/prom.h"
#include "iface/snapshot.h"
#include "memcg/control.h"
#include "memcg/kmalloc.h"

#ifndef MCG_HAVE_MHD
#define MCG_HAVE_MHD 0
#endif
/** Whether libmicrohttpd's header was found at configure time. */
static const bool mcg_config_mhd = MCG_HAVE_MHD;

/* The library's soname: what Debian's libmicrohttpd12 installs. */
#define MHD_SONAME "libmicrohttpd.so.12"

static struct {
	mcg_lock_t start_lock;
	pthread_mutex_t state_lock;
	void *daemon; /* struct MHD_Daemon *, NULL: not serving */
	pid_t pid;
	int listen_fd;
	int port;
	char address[64];
} met = {.state_lock = PTHREAD_MUTEX_INITIALIZER, .listen_fd = -1};

static pthread_once_t met_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void) { pthread_mutex_lock(&met.state_lock); }
static void fork_parent(void) { pthread_mutex_unlock(&met.state_lock); }
static void fork_child(void)
{
	if (met.daemon) {
		close(met.listen_fd); /* the daemon's thread is not here: forget it */
		met.daemon = NULL;
		met.listen_fd = -1;
		met.address[0] = '\0';
	}
	pthread_mutex_unlock(&met.state_lock);
}

static void met_init_once(void)
{
	mcg_lock_init(&met.start_lock, MCG_RANK_CONTROL);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ------------------------------------------------------------ the address */

/* "PORT", "A.B.C.D:PORT" or "[V6]:PORT" into @sa.  Return 0 or -EINVAL. */
static int parse_listen(const char *s, struct sockaddr_storage *sa, socklen_t *len)
{
	char host[64];
	const char *port;
	const char *colon = strrchr(s, ':');
	if (!colon) {
		snprintf(host, sizeof(host), "127.0.0.1");
		port = s;
	} else if (s[0] == '[') {
		const char *close_br = strchr(s, ']');
		if (!close_br || close_br + 1 != colon ||
		    (size_t)(close_br - s - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, (size_t)(close_br - s - 1));
		host[close_br - s - 1] = '\0';
		port = colon + 1;
	} else {
		if ((size_t)(colon - s) >= sizeof(host))
			return -EINVAL;
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = '\0';
		port = colon + 1;
	}
	char *end;
	errno = 0;
	long p = strtol(port, &end, 10);
	if (!*port || *end || errno || p < 0 || p > 65535)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	struct sockaddr_in *v4 = (struct sockaddr_in *)sa;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)sa;
	if (s[0] != '[' && inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)p);
		*len = sizeof(*v4);
	} else if (s[0] == '[' && inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)p);
		*len = sizeof(*v6);
	} else {
		return -EINVAL;
	}
	return 0;
}

/* A listening TCP socket at @sa; its port into *@port.  Return: the descriptor or -errno. */
static int listen_tcp(const struct sockaddr_storage *sa, socklen_t len, int *port)
{
	int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	struct sockaddr_storage got;
	socklen_t got_len = sizeof(got);
	if (bind(fd, (const struct sockaddr *)sa, len) != 0 || listen(fd, 64) != 0 ||
	    getsockname(fd, (struct sockaddr *)&got, &got_len) != 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	*port = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
	                                        : ((struct sockaddr_in *)&got)->sin_port);
	return fd;
}

/* ------------------------------------------------------------ the daemon */

#if MCG_HAVE_MHD
#include <microhttpd.h>

static struct {
	__typeof__(&MHD_start_daemon) start_daemon;
	__typeof__(&MHD_stop_daemon) stop_daemon;
	__typeof__(&MHD_create_response_from_buffer) from_buffer;
	__typeof__(&MHD_create_response_from_buffer_with_free_callback) from_buffer_free;
	__typeof__(&MHD_add_response_header) add_header;
	__typeof__(&MHD_queue_response) queue;
	__typeof__(&MHD_destroy_response) destroy;
} mhd;

/* Load the library once.  Return 0 or -ENOTSUP (said on stderr). */
static int mhd_load(void)
{
	static void *lib;
	if (lib)
		return 0;
	void *h = dlopen(MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) { /* GCOVR_EXCL_BR_LINE: the tests' machines have it (scripts/deps.sh) */
		/* GCOVR_EXCL_START: only where libmicrohttpd is not installed */
		mcg_log("metrics: cannot load " MHD_SONAME " (%s); install libmicrohttpd12",
		        dlerror());
		return -ENOTSUP;
		/* GCOVR_EXCL_STOP */
	}
	const struct {
		void **fn;
		const char *name;
	} syms[] = {
	        {(void **)&mhd.start_daemon, "MHD_start_daemon"},
	        {(void **)&mhd.stop_daemon, "MHD_stop_daemon"},
	        {(void **)&mhd.from_buffer, "MHD_create_response_from_buffer"},
	        {(void **)&mhd.from_buffer_free,
	         "MHD_create_response_from_buffer_with_free_callback"},
	        {(void **)&mhd.add_header, "MHD_add_response_header"},
	        {(void **)&mhd.queue, "MHD_queue_response"},
	        {(void **)&mhd.destroy, "MHD_destroy_response"},
	};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		*syms[i].fn = dlsym(h, syms[i].name);
		if (!*syms[i].fn) { /* GCOVR_EXCL_BR_LINE: Debian's library has them all */
			/* GCOVR_EXCL_START: only with an older or stripped libmicrohttpd */
			mcg_log("metrics: " MHD_SONAME " has no %s", syms[i].name);
			dlclose(h);
			return -ENOTSUP;
			/* GCOVR_EXCL_STOP */
		}
	}
	lib = h;
	return 0;
}

/* A fixed reply with @status. */
static enum MHD_Result reply_static(struct MHD_Connection *conn, unsigned status, const char *text,
                                    const char *allow)
{
	struct MHD_Response *r =
	        mhd.from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	if (!r)                /* GCOVR_EXCL_BR_LINE: libmicrohttpd's own malloc, no fault point */
		return MHD_NO; /* GCOVR_EXCL_LINE */
	mhd.add_header(r, "Content-Type", "text/plain; charset=utf-8");
	if (allow)
		mhd.add_header(r, "Allow", allow);
	enum MHD_Result q = mhd.queue(conn, status, r);
	mhd.destroy(r);
	return q;
}

static void free_body(void *buf) { mcg_free(buf); }

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply_static(conn, 405, "only GET and HEAD\n", "GET, HEAD");
	if (strcmp(url, "/metrics"))
		return reply_static(conn, 404, "not found: the metrics are at /metrics\n", NULL);
	struct mcg_snapshot s;
	struct mcg_out o;
	mcg_snapshot_init(&s);
	mcg_out_init(&o);
	int err = mcg_snapshot_take(&s, NULL, MCG_SNAP_FILES | MCG_SNAP_CACHES);
	if (!err)
		mcg_prom_render(&o, &s);
	mcg_snapshot_free(&s);
	if (err || o.err || !o.buf) {
		mcg_out_free(&o);
		return reply_static(conn, 500, "out of memory\n", NULL);
	}
	struct MHD_Response *r = mhd.from_buffer_free(mcg_out_size(&o), o.buf, free_body);
	if (!r) { /* GCOVR_EXCL_BR_LINE: libmicrohttpd's own malloc, no fault point */
		mcg_out_free(&o); /* GCOVR_EXCL_LINE */
		return MHD_NO;    /* GCOVR_EXCL_LINE */
	}
	mhd.add_header(r, "Content-Type", MCG_PROM_CONTENT_TYPE);
	enum MHD_Result q = mhd.queue(conn, 200, r);
	mhd.destroy(r);
	return q;
}

static int daemon_start(int fd, bool v6, void **daemon)
{
	int err = mhd_load();
	if (err)
		return err;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* its thread takes no signals */
	*daemon = mhd.start_daemon(
	        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | (v6 ? MHD_USE_IPv6 : 0), 0, NULL,
	        NULL, handle, NULL, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, 16u,
	        MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!*daemon) { /* GCOVR_EXCL_BR_LINE: its own thread and memory, no fault point */
		mcg_log("metrics: libmicrohttpd could not start its daemon"); /* GCOVR_EXCL_LINE */
		return -EIO;                                                  /* GCOVR_EXCL_LINE */
	}
	return 0;
}

static void daemon_stop(void *daemon) { mhd.stop_daemon(daemon); }

#else /* !MCG_HAVE_MHD */

static int daemon_start(int fd, bool v6, void **daemon) { return -ENOTSUP; }
static void daemon_stop(void *daemon) {}

#endif

/* ------------------------------------------------------------ the API */

mcg_public int mcg_metrics_start(const char *listen)
{
	pthread_once(&met_once, met_init_once);
	if (!listen)
		listen = getenv("MCG_METRICS_LISTEN");
	struct sockaddr_storage sa;
	socklen_t sa_len;
	if (!listen || !*listen || parse_listen(listen, &sa, &sa_len))
		return -EINVAL;
	if (!mcg_config_mhd) {
		/* GCOVR_EXCL_START: a build without libmicrohttpd only (a constant) */
		mcg_log("metrics: memcg was built without libmicrohttpd (install "
		        "libmicrohttpd-dev and rebuild); not serving %s",
		        listen);
		return -ENOTSUP;
		/* GCOVR_EXCL_STOP */
	}
	mcg_lock(&met.start_lock);
	int err = met.daemon && met.pid == getpid() ? -EALREADY : 0;
	int port = 0, fd = -1;
	void *daemon = NULL;
	if (!err) {
		fd = listen_tcp(&sa, sa_len, &port);
		if (fd < 0)
			err = fd;
	}
	if (!err)
		err = daemon_start(fd, sa.ss_family == AF_INET6, &daemon);
	if (err && fd >= 0)
		close(fd);
	if (!err) {
		char host[INET6_ADDRSTRLEN];
		bool v6 = sa.ss_family == AF_INET6;
		inet_ntop(sa.ss_family,
		          v6 ? (void *)&((struct sockaddr_in6 *)&sa)->sin6_addr
		             : (void *)&((struct sockaddr_in *)&sa)->sin_addr,
		          host, sizeof(host));
		pthread_mutex_lock(&met.state_lock);
		met.daemon = daemon;
		met.listen_fd = fd;
		met.port = port;
		met.pid = getpid();
		snprintf(met.address, sizeof(met.address), v6 ? "[%s]:%d" : "%s:%d", host, port);
		pthread_mutex_unlock(&met.state_lock);
	}
	mcg_unlock(&met.start_lock);
	return err;
}

mcg_public void mcg_metrics_stop(void)
{
	pthread_once(&met_once, met_init_once);
	mcg_lock(&met.start_lock);
	if (met.daemon && met.pid == getpid()) {
		daemon_stop(met.daemon); /* closes the listening socket too */
		pthread_mutex_lock(&met.state_lock);
		met.daemon = NULL;
		met.listen_fd = -1;
		met.address[0] = '\0';
		pthread_mutex_unlock(&met.state_lock);
	}
	mcg_unlock(&met.start_lock);
}

mcg_public int mcg_metrics_port(void)
{
	pthread_mutex_lock(&met.state_lock);
	int port = met.daemon && met.pid == getpid() ? met.port : -ENOENT;
	pthread_mutex_unlock(&met.state_lock);
	return port;
}

int mcg_metrics_address(char *buf, size_t len)
{
	pthread_mutex_lock(&met.state_lock);
	int err = met.daemon && met.pid == getpid() ? 0 : -ENOENT;
	if (!err)
		snprintf(buf, len, "%s", met.address);
	pthread_mutex_unlock(&met.state_lock);
	return err;
}
