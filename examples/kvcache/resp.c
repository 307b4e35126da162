/* SPDX-License-Identifier: MIT */
/*
 * resp.c - RESP2 requests and replies (see resp.h).
 *
 * The parser follows Redis 7.0's processMultibulkBuffer() and
 * processInlineBuffer(): the same limits, the same error texts, the same
 * leniency (the two bytes after a bulk are skipped, not checked), so a
 * client sees the same replies from both servers.
 */
#include "resp.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------ buffers */

void kv_buf_free(struct kv_buf *b)
{
	free(b->data);
	*b = (struct kv_buf){0};
}

bool kv_buf_reserve(struct kv_buf *b, size_t n)
{
	if (b->oom)
		return false;
	if (b->cap - b->len >= n)
		return true;
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->len < n)
		cap *= 2;
	char *d = realloc(b->data, cap);
	if (!d) {
		b->oom = true;
		return false;
	}
	b->data = d;
	b->cap = cap;
	return true;
}

void kv_buf_append(struct kv_buf *b, const void *p, size_t n)
{
	if (!kv_buf_reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

/* ------------------------------------------------------------ replies */

static void append_line(struct kv_buf *b, char type, long long v)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%c%lld\r\n", type, v);
	kv_buf_append(b, tmp, (size_t)n);
}

void kv_reply_status(struct kv_buf *b, const char *s)
{
	kv_buf_append(b, "+", 1);
	kv_buf_append(b, s, strlen(s));
	kv_buf_append(b, "\r\n", 2);
}

/* An error text must stay on one line: Redis maps CR and LF to spaces. */
static void append_error_text(struct kv_buf *b, const char *s, size_t n)
{
	if (!kv_buf_reserve(b, n + 3))
		return;
	char *d = b->data + b->len;
	d[0] = '-';
	for (size_t i = 0; i < n; i++)
		d[1 + i] = (s[i] == '\r' || s[i] == '\n') ? ' ' : s[i];
	memcpy(d + 1 + n, "\r\n", 2);
	b->len += n + 3;
}

void kv_reply_error(struct kv_buf *b, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg + 4, sizeof(msg) - 4, fmt, ap);
	va_end(ap);
	memcpy(msg, "ERR ", 4);
	size_t len = 4 + (n < 0 ? 0 : (size_t)n < sizeof(msg) - 4 ? (size_t)n : sizeof(msg) - 5);
	append_error_text(b, msg, len);
}

void kv_reply_raw_error(struct kv_buf *b, const char *s) { append_error_text(b, s, strlen(s)); }

void kv_reply_int(struct kv_buf *b, long long v) { append_line(b, ':', v); }

void kv_reply_bulk(struct kv_buf *b, const void *p, size_t n)
{
	append_line(b, '$', (long long)n);
	kv_buf_append(b, p, n);
	kv_buf_append(b, "\r\n", 2);
}

void kv_reply_nil(struct kv_buf *b) { kv_buf_append(b, "$-1\r\n", 5); }

void kv_reply_array(struct kv_buf *b, long long n) { append_line(b, '*', n); }

bool kv_arg_is(const struct kv_arg *a, const char *word)
{
	size_t n = strlen(word);
	return a->len == n && !strncasecmp(a->p, word, n);
}

/* ------------------------------------------------------------ integers */

bool kv_string2ll(const char *s, size_t len, long long *out)
{
	/* Redis's string2ll(): at most 20 characters, "0" alone, else an
	   optional '-' and a digit 1-9 first. */
	if (len == 0 || len >= 21)
		return false;
	if (len == 1 && s[0] == '0') {
		*out = 0;
		return true;
	}
	size_t i = 0;
	bool neg = s[0] == '-';
	if (neg && ++i == len)
		return false;
	if (s[i] < '1' || s[i] > '9')
		return false;
	unsigned long long v = 0;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (ULLONG_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (neg) {
		if (v > (unsigned long long)LLONG_MAX + 1)
			return false;
		*out = v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)v;
	} else {
		if (v > (unsigned long long)LLONG_MAX)
			return false;
		*out = (long long)v;
	}
	return true;
}

/* ------------------------------------------------------------ the parser */

void kv_parser_init(struct kv_parser *p, size_t max_bulk, unsigned max_args)
{
	*p = (struct kv_parser){.max_bulk = max_bulk, .max_args = max_args, .bulk_len = -1};
}

void kv_parser_free(struct kv_parser *p)
{
	free(p->argv);
	free(p->span);
	kv_buf_free(&p->inline_args);
	p->argv = NULL;
	p->span = NULL;
	p->argc = p->argv_cap = 0;
}

static void parser_reset(struct kv_parser *p)
{
	p->need = 0;
	p->bulk_len = -1;
	p->scan = 0;
}

/* Room for @n arguments; grown as arguments arrive, never from a count a
   client merely announced. */
static bool argv_reserve(struct kv_parser *p, unsigned n)
{
	if (n <= p->argv_cap)
		return true;
	unsigned cap = p->argv_cap ? p->argv_cap : 16;
	while (cap < n)
		cap *= 2;
	struct kv_arg *a = realloc(p->argv, cap * sizeof(*a));
	if (!a)
		return false;
	p->argv = a;
	struct kv_span *s = realloc(p->span, cap * sizeof(*s));
	if (!s)
		return false;
	p->span = s;
	p->argv_cap = cap;
	return true;
}

/* The length line at @s[0, @n): "<c><digits>\r".  Return: the offset of the
   '\r' from @s, 0 when it has not all arrived, -1 when it is too long. */
static long length_line(const char *s, size_t n)
{
	const char *cr = memchr(s, '\r', n);
	if (!cr)
		return n > KV_INLINE_MAX ? -1 : 0;
	if ((size_t)(cr - s) + 2 > n) /* the byte after '\r' has not arrived */
		return 0;
	return cr - s;
}

static enum kv_parse parse_multibulk(struct kv_parser *p, const char *req, size_t n,
                                     const char **err)
{
	if (p->need == 0) {
		long cr = length_line(req, n);
		if (cr < 0) {
			*err = "Protocol error: too big mbulk count string";
			return KV_PARSE_ERROR;
		}
		if (cr == 0)
			return KV_PARSE_MORE;
		long long ll;
		if (!kv_string2ll(req + 1, (size_t)cr - 1, &ll) || ll > (long long)p->max_args) {
			*err = "Protocol error: invalid multibulk length";
			return KV_PARSE_ERROR;
		}
		p->scan = (size_t)cr + 2;
		p->argc = 0;
		if (ll <= 0)
			return KV_PARSE_DONE;
		p->need = ll;
	}
	while (p->need > 0) {
		if (p->bulk_len < 0) {
			long cr = length_line(req + p->scan, n - p->scan);
			if (cr < 0) {
				*err = "Protocol error: too big bulk count string";
				return KV_PARSE_ERROR;
			}
			if (cr == 0)
				return KV_PARSE_MORE;
			const char *line = req + p->scan;
			if (line[0] != '$') {
				static __thread char msg[48];
				snprintf(msg, sizeof(msg), "Protocol error: expected '$', got '%c'",
				         line[0]);
				*err = msg;
				return KV_PARSE_ERROR;
			}
			long long ll;
			if (!kv_string2ll(line + 1, (size_t)cr - 1, &ll) || ll < 0 ||
			    (unsigned long long)ll > p->max_bulk) {
				*err = "Protocol error: invalid bulk length";
				return KV_PARSE_ERROR;
			}
			p->scan += (size_t)cr + 2;
			p->bulk_len = ll;
		}
		if (n - p->scan < (size_t)p->bulk_len + 2)
			return KV_PARSE_MORE;
		if (!argv_reserve(p, p->argc + 1)) {
			*err = "Protocol error: out of memory";
			return KV_PARSE_ERROR;
		}
		p->span[p->argc++] = (struct kv_span){p->scan, (size_t)p->bulk_len};
		p->scan += (size_t)p->bulk_len + 2;
		p->bulk_len = -1;
		p->need--;
	}
	for (unsigned i = 0; i < p->argc; i++)
		p->argv[i] = (struct kv_arg){req + p->span[i].off, p->span[i].len};
	return KV_PARSE_DONE;
}

static bool is_hex(char c) { return isxdigit((unsigned char)c); }
static int hex_val(char c) { return isdigit((unsigned char)c) ? c - '0' : (tolower(c) - 'a') + 10; }

/* Split an inline line as Redis's sdssplitargs(): blanks separate, "..."
   takes \n \r \t \b \a \xHH and \<any>, '...' takes \'; a closing quote
   must be followed by a blank or the end.  Return false on bad quoting. */
static bool split_inline(struct kv_parser *p, const char *s, size_t n)
{
	struct kv_buf *out = &p->inline_args;
	out->len = 0;
	out->oom = false;
	if (!kv_buf_reserve(out, n + 1))
		return false;
	const char *end = memchr(s, '\0', n); /* a C string to Redis: ends at a NUL */
	end = end ? end : s + n;
	unsigned argc = 0;
	/* A token's offset into out, then its length: kept in span until done. */
	for (;;) {
		while (s < end && isspace((unsigned char)*s))
			s++;
		if (s == end)
			break;
		size_t start = out->len;
		bool inq = false, insq = false, done = false;
		while (!done) {
			char c = s < end ? *s : '\0';
			if (inq) {
				if (c == '\\' && s + 3 < end && s[1] == 'x' && is_hex(s[2]) &&
				    is_hex(s[3])) {
					out->data[out->len++] =
					        (char)(hex_val(s[2]) * 16 + hex_val(s[3]));
					s += 3;
				} else if (c == '\\' && s + 1 < end) {
					s++;
					switch (*s) {
					case 'n': c = '\n'; break;
					case 'r': c = '\r'; break;
					case 't': c = '\t'; break;
					case 'b': c = '\b'; break;
					case 'a': c = '\a'; break;
					default: c = *s; break;
					}
					out->data[out->len++] = c;
				} else if (c == '"') {
					if (s + 1 < end && !isspace((unsigned char)s[1]))
						return false;
					done = true;
				} else if (c == '\0') {
					return false;
				} else {
					out->data[out->len++] = c;
				}
			} else if (insq) {
				if (c == '\\' && s + 1 < end && s[1] == '\'') {
					s++;
					out->data[out->len++] = '\'';
				} else if (c == '\'') {
					if (s + 1 < end && !isspace((unsigned char)s[1]))
						return false;
					done = true;
				} else if (c == '\0') {
					return false;
				} else {
					out->data[out->len++] = c;
				}
			} else {
				switch (c) {
				case ' ':
				case '\n':
				case '\r':
				case '\t':
				case '\0': done = true; break;
				case '"': inq = true; break;
				case '\'': insq = true; break;
				default: out->data[out->len++] = c; break;
				}
			}
			if (s < end)
				s++;
		}
		if (!argv_reserve(p, argc + 1))
			return false;
		p->span[argc++] = (struct kv_span){start, out->len - start};
	}
	for (unsigned i = 0; i < argc; i++)
		p->argv[i] = (struct kv_arg){out->data + p->span[i].off, p->span[i].len};
	p->argc = argc;
	return true;
}

static enum kv_parse parse_inline(struct kv_parser *p, const char *req, size_t n, size_t *used,
                                  const char **err)
{
	const char *nl = memchr(req, '\n', n);
	if (!nl) {
		if (n > KV_INLINE_MAX) {
			*err = "Protocol error: too big inline request";
			return KV_PARSE_ERROR;
		}
		return KV_PARSE_MORE;
	}
	size_t line = (size_t)(nl - req);
	*used = line + 1;
	if (line > 0 && req[line - 1] == '\r')
		line--;
	if (!split_inline(p, req, line)) {
		*err = "Protocol error: unbalanced quotes in request";
		return KV_PARSE_ERROR;
	}
	return KV_PARSE_DONE;
}

enum kv_parse kv_parse(struct kv_parser *p, const char *buf, size_t len, size_t *pos,
                       const char **err)
{
	const char *req = buf + *pos;
	size_t n = len - *pos;
	if (n == 0)
		return KV_PARSE_MORE;
	enum kv_parse r;
	size_t used = 0;
	if (req[0] == '*') {
		r = parse_multibulk(p, req, n, err);
		used = p->scan;
	} else {
		r = parse_inline(p, req, n, &used, err);
	}
	if (r == KV_PARSE_DONE) {
		*pos += used;
		parser_reset(p);
	} else if (r == KV_PARSE_ERROR) {
		parser_reset(p);
	}
	return r;
}
