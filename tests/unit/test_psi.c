/* SPDX-License-Identifier: MIT */
/*
 * test_psi.c - how global pressure watches PSI (reclaim/psi.c): off by
 * flag; no file; a fake file (not procfs or cgroup2: no trigger) that
 * parses is polled, one that does not is dropped; a file that cannot be
 * opened; the real /proc/pressure/memory gets a trigger where the kernel
 * has PSI (else the test says so and skips that part).
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reclaim/psi.h"
#include "test.h"

static char dir[64];

static void path_of(char *p, const char *name) { snprintf(p, 4096, "%s/%s", dir, name); }

static void put(const char *name, const char *text)
{
	char p[4096];
	path_of(p, name);
	FILE *f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_avg10(void)
{
	char p[4096];
	put("good", "some avg10=12.50 avg60=0.00 avg300=0.00 total=5\nfull avg10=0.00\n");
	path_of(p, "good");
	CHECK(mcg_psi_avg10(p) == 12.5);
	put("bad", "full avg10=3.00\n");
	path_of(p, "bad");
	CHECK(mcg_psi_avg10(p) == -1);
	put("cut", "some avg10=x\n");
	path_of(p, "cut");
	CHECK(mcg_psi_avg10(p) == -1);
	put("empty", "");
	path_of(p, "empty");
	CHECK(mcg_psi_avg10(p) == -1);
	path_of(p, "missing");
	CHECK(mcg_psi_avg10(p) == -1);
}

static void test_setup(void)
{
	mcg_pressure_status_t st;
	char p[4096];

	path_of(p, "good");
	CHECK_EQ(mcg_psi_setup(dir, MCG_PRESSURE_NO_PSI, &st, p), -1);
	CHECK_EQ(st.psi_kind, MCG_PSI_NONE);
	CHECK(!strcmp(st.psi_source, "off (MCG_PRESSURE_NO_PSI)") && p[0] == 0);

	p[0] = 0;
	CHECK_EQ(mcg_psi_setup(dir, 0, &st, p), -1);
	CHECK(st.psi_kind == MCG_PSI_NONE &&
	      !strncmp(st.psi_source, "none (no memory.pressure", 24));

	path_of(p, "good"); /* a plain file: no trigger, but it parses */
	CHECK_EQ(mcg_psi_setup(dir, 0, &st, p), -1);
	CHECK_EQ(st.psi_kind, MCG_PSI_POLLED);
	CHECK(strstr(st.psi_source, "polled avg10 of") && strstr(st.psi_source, strerror(ENOTSUP)));

	path_of(p, "bad");
	CHECK_EQ(mcg_psi_setup(dir, 0, &st, p), -1);
	CHECK(st.psi_kind == MCG_PSI_NONE && strstr(st.psi_source, "unparsable") && p[0] == 0);

	path_of(p, "missing"); /* cannot be opened */
	CHECK_EQ(mcg_psi_setup(dir, 0, &st, p), -1);
	CHECK(st.psi_kind == MCG_PSI_NONE && strstr(st.psi_source, strerror(ENOENT)));
}

static void test_real_trigger(void)
{
	char p[4096] = "/proc/pressure/memory";
	if (access(p, R_OK | W_OK)) {
		fprintf(stderr,
		        "  (no writable /proc/pressure/memory: the trigger is not tried)\n");
		return;
	}
	mcg_pressure_status_t st;
	int fd = mcg_psi_setup("", 0, &st, p);
	if (fd >= 0) {
		CHECK_EQ(st.psi_kind, MCG_PSI_TRIGGER);
		CHECK(strstr(st.psi_source, "trigger \"some 150000"));
		close(fd);
	} else { /* a kernel that refuses triggers: polled */
		CHECK_EQ(st.psi_kind, MCG_PSI_POLLED);
	}
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/memcg-test-psi-%d", (int)getpid());
	mkdir(dir, 0700);
	RUN(test_avg10);
	RUN(test_setup);
	RUN(test_real_trigger);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
	return test_done();
}
