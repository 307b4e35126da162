/* SPDX-License-Identifier: MIT */
/*
 * bench/baseline.c - variants under test, and one worker child per
 * measurement (see baseline.h).
 *
 * Workers are started with posix_spawn (no fork handlers run in the parent)
 * as fresh execs of /proc/self/exe, so nothing of the parent's heap or of a
 * previous measurement is shared.
 */
#include "baseline.h"

#include <dlfcn.h>
#include <limits.h>
#include <errno.h>
#include <malloc.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run.h" /* mcg_run_find_preload() */

extern char **environ;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BENCH_SANITIZED 1
#else
#define BENCH_SANITIZED 0
#endif
/** The sanitizer runtime owns malloc: no preloaded baseline can run. */
static const bool bench_sanitized = BENCH_SANITIZED;

/* A preloadable baseline: its name, library file names, a substring of its path. */
static const struct {
	const char *name;
	const char *files[3];
	const char *tag;
} preloadable[] = {
        {"jemalloc", {"libjemalloc.so.2", "libjemalloc.so", NULL}, "jemalloc"},
        {"mimalloc", {"libmimalloc.so.2", "libmimalloc.so", NULL}, "mimalloc"},
        {"tcmalloc", {"libtcmalloc_minimal.so.4", "libtcmalloc_minimal.so", NULL}, "tcmalloc"},
};

static const char *const lib_dirs[] = {
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
};

static char lib_paths[sizeof(preloadable) / sizeof(preloadable[0])][256];

/* Find the first existing library file of preloadable[i]; NULL if none. */
static const char *find_lib(size_t i)
{
	for (size_t d = 0; d < sizeof(lib_dirs) / sizeof(lib_dirs[0]); d++) {
		for (size_t f = 0; f < 3 && preloadable[i].files[f]; f++) {
			snprintf(lib_paths[i], sizeof(lib_paths[i]), "%s/%s", lib_dirs[d],
			         preloadable[i].files[f]);
			if (access(lib_paths[i], R_OK) == 0)
				return lib_paths[i];
		}
	}
	return NULL;
}

static char shim_path[PATH_MAX];

const char *baseline_lib(const char *name)
{
	if (!strcmp(name, BENCH_OTHER_SHIM)) { /* another build of memcg's shim */
		const char *path = getenv(BENCH_OTHER_SHIM_ENV);
		return path && *path ? path : NULL;
	}
	if (!strcmp(name, "memcg")) {
		if (!shim_path[0] && mcg_run_find_preload(shim_path, sizeof(shim_path)))
			shim_path[0] = '\0';
		return shim_path[0] ? shim_path : NULL;
	}
	for (size_t i = 0; i < sizeof(preloadable) / sizeof(preloadable[0]); i++)
		if (!strcmp(name, preloadable[i].name))
			return find_lib(i);
	return NULL;
}

/* Does preloaded variant @v start and serve malloc?  (One probe worker.) */
static bool probe(const struct bench_variant *v, const char *const *probe_argv)
{
	const char *argv[16];
	int k = 0;
	while (probe_argv[k] && k < 14) {
		argv[k] = probe_argv[k];
		k++;
	}
	argv[k++] = v->name;
	argv[k] = NULL;
	double dummy[1];
	if (bench_worker_run(v, argv, dummy, 1) == 1)
		return true;
	fprintf(stderr, "memcg bench: %s (%s) does not run preloaded: skipped\n", v->name,
	        v->preload);
	return false;
}

int bench_variants_find(struct bench_variant *out, const char *const *probe_argv)
{
	int n = 0;
	const char *shim = bench_sanitized ? NULL : baseline_lib("memcg");
	struct bench_variant memcg = {"memcg", BENCH_LIBC, shim, false, false};
	if (shim && probe(&memcg, probe_argv))
		out[n++] = memcg;
	else if (!bench_sanitized)
		fprintf(stderr, "memcg bench: memcg's shim (libmemcg-preload.so) not found: the "
		                "memcg variant is skipped\n");
	out[n++] = (struct bench_variant){"mcg-cache", BENCH_MCG_CACHE, NULL, false, true};
	out[n++] = (struct bench_variant){"mcg_malloc", BENCH_MCG_KMALLOC, NULL, false, true};
	out[n++] = (struct bench_variant){"glibc", BENCH_LIBC, NULL, true, false};
	if (bench_sanitized) {
		fprintf(stderr, "memcg bench: sanitizer build: memcg's shim, jemalloc, mimalloc "
		                "and tcmalloc skipped, and 'glibc' is the sanitizer's malloc\n");
		return n;
	}
	for (size_t i = 0; i < sizeof(preloadable) / sizeof(preloadable[0]); i++) {
		const char *path = find_lib(i);
		if (!path) {
			fprintf(stderr, "memcg bench: %s not installed (no %s): skipped\n",
			        preloadable[i].name, preloadable[i].files[0]);
			continue;
		}
		struct bench_variant v = {preloadable[i].name, BENCH_LIBC, path, true, false};
		if (probe(&v, probe_argv))
			out[n++] = v;
	}
	return n;
}

/*
 * The static TLS room a worker starts with, so that allocators with
 * initial-exec TLS (jemalloc's is 2.6 KiB, memcg's shim's 0.4) can be
 * dlopen()ed side by side (inproc.h).  Every worker gets it, so every
 * variant runs in the same environment but for LD_PRELOAD.
 */
#define WORKER_TUNABLE "glibc.rtld.optional_static_tls=16384"

/* environ without LD_PRELOAD, plus LD_PRELOAD=@preload if not NULL, and
 * WORKER_TUNABLE added to GLIBC_TUNABLES.  Free with free(). */
static char **worker_env(const char *preload, char *buf, size_t buflen, char *tbuf, size_t tlen)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 3, sizeof(char *));
	if (!env)
		return NULL;
	size_t k = 0;
	const char *tunables = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(environ[i], "GLIBC_TUNABLES=", 15))
			tunables = environ[i] + 15;
		else if (strncmp(environ[i], "LD_PRELOAD=", 11))
			env[k++] = environ[i];
	}
	if (preload) {
		snprintf(buf, buflen, "LD_PRELOAD=%s", preload);
		env[k++] = buf;
	}
	snprintf(tbuf, tlen, "GLIBC_TUNABLES=%s%s%s", tunables ? tunables : "",
	         tunables && *tunables ? ":" : "", WORKER_TUNABLE);
	env[k++] = tbuf;
	env[k] = NULL;
	return env;
}

int bench_worker_run(const struct bench_variant *v, const char *const *argv, double *vals, int max)
{
	const char *args[32];
	int na = 0;
	args[na++] = "memcg";
	for (int i = 0; argv[i] && na < 31; i++)
		args[na++] = argv[i];
	args[na] = NULL;

	char preload_var[PATH_MAX + 16], tunables[1024];
	char **env = worker_env(v->preload, preload_var, sizeof(preload_var), tunables,
	                        sizeof(tunables));
	int fds[2];
	if (!env || pipe(fds)) {
		free(env);
		perror("memcg bench: worker");
		return -1;
	}
	/* posix_spawn, not fork: no atfork handlers run in the parent. */
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int err = posix_spawn_file_actions_init(&fa);
	if (!err)
		err = posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	if (!err)
		err = posix_spawn_file_actions_addclose(&fa, fds[0]);
	if (!err)
		err = posix_spawn_file_actions_addclose(&fa, fds[1]);
	fflush(stdout);
	fflush(stderr);
	if (!err)
		err = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, (char *const *)args, env);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	free(env);
	if (err) {
		fprintf(stderr, "memcg bench: cannot start a worker: %s\n", strerror(err));
		close(fds[0]);
		return -1;
	}

	/* Read everything the child prints (a few numbers). */
	char out[4096];
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fds[0], out + len, sizeof(out) - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == sizeof(out) - 1)
			break;
	}
	out[len] = '\0';
	close(fds[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "memcg bench: worker '%s %s' (%s) failed: %s %d\n", argv[3],
		        argv[4], v->name, WIFEXITED(status) ? "exit" : "signal",
		        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		return -1;
	}
	int n = 0;
	char *p = out, *end;
	for (;;) {
		double d = strtod(p, &end);
		if (end == p)
			break;
		if (n < max)
			vals[n] = d;
		n++;
		p = end;
	}
	while (*p == ' ' || *p == '\n' || *p == '\t')
		p++;
	if (*p) {
		fprintf(stderr, "memcg bench: worker (%s) printed garbage: '%.40s'\n", v->name, p);
		return -1;
	}
	return n;
}

/* The substring malloc's library path must contain for variant @name. */
static const char *tag_of(const char *name)
{
	if (!strcmp(name, "glibc"))
		return "libc.so";
	if (!strcmp(name, "memcg"))
		return "libmemcg-preload";
	for (size_t i = 0; i < sizeof(preloadable) / sizeof(preloadable[0]); i++)
		if (!strcmp(name, preloadable[i].name))
			return preloadable[i].tag;
	return NULL;
}

int baseline_check_self(const char *name)
{
	const char *tag = tag_of(name);
	if (!tag || bench_sanitized)
		return 0;
	void *fn = dlsym(RTLD_DEFAULT, "malloc");
	Dl_info info;
	if (!fn || !dladdr(fn, &info) || !info.dli_fname) {
		fprintf(stderr, "memcg bench: cannot tell where malloc comes from\n");
		return -1;
	}
	if (!strstr(info.dli_fname, tag)) {
		fprintf(stderr, "memcg bench: variant %s, but malloc comes from %s\n", name,
		        info.dli_fname);
		return -1;
	}
	return 0;
}

/* Release calls by allocator. */
static const struct {
	const char *name, *call;
} release_calls[] = {
        {"memcg", "mcg_slab_shrink_all()"},
        {"glibc", "malloc_trim(0)"},
        {"jemalloc", "mallctl(arena.all.purge)"},
        {"mimalloc", "mi_collect(true)"},
        {"tcmalloc", "MallocExtension_ReleaseFreeMemory()"},
};

const char *baseline_release_name(const char *name)
{
	for (size_t i = 0; i < sizeof(release_calls) / sizeof(release_calls[0]); i++)
		if (!strcmp(name, release_calls[i].name))
			return release_calls[i].call;
	return "none";
}

const char *baseline_release(const char *name, void *handle)
{
	if (!strcmp(name, "glibc")) {
		malloc_trim(0);
	} else if (!strcmp(name, "memcg")) {
		long (*shrink_all)(void);
		*(void **)&shrink_all = dlsym(handle, "mcg_slab_shrink_all");
		if (!shrink_all)
			return "none";
		shrink_all();
	} else if (!strcmp(name, "jemalloc")) {
		int (*ctl)(const char *, void *, size_t *, void *, size_t);
		*(void **)&ctl = dlsym(handle, "mallctl");
		if (!ctl)
			return "none";
		ctl("thread.tcache.flush", NULL, NULL, NULL, 0);
		ctl("arena.4096.purge", NULL, NULL, NULL, 0); /* 4096: MALLCTL_ARENAS_ALL */
	} else if (!strcmp(name, "mimalloc")) {
		void (*collect)(bool);
		*(void **)&collect = dlsym(handle, "mi_collect");
		if (!collect)
			return "none";
		collect(true);
	} else if (!strcmp(name, "tcmalloc")) {
		void (*release)(void);
		*(void **)&release = dlsym(handle, "MallocExtension_ReleaseFreeMemory");
		if (!release)
			return "none";
		release();
	} else {
		return "none";
	}
	return baseline_release_name(name);
}
