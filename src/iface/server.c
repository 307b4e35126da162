/* SPDX-License-Identifier: MIT */
/*
 * iface/server.c - the control socket's server: one thread, one Unix stream
 * socket, at most MAX_CLIENTS connections, each request answered by
 * mcg_control_handle_line() (iface/proto.c).
 *
 * The thread polls the listening socket, an eventfd that stop() writes,
 * and its clients, all non-blocking.  Per client: an input buffer of one
 * request line (MCG_CONTROL_LINE_MAX bytes; a longer line gets an error
 * reply and is skipped to its newline), and one reply at a time - while a
 * reply is being written its client is not read, so a client that never
 * reads holds one reply and one line, no more.  A client that sends no
 * whole request, or does not take its reply, for control_timeout_ms is
 * closed; so is one that breaks the protocol's framing no further (it only
 * gets error lines).  Past MAX_CLIENTS a new connection gets an error line
 * and is closed at once.  Every connection's peer is checked with
 * SO_PEERCRED: root, or this process's real or effective uid; others get
 * an error line and are closed.  The socket's directory is 0700 and the
 * socket 0600 besides (sockdir.c).
 *
 * The thread blocks every signal (the program's handlers run in its own
 * threads), keeps its descriptors close-on-exec and numbered from 1000 up
 * where it can (shells and daemons use the low numbers for themselves),
 * and handles requests holding no lock of its own: a request takes the
 * locks of the group and slab calls it makes, one call at a time, and
 * never while writing to a socket.
 *
 * Locks:
 *   start_lock (MCG_RANK_CONTROL)  serialises start and stop; held across
 *                                  thread creation and join, never by the
 *                                  thread itself.
 *   table_lock (a plain mutex, leaf)  the descriptors and `path`: taken by
 *                                  the thread around accepting and closing
 *                                  connections (nothing else under it), by
 *                                  mcg_control_path(), and by the fork
 *                                  handlers, so a child closes exactly the
 *                                  descriptors the parent had.
 * Fork: the child keeps no thread; its copies of the descriptors are
 * closed, its state reset (a reply buffer the parent's thread was filling
 * is forgotten, not freed: it may be half updated), and it may start a
 * server of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/fault.h"
#include "base/lock.h"
#include "base/log.h"
#include "base/options.h"
#include "iface/out.h"
#include "iface/proto.h"
#include "iface/server.h"
#include "iface/sockdir.h"
#include "memcg/control.h"
#include "memcg/kmalloc.h"
#include "os/os.h"
#include "slab/slab.h"

/** Connections served at once; more are refused with an error line. */
#define MAX_CLIENTS 64
/** Descriptors go this high where the limit allows. */
#define FD_FLOOR 1000

struct client {
	int fd;             /* -1: a free slot */
	bool discarding;    /* skipping an overlong line up to its newline */
	bool eof;           /* the peer shut down its side: answer what came, then close */
	uint64_t deadline;  /* ns (mcg_os_now_ns): closed then unless it made progress */
	size_t in_len;      /* bytes in `in` */
	size_t out_done;    /* bytes of `out` written */
	struct mcg_out out; /* the reply being written (empty: none) */
	char *in;           /* MCG_CONTROL_LINE_MAX bytes of the request buffers */
};

static struct {
	mcg_lock_t start_lock;
	pthread_mutex_t table_lock;
	pthread_t thread;
	bool running;  /* a thread serves (start_lock; table_lock for the fork handlers) */
	bool stopping; /* stop() asked (atomic) */
	pid_t pid;     /* the process that started it */
	int listen_fd, wake_fd;
	char path[MCG_SOCK_PATH_MAX + 1];
	/* MAX_CLIENTS slots and their request buffers, mapped once, apart:
	 * the poll loop reads every slot, and a buffer's pages are touched
	 * (become resident) only once a client uses it. */
	struct client *clients;
	char *inbufs;
} srv = {.table_lock = PTHREAD_MUTEX_INITIALIZER, .listen_fd = -1, .wake_fd = -1};

static pthread_once_t srv_once = PTHREAD_ONCE_INIT;

/* ------------------------------------------------------------ fork */

static void fork_prepare(void) { pthread_mutex_lock(&srv.table_lock); }

static void fork_parent(void) { pthread_mutex_unlock(&srv.table_lock); }

static void fork_child(void)
{
	if (srv.running) {
		for (int i = 0; srv.clients && i < MAX_CLIENTS; i++) {
			if (srv.clients[i].fd >= 0)
				close(srv.clients[i].fd);
			srv.clients[i].fd = -1;
			srv.clients[i].in = srv.inbufs + (size_t)i * MCG_CONTROL_LINE_MAX;
			mcg_out_init(&srv.clients[i].out); /* forgotten, see the banner */
		}
		if (srv.listen_fd >= 0)
			close(srv.listen_fd);
		if (srv.wake_fd >= 0)
			close(srv.wake_fd);
		srv.listen_fd = srv.wake_fd = -1;
		__atomic_store_n(&srv.running, false, __ATOMIC_RELEASE);
		srv.path[0] = '\0';
	}
	pthread_mutex_unlock(&srv.table_lock);
}

/* At exit the socket goes (the thread ends with the process). */
__attribute__((destructor)) static void srv_exit(void) { mcg_control_exit_unlink(); }

static void srv_init_once(void)
{
	mcg_lock_init(&srv.start_lock, MCG_RANK_CONTROL);
	/* After the slab layer's handlers: ours run first in the parent's
	 * prepare and last in the child (pthread_atfork's order). */
	mcg_slab_init();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ------------------------------------------------------------ helpers */

/* @fd moved to FD_FLOOR or above (close-on-exec) where the limit allows. */
static int fd_high(int fd)
{
	if (fd < 0 || fd >= FD_FLOOR)
		return fd;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, FD_FLOOR);
	if (high < 0)
		return fd;
	close(fd);
	return high;
}

static uint64_t timeout_ns(void)
{
	return (uint64_t)mcg_option(MCG_OPT_CONTROL_TIMEOUT_MS) * 1000000ull;
}

/* Best effort, for a connection about to be closed: one error line. */
static void say_and_close(int fd, const char *line)
{
	ssize_t n = send(fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);
	(void)n;
	close(fd);
}

static bool peer_allowed(int fd, long *uid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return false;
	*uid = (long)cred.uid;
	return cred.uid == 0 || cred.uid == getuid() || cred.uid == geteuid();
}

static void client_close(struct client *c)
{
	/* (A descriptor the program closed under us, POLLNVAL, was set to -1:
	 * its number may be the program's own file now.) */
	pthread_mutex_lock(&srv.table_lock);
	int fd = c->fd;
	c->fd = -1;
	close(fd);
	pthread_mutex_unlock(&srv.table_lock);
	mcg_out_free(&c->out);
}

/* ------------------------------------------------------------ the work */

static void accept_all(uint64_t now)
{
	for (int round = 0; round < MAX_CLIENTS; round++) {
		int fd = accept4(srv.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return; /* EAGAIN, or a connection that went away meanwhile */
		long uid = -1;
		if (!peer_allowed(fd, &uid)) {
			char line[160];
			snprintf(
			        line, sizeof(line),
			        "error EACCES Permission denied: uid %ld is neither this process's "
			        "user (%ld) nor root\n",
			        uid, (long)geteuid());
			say_and_close(fd, line);
			continue;
		}
		struct client *c = NULL;
		for (int i = 0; i < MAX_CLIENTS && !c; i++)
			if (srv.clients[i].fd < 0)
				c = &srv.clients[i];
		if (!c) {
			say_and_close(fd,
			              "error EBUSY Device or resource busy: too many clients (64); "
			              "try again\n");
			continue;
		}
		fd = fd_high(fd);
		pthread_mutex_lock(&srv.table_lock);
		c->fd = fd;
		pthread_mutex_unlock(&srv.table_lock);
		c->discarding = c->eof = false;
		c->in_len = c->out_done = 0;
		mcg_out_init(&c->out);
		c->deadline = now + timeout_ns();
	}
}

/* The reply to a request that got no memory even for its error line. */
static const char nomem_line[] = "error ENOMEM out of memory\n";

/*
 * Answer the next whole line of @c's input, if there is one and no reply is
 * pending.  Return: false when a request got no reply at all (no memory for
 * the shortest error line, its buffer empty): the caller sends nomem_line
 * as best it can and closes the connection, so that the client never waits
 * for a reply that will not come nor takes the next one for it.
 */
static bool answer_next(struct client *c)
{
	while (!mcg_out_size(&c->out)) {
		char *nl = memchr(c->in, '\n', c->in_len);
		size_t line_len;
		if (nl) {
			line_len = (size_t)(nl - c->in);
		} else if (c->in_len == MCG_CONTROL_LINE_MAX) {
			/* Full, no newline: too long.  Say so once, skip to its end. */
			if (!c->discarding) {
				mcg_control_error(&c->out, -E2BIG, "a request is at most %d bytes",
				                  MCG_CONTROL_LINE_MAX - 1);
				if (!mcg_out_size(&c->out))
					return false;
			}
			c->discarding = true;
			c->in_len = 0;
			c->out_done = 0;
			continue;
		} else if (c->eof && c->in_len && !c->discarding) {
			line_len = c->in_len; /* a last line without its newline */
		} else {
			if (c->eof && c->discarding)
				c->in_len = 0;
			return true;
		}
		if (c->discarding) {
			c->discarding = false;
		} else {
			mcg_control_handle_line(c->in, line_len, &c->out);
			if (!mcg_out_size(&c->out))
				return false;
		}
		size_t used = nl ? line_len + 1 : line_len;
		memmove(c->in, c->in + used, c->in_len - used);
		c->in_len -= used;
		c->out_done = 0;
	}
	return true;
}

/* answer_next() for client_io(): false (close @c) when a request got no reply. */
static bool answered(struct client *c)
{
	if (answer_next(c))
		return true;
	ssize_t n = send(c->fd, nomem_line, sizeof(nomem_line) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	(void)n; /* best effort: the connection closes either way */
	return false;
}

/* Move bytes for @c as poll said (@revents); false: close it. */
static bool client_io(struct client *c, short revents, uint64_t now)
{
	if (revents & POLLNVAL) {
		c->fd = -1; /* closed by the program: not ours to close again */
		return false;
	}
	if (mcg_out_size(&c->out)) {
		if (!(revents & (POLLOUT | POLLERR | POLLHUP)))
			return true;
		size_t left = mcg_out_size(&c->out) - c->out_done;
		ssize_t n = send(c->fd, mcg_out_data(&c->out) + c->out_done, left,
		                 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		c->deadline = now + timeout_ns();
		c->out_done += (size_t)n;
		if (c->out_done < mcg_out_size(&c->out))
			return true;
		mcg_out_reset(&c->out, 0);
		if (c->out.cap > 65536)
			mcg_out_free(&c->out); /* a large reply: give the memory back */
		if (!answered(c))
			return false;
		return !(c->eof && !mcg_out_size(&c->out) && !c->in_len);
	}
	if (!(revents & (POLLIN | POLLERR | POLLHUP)))
		return true;
	ssize_t n = recv(c->fd, c->in + c->in_len, MCG_CONTROL_LINE_MAX - c->in_len, MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	if (n == 0)
		c->eof = true;
	else
		c->deadline = now + timeout_ns();
	c->in_len += (size_t)n;
	if (!answered(c))
		return false;
	return !(c->eof && !mcg_out_size(&c->out));
}

static void *serve(void *arg)
{
	struct pollfd pfd[MAX_CLIENTS + 2];
	int who[MAX_CLIENTS + 2];
	while (!__atomic_load_n(&srv.stopping, __ATOMIC_ACQUIRE)) {
		uint64_t now = mcg_os_now_ns();
		uint64_t next = now + timeout_ns();
		int n = 0;
		pfd[n++] = (struct pollfd){.fd = srv.wake_fd, .events = POLLIN};
		pfd[n++] = (struct pollfd){.fd = srv.listen_fd, .events = POLLIN};
		for (int i = 0; i < MAX_CLIENTS; i++) {
			struct client *c = &srv.clients[i];
			if (c->fd < 0)
				continue;
			if (c->deadline <= now) {
				client_close(c); /* idle, or not reading its reply */
				continue;
			}
			next = c->deadline < next ? c->deadline : next;
			short ev = mcg_out_size(&c->out) ? POLLOUT : c->eof ? 0 : POLLIN;
			who[n] = i;
			pfd[n++] = (struct pollfd){.fd = c->fd, .events = ev};
		}
		int ms = (int)((next - now) / 1000000) + 1;
		int ready = poll(pfd, (nfds_t)n, ms);
		if (ready < 0 && errno != EINTR)
			break;
		if (ready <= 0)
			continue;
		if ((pfd[0].revents | pfd[1].revents) & (POLLNVAL | POLLERR)) {
			/* The program closed our descriptors (a close-all loop). */
			mcg_log("control socket: its descriptors were closed; not serving");
			pthread_mutex_lock(&srv.table_lock);
			if (pfd[0].revents & POLLNVAL)
				srv.wake_fd = -1;
			if (pfd[1].revents & POLLNVAL)
				srv.listen_fd = -1;
			for (int k = 2; k < n; k++)
				if (pfd[k].revents & POLLNVAL)
					srv.clients[who[k]].fd = -1;
			pthread_mutex_unlock(&srv.table_lock);
			break;
		}
		if (pfd[0].revents)
			continue; /* stop: the loop's test sees it */
		now = mcg_os_now_ns();
		if (pfd[1].revents & POLLIN)
			accept_all(now);
		for (int k = 2; k < n; k++) {
			struct client *c = &srv.clients[who[k]];
			if (pfd[k].revents && !client_io(c, pfd[k].revents, now))
				client_close(c);
		}
	}
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (srv.clients[i].fd >= 0)
			client_close(&srv.clients[i]);
	return arg;
}

/* ------------------------------------------------------------ start, stop */

/* The listening socket at @path, mode 0600.  Return: the descriptor or -errno. */
static int listen_at(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strlen(path);
	if (len == 0 || len > MCG_SOCK_PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, len + 1);
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		unlink(path); /* stale: its process is gone, or this pid's earlier life */
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	fd = fd_high(fd);
	int err = 0;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		err = -errno;
	else if (chmod(path, 0600) != 0 || listen(fd, 128) != 0)
		err = -errno;
	if (err) {
		if (err != -EADDRINUSE)
			unlink(path);
		close(fd);
		return err;
	}
	return fd;
}

mcg_public int mcg_control_start(const char *path)
{
	pthread_once(&srv_once, srv_init_once);
	char buf[MCG_SOCK_PATH_MAX + 1];
	mcg_lock(&srv.start_lock);
	int err = 0;
	if (srv.running && srv.pid == getpid())
		err = -EALREADY;
	if (!err && !path) {
		char dir[256];
		err = mcg_sockdir_default(dir, sizeof(dir));
		if (!err)
			err = mcg_sockdir_make(dir);
		if (!err)
			err = mcg_sock_path(dir, getpid(), buf, sizeof(buf));
		path = buf;
	}
	if (!err && strlen(path) > MCG_SOCK_PATH_MAX)
		err = -ENAMETOOLONG;
	if (!err && !srv.clients)
		srv.clients =
		        mcg_os_map(MCG_ALIGN_UP(sizeof(struct client) * MAX_CLIENTS, 4096), 4096);
	if (!err && !srv.inbufs)
		srv.inbufs = mcg_os_map((size_t)MCG_CONTROL_LINE_MAX * MAX_CLIENTS, 4096);
	if (!err && (!srv.clients || !srv.inbufs))
		err = -ENOMEM; /* what was mapped stays, for the next start */
	int lfd = -1, wfd = -1;
	if (!err) {
		wfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (wfd < 0)
			err = -errno;
		else
			wfd = fd_high(wfd);
	}
	if (!err) {
		lfd = listen_at(path);
		if (lfd < 0)
			err = lfd;
	}
	if (!err) {
		for (int i = 0; i < MAX_CLIENTS; i++) {
			srv.clients[i].fd = -1;
			srv.clients[i].in = srv.inbufs + (size_t)i * MCG_CONTROL_LINE_MAX;
			mcg_out_init(&srv.clients[i].out);
		}
		pthread_mutex_lock(&srv.table_lock);
		srv.listen_fd = lfd;
		srv.wake_fd = wfd;
		snprintf(srv.path, sizeof(srv.path), "%s", path);
		pthread_mutex_unlock(&srv.table_lock);
		__atomic_store_n(&srv.stopping, false, __ATOMIC_RELEASE);
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		err = mcg_fault_should_fail() ? -EAGAIN
		                              : -pthread_create(&srv.thread, NULL, serve, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (err) {
			pthread_mutex_lock(&srv.table_lock);
			srv.listen_fd = srv.wake_fd = -1;
			srv.path[0] = '\0';
			pthread_mutex_unlock(&srv.table_lock);
			unlink(path);
		} else {
			pthread_setname_np(srv.thread, "memcg-control");
			pthread_mutex_lock(&srv.table_lock);
			srv.pid = getpid();
			__atomic_store_n(&srv.running, true, __ATOMIC_RELEASE);
			pthread_mutex_unlock(&srv.table_lock);
		}
	}
	if (err) {
		if (lfd >= 0)
			close(lfd);
		if (wfd >= 0)
			close(wfd);
	}
	mcg_unlock(&srv.start_lock);
	return err;
}

mcg_public void mcg_control_stop(void)
{
	pthread_once(&srv_once, srv_init_once);
	mcg_lock(&srv.start_lock);
	if (srv.running && srv.pid == getpid()) {
		__atomic_store_n(&srv.stopping, true, __ATOMIC_RELEASE);
		uint64_t one = 1;
		ssize_t n = srv.wake_fd >= 0 ? write(srv.wake_fd, &one, sizeof(one)) : 0;
		(void)n;
		pthread_join(srv.thread, NULL);
		pthread_mutex_lock(&srv.table_lock);
		unlink(srv.path);
		if (srv.listen_fd >= 0)
			close(srv.listen_fd);
		if (srv.wake_fd >= 0)
			close(srv.wake_fd);
		srv.listen_fd = srv.wake_fd = -1;
		srv.path[0] = '\0';
		__atomic_store_n(&srv.running, false, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&srv.table_lock);
	}
	mcg_unlock(&srv.start_lock);
}

mcg_public int mcg_control_path(char *buf, size_t len)
{
	if (!buf || !len)
		return -EINVAL;
	pthread_mutex_lock(&srv.table_lock);
	int err = 0;
	if (!srv.running || srv.pid != getpid())
		err = -ENOENT;
	else if (strlen(srv.path) >= len)
		err = -ERANGE;
	else
		strcpy(buf, srv.path);
	pthread_mutex_unlock(&srv.table_lock);
	return err;
}

void mcg_control_exit_unlink(void)
{
	/* No lock: an exiting process (a destructor, or _exit from a signal
	 * handler); unlink() is async-signal-safe.  The thread may still run. */
	if (__atomic_load_n(&srv.running, __ATOMIC_ACQUIRE) && srv.pid == getpid() && srv.path[0])
		unlink(srv.path);
}
