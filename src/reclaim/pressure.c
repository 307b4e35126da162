/* SPDX-License-Identifier: MIT */
/*
 * reclaim/pressure.c - global pressure: watermarks over the process's
 * budget, and the background reclaimer thread (kswapd's role) with its
 * balance pass.  See memcg/pressure.h for what it does.  Where the budget
 * comes from is reclaim/budget.c, how PSI is watched reclaim/psi.c, the
 * files both read (below a root that tests override) reclaim/sysfiles.c.
 *
 * Invariants: the thread exists only between mcg_pressure_start() and
 * mcg_pressure_stop(); mcg_pressure_high_pages is LONG_MAX outside that
 * window.  The wake eventfd is created on the first start and never closed,
 * so mcg_pressure_wake() can race with stop harmlessly.
 *
 * Locks (plain mutexes, outermost: nothing of memcg is held when they are
 * taken, and reclaim runs under pass_lock only):
 *   ctl_lock   - start / stop / set_root, and the configuration they set;
 *   pass_lock  - one balance pass at a time (the thread's or a caller's);
 *   info_lock  - the status strings (a leaf: short copies only).
 * Counters are relaxed atomics, read racily by mcg_pressure_status().
 */
#include "base/mm_const.h"
#include "reclaim/pressure.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "base/fault.h"
#include "base/log.h"
#include "group/group.h"
#include "memcg/reclaim.h"
#include "reclaim/budget.h"
#include "reclaim/psi.h"
#include "reclaim/sysfiles.h"

#define PSI_AVG10_PCT 15.0            /* polled mode: the trigger's 150 ms per 1 s */
#define CHUNK_BYTES ((size_t)8 << 20) /* reclaim asked per call */

long mcg_pressure_high_pages = LONG_MAX;

static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pass_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t info_lock = PTHREAD_MUTEX_INITIALIZER;

/* Configuration and state (ctl_lock to change; the thread reads it while running). */
static char root_dir[PATH_MAX]; /* "" means "/" */
static mcg_pressure_config_t cfg;
static int running;  /* atomic */
static int stopping; /* atomic */
static pthread_t thread;
static int wake_fd = -1;          /* eventfd, never closed */
static int wake_pending;          /* atomic: a kick was sent and not yet consumed */
static int psi_fd = -1;           /* trigger or polled file; the thread's */
static char usage_path[PATH_MAX]; /* the cgroup's usage file, "" when not used */
static char psi_path[PATH_MAX];
static int pass_psi_failures;   /* pass_lock: consecutive passes without progress */
static unsigned skip_intervals; /* thread: watermark passes to skip (backoff) */

/*
 * The status: `info` (sources, budget, watermarks) under info_lock, built
 * in `st` by start before the thread exists; the counters are atomics.
 */
static mcg_pressure_status_t info;
static mcg_pressure_status_t st; /* ctl_lock; the thread reads high/low/psi_kind */
static struct {
	size_t usage, root_usage, reclaimed;
	long long external_usage;
	unsigned long wakeups, wakeups_watermark, wakeups_psi, reclaim_calls, failed_passes;
} ctr;

#define STAT_INC(field) __atomic_fetch_add(&ctr.field, 1, __ATOMIC_RELAXED)
#define STAT_ADD(field, v) __atomic_fetch_add(&ctr.field, (v), __ATOMIC_RELAXED)
#define STAT_SET(field, v) __atomic_store_n(&ctr.field, (v), __ATOMIC_RELAXED)
#define STAT_GET(field) __atomic_load_n(&ctr.field, __ATOMIC_RELAXED)

/* ------------------------------------------------------------ balance */

/* The default: global background reclaim (memory.stat pgscan_kswapd / pgsteal_kswapd). */
static size_t reclaim_root(size_t nr_bytes, void *arg)
{
	unsigned long pages = (unsigned long)((nr_bytes + MCG_PAGE_SIZE - 1) / MCG_PAGE_SIZE);
	return (size_t)mcg_reclaim(NULL, pages, MCG_RECLAIM_BACKGROUND) * MCG_PAGE_SIZE;
}

/* One pass; @psi: woken by pressure.  pass_lock held.  Return bytes reclaimed. */
static size_t balance_locked(bool psi)
{
	mcg_group_t *root = mcg_group_root();
	size_t root_usage = (size_t)mcg_page_counter_read(&root->memory) * MCG_PAGE_SIZE;
	long long ext = -1;
	if (usage_path[0]) {
		size_t v;
		if (mcg_sysfile_read_limit(usage_path, &v) == 0 && v != SIZE_MAX)
			ext = (long long)v;
	}
	size_t usage = ext > (long long)root_usage ? (size_t)ext : root_usage;
	STAT_SET(root_usage, root_usage);
	STAT_SET(external_usage, ext);
	STAT_SET(usage, usage);
	STAT_INC(wakeups);

	size_t want = 0;
	if (usage > st.high) {
		want = usage - st.low;
		STAT_INC(wakeups_watermark);
	}
	if (psi) {
		STAT_INC(wakeups_psi);
		want = MCG_MAX(want, root_usage / 16);
	}
	want = MCG_MIN(want, root_usage); /* only what memcg holds can be given back */
	if (!want)
		return 0;

	size_t got = 0;
	while (got < want && !__atomic_load_n(&stopping, __ATOMIC_RELAXED)) {
		size_t ask = MCG_MIN(want - got, CHUNK_BYTES);
		STAT_INC(reclaim_calls);
		size_t r = cfg.reclaim(ask, cfg.reclaim_arg);
		if (!r)
			break;
		got += r;
	}
	STAT_ADD(reclaimed, got);
	if (!got) {
		STAT_INC(failed_passes);
		pass_psi_failures++;
	} else {
		pass_psi_failures = 0;
	}
	return got;
}

/* ------------------------------------------------------------ the thread */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Read away any wakeup the eventfd holds (it is nonblocking). */
static void wake_fd_clear(void)
{
	uint64_t v;
	if (read(wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		mcg_log("pressure: clearing the wake eventfd: %s", strerror(errno));
}

static void *reclaimer(void *unused)
{
	double last_polled_psi = 0;
	while (!__atomic_load_n(&stopping, __ATOMIC_ACQUIRE)) {
		struct pollfd pfd[2] = {
		        {.fd = wake_fd, .events = POLLIN},
		        {.fd = st.psi_kind == MCG_PSI_TRIGGER ? psi_fd : -1, .events = POLLPRI}};
		int n = poll(pfd, 2, (int)cfg.interval_ms);
		bool woken = false, psi = false;
		if (n > 0 && (pfd[0].revents & POLLIN)) {
			uint64_t v;
			if (read(wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				mcg_log("pressure: reading the wake eventfd: %s", strerror(errno));
			__atomic_store_n(&wake_pending, 0, __ATOMIC_RELAXED);
			woken = true;
		}
		if (n > 0 && (pfd[1].revents & POLLERR)) {
			/* The cgroup went away: fall back to reading avg10. */
			close(psi_fd);
			psi_fd = -1;
			st.psi_kind = MCG_PSI_POLLED;
			pthread_mutex_lock(&info_lock);
			info.psi_kind = MCG_PSI_POLLED;
			mcg_sysfile_fmt(info.psi_source, sizeof(info.psi_source),
			                "polled avg10 of %s (the trigger failed: POLLERR)",
			                psi_path);
			pthread_mutex_unlock(&info_lock);
		} else if (n > 0 && (pfd[1].revents & POLLPRI)) {
			psi = true;
		}
		if (__atomic_load_n(&stopping, __ATOMIC_ACQUIRE))
			break;
		if (st.psi_kind == MCG_PSI_POLLED) {
			double t = now_s();
			if (t - last_polled_psi >= 1.0 &&
			    mcg_psi_avg10(psi_path) >= PSI_AVG10_PCT) {
				last_polled_psi = t;
				psi = true;
			}
		}
		/* Back off after passes that freed nothing, unless pushed. */
		if (!psi && !woken && skip_intervals) {
			skip_intervals--;
			continue;
		}
		pthread_mutex_lock(&pass_lock);
		balance_locked(psi);
		unsigned fails = (unsigned)pass_psi_failures;
		pthread_mutex_unlock(&pass_lock);
		skip_intervals = fails ? (1u << MCG_MIN(fails, 6u)) - 1 : 0;
	}
	return NULL;
}

/* ------------------------------------------------------------ the API */

mcg_public int mcg_pressure_set_root(const char *root)
{
	if (root && !*root)
		return -EINVAL;
	if (root && strlen(root) >= sizeof(root_dir) - 64)
		return -ENAMETOOLONG;
	pthread_mutex_lock(&ctl_lock);
	int err = 0;
	if (__atomic_load_n(&running, __ATOMIC_RELAXED))
		err = -EBUSY;
	else if (!root || !strcmp(root, "/"))
		root_dir[0] = 0;
	else {
		mcg_sysfile_fmt(root_dir, sizeof(root_dir), "%s", root);
		size_t n = strlen(root_dir);
		while (n > 1 && root_dir[n - 1] == '/')
			root_dir[--n] = 0;
	}
	pthread_mutex_unlock(&ctl_lock);
	return err;
}

mcg_public int mcg_pressure_start(const mcg_pressure_config_t *c)
{
	mcg_pressure_config_t n = c ? *c : (mcg_pressure_config_t){0};
	if (n.flags & ~MCG_PRESSURE_FLAGS_ALL || n.high_pct > 100 ||
	    (n.low_pct && n.high_pct && n.low_pct >= n.high_pct) || n.low_pct >= 100 ||
	    n.interval_ms > 3600000)
		return -EINVAL;
	if (!n.high_pct)
		n.high_pct = 90;
	if (!n.low_pct)
		n.low_pct = n.high_pct > 80 ? 80 : n.high_pct - 10 + (n.high_pct <= 10) * 9;
	if (n.low_pct >= n.high_pct)
		return -EINVAL;
	mcg_reclaim_init(); /* the reclaim machinery, and the root's stat lines */
	if (!n.interval_ms)
		n.interval_ms = 100;
	if (!n.reclaim)
		n.reclaim = reclaim_root;

	pthread_mutex_lock(&ctl_lock);
	int err = 0;
	if (__atomic_load_n(&running, __ATOMIC_RELAXED)) {
		err = -EALREADY;
		goto out;
	}
	if (wake_fd < 0) {
		if (mcg_fault_should_fail()) {
			err = -ENOMEM;
			goto out;
		}
		wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (wake_fd < 0) {
			err = -errno;
			goto out;
		}
	}
	mcg_group_init();
	cfg = n;
	/* A fresh status: counters restart with each start. */
	pthread_mutex_lock(&pass_lock);
	memset(&st, 0, sizeof(st));
	memset(&ctr, 0, sizeof(ctr));
	ctr.external_usage = -1;
	mcg_budget_detect(root_dir, &cfg, &st, usage_path, psi_path);
	st.high = st.budget / 100 * cfg.high_pct + st.budget % 100 * cfg.high_pct / 100;
	st.low = st.budget / 100 * cfg.low_pct + st.budget % 100 * cfg.low_pct / 100;
	mcg_sysfile_fmt(st.usage_source, sizeof(st.usage_source), "root group%s%s",
	                usage_path[0] ? " and " : "", usage_path);
	psi_fd = mcg_psi_setup(root_dir, cfg.flags, &st, psi_path);
	pass_psi_failures = 0;
	skip_intervals = 0;
	st.running = 1;
	pthread_mutex_lock(&info_lock);
	info = st;
	pthread_mutex_unlock(&info_lock);
	pthread_mutex_unlock(&pass_lock);

	__atomic_store_n(&stopping, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&wake_pending, 0, __ATOMIC_RELAXED);
	wake_fd_clear(); /* a wakeup left by the last stop is no request */
	/* The thread (its stack) is this monitor's one allocation: the fault point. */
	err = mcg_fault_should_fail() ? -ENOMEM : -pthread_create(&thread, NULL, reclaimer, NULL);
	if (err) {
		if (psi_fd >= 0)
			close(psi_fd);
		psi_fd = -1;
		pthread_mutex_lock(&info_lock);
		info.running = 0;
		pthread_mutex_unlock(&info_lock);
		goto out;
	}
	__atomic_store_n(&running, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&mcg_pressure_high_pages, (long)(st.high / MCG_PAGE_SIZE),
	                 __ATOMIC_RELAXED);
out:
	pthread_mutex_unlock(&ctl_lock);
	return err;
}

mcg_public void mcg_pressure_stop(void)
{
	pthread_mutex_lock(&ctl_lock);
	if (!__atomic_load_n(&running, __ATOMIC_RELAXED)) {
		pthread_mutex_unlock(&ctl_lock);
		return;
	}
	__atomic_store_n(&mcg_pressure_high_pages, LONG_MAX, __ATOMIC_RELAXED);
	__atomic_store_n(&stopping, 1, __ATOMIC_RELEASE);
	uint64_t one = 1;
	if (write(wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		mcg_log("pressure: waking the reclaimer: %s", strerror(errno));
	pthread_join(thread, NULL);
	wake_fd_clear(); /* unread if the thread was not polling when it stopped */
	/* Wait for a caller's pass too, then let go of the files. */
	pthread_mutex_lock(&pass_lock);
	__atomic_store_n(&running, 0, __ATOMIC_RELEASE);
	pthread_mutex_lock(&info_lock);
	info.running = 0;
	pthread_mutex_unlock(&info_lock);
	if (psi_fd >= 0)
		close(psi_fd);
	psi_fd = -1;
	pthread_mutex_unlock(&pass_lock);
	pthread_mutex_unlock(&ctl_lock);
}

void mcg_pressure_wake_slow(void)
{
	if (__atomic_exchange_n(&wake_pending, 1, __ATOMIC_RELAXED))
		return; /* one wakeup per pass is enough */
	mcg_pressure_wake();
}

mcg_public void mcg_pressure_wake(void)
{
	if (!__atomic_load_n(&running, __ATOMIC_ACQUIRE))
		return;
	uint64_t one = 1;
	int fd = __atomic_load_n(&wake_fd, __ATOMIC_RELAXED);
	if (fd >= 0 && write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		mcg_log("pressure: waking the reclaimer: %s", strerror(errno));
}

mcg_public long mcg_pressure_balance(void)
{
	pthread_mutex_lock(&pass_lock);
	long r = -ENOTCONN;
	if (__atomic_load_n(&running, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n(&stopping, __ATOMIC_ACQUIRE))
		r = (long)balance_locked(false);
	pthread_mutex_unlock(&pass_lock);
	return r;
}

mcg_public int mcg_pressure_status(mcg_pressure_status_t *out)
{
	if (!out)
		return -EINVAL;
	pthread_mutex_lock(&info_lock);
	*out = info;
	pthread_mutex_unlock(&info_lock);
	out->usage = STAT_GET(usage);
	out->root_usage = STAT_GET(root_usage);
	out->external_usage = STAT_GET(external_usage);
	out->wakeups = STAT_GET(wakeups);
	out->wakeups_watermark = STAT_GET(wakeups_watermark);
	out->wakeups_psi = STAT_GET(wakeups_psi);
	out->reclaim_calls = STAT_GET(reclaim_calls);
	out->failed_passes = STAT_GET(failed_passes);
	out->reclaimed = STAT_GET(reclaimed);
	return 0;
}

static const char *const budget_kinds[] = {"configured", "cgroup_v2", "cgroup_v1", "physical"};
static const char *const psi_kinds[] = {"none", "trigger", "polled"};

mcg_public ssize_t mcg_pressure_read(char *buf, size_t len)
{
	if (!buf && len)
		return -EINVAL;
	mcg_pressure_status_t s;
	mcg_pressure_status(&s);
	int n = mcg_sysfile_fmt(buf, len,
	                        "running %d\n"
	                        "budget %zu\n"
	                        "watermark_high %zu\n"
	                        "watermark_low %zu\n"
	                        "usage %zu\n"
	                        "root_usage %zu\n"
	                        "external_usage %lld\n"
	                        "budget_kind %s\n"
	                        "budget_source %s\n"
	                        "usage_source %s\n"
	                        "psi_kind %s\n"
	                        "psi_source %s\n"
	                        "notes %s\n"
	                        "wakeups %lu\n"
	                        "wakeups_watermark %lu\n"
	                        "wakeups_psi %lu\n"
	                        "reclaim_calls %lu\n"
	                        "failed_passes %lu\n"
	                        "reclaimed %zu\n",
	                        s.running, s.budget, s.high, s.low, s.usage, s.root_usage,
	                        s.external_usage, budget_kinds[s.budget_kind], s.budget_source,
	                        s.usage_source, psi_kinds[s.psi_kind], s.psi_source,
	                        s.notes[0] ? s.notes : "-", s.wakeups, s.wakeups_watermark,
	                        s.wakeups_psi, s.reclaim_calls, s.failed_passes, s.reclaimed);
	return n < 0 ? -EINVAL : n;
}

void mcg_pressure_root_stat(char *buf, size_t len)
{
	static const char *const budget_names[] = {
	        [MCG_BUDGET_CONFIGURED] = "configured",
	        [MCG_BUDGET_CGROUP_V2] = "cgroup_v2",
	        [MCG_BUDGET_CGROUP_V1] = "cgroup_v1",
	        [MCG_BUDGET_PHYSICAL] = "physical",
	};
	static const char *const psi_names[] = {
	        [MCG_PSI_NONE] = "none",
	        [MCG_PSI_TRIGGER] = "trigger",
	        [MCG_PSI_POLLED] = "polled",
	};
	mcg_pressure_status_t ps;
	if (!len || mcg_pressure_status(&ps))
		return;
	const char *budget = "none", *psi = "none";
	if (ps.running && (unsigned)ps.budget_kind < MCG_ARRAY_SIZE(budget_names))
		budget = budget_names[ps.budget_kind];
	if (ps.running && (unsigned)ps.psi_kind < MCG_ARRAY_SIZE(psi_names))
		psi = psi_names[ps.psi_kind];
	snprintf(buf, len,
	         "pressure_running %d\npressure_budget %zu\npressure_budget_source %s\n"
	         "pressure_psi %s\npressure_wakeups %lu\npressure_psi_events %lu\n"
	         "pressure_reclaimed %zu\n",
	         ps.running, ps.running ? ps.budget : 0, budget, psi, ps.wakeups, ps.wakeups_psi,
	         ps.reclaimed);
}
