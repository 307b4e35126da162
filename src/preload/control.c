/* SPDX-License-Identifier: MIT */
/*
 * preload/control.c - the shim's servers: every process the shim is loaded
 * into serves its control socket (memcg/control.h: `memcg ps/stat/set/top`)
 * unless the option `control` is 0 (MCG_CONTROL=0), and its Prometheus
 * metrics when MCG_METRICS_LISTEN is set ("127.0.0.1:PORT"; `memcg run
 * --metrics`).  Started by a constructor; the socket file is removed at
 * exit (iface/server.c's destructor, and the shim's _exit(),
 * preload/exit_report.c).  A forked child that does not exec serves
 * nothing unless it calls mcg_control_start() itself; one that execs a
 * program starts anew here.
 *
 * A failure to start is one line on stderr and nothing else: the program
 * runs on.  No locks here; nothing allocates from the program's heap (the
 * servers' memory is memcg's own).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/options.h"
#include "memcg/control.h"

__attribute__((constructor)) static void control_start(void)
{
	if (mcg_option(MCG_OPT_CONTROL)) {
		int err = mcg_control_start(NULL);
		if (err && err != -EACCES) /* -EACCES said why already */
			mcg_log("control socket: not serving (%s)", strerror(-err));
	}
	const char *listen = getenv("MCG_METRICS_LISTEN");
	if (listen && *listen) {
		int err = mcg_metrics_start(listen);
		if (err && err != -ENOTSUP) /* -ENOTSUP said why already */
			mcg_log("metrics: not serving %s (%s)", listen, strerror(-err));
	}
}
