/* SPDX-License-Identifier: MIT */
/*
 * commands.c - the command table and each command (see commands.h).
 *
 * Dispatch as Redis's processCommand(): look the name up (any case),
 * check the arity (positive: exactly that many arguments, the name
 * included; negative: at least that many), then run.  Error texts are
 * Redis 7.0's.
 */
#include "commands.h"

#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "memcg/memcg.h"

#define E_SYNTAX "syntax error"
#define E_NOT_INT "value is not an integer or out of range"
#define E_OOM "OOM command not allowed when used memory > 'maxmemory'."
#define E_WRONGPASS "WRONGPASS invalid username-password pair or user is disabled."

typedef void (*kv_cmd_fn)(struct kv_client *c, unsigned argc, const struct kv_arg *argv);

struct kv_command {
	const char *name; /* as Redis names it in errors */
	int arity;
	kv_cmd_fn fn;
};

static void reply_arity(struct kv_client *c, const char *name)
{
	kv_reply_error(c->out, "wrong number of arguments for '%s' command", name);
}

/* An argument as an integer, or Redis's reply and false. */
static bool arg_ll(struct kv_client *c, const struct kv_arg *a, long long *v)
{
	if (kv_string2ll(a->p, a->len, v))
		return true;
	kv_reply_error(c->out, E_NOT_INT);
	return false;
}

static void emit_bulk(void *arg, const char *val, size_t len) { kv_reply_bulk(arg, val, len); }

static struct kv_table *table(struct kv_client *c) { return &c->tenant->table; }

/* ------------------------------------------------------------ connection */

static void cmd_ping(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	if (argc > 2)
		reply_arity(c, "ping");
	else if (argc == 1)
		kv_reply_status(c->out, "PONG");
	else
		kv_reply_bulk(c->out, argv[1].p, argv[1].len);
}

static void cmd_echo(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	kv_reply_bulk(c->out, argv[1].p, argv[1].len);
}

static void cmd_quit(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	kv_reply_status(c->out, "OK");
	c->close_after_reply = true;
}

/* AUTH tenant, or AUTH tenant password (redis-cli --user): names the
   tenant; there are no passwords (it picks, it does not authenticate). */
static void cmd_auth(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	if (argc > 3) {
		kv_reply_error(c->out, E_SYNTAX);
		return;
	}
	struct kv_tenant *t = kv_tenant_by_name(c->ctx->tenants, argv[1].p, argv[1].len);
	if (!t) {
		kv_reply_raw_error(c->out, E_WRONGPASS);
		return;
	}
	c->tenant = t;
	kv_reply_status(c->out, "OK");
}

static void cmd_select(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	long long id;
	if (!arg_ll(c, &argv[1], &id))
		return;
	if (id < INT_MIN || id > INT_MAX) {
		kv_reply_error(c->out, "value is out of range, value must between %d and %d",
		               INT_MIN, INT_MAX);
		return;
	}
	struct kv_tenant *t = kv_tenant_by_index(c->ctx->tenants, id);
	if (!t) {
		kv_reply_error(c->out, "DB index is out of range");
		return;
	}
	c->tenant = t;
	kv_reply_status(c->out, "OK");
}

/* ------------------------------------------------------------ strings */

static void cmd_get(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	if (!kv_get(table(c), argv[1].p, argv[1].len, emit_bulk, c->out))
		kv_reply_nil(c->out);
}

static void cmd_mget(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	kv_reply_array(c->out, argc - 1);
	for (unsigned i = 1; i < argc; i++)
		if (!kv_get(table(c), argv[i].p, argv[i].len, emit_bulk, c->out))
			kv_reply_nil(c->out);
}

enum { EXP_NONE, EXP_EX, EXP_PX, EXP_EXAT, EXP_PXAT };

/* SET key value [NX|XX] [GET] [EX s|PX ms|EXAT ts|PXAT ms-ts|KEEPTTL], with
   the same leniency as Redis's parseExtendedStringArgumentsOrReply(): an
   option may repeat, and only conflicting ones are a syntax error. */
static void cmd_set(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	unsigned flags = 0;
	int exp = EXP_NONE;
	const struct kv_arg *when = NULL;
	for (unsigned j = 3; j < argc; j++) {
		const struct kv_arg *o = &argv[j];
		bool next = j + 1 < argc;
		if (kv_arg_is(o, "nx") && !(flags & KV_SET_XX)) {
			flags |= KV_SET_NX;
		} else if (kv_arg_is(o, "xx") && !(flags & KV_SET_NX)) {
			flags |= KV_SET_XX;
		} else if (kv_arg_is(o, "get")) {
			flags |= KV_SET_GET;
		} else if (kv_arg_is(o, "keepttl") && exp == EXP_NONE) {
			flags |= KV_SET_KEEPTTL;
		} else if (next && !(flags & KV_SET_KEEPTTL) &&
		           ((kv_arg_is(o, "ex") && (exp == EXP_NONE || exp == EXP_EX)) ||
		            (kv_arg_is(o, "px") && (exp == EXP_NONE || exp == EXP_PX)) ||
		            (kv_arg_is(o, "exat") && (exp == EXP_NONE || exp == EXP_EXAT)) ||
		            (kv_arg_is(o, "pxat") && (exp == EXP_NONE || exp == EXP_PXAT)))) {
			exp = kv_arg_is(o, "ex")     ? EXP_EX
			      : kv_arg_is(o, "px")   ? EXP_PX
			      : kv_arg_is(o, "exat") ? EXP_EXAT
			                             : EXP_PXAT;
			when = &argv[++j];
		} else {
			kv_reply_error(c->out, E_SYNTAX);
			return;
		}
	}
	int64_t expire_ms = 0;
	if (when) {
		long long v;
		if (!arg_ll(c, when, &v))
			return;
		bool seconds = exp == EXP_EX || exp == EXP_EXAT;
		if (v <= 0 || (seconds && v > LLONG_MAX / 1000))
			goto bad_time;
		if (seconds)
			v *= 1000;
		if (exp == EXP_EX || exp == EXP_PX) {
			if (v > LLONG_MAX - kv_now_ms())
				goto bad_time; /* Redis detects the overflow as a sum <= 0 */
			v += kv_now_ms();
		}
		expire_ms = v;
	}
	struct kv_buf *old = &c->scratch;
	old->len = 0;
	bool found = false;
	enum kv_result r = kv_set(table(c), argv[1].p, argv[1].len, argv[2].p, argv[2].len,
	                          expire_ms, flags, emit_bulk, old, &found);
	if (r == KV_NOMEM)
		kv_reply_raw_error(c->out, E_OOM);
	else if (flags & KV_SET_GET)
		found ? kv_buf_append(c->out, old->data, old->len) : kv_reply_nil(c->out);
	else if (r == KV_NOT_DONE)
		kv_reply_nil(c->out);
	else
		kv_reply_status(c->out, "OK");
	return;
bad_time:
	kv_reply_error(c->out, "invalid expire time in 'set' command");
}

static void cmd_mset(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	if (argc % 2 == 0) {
		reply_arity(c, "mset");
		return;
	}
	for (unsigned j = 1; j < argc; j += 2) {
		if (kv_set(table(c), argv[j].p, argv[j].len, argv[j + 1].p, argv[j + 1].len, 0, 0,
		           NULL, NULL, NULL) == KV_NOMEM) {
			kv_reply_raw_error(c->out, E_OOM);
			return;
		}
	}
	kv_reply_status(c->out, "OK");
}

static void incr_by(struct kv_client *c, const struct kv_arg *key, long long delta)
{
	long long v = 0;
	switch (kv_incr(table(c), key->p, key->len, delta, &v)) {
	case KV_OK: kv_reply_int(c->out, v); break;
	case KV_NOT_INT: kv_reply_error(c->out, E_NOT_INT); break;
	case KV_OVERFLOW: kv_reply_error(c->out, "increment or decrement would overflow"); break;
	default: kv_reply_raw_error(c->out, E_OOM); break;
	}
}

static void cmd_incr(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	incr_by(c, &argv[1], 1);
}

static void cmd_decr(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	incr_by(c, &argv[1], -1);
}

static void cmd_incrby(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	long long d;
	if (arg_ll(c, &argv[2], &d))
		incr_by(c, &argv[1], d);
}

static void cmd_decrby(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	long long d;
	if (!arg_ll(c, &argv[2], &d))
		return;
	if (d == LLONG_MIN)
		kv_reply_error(c->out, "decrement would overflow");
	else
		incr_by(c, &argv[1], -d);
}

/* ------------------------------------------------------------ keys */

static void cmd_del(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	long long n = 0;
	for (unsigned i = 1; i < argc; i++)
		n += kv_del(table(c), argv[i].p, argv[i].len);
	kv_reply_int(c->out, n);
}

static void cmd_exists(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	long long n = 0;
	for (unsigned i = 1; i < argc; i++)
		n += kv_exists(table(c), argv[i].p, argv[i].len);
	kv_reply_int(c->out, n);
}

static void expire_generic(struct kv_client *c, unsigned argc, const struct kv_arg *argv,
                           bool seconds, const char *name)
{
	unsigned flags = 0;
	for (unsigned j = 3; j < argc; j++) {
		const struct kv_arg *o = &argv[j];
		if (kv_arg_is(o, "nx"))
			flags |= KV_EXP_NX;
		else if (kv_arg_is(o, "xx"))
			flags |= KV_EXP_XX;
		else if (kv_arg_is(o, "gt"))
			flags |= KV_EXP_GT;
		else if (kv_arg_is(o, "lt"))
			flags |= KV_EXP_LT;
		else {
			kv_reply_error(c->out, "Unsupported option %.*s",
			               (int)strnlen(o->p, o->len), o->p);
			return;
		}
	}
	if ((flags & KV_EXP_NX) && (flags & (KV_EXP_XX | KV_EXP_GT | KV_EXP_LT))) {
		kv_reply_error(c->out, "NX and XX, GT or LT options at the same time are not "
		                       "compatible");
		return;
	}
	if ((flags & KV_EXP_GT) && (flags & KV_EXP_LT)) {
		kv_reply_error(c->out, "GT and LT options at the same time are not compatible");
		return;
	}
	long long when;
	if (!arg_ll(c, &argv[2], &when))
		return;
	int64_t now = kv_now_ms();
	if (seconds) {
		if (when > LLONG_MAX / 1000 || when < LLONG_MIN / 1000)
			goto bad_time;
		when *= 1000;
	}
	if (when > LLONG_MAX - now)
		goto bad_time;
	when += now;
	kv_reply_int(c->out, kv_expire(table(c), argv[1].p, argv[1].len, when, flags));
	return;
bad_time:
	kv_reply_error(c->out, "invalid expire time in '%s' command", name);
}

static void cmd_expire(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	expire_generic(c, argc, argv, true, "expire");
}

static void cmd_pexpire(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	expire_generic(c, argc, argv, false, "pexpire");
}

static void cmd_ttl(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	int64_t ms = kv_ttl(table(c), argv[1].p, argv[1].len);
	kv_reply_int(c->out, ms < 0 ? ms : (ms + 500) / 1000);
}

static void cmd_pttl(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	kv_reply_int(c->out, kv_ttl(table(c), argv[1].p, argv[1].len));
}

/* ------------------------------------------------------------ server */

static void cmd_dbsize(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	kv_reply_int(c->out, kv_count(table(c)));
}

static void cmd_flushdb(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	if (argc > 2 ||
	    (argc == 2 && !kv_arg_is(&argv[1], "sync") && !kv_arg_is(&argv[1], "async"))) {
		kv_reply_error(c->out, E_SYNTAX);
		return;
	}
	kv_flush(table(c));
	kv_reply_status(c->out, "OK");
}

static void cmd_info(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	struct kv_buf text = {0};
	kv_info(c->ctx, argc - 1, argv + 1, &text);
	if (text.oom)
		kv_reply_raw_error(c->out, E_OOM);
	else
		kv_reply_bulk(c->out, text.data ? text.data : "", text.len);
	kv_buf_free(&text);
}

/* CONFIG GET: the few parameters clients ask about (redis-benchmark asks
   for save and appendonly); every other name matches nothing. */
static void cmd_config(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	if (!kv_arg_is(&argv[1], "get")) {
		char sub[129];
		snprintf(sub, sizeof(sub), "%.*s", (int)(argv[1].len < 128 ? argv[1].len : 128),
		         argv[1].p);
		kv_reply_error(c->out, "unknown subcommand '%s'. Try CONFIG HELP.", sub);
		return;
	}
	if (argc < 3) {
		reply_arity(c, "config|get");
		return;
	}
	char databases[16], maxmemory[24], bulk[24];
	long long max = kv_group_value(c->ctx->tenants->parent, "memory.max", NULL);
	snprintf(databases, sizeof(databases), "%d", c->ctx->tenants->count);
	snprintf(maxmemory, sizeof(maxmemory), "%lld", max < 0 ? 0 : max);
	snprintf(bulk, sizeof(bulk), "%zu", c->ctx->max_bulk);
	const char *params[][2] = {
	        {"save", ""},
	        {"appendonly", "no"},
	        {"databases", databases},
	        {"maxmemory", maxmemory},
	        {"maxmemory-policy", "allkeys-lru"},
	        {"proto-max-bulk-len", bulk},
	};
	enum { NPARAMS = sizeof(params) / sizeof(params[0]) };
	bool hit[NPARAMS] = {0};
	int n = 0;
	for (unsigned j = 2; j < argc; j++) {
		char pat[256];
		snprintf(pat, sizeof(pat), "%.*s", (int)(argv[j].len < 255 ? argv[j].len : 255),
		         argv[j].p);
		for (int i = 0; i < NPARAMS; i++)
			if (!hit[i] && !fnmatch(pat, params[i][0], FNM_CASEFOLD))
				hit[i] = true, n++;
	}
	kv_reply_array(c->out, 2 * n);
	for (int i = 0; i < NPARAMS; i++) {
		if (!hit[i])
			continue;
		kv_reply_bulk(c->out, params[i][0], strlen(params[i][0]));
		kv_reply_bulk(c->out, params[i][1], strlen(params[i][1]));
	}
}

/* ------------------------------------------------------------ INFO */

static void info_line(struct kv_buf *out, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void info_line(struct kv_buf *out, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	kv_buf_append(out, line,
	              n < 0                      ? 0
	              : (size_t)n < sizeof(line) ? (size_t)n
	                                         : sizeof(line) - 1);
	kv_buf_append(out, "\r\n", 2);
}

static long rss_bytes(void)
{
	long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &size, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * sysconf(_SC_PAGESIZE);
}

static const char *const sections[] = {"server", "clients",  "memory",
                                       "stats",  "keyspace", "tenants"};
enum { NSECTIONS = sizeof(sections) / sizeof(sections[0]) };

static void info_section(struct kv_context *ctx, int s, struct kv_buf *out)
{
	struct kv_tenants *ts = ctx->tenants;
	switch (s) {
	case 0:
		info_line(out, "# Server");
		info_line(out, "redis_version:7.0.15");
		info_line(out, "memcg_version:%d.%d.%d", MCG_VERSION_MAJOR, MCG_VERSION_MINOR,
		          MCG_VERSION_PATCH);
		info_line(out, "process_id:%ld", (long)getpid());
		info_line(out, "tcp_port:%d", ctx->port);
		info_line(out, "uptime_in_seconds:%lld",
		          (long long)(kv_now_ms() - ctx->start_ms) / 1000);
		info_line(out, "io_threads_active:%d", ctx->threads);
		info_line(out, "tenant_mode:%s", ts->shared ? "one-group" : "group-per-tenant");
		break;
	case 1:
		info_line(out, "# Clients");
		info_line(out, "connected_clients:%ld",
		          __atomic_load_n(&ctx->clients_connected, __ATOMIC_RELAXED));
		break;
	case 2: {
		long long max = kv_group_value(ts->parent, "memory.max", NULL);
		info_line(out, "# Memory");
		info_line(out, "used_memory:%lld",
		          kv_group_value(ts->parent, "memory.current", NULL));
		info_line(out, "used_memory_rss:%ld", rss_bytes());
		info_line(out, "used_memory_peak:%lld",
		          kv_group_value(ts->parent, "memory.peak", NULL));
		info_line(out, "maxmemory:%lld", max < 0 ? 0 : max);
		info_line(out, "maxmemory_policy:allkeys-lru");
		break;
	}
	case 3: {
		struct kv_table_stats sum = {0};
		for (int i = 0; i < ts->count; i++) {
			struct kv_table_stats st;
			kv_table_stats(&ts->tenant[i]->table, &st);
			sum.hits += st.hits, sum.misses += st.misses;
			sum.evictions += st.evictions, sum.expired += st.expired;
		}
		info_line(out, "# Stats");
		info_line(out, "total_connections_received:%ld",
		          __atomic_load_n(&ctx->connections_received, __ATOMIC_RELAXED));
		info_line(out, "total_commands_processed:%ld",
		          __atomic_load_n(&ctx->commands_processed, __ATOMIC_RELAXED));
		info_line(out, "expired_keys:%ld", sum.expired);
		info_line(out, "evicted_keys:%ld", sum.evictions);
		info_line(out, "keyspace_hits:%ld", sum.hits);
		info_line(out, "keyspace_misses:%ld", sum.misses);
		break;
	}
	case 4:
		info_line(out, "# Keyspace");
		for (int i = 0; i < ts->count; i++) {
			struct kv_table_stats st;
			kv_table_stats(&ts->tenant[i]->table, &st);
			if (st.keys)
				info_line(out, "db%d:keys=%ld,expires=%ld,avg_ttl=0", i, st.keys,
				          st.volatile_keys);
		}
		break;
	case 5:
		info_line(out, "# Tenants");
		kv_tenants_info(ts, out);
		break;
	}
}

void kv_info(struct kv_context *ctx, unsigned argc, const struct kv_arg *argv, struct kv_buf *out)
{
	bool want[NSECTIONS] = {0};
	for (unsigned j = 0; j < argc; j++) {
		bool all = kv_arg_is(&argv[j], "all") || kv_arg_is(&argv[j], "everything") ||
		           kv_arg_is(&argv[j], "default");
		for (int s = 0; s < NSECTIONS; s++)
			want[s] |= all || kv_arg_is(&argv[j], sections[s]);
	}
	bool first = true;
	for (int s = 0; s < NSECTIONS; s++) {
		if (argc && !want[s])
			continue;
		if (!first)
			kv_buf_append(out, "\r\n", 2);
		first = false;
		info_section(ctx, s, out);
	}
}

/* ------------------------------------------------------------ dispatch */

static const struct kv_command commands[] = {
        {"ping", -1, cmd_ping},    {"echo", 2, cmd_echo},        {"quit", -1, cmd_quit},
        {"auth", -2, cmd_auth},    {"select", 2, cmd_select},    {"info", -1, cmd_info},
        {"dbsize", 1, cmd_dbsize}, {"flushdb", -1, cmd_flushdb}, {"config", -2, cmd_config},
        {"get", 2, cmd_get},       {"set", -3, cmd_set},         {"mget", -2, cmd_mget},
        {"mset", -3, cmd_mset},    {"del", -2, cmd_del},         {"exists", -2, cmd_exists},
        {"incr", 2, cmd_incr},     {"decr", 2, cmd_decr},        {"incrby", 3, cmd_incrby},
        {"decrby", 3, cmd_decrby}, {"expire", -3, cmd_expire},   {"pexpire", -3, cmd_pexpire},
        {"ttl", 2, cmd_ttl},       {"pttl", 2, cmd_pttl},
};

/* Redis's reply to a name it does not know: the name and the first
   arguments, quoted, cut at 128 characters. */
static void reply_unknown(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	char args[160 * 2] = "";
	size_t len = 0;
	for (unsigned i = 1; i < argc && len < 128; i++) {
		int room = 128 - (int)len;
		int alen = (int)strnlen(argv[i].p, argv[i].len);
		int n = snprintf(args + len, sizeof(args) - len, "'%.*s' ",
		                 alen < room ? alen : room, argv[i].p);
		len += (size_t)n;
	}
	int nlen = (int)strnlen(argv[0].p, argv[0].len);
	kv_reply_error(c->out, "unknown command '%.*s', with args beginning with: %s",
	               nlen < 128 ? nlen : 128, argv[0].p, args);
}

void kv_execute(struct kv_client *c, unsigned argc, const struct kv_arg *argv)
{
	__atomic_fetch_add(&c->ctx->commands_processed, 1, __ATOMIC_RELAXED);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const struct kv_command *cmd = &commands[i];
		if (!kv_arg_is(&argv[0], cmd->name))
			continue;
		if ((cmd->arity > 0 && (unsigned)cmd->arity != argc) ||
		    (cmd->arity < 0 && argc < (unsigned)-cmd->arity)) {
			reply_arity(c, cmd->name);
			return;
		}
		cmd->fn(c, argc, argv);
		return;
	}
	reply_unknown(c, argc, argv);
}
