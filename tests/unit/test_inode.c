/* SPDX-License-Identifier: MIT */
/*
 * test_inode.c - the table of cached files (pagecache/inode.c): a backing
 * descriptor becomes a new file (the table owns the descriptor) or finds
 * the one cached for the same device and inode (the caller keeps its
 * descriptor); directories and other non-regular files are refused, and
 * so is a descriptor that is not open; an allocation failure adds nothing;
 * the last reference evicts a file wherever it sits in its chain; the walk
 * visits every file once; the count follows.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "base/fault.h"
#include "memcg/debug.h"
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

int main(void)
{
	if (tmpdir_make(dir, sizeof(dir), NULL))
		return test_skip("cannot make a temporary directory");
	RUN(test_refused);
	RUN(test_same_file);
	RUN(test_many_files);
	tmpdir_remove(dir);
	return test_done();
}
