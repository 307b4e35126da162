/* SPDX-License-Identifier: MIT */
/*
 * test_group.c - the group tree (group/group.c): names, create, lookup by
 * path, iteration, remove (EBUSY with children, dying descendants until the
 * last reference), references, and the thread's current group.
 *
 *     root
 *      |- a
 *      |   |- x
 *      |   `- y
 *      `- b
 */
#include <errno.h>
#include <pthread.h>

#include "group/group.h"
#include "memcg/debug.h"
#include "memcg/kmalloc.h"
#include "memcg/slab.h"
#include "slab/kmalloc_fast.h"
#include "memcg/group.h"
#include "test.h"
#include "held.h"

static void test_names(void)
{
	mcg_group_t *g = NULL;
	CHECK_EQ(mcg_group_create(NULL, "", &g), -EINVAL);
	CHECK_EQ(mcg_group_create(NULL, "a/b", &g), -EINVAL);
	CHECK_EQ(mcg_group_create(NULL, ".", &g), -EINVAL);
	CHECK_EQ(mcg_group_create(NULL, "..", &g), -EINVAL);
	CHECK_EQ(mcg_group_create(NULL, "new\nline", &g), -EINVAL);
	CHECK_EQ(mcg_group_create(NULL, NULL, &g), -EINVAL);
	CHECK_EQ(mcg_group_create(NULL, "ok", NULL), -EINVAL);
	char longname[MCG_GROUP_NAME_MAX + 2];
	memset(longname, 'n', sizeof(longname));
	longname[MCG_GROUP_NAME_MAX + 1] = 0;
	CHECK_EQ(mcg_group_create(NULL, longname, &g), -EINVAL);
	longname[MCG_GROUP_NAME_MAX] = 0;
	CHECK_EQ(mcg_group_create(NULL, longname, &g), 0);
	CHECK(g == NULL || strcmp(mcg_group_name(g), longname) == 0);
	CHECK_EQ(mcg_group_remove(g), 0);
	mcg_group_put(g);
	CHECK(!strcmp(mcg_group_name(mcg_group_root()), ""));
	CHECK(mcg_group_parent(mcg_group_root()) == NULL);
}

/* NULL arguments and a removed group: lookups refuse or find nothing,
 * the accessors answer for no group, DEL is no name. */
static void test_null_and_removed(void)
{
	mcg_group_t *g = NULL, *o = NULL;
	CHECK_EQ(mcg_group_lookup(NULL, NULL, &o), -EINVAL);
	CHECK_EQ(mcg_group_lookup(NULL, "x", NULL), -EINVAL);
	CHECK(!strcmp(mcg_group_name(NULL), ""));
	CHECK(mcg_group_parent(NULL) == NULL);
	CHECK_EQ(mcg_group_is_online(NULL), 0);
	CHECK(mcg_group_next_child(NULL, NULL) == NULL);
	CHECK_EQ(mcg_group_create(NULL, "del\x7f", &g), -EINVAL);
	CHECK_EQ(mcg_group_lookup(NULL, "del\x7f", &o), -ENOENT);
	REQUIRE(mcg_group_create(NULL, "gone", &g) == 0);
	mcg_group_t *c = NULL;
	REQUIRE(mcg_group_create(g, "child", &c) == 0);
	CHECK_EQ(mcg_group_lookup(g, "child", &o), 0);
	CHECK(o == c);
	mcg_group_put(o);
	o = NULL;
	CHECK_EQ(mcg_group_remove(c), 0);
	CHECK_EQ(mcg_group_remove(g), 0);
	CHECK_EQ(mcg_group_is_online(g), 0);
	CHECK_EQ(mcg_group_lookup(g, "", &o), -ENOENT); /* a removed base */
	CHECK_EQ(mcg_group_lookup(g, "child", &o), -ENOENT);
	CHECK(o == NULL);
	mcg_group_put(c);
	mcg_group_put(g);
}

/*
 * Many siblings (the name index grows several times): each is found by
 * name under its own parent only, a duplicate is refused, a removed name is
 * free again and no longer found, and a fault anywhere in a create - the
 * index's growth included - loses nothing.
 */
static void test_many_siblings(void)
{
	enum { N = 3000 };
	static mcg_group_t *g[N], *h[N];
	mcg_group_t *p1, *p2, *found;
	REQUIRE(mcg_group_create(NULL, "many-1", &p1) == 0);
	REQUIRE(mcg_group_create(NULL, "many-2", &p2) == 0);
	char name[32], path[64];
	unsigned long survived = 0; /* creates that succeeded through a failure */
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		/* Each create under p1 fails its k-th allocation, k = 1, 2, ...
		 * until it succeeds: a failure leaves nothing behind, and one in
		 * the index's growth costs only the growth. */
		for (unsigned long k = 1;; k++) {
			mcg_fault_inject(k, 0);
			int err = mcg_group_create(p1, name, &g[i]);
			unsigned long failed = mcg_fault_failed();
			mcg_fault_inject(0, 0);
			if (!err) {
				survived += failed;
				break;
			}
			CHECK_EQ(err, -ENOMEM);
			CHECK_EQ(mcg_group_lookup(p1, name, &found), -ENOENT);
		}
		REQUIRE(mcg_group_create(p2, name, &h[i]) == 0); /* same name, other parent */
	}
	CHECK(survived > 0); /* the index failed to grow, and nothing was lost */
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		CHECK_EQ(mcg_group_create(p1, name, &found), -EEXIST);
		snprintf(path, sizeof(path), "many-1/s%d", i);
		REQUIRE(mcg_group_lookup(NULL, path, &found) == 0);
		CHECK(found == g[i]);
		mcg_group_put(found);
		REQUIRE(mcg_group_lookup(p2, name, &found) == 0);
		CHECK(found == h[i]);
		mcg_group_put(found);
	}
	for (int i = 0; i < N; i += 2) {
		CHECK_EQ(mcg_group_remove(g[i]), 0);
		mcg_group_put(g[i]);
	}
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		int err = mcg_group_lookup(p1, name, &found);
		CHECK_EQ(err, i % 2 ? 0 : -ENOENT);
		if (!err)
			mcg_group_put(found);
		if (i % 2 == 0) /* the name is free again */
			REQUIRE(mcg_group_create(p1, name, &g[i]) == 0);
	}
	for (int i = 0; i < N; i++) {
		CHECK_EQ(mcg_group_remove(g[i]), 0);
		mcg_group_put(g[i]);
		CHECK_EQ(mcg_group_remove(h[i]), 0);
		mcg_group_put(h[i]);
	}
	CHECK_EQ(mcg_group_lookup(p1, "s1", &found), -ENOENT);
	CHECK_EQ(mcg_group_remove(p1), 0);
	CHECK_EQ(mcg_group_remove(p2), 0);
	mcg_group_put(p1);
	mcg_group_put(p2);
}

static long cgroup_stat(mcg_group_t *g, bool dying)
{
	return dying ? g->nr_dying_descendants : g->nr_descendants;
}

static void test_tree(void)
{
	mcg_group_t *root = mcg_group_root(), *a, *b, *x, *y, *found;
	REQUIRE(mcg_group_create(root, "a", &a) == 0);
	REQUIRE(mcg_group_create(NULL, "b", &b) == 0);
	REQUIRE(mcg_group_create(a, "x", &x) == 0);
	REQUIRE(mcg_group_create(a, "y", &y) == 0);
	CHECK_EQ(mcg_group_create(root, "a", &found), -EEXIST);
	CHECK_EQ(mcg_group_create(a, "x", &found), -EEXIST);
	CHECK(mcg_group_parent(x) == a && mcg_group_parent(a) == root);
	CHECK_EQ(cgroup_stat(root, false), 4);
	CHECK_EQ(cgroup_stat(a, false), 2);

	CHECK_EQ(mcg_group_lookup(NULL, "a/y", &found), 0);
	CHECK(found == y);
	mcg_group_put(found);
	CHECK_EQ(mcg_group_lookup(NULL, "/a/x/", &found), 0);
	CHECK(found == x);
	mcg_group_put(found);
	CHECK_EQ(mcg_group_lookup(a, "x", &found), 0);
	CHECK(found == x);
	mcg_group_put(found);
	CHECK_EQ(mcg_group_lookup(NULL, "", &found), 0);
	CHECK(found == root);
	CHECK_EQ(mcg_group_lookup(NULL, "a/z", &found), -ENOENT);
	CHECK_EQ(mcg_group_lookup(NULL, "b/x", &found), -ENOENT);
	CHECK_EQ(mcg_group_lookup(NULL, "a//x", &found), -EINVAL);
	CHECK_EQ(mcg_group_lookup(NULL, NULL, &found), -EINVAL);

	/* iteration: oldest first */
	const char *want[] = {"x", "y"};
	int n = 0;
	mcg_group_t *c = NULL;
	while ((c = mcg_group_next_child(a, c))) {
		if (n < 2)
			CHECK(!strcmp(mcg_group_name(c), want[n]));
		n++;
	}
	CHECK_EQ(n, 2);
	c = mcg_group_next_child(a, NULL); /* stop early: put it */
	CHECK(c == x);
	mcg_group_put(c);

	/* remove */
	CHECK_EQ(mcg_group_remove(root), -EINVAL);
	CHECK_EQ(mcg_group_remove(NULL), -EINVAL);
	CHECK_EQ(mcg_group_remove(a), -EBUSY);
	CHECK_EQ(mcg_group_remove(x), 0);
	CHECK_EQ(mcg_group_remove(x), -ENOENT);
	CHECK(!mcg_group_is_online(x));
	CHECK_EQ(mcg_group_lookup(NULL, "a/x", &found), -ENOENT);
	CHECK_EQ(cgroup_stat(a, false), 1);
	CHECK_EQ(cgroup_stat(a, true), 1); /* we still hold x */
	CHECK_EQ(cgroup_stat(root, true), 1);
	n = 0;
	c = NULL;
	while ((c = mcg_group_next_child(a, c)))
		n += (c == y);
	CHECK_EQ(n, 1);
	CHECK_EQ(mcg_group_create(x, "under-dead", &found), -ENOENT);
	/* the name is free again */
	mcg_group_t *x2;
	CHECK_EQ(mcg_group_create(a, "x", &x2), 0);
	mcg_group_put(x); /* last reference: freed */
	CHECK_EQ(cgroup_stat(a, true), 0);
	CHECK_EQ(cgroup_stat(root, true), 0);
	CHECK_EQ(mcg_group_remove(x2), 0);
	mcg_group_put(x2);
	CHECK_EQ(mcg_group_remove(y), 0);
	mcg_group_put(y);
	CHECK_EQ(mcg_group_remove(a), 0);
	CHECK_EQ(cgroup_stat(root, true), 1);
	mcg_group_put(a);
	CHECK_EQ(mcg_group_remove(b), 0);
	mcg_group_put(b);
	CHECK_EQ(cgroup_stat(root, false), 0);
	CHECK_EQ(cgroup_stat(root, true), 0);
}

/* A removed parent stays alive while a (removed) child holds it. */
static void test_parent_lives_with_child(void)
{
	mcg_group_t *p, *ch;
	REQUIRE(mcg_group_create(NULL, "p", &p) == 0);
	REQUIRE(mcg_group_create(p, "c", &ch) == 0);
	CHECK_EQ(mcg_group_remove(ch), 0);
	CHECK_EQ(mcg_group_remove(p), 0); /* only a dying child: allowed */
	mcg_group_put(p);
	CHECK_EQ(mcg_group_root()->nr_dying_descendants, 2);
	CHECK(!strcmp(mcg_group_name(mcg_group_parent(ch)), "p"));
	mcg_group_put(ch); /* frees c, then p */
	CHECK_EQ(mcg_group_root()->nr_dying_descendants, 0);
}

static void *other_thread(void *arg) { return mcg_group_current(); }

static void test_thread_context(void)
{
	mcg_group_t *g, *h;
	REQUIRE(mcg_group_create(NULL, "ctx", &g) == 0);
	REQUIRE(mcg_group_create(g, "inner", &h) == 0);
	CHECK(mcg_group_current() == mcg_group_root());
	mcg_group_t *prev = mcg_group_enter(g);
	CHECK(prev == NULL);
	CHECK(mcg_group_current() == g);
	mcg_group_t *prev2 = mcg_group_enter(h);
	CHECK(prev2 == g);
	CHECK(mcg_group_current() == h);
	pthread_t t;
	void *seen = NULL;
	pthread_create(&t, NULL, other_thread, NULL);
	pthread_join(t, &seen);
	CHECK(seen == mcg_group_root()); /* thread-local */
	mcg_group_leave(prev2);
	CHECK(mcg_group_current() == g);
	mcg_group_leave(prev);
	CHECK(mcg_group_current() == mcg_group_root());
	mcg_group_remove(h);
	mcg_group_put(h);
	mcg_group_remove(g);
	mcg_group_put(g);
}

static void test_create_fault(void)
{
	mcg_group_t *g = NULL;
	mcg_fault_inject(1, 0);
	CHECK_EQ(mcg_group_create(NULL, "faulty", &g), -ENOMEM);
	mcg_fault_inject(0, 0);
	CHECK_EQ(mcg_group_lookup(NULL, "faulty", &g), -ENOENT);
	CHECK_EQ(mcg_group_root()->nr_descendants, 0);
}

/* The text of @file of @g, its newline cut. */
static const char *file_text(mcg_group_t *g, const char *file)
{
	static char b[64];
	ssize_t n = mcg_group_read(g, file, b, sizeof(b));
	if (n <= 0 || (size_t)n >= sizeof(b))
		return "?";
	b[n - 1] = '\0';
	return b;
}

/* A new group starts with its parent's dirty limits, each of the four. */
static void test_dirty_limits_inherited(void)
{
	mcg_group_t *p, *c, *q, *d;
	REQUIRE(!mcg_group_create(NULL, "dratio", &p));
	REQUIRE(!mcg_group_write(p, "memory.dirty_ratio", "30"));
	REQUIRE(!mcg_group_write(p, "memory.dirty_background_ratio", "7"));
	REQUIRE(!mcg_group_create(p, "c", &c));
	CHECK(!strcmp(file_text(c, "memory.dirty_ratio"), "30"));
	CHECK(!strcmp(file_text(c, "memory.dirty_background_ratio"), "7"));
	CHECK(!strcmp(file_text(c, "memory.dirty_bytes"), "0"));
	CHECK(!strcmp(file_text(c, "memory.dirty_background_bytes"), "0"));
	REQUIRE(!mcg_group_create(NULL, "dbytes", &q));
	REQUIRE(!mcg_group_write(q, "memory.dirty_bytes", "8M"));
	REQUIRE(!mcg_group_write(q, "memory.dirty_background_bytes", "1M"));
	REQUIRE(!mcg_group_create(q, "d", &d));
	CHECK(!strcmp(file_text(d, "memory.dirty_bytes"), "8388608"));
	CHECK(!strcmp(file_text(d, "memory.dirty_background_bytes"), "1048576"));
	CHECK(!strcmp(file_text(d, "memory.dirty_ratio"), "0"));
	CHECK(!strcmp(file_text(d, "memory.dirty_background_ratio"), "0"));
	mcg_group_t *v[] = {c, p, d, q};
	for (int i = 0; i < 4; i++) {
		mcg_group_remove(v[i]);
		mcg_group_put(v[i]);
	}
}

/* Objects handed out by every kmalloc cache, and the large blocks' bytes
 * (both exact at rest). */
static size_t kmalloc_in_use(size_t *large)
{
	size_t n = held_kmalloc_objects();
	struct mcg_large_stats ls;
	*large = mcg_kmalloc_large_stats(&ls) ? 0 : ls.in_use;
	return n;
}

/* A create refused for a name in use gives back all it allocated. */
static void test_refused_create_keeps_nothing(void)
{
	mcg_group_t *g, *dup = NULL;
	REQUIRE(!mcg_group_create(NULL, "taken", &g));
	CHECK_EQ(mcg_group_create(NULL, "taken", &dup), -EEXIST); /* warm */
	size_t large_before, large_after;
	size_t before = kmalloc_in_use(&large_before);
	for (int i = 0; i < 32; i++)
		CHECK_EQ(mcg_group_create(NULL, "taken", &dup), -EEXIST);
	CHECK(dup == NULL);
	CHECK_EQ(kmalloc_in_use(&large_after), before);
	CHECK_EQ(large_after, large_before);
	mcg_group_remove(g);
	mcg_group_put(g);
}

/* A group whose last reference went is not revived: tryget refuses it. */
static void test_tryget_dead(void)
{
	static struct mcg_group dead; /* refcnt 0: released */
	CHECK(!mcg_group_tryget(&dead));
	CHECK_EQ(dead.refcnt, 0);
	mcg_group_t *g;
	REQUIRE(mcg_group_create(NULL, "live", &g) == 0);
	CHECK(mcg_group_tryget(g));
	mcg_group_put(g);
	mcg_group_remove(g);
	mcg_group_put(g);
}

/*
 * A group freed with pages still charged (its user never uncharged them):
 * said on stderr, and the pages stay charged to its ancestors, where an
 * uncharge of the parent finds them.
 */
static void test_freed_with_charge(void)
{
	mcg_group_t *p, *c;
	REQUIRE(mcg_group_create(NULL, "leak-p", &p) == 0);
	REQUIRE(mcg_group_create(p, "leak-c", &c) == 0);
	REQUIRE(mcg_charge(c, 3, 0) == 0);
	CHECK_EQ(mcg_group_remove(c), 0); /* drains the stocks: exactly 3 pages left */
	int fds[2], saved = dup(2);
	REQUIRE(saved >= 0 && pipe(fds) == 0);
	fflush(stderr);
	dup2(fds[1], 2);
	mcg_group_put(c); /* the last reference */
	dup2(saved, 2);
	close(saved);
	close(fds[1]);
	char buf[512];
	ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
	close(fds[0]);
	buf[n > 0 ? n : 0] = '\0';
	CHECK(!strcmp(buf, "memcg: group 'leak-c' freed with 3 pages still charged (leaked to "
	                   "its ancestors)\n"));
	mcg_group_drain_stocks();
	char cur[32];
	CHECK(mcg_group_read(p, "memory.current", cur, sizeof(cur)) > 0 && !strcmp(cur, "12288\n"));
	CHECK_EQ(mcg_uncharge(p, 3), 0);
	mcg_group_drain_stocks();
	CHECK(mcg_group_read(p, "memory.current", cur, sizeof(cur)) > 0 && !strcmp(cur, "0\n"));
	CHECK_EQ(mcg_group_remove(p), 0);
	mcg_group_put(p);
}

int main(void)
{
	RUN(test_names);
	RUN(test_null_and_removed);
	RUN(test_tree);
	RUN(test_many_siblings);
	RUN(test_parent_lives_with_child);
	RUN(test_thread_context);
	RUN(test_create_fault);
	RUN(test_dirty_limits_inherited);
	RUN(test_refused_create_keeps_nothing);
	RUN(test_tryget_dead);
	RUN(test_freed_with_charge);
	return test_done();
}
