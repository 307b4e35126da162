/* SPDX-License-Identifier: MIT */
/*
 * resp.h - the Redis protocol (RESP2) on the wire: requests in, replies out.
 *
 * Requests come as a multibulk ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n") or as an
 * inline line ("GET k\r\n", quotes and escapes as redis-cli and telnet
 * send them).  The parser works on a connection's input buffer in place:
 * it never copies a multibulk argument (the arguments point into the
 * buffer) and is bounded against hostile input - a bulk longer than
 * max_bulk, more than max_args arguments or a length line longer than
 * 64 KiB is a protocol error, answered with Redis's own error text, after
 * which the connection is closed (as Redis does).
 *
 * Replies are appended to a growable buffer (struct kv_buf).  A buffer
 * whose allocation failed says so (oom) and its owner closes the
 * connection: a reply is never silently cut.
 *
 * No locks: a parser and its buffers belong to one connection, used by
 * one thread at a time.
 */
#ifndef KV_RESP_H
#define KV_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** A growable byte buffer (replies, inline arguments). */
struct kv_buf {
	char *data;
	size_t len, cap;
	bool oom; /* an append failed: the contents are incomplete */
};

void kv_buf_free(struct kv_buf *b);
/** kv_buf_reserve - room for @n more bytes; false (and oom set) if it cannot grow. */
bool kv_buf_reserve(struct kv_buf *b, size_t n);
void kv_buf_append(struct kv_buf *b, const void *p, size_t n);

/* Replies (RESP2). */
void kv_reply_status(struct kv_buf *b, const char *s);      /* +s */
void kv_reply_error(struct kv_buf *b, const char *fmt, ...) /* -ERR fmt (no newlines) */
        __attribute__((format(printf, 2, 3)));
void kv_reply_raw_error(struct kv_buf *b, const char *s);      /* -s: s has its own prefix */
void kv_reply_int(struct kv_buf *b, long long v);              /* :v */
void kv_reply_bulk(struct kv_buf *b, const void *p, size_t n); /* $n p */
void kv_reply_nil(struct kv_buf *b);                           /* $-1 */
void kv_reply_array(struct kv_buf *b, long long n);            /* *n */

/** One argument of a request: bytes, not NUL-terminated. */
struct kv_arg {
	const char *p;
	size_t len;
};

/** kv_arg_is - @a equals @word, ignoring ASCII case. */
bool kv_arg_is(const struct kv_arg *a, const char *word);

/** Limits of a parser (defaults: KV_MAX_BULK_DEFAULT, KV_MAX_ARGS_DEFAULT). */
#define KV_MAX_BULK_DEFAULT (32u << 20)
#define KV_MAX_ARGS_DEFAULT (1u << 20)
/** The longest length line or inline request Redis accepts (PROTO_INLINE_MAX_SIZE). */
#define KV_INLINE_MAX 65536

/* An argument of a multibulk still arriving: offsets from the request's start. */
struct kv_span {
	size_t off, len;
};

struct kv_parser {
	size_t max_bulk;
	unsigned max_args;
	/* The request being parsed: a multibulk may arrive in many reads. */
	struct kv_arg *argv; /* the arguments of a complete request */
	struct kv_span *span;
	unsigned argc, argv_cap;
	long long need;            /* multibulk arguments still to come; 0: none started */
	long long bulk_len;        /* -1: the next bulk's length line is still to read */
	size_t scan;               /* where parsing resumes, from the request's start */
	struct kv_buf inline_args; /* the unescaped arguments of an inline request */
};

enum kv_parse {
	KV_PARSE_MORE,  /* nothing complete yet: read more */
	KV_PARSE_DONE,  /* a request is in argv[0, argc) (argc may be 0: ignore it) */
	KV_PARSE_ERROR, /* protocol error: reply with *err, then close */
};

void kv_parser_init(struct kv_parser *p, size_t max_bulk, unsigned max_args);
void kv_parser_free(struct kv_parser *p);

/**
 * kv_parse - parse the next request from @buf[*@pos, @len).  On DONE the
 * arguments (p->argv[0, p->argc)) point into @buf or into the parser's
 * own buffer and stay valid until the next call or until @buf moves;
 * *@pos is advanced past the request.  On MORE *@pos stays at the
 * request's start: the caller keeps @buf[*@pos, @len) and calls again
 * with more bytes after it (it may move the buffer: the parser remembers
 * offsets from the request's start, so a request arriving in many reads
 * is scanned once).  On ERROR, *@err is Redis's error text.
 */
enum kv_parse kv_parse(struct kv_parser *p, const char *buf, size_t len, size_t *pos,
                       const char **err);

/** kv_string2ll - Redis's strict integer syntax (no '+', no leading zeros, no spaces). */
bool kv_string2ll(const char *s, size_t len, long long *out);

#endif /* KV_RESP_H */
