/* SPDX-License-Identifier: MIT */
/*
 * test_inode.c - the table of cached files (pagecache/inode.c): a backing
 * descriptor becomes a new file (the table owns the descriptor) or finds
 * the one cached for the same device and inode (the caller keeps its
 * descriptor); directories and other non-regular files are refused, and
 * so is a descriptor that is not open; an allocation failure adds nothing;
 * the last reference evicts a file wherever it sits in its chain; the walk
 * visits every file once; the count follows; a child forked while another
 * thread adds and evicts files finds the table free and whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fault.h"
#include "memcg/debug.h"
#include "memcg/file.h"
#include "pagecache/inode.h"
#include "test.h"
#include "tmpdir.h"

static char dir[4096];

static int open_file(const char *name)
{
	char path[4200];
	tmpdir_path(path, sizeof(path), dir, name);
	return open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
}

static void test_refused(void)
{
	long before = mcg_inode_count();
	struct mcg_inode *in = NULL;
	bool owned = true;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	REQUIRE(dfd >= 0);
	CHECK_EQ(mcg_inode_get_fd(dfd, dir, false, &in, &owned), -EISDIR);
	close(dfd);
	int nfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	REQUIRE(nfd >= 0);
	CHECK_EQ(mcg_inode_get_fd(nfd, "/dev/null", false, &in, &owned), -EINVAL);
	close(nfd);
	CHECK_EQ(mcg_inode_get_fd(-1, "x", false, &in, &owned), -EBADF);
	CHECK(in == NULL && owned);
	/* No memory for it: nothing added, the descriptor still the caller's. */
	int fd = open_file("nomem");
	REQUIRE(fd >= 0);
	mcg_fault_inject(1, 1);
	int err = mcg_inode_get_fd(fd, "nomem", false, &in, &owned);
	mcg_fault_inject(0, 0);
	CHECK_EQ(err, -ENOMEM);
	CHECK_EQ(mcg_inode_count(), before);
	CHECK(fcntl(fd, F_GETFD) >= 0);
	close(fd);
}

static void test_same_file(void)
{
	long before = mcg_inode_count();
	int a = open_file("same"), b = open_file("same");
	REQUIRE(a >= 0 && b >= 0);
	struct mcg_inode *x, *y;
	bool owned_x, owned_y;
	REQUIRE(!mcg_inode_get_fd(a, "same", false, &x, &owned_x));
	CHECK(owned_x);
	CHECK_EQ(x->fd, a);
	CHECK_EQ(mcg_inode_count(), before + 1);
	REQUIRE(!mcg_inode_get_fd(b, "same", false, &y, &owned_y));
	CHECK(!owned_y);
	CHECK(x == y);
	CHECK_EQ(x->refcnt, 2);
	CHECK_EQ(mcg_inode_count(), before + 1);
	close(b); /* not taken: the caller's */
	mcg_inode_put(y);
	CHECK_EQ(mcg_inode_count(), before + 1);
	mcg_inode_put(x); /* the last: evicted, its descriptor closed */
	CHECK_EQ(mcg_inode_count(), before);
	CHECK_EQ(fcntl(a, F_GETFD), -1);
}

struct visit {
	struct mcg_inode **ins;
	int n;
	int *seen;
	int others;
};

static void visit_one(struct mcg_inode *in, void *arg)
{
	struct visit *v = arg;
	CHECK(in->refcnt >= 2); /* the walk's reference and the test's */
	for (int i = 0; i < v->n; i++) {
		if (v->ins[i] == in) {
			v->seen[i]++;
			return;
		}
	}
	v->others++;
}

/*
 * Enough files that some share a chain of the table (4096 chains: 600
 * files make a shared one all but certain), evicted oldest first, so that
 * an eviction finds its file behind a newer one.
 */
static void test_many_files(void)
{
	enum { N = 600 };
	static struct mcg_inode *ins[N];
	static int seen[N];
	long before = mcg_inode_count();
	char name[32];
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		int fd = open_file(name);
		REQUIRE(fd >= 0);
		bool owned;
		REQUIRE(!mcg_inode_get_fd(fd, name, false, &ins[i], &owned));
		CHECK(owned);
	}
	CHECK_EQ(mcg_inode_count(), before + N);
	struct visit v = {ins, N, seen, 0};
	mcg_inode_for_each(visit_one, &v);
	int once = 0;
	for (int i = 0; i < N; i++)
		once += seen[i] == 1;
	CHECK_EQ(once, N);
	CHECK_EQ(v.others, before);
	for (int i = 0; i < N; i++)
		CHECK_EQ(ins[i]->refcnt, 1); /* the walk gave its references back */
	for (int i = 0; i < N; i++)
		mcg_inode_put(ins[i]);
	CHECK_EQ(mcg_inode_count(), before);
}

static int churn_stop;

/* Add and evict one file over and over: the table lock taken and given
 * back all the time. */
static void *churn_files(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&churn_stop, __ATOMIC_ACQUIRE)) {
		int fd = open_file("churned");
		if (fd < 0)
			break;
		struct mcg_inode *in;
		bool owned;
		if (mcg_inode_get_fd(fd, "churned", false, &in, &owned)) {
			close(fd);
			break;
		}
		mcg_inode_put(in); /* the last reference: evicted, its descriptor closed */
	}
	return NULL;
}

/*
 * Forks while another thread works the table: each child adds a file of
 * its own and evicts it.  A child that inherited the table lock held, or a
 * chain half linked, would hang (killed by its alarm) or crash.
 */
static void test_fork_while_churning(void)
{
	/* A file opened through the API starts the page cache, which sets
	 * the fork handlers' hooks. */
	char path[4200];
	mcg_file_t *f;
	REQUIRE(mcg_file_open(tmpdir_path(path, sizeof(path), dir, "start"), O_RDWR | O_CREAT, 0644,
	                      NULL, &f) == 0);
	CHECK_EQ(mcg_file_close(f), 0);
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, churn_files, NULL) == 0);
	int bad = 0;
	for (int i = 0; i < 200; i++) {
		pid_t pid = fork();
		REQUIRE(pid >= 0);
		if (pid == 0) {
			alarm(10);
			char name[32];
			snprintf(name, sizeof(name), "child%d", i);
			int fd = open_file(name);
			struct mcg_inode *in;
			bool owned;
			/* _exit: a file the churning thread had in hand at the fork
			 * is unreachable here, and LeakSanitizer would call it a leak. */
			if (fd < 0 || mcg_inode_get_fd(fd, name, false, &in, &owned) || !owned)
				_exit(2);
			long n = mcg_inode_count();
			mcg_inode_put(in);
			_exit(mcg_inode_count() == n - 1 ? 0 : 3);
		}
		int st;
		REQUIRE(waitpid(pid, &st, 0) == pid);
		bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	__atomic_store_n(&churn_stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	CHECK_EQ(bad, 0);
}

int main(void)
{
	if (tmpdir_make(dir, sizeof(dir), NULL))
		return test_skip("cannot make a temporary directory");
	RUN(test_refused);
	RUN(test_same_file);
	RUN(test_many_files);
	RUN(test_fork_while_churning);
	tmpdir_remove(dir);
	return test_done();
}
