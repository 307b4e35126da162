/* SPDX-License-Identifier: MIT */
/*
 * reclaim/pressure.c - global pressure: the process's budget, watermarks,
 * and the background reclaimer thread (kswapd's role).  See
 * memcg/pressure.h for what it does; this file is in four parts: reading
 * the cgroup and proc files (all below a root that tests override), the
 * budget, PSI, and the thread with its balance pass.
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
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "base/fault.h"
#include "base/log.h"
#include "group/group.h"
#include "memcg/reclaim.h"

#define PROC_SUPER_MAGIC_ 0x9fa0
#define CGROUP2_SUPER_MAGIC_ 0x63677270
#define PSI_THRESHOLD_US 150000
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

/* Append a note on a skipped source (start only). */
static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	size_t n = strlen(st.notes);
	if (n + 3 < sizeof(st.notes)) {
		if (n)
			st.notes[n++] = ';', st.notes[n++] = ' ', st.notes[n] = 0;
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(st.notes + n, sizeof(st.notes) - n, fmt, ap);
		va_end(ap);
	}
}

/* snprintf into a fixed buffer, truncating quietly (paths are short in practice). */
static int strfmt(char *dst, size_t len, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static int strfmt(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(dst, len, fmt, ap);
	va_end(ap);
	return n;
}

#define set_info strfmt

/* ------------------------------------------------------------ files */

/* @rel ("proc/self/cgroup") below the root into @buf.  Return 0 or -ENAMETOOLONG. */
static int path_of(char *buf, size_t len, const char *rel)
{
	int n = strfmt(buf, len, "%s/%s", root_dir, rel);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Read a whole small file into @buf (NUL-terminated).  Return bytes or -errno. */
static ssize_t read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t pos = 0;
	while (pos + 1 < len) {
		ssize_t n = read(fd, buf + pos, len - 1 - pos);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = -errno;
			close(fd);
			return err;
		}
		if (n == 0)
			break;
		pos += (size_t)n;
	}
	close(fd);
	buf[pos] = 0;
	return (ssize_t)pos;
}

/*
 * A limit file: "max" or a number of bytes.  *@bytes gets SIZE_MAX for
 * "max".  Return 0, -ENOENT (missing), -errno, or -EINVAL (garbage).
 */
static int read_limit(const char *path, size_t *bytes)
{
	char buf[64];
	ssize_t n = read_text(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	if (!strncmp(buf, "max", 3)) {
		*bytes = SIZE_MAX;
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n'))
		return -EINVAL;
	*bytes = v > SIZE_MAX ? SIZE_MAX : (size_t)v;
	return 0;
}

static bool is_dir(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Physical memory: MemTotal of proc/meminfo, else sysinfo(2) for the real root. */
static size_t physical_memory(char *how, size_t how_len)
{
	char path[PATH_MAX], buf[4096];
	if (!path_of(path, sizeof(path), "proc/meminfo") && read_text(path, buf, sizeof(buf)) > 0) {
		const char *p = strstr(buf, "MemTotal:");
		unsigned long long kib;
		if (p && sscanf(p, "MemTotal: %llu kB", &kib) == 1 && kib) {
			strfmt(how, how_len, "%s MemTotal", path);
			return (size_t)kib * 1024;
		}
	}
	struct sysinfo si;
	if (!root_dir[0] && sysinfo(&si) == 0 && si.totalram) {
		strfmt(how, how_len, "sysinfo(2)");
		return (size_t)si.totalram * si.mem_unit;
	}
	strfmt(how, how_len, "unknown (assumed 1 GiB)");
	return (size_t)1 << 30;
}

/* ------------------------------------------------------------ the budget */

struct cgroup_paths {
	char v2[PATH_MAX]; /* the path of "0::" ("" when none) */
	char v1[PATH_MAX]; /* the memory controller's path ("" when none) */
};

/* Parse proc/self/cgroup.  Return 0 or -errno. */
static int read_cgroup_paths(struct cgroup_paths *cp)
{
	char path[PATH_MAX], buf[8192];
	cp->v2[0] = cp->v1[0] = 0;
	if (path_of(path, sizeof(path), "proc/self/cgroup"))
		return -ENAMETOOLONG;
	ssize_t n = read_text(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	for (char *line = buf, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2 || c2[1] != '/')
			continue;
		*c1 = *c2 = 0;
		const char *ctrls = c1 + 1, *cg = c2 + 1;
		if (!strcmp(line, "0") && !*ctrls) {
			strfmt(cp->v2, sizeof(cp->v2), "%s", cg);
			continue;
		}
		/* "memory" in a comma-separated list of controllers */
		for (const char *p = ctrls; *p;) {
			size_t len = strcspn(p, ",");
			if (len == 6 && !memcmp(p, "memory", 6))
				strfmt(cp->v1, sizeof(cp->v1), "%s", cg);
			p += len + (p[len] == ',');
		}
	}
	return 0;
}

/* The best (smallest) limit found so far. */
struct limit {
	size_t bytes; /* SIZE_MAX: none */
	char file[PATH_MAX];
};

/* Strip the last component of a cgroup path ("/a/b" -> "/a", "/a" -> "/"). */
static void cg_parent(char *p)
{
	char *s = strrchr(p, '/');
	if (!s || s == p)
		p[0] = '/', p[1] = 0;
	else
		*s = 0;
}

/*
 * Walk @cg and its ancestors in the hierarchy mounted at @mnt (relative to
 * the root), taking the smallest of @files.  Set *@dir to the cgroup's own
 * directory when found.  Return true when that directory exists.
 */
static bool walk_limits(const char *mnt, const char *cg, const char *const *files, int nfiles,
                        struct limit *best, char *dir, size_t dir_len)
{
	char p[PATH_MAX], d[PATH_MAX], f[PATH_MAX + 32];
	strfmt(p, sizeof(p), "%s", cg);
	int n = strfmt(d, sizeof(d), "%s/%s%s", root_dir, mnt, strcmp(p, "/") ? p : "");
	if (n < 0 || (size_t)n >= sizeof(d) || !is_dir(d)) {
		/* A cgroup namespace or a private mount: the mount is our cgroup. */
		strfmt(p, sizeof(p), "/");
		strfmt(d, sizeof(d), "%s/%s", root_dir, mnt);
		if (!is_dir(d))
			return false;
	}
	strfmt(dir, dir_len, "%s", d);
	for (;;) {
		strfmt(d, sizeof(d), "%s/%s%s", root_dir, mnt, strcmp(p, "/") ? p : "");
		for (int i = 0; i < nfiles; i++) {
			size_t v;
			strfmt(f, sizeof(f), "%s/%s", d, files[i]);
			if (read_limit(f, &v) == 0 && v < best->bytes) {
				best->bytes = v;
				strfmt(best->file, sizeof(best->file), "%s", f);
			}
		}
		if (!strcmp(p, "/"))
			break;
		cg_parent(p);
	}
	return true;
}

/*
 * Detect the budget into st (kind, source, bytes) and the usage and PSI
 * paths of the cgroup.  ctl_lock held, not running.
 */
static void detect_budget(void)
{
	char how[PATH_MAX + 32];
	size_t phys = physical_memory(how, sizeof(how));
	usage_path[0] = psi_path[0] = 0;

	if (cfg.budget) {
		st.budget = cfg.budget;
		st.budget_kind = MCG_BUDGET_CONFIGURED;
		set_info(st.budget_source, sizeof(st.budget_source), "configured");
	} else {
		st.budget = phys;
		st.budget_kind = MCG_BUDGET_PHYSICAL;
		set_info(st.budget_source, sizeof(st.budget_source), "physical memory (%s)", how);
	}

	struct cgroup_paths cp;
	char dir[PATH_MAX];
	int err;
	if (cfg.flags & MCG_PRESSURE_NO_CGROUP) {
		note("cgroup: not read (MCG_PRESSURE_NO_CGROUP)");
		goto psi_global;
	}
	if ((err = read_cgroup_paths(&cp))) {
		note("cgroup: %s/proc/self/cgroup unreadable (%s)", root_dir, strerror(-err));
		goto psi_global;
	}

	/* v2: the unified mount, or the hybrid layout's /sys/fs/cgroup/unified. */
	if (cp.v2[0]) {
		static const char *const mnts[] = {"sys/fs/cgroup", "sys/fs/cgroup/unified"};
		static const char *const files[] = {"memory.max", "memory.high"};
		bool found = false;
		for (size_t i = 0; i < MCG_ARRAY_SIZE(mnts) && !found; i++) {
			char probe[PATH_MAX];
			strfmt(probe, sizeof(probe), "%s/%s/cgroup.controllers", root_dir, mnts[i]);
			if (access(probe, F_OK))
				continue; /* not a v2 mount */
			struct limit best = {.bytes = SIZE_MAX};
			if (!walk_limits(mnts[i], cp.v2, files, 2, &best, dir, sizeof(dir)))
				continue;
			found = true;
			char f[PATH_MAX + 32];
			strfmt(f, sizeof(f), "%s/memory.current", dir);
			if (!access(f, R_OK))
				strfmt(usage_path, sizeof(usage_path), "%s", f);
			strfmt(f, sizeof(f), "%s/memory.pressure", dir);
			if (!access(f, R_OK))
				strfmt(psi_path, sizeof(psi_path), "%s", f);
			if (best.bytes == SIZE_MAX)
				note("cgroup v2 %s: no memory limit", dir);
			else if (best.bytes >= phys)
				note("cgroup v2 limit %zu in %s is above physical memory",
				     best.bytes, best.file);
			else if (!cfg.budget && best.bytes < st.budget) {
				st.budget = best.bytes;
				st.budget_kind = MCG_BUDGET_CGROUP_V2;
				set_info(st.budget_source, sizeof(st.budget_source), "cgroup v2 %s",
				         best.file);
			}
		}
		if (!found)
			note("cgroup v2 %s: no such directory below %s/sys/fs/cgroup", cp.v2,
			     root_dir);
	}
	/* v1: the memory controller's own mount. */
	if (cp.v1[0]) {
		static const char *const files[] = {"memory.limit_in_bytes"};
		struct limit best = {.bytes = SIZE_MAX};
		if (!walk_limits("sys/fs/cgroup/memory", cp.v1, files, 1, &best, dir,
		                 sizeof(dir))) {
			note("cgroup v1 memory %s: no such directory", cp.v1);
		} else {
			char f[PATH_MAX + 32];
			strfmt(f, sizeof(f), "%s/memory.usage_in_bytes", dir);
			if (!usage_path[0] && !access(f, R_OK))
				strfmt(usage_path, sizeof(usage_path), "%s", f);
			if (best.bytes == SIZE_MAX || best.bytes >= phys)
				note("cgroup v1 %s: unlimited", dir);
			else if (!cfg.budget && best.bytes < st.budget) {
				st.budget = best.bytes;
				st.budget_kind = MCG_BUDGET_CGROUP_V1;
				set_info(st.budget_source, sizeof(st.budget_source), "cgroup v1 %s",
				         best.file);
			}
		}
	} else if (!cp.v2[0]) {
		note("cgroup: no v2 or v1 memory line in /proc/self/cgroup");
	}
psi_global:
	/* The usage file counts only when the budget is that cgroup's limit. */
	if ((cfg.flags & MCG_PRESSURE_NO_EXTERNAL_USAGE) ||
	    (st.budget_kind != MCG_BUDGET_CGROUP_V2 && st.budget_kind != MCG_BUDGET_CGROUP_V1))
		usage_path[0] = 0;
	if (!psi_path[0]) {
		char p[PATH_MAX];
		if (!path_of(p, sizeof(p), "proc/pressure/memory") && !access(p, R_OK))
			strfmt(psi_path, sizeof(psi_path), "%s", p);
	}
}

/* ------------------------------------------------------------ PSI */

/* A trigger needs the real pressure file: procfs or cgroup2, not a fake. */
static bool psi_triggerable(int fd)
{
	struct statfs sf;
	return fstatfs(fd, &sf) == 0 &&
	       (sf.f_type == PROC_SUPER_MAGIC_ || sf.f_type == CGROUP2_SUPER_MAGIC_);
}

/* Arm a trigger on @path: the privileged 1 s window, else the 2 s one.  Return fd or -errno. */
static int psi_arm(const char *path, const char **used)
{
	static const char *const triggers[] = {"some 150000 1000000", "some 150000 2000000"};
	int err = -EINVAL;
	for (size_t i = 0; i < MCG_ARRAY_SIZE(triggers); i++) {
		int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (!psi_triggerable(fd)) {
			close(fd);
			return -ENOTSUP;
		}
		if (write(fd, triggers[i], strlen(triggers[i]) + 1) >= 0) {
			*used = triggers[i];
			return fd;
		}
		err = -errno;
		close(fd);
	}
	return err;
}

/* "some avg10=12.34 ..." of @path; -1 when unreadable. */
static double psi_avg10(const char *path)
{
	char buf[512];
	double v;
	if (read_text(path, buf, sizeof(buf)) <= 0)
		return -1;
	const char *p = strstr(buf, "some avg10=");
	if (!p || sscanf(p, "some avg10=%lf", &v) != 1)
		return -1;
	return v;
}

/* Choose how to watch PSI.  ctl_lock held, not running. */
static void psi_setup(void)
{
	st.psi_kind = MCG_PSI_NONE;
	psi_fd = -1;
	if (cfg.flags & MCG_PRESSURE_NO_PSI) {
		set_info(st.psi_source, sizeof(st.psi_source), "off (MCG_PRESSURE_NO_PSI)");
		psi_path[0] = 0;
		return;
	}
	if (!psi_path[0]) {
		set_info(st.psi_source, sizeof(st.psi_source),
		         "none (no memory.pressure or %s/proc/pressure/memory)", root_dir);
		return;
	}
	const char *trig = NULL;
	int fd = psi_arm(psi_path, &trig);
	if (fd >= 0) {
		psi_fd = fd;
		st.psi_kind = MCG_PSI_TRIGGER;
		set_info(st.psi_source, sizeof(st.psi_source), "trigger \"%s\" on %s", trig,
		         psi_path);
		return;
	}
	if (psi_avg10(psi_path) >= 0) {
		st.psi_kind = MCG_PSI_POLLED;
		set_info(st.psi_source, sizeof(st.psi_source),
		         "polled avg10 of %s (no trigger: %s)", psi_path, strerror(-fd));
		return;
	}
	set_info(st.psi_source, sizeof(st.psi_source), "none (%s: no trigger: %s, unparsable)",
	         psi_path, strerror(-fd));
	psi_path[0] = 0;
}

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
		if (read_limit(usage_path, &v) == 0 && v != SIZE_MAX)
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
			strfmt(info.psi_source, sizeof(info.psi_source),
			       "polled avg10 of %s (the trigger failed: POLLERR)", psi_path);
			pthread_mutex_unlock(&info_lock);
		} else if (n > 0 && (pfd[1].revents & POLLPRI)) {
			psi = true;
		}
		if (__atomic_load_n(&stopping, __ATOMIC_ACQUIRE))
			break;
		if (st.psi_kind == MCG_PSI_POLLED) {
			double t = now_s();
			if (t - last_polled_psi >= 1.0 && psi_avg10(psi_path) >= PSI_AVG10_PCT) {
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
		strfmt(root_dir, sizeof(root_dir), "%s", root);
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
	detect_budget();
	st.high = st.budget / 100 * cfg.high_pct + st.budget % 100 * cfg.high_pct / 100;
	st.low = st.budget / 100 * cfg.low_pct + st.budget % 100 * cfg.low_pct / 100;
	set_info(st.usage_source, sizeof(st.usage_source), "root group%s%s",
	         usage_path[0] ? " and " : "", usage_path);
	psi_setup();
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
	int n = strfmt(buf, len,
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
	               s.running, s.budget, s.high, s.low, s.usage, s.root_usage, s.external_usage,
	               budget_kinds[s.budget_kind], s.budget_source, s.usage_source,
	               psi_kinds[s.psi_kind], s.psi_source, s.notes[0] ? s.notes : "-", s.wakeups,
	               s.wakeups_watermark, s.wakeups_psi, s.reclaim_calls, s.failed_passes,
	               s.reclaimed);
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
