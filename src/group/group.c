/* SPDX-License-Identifier: MIT */
/*
 * group/group.c - the group tree: create, remove, lookup by path, iteration
 * over children, references, and the thread's current group.
 *
 * Lock: mcg_group_tree_lock (MCG_RANK_GROUP_TREE) for the tree's shape; see
 * group.h for what it protects and for the lifetime rules.  The last put
 * takes the tree lock to unlink the group, so no one puts a reference while
 * holding it.
 */
#include "group/group.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "base/fault.h"
#include "base/log.h"
#include "percpu/pcpu_word.h"
#include "memcg/kmalloc.h"

mcg_lock_t mcg_group_tree_lock;
const struct mcg_group_reclaim_ops *mcg_group_reclaim_ops;
const struct mcg_group_file_ops *mcg_group_file_ops;
mcg_tls struct mcg_reclaim_state *mcg_reclaim_state_current;
uint32_t mcg_reclaim_gate_;
mcg_tls mcg_group_t *mcg_current_group_;
mcg_tls struct mcg_objcg *mcg_current_objcg_[MCG_NR_OBJCG_KINDS];
mcg_tls uint64_t mcg_current_slot_bits_[MCG_NR_OBJCG_KINDS] = {
        MCG_ROOT_SLOT_BITS(0), MCG_ROOT_SLOT_BITS(1), MCG_ROOT_SLOT_BITS(2)};
_Static_assert(MCG_NR_OBJCG_KINDS == 3, "one initialiser per kind");

void mcg_group_set_reclaim_ops(const struct mcg_group_reclaim_ops *ops)
{
	__atomic_store_n(&mcg_group_reclaim_ops, ops, __ATOMIC_RELEASE);
}

void mcg_group_set_file_ops(const struct mcg_group_file_ops *ops)
{
	__atomic_store_n(&mcg_group_file_ops, ops, __ATOMIC_RELEASE);
}

static struct mcg_group root_group;
static pthread_once_t group_once = PTHREAD_ONCE_INIT;
static int group_ready;           /* 1 once group_init_once() finished */
static unsigned long next_id = 1; /* tree lock */

static void group_init_once(void)
{
	mcg_percpu_init();
	mcg_lock_init(&mcg_group_tree_lock, MCG_RANK_GROUP_TREE);
	struct mcg_group *r = &root_group;
	mcg_page_counter_init(&r->memory, NULL);
	r->pcpu_stat = mcg_group_stat_alloc();
	if (!r->pcpu_stat)
		mcg_die("no memory for the root group's statistics");
	r->refcnt = 1; /* never dropped */
	r->online = 1;
	r->dirty_ratio = r->dirty_background_ratio = -1; /* the root follows the options */
	r->dirty_bytes = r->dirty_background_bytes = -1;
	mcg_list_init(&r->children);
	mcg_list_init(&r->sibling);
	mcg_list_init(&r->pop_children);
	mcg_list_init(&r->pop_sibling);
	mcg_stock_init();
	mcg_objcg_init();
	/* The root's objcgs skip the fault point and come from kmalloc pages
	 * already mapped for its statistics: no test can fail them. */
	if (mcg_objcg_create_all(r))                              /* GCOVR_EXCL_LINE */
		mcg_die("no memory for the root group's objcgs"); /* GCOVR_EXCL_LINE */
	for (int k = 0; k < MCG_NR_OBJCG_KINDS; k++) /* the threads' initial slot_bits */
		MCG_BUG_ON(r->objcg[k]->slot_bits != MCG_ROOT_SLOT_BITS(k));
	__atomic_store_n(&group_ready, 1, __ATOMIC_RELEASE);
}

void mcg_group_init(void) { pthread_once(&group_once, group_init_once); }

/* Fork handlers (see group.h).  A fork can only race with group_init_once()
 * in a thread that is initialising: then the flag is still 0 and nothing is
 * locked, and the child may find the root half set up - as with any library
 * initialised during a fork. */
static bool fork_ready(void) { return __atomic_load_n(&group_ready, __ATOMIC_ACQUIRE); }

void mcg_group_fork_lock_drain(void)
{
	if (fork_ready())
		mcg_stock_fork_lock_drain(true);
}

void mcg_group_fork_unlock_drain(void)
{
	if (fork_ready())
		mcg_stock_fork_lock_drain(false);
}

void mcg_group_fork_lock_tree(void)
{
	if (fork_ready())
		mcg_lock_raw(&mcg_group_tree_lock);
}

void mcg_group_fork_unlock_tree(void)
{
	if (fork_ready())
		mcg_unlock_raw(&mcg_group_tree_lock);
}

void mcg_group_fork_lock_leaves(void)
{
	if (!fork_ready())
		return;
	mcg_objcg_fork_lock_all(true); /* the tree lock is held: the lists hold still */
	mcg_stock_fork_lock_all(true);
}

void mcg_group_fork_unlock_leaves(void)
{
	if (!fork_ready())
		return;
	mcg_stock_fork_lock_all(false);
	mcg_objcg_fork_lock_all(false);
}

mcg_public mcg_group_t *mcg_group_root(void)
{
	mcg_group_init();
	return &root_group;
}

/* ------------------------------------------------------------ references */

mcg_public void mcg_group_get(mcg_group_t *g)
{
	long old = __atomic_fetch_add(&g->refcnt, 1, __ATOMIC_RELAXED);
	MCG_BUG_ON(old <= 0);
}

bool mcg_group_tryget(mcg_group_t *g)
{
	long old = __atomic_load_n(&g->refcnt, __ATOMIC_RELAXED);
	do {
		if (old <= 0)
			return false;
	} while (!__atomic_compare_exchange_n(&g->refcnt, &old, old + 1, true, __ATOMIC_ACQUIRE,
	                                      __ATOMIC_RELAXED));
	return true;
}

/* The last reference went: unlink, fold statistics into the parent, free. */
static void group_release(struct mcg_group *g)
{
	long usage = mcg_page_counter_read(&g->memory);
	if (usage)
		mcg_log("group '%s' freed with %ld pages still charged (leaked to its ancestors)",
		        g->name, usage);
	mcg_lock(&mcg_group_tree_lock);
	mcg_list_del(&g->sibling);
	mcg_group_stat_fold_locked(g);
	for (struct mcg_group *a = g->parent; a; a = a->parent)
		a->nr_dying_descendants--;
	mcg_unlock(&mcg_group_tree_lock);
	const struct mcg_group_reclaim_ops *ops = mcg_group_reclaim_ops_get();
	if (ops)
		ops->release(g);
	const struct mcg_group_file_ops *fops = mcg_group_file_ops_get();
	if (fops)
		fops->release(g);
	mcg_objcg_put_all(g); /* they live on while objects of theirs do */
	mcg_group_stat_free(g->pcpu_stat);
	mcg_free(g);
}

mcg_public void mcg_group_put(mcg_group_t *g)
{
	while (g && g != &root_group) {
		long now = __atomic_sub_fetch(&g->refcnt, 1, __ATOMIC_ACQ_REL);
		MCG_BUG_ON(now < 0);
		if (now)
			return;
		struct mcg_group *parent = g->parent;
		group_release(g);
		g = parent; /* drop the child's reference to its parent */
	}
}

/* ------------------------------------------------------------ the tree */

static bool name_valid(const char *name)
{
	size_t n = name ? strnlen(name, MCG_GROUP_NAME_MAX + 1) : 0;
	if (n == 0 || n > MCG_GROUP_NAME_MAX)
		return false;
	if (strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return false; /* no control characters (newlines would break files) */
	return true;
}

mcg_public int mcg_group_create(mcg_group_t *parent, const char *name, mcg_group_t **out)
{
	if (!out || !name_valid(name))
		return -EINVAL;
	mcg_group_init();
	if (!parent)
		parent = &root_group;
	struct mcg_group *g =
	        mcg_fault_should_fail() ? NULL : mcg_aligned_alloc(MCG_CACHELINE, sizeof(*g));
	if (!g)
		return -ENOMEM;
	memset(g, 0, sizeof(*g));
	g->pcpu_stat = mcg_fault_should_fail() ? NULL : mcg_group_stat_alloc();
	if (!g->pcpu_stat) {
		mcg_free(g);
		return -ENOMEM;
	}

	/* The stock packs a group's address in 44 bits (percpu/pcpu_word.h). */
	MCG_BUG_ON(!mcg_pcpu_word_keyable(g));
	strcpy(g->name, name);
	g->name_len = (uint8_t)strlen(name); /* <= MCG_GROUP_NAME_MAX */
	mcg_page_counter_init(&g->memory, &parent->memory);
	mcg_list_init(&g->children);
	mcg_list_init(&g->pop_children);
	mcg_list_init(&g->pop_sibling);
	g->parent = parent;
	g->online = 1;
	g->refcnt = 2; /* the tree's and the caller's */
	g->dirty_ratio = MCG_READ_ONCE(parent->dirty_ratio);
	g->dirty_background_ratio = MCG_READ_ONCE(parent->dirty_background_ratio);
	g->dirty_bytes = MCG_READ_ONCE(parent->dirty_bytes);
	g->dirty_background_bytes = MCG_READ_ONCE(parent->dirty_background_bytes);
	int made = mcg_objcg_create_all(g);
	if (made) {
		mcg_group_stat_free(g->pcpu_stat);
		mcg_free(g);
		return made;
	}

	mcg_lock(&mcg_group_tree_lock);
	int err = 0;
	if (!MCG_READ_ONCE(parent->online))
		err = -ENOENT;
	else if (mcg_group_names_find_locked(parent, name, strlen(name)))
		err = -EEXIST;
	if (!err) {
		mcg_group_get(parent);
		g->id = next_id++;
		mcg_list_add_tail(&g->sibling, &parent->children);
		mcg_group_names_add_locked(g);
		for (struct mcg_group *a = parent; a; a = a->parent)
			a->nr_descendants++;
	}
	mcg_unlock(&mcg_group_tree_lock);
	if (err) {
		mcg_objcg_put_all(g);
		mcg_group_stat_free(g->pcpu_stat);
		mcg_free(g);
		return err;
	}
	*out = g;
	return 0;
}

mcg_public int mcg_group_remove(mcg_group_t *g)
{
	if (!g || g == &root_group)
		return -EINVAL;
	mcg_lock(&mcg_group_tree_lock);
	int err = 0;
	if (!MCG_READ_ONCE(g->online)) {
		err = -ENOENT;
	} else {
		mcg_list_for_each (pos, &g->children) {
			if (MCG_READ_ONCE(mcg_list_entry(pos, struct mcg_group, sibling)->online)) {
				err = -EBUSY;
				break;
			}
		}
	}
	if (!err) {
		__atomic_store_n(&g->online, 0, __ATOMIC_SEQ_CST);
		mcg_group_names_del_locked(g);
		for (struct mcg_group *a = g->parent; a; a = a->parent) {
			a->nr_descendants--;
			a->nr_dying_descendants++;
		}
		/* Its accounted objects are its parent's from now on. */
		mcg_objcg_reparent_locked(g);
	}
	mcg_unlock(&mcg_group_tree_lock);
	if (err)
		return err;
	/* Its cached objects go to its parent's lists (reclaim/list_lru.c). */
	const struct mcg_group_reclaim_ops *ops = mcg_group_reclaim_ops_get();
	if (ops)
		ops->offline(g);
	/* Its file pages, dirty ones included, are its parent's from now on. */
	const struct mcg_group_file_ops *fops = mcg_group_file_ops_get();
	if (fops)
		fops->offline(g);
	/* A stock caching a dying group would keep it (and its parent) alive. */
	mcg_stock_drain_group(g);
	/* Nor may byte stocks and leftovers keep charges for it. */
	mcg_objcg_offline(g);
	mcg_group_put(g); /* the tree's reference */
	return 0;
}

mcg_public int mcg_group_lookup(mcg_group_t *base, const char *path, mcg_group_t **out)
{
	if (!path || !out)
		return -EINVAL;
	mcg_group_init();
	if (!base)
		base = &root_group;
	if (*path == '/')
		path++;
	int err = 0;
	mcg_lock(&mcg_group_tree_lock);
	struct mcg_group *g = base;
	if (!MCG_READ_ONCE(g->online))
		err = -ENOENT;
	while (!err && *path) {
		const char *slash = strchr(path, '/');
		size_t len = slash ? (size_t)(slash - path) : strlen(path);
		if (len == 0 || len > MCG_GROUP_NAME_MAX) {
			err = -EINVAL;
			break;
		}
		g = mcg_group_names_find_locked(g, path, len);
		if (!g) {
			err = -ENOENT;
			break;
		}
		path += len;
		if (*path == '/')
			path++; /* a trailing '/' is fine */
	}
	if (!err && !mcg_group_tryget(g))
		err = -ENOENT;
	mcg_unlock(&mcg_group_tree_lock);
	if (!err)
		*out = g;
	return err;
}

mcg_public mcg_group_t *mcg_group_next_child(mcg_group_t *parent, mcg_group_t *pos)
{
	if (!parent)
		return NULL;
	struct mcg_group *next = NULL;
	mcg_lock(&mcg_group_tree_lock);
	/* @pos is referenced, so it is still on the list even if removed. */
	struct mcg_list *it = pos ? pos->sibling.next : parent->children.next;
	for (; it != &parent->children; it = it->next) {
		struct mcg_group *c = mcg_list_entry(it, struct mcg_group, sibling);
		if (MCG_READ_ONCE(c->online) && mcg_group_tryget(c)) {
			next = c;
			break;
		}
	}
	mcg_unlock(&mcg_group_tree_lock);
	mcg_group_put(pos);
	return next;
}

mcg_public const char *mcg_group_name(const mcg_group_t *g) { return g ? g->name : ""; }

mcg_public mcg_group_t *mcg_group_parent(const mcg_group_t *g) { return g ? g->parent : NULL; }

mcg_public int mcg_group_is_online(const mcg_group_t *g)
{
	return g && __atomic_load_n(&g->online, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------ thread context */

/* This thread's group and its objcgs (NULL: the root). */
static void set_current(mcg_group_t *g)
{
	mcg_current_group_ = g;
	for (int k = 0; k < MCG_NR_OBJCG_KINDS; k++) {
		mcg_current_objcg_[k] = g ? g->objcg[k] : NULL;
		mcg_current_slot_bits_[k] = g ? g->objcg[k]->slot_bits : MCG_ROOT_SLOT_BITS(k);
	}
}

mcg_public mcg_group_t *mcg_group_enter(mcg_group_t *g)
{
	mcg_group_t *prev = mcg_current_group_;
	set_current(g);
	return prev;
}

mcg_public void mcg_group_leave(mcg_group_t *prev) { set_current(prev); }

mcg_public mcg_group_t *mcg_group_current(void)
{
	mcg_group_t *g = mcg_current_group_;
	return g ? g : mcg_group_root();
}
