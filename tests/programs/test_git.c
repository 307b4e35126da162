/* SPDX-License-Identifier: MIT */
/*
 * test_git.c - git on memcg's allocator through `memcg run`: init a
 * repository in a temporary directory, add 200 files, commit twice, then
 * check `git log --oneline`, `git status`, `git fsck` and `git gc` output.
 * Every git command (and the helpers it forks) runs on the shim.
 */
#include "progs.h"

static char dir[64];

/* Run `git @args...` in @dir under memcg run; the result is the caller's to free. */
static struct prog_result git(char *const args[])
{
	char *argv[32] = {"git",
	                  "-c",
	                  "user.name=memcg",
	                  "-c",
	                  "user.email=memcg@example.org",
	                  "-c",
	                  "init.defaultBranch=main",
	                  "-c",
	                  "gc.auto=0"};
	int n = 9;
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	char *env[] = {"GIT_CONFIG_NOSYSTEM=1",
	               "HOME=/nonexistent",
	               "LC_ALL=C",
	               "GIT_AUTHOR_DATE=2024-01-01T00:00:00Z",
	               "GIT_COMMITTER_DATE=2024-01-01T00:00:00Z",
	               NULL};
	struct prog_result r = prog_run_memcg(argv, NULL, dir, env, NULL, 60);
	if (r.status != 0 || !prog_is_report(r.err))
		prog_show_failure(args[0], &r);
	return r;
}

static bool git_ok(char *const args[])
{
	struct prog_result r = git(args);
	bool ok = r.status == 0 && prog_is_report(r.err);
	prog_result_free(&r);
	return ok;
}

static void test_git_repository(void)
{
	REQUIRE(git_ok((char *[]){"init", "-q", NULL}));
	for (int i = 0; i < 200; i++) {
		char name[32], text[256];
		snprintf(name, sizeof(name), "file%03d.txt", i);
		snprintf(text, sizeof(text), "file %d\n%s\n", i,
		         "the quick brown fox jumps over the lazy dog");
		REQUIRE(prog_write_file(dir, name, text));
	}
	REQUIRE(git_ok((char *[]){"add", ".", NULL}));
	REQUIRE(git_ok((char *[]){"commit", "-q", "-m", "first commit", NULL}));
	REQUIRE(prog_write_file(dir, "file007.txt", "changed\n"));
	REQUIRE(git_ok((char *[]){"commit", "-q", "-a", "-m", "second commit", NULL}));

	/* Fixed names, contents and dates: the commit ids are known. */
	struct prog_result r = git((char *[]){"log", "--format=%s|%an|%ad", "--date=iso", NULL});
	CHECK_EQ(r.status, 0);
	CHECK(strcmp(r.out, "second commit|memcg|2024-01-01 00:00:00 +0000\n"
	                    "first commit|memcg|2024-01-01 00:00:00 +0000\n") == 0);
	prog_result_free(&r);

	r = git((char *[]){"log", "--oneline", NULL});
	CHECK_EQ(prog_count(r.out, "\n"), 2);
	CHECK(strstr(r.out, " second commit\n") != NULL);
	CHECK(strstr(r.out, " first commit\n") != NULL);
	prog_result_free(&r);

	r = git((char *[]){"show", "--stat", "--format=%s", "HEAD", NULL});
	CHECK(strstr(r.out, "file007.txt | 3 +--") != NULL);
	CHECK(strstr(r.out, "1 file changed, 1 insertion(+), 2 deletions(-)") != NULL);
	prog_result_free(&r);

	r = git((char *[]){"status", "--porcelain", NULL});
	CHECK_EQ(r.status, 0);
	CHECK_EQ(r.out_len, 0);
	prog_result_free(&r);

	r = git((char *[]){"ls-files", NULL});
	CHECK_EQ(prog_count(r.out, "\n"), 200);
	prog_result_free(&r);

	/* gc packs everything (pack-objects, in a child process), fsck checks it. */
	CHECK(git_ok((char *[]){"gc", "-q", NULL}));
	r = git((char *[]){"fsck", "--full", "--strict", NULL});
	CHECK_EQ(r.status, 0);
	CHECK_EQ(r.out_len, 0);
	CHECK(strstr(r.err, "error") == NULL);
	prog_result_free(&r);

	r = git((char *[]){"count-objects", "-v", NULL});
	CHECK(strstr(r.out, "in-pack: 205\n") != NULL); /* 201 blobs, 2 trees, 2 commits */
	prog_result_free(&r);
}

int main(void)
{
	if (!prog_which("git"))
		return test_skip("git is not installed (scripts/deps.sh installs git)");
	if (!prog_mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_git_repository);
	prog_rmtree(dir);
	return test_done();
}
