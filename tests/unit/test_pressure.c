/* SPDX-License-Identifier: MIT */
/*
 * test_pressure.c - global pressure (reclaim/pressure.c): the budget from
 * fake cgroup v2, v1, hybrid and namespaced trees, physical memory when
 * nothing else is there, PSI (polled from a fake file; a real trigger where
 * the kernel allows one), the balance pass against the watermarks (root
 * usage and a cgroup's usage file), the thread's wakeups (explicit, kick,
 * PSI), backoff-free failure counting, and a stop during a slow reclaim.
 *
 * Fake trees live in a temporary directory given to mcg_pressure_set_root():
 *
 *   <tmp>/proc/self/cgroup, proc/meminfo, proc/pressure/memory
 *   <tmp>/sys/fs/cgroup/{cgroup.controllers, a/memory.high, a/b/memory.max, ...}
 *
 * Usage comes from a test group "t" charged with mcg_charge(); the reclaim
 * function of these tests uncharges it (no shrinkers needed).
 */
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "group/group.h"
#include "memcg/reclaim.h"
#include "reclaim/pressure.h"
#include "test.h"

#define PG ((size_t)MCG_GROUP_PAGE_SIZE)

static char tmp[256];
static mcg_group_t *t;
static long t_pages; /* pages charged to t (reclaim uncharges them) */
static int charging; /* charge_t() between its charge and its count */
static long reclaim_calls;
static size_t reclaim_asked; /* bytes asked in the last call */
static int reclaim_mode;     /* 0: give what is asked; 1: nothing; 2: slow */

/* ------------------------------------------------------------ fakes */

static void put(const char *rel, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(const char *rel, const char *fmt, ...)
{
	char path[512], cmd[600];
	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	char *slash = strrchr(path, '/');
	*slash = 0;
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	if (system(cmd) != 0)
		abort();
	*slash = '/';
	FILE *f = fopen(path, "w");
	if (!f)
		abort();
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void fresh_tree(void)
{
	if (tmp[0])
		nftw(tmp, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	snprintf(tmp, sizeof(tmp), "/tmp/memcg-pressure-XXXXXX");
	if (!mkdtemp(tmp))
		abort();
	put("proc/meminfo", "MemTotal:        8388608 kB\nMemFree:         1000 kB\n");
}

static size_t give_back(size_t nr_bytes, void *arg)
{
	/* A charge wakes the thread from inside mcg_charge(), before
	 * charge_t() counts its pages: a pass that begins meanwhile (memcheck
	 * runs the woken thread at once) waits for the count, bounded. */
	for (int i = 0; __atomic_load_n(&charging, __ATOMIC_ACQUIRE) && i < 5000; i++)
		usleep(1000);
	__atomic_fetch_add(&reclaim_calls, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&reclaim_asked, nr_bytes, __ATOMIC_RELAXED);
	if (reclaim_mode == 1)
		return 0;
	if (reclaim_mode == 2)
		usleep(20000);
	long n = (long)((nr_bytes + PG - 1) / PG);
	long have = __atomic_load_n(&t_pages, __ATOMIC_RELAXED);
	n = n < have ? n : have;
	if (n <= 0)
		return 0;
	mcg_uncharge(t, (unsigned long)n);
	__atomic_fetch_sub(&t_pages, n, __ATOMIC_RELAXED);
	mcg_group_drain_stocks();
	return (size_t)n * PG;
}

static void charge_t(long pages)
{
	__atomic_store_n(&charging, 1, __ATOMIC_RELAXED);
	int r = mcg_charge(t, (unsigned long)pages, 0);
	if (!r)
		__atomic_fetch_add(&t_pages, pages, __ATOMIC_RELAXED);
	__atomic_store_n(&charging, 0, __ATOMIC_RELEASE);
	REQUIRE(r == 0);
	mcg_group_drain_stocks();
}

static void uncharge_all(void)
{
	long n = __atomic_exchange_n(&t_pages, 0, __ATOMIC_RELAXED);
	if (n)
		mcg_uncharge(t, (unsigned long)n);
	mcg_group_drain_stocks();
	reclaim_calls = 0;
	reclaim_mode = 0;
}

static mcg_pressure_status_t status(void)
{
	mcg_pressure_status_t s;
	CHECK_EQ(mcg_pressure_status(&s), 0);
	return s;
}

static const mcg_pressure_config_t quiet = {
        .interval_ms = 3600000, /* the thread sleeps: passes come from the test */
        .reclaim = give_back,
};

/* Up to @ms (stretched by test_slowdown(): memcheck's pace) for @counter. */
static bool wait_for(const long *counter, long at_least, int ms)
{
	for (long i = 0; i < (long)ms * test_slowdown(); i++) {
		if (__atomic_load_n(counter, __ATOMIC_RELAXED) >= at_least)
			return true;
		usleep(1000);
	}
	return false;
}

/* ------------------------------------------------------------ the budget */

/* The period: as given (an hour: no pass of its own in 350 ms), 100 ms
 * when none is (a few passes in 350 ms, not a busy loop). */
static void test_interval(void)
{
	fresh_tree();
	put("proc/self/cgroup", "0::/a\n");
	put("sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
	put("sys/fs/cgroup/a/memory.max", "1000000000\n");
	put("sys/fs/cgroup/a/memory.high", "max\n");
	put("sys/fs/cgroup/a/memory.current", "1000\n");
	REQUIRE(mcg_pressure_set_root(tmp) == 0);
	REQUIRE(mcg_pressure_start(&quiet) == 0);
	usleep(350 * 1000);
	CHECK_EQ(status().wakeups, 0);
	mcg_pressure_stop();
	mcg_pressure_config_t c = quiet;
	c.interval_ms = 0;
	REQUIRE(mcg_pressure_start(&c) == 0);
	usleep(350 * 1000);
	long w = (long)status().wakeups;
	mcg_pressure_stop();
	CHECK(w >= 1);
	CHECK(w <= 10);
}

/* Watermarks given: used as given when low < high, refused otherwise. */
static void test_watermarks_given(void)
{
	fresh_tree();
	put("proc/self/cgroup", "0::/a\n");
	put("sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
	put("sys/fs/cgroup/a/memory.max", "1000000000\n");
	put("sys/fs/cgroup/a/memory.high", "max\n");
	put("sys/fs/cgroup/a/memory.current", "1000\n");
	REQUIRE(mcg_pressure_set_root(tmp) == 0);
	mcg_pressure_config_t c = quiet;
	c.low_pct = 50;
	c.high_pct = 70;
	REQUIRE(mcg_pressure_start(&c) == 0);
	mcg_pressure_status_t s = status();
	CHECK_EQ(s.budget, 1000000000);
	CHECK_EQ(s.high, 700000000);
	CHECK_EQ(s.low, 500000000);
	mcg_pressure_stop();
	c.high_pct = 0; /* 90 */
	c.low_pct = 85;
	REQUIRE(mcg_pressure_start(&c) == 0);
	s = status();
	CHECK_EQ(s.high, 900000000);
	CHECK_EQ(s.low, 850000000);
	mcg_pressure_stop();
	c.low_pct = 70;
	c.high_pct = 70;
	CHECK_EQ(mcg_pressure_start(&c), -EINVAL);
	c.low_pct = 95; /* above the default high */
	c.high_pct = 0;
	CHECK_EQ(mcg_pressure_start(&c), -EINVAL);
	CHECK_EQ(status().running, 0);
}

/* v2: the smallest of memory.max / memory.high up the path; usage and PSI files of the leaf. */
static void test_v2_budget(void)
{
	fresh_tree();
	put("proc/self/cgroup", "0::/a/b\n");
	put("sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
	put("sys/fs/cgroup/a/memory.max", "max\n");
	put("sys/fs/cgroup/a/memory.high", "536870912\n");
	put("sys/fs/cgroup/a/b/memory.max", "1073741824\n");
	put("sys/fs/cgroup/a/b/memory.high", "max\n");
	put("sys/fs/cgroup/a/b/memory.current", "1000\n");
	put("sys/fs/cgroup/a/b/memory.pressure",
	    "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
	    "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	REQUIRE(mcg_pressure_set_root(tmp) == 0);
	REQUIRE(mcg_pressure_start(&quiet) == 0);
	mcg_pressure_status_t s = status();
	CHECK_EQ(s.running, 1);
	CHECK_EQ(s.budget, 536870912);
	CHECK_EQ(s.budget_kind, MCG_BUDGET_CGROUP_V2);
	CHECK(strstr(s.budget_source, "/sys/fs/cgroup/a/memory.high") != NULL);
	CHECK_EQ(s.high, 536870912ull * 90 / 100);
	CHECK_EQ(s.low, 536870912ull * 80 / 100);
	CHECK(strstr(s.usage_source, "a/b/memory.current") != NULL);
	CHECK_EQ(s.psi_kind, MCG_PSI_POLLED); /* a fake file takes no trigger */
	CHECK(strstr(s.psi_source, "a/b/memory.pressure") != NULL);
	/* One pass reads the cgroup's usage file. */
	CHECK_EQ(mcg_pressure_balance(), 0);
	s = status();
	CHECK_EQ(s.external_usage, 1000);
	CHECK_EQ(s.wakeups, 1);
	CHECK_EQ(mcg_pressure_set_root("/"), -EBUSY);
	CHECK_EQ(mcg_pressure_start(&quiet), -EALREADY);
	mcg_pressure_stop();
	CHECK_EQ(status().running, 0);
	mcg_pressure_stop(); /* idempotent */
	CHECK_EQ(mcg_pressure_balance(), -ENOTCONN);
}

/* v1: memory.limit_in_bytes of the memory controller's path; "unlimited" root skipped. */
static void test_v1_budget(void)
{
	fresh_tree();
	put("proc/self/cgroup", "12:pids:/x\n4:cpu,memory:/x/y\n0::/\n");
	put("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
	put("sys/fs/cgroup/memory/x/memory.limit_in_bytes", "268435456\n");
	put("sys/fs/cgroup/memory/x/y/memory.limit_in_bytes", "9223372036854771712\n");
	put("sys/fs/cgroup/memory/x/y/memory.usage_in_bytes", "4096\n");
	REQUIRE(mcg_pressure_set_root(tmp) == 0);
	REQUIRE(mcg_pressure_start(&quiet) == 0);
	mcg_pressure_status_t s = status();
	CHECK_EQ(s.budget, 268435456);
	CHECK_EQ(s.budget_kind, MCG_BUDGET_CGROUP_V1);
	CHECK(strstr(s.budget_source, "memory/x/memory.limit_in_bytes") != NULL);
	CHECK(strstr(s.usage_source, "x/y/memory.usage_in_bytes") != NULL);
	CHECK_EQ(s.psi_kind, MCG_PSI_NONE);          /* no pressure file anywhere */
	CHECK(strstr(s.notes, "cgroup v2") != NULL); /* "0::/" had no v2 mount */
	mcg_pressure_stop();
}

/* Hybrid (v2 at sys/fs/cgroup/unified without limits, v1 memory limited); global PSI file. */
static void test_hybrid_budget(void)
{
	fresh_tree();
	put("proc/self/cgroup", "4:memory:/svc\n0::/svc\n");
	put("sys/fs/cgroup/unified/cgroup.controllers", "\n");
	put("sys/fs/cgroup/unified/svc/cgroup.procs", "1\n");
	put("sys/fs/cgroup/memory/svc/memory.limit_in_bytes", "134217728\n");
	put("proc/pressure/memory", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	REQUIRE(mcg_pressure_set_root(tmp) == 0);
	REQUIRE(mcg_pressure_start(&quiet) == 0);
	mcg_pressure_status_t s = status();
	CHECK_EQ(s.budget, 134217728);
	CHECK_EQ(s.budget_kind, MCG_BUDGET_CGROUP_V1);
	CHECK(strstr(s.notes, "no memory limit") != NULL);
	CHECK_EQ(s.psi_kind, MCG_PSI_POLLED);
	CHECK(strstr(s.psi_source, "proc/pressure/memory") != NULL);
	mcg_pressure_stop();
}

/* A cgroup namespace: the path is not below the mount, the mount is our cgroup. */
static void test_namespaced_budget(void)
{
	fresh_tree();
	put("proc/self/cgroup", "0::/../../elsewhere/pod\n");
	put("sys/fs/cgroup/cgroup.controllers", "memory\n");
	put("sys/fs/cgroup/memory.max", "67108864\n");
	REQUIRE(mcg_pressure_set_root(tmp) == 0);
	REQUIRE(mcg_pressure_start(&quiet) == 0);
	mcg_pressure_status_t s = status();
	CHECK_EQ(s.budget, 67108864);
	CHECK_EQ(s.budget_kind, MCG_BUDGET_CGROUP_V2);
	mcg_pressure_stop();
}

/* Nothing readable but meminfo: physical memory, and notes say why. */
static void test_physical_fallback(void)
{
	fresh_tree();
	REQUIRE(mcg_pressure_set_root(tmp) == 0);
	REQUIRE(mcg_pressure_start(&quiet) == 0);
	mcg_pressure_status_t s = status();
	CHECK_EQ(s.budget, (size_t)8388608 * 1024);
	CHECK_EQ(s.budget_kind, MCG_BUDGET_PHYSICAL);
	CHECK(strstr(s.budget_source, "MemTotal") != NULL);
	CHECK(strstr(s.notes, "unreadable") != NULL);
	CHECK_EQ(s.psi_kind, MCG_PSI_NONE);
	CHECK(strstr(s.usage_source, "root group") != NULL);
	CHECK_EQ(mcg_pressure_balance(), 0);
	CHECK_EQ(status().external_usage, -1);
	/* The root's memory.stat says which sources are in use. */
	char st[4096];
	REQUIRE(mcg_group_read(mcg_group_root(), "memory.stat", st, sizeof(st)) > 0);
	CHECK(strstr(st, "pressure_running 1\n") != NULL);
	CHECK(strstr(st, "pressure_budget 8589934592\n") != NULL);
	CHECK(strstr(st, "pressure_budget_source physical\n") != NULL);
	CHECK(strstr(st, "pressure_psi none\n") != NULL);
	mcg_pressure_stop();
	REQUIRE(mcg_group_read(mcg_group_root(), "memory.stat", st, sizeof(st)) > 0);
	CHECK(strstr(st, "pressure_running 0\n") != NULL);

	/* A cgroup limit above physical memory is no limit; garbage is skipped. */
	put("proc/self/cgroup", "0::/big\n");
	put("sys/fs/cgroup/cgroup.controllers", "memory\n");
	put("sys/fs/cgroup/big/memory.max", "17179869184000\n");
	put("sys/fs/cgroup/big/memory.high", "lots\n");
	REQUIRE(mcg_pressure_start(&quiet) == 0);
	s = status();
	CHECK_EQ(s.budget_kind, MCG_BUDGET_PHYSICAL);
	CHECK(strstr(s.notes, "above physical memory") != NULL);
	mcg_pressure_stop();

	/* Turned off by flags: no cgroup, no PSI, a configured budget. */
	put("proc/pressure/memory", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	mcg_pressure_config_t c = quiet;
	c.flags = MCG_PRESSURE_NO_CGROUP | MCG_PRESSURE_NO_PSI;
	c.budget = 1 << 20;
	REQUIRE(mcg_pressure_start(&c) == 0);
	s = status();
	CHECK_EQ(s.budget, 1 << 20);
	CHECK_EQ(s.budget_kind, MCG_BUDGET_CONFIGURED);
	CHECK_EQ(s.psi_kind, MCG_PSI_NONE);
	CHECK(strstr(s.psi_source, "off") != NULL);
	mcg_pressure_stop();
	REQUIRE(mcg_pressure_set_root(NULL) == 0);
}

/* /proc/self/cgroup with odd lines, and cgroups whose directories are missing. */
static void test_odd_cgroup_files(void)
{
	fresh_tree();
	/* lines without two colons or a path, a named hierarchy, v1 memory whose
	 * mount is missing, v2 whose mount is missing */
	put("proc/self/cgroup", "garbage\n7:name\n9:blkio:rel\n1:name=systemd:/s\n"
	                        "5:cpu,memory:/gone\n0::/gone\n");
	REQUIRE(mcg_pressure_set_root(tmp) == 0);
	REQUIRE(mcg_pressure_start(&quiet) == 0);
	mcg_pressure_status_t s = status();
	CHECK_EQ(s.budget_kind, MCG_BUDGET_PHYSICAL);
	CHECK(strstr(s.notes, "cgroup v1 memory /gone: no such directory") != NULL);
	mcg_pressure_stop();

	/* a configured budget wins over a smaller cgroup limit */
	put("proc/self/cgroup", "0::/small\n");
	put("sys/fs/cgroup/cgroup.controllers", "memory\n");
	put("sys/fs/cgroup/small/memory.max", "67108864\n");
	mcg_pressure_config_t cfg = quiet;
	cfg.budget = 1 << 30;
	REQUIRE(mcg_pressure_start(&cfg) == 0);
	s = status();
	CHECK_EQ(s.budget, 1 << 30);
	CHECK_EQ(s.budget_kind, MCG_BUDGET_CONFIGURED);
	mcg_pressure_stop();

	/* neither a v2 nor a v1 memory line */
	put("proc/self/cgroup", "3:cpu:/x\n");
	REQUIRE(mcg_pressure_start(&quiet) == 0);
	s = status();
	CHECK_EQ(s.budget_kind, MCG_BUDGET_PHYSICAL);
	CHECK(strstr(s.notes, "no v2 or v1 memory line") != NULL);
	mcg_pressure_stop();

	/* a root given with trailing slashes is the same root */
	char slashed[300];
	snprintf(slashed, sizeof(slashed), "%s///", tmp);
	REQUIRE(mcg_pressure_set_root(slashed) == 0);
	REQUIRE(mcg_pressure_start(&quiet) == 0);
	CHECK(strstr(status().budget_source, "//") == NULL);
	mcg_pressure_stop();
	/* a root too long for the paths below it */
	char longer[4200];
	memset(longer, 'a', sizeof(longer) - 1);
	longer[0] = '/';
	longer[sizeof(longer) - 1] = '\0';
	CHECK_EQ(mcg_pressure_set_root(longer), -ENAMETOOLONG);
	REQUIRE(mcg_pressure_set_root(NULL) == 0);
}

/* proc/meminfo without a MemTotal, or with 0: 1 GiB assumed (not this
 * machine's sysinfo: the root is not the real one); a cgroup file whose
 * last line has no newline is read all the same. */
static void test_odd_meminfo(void)
{
	fresh_tree();
	put("proc/meminfo", "MemFree:         1000 kB\n");
	REQUIRE(mcg_pressure_set_root(tmp) == 0);
	REQUIRE(mcg_pressure_start(&quiet) == 0);
	mcg_pressure_status_t s = status();
	CHECK_EQ(s.budget, (size_t)1 << 30);
	CHECK_EQ(s.budget_kind, MCG_BUDGET_PHYSICAL);
	CHECK(strstr(s.budget_source, "assumed 1 GiB") != NULL);
	mcg_pressure_stop();
	put("proc/meminfo", "MemTotal:        0 kB\n");
	REQUIRE(mcg_pressure_start(&quiet) == 0);
	CHECK_EQ(status().budget, (size_t)1 << 30);
	mcg_pressure_stop();
	put("proc/meminfo", "MemTotal:        8388608 kB\n");
	put("proc/self/cgroup", "0::/nl");
	put("sys/fs/cgroup/cgroup.controllers", "memory\n");
	put("sys/fs/cgroup/nl/memory.max", "67108864\n");
	REQUIRE(mcg_pressure_start(&quiet) == 0);
	s = status();
	CHECK_EQ(s.budget, (size_t)64 << 20);
	CHECK_EQ(s.budget_kind, MCG_BUDGET_CGROUP_V2);
	mcg_pressure_stop();
	REQUIRE(mcg_pressure_set_root(NULL) == 0);
}

static void test_bad_config(void)
{
	mcg_pressure_config_t c = {.high_pct = 101};
	CHECK_EQ(mcg_pressure_start(&c), -EINVAL);
	c = (mcg_pressure_config_t){.high_pct = 50, .low_pct = 50};
	CHECK_EQ(mcg_pressure_start(&c), -EINVAL);
	c = (mcg_pressure_config_t){.flags = 0x100};
	CHECK_EQ(mcg_pressure_start(&c), -EINVAL);
	CHECK_EQ(mcg_pressure_status(NULL), -EINVAL);
	CHECK_EQ(mcg_pressure_set_root(""), -EINVAL);
	c = (mcg_pressure_config_t){.low_pct = 100};
	CHECK_EQ(mcg_pressure_start(&c), -EINVAL);
	c = (mcg_pressure_config_t){.interval_ms = 3600001};
	CHECK_EQ(mcg_pressure_start(&c), -EINVAL);
	c = (mcg_pressure_config_t){.low_pct = 95}; /* above the default high, 90 */
	CHECK_EQ(mcg_pressure_start(&c), -EINVAL);
	CHECK_EQ(status().running, 0);

	/* the low watermark by default: 80, or high - 10, or high - 1 at 10 % and below */
	fresh_tree();
	REQUIRE(mcg_pressure_set_root(tmp) == 0);
	static const unsigned high[] = {95, 50, 10, 2}, low[] = {80, 40, 9, 1};
	for (int i = 0; i < 4; i++) {
		c = quiet;
		c.high_pct = high[i];
		c.budget = 100 << 20;
		REQUIRE(mcg_pressure_start(&c) == 0);
		mcg_pressure_status_t s = status();
		CHECK_EQ(s.high, (size_t)(100 << 20) / 100 * high[i]);
		CHECK_EQ(s.low, (size_t)(100 << 20) / 100 * low[i]);
		mcg_pressure_stop();
	}
	REQUIRE(mcg_pressure_set_root(NULL) == 0);
}

/* ------------------------------------------------------------ balance */

/*
 * Root usage only: budget 4 MiB (1024 pages), high 90 % (921.6 pages),
 * low 80 % (819.2 pages).  800 pages: nothing; 1000 pages: down to low.
 * The charge that crosses the high watermark also wakes the reclaimer, so
 * the explicit pass may find the work done: either one does it, once.
 */
static void test_balance_root_usage(void)
{
	fresh_tree();
	REQUIRE(mcg_pressure_set_root(tmp) == 0);
	mcg_pressure_config_t c = quiet;
	c.budget = 1024 * PG;
	REQUIRE(mcg_pressure_start(&c) == 0);
	charge_t(800);
	CHECK_EQ(mcg_pressure_balance(), 0);
	CHECK_EQ(reclaim_calls, 0);
	charge_t(200);
	long got = mcg_pressure_balance();
	mcg_pressure_status_t s = status();
	size_t root = (size_t)mcg_page_counter_read(&mcg_group_root()->memory) * PG;
	CHECK(s.reclaimed > 0);
	CHECK(got == 0 || (size_t)got == s.reclaimed);
	CHECK(root <= s.low);
	CHECK(root + PG > s.low);
	CHECK_EQ(s.wakeups_watermark, 1);
	CHECK_EQ(s.failed_passes, 0);

	/* Nothing to give: a failed pass is counted, nothing breaks. */
	reclaim_mode = 1;
	charge_t(200);
	CHECK_EQ(mcg_pressure_balance(), 0);
	CHECK(status().failed_passes >= 1);
	mcg_pressure_stop();
	uncharge_all();
}

/* The cgroup's usage counts when the budget is its limit; reclaim is capped by what memcg holds. */
static void test_balance_external_usage(void)
{
	fresh_tree();
	put("proc/self/cgroup", "0::/a\n");
	put("sys/fs/cgroup/cgroup.controllers", "memory\n");
	put("sys/fs/cgroup/a/memory.max", "8388608\n"); /* 2048 pages */
	put("sys/fs/cgroup/a/memory.current", "1000000\n");
	REQUIRE(mcg_pressure_set_root(tmp) == 0);
	REQUIRE(mcg_pressure_start(&quiet) == 0);
	charge_t(256); /* 1 MiB of the process's memory is memcg's */
	CHECK_EQ(mcg_pressure_balance(), 0);
	put("sys/fs/cgroup/a/memory.current", "%d\n", 8000000); /* above high (7549747) */
	long got = mcg_pressure_balance();
	mcg_pressure_status_t s = status();
	CHECK_EQ(s.external_usage, 8000000);
	CHECK_EQ(s.usage, 8000000);
	size_t want = 8000000 - s.low; /* 1289114 bytes: more than memcg holds */
	CHECK(want > 256 * PG);
	CHECK_EQ(got, (long)(256 * PG));
	CHECK_EQ(__atomic_load_n(&t_pages, __ATOMIC_RELAXED), 0);
	/* Without the external usage flag, only the root's usage counts. */
	mcg_pressure_stop();
	mcg_pressure_config_t c = quiet;
	c.flags = MCG_PRESSURE_NO_EXTERNAL_USAGE;
	REQUIRE(mcg_pressure_start(&c) == 0);
	CHECK_EQ(mcg_pressure_balance(), 0);
	CHECK_EQ(status().external_usage, -1);
	mcg_pressure_stop();
	uncharge_all();
}

/* ------------------------------------------------------------ the thread */

/* The thread wakes on mcg_pressure_wake() and on the charge path's kick. */
static void test_thread_wakeups(void)
{
	fresh_tree();
	REQUIRE(mcg_pressure_set_root(tmp) == 0);
	mcg_pressure_config_t c = quiet;
	c.budget = 1024 * PG;
	REQUIRE(mcg_pressure_start(&c) == 0);
	CHECK_EQ(mcg_pressure_high_pages, 921);
	charge_t(1000); /* over the high watermark: the charge itself wakes the thread */
	CHECK(wait_for(&reclaim_calls, 1, 5000));
	for (long i = 0;
	     i < 5000l * test_slowdown() && __atomic_load_n(&t_pages, __ATOMIC_RELAXED) > 820; i++)
		usleep(1000);
	CHECK(__atomic_load_n(&t_pages, __ATOMIC_RELAXED) <= 820);

	long calls = __atomic_load_n(&reclaim_calls, __ATOMIC_RELAXED);
	charge_t(150);
	mcg_pressure_kick(mcg_page_counter_read(&mcg_group_root()->memory));
	CHECK(wait_for(&reclaim_calls, calls + 1, 5000));
	mcg_pressure_stop();
	CHECK_EQ(mcg_pressure_high_pages, LONG_MAX);
	uncharge_all();
}

/* Polled PSI: avg10 over 15 % wakes the thread and reclaims 1/16 of the root's usage. */
static void test_psi_polled(void)
{
	fresh_tree();
	put("proc/pressure/memory", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	REQUIRE(mcg_pressure_set_root(tmp) == 0);
	mcg_pressure_config_t c = {.interval_ms = 10, .reclaim = give_back};
	c.budget = 1024 * 1024 * PG; /* far above usage: only PSI can ask */
	REQUIRE(mcg_pressure_start(&c) == 0);
	charge_t(1600);
	usleep(50000);
	CHECK_EQ(__atomic_load_n(&reclaim_calls, __ATOMIC_RELAXED), 0);
	put("proc/pressure/memory", "some avg10=42.50 avg60=3.00 avg300=1.00 total=123456\n");
	CHECK(wait_for(&reclaim_calls, 1, 5000));
	mcg_pressure_status_t s = status();
	CHECK(s.wakeups_psi >= 1);
	CHECK_EQ(s.wakeups_watermark, 0);
	CHECK(__atomic_load_n(&reclaim_asked, __ATOMIC_RELAXED) >=
	      1600 * PG / 16 - PG * 64); /* root usage, stocks aside */
	put("proc/pressure/memory", "some avg10=0.00 avg60=3.00 avg300=1.00 total=123456\n");
	mcg_pressure_stop();
	uncharge_all();
}

/* Stop during a slow reclaim waits for it; no call happens after stop. */
static void test_stop_during_reclaim(void)
{
	fresh_tree();
	REQUIRE(mcg_pressure_set_root(tmp) == 0);
	mcg_pressure_config_t c = {.interval_ms = 1, .reclaim = give_back};
	c.budget = 256 * PG;
	reclaim_mode = 2;
	charge_t(5000); /* 20 MiB over: several 8 MiB chunks, 20 ms each */
	REQUIRE(mcg_pressure_start(&c) == 0);
	CHECK(wait_for(&reclaim_calls, 1, 5000));
	mcg_pressure_stop();
	long calls = __atomic_load_n(&reclaim_calls, __ATOMIC_RELAXED);
	usleep(50000);
	CHECK_EQ(__atomic_load_n(&reclaim_calls, __ATOMIC_RELAXED), calls);
	uncharge_all();
}

/*
 * A stop that found the reclaimer mid-pass (or not yet polling) leaves its
 * wakeup unread; the next start must not take it for a request (it once
 * ran a pass at a random moment of the next test: flaky under load).
 */
static void test_restart_has_no_stale_wakeup(void)
{
	fresh_tree();
	REQUIRE(mcg_pressure_set_root(tmp) == 0);
	mcg_pressure_config_t c = quiet;
	c.budget = 256 * PG;
	reclaim_mode = 2;
	charge_t(5000); /* over the high watermark: a pass would reclaim */
	REQUIRE(mcg_pressure_start(&c) == 0);
	mcg_pressure_wake();
	CHECK(wait_for(&reclaim_calls, 1, 5000)); /* the pass is in give_back */
	mcg_pressure_stop();                      /* its wakeup is not read */
	reclaim_mode = 0;
	REQUIRE(mcg_pressure_start(&c) == 0);
	usleep(100000);
	CHECK_EQ(status().wakeups, 0); /* nobody asked */
	mcg_pressure_wake();
	CHECK(wait_for(&reclaim_calls, 2, 5000)); /* a real request still works */
	mcg_pressure_stop();
	uncharge_all();
}

/* ------------------------------------------------------------ with real shrinkers */

/* Cached objects: one page charged per object, on a memcg-aware list_lru. */
struct obj {
	mcg_lru_link_t link;
	mcg_group_t *g;
};
static mcg_list_lru_t *obj_lru;

static enum mcg_lru_status obj_isolate(mcg_lru_link_t *item, mcg_list_lru_one_t *list, void *arg)
{
	mcg_list_lru_isolate_move(list, item, arg);
	return MCG_LRU_REMOVED;
}

static void obj_dispose(mcg_lru_link_t *dispose)
{
	for (mcg_lru_link_t *l = dispose->next, *next; l != dispose; l = next) {
		next = l->next;
		struct obj *o = (struct obj *)l;
		mcg_uncharge(o->g, 1);
		free(o);
	}
}

static unsigned long obj_count(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	return mcg_list_lru_shrink_count(obj_lru, sc);
}

static unsigned long obj_scan(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	mcg_lru_link_t dispose;
	mcg_lru_link_init(&dispose);
	unsigned long n = mcg_list_lru_shrink_walk(obj_lru, sc, obj_isolate, &dispose);
	obj_dispose(&dispose);
	return n;
}

/*
 * The default reclaim function: the thread, woken over the high watermark,
 * runs the shrinkers through mcg_reclaim(NULL, BACKGROUND) down to the low
 * watermark, counted as pgsteal_kswapd in memory.stat.
 */
static void test_default_reclaim_shrinkers(void)
{
	mcg_shrinker_t *s;
	mcg_shrinker_ops_t ops = {.name = "pressure-test",
	                          .count_objects = obj_count,
	                          .scan_objects = obj_scan,
	                          .flags = MCG_SHRINKER_MEMCG_AWARE};
	REQUIRE(mcg_shrinker_create(&ops, &s) == 0);
	REQUIRE(mcg_list_lru_create(s, &obj_lru) == 0);
	REQUIRE(mcg_shrinker_register(s) == 0);
	fresh_tree();
	REQUIRE(mcg_pressure_set_root(tmp) == 0);
	mcg_pressure_config_t c = {.interval_ms = 3600000, .budget = 2048 * PG};
	for (int i = 0; i < 2000; i++) {
		struct obj *o = calloc(1, sizeof(*o));
		REQUIRE(o && mcg_charge(t, 1, 0) == 0);
		o->g = t;
		mcg_lru_link_init(&o->link);
		mcg_list_lru_add(obj_lru, &o->link, 0, t);
	}
	mcg_group_drain_stocks();
	REQUIRE(mcg_pressure_start(&c) == 0);
	mcg_pressure_status_t st0 = status();
	mcg_pressure_wake();
	for (int i = 0; i < 5000 && status().reclaimed == 0; i++)
		usleep(1000);
	usleep(20000);
	mcg_pressure_stop();
	mcg_pressure_status_t st1 = status();
	mcg_group_drain_stocks();
	size_t root = (size_t)mcg_page_counter_read(&mcg_group_root()->memory) * PG;
	CHECK(st1.reclaimed >= 2000 * PG - st0.low - 64 * PG);
	CHECK(root <= st0.low + 64 * PG);
	CHECK(mcg_list_lru_count(obj_lru) < 2000);
	char stat[4096];
	CHECK(mcg_group_read(t, "memory.stat", stat, sizeof(stat)) > 0);
	CHECK(strstr(stat, "pgsteal_kswapd 0\n") == NULL);
	mcg_shrinker_unregister(s);
	mcg_lru_link_t dispose;
	mcg_lru_link_init(&dispose);
	mcg_list_lru_walk(obj_lru, obj_isolate, &dispose, ~0UL);
	obj_dispose(&dispose);
	mcg_list_lru_destroy(obj_lru);
	mcg_shrinker_destroy(s);
	mcg_group_drain_stocks();
	CHECK_EQ(mcg_page_counter_read(&mcg_group_root()->memory), 0);
	REQUIRE(mcg_pressure_set_root(NULL) == 0);
}

/* The real system: whatever it has, the status is consistent and readable. */
static void test_real_system(void)
{
	REQUIRE(mcg_pressure_set_root(NULL) == 0);
	mcg_pressure_config_t c = quiet;
	REQUIRE(mcg_pressure_start(&c) == 0);
	mcg_pressure_status_t s = status();
	CHECK(s.budget > 0);
	CHECK(s.low < s.high && s.high < s.budget);
	if (s.psi_kind == MCG_PSI_TRIGGER)
		CHECK(strstr(s.psi_source, "trigger \"some 150000") != NULL);
	char text[4096];
	ssize_t n = mcg_pressure_read(text, sizeof(text));
	CHECK(n > 0 && (size_t)n < sizeof(text));
	CHECK(strstr(text, "budget_source ") != NULL);
	CHECK(strstr(text, "psi_kind ") != NULL);
	fprintf(stderr, "%s", text);
	CHECK_EQ(mcg_pressure_read(NULL, 0), n);
	mcg_pressure_stop();
}

/* Stopped: a wakeup does nothing; the text forms refuse a NULL buffer with
 * room, a zero-length root stat writes nothing, and the stat says so. */
static void test_stopped_calls(void)
{
	mcg_pressure_stop();
	mcg_pressure_status_t before = status();
	CHECK_EQ(before.running, 0);
	mcg_pressure_wake();
	mcg_pressure_status_t after = status();
	CHECK_EQ(after.wakeups, before.wakeups);
	CHECK_EQ(mcg_pressure_read(NULL, 16), -EINVAL);
	char buf[512] = "keep";
	mcg_pressure_root_stat(buf, 0);
	CHECK(!strcmp(buf, "keep"));
	mcg_pressure_root_stat(buf, sizeof(buf));
	CHECK(!strncmp(buf, "pressure_running 0\n", 19));
	CHECK(strstr(buf, "pressure_budget_source none\npressure_psi none\n") != NULL);
}

int main(void)
{
	if (mcg_group_create(NULL, "t", &t))
		return 1;
	RUN(test_v2_budget);
	RUN(test_watermarks_given);
	RUN(test_interval);
	RUN(test_v1_budget);
	RUN(test_hybrid_budget);
	RUN(test_namespaced_budget);
	RUN(test_physical_fallback);
	RUN(test_odd_cgroup_files);
	RUN(test_odd_meminfo);
	RUN(test_bad_config);
	RUN(test_balance_root_usage);
	RUN(test_balance_external_usage);
	RUN(test_thread_wakeups);
	RUN(test_psi_polled);
	RUN(test_stop_during_reclaim);
	RUN(test_restart_has_no_stale_wakeup);
	RUN(test_default_reclaim_shrinkers);
	RUN(test_real_system);
	RUN(test_stopped_calls);
	mcg_pressure_set_root(NULL);
	if (tmp[0])
		nftw(tmp, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	return test_done();
}
