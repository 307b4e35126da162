/* SPDX-License-Identifier: MIT */
/*
 * iface/proto.c - the control protocol's parser and commands (see proto.h).
 *
 * A request is split into at most MAX_WORDS words, each percent-decoded
 * into one buffer as long as the line; a command checks its word count
 * before it touches anything, and every change goes through the public
 * group calls, which change nothing on error.  Group paths are looked up
 * afresh for each request (references dropped before the reply goes out).
 *
 * Locks: none of its own.
 */
#include "iface/proto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iface/escape.h"
#include "iface/json.h"
#include "iface/metrics.h"
#include "iface/prom.h"
#include "iface/snapshot.h"
#include "memcg/control.h"
#include "memcg/debug.h"
#include "memcg/group.h"
#include "memcg/kmalloc.h"

#define MAX_WORDS 8

/* ------------------------------------------------------------ replies */

int mcg_control_error(struct mcg_out *reply, int err, const char *fmt, ...)
{
	mcg_out_reset(reply, 0);
	const char *name = strerrorname_np(-err), *desc = strerrordesc_np(-err);
	mcg_out_printf(reply, "error %s %s: ", name ? name : "EIO", desc ? desc : "error");
	size_t at = mcg_out_size(reply);
	va_list ap;
	va_start(ap, fmt);
	mcg_out_vprintf(reply, fmt, ap);
	va_end(ap);
	/* One line whatever the text holds. */
	char *p = reply->buf ? reply->buf + reply->start : NULL;
	for (size_t i = at; p && i < mcg_out_size(reply); i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			p[i] = '?';
	mcg_out_write(reply, "\n", 1);
	if (reply->err) { /* no memory even for that: the shortest line */
		reply->err = 0;
		reply->start = reply->len = 0;
		static const char nomem[] = "error ENOMEM out of memory\n";
		if (reply->cap >= sizeof(nomem))
			mcg_out_write(reply, nomem, sizeof(nomem) - 1);
	}
	return err;
}

/* A word made printable again for an error line (percent-encoded). */
static const char *shown(struct mcg_out *tmp, const char *word)
{
	mcg_out_reset(tmp, 0);
	mcg_percent_encode(tmp, word);
	return tmp->err ? "?" : mcg_out_data(tmp);
}

/* ------------------------------------------------------------ commands */

struct request {
	char *word[MAX_WORDS];
	int nr;
	bool json;
	struct mcg_out *body;
	struct mcg_out *reply; /* for error lines */
	struct mcg_out tmp;    /* scratch for error text */
};

static int lookup(struct request *rq, const char *path, mcg_group_t **g)
{
	int err = mcg_group_lookup(NULL, path, g);
	if (err)
		return mcg_control_error(rq->reply, err, "group %s", shown(&rq->tmp, path));
	return 0;
}

static int cmd_help(struct request *rq);

/* The command line of this process, made one line, at most 512 bytes. */
static void command_line(char *buf, size_t len)
{
	buf[0] = '\0';
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return;
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	buf[n] = '\0';
	for (ssize_t i = 0; i < n; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = buf[i] == '\0' ? ' ' : '?';
}

/* memory.current of the root and the online groups, from their files. */
static void root_figures(long long *current, long long *groups)
{
	char buf[128];
	*current = *groups = 0;
	mcg_group_t *root = mcg_group_root();
	ssize_t n = mcg_group_read(root, "memory.current", buf, sizeof(buf));
	if (n > 0 && (size_t)n < sizeof(buf))
		*current = strtoll(buf, NULL, 10);
	n = mcg_group_read(root, "cgroup.stat", buf, sizeof(buf));
	if (n > 0 && (size_t)n < sizeof(buf) && !strncmp(buf, "nr_descendants ", 15))
		*groups = strtoll(buf + 15, NULL, 10) + 1;
}

static void info_render(struct mcg_out *o, bool json)
{
	char cmd[512], sock[128], metrics[80];
	long long current, groups;
	command_line(cmd, sizeof(cmd));
	root_figures(&current, &groups);
	if (mcg_control_path(sock, sizeof(sock)))
		sock[0] = '\0';
	if (mcg_metrics_address(metrics, sizeof(metrics)))
		metrics[0] = '\0';
	struct mcg_large_stats large;
	mcg_kmalloc_large_stats(&large);
	size_t mapped = mcg_os_mapped_bytes();
	if (!json) {
		mcg_out_printf(o,
		               "pid %ld\nuid %ld\ncommand %s\nprotocol %d\ngroups %lld\n"
		               "memory_current %lld\nsocket %s\nmetrics %s\nmapped_bytes %zu\n"
		               "large_in_use_bytes %zu\nlarge_retained_bytes %zu\n"
		               "large_retained_cap_bytes %zu\n",
		               (long)getpid(), (long)getuid(), cmd, MCG_CONTROL_PROTOCOL, groups,
		               current, sock[0] ? sock : "-", metrics[0] ? metrics : "-", mapped,
		               large.in_use, large.retained, large.cap);
		return;
	}
	mcg_out_printf(o, "{\"pid\":%ld,\"uid\":%ld,\"command\":", (long)getpid(), (long)getuid());
	mcg_json_string(o, cmd, strlen(cmd));
	mcg_out_printf(o, ",\"protocol\":%d,\"groups\":%lld,\"memory_current\":%lld,\"socket\":",
	               MCG_CONTROL_PROTOCOL, groups, current);
	if (sock[0])
		mcg_json_string(o, sock, strlen(sock));
	else
		mcg_out_puts(o, "null");
	mcg_out_puts(o, ",\"metrics\":");
	if (metrics[0])
		mcg_json_string(o, metrics, strlen(metrics));
	else
		mcg_out_puts(o, "null");
	mcg_out_printf(o,
	               ",\"mapped_bytes\":%zu,\"large_in_use_bytes\":%zu,"
	               "\"large_retained_bytes\":%zu,\"large_retained_cap_bytes\":%zu}",
	               mapped, large.in_use, large.retained, large.cap);
}

static int cmd_info(struct request *rq)
{
	info_render(rq->body, rq->json);
	return 0;
}

/* A snapshot of PATH's subtree (rq->word[1], default /) with @flags. */
static int take(struct request *rq, struct mcg_snapshot *s, unsigned flags)
{
	mcg_group_t *g;
	int err = lookup(rq, rq->nr > 1 ? rq->word[1] : "/", &g);
	if (err)
		return err;
	mcg_snapshot_init(s);
	err = mcg_snapshot_take(s, g, flags);
	mcg_group_put(g);
	if (err) {
		mcg_snapshot_free(s);
		return mcg_control_error(rq->reply, err, "snapshot of the groups");
	}
	return 0;
}

static int cmd_groups(struct request *rq)
{
	struct mcg_snapshot s;
	int err = take(rq, &s, 0);
	if (err)
		return err;
	if (rq->json)
		mcg_out_write(rq->body, "[", 1);
	for (size_t i = 0; i < s.nr_groups; i++) {
		const char *path = mcg_snap_path(&s, &s.groups[i]);
		if (rq->json) {
			if (i)
				mcg_out_write(rq->body, ",", 1);
			mcg_json_string(rq->body, path, strlen(path));
		} else {
			mcg_out_printf(rq->body, "%s\n", path);
		}
	}
	if (rq->json)
		mcg_out_write(rq->body, "]", 1);
	mcg_snapshot_free(&s);
	return 0;
}

static int cmd_stat(struct request *rq)
{
	struct mcg_snapshot s;
	int err = take(rq, &s, MCG_SNAP_FILES);
	if (err)
		return err;
	if (rq->json) {
		mcg_json_snapshot(rq->body, &s);
	} else {
		/* As head(1) prints several files. */
		for (size_t i = 0; i < s.nr_groups; i++) {
			const char *path = mcg_snap_path(&s, &s.groups[i]);
			for (int f = 0; f < MCG_SNAP_NR_FILES; f++)
				mcg_out_printf(rq->body, "%s==> %s%s%s <==\n%s", i || f ? "\n" : "",
				               path, path[1] ? "/" : "", mcg_snap_file_name(f),
				               mcg_snap_text(&s, &s.groups[i], f));
		}
	}
	mcg_snapshot_free(&s);
	return 0;
}

static int cmd_read(struct request *rq)
{
	mcg_group_t *g;
	int err = lookup(rq, rq->word[1], &g);
	if (err)
		return err;
	const char *file = rq->word[2];
	struct mcg_out *o = rq->body;
	size_t at = o->len;
	ssize_t n = mcg_group_read(g, file, NULL, 0);
	for (int tries = 0; n >= 0 && tries < 4; tries++) {
		o->len = at;
		mcg_out_write(o, NULL, (size_t)n + 1); /* room for the text and its NUL */
		if (o->err)
			break;
		ssize_t m = mcg_group_read(g, file, o->buf + at, (size_t)n + 1);
		if (m >= 0 && m <= n) {
			o->len = at + (size_t)m;
			n = m;
			break;
		}
		n = m; /* it grew meanwhile: again */
	}
	mcg_group_put(g);
	if (n < 0) {
		o->len = at;
		return mcg_control_error(rq->reply, (int)n, "read %s %s",
		                         shown(&rq->tmp, rq->word[1]), file);
	}
	if (rq->json && !o->err) {
		/* The text ends the body (NUL-terminated): render it, put that instead. */
		struct mcg_out j;
		mcg_out_init(&j);
		mcg_json_file_value(&j, o->buf + at);
		o->len = at;
		if (j.err)
			o->err = j.err;
		else
			mcg_out_write(o, mcg_out_data(&j), mcg_out_size(&j));
		mcg_out_free(&j);
	}
	return 0;
}

static int cmd_write(struct request *rq)
{
	mcg_group_t *g;
	int err = lookup(rq, rq->word[1], &g);
	if (err)
		return err;
	err = mcg_group_write(g, rq->word[2], rq->word[3]);
	mcg_group_put(g);
	if (err)
		return mcg_control_error(rq->reply, err, "write %s %s %s",
		                         shown(&rq->tmp, rq->word[1]), rq->word[2], rq->word[3]);
	return 0;
}

static int cmd_create(struct request *rq)
{
	char *path = rq->word[1];
	char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	mcg_group_t *parent, *g;
	int err;
	if (slash) {
		*slash = '\0';
		err = lookup(rq, path, &parent);
		*slash = '/';
	} else {
		err = lookup(rq, "/", &parent);
	}
	if (err)
		return err;
	err = mcg_group_create(parent, name, &g);
	mcg_group_put(parent);
	if (err)
		return mcg_control_error(rq->reply, err, "create %s", shown(&rq->tmp, path));
	mcg_group_put(g); /* the tree keeps it until `remove` */
	return 0;
}

static int cmd_remove(struct request *rq)
{
	mcg_group_t *g;
	int err = lookup(rq, rq->word[1], &g);
	if (err)
		return err;
	err = mcg_group_remove(g);
	mcg_group_put(g);
	if (err)
		return mcg_control_error(rq->reply, err, "remove %s", shown(&rq->tmp, rq->word[1]));
	return 0;
}

static int cmd_slabinfo(struct request *rq)
{
	struct mcg_snapshot s;
	mcg_snapshot_init(&s);
	int err = mcg_snapshot_take(&s, NULL, MCG_SNAP_CACHES);
	if (err) {
		mcg_snapshot_free(&s);
		return mcg_control_error(rq->reply, err, "slabinfo");
	}
	if (rq->json) {
		mcg_json_caches(rq->body, &s);
	} else {
		mcg_out_puts(rq->body, mcg_slabinfo_header);
		char line[256];
		for (size_t i = 0; i < s.nr_caches; i++) {
			int n = mcg_slabinfo_format(line, sizeof(line), s.caches[i].name,
			                            &s.caches[i].st);
			mcg_out_write(rq->body, line,
			              n < 0 ? 0 : MCG_MIN((size_t)n, sizeof(line) - 1));
		}
	}
	mcg_snapshot_free(&s);
	return 0;
}

static int cmd_metrics(struct request *rq)
{
	struct mcg_snapshot s;
	mcg_snapshot_init(&s);
	int err = mcg_snapshot_take(&s, NULL, MCG_SNAP_FILES | MCG_SNAP_CACHES);
	if (!err)
		mcg_prom_render(rq->body, &s);
	mcg_snapshot_free(&s);
	return err ? mcg_control_error(rq->reply, err, "metrics") : 0;
}

static int cmd_all(struct request *rq)
{
	struct mcg_snapshot s;
	mcg_snapshot_init(&s);
	int err = mcg_snapshot_take(&s, NULL, MCG_SNAP_FILES | MCG_SNAP_CACHES);
	if (!err) {
		struct mcg_out *o = rq->body;
		mcg_out_puts(o, "{\"info\":");
		info_render(o, true);
		mcg_out_puts(o, ",\"groups\":[");
		for (size_t i = 0; i < s.nr_groups; i++) {
			if (i)
				mcg_out_write(o, ",", 1);
			mcg_json_group(o, &s, &s.groups[i]);
		}
		mcg_out_puts(o, "],\"slabinfo\":");
		mcg_json_caches(o, &s);
		mcg_out_write(o, "}", 1);
	}
	mcg_snapshot_free(&s);
	return err ? mcg_control_error(rq->reply, err, "all") : 0;
}

enum form { TEXT = 1, JSON = 2, BOTH = 3 };

static const struct command {
	const char *name;
	int min_args, max_args;
	enum form forms;
	int (*fn)(struct request *rq);
	const char *usage;
} commands[] = {
        {"help", 0, 0, TEXT, cmd_help, "help"},
        {"info", 0, 0, BOTH, cmd_info, "info"},
        {"groups", 0, 1, BOTH, cmd_groups, "groups [PATH]"},
        {"read", 2, 2, BOTH, cmd_read, "read PATH FILE"},
        {"stat", 0, 1, BOTH, cmd_stat, "stat [PATH]"},
        {"write", 3, 3, TEXT, cmd_write, "write PATH FILE VALUE"},
        {"create", 1, 1, TEXT, cmd_create, "create PATH"},
        {"remove", 1, 1, TEXT, cmd_remove, "remove PATH"},
        {"slabinfo", 0, 0, BOTH, cmd_slabinfo, "slabinfo"},
        {"metrics", 0, 0, TEXT, cmd_metrics, "metrics"},
        {"all", 0, 0, JSON, cmd_all, "json all"},
};

static int cmd_help(struct request *rq)
{
	mcg_out_puts(rq->body, "commands (words percent-encoded; \"json\" first for JSON):\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		mcg_out_printf(rq->body, "  %s%s\n", commands[i].usage,
		               commands[i].forms == BOTH ? "   (json too)" : "");
	return 0;
}

/* ------------------------------------------------------------ dispatch */

int mcg_control_handle_line(const char *line, size_t len, struct mcg_out *reply)
{
	if (len && line[len - 1] == '\r')
		len--;
	if (len >= MCG_CONTROL_LINE_MAX)
		return mcg_control_error(reply, -E2BIG, "a request is at most %d bytes",
		                         MCG_CONTROL_LINE_MAX - 1);
	char decoded[MCG_CONTROL_LINE_MAX + MAX_WORDS];
	struct request rq = {.reply = reply}; /* rq.tmp empty, freed on each way out */
	size_t d = 0;
	for (size_t i = 0; i < len;) {
		if (line[i] == ' ' || line[i] == '\t') {
			i++;
			continue;
		}
		size_t j = i;
		while (j < len && line[j] != ' ' && line[j] != '\t')
			j++;
		if (rq.nr == MAX_WORDS)
			return mcg_control_error(reply, -EINVAL, "more than %d words", MAX_WORDS);
		long n = mcg_percent_decode(line + i, j - i, decoded + d);
		if (n < 0)
			return mcg_control_error(reply, -EINVAL,
			                         "word %d: a bad %%-escape or a NUL byte",
			                         rq.nr + 1);
		rq.word[rq.nr++] = decoded + d;
		d += (size_t)n + 1;
		i = j;
	}
	if (rq.nr && !strcmp(rq.word[0], "json")) {
		rq.json = true;
		memmove(rq.word, rq.word + 1, sizeof(rq.word[0]) * (size_t)--rq.nr);
	}
	if (!rq.nr)
		return mcg_control_error(reply, -EINVAL, "an empty request (try: help)");
	const struct command *c = NULL;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(rq.word[0], commands[i].name))
			c = &commands[i];
	if (!c) {
		int e = mcg_control_error(reply, -EINVAL, "unknown command %s (try: help)",
		                          shown(&rq.tmp, rq.word[0]));
		mcg_out_free(&rq.tmp);
		return e;
	}
	if (rq.nr - 1 < c->min_args || rq.nr - 1 > c->max_args)
		return mcg_control_error(reply, -EINVAL, "usage: %s", c->usage);
	if (!(c->forms & (rq.json ? JSON : TEXT)))
		return mcg_control_error(reply, -EINVAL, "%s has no %s form", c->name,
		                         rq.json ? "JSON" : "text");

	/* The body goes after room for the head; errors replace it all. */
	mcg_out_reset(reply, MCG_CONTROL_HEAD);
	if (reply->err)
		return mcg_control_error(reply, reply->err, "reply");
	rq.body = reply;
	int err = c->fn(&rq);
	mcg_out_free(&rq.tmp);
	if (err)
		return err; /* the error line is in place */
	if (reply->err)
		return mcg_control_error(reply, reply->err, "%s: the reply", c->name);
	if (rq.json)
		mcg_out_write(reply, "\n", 1); /* a JSON body is one line */
	char head[MCG_CONTROL_HEAD];
	int n = snprintf(head, sizeof(head), "ok %zu\n", mcg_out_size(reply));
	if (reply->err || mcg_out_prepend(reply, head, (size_t)n))
		return mcg_control_error(reply, -ENOMEM, "%s: the reply", c->name);
	return 0;
}
