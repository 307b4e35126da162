/* SPDX-License-Identifier: MIT */
/*
 * preload/threads.c - the shim's threads and when they start: the reaper
 * (memory aging, option reap_ms) and the control socket's server (memcg/
 * control.h: `memcg ps/stat/set/top`, option control), and the Prometheus
 * metrics server when MCG_METRICS_LISTEN is set ("127.0.0.1:PORT"; `memcg
 * run --metrics`).
 *
 * Why not at start: a process with a second thread is no longer
 * single-threaded for glibc, which then takes every lock of the program -
 * stdio's (putc, fgets), pthread mutexes (sqlite's around each malloc) -
 * with an atomic instruction instead of a plain store: 3 to 7 times the
 * cost of an uncontended lock on this machine; sqlite3 spent 13 % of its
 * time in its mutexes under the shim with both threads started at once, 4 %
 * under tcmalloc, 2 % with them waiting.  So with the option lazy_threads (the
 * default) the reaper and the control server start together at the first
 * look at the clock the slab layer's slow paths make (slab/drain.c,
 * mcg_slab_tick_hook_set(): every 64th refill or flush of a thread) once
 * the program has a thread of its own (glibc's __libc_single_threaded is
 * false: it pays for atomic locks already) or has run for one reap period
 * (1 s when aging is off).  A short single-threaded program (a compiler, a
 * sort, a script) never gets them; a long-running one gets them within
 * its first period of allocating.  Until then the slow paths' own inline
 * aging steps return memory, as in any program without a reaper.  The
 * cost: a single-threaded program that stops allocating within its first
 * period keeps what it then holds until it allocates again, and serves no
 * control socket.
 *
 * With lazy_threads 0 (`memcg run` sets MCG_LAZY_THREADS=0 when it serves
 * the control socket: a program run to be steered is reachable at once)
 * both start in the constructor, which runs after every other constructor
 * of the shim (this file links last), so after the heap group's.  The
 * metrics server starts in the constructor either way: asked for by name.
 *
 * A forked child that does not exec starts nothing (the reaper and the
 * servers stay in the parent) unless it calls mcg_reaper_start() or
 * mcg_control_start() itself; one that execs a program starts anew here.
 * A failure to start is one line on stderr and nothing else: the program
 * runs on.  Nothing here allocates from the program's heap.
 */
#include "preload/threads.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/single_threaded.h>
#include <unistd.h>

#include "base/log.h"
#include "base/options.h"
#include "memcg/control.h"
#include "memcg/slab.h"
#include "os/os.h"
#include "slab/slab.h"

static pid_t reaper_pid;       /* the process whose reaper thread runs (atomic) */
static int lazy_armed;         /* 1: the threads wait for the tick hook (atomic) */
static uint64_t lazy_since_ns; /* when the constructor ran */
static uint64_t lazy_wait_ns;  /* how long a single-threaded program waits */

static void start_threads(void)
{
	long reap_ms = mcg_option(MCG_OPT_REAP_MS);
	if (reap_ms > 0 && mcg_reaper_start((unsigned)reap_ms) == 0)
		__atomic_store_n(&reaper_pid, getpid(), __ATOMIC_RELEASE);
	if (mcg_option(MCG_OPT_CONTROL)) {
		int err = mcg_control_start(NULL);
		/* -EACCES said why already; -EALREADY: the program serves it */
		if (err && err != -EACCES && err != -EALREADY)
			mcg_log("control socket: not serving (%s)", strerror(-err));
	}
}

/* The slab layer's tick hook while the threads wait: start them once the
 * program has a thread of its own or has run long enough. */
static void lazy_tick(void)
{
	if (__libc_single_threaded && mcg_os_now_ns() - lazy_since_ns < lazy_wait_ns)
		return;
	if (!__atomic_exchange_n(&lazy_armed, 0, __ATOMIC_ACQ_REL))
		return; /* another thread starts them, or the program exits */
	mcg_slab_tick_hook_set(NULL);
	start_threads();
}

static void lazy_disarm(void)
{
	__atomic_store_n(&lazy_armed, 0, __ATOMIC_RELEASE);
	mcg_slab_tick_hook_set(NULL);
}

__attribute__((constructor)) static void threads_start(void)
{
	const char *listen = getenv("MCG_METRICS_LISTEN");
	if (listen && *listen) {
		int err = mcg_metrics_start(listen);
		if (err && err != -ENOTSUP) /* -ENOTSUP said why already */
			mcg_log("metrics: not serving %s (%s)", listen, strerror(-err));
	}
	long reap_ms = mcg_option(MCG_OPT_REAP_MS);
	if (reap_ms <= 0 && !mcg_option(MCG_OPT_CONTROL))
		return;
	if (!mcg_option(MCG_OPT_LAZY_THREADS)) {
		start_threads();
		return;
	}
	lazy_wait_ns = (uint64_t)(reap_ms > 0 ? reap_ms : 1000) * 1000000u;
	lazy_since_ns = mcg_os_now_ns();
	/* A forked child starts nothing, as with threads started at once. */
	if (pthread_atfork(NULL, NULL, lazy_disarm)) {
		start_threads(); /* GCOVR_EXCL_LINE: fails only out of memory */
		return;          /* GCOVR_EXCL_LINE */
	}
	__atomic_store_n(&lazy_armed, 1, __ATOMIC_RELEASE);
	mcg_slab_tick_hook_set(lazy_tick);
}

void mcg_preload_threads_exit(void)
{
	lazy_disarm();
	if (__atomic_load_n(&reaper_pid, __ATOMIC_ACQUIRE) == getpid())
		mcg_reaper_stop();
}
