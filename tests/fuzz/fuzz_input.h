/* SPDX-License-Identifier: MIT */
/*
 * fuzz_input.h - a fuzz target's input read a byte at a time; past its end
 * every byte reads 0, so a short input is a program of defaults, not an error.
 */
#ifndef MCG_FUZZ_INPUT_H
#define MCG_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

struct in {
	const uint8_t *p;
	size_t n;
};

static inline unsigned u8(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

#endif /* MCG_FUZZ_INPUT_H */
