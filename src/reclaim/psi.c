/* SPDX-License-Identifier: MIT */
/*
 * reclaim/psi.c - watching pressure stall information (see psi.h): a
 * trigger on the cgroup's memory.pressure or /proc/pressure/memory where
 * the kernel lets us arm one, else the file's avg10 polled.
 */
#include "reclaim/psi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "base/compiler.h"
#include "reclaim/sysfiles.h"

#define PROC_SUPER_MAGIC_ 0x9fa0
#define CGROUP2_SUPER_MAGIC_ 0x63677270

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

double mcg_psi_avg10(const char *path)
{
	char buf[512];
	double v;
	if (mcg_sysfile_read(path, buf, sizeof(buf)) <= 0)
		return -1;
	const char *p = strstr(buf, "some avg10=");
	if (!p || sscanf(p, "some avg10=%lf", &v) != 1)
		return -1;
	return v;
}

int mcg_psi_setup(const char *root_dir, unsigned flags, mcg_pressure_status_t *st, char *psi_path)
{
	st->psi_kind = MCG_PSI_NONE;
	if (flags & MCG_PRESSURE_NO_PSI) {
		mcg_sysfile_fmt(st->psi_source, sizeof(st->psi_source),
		                "off (MCG_PRESSURE_NO_PSI)");
		psi_path[0] = 0;
		return -1;
	}
	if (!psi_path[0]) {
		mcg_sysfile_fmt(st->psi_source, sizeof(st->psi_source),
		                "none (no memory.pressure or %s/proc/pressure/memory)", root_dir);
		return -1;
	}
	const char *trig = NULL;
	int fd = psi_arm(psi_path, &trig);
	if (fd >= 0) {
		st->psi_kind = MCG_PSI_TRIGGER;
		mcg_sysfile_fmt(st->psi_source, sizeof(st->psi_source), "trigger \"%s\" on %s",
		                trig, psi_path);
		return fd;
	}
	if (mcg_psi_avg10(psi_path) >= 0) {
		st->psi_kind = MCG_PSI_POLLED;
		mcg_sysfile_fmt(st->psi_source, sizeof(st->psi_source),
		                "polled avg10 of %s (no trigger: %s)", psi_path, strerror(-fd));
		return -1;
	}
	mcg_sysfile_fmt(st->psi_source, sizeof(st->psi_source),
	                "none (%s: no trigger: %s, unparsable)", psi_path, strerror(-fd));
	psi_path[0] = 0;
	return -1;
}
