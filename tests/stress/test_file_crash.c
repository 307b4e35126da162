/* SPDX-License-Identifier: MIT */
/*
 * test_file_crash.c - a writer killed right after its fsync returned loses
 * nothing it fsynced.  The test runs itself again as the writer (a fresh
 * process: its own page cache and flushers), which writes pseudo-random
 * data through memcg's page cache, fsyncs, reports the synced size on a
 * pipe, and keeps writing; the parent SIGKILLs it on reading the report,
 * then checks every fsynced byte with read(2).  Rounds over O_DIRECT and
 * buffered backing, aligned and unaligned sizes, fsync and fdatasync,
 * whole runs one at a time and runs of 7 pages 4 in flight (writeback I/O
 * pool; O_DIRECT files extended ahead of them).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>

#include "memcg/file.h"
#include "memcg/memcg.h"
#include "pagecache/writeback.h"
#include "test.h"
#include "tmpdir.h"

static char byte_at(uint64_t seed, uint64_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	return (char)(x >> 32);
}

/* The writer: argv = self, "--writer", path, fd, seed, size, flags. */
static int writer(char **argv)
{
	const char *path = argv[2];
	int fd = atoi(argv[3]);
	uint64_t seed = strtoull(argv[4], NULL, 10);
	size_t size = strtoull(argv[5], NULL, 10);
	unsigned flags = (unsigned)atoi(argv[6]);
	mcg_file_opts_t o = {NULL, flags & 1 ? MCG_FILE_NO_DIRECT : 0};
	mcg_file_t *f;
	if (flags & 4) {
		mcg_option_set("writeback_io_depth", 4);
		mcg_wb_set_run_pages(7);
	} else {
		mcg_option_set("writeback_io_depth", 1);
	}
	if (mcg_file_open(path, O_RDWR | O_CREAT | O_TRUNC, 0644, &o, &f))
		return 2;
	char *b = malloc(size + (1 << 20));
	for (size_t i = 0; i < size + (1 << 20); i++)
		b[i] = byte_at(seed, i);
	/* Pieces of odd sizes, some rewritten, all of it dirty at the fsync. */
	for (size_t at = 0; at < size;) {
		size_t n = 1 + (size_t)(byte_at(seed, at) & 0x7f) * 997;
		if (n > size - at)
			n = size - at;
		if (mcg_file_pwrite(f, b + at, n, (off_t)at) != (ssize_t)n)
			return 3;
		at += n;
	}
	if (mcg_file_pwrite(f, b, 4096 < size ? 4096 : size, 0) <= 0)
		return 3;
	int err = flags & 2 ? mcg_file_fdatasync(f) : mcg_file_fsync(f);
	if (err)
		return 4;
	char msg[32];
	int len = snprintf(msg, sizeof(msg), "%zu\n", size);
	if (write(fd, msg, (size_t)len) != len)
		return 5;
	/* More writes the parent does not wait for: unsynced, maybe lost. */
	for (size_t at = size;; at = size + (at - size + 4096) % (1 << 20))
		mcg_file_pwrite(f, b + at, 4096, (off_t)at);
}

static void crash_round(char **argv, const char *dir, uint64_t seed, size_t size, unsigned flags)
{
	char path[PATH_MAX];
	tmpdir_path(path, sizeof(path), dir, "crash");
	int p[2];
	REQUIRE(!pipe(p));
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		char fd[16], sd[32], sz[32], fl[16];
		snprintf(fd, sizeof(fd), "%d", p[1]);
		snprintf(sd, sizeof(sd), "%llu", (unsigned long long)seed);
		snprintf(sz, sizeof(sz), "%zu", size);
		snprintf(fl, sizeof(fl), "%u", flags);
		char *args[] = {argv[0], "--writer", path, fd, sd, sz, fl, NULL};
		execv("/proc/self/exe", args);
		_exit(127);
	}
	close(p[1]);
	char msg[32] = {0};
	ssize_t n = read(p[0], msg, sizeof(msg) - 1);
	kill(pid, SIGKILL); /* right after the fsync returned */
	int status;
	waitpid(pid, &status, 0);
	close(p[0]);
	if (n <= 0) {
		CHECK(!"the writer died before its fsync returned");
		fprintf(stderr, "writer status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return;
	}
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	size_t synced = strtoull(msg, NULL, 10), len;
	CHECK_EQ(synced, size);
	char *disk = tmpdir_read_file(path, &len);
	REQUIRE(disk);
	CHECK(len >= synced);
	size_t bad = synced;
	for (size_t i = 0; i < synced && i < len; i++)
		if (disk[i] != byte_at(seed, i)) {
			bad = i;
			break;
		}
	if (bad != synced)
		fprintf(stderr, "first lost byte at %zu of %zu (flags %u)\n", bad, synced, flags);
	CHECK_EQ(bad, synced);
	free(disk);
}

int main(int argc, char **argv)
{
	if (argc == 7 && !strcmp(argv[1], "--writer"))
		return writer(argv);
	mcg_options_use_env(0);
	char dir[PATH_MAX];
	if (tmpdir_make(dir, sizeof(dir), NULL)) {
		perror("mkdtemp");
		return 1;
	}
	static const size_t sizes[] = {1, 4095, 4096, 1 << 20, (3 << 20) + 1234, 8 << 20};
	/* bit 0: buffered; bit 1: fdatasync; bit 2: runs in flight */
	for (unsigned flags = 0; flags < 8; flags++)
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
			crash_round(argv, dir, 1000 * flags + s + 1, sizes[s], flags);
	test_passed += !test_failed_checks;
	test_failed += !!test_failed_checks;
	tmpdir_remove(dir);
	return test_done();
}
