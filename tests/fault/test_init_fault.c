/* SPDX-License-Identifier: MIT */
/*
 * test_init_fault.c - the library's own start-up under allocation failure:
 * the Nth call through the fault point fails (and every later one), swept
 * over N, each in a fresh child process (start-up happens once per
 * process); then only the Nth call fails, swept again, so each allocation
 * start-up needs fails on its own.  What start-up cannot do without - the root group's statistics
 * and objcgs, the objcg id table, the byte and charge stocks - is a loud
 * death ("memcg: FATAL ... no memory for ..."), never a crash or a half
 * set-up library; anything else fails cleanly (NULL / -ENOMEM) and the
 * child says so.  The sweep ends when a child gets through without a failure.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memcg/debug.h"
#include "memcg/group.h"
#include "memcg/kmalloc.h"
#include "memcg/memcg.h"
#include "test.h"

/* In the child: start the library with fault N armed; exit 0 if every
 * call succeeded, 3 if one failed cleanly. */
static void child(unsigned long n, int sticky)
{
	mcg_options_use_env(0);
	mcg_fault_inject(n, sticky);
	mcg_group_t *g = NULL;
	int err = mcg_group_create(NULL, "init", &g);
	void *p = mcg_malloc_account(100, NULL);
	unsigned long failed = mcg_fault_failed();
	mcg_fault_inject(0, 0);
	if (!err)
		mcg_group_put(g);
	mcg_free(p);
	if (failed == 0)
		exit(0);
	exit(err == 0 && p ? 4 : 3); /* 4: a failure nobody reported */
}

static void test_sweep(void)
{
	int deaths = 0, clean = 0;
	char seen[8][96];
	int nseen = 0;
	for (unsigned long n = 1, sticky = 1; n < 400; n++) {
		int pfd[2];
		REQUIRE(pipe(pfd) == 0);
		fflush(stderr);
		pid_t pid = fork();
		if (pid == 0) {
			dup2(pfd[1], 2);
			close(pfd[0]);
			test_child_abort_exits();
			child(n, (int)sticky);
		}
		close(pfd[1]);
		char err[1024];
		size_t got = 0;
		ssize_t r;
		while (got + 1 < sizeof(err) &&
		       (r = read(pfd[0], err + got, sizeof(err) - 1 - got)) > 0)
			got += (size_t)r;
		err[got] = '\0';
		close(pfd[0]);
		int st;
		waitpid(pid, &st, 0);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			fprintf(stderr, "%s: start-up needs %lu calls through the fault point\n",
			        sticky ? "sticky" : "one failure", n - 1);
			if (!sticky)
				break;
			sticky = 0; /* again, failing one call at a time */
			n = 0;
			continue;
		}
		if (WIFEXITED(st) && WEXITSTATUS(st) == 3) {
			clean++;
			continue;
		}
		/* the only other way out: a loud death for what start-up needs */
		const char *m = strstr(err, "no memory for ");
		if (!(test_aborted(st) && strstr(err, "memcg: FATAL") && m)) {
			CHECK(!fprintf(stderr, "fault %lu: status %#x, stderr: %s\n", n, st, err));
			continue;
		}
		deaths++;
		const char *nl = strchr(m, '\n');
		int len = nl ? (int)(nl - m) : (int)strlen(m);
		bool known = false;
		for (int i = 0; i < nseen; i++)
			known |= !strncmp(seen[i], m, (size_t)len) && seen[i][len] == '\0';
		if (!known && nseen < 8)
			snprintf(seen[nseen++], sizeof(seen[0]), "%.*s", len, m);
	}
	for (int i = 0; i < nseen; i++)
		fprintf(stderr, "  died: %s\n", seen[i]);
	fprintf(stderr, "%d loud deaths, %d clean failures\n", deaths, clean);
	/* the root's statistics, the id table, both stocks (the root's objcgs
	 * skip the fault point: group/objcg.c) */
	static const char *const want[] = {
	        "no memory for the root group's statistics", "no memory for the objcg ids",
	        "no memory for the byte stocks", "no memory for the charge stocks"};
	CHECK_EQ(nseen, 4);
	for (int w = 0; w < 4; w++) {
		bool found = false;
		for (int i = 0; i < nseen; i++)
			found |= !strcmp(seen[i], want[w]);
		CHECK(found);
	}
	CHECK(deaths > 0 && clean > 0);
}

int main(void)
{
	RUN(test_sweep);
	return test_done();
}
