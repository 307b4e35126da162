/* SPDX-License-Identifier: MIT */
/*
 * fuzz_control.c - libFuzzer target for the control protocol's parser and
 * dispatcher (iface/proto.c: mcg_control_handle_line(), bytes in, a reply
 * out; no socket).
 *
 * Input: one request line (any bytes; '\n' inside it too, which a server
 * would have split on).  Checks:
 *  - the reply is "ok LEN\n" followed by exactly LEN bytes, and the return
 *    value 0; or one line "error NAME text\n" with no other newline, NAME
 *    an errno name in capitals, and the return value negative;
 *  - on an error nothing changed: the same groups (paths) with the same
 *    limits (memory.min/low/high/max and the memory.dirty_* files) as
 *    before the request;
 *  - the world is put back after each input: groups the request created
 *    are removed, limits it wrote are reset.
 * The world: "/fz" with children "a" and "b c" (a space, percent-encoded
 * in requests as %20), a few pages charged to "/fz/a".
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iface/out.h"
#include "iface/proto.h"
#include "memcg/group.h"
#include "memcg/memcg.h"
#include "memcg/reclaim.h"

#define FUZZ_ASSERT(c)                                                                             \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #c);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static mcg_group_t *fz, *fa, *fbc;
static struct mcg_out reply;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	mcg_options_use_env(0);
	mcg_option_set("reap_ms", 0);
	mcg_reclaim_init();
	FUZZ_ASSERT(mcg_group_create(NULL, "fz", &fz) == 0);
	FUZZ_ASSERT(mcg_group_create(fz, "a", &fa) == 0);
	FUZZ_ASSERT(mcg_group_create(fz, "b c", &fbc) == 0);
	FUZZ_ASSERT(mcg_charge(fa, 3, 0) == 0);
	mcg_out_init(&reply);
	return 0;
}

/* The state a failed request must leave as it was: each group's path and limits. */
static void world_text(struct mcg_out *o, mcg_group_t *g, const char *path)
{
	static const char *const files[] = {"memory.min",         "memory.low",
	                                    "memory.high",        "memory.max",
	                                    "memory.dirty_ratio", "memory.dirty_background_ratio",
	                                    "memory.dirty_bytes", "memory.dirty_background_bytes"};
	mcg_out_printf(o, "%s:", path);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char buf[64];
		FUZZ_ASSERT(mcg_group_read(g, files[i], buf, sizeof(buf)) > 0);
		mcg_out_puts(o, buf);
	}
	mcg_group_t *c = NULL;
	while ((c = mcg_group_next_child(g, c))) {
		char sub[1024];
		snprintf(sub, sizeof(sub), "%s/%s", path, mcg_group_name(c));
		world_text(o, c, sub);
	}
}

/* Remove every group below @g but those of the world; reset the world's limits. */
static void world_restore(mcg_group_t *g, bool keep)
{
	mcg_group_t *c = NULL;
	while ((c = mcg_group_next_child(g, c))) {
		bool ours = c == fz || c == fa || c == fbc;
		world_restore(c, ours);
		if (!ours)
			FUZZ_ASSERT(mcg_group_remove(c) == 0);
	}
	if (keep && g != mcg_group_root()) {
		FUZZ_ASSERT(mcg_group_write(g, "memory.min", "0") == 0);
		FUZZ_ASSERT(mcg_group_write(g, "memory.low", "0") == 0);
		FUZZ_ASSERT(mcg_group_write(g, "memory.high", "max") == 0);
		FUZZ_ASSERT(mcg_group_write(g, "memory.max", "max") == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > MCG_CONTROL_LINE_MAX)
		return 0;
	struct mcg_out before, after;
	mcg_out_init(&before);
	mcg_out_init(&after);
	world_text(&before, mcg_group_root(), "");

	int ret = mcg_control_handle_line((const char *)data, size, &reply);

	FUZZ_ASSERT(!reply.err);
	const char *r = mcg_out_data(&reply);
	size_t n = mcg_out_size(&reply);
	FUZZ_ASSERT(n > 0 && r[n - 1] == '\n' || (n > 0 && !strncmp(r, "ok ", 3)));
	if (ret == 0) {
		FUZZ_ASSERT(!strncmp(r, "ok ", 3));
		char *end;
		unsigned long long len = strtoull(r + 3, &end, 10);
		FUZZ_ASSERT(end > r + 3 && *end == '\n');
		FUZZ_ASSERT((size_t)(end + 1 - r) + len == n);
	} else {
		FUZZ_ASSERT(ret < 0 && !strncmp(r, "error E", 7));
		FUZZ_ASSERT(memchr(r, '\n', n) == r + n - 1);
		FUZZ_ASSERT(memchr(r, '\0', n) == NULL);
		size_t k = 6;
		while (k < n && ((r[k] >= 'A' && r[k] <= 'Z') || (r[k] >= '0' && r[k] <= '9')))
			k++;
		FUZZ_ASSERT(k > 7 && k < n && (r[k] == ' ' || r[k] == '\n'));
		world_text(&after, mcg_group_root(), "");
		if (mcg_out_size(&before) != mcg_out_size(&after) ||
		    memcmp(mcg_out_data(&before), mcg_out_data(&after), mcg_out_size(&before))) {
			fprintf(stderr, "changed by a failed request:\n%s\n---\n%s\n",
			        mcg_out_data(&before), mcg_out_data(&after));
			FUZZ_ASSERT(!"a failed request changed the groups");
		}
	}
	mcg_out_free(&before);
	mcg_out_free(&after);
	world_restore(mcg_group_root(), false);
	return 0;
}
