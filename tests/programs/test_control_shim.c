/* SPDX-License-Identifier: MIT */
/*
 * test_control_shim.c - the control socket of programs under `memcg run`
 * (the malloc shim starts it, src/preload/threads.c), steered from outside
 * with the CLI:
 *
 *   - python3 under `memcg run --max 64M --metrics 127.0.0.1:0`: its heap
 *     group reads the same from outside, `memcg set` of a lower memory.max
 *     makes its next large allocation raise MemoryError, /metrics answers
 *     curl (libmicrohttpd loaded inside the shim), a forked child serves no
 *     socket while the parent still does, and the socket goes at exit;
 *   - --no-control and MCG_CONTROL=0: no socket;
 *   - a shell that takes fds 3-9 for itself keeps the socket working (the
 *     server's descriptors live from 1000 up);
 *   - on a terminal memcg run says the pid and how to attach memcg top.
 */
#include "control.h"

static const char *script =
        "import os, sys\n"
        "print('ready', os.getpid(), flush=True)\n"
        "keep = []\n"
        "for line in sys.stdin:\n"
        "    w = line.split()\n"
        "    if w[0] == 'grow':\n"
        "        try:\n"
        "            keep.append(bytearray(int(w[1]) << 20)); print('ok', flush=True)\n"
        "        except MemoryError:\n"
        "            print('MemoryError', flush=True)\n"
        "    elif w[0] == 'fork':\n"
        "        pid = os.fork()\n"
        "        if pid == 0:\n"
        "            import time; time.sleep(3); os._exit(0)\n"
        "        print('child', pid, flush=True)\n"
        "    elif w[0] == 'exit':\n"
        "        break\n";

static char py_pid[16];

static void test_python_steered(void)
{
	PROG_SKIP_UNLESS_INSTALLED("curl");
	char *argv[] = {(char *)prog_memcg_bin(),
	                "run",
	                "--max",
	                "64M",
	                "--metrics",
	                "127.0.0.1:0",
	                "-o",
	                "/dev/null",
	                "--",
	                "python3",
	                "-c",
	                (char *)script,
	                NULL};
	struct child py;
	char line[256];
	REQUIRE(child_start(&py, argv, NULL));
	REQUIRE(child_line(&py, 30000, line, sizeof(line)) && !strncmp(line, "ready ", 6));
	snprintf(py_pid, sizeof(py_pid), "%.15s", line + 6);

	struct prog_result r = cli("stat", "-p", py_pid, "/heap", "memory.max", NULL);
	CHECK_EQ(r.status, 0);
	CHECK(!strcmp(r.out, "67108864\n"));
	prog_result_free(&r);
	r = cli("ps", NULL);
	CHECK(strstr(r.out, py_pid) != NULL);
	prog_result_free(&r);

	child_say(&py, "grow 8");
	CHECK(child_line(&py, 30000, line, sizeof(line)) && !strcmp(line, "ok"));
	r = cli("stat", "-p", py_pid, "/heap", "memory.current", NULL);
	CHECK(atol(r.out) >= 8l << 20);
	prog_result_free(&r);
	r = cli("set", "-p", py_pid, "/heap", "memory.max", "24M", NULL);
	CHECK_EQ(r.status, 0);
	prog_result_free(&r);
	child_say(&py, "grow 32");
	CHECK(child_line(&py, 30000, line, sizeof(line)) && !strcmp(line, "MemoryError"));
	r = cli("stat", "-p", py_pid, "/heap", "memory.events", NULL);
	CHECK(strstr(r.out, "\nmax 0\n") == NULL && strstr(r.out, "\nmax ") != NULL);
	prog_result_free(&r);

	/* Metrics served from inside the shim. */
	r = cli("ctl", "-p", py_pid, "info", NULL);
	const char *m = strstr(r.out, "\nmetrics 127.0.0.1:");
	CHECK(m != NULL);
	char url[96];
	snprintf(url, sizeof(url), "http://%.*s/metrics", m ? (int)strcspn(m + 9, "\n") : 0,
	         m ? m + 9 : "");
	prog_result_free(&r);
	char *curl[] = {"curl", "-sSf", url, NULL};
	r = prog_run(curl, NULL, NULL, NULL, 30);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, "\nmemcg_memory_max_bytes{group=\"/heap\"} 25165824\n") != NULL);
	prog_result_free(&r);

	/* A forked child serves nothing; the parent still does. */
	child_say(&py, "fork");
	CHECK(child_line(&py, 30000, line, sizeof(line)) && !strncmp(line, "child ", 6));
	r = cli("stat", "-p", line + 6, "/", "memory.current", NULL);
	CHECK_EQ(r.status, 1);
	CHECK(strstr(r.err, "has no control socket") != NULL);
	prog_result_free(&r);
	r = cli("stat", "-p", py_pid, "/heap", "memory.max", NULL);
	CHECK(!strcmp(r.out, "25165824\n"));
	prog_result_free(&r);

	r = cli("ctl", "-p", py_pid, "info", NULL);
	const char *s = strstr(r.out, "\nsocket ");
	char sock[256];
	snprintf(sock, sizeof(sock), "%.*s", s ? (int)strcspn(s + 8, "\n") : 0, s ? s + 8 : "");
	prog_result_free(&r);
	CHECK(access(sock, F_OK) == 0);
	child_say(&py, "exit");
	CHECK_EQ(child_wait(&py, 30), 0);
	CHECK(access(sock, F_OK) != 0); /* removed at exit */
}

/* `memcg run [OPT] -- python3` that prints its pid; whether stat finds a socket. */
static bool serves(const char *opt, char *const env[])
{
	char *argv[12];
	int n = 0;
	argv[n++] = (char *)prog_memcg_bin();
	argv[n++] = "run";
	argv[n++] = "-o";
	argv[n++] = "/dev/null";
	if (opt)
		argv[n++] = (char *)opt;
	argv[n++] = "--";
	argv[n++] = "python3";
	argv[n++] = "-c";
	argv[n++] = "import os, sys; print(os.getpid(), flush=True); sys.stdin.read()";
	argv[n] = NULL;
	struct child c;
	char line[64];
	if (!child_start(&c, argv, env) || !child_line(&c, 30000, line, sizeof(line)))
		return false;
	usleep(100000);
	struct prog_result r = cli("stat", "-p", line, "/", "memory.current", NULL);
	bool found = r.status == 0;
	if (!found)
		CHECK(strstr(r.err, "has no control socket") != NULL);
	prog_result_free(&r);
	CHECK_EQ(child_wait(&c, 30), 0);
	return found;
}

static void test_turned_off(void)
{
	char *off[] = {"MCG_CONTROL=0", NULL};
	CHECK(serves(NULL, NULL));
	CHECK(!serves("--no-control", NULL));
	CHECK(!serves(NULL, off));
}

static void test_shell_fds(void)
{
	char *argv[] = {(char *)prog_memcg_bin(),
	                "run",
	                "-o",
	                "/dev/null",
	                "--",
	                "sh",
	                "-c",
	                "exec 3>/dev/null 4>/dev/null 5>/dev/null 6</dev/null 9>/dev/null; "
	                "echo $$; read x; exit 0",
	                NULL};
	struct child c;
	char line[64];
	REQUIRE(child_start(&c, argv, NULL));
	REQUIRE(child_line(&c, 30000, line, sizeof(line)));
	struct prog_result r = cli("stat", "-p", line, "/", "memory.max", NULL);
	CHECK_EQ(r.status, 0);
	CHECK(!strcmp(r.out, "max\n"));
	prog_result_free(&r);
	CHECK_EQ(child_wait(&c, 30), 0);
}

static void test_announce_on_a_terminal(void)
{
	PROG_SKIP_UNLESS_INSTALLED("script");
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "%s run -o /dev/null -- true", prog_memcg_bin());
	char *argv[] = {"script", "-qfec", cmd, "/dev/null", NULL};
	struct prog_result r = prog_run(argv, NULL, NULL, NULL, 30);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, "memcg run: true is pid ") != NULL);
	CHECK(strstr(r.out, "; watch it with: memcg top -p ") != NULL);
	prog_result_free(&r);
	/* Not a terminal: not a word (the program's stderr is its own). */
	char *plain[] = {(char *)prog_memcg_bin(), "run", "-o", "/dev/null", "--", "true", NULL};
	r = prog_run(plain, NULL, NULL, NULL, 30);
	CHECK_EQ(r.status, 0);
	CHECK_EQ(r.err_len, 0);
	prog_result_free(&r);
}

int main(void)
{
	if (!prog_memcg_bin())
		return 1;
	RUN(test_python_steered);
	RUN(test_turned_off);
	RUN(test_shell_fds);
	RUN(test_announce_on_a_terminal);
	return test_done();
}
