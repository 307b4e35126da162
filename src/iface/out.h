/* SPDX-License-Identifier: MIT */
/*
 * iface/out.h - a growing output buffer: what every reply, rendering and
 * snapshot of the iface layer is written into.
 *
 * The text lives in buf[start, len); `start` leaves room in front for a
 * header written last (mcg_out_prepend: a reply's length goes before its
 * body without a copy).  Memory comes from memcg's own allocator (never the
 * process's malloc: inside the shim that would be the same allocator, and
 * outside it must not depend on it), through the fault-injection point.
 * A failed growth sets `err` (-ENOMEM, or -E2BIG past MCG_OUT_MAX) and
 * every later write is dropped, so a renderer needs no error paths: the
 * caller checks `err` once at the end.
 *
 * Not thread safe: one owner.
 */
#ifndef MCG_IFACE_OUT_H
#define MCG_IFACE_OUT_H

#include <stdarg.h>
#include <stddef.h>

/** Largest buffer: a reply bigger than this is an error (-E2BIG). */
#define MCG_OUT_MAX ((size_t)256 << 20)

struct mcg_out {
	char *buf;
	size_t start, len, cap;
	int err; /* 0, -ENOMEM or -E2BIG: the text is incomplete */
};

/** mcg_out_init - an empty buffer owning no memory. */
void mcg_out_init(struct mcg_out *o);

/** mcg_out_free - free the memory; @o is empty again.  Pair with mcg_out_init(). */
void mcg_out_free(struct mcg_out *o);

/** mcg_out_reset - empty @o (and clear err), keeping its memory; leave @head bytes in front. */
void mcg_out_reset(struct mcg_out *o, size_t head);

/** mcg_out_data - the text (NUL-terminated unless err or empty with no memory). */
static inline const char *mcg_out_data(const struct mcg_out *o)
{
	return o->buf ? o->buf + o->start : "";
}

/** mcg_out_size - the text's length in bytes. */
static inline size_t mcg_out_size(const struct mcg_out *o) { return o->len - o->start; }

/** mcg_out_write - append @n bytes of @data. */
void mcg_out_write(struct mcg_out *o, const void *data, size_t n);

/** mcg_out_puts - append the string @s. */
void mcg_out_puts(struct mcg_out *o, const char *s);

/** mcg_out_printf - append printf-formatted text. */
void mcg_out_printf(struct mcg_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** mcg_out_vprintf - mcg_out_printf() with a va_list. */
void mcg_out_vprintf(struct mcg_out *o, const char *fmt, va_list ap)
        __attribute__((format(printf, 2, 0)));

/**
 * mcg_out_prepend - put @n bytes of @data in front of the text, in the room
 * mcg_out_reset() left.  Return: 0, or -ENOSPC (not that much room: nothing
 * written).
 */
int mcg_out_prepend(struct mcg_out *o, const void *data, size_t n);

#endif /* MCG_IFACE_OUT_H */
