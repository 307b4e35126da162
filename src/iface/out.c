/* SPDX-License-Identifier: MIT */
/* iface/out.c - the growing output buffer (see out.h).  No locks. */
#include "iface/out.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/fault.h"
#include "memcg/kmalloc.h"

void mcg_out_init(struct mcg_out *o) { memset(o, 0, sizeof(*o)); }

void mcg_out_free(struct mcg_out *o)
{
	mcg_free(o->buf);
	mcg_out_init(o);
}

void mcg_out_reset(struct mcg_out *o, size_t head)
{
	o->err = 0;
	o->start = o->len = 0;
	if (head) {
		mcg_out_write(o, NULL, head); /* zeros, to be overwritten by the head */
		if (o->err) {
			o->len = 0;
			return;
		}
		o->start = head;
	}
	if (o->buf)
		o->buf[o->len] = '\0';
}

/* Make room for @n more bytes and a NUL; false (err set) if impossible. */
static bool out_room(struct mcg_out *o, size_t n)
{
	if (o->err)
		return false;
	if (n > MCG_OUT_MAX || o->len + n + 1 > MCG_OUT_MAX) {
		o->err = -E2BIG;
		return false;
	}
	if (o->len + n + 1 <= o->cap)
		return true;
	size_t cap = o->cap ? o->cap : 256;
	while (cap < o->len + n + 1)
		cap *= 2;
	char *b = mcg_fault_should_fail() ? NULL : mcg_realloc(o->buf, cap);
	if (!b) {
		o->err = -ENOMEM;
		return false;
	}
	o->buf = b;
	o->cap = cap;
	return true;
}

void mcg_out_write(struct mcg_out *o, const void *data, size_t n)
{
	if (!out_room(o, n))
		return;
	if (data)
		memcpy(o->buf + o->len, data, n);
	else
		memset(o->buf + o->len, 0, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

void mcg_out_puts(struct mcg_out *o, const char *s) { mcg_out_write(o, s, strlen(s)); }

void mcg_out_vprintf(struct mcg_out *o, const char *fmt, va_list ap)
{
	if (o->err)
		return;
	va_list again;
	va_copy(again, ap);
	size_t room = o->cap > o->len ? o->cap - o->len : 0;
	int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
	if (n < 0) {
		va_end(again);
		return;
	}
	if ((size_t)n >= room) {
		if (out_room(o, (size_t)n)) {
			vsnprintf(o->buf + o->len, (size_t)n + 1, fmt, again);
		} else {
			if (room)
				o->buf[o->len] = '\0'; /* the cut text stays out */
			n = -1;
		}
	}
	va_end(again);
	if (n >= 0)
		o->len += (size_t)n;
}

void mcg_out_printf(struct mcg_out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mcg_out_vprintf(o, fmt, ap);
	va_end(ap);
}

int mcg_out_prepend(struct mcg_out *o, const void *data, size_t n)
{
	if (n > o->start)
		return -ENOSPC;
	o->start -= n;
	memcpy(o->buf + o->start, data, n);
	return 0;
}
