/* SPDX-License-Identifier: MIT */
/*
 * test_escape.c - text in the iface formats (iface/escape.c): JSON strings
 * and Prometheus label values escape what they must and stay valid UTF-8
 * (bytes that are not, as U+FFFD); percent-encoded words decode and
 * encode back, and malformed escapes and NULs are refused.
 */
#include "iface/escape.h"
#include "test.h"

static const char *json(const char *s, size_t n, struct mcg_out *o)
{
	mcg_out_reset(o, 0);
	mcg_json_string(o, s, n);
	return mcg_out_data(o);
}

static const char *prom(const char *s, size_t n, struct mcg_out *o)
{
	mcg_out_reset(o, 0);
	mcg_prom_label(o, s, n);
	return mcg_out_data(o);
}

static void test_utf8(void)
{
	const unsigned char ok2[] = {0xc3, 0xbc}, ok3[] = {0xe2, 0x82, 0xac},
	                    ok4[] = {0xf0, 0x9f, 0x98, 0x80}, over[] = {0xc0, 0xaf},
	                    surrogate[] = {0xed, 0xa0, 0x80}, high[] = {0xf4, 0x90, 0x80, 0x80},
	                    cut[] = {0xe2, 0x82};
	CHECK_EQ(mcg_utf8_valid_len((const unsigned char *)"a", 1), 1);
	CHECK_EQ(mcg_utf8_valid_len(ok2, 2), 2);
	CHECK_EQ(mcg_utf8_valid_len(ok3, 3), 3);
	CHECK_EQ(mcg_utf8_valid_len(ok4, 4), 4);
	CHECK_EQ(mcg_utf8_valid_len(over, 2), 0);
	CHECK_EQ(mcg_utf8_valid_len(surrogate, 3), 0);
	CHECK_EQ(mcg_utf8_valid_len(high, 4), 0);
	CHECK_EQ(mcg_utf8_valid_len(cut, 2), 0);
}

/* Each lead byte's second-byte range and the continuation bytes after it:
 * the ranges' edges accepted, one past them refused. */
static void test_utf8_edges(void)
{
	const unsigned char e0_lo[] = {0xe0, 0xa0, 0x80}, e0_over[] = {0xe0, 0x9f, 0xbf},
	                    f4_top[] = {0xf4, 0x8f, 0xbf, 0xbf}, f0_lo[] = {0xf0, 0x90, 0x80, 0x80},
	                    f0_over[] = {0xf0, 0x8f, 0xbf, 0xbf}, ed_top[] = {0xed, 0x9f, 0xbf},
	                    third_low[] = {0xe2, 0x82, 0x41}, third_high[] = {0xe2, 0x82, 0xc0},
	                    fourth_low[] = {0xf0, 0x9f, 0x98, 0x7f}, second_low[] = {0xc3, 0x7f},
	                    second_high[] = {0xc3, 0xc0}, lead_f5[] = {0xf5, 0x80, 0x80, 0x80},
	                    lead_c1[] = {0xc1, 0x80}, lone_cont[] = {0x80};
	CHECK_EQ(mcg_utf8_valid_len(e0_lo, 3), 3);
	CHECK_EQ(mcg_utf8_valid_len(e0_over, 3), 0);
	CHECK_EQ(mcg_utf8_valid_len(f4_top, 4), 4);
	CHECK_EQ(mcg_utf8_valid_len(f0_lo, 4), 4);
	CHECK_EQ(mcg_utf8_valid_len(f0_over, 4), 0);
	CHECK_EQ(mcg_utf8_valid_len(ed_top, 3), 3);
	CHECK_EQ(mcg_utf8_valid_len(third_low, 3), 0);
	CHECK_EQ(mcg_utf8_valid_len(third_high, 3), 0);
	CHECK_EQ(mcg_utf8_valid_len(fourth_low, 4), 0);
	CHECK_EQ(mcg_utf8_valid_len(second_low, 2), 0);
	CHECK_EQ(mcg_utf8_valid_len(second_high, 2), 0);
	CHECK_EQ(mcg_utf8_valid_len(lead_f5, 4), 0);
	CHECK_EQ(mcg_utf8_valid_len(lead_c1, 2), 0);
	CHECK_EQ(mcg_utf8_valid_len(lone_cont, 1), 0);
	/* a cut four-byte form: refused by its length, not its bytes */
	CHECK_EQ(mcg_utf8_valid_len(f4_top, 3), 0);
}

static void test_json_string(void)
{
	struct mcg_out o;
	mcg_out_init(&o);
	CHECK(!strcmp(json("plain", 5, &o), "\"plain\""));
	CHECK(!strcmp(json("a\"b\\c", 5, &o), "\"a\\\"b\\\\c\""));
	CHECK(!strcmp(json("l1\nl2\tx\x01", 8, &o), "\"l1\\nl2\\tx\\u0001\""));
	CHECK(!strcmp(json("\xc3\xbcn\xc3\xaf", 5, &o), "\"\xc3\xbcn\xc3\xaf\""));
	CHECK(!strcmp(json("a\xff"
	                   "b",
	                   3, &o),
	              "\"a\xef\xbf\xbd"
	              "b\""));
	CHECK(!strcmp(json("\xc3", 1, &o), "\"\xef\xbf\xbd\""));
	CHECK(!strcmp(json("", 0, &o), "\"\""));
	mcg_out_free(&o);
}

static void test_prom_label(void)
{
	struct mcg_out o;
	mcg_out_init(&o);
	CHECK(!strcmp(prom("/a/b", 4, &o), "/a/b"));
	CHECK(!strcmp(prom("q\"u\\o\nte", 8, &o), "q\\\"u\\\\o\\nte"));
	CHECK(!strcmp(prom("tab\there", 8, &o), "tab\there")); /* allowed as is */
	CHECK(!strcmp(prom("x\xfey", 3, &o), "x\xef\xbf\xbdy"));
	mcg_out_free(&o);
}

static void test_percent(void)
{
	char d[64];
	CHECK_EQ(mcg_percent_decode("/my%20tenant", 12, d), 10);
	CHECK(!strcmp(d, "/my tenant"));
	CHECK_EQ(mcg_percent_decode("%2f%2F%41", 9, d), 3);
	CHECK(!strcmp(d, "//A"));
	CHECK_EQ(mcg_percent_decode("abc", 2, d), 2); /* only @n bytes */
	CHECK(!strcmp(d, "ab"));
	CHECK_EQ(mcg_percent_decode("bad%", 4, d), -1);
	CHECK_EQ(mcg_percent_decode("bad%2", 5, d), -1);
	CHECK_EQ(mcg_percent_decode("bad%zz", 6, d), -1);
	CHECK_EQ(mcg_percent_decode("nul%00", 6, d), -1);
	CHECK_EQ(mcg_percent_decode("nul\0x", 5, d), -1);

	struct mcg_out o;
	mcg_out_init(&o);
	const char *odd = "q\"u\\ote \xc3\xbcn%/a-b_c.d:e+f";
	mcg_percent_encode(&o, odd);
	CHECK(!strcmp(mcg_out_data(&o), "q%22u%5cote%20%c3%bcn%25/a-b_c.d:e+f"));
	CHECK_EQ(mcg_percent_decode(mcg_out_data(&o), mcg_out_size(&o), d), (long)strlen(odd));
	CHECK(!strcmp(d, odd));
	mcg_out_free(&o);
}

int main(void)
{
	RUN(test_utf8);
	RUN(test_utf8_edges);
	RUN(test_json_string);
	RUN(test_prom_label);
	RUN(test_percent);
	return test_done();
}
