/* SPDX-License-Identifier: MIT */
/*
 * test_resp.c - examples/kvcache/resp.c: the request parser (multibulk in
 * pieces, inline quoting, every protocol error and its text, the limits)
 * and the reply encoders, byte for byte.
 */
#include <string.h>

#include "resp.h"
#include "test.h"

/* Parse @s in one piece; return the result, the argument count in *@argc. */
static enum kv_parse parse_all(struct kv_parser *p, const char *s, size_t len, size_t *pos,
                               const char **err)
{
	*pos = 0;
	return kv_parse(p, s, len, pos, err);
}

static bool arg_eq(const struct kv_parser *p, unsigned i, const char *s)
{
	return i < p->argc && p->argv[i].len == strlen(s) && !memcmp(p->argv[i].p, s, strlen(s));
}

static void test_multibulk(void)
{
	struct kv_parser p;
	kv_parser_init(&p, 1024, 16);
	const char req[] = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nv\0l\r\n\r\n*1\r\n$4\r\nPING\r\n";
	size_t pos = 0;
	const char *err = NULL;
	CHECK_EQ(kv_parse(&p, req, sizeof(req) - 1, &pos, &err), KV_PARSE_DONE);
	CHECK_EQ(p.argc, 3);
	CHECK(arg_eq(&p, 0, "SET") && arg_eq(&p, 1, "k"));
	CHECK(p.argv[2].len == 5 && !memcmp(p.argv[2].p, "v\0l\r\n", 5)); /* binary safe */
	CHECK_EQ(pos, 31);
	CHECK_EQ(kv_parse(&p, req, sizeof(req) - 1, &pos, &err), KV_PARSE_DONE);
	CHECK(p.argc == 1 && arg_eq(&p, 0, "PING"));
	CHECK_EQ(pos, sizeof(req) - 1);
	CHECK_EQ(kv_parse(&p, req, sizeof(req) - 1, &pos, &err), KV_PARSE_MORE);
	kv_parser_free(&p);
}

/* Fed one byte at a time, a request completes exactly at its last byte,
   and the position stays at its start until then. */
static void test_multibulk_in_pieces(void)
{
	struct kv_parser p;
	kv_parser_init(&p, 1024, 16);
	const char req[] = "*2\r\n$4\r\nECHO\r\n$11\r\nhello world\r\n";
	size_t n = sizeof(req) - 1, pos = 0;
	const char *err = NULL;
	for (size_t len = 1; len < n; len++) {
		CHECK_EQ(kv_parse(&p, req, len, &pos, &err), KV_PARSE_MORE);
		CHECK_EQ(pos, 0);
	}
	CHECK_EQ(kv_parse(&p, req, n, &pos, &err), KV_PARSE_DONE);
	CHECK(p.argc == 2 && arg_eq(&p, 1, "hello world"));
	CHECK_EQ(pos, n);
	kv_parser_free(&p);
}

static void test_inline(void)
{
	struct kv_parser p;
	kv_parser_init(&p, 1024, 16);
	size_t pos;
	const char *err = NULL;
	const char a[] = "  SET  \"a b\\x41\\n\" 'it\\'s'  \r\n";
	CHECK_EQ(parse_all(&p, a, sizeof(a) - 1, &pos, &err), KV_PARSE_DONE);
	CHECK(p.argc == 3 && arg_eq(&p, 0, "SET") && arg_eq(&p, 1, "a bA\n") &&
	      arg_eq(&p, 2, "it's"));
	CHECK_EQ(pos, sizeof(a) - 1);
	const char empty[] = "\r\n";
	CHECK_EQ(parse_all(&p, empty, 2, &pos, &err), KV_PARSE_DONE);
	CHECK_EQ(p.argc, 0);
	const char lf[] = "PING\nPING";
	CHECK_EQ(parse_all(&p, lf, sizeof(lf) - 1, &pos, &err), KV_PARSE_DONE);
	CHECK_EQ(pos, 5);
	CHECK_EQ(kv_parse(&p, lf, sizeof(lf) - 1, &pos, &err), KV_PARSE_MORE);
	kv_parser_free(&p);
}

static void check_error(const char *req, size_t len, size_t max_bulk, const char *want)
{
	struct kv_parser p;
	kv_parser_init(&p, max_bulk, 16);
	size_t pos;
	const char *err = NULL;
	enum kv_parse r = parse_all(&p, req, len, &pos, &err);
	CHECK_EQ(r, KV_PARSE_ERROR);
	if (r != KV_PARSE_ERROR)
		fprintf(stderr, "  request '%.12s'\n", req);
	CHECK(err && !strcmp(err, want));
	if (err && strcmp(err, want))
		fprintf(stderr, "  got '%s', want '%s'\n", err, want);
	kv_parser_free(&p);
}

/* The texts are Redis 7.0's (test_compare holds them against redis-server). */
static void test_protocol_errors(void)
{
	check_error("*abc\r\n", 6, 100, "Protocol error: invalid multibulk length");
	check_error("*17\r\n", 5, 100, "Protocol error: invalid multibulk length"); /* > max_args */
	check_error("*01\r\n", 5, 100, "Protocol error: invalid multibulk length");
	check_error("*1\r\n+PING\r\n", 11, 100, "Protocol error: expected '$', got '+'");
	check_error("*1\r\n$-1\r\n", 9, 100, "Protocol error: invalid bulk length");
	check_error("*1\r\n$101\r\n", 10, 100, "Protocol error: invalid bulk length");
	check_error("ECHO \"a\r\n", 9, 100, "Protocol error: unbalanced quotes in request");
	check_error("ECHO \"a\"b\r\n", 11, 100, "Protocol error: unbalanced quotes in request");
	static char big[KV_INLINE_MAX + 16];
	memset(big, 'A', sizeof(big));
	check_error(big, sizeof(big), 100, "Protocol error: too big inline request");
	big[0] = '*';
	check_error(big, sizeof(big), 100, "Protocol error: too big mbulk count string");
	memcpy(big, "*1\r\n$", 5);
	check_error(big, sizeof(big), 100, "Protocol error: too big bulk count string");
	/* Exactly at the limits: fine. */
	struct kv_parser p;
	kv_parser_init(&p, 3, 2);
	size_t pos;
	const char *err;
	CHECK_EQ(parse_all(&p, "*2\r\n$3\r\nabc\r\n$0\r\n\r\n", 19, &pos, &err), KV_PARSE_DONE);
	kv_parser_free(&p);
}

static void test_string2ll(void)
{
	long long v = 7;
	CHECK(kv_string2ll("0", 1, &v) && v == 0);
	CHECK(kv_string2ll("-42", 3, &v) && v == -42);
	CHECK(kv_string2ll("9223372036854775807", 19, &v) && v == 9223372036854775807ll);
	CHECK(kv_string2ll("-9223372036854775808", 20, &v) && v == (-9223372036854775807ll - 1));
	CHECK(!kv_string2ll("9223372036854775808", 19, &v));
	CHECK(!kv_string2ll("01", 2, &v));
	CHECK(!kv_string2ll("-0", 2, &v));
	CHECK(!kv_string2ll("+1", 2, &v));
	CHECK(!kv_string2ll(" 1", 2, &v));
	CHECK(!kv_string2ll("", 0, &v));
	CHECK(!kv_string2ll("-", 1, &v));
	CHECK(!kv_string2ll("1a", 2, &v));
}

static void test_replies(void)
{
	struct kv_buf b = {0};
	kv_reply_status(&b, "OK");
	kv_reply_error(&b, "bad %s\r\nthing", "x");
	kv_reply_raw_error(&b, "WRONGPASS no");
	kv_reply_int(&b, -5);
	kv_reply_bulk(&b, "a\0b", 3);
	kv_reply_nil(&b);
	kv_reply_array(&b, 2);
	const char want[] =
	        "+OK\r\n-ERR bad x  thing\r\n-WRONGPASS no\r\n:-5\r\n$3\r\na\0b\r\n$-1\r\n*2\r\n";
	CHECK_EQ(b.len, sizeof(want) - 1);
	CHECK(b.len == sizeof(want) - 1 && !memcmp(b.data, want, b.len));
	CHECK(!b.oom);
	kv_buf_free(&b);
}

int main(void)
{
	RUN(test_multibulk);
	RUN(test_multibulk_in_pieces);
	RUN(test_inline);
	RUN(test_protocol_errors);
	RUN(test_string2ll);
	RUN(test_replies);
	return test_done();
}
