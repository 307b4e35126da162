/* SPDX-License-Identifier: MIT */
/*
 * test_slabinfo.c - /proc/slabinfo "version: 2.1" output (slab/slabinfo.c):
 * the header, and one well-formed line per cache whose numbers agree with
 * mcg_cache_stats(), written to a pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "memcg/slab.h"
#include "test.h"

static char buf[1 << 16];

static size_t slabinfo_to_pipe(void)
{
	int fds[2];
	if (pipe(fds))
		return 0;
	CHECK_EQ(mcg_slabinfo_write(fds[1]), 0);
	close(fds[1]);
	size_t n = 0;
	ssize_t r;
	while ((r = read(fds[0], buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	close(fds[0]);
	buf[n] = 0;
	return n;
}

static void test_format(void)
{
	mcg_cache_t *c = mcg_cache_create("info-test", 100, 0, 0, NULL);
	REQUIRE(c);
	void *objs[500];
	for (int i = 0; i < 500; i++)
		objs[i] = mcg_cache_alloc(c);
	for (int i = 0; i < 200; i++)
		mcg_cache_free(c, objs[i]);
	REQUIRE(slabinfo_to_pipe() > 0);
	CHECK(strncmp(buf, "slabinfo - version: 2.1\n# name", 30) == 0);
	int lines = 0, found = 0;
	char *save, *line = strtok_r(buf, "\n", &save);
	line = strtok_r(NULL, "\n", &save); /* skip header lines */
	for (line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[64];
		unsigned long act, num, osz, per, pages, lim, batch, shared, aslabs, nslabs, avail;
		int k = sscanf(
		        line,
		        "%63s %lu %lu %lu %lu %lu : tunables %lu %lu %lu : slabdata %lu %lu %lu",
		        name, &act, &num, &osz, &per, &pages, &lim, &batch, &shared, &aslabs,
		        &nslabs, &avail);
		CHECK_EQ(k, 12);
		if (k != 12) {
			fprintf(stderr, "bad line: %s\n", line);
			continue;
		}
		lines++;
		CHECK(act <= num);
		CHECK(aslabs <= nslabs);
		CHECK_EQ(num, nslabs * per);
		CHECK(per * osz <= pages * 4096);
		CHECK(batch <= lim || lim == 0);
		if (strcmp(name, "info-test") == 0) {
			found++;
			mcg_cache_stats_t st;
			mcg_cache_stats(c, &st);
			CHECK_EQ(act, 300);
			CHECK_EQ(num, st.num_objs);
			CHECK_EQ(osz, st.slot_size);
			CHECK_EQ(lim, st.cpu_limit);
		}
	}
	CHECK_EQ(found, 1);
	CHECK(lines >= 1);
	for (int i = 200; i < 500; i++)
		mcg_cache_free(c, objs[i]);
	CHECK_EQ(mcg_cache_destroy(c), 0);
	/* Gone from the output once destroyed. */
	slabinfo_to_pipe();
	CHECK(strstr(buf, "info-test") == NULL);
	CHECK(mcg_slabinfo_write(-1) < 0);
}

/* The reader stops reading: the write fails part way, -errno, and the list's
 * lock is let go (the next call works). */
static void test_write_fails_midway(void)
{
	int p[2];
	REQUIRE(pipe2(p, O_NONBLOCK) == 0);
	REQUIRE(fcntl(p[1], F_SETPIPE_SZ, 4096) >= 0);
	/* the header fits, the cache lines (more than 4 KiB of them) do not */
	mcg_cache_t *many[48];
	for (int i = 0; i < 48; i++)
		many[i] = mcg_cache_create("filler", 8 + 8 * (size_t)i, 0, 0, NULL);
	CHECK_EQ(mcg_slabinfo_write(p[1]), -EAGAIN);
	close(p[0]);
	close(p[1]);
	CHECK_EQ(mcg_slabinfo_write(-1), -EBADF); /* fails at the header */
	for (int i = 0; i < 48; i++)
		CHECK_EQ(mcg_cache_destroy(many[i]), 0);
	slabinfo_to_pipe();
	CHECK(strstr(buf, "filler") == NULL);
}

int main(void)
{
	RUN(test_format);
	RUN(test_write_fails_midway);
	return test_done();
}
