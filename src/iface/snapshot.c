/* SPDX-License-Identifier: MIT */
/*
 * iface/snapshot.c - taking a snapshot of a subtree of groups and of the
 * caches (see snapshot.h).
 *
 * The walk is depth first and iterative (a tree may be deep): a stack of
 * (group, child being visited), each visited child referenced through
 * mcg_group_next_child(), so removals during the walk are harmless (a
 * removed group is skipped or seen once).  Paths are built on a stack of
 * lengths into one path buffer.  Files are read after the walk, from the
 * references it kept: the memory.stat of up to STAT_BATCH groups under one
 * scan of the CPU arrays (mcg_objcg_stat_hold), so a scrape stops the
 * arrays of the accounted caches once per batch, not once per group.
 *
 * Locks: none of its own; each mcg_group_read() takes what it takes.
 */
#include "iface/snapshot.h"

#include <errno.h>
#include <string.h>

#include "base/compiler.h"
#include "base/fault.h"
#include "group/objcg.h"
#include "memcg/debug.h" /* mcg_os_mapped_bytes */
#include "memcg/kmalloc.h"

static const char *const file_names[MCG_SNAP_NR_FILES] = {
        [MCG_SNAP_CURRENT] = "memory.current",
        [MCG_SNAP_MIN] = "memory.min",
        [MCG_SNAP_LOW] = "memory.low",
        [MCG_SNAP_HIGH] = "memory.high",
        [MCG_SNAP_MAX] = "memory.max",
        [MCG_SNAP_PEAK] = "memory.peak",
        [MCG_SNAP_STAT] = "memory.stat",
        [MCG_SNAP_EVENTS] = "memory.events",
        [MCG_SNAP_EVENTS_LOCAL] = "memory.events.local",
        [MCG_SNAP_CGROUP_STAT] = "cgroup.stat",
};

const char *mcg_snap_file_name(enum mcg_snap_file f) { return file_names[f]; }

void mcg_snapshot_init(struct mcg_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	mcg_out_init(&s->text);
}

void mcg_snapshot_free(struct mcg_snapshot *s)
{
	mcg_free(s->groups);
	mcg_free(s->caches);
	mcg_out_free(&s->text);
	mcg_snapshot_init(s);
}

/* Room for one more element of @size in *@arr (count @n, capacity *@cap). */
static int grow(void **arr, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 16;
	void *a = mcg_fault_should_fail() ? NULL : mcg_realloc(*arr, ncap * size);
	if (!a)
		return -ENOMEM;
	*arr = a;
	*cap = ncap;
	return 0;
}

/* Append @s and its NUL to the text; its offset. */
static size_t add_text(struct mcg_snapshot *s, const char *str, size_t n)
{
	size_t at = mcg_out_size(&s->text);
	mcg_out_write(&s->text, str, n);
	mcg_out_write(&s->text, "", 1);
	return at;
}

int mcg_snapshot_add_group(struct mcg_snapshot *s, const char *path, unsigned depth,
                           const char *const files[MCG_SNAP_NR_FILES])
{
	if (grow((void **)&s->groups, s->nr_groups, &s->cap_groups, sizeof(*s->groups)))
		return s->err = -ENOMEM;
	struct mcg_snap_group *g = &s->groups[s->nr_groups];
	size_t plen = strlen(path);
	g->path = add_text(s, path, plen);
	g->depth = depth;
	for (int f = 0; f < MCG_SNAP_NR_FILES; f++) {
		const char *t = files ? files[f] : NULL;
		g->file[f] =
		        t ? add_text(s, t, strlen(t)) : g->path + plen; /* the path's NUL: "" */
	}
	if (s->text.err)
		return s->err = -ENOMEM;
	s->nr_groups++;
	return 0;
}

int mcg_snapshot_add_cache(struct mcg_snapshot *s, const char *name, const mcg_cache_stats_t *st)
{
	if (grow((void **)&s->caches, s->nr_caches, &s->cap_caches, sizeof(*s->caches)))
		return s->err = -ENOMEM;
	struct mcg_slabinfo_row *r = &s->caches[s->nr_caches++];
	r->st = *st;
	r->st.name = NULL;
	size_t n = strnlen(name, sizeof(r->name) - 1);
	memcpy(r->name, name, n);
	r->name[n] = '\0';
	return 0;
}

/* ------------------------------------------------------------ taking one */

/* Groups whose memory.stat one scan of the CPU arrays serves, and the room
 * each one's text gets meanwhile (a longer text is read again alone). */
#define STAT_BATCH 256
#define STAT_SLOT 4096

/* The text of file @f of @g appended; its offset (an empty text if unreadable). */
static size_t read_file(struct mcg_snapshot *s, mcg_group_t *g, enum mcg_snap_file f)
{
	struct mcg_out *o = &s->text;
	size_t at = mcg_out_size(o);
	ssize_t n = mcg_group_read(g, file_names[f], NULL, 0);
	for (int tries = 0; n >= 0 && tries < 4; tries++) {
		o->len = o->start + at;
		mcg_out_write(o, NULL, (size_t)n + 1); /* the text and its NUL */
		if (o->err)
			return 0;
		ssize_t m = mcg_group_read(g, file_names[f], o->buf + o->start + at, (size_t)n + 1);
		if (m >= 0 && m <= n) {
			o->len = o->start + at + (size_t)m + 1;
			return at;
		}
		n = m; /* it grew meanwhile: again */
	}
	o->len = o->start + at;
	mcg_out_write(o, "", 1);
	return at;
}

/*
 * Every file of groups [@first, @first + @n) (referenced in @refs).  Their
 * memory.stat first, all under one scan of the CPU arrays
 * (mcg_objcg_stat_hold), into @slots, with no allocation in between.
 */
static void read_batch(struct mcg_snapshot *s, mcg_group_t **refs, size_t first, size_t n,
                       char *slots)
{
	struct mcg_objcg_held held;
	ssize_t len[STAT_BATCH];
	mcg_objcg_stat_hold(&held);
	for (size_t i = 0; i < n; i++)
		len[i] = mcg_group_read(refs[first + i], file_names[MCG_SNAP_STAT],
		                        slots + i * STAT_SLOT, STAT_SLOT);
	mcg_objcg_stat_release();
	for (size_t i = 0; i < n && !s->text.err; i++) {
		struct mcg_snap_group *g = &s->groups[first + i];
		for (int f = 0; f < MCG_SNAP_NR_FILES; f++) {
			if (f != MCG_SNAP_STAT || len[i] < 0 || len[i] >= STAT_SLOT)
				g->file[f] = read_file(s, refs[first + i], f);
			else
				g->file[f] = add_text(s, slots + i * STAT_SLOT, (size_t)len[i]);
		}
	}
}

/* @g's path from the root into @path (emptied first). */
static void path_of(mcg_group_t *g, struct mcg_out *path)
{
	mcg_out_reset(path, 0);
	if (!mcg_group_parent(g)) {
		mcg_out_write(path, "/", 1);
		return;
	}
	/* Names from the leaf up, then reversed name by name. */
	size_t depth = 0;
	for (mcg_group_t *a = g; mcg_group_parent(a); a = mcg_group_parent(a))
		depth++;
	for (size_t level = depth; level > 0; level--) {
		mcg_group_t *a = g;
		for (size_t i = 1; i < level; i++)
			a = mcg_group_parent(a);
		mcg_out_write(path, "/", 1);
		mcg_out_puts(path, mcg_group_name(a));
	}
}

struct frame {
	mcg_group_t *g, *pos; /* pos: the child being visited (referenced) or NULL */
	size_t path_len;      /* the path of g in the path buffer */
};

/* Add @g at @path and @depth, keeping a reference in (*@refs)[]. */
static int add_walked(struct mcg_snapshot *s, mcg_group_t *g, const char *path, unsigned depth,
                      mcg_group_t ***refs, size_t *cap)
{
	size_t n = s->nr_groups;
	if (grow((void **)refs, n, cap, sizeof(**refs)) ||
	    mcg_snapshot_add_group(s, path, depth, NULL))
		return -ENOMEM;
	mcg_group_get(g);
	(*refs)[n] = g;
	return 0;
}

/*
 * The walk: depth first, each group's path added and referenced.  Files
 * are read afterwards (read_batch), so that many memory.stat reads share
 * one scan of the CPU arrays with no allocation among them.
 */
static int walk(struct mcg_snapshot *s, mcg_group_t *base, mcg_group_t ***refs, size_t *cap)
{
	struct mcg_out path;
	mcg_out_init(&path);
	path_of(base, &path);
	struct frame *stack = NULL;
	size_t depth = 0, stack_cap = 0;
	int err = path.err;
	if (!err)
		err = add_walked(s, base, mcg_out_data(&path), 0, refs, cap);
	if (!err && !grow((void **)&stack, 0, &stack_cap, sizeof(*stack)))
		stack[depth++] = (struct frame){base, NULL, mcg_out_size(&path)};
	else if (!err)
		err = -ENOMEM;
	while (depth && !err) {
		struct frame *top = &stack[depth - 1];
		top->pos = mcg_group_next_child(top->g, top->pos);
		if (!top->pos) {
			depth--;
			continue;
		}
		/* The child's path: its parent's, "/" (unless the root's), its name. */
		mcg_group_t *c = top->pos;
		path.len = path.start + top->path_len;
		if (top->path_len > 1)
			mcg_out_write(&path, "/", 1);
		mcg_out_puts(&path, mcg_group_name(c));
		err = path.err;
		if (!err)
			err = add_walked(s, c, mcg_out_data(&path), (unsigned)depth, refs, cap);
		if (!err && grow((void **)&stack, depth, &stack_cap, sizeof(*stack)))
			err = -ENOMEM;
		if (!err)
			stack[depth++] = (struct frame){c, NULL, mcg_out_size(&path)};
	}
	/* Stopped early: drop the references of the children being visited. */
	while (depth)
		mcg_group_put(stack[--depth].pos);
	mcg_free(stack);
	mcg_out_free(&path);
	return err;
}

static int take_caches(struct mcg_snapshot *s)
{
	struct mcg_slabinfo_row *rows = NULL;
	size_t room = 0, n = 0;
	int err = 0;
	for (;;) {
		n = mcg_slabinfo_collect(rows, room);
		if (n <= room)
			break;
		mcg_free(rows);
		room = n + 8;
		rows = mcg_fault_should_fail() ? NULL : mcg_malloc(room * sizeof(*rows));
		if (!rows)
			return -ENOMEM;
	}
	for (size_t i = 0; i < n && !err; i++)
		err = mcg_snapshot_add_cache(s, rows[i].name, &rows[i].st);
	mcg_free(rows);
	return err;
}

int mcg_snapshot_take(struct mcg_snapshot *s, mcg_group_t *base, unsigned flags)
{
	s->nr_groups = s->nr_caches = 0;
	s->err = 0;
	memset(&s->process, 0, sizeof(s->process));
	mcg_out_reset(&s->text, 0);
	if (!base)
		base = mcg_group_root();

	mcg_group_t **refs = NULL;
	size_t cap = 0;
	int err = walk(s, base, &refs, &cap);
	if (!err && (flags & MCG_SNAP_FILES)) {
		size_t batch = MCG_MIN(s->nr_groups, (size_t)STAT_BATCH);
		char *slots = mcg_fault_should_fail() ? NULL : mcg_malloc(batch * STAT_SLOT);
		if (!slots)
			err = -ENOMEM;
		for (size_t first = 0; !err && first < s->nr_groups; first += batch) {
			read_batch(s, refs, first, MCG_MIN(batch, s->nr_groups - first), slots);
			if (s->text.err)
				err = -ENOMEM;
		}
		mcg_free(slots);
	}
	for (size_t i = 0; i < s->nr_groups; i++)
		mcg_group_put(refs[i]);
	mcg_free(refs);
	if (!err && (flags & MCG_SNAP_CACHES)) {
		err = take_caches(s);
		s->process.have = true;
		s->process.mapped = mcg_os_mapped_bytes();
		mcg_kmalloc_large_stats(&s->process.large);
	}
	if (err)
		s->err = err;
	return s->err;
}

/* ------------------------------------------------------------ reading one */

bool mcg_snap_next_kv(const char **text, struct mcg_kv *kv)
{
	const char *p = *text;
	if (!*p)
		return false;
	const char *nl = strchr(p, '\n');
	size_t n = nl ? (size_t)(nl - p) : strlen(p);
	*text = nl ? nl + 1 : p + n;
	const char *sp = memchr(p, ' ', n);
	if (sp) {
		kv->key = p;
		kv->key_len = (size_t)(sp - p);
		kv->val = sp + 1;
		kv->val_len = n - kv->key_len - 1;
	} else {
		kv->key = p;
		kv->key_len = 0;
		kv->val = p;
		kv->val_len = n;
	}
	return true;
}

bool mcg_snap_number(const char *v, size_t n, long long *out)
{
	bool neg = n > 0 && v[0] == '-';
	size_t i = neg;
	if (i == n)
		return false;
	long long x = 0;
	for (; i < n; i++) {
		if (v[i] < '0' || v[i] > '9' || __builtin_mul_overflow(x, 10, &x) ||
		    __builtin_add_overflow(x, v[i] - '0', &x))
			return false;
	}
	*out = neg ? -x : x;
	return true;
}
