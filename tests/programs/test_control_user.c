/* SPDX-License-Identifier: MIT */
/*
 * test_control_user.c - only the process's own user and root get in.  As
 * root (else SKIP, exit 77), with `setpriv` (util-linux) for the other user:
 *
 *   - nobody cannot reach a root process's socket (its directory is 0700):
 *     memcg stat and set exit 1 saying permission denied, nothing changed,
 *     and memcg ps as nobody does not list it;
 *   - with the directory and socket opened up (0755, 0666), the socket
 *     itself refuses nobody (SO_PEERCRED): an "error EACCES" reply naming
 *     the uid, which memcg stat prints;
 *   - root may read and write a process that runs as nobody.
 * The memcg and control_target binaries are copied to a directory nobody
 * can read; each target gets a private XDG_RUNTIME_DIR, so the tests that
 * run meanwhile keep their own socket directories as they are.
 */
#include <sys/stat.h>

#include "control.h"

static char tmp[64], bin[128], tgt[128];

static bool copy(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	bool ok = in && out;
	char chunk[65536];
	size_t n;
	while (ok && (n = fread(chunk, 1, sizeof(chunk), in)) > 0)
		ok = fwrite(chunk, 1, n, out) == n;
	if (in)
		fclose(in);
	if (out)
		ok = !fclose(out) && ok;
	return ok && !chmod(to, 0755);
}

/* `setpriv ... memcg ARGS...` as nobody. */
static struct prog_result as_nobody(const char *a1, const char *a2, const char *a3, const char *a4,
                                    const char *a5, const char *a6)
{
	char *argv[] = {"setpriv",  "--reuid=nobody", "--regid=nogroup", "--clear-groups",
	                bin,        (char *)a1,       (char *)a2,        (char *)a3,
	                (char *)a4, (char *)a5,       (char *)a6,        NULL};
	return prog_run(argv, NULL, NULL, NULL, 30);
}

static void test_root_process_refuses_nobody(void)
{
	char xdg[128], env[160], line[256], sock[256], sockdir[160];
	snprintf(xdg, sizeof(xdg), "%s/root-xdg", tmp);
	REQUIRE(mkdir(xdg, 0755) == 0);
	snprintf(env, sizeof(env), "XDG_RUNTIME_DIR=%s", xdg);
	char *envs[] = {env, NULL}, *argv[] = {tgt, NULL};
	struct child t;
	REQUIRE(child_start(&t, argv, envs));
	REQUIRE(child_line(&t, 20000, line, sizeof(line)) && !strncmp(line, "ready ", 6));
	snprintf(sockdir, sizeof(sockdir), "%s/memcg", xdg);
	snprintf(sock, sizeof(sock), "%s/%ld.sock", sockdir, (long)t.pid);

	struct prog_result r = as_nobody("stat", "-S", sock, "/tenant-a", "memory.max", NULL);
	CHECK_EQ(r.status, 1);
	CHECK(strstr(r.err, "permission denied (only its own user and root may connect)") != NULL);
	CHECK_EQ(r.out_len, 0);
	prog_result_free(&r);
	r = as_nobody("set", "-S", sock, "/tenant-a", "memory.max", "1M");
	CHECK_EQ(r.status, 1);
	prog_result_free(&r);
	char pid_s[16];
	snprintf(pid_s, sizeof(pid_s), "%ld", (long)t.pid);
	r = as_nobody("ps", NULL, NULL, NULL, NULL, NULL);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, pid_s) == NULL);
	prog_result_free(&r);

	/* Opened up: the socket's own check refuses. */
	snprintf(line, sizeof(line), "open %s", sockdir);
	child_say(&t, line);
	CHECK(child_line(&t, 10000, line, sizeof(line)) && !strcmp(line, "ok"));
	r = as_nobody("stat", "-S", sock, "/tenant-a", "memory.max", NULL);
	CHECK_EQ(r.status, 1);
	CHECK(strstr(r.err, "memcg stat: Permission denied: uid 65534 is neither this process's "
	                    "user (0) nor root") != NULL);
	prog_result_free(&r);
	r = as_nobody("set", "-S", sock, "/tenant-a", "memory.max", "1M");
	CHECK_EQ(r.status, 1);
	prog_result_free(&r);
	child_say(&t, "read /tenant-a memory.max");
	CHECK(child_line(&t, 10000, line, sizeof(line)) && !strcmp(line, "67108864"));
	child_say(&t, "exit");
	CHECK_EQ(child_wait(&t, 10), 0);
}

static void test_root_reaches_nobody(void)
{
	char xdg[128], env[160], line[64], sock[256];
	snprintf(xdg, sizeof(xdg), "%s/nobody-xdg", tmp);
	REQUIRE(mkdir(xdg, 0700) == 0 && chown(xdg, 65534, 65534) == 0);
	snprintf(env, sizeof(env), "XDG_RUNTIME_DIR=%s", xdg);
	char *envs[] = {env, NULL};
	char *argv[] = {"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", tgt,
	                NULL};
	struct child t;
	REQUIRE(child_start(&t, argv, envs));
	REQUIRE(child_line(&t, 20000, line, sizeof(line)) && !strncmp(line, "ready ", 6));
	snprintf(sock, sizeof(sock), "%s/memcg/%s.sock", xdg, line + 6);
	struct stat st;
	CHECK(lstat(sock, &st) == 0 && st.st_uid == 65534 && (st.st_mode & 07777) == 0600);
	struct prog_result r = cli("set", "-S", sock, "/tenant-a", "memory.max", "32M", NULL);
	CHECK_EQ(r.status, 0);
	prog_result_free(&r);
	r = cli("stat", "-S", sock, "/tenant-a", "memory.max", NULL);
	CHECK_EQ(r.status, 0);
	CHECK(!strcmp(r.out, "33554432\n"));
	prog_result_free(&r);
	child_say(&t, "exit");
	CHECK_EQ(child_wait(&t, 10), 0);
}

int main(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: needs root (to run as another user)\n");
		return 77;
	}
	if (!prog_which("setpriv")) {
		fprintf(stderr, "setpriv is not installed (util-linux)\n");
		return 1;
	}
	const char *target = getenv("MCG_CONTROL_TARGET");
	if (!prog_memcg_bin() || !target || !prog_mkdtemp(tmp) || chmod(tmp, 0755))
		return 1;
	snprintf(bin, sizeof(bin), "%s/memcg", tmp);
	snprintf(tgt, sizeof(tgt), "%s/control_target", tmp);
	if (!copy(prog_memcg_bin(), bin) || !copy(target, tgt))
		return 1;
	RUN(test_root_process_refuses_nobody);
	RUN(test_root_reaches_nobody);
	prog_rmtree(tmp);
	return test_done();
}
