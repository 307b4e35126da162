/* SPDX-License-Identifier: MIT */
/*
 * test_out.c - the iface layer's output buffer (iface/out.c): appends grow
 * it, printf of any length, the head room and prepend, reset keeps memory,
 * and a failed growth (fault point) sets err and drops every later write;
 * so does a text past MCG_OUT_MAX (E2BIG), and a failed format changes
 * nothing.
 */
#include <errno.h>
#include <wchar.h>

#include "iface/out.h"
#include "memcg/debug.h"
#include "test.h"

static void test_append_and_printf(void)
{
	struct mcg_out o;
	mcg_out_init(&o);
	CHECK_EQ(mcg_out_size(&o), 0);
	CHECK(!strcmp(mcg_out_data(&o), ""));
	mcg_out_puts(&o, "abc");
	mcg_out_write(&o, "de", 2);
	mcg_out_printf(&o, "-%d-%s", 42, "x");
	CHECK(!strcmp(mcg_out_data(&o), "abcde-42-x"));
	CHECK_EQ(mcg_out_size(&o), 10);
	/* A formatted piece longer than all the room there is. */
	char big[5000];
	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	mcg_out_printf(&o, "[%s]", big);
	CHECK_EQ(mcg_out_size(&o), 10 + 2 + 4999);
	CHECK(o.buf[10] == '[' && o.buf[10 + 5000] == ']');
	CHECK_EQ(o.buf[o.len], '\0');
	CHECK_EQ(o.err, 0);
	mcg_out_free(&o);
	CHECK(o.buf == NULL);
}

static void test_head_and_prepend(void)
{
	struct mcg_out o;
	mcg_out_init(&o);
	mcg_out_reset(&o, 16);
	CHECK_EQ(mcg_out_size(&o), 0);
	mcg_out_puts(&o, "body\n");
	CHECK_EQ(mcg_out_prepend(&o, "ok 5\n", 5), 0);
	CHECK(!strcmp(mcg_out_data(&o), "ok 5\nbody\n"));
	CHECK_EQ(mcg_out_prepend(&o, "0123456789abcdef", 16), -ENOSPC); /* 11 left */
	CHECK(!strcmp(mcg_out_data(&o), "ok 5\nbody\n"));
	char *mem = o.buf;
	mcg_out_reset(&o, 0);
	CHECK(o.buf == mem); /* the memory stays */
	CHECK_EQ(mcg_out_size(&o), 0);
	CHECK(!strcmp(mcg_out_data(&o), ""));
	mcg_out_free(&o);
}

static void test_failed_growth_sets_err(void)
{
	struct mcg_out o;
	mcg_out_init(&o);
	mcg_out_puts(&o, "kept");
	size_t cap = o.cap;
	char big[2048];
	memset(big, 'y', sizeof(big));
	mcg_fault_inject(1, 1);
	mcg_out_write(&o, big, sizeof(big)); /* needs a growth: refused */
	mcg_fault_inject(0, 0);
	CHECK_EQ(o.err, -ENOMEM);
	CHECK_EQ(o.cap, cap);
	mcg_out_puts(&o, "dropped");
	mcg_out_printf(&o, "%s", "dropped too");
	CHECK(!strcmp(mcg_out_data(&o), "kept"));
	mcg_out_reset(&o, 0); /* clears the error */
	CHECK_EQ(o.err, 0);
	mcg_out_puts(&o, "again");
	CHECK(!strcmp(mcg_out_data(&o), "again"));
	mcg_out_free(&o);
}

/* The capacity grows by doubling and is kept: writes that fit in it never
 * allocate (armed, the fault point sees no call), the next growth doubles. */
static void test_capacity_kept(void)
{
	struct mcg_out o;
	mcg_out_init(&o);
	mcg_out_puts(&o, "a");
	CHECK_EQ(o.cap, 256);
	char *mem = o.buf;
	char fill[200];
	memset(fill, 'f', sizeof(fill));
	mcg_fault_inject(1, 1);
	mcg_out_write(&o, fill, sizeof(fill)); /* 201 + the NUL fit in 256 */
	CHECK_EQ(mcg_fault_count(), 0);
	mcg_fault_inject(0, 0);
	CHECK_EQ(o.err, 0);
	CHECK(o.buf == mem);
	CHECK_EQ(mcg_out_size(&o), 201);
	mcg_out_write(&o, fill, 100); /* 301: one growth, to 512 */
	CHECK_EQ(o.cap, 512);
	CHECK_EQ(mcg_out_size(&o), 301);
	mcg_fault_inject(1, 1);
	mcg_out_write(&o, fill, 200); /* 501 + the NUL fit in 512 */
	CHECK_EQ(mcg_fault_count(), 0);
	mcg_fault_inject(0, 0);
	CHECK_EQ(o.err, 0);
	CHECK_EQ(mcg_out_size(&o), 501);
	mcg_out_free(&o);
}

/* Past MCG_OUT_MAX: E2BIG, nothing written (a printf's cut text stays out
 * of a buffer that had room for part of it); a printf that fails to format
 * (an unconvertible wide character) changes nothing. */
static void test_too_big_and_bad_format(void)
{
	struct mcg_out o;
	mcg_out_init(&o);
	mcg_out_write(&o, NULL, MCG_OUT_MAX);
	CHECK_EQ(o.err, -E2BIG);
	CHECK_EQ(mcg_out_size(&o), 0);
	mcg_out_free(&o);
	mcg_out_init(&o); /* no buffer yet: nothing to cut */
	mcg_out_printf(&o, "%*d", (int)MCG_OUT_MAX, 1);
	CHECK_EQ(o.err, -E2BIG);
	CHECK_EQ(mcg_out_size(&o), 0);
	mcg_out_free(&o);
	mcg_out_init(&o);
	mcg_out_puts(&o, "abc");
	mcg_out_printf(&o, "%*d", (int)MCG_OUT_MAX, 1);
	CHECK_EQ(o.err, -E2BIG);
	CHECK(!strcmp(mcg_out_data(&o), "abc"));
	mcg_out_free(&o);
	mcg_out_init(&o);
	mcg_out_puts(&o, "x");
	mcg_out_printf(&o, "%lc", (wint_t)0x10000); /* no multibyte form in the C locale */
	CHECK_EQ(o.err, 0);
	CHECK(!strcmp(mcg_out_data(&o), "x"));
	CHECK_EQ(mcg_out_size(&o), 1);
	mcg_out_free(&o);
}

int main(void)
{
	RUN(test_append_and_printf);
	RUN(test_head_and_prepend);
	RUN(test_failed_growth_sets_err);
	RUN(test_capacity_kept);
	RUN(test_too_big_and_bad_format);
	return test_done();
}
