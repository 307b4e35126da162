/* SPDX-License-Identifier: MIT */
/*
 * memcg/group.h - memory groups: a hierarchy with cgroup v2 memory limits.
 *
 * The root group is the whole process; it exists implicitly (mcg_group_root()).
 * Every other group has a parent and a name unique among its siblings, and is
 * found by its path from the root ("tenant-a/queries").  A group's usage is
 * charged in pages (MCG_GROUP_PAGE_SIZE bytes) to it and every ancestor; each
 * level enforces its own memory.max.
 *
 * Lifetime: a group lives while it has references.  The tree holds one while
 * the group is online; mcg_group_create() and mcg_group_lookup() give the
 * caller another, dropped with mcg_group_put().  mcg_group_remove() takes the
 * group offline (it leaves lookups and iteration, and counts as a "dying"
 * descendant of its ancestors) and drops the tree's reference; the memory
 * goes when the last reference does.
 *
 * Charges go through a per-CPU stock (up to MCG_GROUP_STOCK_PAGES pages for
 * each of MCG_GROUP_STOCK_ENTRIES groups per CPU; a group's entry also
 * serves its children), so a group's counters, which include the pages
 * stocked for it and its descendants, may run ahead of what is in use by
 * at most MCG_GROUP_STOCK_SLACK_PAGES x CPUs pages while threads run; after
 * mcg_group_drain_stocks() they are exact.
 *
 * Every call is thread safe.  Calls return 0 or -errno; on -EINVAL nothing
 * changed.
 */
#ifndef MEMCG_GROUP_H
#define MEMCG_GROUP_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The unit of charging, in bytes. */
#define MCG_GROUP_PAGE_SIZE 4096u
/** Longest group name, without the terminating NUL. */
#define MCG_GROUP_NAME_MAX 63
/** Pages one entry of a CPU's charge stock holds at most (the kernel's MEMCG_CHARGE_BATCH). */
#define MCG_GROUP_STOCK_PAGES 64u
/** Groups one CPU's charge stock holds at once (the kernel's NR_MEMCG_STOCK). */
#define MCG_GROUP_STOCK_ENTRIES 7u
/** Pages one CPU's stock holds at most: counters run ahead by this x CPUs at most. */
#define MCG_GROUP_STOCK_SLACK_PAGES (MCG_GROUP_STOCK_PAGES * MCG_GROUP_STOCK_ENTRIES)

typedef struct mcg_group mcg_group_t;

/** mcg_group_root - the root group (the whole process); never freed, no reference needed. */
mcg_group_t *mcg_group_root(void);

/**
 * mcg_group_create - create group @name under @parent (NULL: the root).
 * @name: 1..MCG_GROUP_NAME_MAX bytes, no '/', not "." or "..".
 * @out: receives the group, with a reference for the caller (mcg_group_put()).
 * Return: 0; -EINVAL (bad name or arguments); -EEXIST (a sibling has that
 * name); -ENOENT (@parent was removed); -ENOSPC (21 844 groups besides
 * the root exist, counting removed ones whose objects are still charged:
 * an accounted object records a 16-bit id, as the kernel's memcg ids
 * are 16-bit); -ENOMEM.
 */
int mcg_group_create(mcg_group_t *parent, const char *name, mcg_group_t **out);

/**
 * mcg_group_remove - take @g offline, as rmdir of a cgroup.  Its stocks are
 * drained.  Its accounted objects (memcg/kmalloc.h, MCG_CACHE_ACCOUNT) are
 * charged to its parent from now on (their objcgs are reparented at once):
 * they neither keep @g alive nor need touching.  Pages charged with
 * mcg_charge() stay charged to @g and its ancestors until mcg_uncharge().
 * Pair with the caller's own mcg_group_put() to let it go.
 * Return: 0; -EINVAL (root or NULL); -EBUSY (it has online children);
 * -ENOENT (already removed).
 */
int mcg_group_remove(mcg_group_t *g);

/**
 * mcg_group_lookup - find the online group at @path below @base (NULL: the
 * root).  @path is names separated by '/'; a leading '/' is allowed; ""
 * names @base itself.  *@out gets a reference (mcg_group_put()).
 * Return: 0; -ENOENT (no such online group); -EINVAL (bad path).
 */
int mcg_group_lookup(mcg_group_t *base, const char *path, mcg_group_t **out);

/** mcg_group_get - take a reference to @g (one the caller already holds or the tree holds). */
void mcg_group_get(mcg_group_t *g);

/** mcg_group_put - drop a reference; the last one frees a removed group.  NULL is ignored. */
void mcg_group_put(mcg_group_t *g);

/**
 * mcg_group_next_child - iterate over @parent's online children, oldest first:
 *
 *	mcg_group_t *c = NULL;
 *	while ((c = mcg_group_next_child(parent, c)))
 *		use(c);
 *
 * Return: the child after @pos (NULL: the first) with a reference, or NULL
 * at the end.  The reference on @pos is dropped.  To stop early, put the
 * last returned child.  Children created or removed meanwhile may or may not
 * be seen; none is seen twice.
 */
mcg_group_t *mcg_group_next_child(mcg_group_t *parent, mcg_group_t *pos);

/** mcg_group_name - @g's name ("" for the root); valid while @g is referenced. */
const char *mcg_group_name(const mcg_group_t *g);

/** mcg_group_parent - @g's parent (NULL for the root); no reference taken. */
mcg_group_t *mcg_group_parent(const mcg_group_t *g);

/** mcg_group_is_online - 1 until mcg_group_remove(@g), then 0. */
int mcg_group_is_online(const mcg_group_t *g);

/* ------------------------------------------------------------ thread context */

/**
 * mcg_group_enter - make @g this thread's current group (the kernel's
 * set_active_memcg).  The caller keeps @g referenced while it is current.
 * Return: the previous current group (NULL: none), for mcg_group_leave().
 */
mcg_group_t *mcg_group_enter(mcg_group_t *g);

/** mcg_group_leave - restore @prev (what mcg_group_enter() returned). */
void mcg_group_leave(mcg_group_t *prev);

/** mcg_group_current - this thread's current group; the root when none was entered. */
mcg_group_t *mcg_group_current(void);

/* ------------------------------------------------------------ charging */

/** Flags of mcg_charge(). */
enum mcg_charge_flags {
	/** Charge even over memory.max (counted as a max event and in charge_forced). */
	MCG_CHARGE_FORCE = 1u << 0,
	/** Do not call the reclaim hook (only drain stocks) before failing. */
	MCG_CHARGE_NORECLAIM = 1u << 1,
	/**
	 * The caller cannot sleep: over memory.high, hand the reclaim to the
	 * background worker instead of reclaiming and throttling in this
	 * thread (memcg/reclaim.h).  Over memory.max it still reclaims.
	 */
	MCG_CHARGE_NOWAIT = 1u << 2,
};

/**
 * mcg_charge - charge @nr_pages to @g (NULL: the current group) and its
 * ancestors, for memory the application manages itself (memory.stat "anon").
 * Over some ancestor's memory.max: count its "max" event, call the reclaim
 * hook on it, drain the stocks, retry while the hook makes progress, and
 * finally count "oom" and fail.  Over memory.high afterwards: count "high"
 * on each group over it and call the high hook.
 * Return: 0; -ENOMEM (over max); -EINVAL (@nr_pages 0 or too large, bad flags).
 * Pair with mcg_uncharge() on the same group.
 */
int mcg_charge(mcg_group_t *g, unsigned long nr_pages, unsigned flags);

/**
 * mcg_uncharge - give back @nr_pages charged to @g (NULL: the current group)
 * by mcg_charge().  Return: 0, or -EINVAL (@nr_pages 0 or too large).
 */
int mcg_uncharge(mcg_group_t *g, unsigned long nr_pages);

/**
 * mcg_group_drain_stocks - return every CPU's stocked pages to their groups'
 * counters, so that usage is exact for what is charged.  Costs one
 * membarrier; for tests, tools and the charge slow path.
 */
void mcg_group_drain_stocks(void);

/**
 * Reclaim hook: called on @over (the group whose memory.max a charge hit)
 * asking for @nr_pages.  Return: pages freed (uncharged), 0 for none.
 * Runs in the charging thread with no memcg lock held.
 */
typedef unsigned long (*mcg_group_reclaim_fn)(mcg_group_t *over, unsigned long nr_pages, void *arg);

/** High hook: @over went above its memory.high by a charge of @nr_pages. */
typedef void (*mcg_group_high_fn)(mcg_group_t *over, unsigned long nr_pages, void *arg);

/** mcg_group_set_reclaim_hook - install @fn (NULL: none) with @arg, process-wide. */
void mcg_group_set_reclaim_hook(mcg_group_reclaim_fn fn, void *arg);

/** mcg_group_set_high_hook - install @fn (NULL: none) with @arg, process-wide. */
void mcg_group_set_high_hook(mcg_group_high_fn fn, void *arg);

/* ------------------------------------------------------------ cgroup v2 files */

/**
 * mcg_group_read - the text of file @file of @g, as cgroup v2 prints it:
 * "memory.current", "memory.min", "memory.low", "memory.high", "memory.max",
 * "memory.peak", "memory.stat", "memory.events", "memory.events.local",
 * "cgroup.stat".  Values in bytes, "max" for unlimited, one trailing newline.
 * Writes at most @len bytes including a NUL (like snprintf; @buf may be NULL
 * when @len is 0).
 * Return: the text's length (>= @len means truncated), -ENOENT (no such
 * file), -EACCES (write-only: memory.reclaim) or -EINVAL.
 */
ssize_t mcg_group_read(mcg_group_t *g, const char *file, char *buf, size_t len);

/**
 * mcg_group_write - write @text to file @file of @g: "memory.min",
 * "memory.low", "memory.high", "memory.max" accept bytes (rounded down to
 * pages) with an optional K/M/G/T suffix (powers of 1024), or "max";
 * trailing whitespace (a newline) is tolerated.  Lowering memory.max below
 * the usage drains the stocks and reclaims (memcg/reclaim.h) and calls the
 * reclaim hook.  "memory.reclaim" (write-only, the root too) reclaims that
 * many bytes from the subtree (memcg/reclaim.h).
 * Return: 0; -EINVAL (bad value, or the root's limits: nothing changed);
 * -EACCES (a read-only file); -ENOENT (no such file); -EAGAIN
 * (memory.reclaim could not reclaim that much).
 */
int mcg_group_write(mcg_group_t *g, const char *file, const char *text);

#ifdef __cplusplus
}
#endif
#endif /* MEMCG_GROUP_H */
