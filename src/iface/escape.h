/* SPDX-License-Identifier: MIT */
/*
 * iface/escape.h - text in the iface layer's formats: JSON strings,
 * Prometheus label values, and the control protocol's percent-encoded
 * words.
 *
 * Group names may hold any byte but '/' and control characters (group.h),
 * so they may hold spaces, quotes, backslashes and bytes that are not
 * UTF-8.  JSON and Prometheus need valid UTF-8: a byte that does not start
 * a valid sequence is written as U+FFFD (the replacement character).  The
 * protocol's words carry any byte: "%XX" (two hex digits) stands for byte
 * XX, so a path with a space is "/my%20tenant".
 *
 * Pure functions; no locks.
 */
#ifndef MCG_IFACE_ESCAPE_H
#define MCG_IFACE_ESCAPE_H

#include <stddef.h>

#include "iface/out.h"

/** mcg_utf8_valid_len - the length (1-4) of the valid UTF-8 sequence at @s (@n bytes left), 0 if
 * none. */
size_t mcg_utf8_valid_len(const unsigned char *s, size_t n);

/** mcg_json_string - append @s (@n bytes) as a JSON string, quotes included. */
void mcg_json_string(struct mcg_out *o, const char *s, size_t n);

/** mcg_prom_label - append @s (@n bytes) escaped as a Prometheus label value (no quotes). */
void mcg_prom_label(struct mcg_out *o, const char *s, size_t n);

/**
 * mcg_percent_decode - decode @n bytes of @s into @dst (room for @n + 1
 * bytes; the result is never longer): "%XX" becomes byte XX.
 * Return: the decoded length, or -1 for a '%' not followed by two hex
 * digits, or a decoded NUL byte.
 */
long mcg_percent_decode(const char *s, size_t n, char *dst);

/**
 * mcg_percent_encode - append @s encoded as a protocol word: every byte
 * that is not a letter, a digit or one of "/._-:+" as "%XX".
 */
void mcg_percent_encode(struct mcg_out *o, const char *s);

#endif /* MCG_IFACE_ESCAPE_H */
