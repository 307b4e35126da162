/* SPDX-License-Identifier: MIT */
/*
 * test_python.c - python3 on memcg's allocator through `memcg run`: dicts,
 * lists and string churn in six threads, a subprocess (fork + exec) and a
 * forked child that allocates.  Each thread hashes what it built, so the
 * output is the same whatever the scheduling; it must equal the output of
 * the same script on glibc's malloc and the known digest below.  Run in the
 * rseq mode, the per-CPU-lock mode (glibc's rseq off), with a 5 ms reaper
 * thread, and with poison + red zones on every cache.
 */
#include "progs.h"

static const char script[] =
        "import hashlib, os, subprocess, sys, threading\n"
        "\n"
        "def churn(seed):\n"
        "    d = {}\n"
        "    lst = []\n"
        "    s = \"\"\n"
        "    for i in range(25000):\n"
        "        k = \"key-%d-%d\" % (seed, (i * 7919) % 6007)\n"
        "        d[k] = d.get(k, 0) + i\n"
        "        lst.append([i, str(i * seed), {\"x\": i % 13}])\n"
        "        if len(lst) > 2000:\n"
        "            lst = [e for e in lst[-1500:] if e[0] % 3 != 1]\n"
        "        s = (s + chr(97 + (i + seed) % 26))[-500:]\n"
        "        if i % 1000 == 0:\n"
        "            d = {k: v for k, v in d.items() if v % 5 != 0}\n"
        "    h = hashlib.sha256()\n"
        "    for k in sorted(d):\n"
        "        h.update((\"%s=%d;\" % (k, d[k])).encode())\n"
        "    h.update(repr(lst[-50:]).encode())\n"
        "    h.update(s.encode())\n"
        "    return h.hexdigest()\n"
        "\n"
        "results = [None] * 6\n"
        "def worker(n):\n"
        "    results[n] = churn(n + 1)\n"
        "threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]\n"
        "for t in threads:\n"
        "    t.start()\n"
        "for t in threads:\n"
        "    t.join()\n"
        "total = hashlib.sha256(\"\".join(results).encode()).hexdigest()\n"
        "print(\"threads\", total[:16])\n"
        "out = subprocess.run([sys.executable, \"-c\", \"print(sum(x * x for x in "
        "range(1000)))\"],\n"
        "                     capture_output=True, text=True, check=True).stdout.strip()\n"
        "print(\"subprocess\", out)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    junk = [str(i) * 20 for i in range(50000)]\n"
        "    os._exit(len(junk) % 251)\n"
        "print(\"fork child\", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n";

/* What the script prints (python 3.9+; the digests do not depend on the version). */
static const char expected[] = "threads c163330e8caba507\n"
                               "subprocess 332833500\n"
                               "fork child 51\n";

static char dir[64];
static char script_path[128];

static void run_variant(const char *what, char *const env[], bool with_file)
{
	char *argv[] = {"python3", script_path, NULL};
	char report[160];
	snprintf(report, sizeof(report), "%s/report.txt", dir);
	struct prog_result r = prog_run_memcg(argv, NULL, dir, env, NULL, 120);
	CHECK_EQ(r.status, 0);
	CHECK(!r.timed_out);
	CHECK(strcmp(r.out, expected) == 0);
	CHECK(strstr(r.out, "slabinfo") == NULL);
	CHECK(prog_is_report(r.err));
	if (r.status != 0 || strcmp(r.out, expected) || !prog_is_report(r.err))
		prog_show_failure(what, &r);
	prog_result_free(&r);

	if (!with_file)
		return;
	/* The same with -o: the report goes to the file, stderr stays clean. */
	r = prog_run_memcg(argv, report, dir, env, NULL, 120);
	CHECK_EQ(r.status, 0);
	CHECK(strcmp(r.out, expected) == 0);
	CHECK(strstr(r.err, "slabinfo") == NULL);
	char *text = prog_read_file(report);
	CHECK(text && prog_is_report(text));
	if (r.status != 0 || !text || !prog_is_report(text))
		prog_show_failure(what, &r);
	free(text);
	prog_result_free(&r);
}

static void test_python_native_matches(void)
{
	char *argv[] = {"python3", script_path, NULL};
	struct prog_result r = prog_run(argv, dir, NULL, NULL, 120);
	CHECK_EQ(r.status, 0);
	CHECK(strcmp(r.out, expected) == 0);
	if (r.status != 0 || strcmp(r.out, expected))
		prog_show_failure("python3 on glibc malloc", &r);
	prog_result_free(&r);
}

static void test_python_rseq(void) { run_variant("python3 (default per-CPU mode)", NULL, true); }

static void test_python_locked_percpu(void)
{
	char *env[] = {"GLIBC_TUNABLES=glibc.pthread.rseq=0", NULL};
	run_variant("python3 (rseq off: per-CPU locks)", env, false);
}

static void test_python_reaper(void)
{
	char *env[] = {"MCG_REAP_MS=5", NULL};
	run_variant("python3 (reaper every 5 ms)", env, false);
}

static void test_python_slab_debug(void)
{
	char *env[] = {"MCG_SLAB_DEBUG=1", NULL};
	run_variant("python3 (poison + red zones)", env, false);
}

int main(void)
{
	if (!prog_which("python3"))
		return test_skip("python3 is not installed (scripts/deps.sh installs python3)");
	if (!prog_mkdtemp(dir) || !prog_write_file(dir, "churn.py", script)) {
		perror("temporary directory");
		return 1;
	}
	snprintf(script_path, sizeof(script_path), "%s/churn.py", dir);
	RUN(test_python_native_matches);
	RUN(test_python_rseq);
	RUN(test_python_locked_percpu);
	RUN(test_python_reaper);
	RUN(test_python_slab_debug);
	prog_rmtree(dir);
	return test_done();
}
