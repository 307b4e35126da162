/* SPDX-License-Identifier: MIT */
/*
 * tools/cmd_top.c - `memcg top -p PID`: a live view of a running process's
 * groups and caches, refreshed every second in a plain terminal (ANSI
 * escapes, no curses).
 *
 * Each refresh asks the process for its metrics (the `metrics` request: the
 * Prometheus text format, iface/prom.h) and parses them back: per group
 * memory.current / high / max / peak, the reclaim rate (memory.stat pgsteal,
 * pages, since the last refresh) and the rates of the low / high / max / oom
 * events (memory.events, the group and its descendants); per cache
 * slabtop's columns.  The groups are drawn as their tree, siblings sorted by
 * the chosen key; the largest caches (by cache size) below.
 *
 * Keys: c current, p peak, h high, m max, r reclaim, e events, o oom, n
 * name (the tree's own order); q quits (so does ^C).  --once prints one
 * frame after one interval (the rates need two samples) and exits;
 * --json prints frames as JSON, one line each.  When the process exits, top
 * says so and exits with status 0.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "commands.h"
#include "iface/escape.h"

/* ------------------------------------------------------------ the model */

enum { EV_LOW, EV_HIGH, EV_MAX, EV_OOM, NR_EV };
static const char *const ev_names[NR_EV] = {"low", "high", "max", "oom"};

struct group {
	char *path;
	double current, high, max, peak, pgsteal; /* NAN: not sampled */
	double events[NR_EV];
	/* rates since the previous sample (NAN: none yet) */
	double reclaim_rate, event_rate[NR_EV];
	int parent; /* index, -1 for the root */
	int order;  /* position in the process's own (depth-first) order */
	unsigned depth;
};

struct cache {
	char *name;
	double active, total, objsize, per_slab, slabs, slab_size;
};

struct sample {
	struct group *g;
	int ng, capg;
	struct cache *c;
	int nc, capc;
	double when; /* seconds, CLOCK_MONOTONIC */
};

static void sample_free(struct sample *s)
{
	for (int i = 0; i < s->ng; i++)
		free(s->g[i].path);
	for (int i = 0; i < s->nc; i++)
		free(s->c[i].name);
	free(s->g);
	free(s->c);
	memset(s, 0, sizeof(*s));
}

static struct group *group_of(struct sample *s, const char *path)
{
	for (int i = 0; i < s->ng; i++)
		if (!strcmp(s->g[i].path, path))
			return &s->g[i];
	if (s->ng == s->capg) {
		s->capg = s->capg ? s->capg * 2 : 32;
		s->g = realloc(s->g, (size_t)s->capg * sizeof(*s->g));
		if (!s->g)
			abort();
	}
	struct group *g = &s->g[s->ng];
	memset(g, 0, sizeof(*g));
	g->path = strdup(path);
	g->current = g->high = g->max = g->peak = g->pgsteal = NAN;
	g->reclaim_rate = NAN;
	for (int e = 0; e < NR_EV; e++)
		g->events[e] = g->event_rate[e] = NAN;
	g->order = s->ng++;
	return g;
}

static struct cache *cache_of(struct sample *s, const char *name)
{
	for (int i = 0; i < s->nc; i++)
		if (!strcmp(s->c[i].name, name))
			return &s->c[i];
	if (s->nc == s->capc) {
		s->capc = s->capc ? s->capc * 2 : 32;
		s->c = realloc(s->c, (size_t)s->capc * sizeof(*s->c));
		if (!s->c)
			abort();
	}
	struct cache *c = &s->c[s->nc++];
	memset(c, 0, sizeof(*c));
	c->name = strdup(name);
	return c;
}

/* ------------------------------------------------------------ parsing the metrics */

#define MAX_LABELS 4

struct line {
	char name[64];
	char key[MAX_LABELS][32];
	char val[MAX_LABELS][512];
	int nl;
	double value;
};

/* Parse "name{k="v",...} value"; false for comments and anything else. */
static bool parse_line(const char *p, const char *end, struct line *l)
{
	size_t n = 0;
	l->nl = 0;
	while (p < end && (*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
	                   (*p >= '0' && *p <= '9') || *p == ':')) {
		if (n + 1 < sizeof(l->name))
			l->name[n++] = *p;
		p++;
	}
	l->name[n] = '\0';
	if (!n)
		return false;
	if (p < end && *p == '{') {
		p++;
		while (p < end && *p != '}') {
			if (l->nl == MAX_LABELS)
				return false;
			char *k = l->key[l->nl], *v = l->val[l->nl];
			size_t kn = 0, vn = 0;
			while (p < end && *p != '=') {
				if (kn + 1 < sizeof(l->key[0]))
					k[kn++] = *p;
				p++;
			}
			k[kn] = '\0';
			if (p + 1 >= end || p[1] != '"')
				return false;
			p += 2;
			while (p < end && *p != '"') {
				char ch = *p++;
				if (ch == '\\' && p < end) {
					ch = *p++;
					if (ch == 'n')
						ch = '\n';
				}
				if (vn + 1 < sizeof(l->val[0]))
					v[vn++] = ch;
			}
			v[vn] = '\0';
			if (p >= end)
				return false;
			p++; /* the closing quote */
			if (p < end && *p == ',')
				p++;
			l->nl++;
		}
		if (p >= end)
			return false;
		p++;
	}
	if (p >= end || *p != ' ')
		return false;
	char buf[64];
	size_t vl =
	        (size_t)(end - p - 1) < sizeof(buf) - 1 ? (size_t)(end - p - 1) : sizeof(buf) - 1;
	memcpy(buf, p + 1, vl);
	buf[vl] = '\0';
	l->value = !strcmp(buf, "+Inf") ? INFINITY : strtod(buf, NULL);
	return true;
}

static const char *label(const struct line *l, const char *key)
{
	for (int i = 0; i < l->nl; i++)
		if (!strcmp(l->key[i], key))
			return l->val[i];
	return NULL;
}

/* Fill @s from the exposition text @text. */
static void parse_metrics(struct sample *s, const char *text)
{
	struct line l;
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		const char *end = nl ? nl : p + strlen(p);
		if (*p != '#' && parse_line(p, end, &l)) {
			const char *path = label(&l, "group"), *cname = label(&l, "cache");
			if (path) {
				struct group *g = group_of(s, path);
				const char *ev = label(&l, "event"), *item = label(&l, "item");
				if (!strcmp(l.name, "memcg_memory_current_bytes"))
					g->current = l.value;
				else if (!strcmp(l.name, "memcg_memory_high_bytes"))
					g->high = l.value;
				else if (!strcmp(l.name, "memcg_memory_max_bytes"))
					g->max = l.value;
				else if (!strcmp(l.name, "memcg_memory_peak_bytes"))
					g->peak = l.value;
				else if (!strcmp(l.name, "memcg_memory_stat_total") && item &&
				         !strcmp(item, "pgsteal"))
					g->pgsteal = l.value;
				else if (!strcmp(l.name, "memcg_memory_events_total") && ev)
					for (int e = 0; e < NR_EV; e++)
						if (!strcmp(ev, ev_names[e]))
							g->events[e] = l.value;
			} else if (cname) {
				struct cache *c = cache_of(s, cname);
				const char *state = label(&l, "state");
				if (!strcmp(l.name, "memcg_slab_objects") && state) {
					if (!strcmp(state, "active"))
						c->active = l.value;
					else if (!strcmp(state, "total"))
						c->total = l.value;
				} else if (!strcmp(l.name, "memcg_slab_slabs") && state &&
				           !strcmp(state, "total")) {
					c->slabs = l.value;
				} else if (!strcmp(l.name, "memcg_slab_object_size_bytes")) {
					c->objsize = l.value;
				} else if (!strcmp(l.name, "memcg_slab_objects_per_slab")) {
					c->per_slab = l.value;
				} else if (!strcmp(l.name, "memcg_slab_slab_size_bytes")) {
					c->slab_size = l.value;
				}
			}
		}
		p = nl ? nl + 1 : end;
	}
	/* The tree: each group's parent is the longest path before its last '/'. */
	for (int i = 0; i < s->ng; i++) {
		struct group *g = &s->g[i];
		g->parent = -1;
		g->depth = 0;
		if (!strcmp(g->path, "/"))
			continue;
		char parent[4096];
		snprintf(parent, sizeof(parent), "%s", g->path);
		char *slash = strrchr(parent, '/');
		if (slash == parent)
			slash[1] = '\0';
		else if (slash)
			*slash = '\0';
		for (int j = 0; j < s->ng; j++)
			if (!strcmp(s->g[j].path, parent))
				g->parent = j;
		for (const char *c = g->path; *c; c++)
			g->depth += *c == '/';
	}
}

/* Rates of @now against @prev (same paths). */
static void rates(struct sample *now, const struct sample *prev)
{
	double dt = now->when - prev->when;
	if (dt <= 0)
		return;
	for (int i = 0; i < now->ng; i++) {
		struct group *g = &now->g[i];
		for (int j = 0; j < prev->ng; j++) {
			const struct group *o = &prev->g[j];
			if (strcmp(o->path, g->path))
				continue;
			g->reclaim_rate = (g->pgsteal - o->pgsteal) * 4096 / dt;
			for (int e = 0; e < NR_EV; e++)
				g->event_rate[e] = (g->events[e] - o->events[e]) / dt;
		}
	}
}

/* ------------------------------------------------------------ sorting */

static const struct {
	char key;
	const char *name;
} sort_keys[] = {{'n', "name"}, {'c', "current"}, {'p', "peak"},   {'h', "high"},
                 {'m', "max"},  {'r', "reclaim"}, {'e', "events"}, {'o', "oom"}};

static char sort_key = 'n';
static const struct sample *sorting;

static double sort_value(const struct group *g)
{
	switch (sort_key) {
	case 'c': return g->current;
	case 'p': return g->peak;
	case 'h': return g->high;
	case 'm': return g->max;
	case 'r': return g->reclaim_rate;
	case 'o': return g->event_rate[EV_OOM];
	case 'e': {
		double sum = 0;
		for (int e = 0; e < NR_EV; e++)
			sum += isnan(g->event_rate[e]) ? 0 : g->event_rate[e];
		return sum;
	}
	default: return 0;
	}
}

/* Largest first (NAN last); ties and 'n' in the process's order. */
static int by_key(const void *a, const void *b)
{
	const struct group *x = &sorting->g[*(const int *)a], *y = &sorting->g[*(const int *)b];
	double vx = sort_value(x), vy = sort_value(y);
	if (isnan(vx))
		vx = -INFINITY;
	if (isnan(vy))
		vy = -INFINITY;
	if (vx != vy)
		return vx < vy ? 1 : -1;
	return x->order - y->order;
}

/* The groups under @parent (-1: the top) in display order, appended to @out at @n; the new
 * count.  Siblings sorted by the key, each followed by its subtree. */
static int tree_order(const struct sample *s, int parent, int *out, int n)
{
	int *kids = malloc(sizeof(int) * (size_t)(s->ng + 1)), nk = 0;
	if (!kids)
		return n;
	for (int i = 0; i < s->ng; i++)
		if (s->g[i].parent == parent)
			kids[nk++] = i;
	sorting = s;
	qsort(kids, (size_t)nk, sizeof(int), by_key);
	for (int k = 0; k < nk; k++) {
		out[n++] = kids[k];
		n = tree_order(s, kids[k], out, n);
	}
	free(kids);
	return n;
}

/* ------------------------------------------------------------ drawing */

static void human(char *buf, size_t len, double v)
{
	if (isnan(v))
		snprintf(buf, len, "-");
	else if (isinf(v))
		snprintf(buf, len, "max");
	else if (v < 1024)
		snprintf(buf, len, "%.0f", v);
	else if (v < 1024 * 1024)
		snprintf(buf, len, "%.1fK", v / 1024);
	else if (v < 1024.0 * 1024 * 1024)
		snprintf(buf, len, "%.1fM", v / (1024 * 1024));
	else
		snprintf(buf, len, "%.1fG", v / (1024.0 * 1024 * 1024));
}

/* @s cut or padded with spaces to @cols terminal columns (one per UTF-8 character). */
static void put_cols(const char *s, int cols)
{
	int used = 0;
	const char *p = s;
	for (; *p; p++) {
		bool starts = ((unsigned char)*p & 0xc0) != 0x80;
		if (starts && used == cols)
			break;
		used += starts;
	}
	printf("%.*s%*s", (int)(p - s), s, cols - used, "");
}

static void rate(char *buf, size_t len, double v)
{
	if (isnan(v))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f", v);
}

static int by_cache_size(const void *a, const void *b)
{
	const struct cache *x = a, *y = b;
	double sx = x->slabs * x->slab_size, sy = y->slabs * y->slab_size;
	return sx < sy ? 1 : sx > sy ? -1 : strcmp(x->name, y->name);
}

struct view {
	pid_t pid;
	char command[256];
	double delay;
	int caches; /* rows of caches */
	bool ansi;  /* a terminal: escapes and a screen's height */
};

static void draw(const struct view *v, struct sample *s)
{
	int rows = 1000000;
	struct winsize ws;
	if (v->ansi && ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0)
		rows = ws.ws_row;
	const char *eol = v->ansi ? "\033[K\n" : "\n";
	int line = 0;
	if (v->ansi)
		fputs("\033[H", stdout);
	const char *kname = "name";
	for (size_t i = 0; i < sizeof(sort_keys) / sizeof(sort_keys[0]); i++)
		if (sort_keys[i].key == sort_key)
			kname = sort_keys[i].name;
	time_t t = time(NULL);
	char tbuf[16];
	strftime(tbuf, sizeof(tbuf), "%H:%M:%S", localtime(&t));
	printf("memcg top - pid %ld %.60s - %s - %d groups - every %.1f s - sort: %s%s",
	       (long)v->pid, v->command, tbuf, s->ng, v->delay, kname, eol);
	printf("keys: c current  p peak  h high  m max  r reclaim  e events  o oom  n name  "
	       "q quit%s",
	       eol);
	line += 2;
	printf("%s", eol);
	line++;
	printf("%s%-32s %9s %9s %9s %9s %10s %7s %7s %7s %7s%s%s", v->ansi ? "\033[7m" : "",
	       "GROUP", "CURRENT", "HIGH", "MAX", "PEAK", "RECLAIM/s", "LOW/s", "HIGH/s", "MAX/s",
	       "OOM/s", v->ansi ? "\033[0m" : "", eol);
	line++;
	int *order = malloc(sizeof(int) * (size_t)(s->ng + 1));
	int n = order ? tree_order(s, -1, order, 0) : 0;
	int room_groups = rows - line - (v->caches ? v->caches + 3 : 0) - 1;
	for (int k = 0; k < n && (k < room_groups || !v->ansi); k++) {
		const struct group *g = &s->g[order[k]];
		char name[320], c[16], h[16], m[16], p[16], r[16], e[NR_EV][16];
		const char *base = strrchr(g->path, '/');
		base = g->depth && base ? base + 1 : g->path;
		snprintf(name, sizeof(name), "%*s%s", (int)(2 * g->depth), "",
		         g->depth ? base : "/");
		human(c, sizeof(c), g->current);
		human(h, sizeof(h), g->high);
		human(m, sizeof(m), g->max);
		human(p, sizeof(p), g->peak);
		human(r, sizeof(r), g->reclaim_rate);
		for (int ev = 0; ev < NR_EV; ev++)
			rate(e[ev], sizeof(e[ev]), g->event_rate[ev]);
		put_cols(name, 32);
		printf(" %9s %9s %9s %9s %10s %7s %7s %7s %7s%s", c, h, m, p, r, e[EV_LOW],
		       e[EV_HIGH], e[EV_MAX], e[EV_OOM], eol);
		line++;
	}
	free(order);
	if (v->caches) {
		printf("%s", eol);
		printf("%s%9s %9s %4s %8s %8s %8s %10s %-20s%s%s", v->ansi ? "\033[7m" : "", "OBJS",
		       "ACTIVE", "USE", "OBJ SIZE", "SLABS", "OBJ/SLAB", "CACHE SIZE", "NAME",
		       v->ansi ? "\033[0m" : "", eol);
		qsort(s->c, (size_t)s->nc, sizeof(*s->c), by_cache_size);
		for (int i = 0; i < s->nc && i < v->caches; i++) {
			const struct cache *c = &s->c[i];
			printf("%9.0f %9.0f %3.0f%% %7.2fK %8.0f %8.0f %9.0fK %-20s%s", c->total,
			       c->active, c->total ? 100 * c->active / c->total : 0,
			       c->objsize / 1024, c->slabs, c->per_slab,
			       c->slabs * c->slab_size / 1024, c->name, eol);
		}
	}
	if (v->ansi)
		fputs("\033[J", stdout);
	fflush(stdout);
}

static void json_number(double v)
{
	if (isnan(v))
		fputs("null", stdout);
	else if (isinf(v))
		fputs("\"max\"", stdout);
	else
		printf("%.17g", v);
}

static void json_str(const char *s)
{
	struct mcg_out o;
	mcg_out_init(&o);
	mcg_json_string(&o, s, strlen(s));
	fwrite(mcg_out_data(&o), 1, mcg_out_size(&o), stdout);
	mcg_out_free(&o);
}

static void draw_json(const struct view *v, struct sample *s)
{
	printf("{\"pid\":%ld,\"time\":%ld,\"interval_s\":%.3f,\"sort\":\"%c\",\"groups\":[",
	       (long)v->pid, (long)time(NULL), v->delay, sort_key);
	int *order = malloc(sizeof(int) * (size_t)(s->ng + 1));
	int n = order ? tree_order(s, -1, order, 0) : 0;
	for (int k = 0; k < n; k++) {
		const struct group *g = &s->g[order[k]];
		printf("%s{\"path\":", k ? "," : "");
		json_str(g->path);
		const double vals[] = {g->current, g->high, g->max, g->peak, g->reclaim_rate};
		const char *names[] = {"current", "high", "max", "peak", "reclaim_bytes_per_s"};
		for (int i = 0; i < 5; i++) {
			printf(",\"%s\":", names[i]);
			json_number(vals[i]);
		}
		printf(",\"events_per_s\":{");
		for (int e = 0; e < NR_EV; e++) {
			printf("%s\"%s\":", e ? "," : "", ev_names[e]);
			json_number(g->event_rate[e]);
		}
		printf("}}");
	}
	free(order);
	printf("],\"slab\":[");
	qsort(s->c, (size_t)s->nc, sizeof(*s->c), by_cache_size);
	for (int i = 0; i < s->nc && i < v->caches; i++) {
		const struct cache *c = &s->c[i];
		printf("%s{\"name\":", i ? "," : "");
		json_str(c->name);
		printf(",\"objs\":%.0f,\"active\":%.0f,\"obj_size\":%.0f,\"slabs\":%.0f,"
		       "\"obj_per_slab\":%.0f,\"cache_size\":%.0f}",
		       c->total, c->active, c->objsize, c->slabs, c->per_slab,
		       c->slabs * c->slab_size);
	}
	printf("]}\n");
	fflush(stdout);
}

/* ------------------------------------------------------------ the loop */

static volatile sig_atomic_t top_stop;
static void on_signal(int sig) { top_stop = sig; }

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One sample into @s.  Return 0, or -errno: the process is gone (said). */
static int take_sample(struct client *c, pid_t pid, const char *sock, struct sample *s)
{
	const char *w[] = {"metrics"};
	char *body = NULL, msg[256];
	size_t len;
	int err = -EPIPE;
	for (int attempt = 0; attempt < 2 && (err == -EPIPE); attempt++) {
		if (c->fd < 0) {
			err = client_connect(c, pid, sock);
			if (err)
				break;
		}
		err = client_request(c, w, 1, &body, &len, msg, sizeof(msg), 10000);
		if (err == -EPIPE)
			client_close(c); /* timed out on the server's side, or gone: again */
	}
	if (err)
		return err;
	sample_free(s);
	s->when = now_s();
	parse_metrics(s, body);
	free(body);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: memcg top (-p PID | -S SOCKET) [-d SECONDS] [-s KEY] [-n CACHES]\n"
	           "                 [--once] [--json]\n"
	           "  A live view of a process's memory groups (current, high, max, peak,\n"
	           "  reclaim and event rates since the last refresh) and its largest slab\n"
	           "  caches, every SECONDS (default 1).  Keys: c current, p peak, h high,\n"
	           "  m max, r reclaim, e events, o oom, n name (tree order); q quits.\n"
	           "  --once: one frame after one interval, then exit.  --json: frames as\n"
	           "  JSON lines.  -s KEY: the sort key to start with.  -n: caches shown\n"
	           "  (default 10, 0: none).\n");
}

int mcg_cmd_top(int argc, char **argv)
{
	pid_t pid = 0;
	const char *sock = NULL;
	bool once = false, json = false;
	struct view v = {.delay = 1.0, .caches = 10};
	for (int i = 1; i < argc;) {
		int t = client_take_target(argc, argv, &i, &pid, &sock, "top");
		if (t < 0)
			return 2;
		if (t)
			continue;
		const char *a = argv[i++];
		if (!strcmp(a, "--once")) {
			once = true;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else if ((!strcmp(a, "-d") || !strcmp(a, "--delay")) && i < argc) {
			v.delay = strtod(argv[i++], NULL);
			if (!(v.delay >= 0.05 && v.delay <= 3600)) {
				fprintf(stderr, "memcg top: the delay is 0.05 .. 3600 seconds\n");
				return 2;
			}
		} else if ((!strcmp(a, "-s") || !strcmp(a, "--sort")) && i < argc) {
			const char *k = argv[i++];
			sort_key = 0;
			for (size_t j = 0; j < sizeof(sort_keys) / sizeof(sort_keys[0]); j++)
				if (!strcmp(k, sort_keys[j].name) ||
				    (k[0] == sort_keys[j].key && !k[1]))
					sort_key = sort_keys[j].key;
			if (!sort_key) {
				fprintf(stderr, "memcg top: unknown sort key '%s'\n", k);
				return 2;
			}
		} else if (!strcmp(a, "-n") && i < argc) {
			v.caches = atoi(argv[i++]);
			if (v.caches < 0 || v.caches > 1000) {
				fprintf(stderr, "memcg top: -n is 0 .. 1000\n");
				return 2;
			}
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "memcg top: unknown option '%s'\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (!pid && !sock) {
		usage(stderr);
		return 2;
	}
	struct client c = {.fd = -1};
	int err = client_connect(&c, pid, sock);
	if (err) {
		client_explain("top", pid, sock, err);
		return 1;
	}
	{ /* the command line, for the header */
		const char *w[] = {"info"};
		char *body = NULL, msg[256];
		size_t len;
		if (!client_request(&c, w, 1, &body, &len, msg, sizeof(msg), 10000)) {
			const char *p = strstr(body, "\ncommand ");
			if (p)
				snprintf(v.command, sizeof(v.command), "%.*s",
				         (int)strcspn(p + 9, "\n"), p + 9);
			p = strstr(body, "pid ");
			if (p == body && !pid)
				pid = (pid_t)atol(body + 4);
		}
		free(body);
	}
	v.pid = pid;
	v.ansi = !json && !once && isatty(1);

	struct termios saved;
	bool raw = !json && !once && isatty(0) && tcgetattr(0, &saved) == 0;
	if (raw) {
		struct termios t = saved;
		t.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
		t.c_cc[VMIN] = 0;
		t.c_cc[VTIME] = 0;
		tcsetattr(0, TCSANOW, &t);
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (v.ansi)
		fputs("\033[?25l\033[2J", stdout); /* no cursor; a clear screen */

	struct sample prev = {0}, cur = {0};
	bool have_prev = false, gone = false;
	int status = 0;
	double next = now_s();
	while (!top_stop) {
		err = take_sample(&c, pid, sock, &cur);
		if (err) {
			gone = true;
			break;
		}
		if (have_prev)
			rates(&cur, &prev);
		if ((!once && !json) || have_prev) {
			if (json)
				draw_json(&v, &cur);
			else
				draw(&v, &cur);
			if (once)
				break;
		}
		sample_free(&prev);
		prev = cur;
		memset(&cur, 0, sizeof(cur));
		have_prev = true;
		/* Wait for the next refresh, reading keys meanwhile. */
		next += v.delay;
		for (double left; !top_stop && (left = next - now_s()) > 0;) {
			struct pollfd p = {.fd = 0, .events = POLLIN};
			int r = poll(&p, raw ? 1 : 0, (int)(left * 1000) + 1);
			if (r <= 0 || !(p.revents & POLLIN))
				continue;
			char ch;
			if (read(0, &ch, 1) != 1)
				continue;
			if (ch == 'q' || ch == 'Q') {
				top_stop = -1;
				break;
			}
			for (size_t j = 0; j < sizeof(sort_keys) / sizeof(sort_keys[0]); j++) {
				if (ch == sort_keys[j].key) {
					sort_key = ch;
					draw(&v, &prev); /* the same sample, sorted anew */
				}
			}
		}
	}
	if (v.ansi)
		fputs("\033[?25h", stdout);
	if (raw)
		tcsetattr(0, TCSANOW, &saved);
	if (gone) {
		fflush(stdout);
		/* A process removes its socket on its way out: give it a moment. */
		for (int i = 0; i < 40 && client_pid_alive(pid); i++)
			usleep(50000);
		if (!client_pid_alive(pid))
			fprintf(stderr, "memcg top: process %ld exited\n", (long)pid);
		else
			fprintf(stderr, "memcg top: process %ld stopped answering (%s)\n",
			        (long)pid, strerror(-err));
		status = client_pid_alive(pid) ? 1 : 0;
	}
	client_close(&c);
	sample_free(&prev);
	sample_free(&cur);
	return status;
}
