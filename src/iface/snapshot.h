/* SPDX-License-Identifier: MIT */
/*
 * iface/snapshot.h - a copy of what the renderers show: a subtree of groups
 * (each one's path and the text of its cgroup v2 files, as mcg_group_read()
 * prints them) and every cache's slabinfo figures.
 *
 * Taking one reads through the public text interface only (the tree walk
 * holds references, never the tree lock between reads); rendering one
 * (iface/json.c, iface/prom.c) is a pure function of it, so the renderers
 * are tested on snapshots built by hand, and the servers write replies
 * with no lock held.
 *
 * Not thread safe: one owner.  Memory from memcg's own allocator, through
 * the fault point.
 */
#ifndef MCG_IFACE_SNAPSHOT_H
#define MCG_IFACE_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>

#include "iface/out.h"
#include "memcg/group.h"
#include "memcg/kmalloc.h" /* struct mcg_large_stats */
#include "slab/slab.h"     /* struct mcg_slabinfo_row */

/* The files of a group a snapshot holds. */
enum mcg_snap_file {
	MCG_SNAP_CURRENT,
	MCG_SNAP_MIN,
	MCG_SNAP_LOW,
	MCG_SNAP_HIGH,
	MCG_SNAP_MAX,
	MCG_SNAP_PEAK,
	MCG_SNAP_STAT,
	MCG_SNAP_EVENTS,
	MCG_SNAP_EVENTS_LOCAL,
	MCG_SNAP_CGROUP_STAT,
	MCG_SNAP_NR_FILES
};

/** mcg_snap_file_name - "memory.current", ... of @f. */
const char *mcg_snap_file_name(enum mcg_snap_file f);

/** One group: offsets into the snapshot's text of NUL-terminated strings. */
struct mcg_snap_group {
	size_t path;                    /* "/" for the root, "/a/b" below */
	size_t file[MCG_SNAP_NR_FILES]; /* each file's text */
	unsigned depth;                 /* below the snapshot's base: 0 for the base */
};

/** The process's memory beside the groups' files (with the caches). */
struct mcg_snap_process {
	bool have;                    /* taken (MCG_SNAP_CACHES) */
	size_t mapped;                /* mcg_os_mapped_bytes(): chunks and large blocks */
	struct mcg_large_stats large; /* mcg_kmalloc_large_stats() */
};

struct mcg_snapshot {
	struct mcg_snap_group *groups; /* depth first, parents before children */
	size_t nr_groups, cap_groups;
	struct mcg_slabinfo_row *caches; /* slabinfo's order */
	size_t nr_caches, cap_caches;
	struct mcg_snap_process process;
	struct mcg_out text;
	int err; /* 0, or -ENOMEM: the snapshot is incomplete */
};

/** mcg_snapshot_init - an empty snapshot. */
void mcg_snapshot_init(struct mcg_snapshot *s);

/** mcg_snapshot_free - free its memory; @s is empty again.  Pair with mcg_snapshot_init(). */
void mcg_snapshot_free(struct mcg_snapshot *s);

/* What mcg_snapshot_take() reads. */
enum mcg_snap_flags {
	MCG_SNAP_FILES = 1u << 0,  /* each group's files (else paths only) */
	MCG_SNAP_CACHES = 1u << 1, /* every cache's slabinfo, and the process's memory */
};

/**
 * mcg_snapshot_take - fill @s (emptied first) with @base's subtree (NULL:
 * the root): the groups' paths, their files with MCG_SNAP_FILES, the
 * caches with MCG_SNAP_CACHES (@flags).
 * Return: 0 or -ENOMEM (s->err: what is there is incomplete).
 * Context: takes the locks mcg_group_read() and slabinfo take, one read at
 * a time, and no other.
 */
int mcg_snapshot_take(struct mcg_snapshot *s, mcg_group_t *base, unsigned flags);

/**
 * mcg_snapshot_add_group - append a group with @path and file texts @files
 * (NULL entries: empty), at @depth.  For mcg_snapshot_take() and for tests
 * that build snapshots by hand.  Return: 0 or -ENOMEM.
 */
int mcg_snapshot_add_group(struct mcg_snapshot *s, const char *path, unsigned depth,
                           const char *const files[MCG_SNAP_NR_FILES]);

/** mcg_snapshot_add_cache - append a cache's figures (@name copied).  Return: 0 or -ENOMEM. */
int mcg_snapshot_add_cache(struct mcg_snapshot *s, const char *name, const mcg_cache_stats_t *st);

/** mcg_snap_path - the path of @g. */
static inline const char *mcg_snap_path(const struct mcg_snapshot *s,
                                        const struct mcg_snap_group *g)
{
	return mcg_out_data(&s->text) + g->path;
}

/** mcg_snap_text - the text of file @f of @g ("" if it was not read). */
static inline const char *mcg_snap_text(const struct mcg_snapshot *s,
                                        const struct mcg_snap_group *g, enum mcg_snap_file f)
{
	return mcg_out_data(&s->text) + g->file[f];
}

/** One line of a file's text: "KEY VALUE", or a VALUE alone (key_len 0). */
struct mcg_kv {
	const char *key, *val;
	size_t key_len, val_len;
};

/**
 * mcg_snap_next_kv - split the next line of *@text into @kv and advance
 * *@text past it.  Return: false at the end of the text.
 */
bool mcg_snap_next_kv(const char **text, struct mcg_kv *kv);

/**
 * mcg_snap_number - @v (@n bytes) as a signed decimal integer into *@out.
 * Return: false if it is not one (e.g. "max").
 */
bool mcg_snap_number(const char *v, size_t n, long long *out);

#endif /* MCG_IFACE_SNAPSHOT_H */
