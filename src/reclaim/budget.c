/* SPDX-License-Identifier: MIT */
/*
 * reclaim/budget.c - the process's memory budget and where it comes from
 * (see budget.h): configured, the smallest memory limit of this process's
 * cgroup and its ancestors (v2 memory.max / memory.high, v1
 * memory.limit_in_bytes), else physical memory.  Read once per start.
 */
#include "reclaim/budget.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "base/compiler.h"
#include "reclaim/sysfiles.h"

/* Append a note on a skipped source to @st->notes. */
static void note(mcg_pressure_status_t *st, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void note(mcg_pressure_status_t *st, const char *fmt, ...)
{
	size_t n = strlen(st->notes);
	if (n + 3 < sizeof(st->notes)) {
		if (n)
			st->notes[n++] = ';', st->notes[n++] = ' ', st->notes[n] = 0;
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(st->notes + n, sizeof(st->notes) - n, fmt, ap);
		va_end(ap);
	}
}

/* Physical memory: MemTotal of proc/meminfo, else sysinfo(2) for the real root. */
static size_t physical_memory(const char *root_dir, char *how, size_t how_len)
{
	char path[PATH_MAX], buf[4096];
	/* GCOVR_EXCL_BR_START: mcg_pressure_set_root() left room for these
	 * paths, the first test cannot fail */
	if (!mcg_sysfile_path(path, sizeof(path), root_dir, "proc/meminfo") &&
	    mcg_sysfile_read(path, buf, sizeof(buf)) > 0) {
		/* GCOVR_EXCL_BR_STOP */
		const char *p = strstr(buf, "MemTotal:");
		unsigned long long kib;
		if (p && sscanf(p, "MemTotal: %llu kB", &kib) == 1 && kib) {
			mcg_sysfile_fmt(how, how_len, "%s MemTotal", path);
			return (size_t)kib * 1024;
		}
	}
	/* The real root without a MemTotal: /proc not mounted, which no test
	 * can arrange. */
	struct sysinfo si;
	if (!root_dir[0] && sysinfo(&si) == 0 && si.totalram) { /* GCOVR_EXCL_BR_LINE */
		mcg_sysfile_fmt(how, how_len, "sysinfo(2)");    /* GCOVR_EXCL_LINE */
		return (size_t)si.totalram * si.mem_unit;       /* GCOVR_EXCL_LINE */
	}
	mcg_sysfile_fmt(how, how_len, "unknown (assumed 1 GiB)");
	return (size_t)1 << 30;
}

struct cgroup_paths {
	char v2[PATH_MAX]; /* the path of "0::" ("" when none) */
	char v1[PATH_MAX]; /* the memory controller's path ("" when none) */
};

/* Parse proc/self/cgroup.  Return 0 or -errno. */
static int read_cgroup_paths(const char *root_dir, struct cgroup_paths *cp)
{
	char path[PATH_MAX], buf[8192];
	cp->v2[0] = cp->v1[0] = 0;
	/* GCOVR_EXCL_START: the root leaves room for the path (set_root) */
	if (mcg_sysfile_path(path, sizeof(path), root_dir, "proc/self/cgroup"))
		return -ENAMETOOLONG;
	/* GCOVR_EXCL_STOP */
	ssize_t n = mcg_sysfile_read(path, buf, sizeof(buf));
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
			mcg_sysfile_fmt(cp->v2, sizeof(cp->v2), "%s", cg);
			continue;
		}
		/* "memory" in a comma-separated list of controllers */
		for (const char *p = ctrls; *p;) {
			size_t len = strcspn(p, ",");
			if (len == 6 && !memcmp(p, "memory", 6))
				mcg_sysfile_fmt(cp->v1, sizeof(cp->v1), "%s", cg);
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
	if (!s || s == p) /* GCOVR_EXCL_BR_LINE: cgroup paths start with '/' (read_cgroup_paths) */
		p[0] = '/', p[1] = 0;
	else
		*s = 0;
}

/*
 * Walk @cg and its ancestors in the hierarchy mounted at @mnt (relative to
 * the root), taking the smallest of @files.  Set *@dir to the cgroup's own
 * directory when found.  Return true when that directory exists.
 */
static bool walk_limits(const char *root_dir, const char *mnt, const char *cg,
                        const char *const *files, int nfiles, struct limit *best, char *dir,
                        size_t dir_len)
{
	char p[PATH_MAX], d[PATH_MAX], f[PATH_MAX + 32];
	mcg_sysfile_fmt(p, sizeof(p), "%s", cg);
	int n = mcg_sysfile_fmt(d, sizeof(d), "%s/%s%s", root_dir, mnt, strcmp(p, "/") ? p : "");
	if (n < 0 || (size_t)n >= sizeof(d) || !mcg_sysfile_is_dir(d)) {
		/* A cgroup namespace or a private mount: the mount is our cgroup. */
		mcg_sysfile_fmt(p, sizeof(p), "/");
		mcg_sysfile_fmt(d, sizeof(d), "%s/%s", root_dir, mnt);
		if (!mcg_sysfile_is_dir(d))
			return false;
	}
	mcg_sysfile_fmt(dir, dir_len, "%s", d);
	for (;;) {
		mcg_sysfile_fmt(d, sizeof(d), "%s/%s%s", root_dir, mnt, strcmp(p, "/") ? p : "");
		for (int i = 0; i < nfiles; i++) {
			size_t v;
			mcg_sysfile_fmt(f, sizeof(f), "%s/%s", d, files[i]);
			if (mcg_sysfile_read_limit(f, &v) == 0 && v < best->bytes) {
				best->bytes = v;
				mcg_sysfile_fmt(best->file, sizeof(best->file), "%s", f);
			}
		}
		if (!strcmp(p, "/"))
			break;
		cg_parent(p);
	}
	return true;
}

void mcg_budget_detect(const char *root_dir, const mcg_pressure_config_t *cfg,
                       mcg_pressure_status_t *st, char *usage_path, char *psi_path)
{
	char how[PATH_MAX + 32];
	size_t phys = physical_memory(root_dir, how, sizeof(how));
	usage_path[0] = psi_path[0] = 0;

	if (cfg->budget) {
		st->budget = cfg->budget;
		st->budget_kind = MCG_BUDGET_CONFIGURED;
		mcg_sysfile_fmt(st->budget_source, sizeof(st->budget_source), "configured");
	} else {
		st->budget = phys;
		st->budget_kind = MCG_BUDGET_PHYSICAL;
		mcg_sysfile_fmt(st->budget_source, sizeof(st->budget_source),
		                "physical memory (%s)", how);
	}

	struct cgroup_paths cp;
	char dir[PATH_MAX];
	int err;
	if (cfg->flags & MCG_PRESSURE_NO_CGROUP) {
		note(st, "cgroup: not read (MCG_PRESSURE_NO_CGROUP)");
		goto psi_global;
	}
	if ((err = read_cgroup_paths(root_dir, &cp))) {
		note(st, "cgroup: %s/proc/self/cgroup unreadable (%s)", root_dir, strerror(-err));
		goto psi_global;
	}

	/* v2: the unified mount, or the hybrid layout's /sys/fs/cgroup/unified. */
	if (cp.v2[0]) {
		static const char *const mnts[] = {"sys/fs/cgroup", "sys/fs/cgroup/unified"};
		static const char *const files[] = {"memory.max", "memory.high"};
		bool found = false;
		for (size_t i = 0; i < MCG_ARRAY_SIZE(mnts) && !found; i++) {
			char probe[PATH_MAX];
			mcg_sysfile_fmt(probe, sizeof(probe), "%s/%s/cgroup.controllers", root_dir,
			                mnts[i]);
			if (access(probe, F_OK))
				continue; /* not a v2 mount */
			struct limit best = {.bytes = SIZE_MAX};
			/* GCOVR_EXCL_START: the mount holds cgroup.controllers, it
			 * is a directory, and the walk falls back to it */
			if (!walk_limits(root_dir, mnts[i], cp.v2, files, 2, &best, dir,
			                 sizeof(dir)))
				continue;
			/* GCOVR_EXCL_STOP */
			found = true;
			char f[PATH_MAX + 32];
			mcg_sysfile_fmt(f, sizeof(f), "%s/memory.current", dir);
			if (!access(f, R_OK))
				mcg_sysfile_fmt(usage_path, PATH_MAX, "%s", f);
			mcg_sysfile_fmt(f, sizeof(f), "%s/memory.pressure", dir);
			if (!access(f, R_OK))
				mcg_sysfile_fmt(psi_path, PATH_MAX, "%s", f);
			if (best.bytes == SIZE_MAX)
				note(st, "cgroup v2 %s: no memory limit", dir);
			else if (best.bytes >= phys)
				note(st, "cgroup v2 limit %zu in %s is above physical memory",
				     best.bytes, best.file);
			else if (!cfg->budget) { /* the budget is phys here: above the limit */
				st->budget = best.bytes;
				st->budget_kind = MCG_BUDGET_CGROUP_V2;
				mcg_sysfile_fmt(st->budget_source, sizeof(st->budget_source),
				                "cgroup v2 %s", best.file);
			}
		}
		if (!found)
			note(st, "cgroup v2 %s: no such directory below %s/sys/fs/cgroup", cp.v2,
			     root_dir);
	}
	/* v1: the memory controller's own mount. */
	if (cp.v1[0]) {
		static const char *const files[] = {"memory.limit_in_bytes"};
		struct limit best = {.bytes = SIZE_MAX};
		if (!walk_limits(root_dir, "sys/fs/cgroup/memory", cp.v1, files, 1, &best, dir,
		                 sizeof(dir))) {
			note(st, "cgroup v1 memory %s: no such directory", cp.v1);
		} else {
			char f[PATH_MAX + 32];
			mcg_sysfile_fmt(f, sizeof(f), "%s/memory.usage_in_bytes", dir);
			if (!usage_path[0] && !access(f, R_OK))
				mcg_sysfile_fmt(usage_path, PATH_MAX, "%s", f);
			if (best.bytes == SIZE_MAX || best.bytes >= phys)
				note(st, "cgroup v1 %s: unlimited", dir);
			else if (!cfg->budget && best.bytes < st->budget) {
				st->budget = best.bytes;
				st->budget_kind = MCG_BUDGET_CGROUP_V1;
				mcg_sysfile_fmt(st->budget_source, sizeof(st->budget_source),
				                "cgroup v1 %s", best.file);
			}
		}
	} else if (!cp.v2[0]) {
		note(st, "cgroup: no v2 or v1 memory line in /proc/self/cgroup");
	}
psi_global:
	/* The usage file counts only when the budget is that cgroup's limit. */
	if ((cfg->flags & MCG_PRESSURE_NO_EXTERNAL_USAGE) ||
	    (st->budget_kind != MCG_BUDGET_CGROUP_V2 && st->budget_kind != MCG_BUDGET_CGROUP_V1))
		usage_path[0] = 0;
	if (!psi_path[0]) {
		char p[PATH_MAX];
		/* GCOVR_EXCL_BR_START: the root leaves room for the path (set_root) */
		if (!mcg_sysfile_path(p, sizeof(p), root_dir, "proc/pressure/memory") &&
		    !access(p, R_OK))
			mcg_sysfile_fmt(psi_path, PATH_MAX, "%s", p);
		/* GCOVR_EXCL_BR_STOP */
	}
}
