/* SPDX-License-Identifier: MIT */
/* iface/escape.c - JSON strings, Prometheus labels, percent-encoded words (see escape.h). */
#include "iface/escape.h"

#include <stdbool.h>

static const char hex[] = "0123456789abcdef";
static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

size_t mcg_utf8_valid_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	size_t len;
	unsigned lo = 0x80, hi = 0xbf; /* the second byte's range */
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0; /* no overlong forms */
		else if (c == 0xed)
			hi = 0x9f; /* no surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f; /* nothing above U+10FFFF */
	} else {
		return 0;
	}
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

void mcg_json_string(struct mcg_out *o, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	mcg_out_write(o, "\"", 1);
	size_t i = 0, run = 0; /* bytes [i - run, i) copy as they are */
	while (i < n) {
		unsigned char c = u[i];
		size_t len =
		        c >= 0x20 && c != '"' && c != '\\' ? mcg_utf8_valid_len(u + i, n - i) : 0;
		if (len) {
			i += len;
			run += len;
			continue;
		}
		mcg_out_write(o, s + i - run, run);
		run = 0;
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			mcg_out_write(o, e, 2);
		} else if (c == '\n') {
			mcg_out_write(o, "\\n", 2);
		} else if (c == '\t') {
			mcg_out_write(o, "\\t", 2);
		} else if (c < 0x20) {
			char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			mcg_out_write(o, e, 6);
		} else {
			mcg_out_write(o, replacement, 3);
		}
		i++;
	}
	mcg_out_write(o, s + i - run, run);
	mcg_out_write(o, "\"", 1);
}

void mcg_prom_label(struct mcg_out *o, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0;
	while (i < n) {
		unsigned char c = u[i];
		size_t len =
		        c != '"' && c != '\\' && c != '\n' ? mcg_utf8_valid_len(u + i, n - i) : 0;
		if (len) {
			i += len;
			run += len;
			continue;
		}
		mcg_out_write(o, s + i - run, run);
		run = 0;
		if (c == '"')
			mcg_out_write(o, "\\\"", 2);
		else if (c == '\\')
			mcg_out_write(o, "\\\\", 2);
		else if (c == '\n')
			mcg_out_write(o, "\\n", 2);
		else
			mcg_out_write(o, replacement, 3);
		i++;
	}
	mcg_out_write(o, s + i - run, run);
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

long mcg_percent_decode(const char *s, size_t n, char *dst)
{
	size_t d = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '%') {
			int h = i + 2 < n ? hex_value(s[i + 1]) : -1;
			int l = h >= 0 ? hex_value(s[i + 2]) : -1;
			if (h < 0 || l < 0 || (h == 0 && l == 0))
				return -1;
			c = (char)(h << 4 | l);
			i += 2;
		} else if (c == '\0') {
			return -1;
		}
		dst[d++] = c;
	}
	dst[d] = '\0';
	return (long)d;
}

static bool word_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '/' || c == '.' || c == '_' || c == '-' || c == ':' || c == '+';
}

void mcg_percent_encode(struct mcg_out *o, const char *s)
{
	for (const unsigned char *u = (const unsigned char *)s; *u; u++) {
		if (word_char(*u)) {
			mcg_out_write(o, u, 1);
		} else {
			char e[3] = {'%', hex[*u >> 4], hex[*u & 15]};
			mcg_out_write(o, e, 3);
		}
	}
}
