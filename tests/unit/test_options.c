/* SPDX-License-Identifier: MIT */
/*
 * test_options.c - the runtime option table (base/options.c): the
 * environment read once at first use (numbers in range taken; garbage, out
 * of range and empty values ignored with a message), mcg_options_use_env(0)
 * before it keeps the environment out and is refused after it (-EBUSY),
 * mcg_option_set() by name within the range, -ENOENT / -EINVAL otherwise
 * with nothing changed; a nonzero value of one of a twin pair (dirty bytes
 * and ratio) zeroes the other.  Each case that needs a fresh table runs in a
 * rerun of this binary with its environment (the table is read once per
 * process).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "base/options.h"
#include "memcg/memcg.h"
#include "test.h"

static char logged[4096];

/* Read the table for the first time with stderr captured into logged[]. */
static void first_read(void)
{
	int p[2];
	if (pipe(p))
		return;
	int saved = dup(2);
	dup2(p[1], 2);
	close(p[1]);
	(void)mcg_option(MCG_OPT_REAP_MS);
	dup2(saved, 2);
	close(saved);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	ssize_t n = read(p[0], logged, sizeof(logged) - 1);
	logged[n > 0 ? n : 0] = '\0';
	close(p[0]);
}

/* MCG_REAP_MS=250 MCG_CPU_OBJECTS=12x MCG_NUMA_NODES=65 MCG_SLAB_DEBUG=
 * MCG_CONTROL_TIMEOUT_MS=99 MCG_RECURSIVEPROT=99999999999999999999 MCG_DIRTY_BYTES=1048576 */
static void test_env_read(void)
{
	first_read();
	CHECK_EQ(mcg_option(MCG_OPT_REAP_MS), 250);
	CHECK_EQ(mcg_option(MCG_OPT_CPU_OBJECTS), 0); /* garbage: the default */
	CHECK_EQ(mcg_option(MCG_OPT_NUMA_NODES), 0);  /* out of range */
	CHECK_EQ(mcg_option(MCG_OPT_SLAB_DEBUG), 0);  /* empty: unset */
	CHECK(strstr(logged, "memcg: ignoring MCG_CPU_OBJECTS=12x: expected count in 0..4096\n"));
	CHECK(strstr(logged, "memcg: ignoring MCG_NUMA_NODES=65: expected count in 0..64\n"));
	CHECK(!strstr(logged, "MCG_SLAB_DEBUG"));
	CHECK(!strstr(logged, "MCG_REAP_MS"));
	/* below the minimum; beyond a long (strtol's ERANGE) */
	CHECK_EQ(mcg_option(MCG_OPT_CONTROL_TIMEOUT_MS), 10000);
	CHECK(strstr(logged, "memcg: ignoring MCG_CONTROL_TIMEOUT_MS=99: expected ms in "
	                     "100..3600000\n"));
	CHECK_EQ(mcg_option(MCG_OPT_RECURSIVEPROT), 0);
	CHECK(strstr(logged,
	             "memcg: ignoring MCG_RECURSIVEPROT=99999999999999999999: expected bool in "
	             "0..1\n"));
	/* the bytes given: its ratio twin is zeroed */
	CHECK_EQ(mcg_option(MCG_OPT_DIRTY_BYTES), 1048576);
	CHECK_EQ(mcg_option(MCG_OPT_DIRTY_RATIO), 0);
	CHECK_EQ(mcg_option(MCG_OPT_DIRTY_BACKGROUND_RATIO), 10); /* another pair: kept */
	CHECK_EQ(mcg_options_use_env(0), -EBUSY);                 /* read already */
}

/* MCG_REAP_MS=250, but the environment turned off first */
static void test_env_off(void)
{
	CHECK_EQ(mcg_options_use_env(0), 0);
	CHECK_EQ(mcg_options_use_env(0), 0); /* until the first read, as often as wanted */
	first_read();
	CHECK_EQ(mcg_option(MCG_OPT_REAP_MS), 1000);
	CHECK(!strstr(logged, "ignoring"));
}

static void test_set(void)
{
	const struct mcg_option *t = mcg_option_table();
	CHECK(!strcmp(t[MCG_OPT_REAP_MS].name, "reap_ms"));
	CHECK_EQ(mcg_option_set("reap_ms", 3600000), 0);
	CHECK_EQ(mcg_option(MCG_OPT_REAP_MS), 3600000);
	CHECK_EQ(mcg_option_set("reap_ms", 3600001), -EINVAL);
	CHECK_EQ(mcg_option_set("reap_ms", -1), -EINVAL);
	CHECK_EQ(mcg_option(MCG_OPT_REAP_MS), 3600000);
	CHECK_EQ(mcg_option_set("reap_m", 5), -ENOENT);   /* a prefix is not a name */
	CHECK_EQ(mcg_option_set("reap_mss", 5), -ENOENT); /* nor a longer one */
	CHECK_EQ(mcg_option_set("", 5), -ENOENT);
	CHECK_EQ(mcg_option_set(NULL, 5), -EINVAL);
	CHECK_EQ(mcg_option_set("control_timeout_ms", 99), -EINVAL); /* min 100 */
	CHECK_EQ(mcg_option_set("control_timeout_ms", 100), 0);
	CHECK_EQ(mcg_option(MCG_OPT_CONTROL_TIMEOUT_MS), 100);
	/* twins: a nonzero bytes value zeroes its ratio, a zero one does not */
	CHECK_EQ(mcg_option_set("dirty_ratio", 30), 0);
	CHECK_EQ(mcg_option_set("dirty_bytes", 0), 0);
	CHECK_EQ(mcg_option(MCG_OPT_DIRTY_RATIO), 30);
	CHECK_EQ(mcg_option_set("dirty_bytes", 4096), 0);
	CHECK_EQ(mcg_option(MCG_OPT_DIRTY_RATIO), 0);
	CHECK_EQ(mcg_option(MCG_OPT_DIRTY_BYTES), 4096);
	CHECK_EQ(mcg_option_set("dirty_ratio", 20), 0);
	CHECK_EQ(mcg_option(MCG_OPT_DIRTY_BYTES), 0);
	for (int i = 0; i < MCG_OPT_COUNT; i++) /* every row complete */
		CHECK(t[i].name && t[i].env && t[i].unit && t[i].comment && t[i].min <= t[i].def &&
		      t[i].def <= t[i].max);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (getenv("MCG_TEST_OPT_ENV")) {
		RUN(test_env_read);
		return test_done();
	}
	if (getenv("MCG_TEST_OPT_OFF")) {
		RUN(test_env_off);
		return test_done();
	}
	RUN(test_set);
	int rc = test_done();
	setenv("MCG_CPU_OBJECTS", "12x", 1);
	setenv("MCG_NUMA_NODES", "65", 1);
	setenv("MCG_SLAB_DEBUG", "", 1);
	setenv("MCG_CONTROL_TIMEOUT_MS", "99", 1);
	setenv("MCG_RECURSIVEPROT", "99999999999999999999", 1);
	setenv("MCG_DIRTY_BYTES", "1048576", 1);
	rc = test_merge(rc, test_rerun(argv, "MCG_REAP_MS", "250", "MCG_TEST_OPT_ENV"));
	unsetenv("MCG_CPU_OBJECTS");
	unsetenv("MCG_NUMA_NODES");
	unsetenv("MCG_SLAB_DEBUG");
	unsetenv("MCG_CONTROL_TIMEOUT_MS");
	unsetenv("MCG_RECURSIVEPROT");
	unsetenv("MCG_DIRTY_BYTES");
	rc = test_merge(rc, test_rerun(argv, "MCG_REAP_MS", "250", "MCG_TEST_OPT_OFF"));
	return rc;
}
