/* SPDX-License-Identifier: MIT */
/*
 * test_proto.c - the control protocol on bytes alone (iface/proto.c), with
 *
 *   /
 *   |- p-a        memory.max written through the protocol
 *   |  `- x
 *   `- sp ace     (named with %20 on the wire)
 *
 * Every reply is framed "ok LEN\n" + LEN bytes (checked exactly) or is one
 * "error NAME text\n" line.  Each command in its text and JSON forms;
 * writes, creates and removes take effect, and each malformed or refused
 * request (empty, unknown, bad escapes, too many words, wrong counts, the
 * wrong form, overlong lines, a bad value, the root's limits, busy and
 * missing groups) answers an error and changes nothing.  A fault sweep over
 * the largest replies gives a whole reply or "error ENOMEM".
 */
#include <errno.h>
#include <stdbool.h>

#include "group_file.h"
#include "iface/proto.h"
#include "memcg/debug.h"
#include "memcg/kmalloc.h"
#include "memcg/slab.h"
#include "slab/kmalloc_fast.h"
#include "test.h"
#include "held.h"

static struct mcg_out reply;
static int last_err;

/* The reply to @line; for "ok" replies, the body after the checked head. */
static const char *ask(const char *line)
{
	last_err = mcg_control_handle_line(line, strlen(line), &reply);
	const char *r = mcg_out_data(&reply);
	size_t n = mcg_out_size(&reply);
	if (!strncmp(r, "ok ", 3)) {
		char *end;
		unsigned long len = strtoul(r + 3, &end, 10);
		CHECK_EQ(last_err, 0);
		CHECK(*end == '\n');
		CHECK_EQ(len, n - (size_t)(end + 1 - r));
		return end + 1;
	}
	CHECK(!strncmp(r, "error ", 6));
	CHECK(last_err < 0);
	CHECK(n > 0 && r[n - 1] == '\n' && !memchr(r, '\n', n - 1)); /* one line */
	return r;
}

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static mcg_group_t *a, *x, *sp;

static void test_help_and_info(void)
{
	CHECK(strstr(ask("help"), "\n  read PATH FILE   (json too)\n") != NULL);
	CHECK(strstr(ask("help\r"), "write PATH FILE VALUE") != NULL);
	char want[64];
	snprintf(want, sizeof(want), "pid %ld\nuid %ld\ncommand ", (long)getpid(), (long)getuid());
	const char *info = ask("info");
	CHECK(starts(info, want));
	CHECK(strstr(info, "\nprotocol 1\ngroups 4\n") != NULL);
	CHECK(strstr(info, "\nsocket -\nmetrics -\n") != NULL); /* not serving here */
	snprintf(want, sizeof(want), "{\"pid\":%ld,\"uid\":%ld,\"command\":\"", (long)getpid(),
	         (long)getuid());
	info = ask("json info");
	CHECK(starts(info, want));
	CHECK(strstr(info, ",\"protocol\":1,\"groups\":4,") != NULL);
	CHECK(strstr(info, ",\"socket\":null,\"metrics\":null,\"mapped_bytes\":") != NULL);
}

/* The process's memory beside the groups': mapped bytes and large blocks
 * (in use, retained, the cap), the same figures in info, json info, metrics
 * and json all, exact at rest (aging is off in the unit tests). */
static void expect_memory(size_t retained_at_least)
{
	/* Each reply once first: buffers grown before the figures are read. */
	const char *asks[] = {"info", "json info", "metrics", "json all"};
	for (int i = 0; i < 4; i++)
		ask(asks[i]);
	struct mcg_large_stats st;
	CHECK_EQ(mcg_kmalloc_large_stats(&st), 0);
	CHECK(st.retained >= retained_at_least);
	size_t mapped = mcg_os_mapped_bytes();
	char want[320];
	snprintf(want, sizeof(want),
	         "\nmapped_bytes %zu\nlarge_in_use_bytes %zu\nlarge_retained_bytes %zu\n"
	         "large_retained_cap_bytes %zu\n",
	         mapped, st.in_use, st.retained, st.cap);
	CHECK(strstr(ask("info"), want) != NULL);
	snprintf(want, sizeof(want),
	         ",\"mapped_bytes\":%zu,\"large_in_use_bytes\":%zu,\"large_retained_bytes\":%zu,"
	         "\"large_retained_cap_bytes\":%zu}\n",
	         mapped, st.in_use, st.retained, st.cap);
	CHECK(strstr(ask("json info"), want) != NULL);
	snprintf(want, sizeof(want),
	         "\nmemcg_mapped_bytes %zu\n# HELP memcg_large_bytes large blocks (above 256 "
	         "KiB)",
	         mapped);
	const char *m = ask("metrics");
	CHECK(strstr(m, want) != NULL);
	snprintf(want, sizeof(want),
	         "\nmemcg_large_bytes{state=\"in_use\"} %zu\nmemcg_large_bytes{state=\"retained\"} "
	         "%zu\nmemcg_large_bytes{state=\"cap\"} %zu\n",
	         st.in_use, st.retained, st.cap);
	CHECK(strstr(m, want) != NULL);
	snprintf(want, sizeof(want),
	         ",\"mapped_bytes\":%zu,\"large_in_use_bytes\":%zu,\"large_retained_bytes\":%zu,"
	         "\"large_retained_cap_bytes\":%zu},\"groups\":[",
	         mapped, st.in_use, st.retained, st.cap);
	CHECK(strstr(ask("json all"), want) != NULL); /* its info */
}

static void test_memory_figures(void)
{
	mcg_slab_shrink_all(); /* nothing retained from before */
	void *held = mcg_malloc(3u << 20), *freed = mcg_malloc(1u << 20);
	REQUIRE(held && freed);
	mcg_free(freed); /* kept for reuse: retained */
	expect_memory(1u << 20);
	mcg_free(held);
	mcg_slab_shrink_all();
	expect_memory(0);
	struct mcg_large_stats st;
	CHECK_EQ(mcg_kmalloc_large_stats(&st), 0);
	CHECK_EQ(st.retained, 0);
	CHECK_EQ(st.in_use, 0);
}

static void test_groups(void)
{
	CHECK(!strcmp(ask("groups"), "/\n/p-a\n/p-a/x\n/sp ace\n"));
	CHECK(!strcmp(ask("groups /p-a"), "/p-a\n/p-a/x\n"));
	CHECK(!strcmp(ask("json groups"), "[\"/\",\"/p-a\",\"/p-a/x\",\"/sp ace\"]\n"));
	CHECK(!strcmp(ask("groups /nope"),
	              "error ENOENT No such file or directory: group /nope\n"));
}

static void test_read(void)
{
	CHECK(!strcmp(ask("read /p-a memory.max"), "max\n"));
	CHECK(!strcmp(ask("read p-a/x memory.current"), "0\n"));
	CHECK(!strcmp(ask("read /sp%20ace memory.high"), "max\n"));
	CHECK(!strcmp(ask("json read /p-a memory.max"), "\"max\"\n"));
	CHECK(!strcmp(ask("json read /p-a cgroup.stat"),
	              "{\"nr_descendants\":1,\"nr_dying_descendants\":0}\n"));
	CHECK(starts(ask("read / memory.stat"), "anon "));
	CHECK(!strcmp(ask("read /p-a memory.nope"),
	              "error ENOENT No such file or directory: read /p-a memory.nope\n"));
	CHECK_EQ(last_err, -ENOENT);
	CHECK(starts(ask("read /p-a memory.reclaim"), "error EACCES "));
	CHECK(starts(ask("read /gone memory.max"), "error ENOENT "));
}

static void test_stat(void)
{
	const char *t = ask("stat /p-a/x");
	CHECK(starts(t, "==> /p-a/x/memory.current <==\n0\n\n==> /p-a/x/memory.min <==\n0\n"));
	CHECK(strstr(t, "\n==> /p-a/x/cgroup.stat <==\nnr_descendants 0\n") != NULL);
	t = ask("stat /");
	CHECK(starts(t, "==> /memory.current <==\n"));
	CHECK(strstr(t, "==> /sp ace/memory.max <==\nmax\n") != NULL);
	t = ask("json stat /p-a");
	CHECK(starts(t, "{\"groups\":[{\"path\":\"/p-a\",\"memory.current\":0,"));
	CHECK(strstr(t, "{\"path\":\"/p-a/x\",") != NULL);
	CHECK(strstr(t, "slabinfo") == NULL);
}

static void test_write(void)
{
	CHECK(!strcmp(ask("write /p-a memory.max 64M"), ""));
	CHECK_EQ(read_long(a, "memory.max"), 64l << 20);
	CHECK(!strcmp(ask("write /p-a memory.max 12x"),
	              "error EINVAL Invalid argument: write /p-a memory.max 12x\n"));
	CHECK_EQ(read_long(a, "memory.max"), 64l << 20); /* nothing changed */
	CHECK(starts(ask("write / memory.max 1G"), "error EINVAL "));
	CHECK(starts(ask("write /p-a memory.current 1"), "error EACCES "));
	CHECK(starts(ask("write /p-a memory.nope 1"), "error ENOENT "));
	CHECK(!strcmp(ask("write /p-a/x memory.high 1M%0a"), "")); /* a newline, escaped */
	CHECK_EQ(read_long(x, "memory.high"), 1l << 20);
	CHECK(!strcmp(ask("write /p-a memory.max max"), ""));
	CHECK(!strcmp(ask("read /p-a memory.max"), "max\n"));
}

static void test_create_remove(void)
{
	CHECK(!strcmp(ask("create /p-a/new%20one"), ""));
	CHECK(!strcmp(ask("groups /p-a"), "/p-a\n/p-a/x\n/p-a/new one\n"));
	CHECK(starts(ask("create /p-a/new%20one"), "error EEXIST "));
	CHECK(starts(ask("create /nope/x"), "error ENOENT "));
	CHECK(starts(ask("create /p-a/a%2fb"), "error ENOENT ")); /* "/p-a/a" is no group */
	CHECK(starts(ask("create /"), "error EINVAL "));
	CHECK(starts(ask("remove /p-a"), "error EBUSY "));
	CHECK(!strcmp(ask("remove /p-a/new%20one"), ""));
	CHECK(starts(ask("remove /p-a/new%20one"), "error ENOENT "));
	CHECK(starts(ask("remove /"), "error EINVAL "));
	CHECK(!strcmp(ask("create top-level"), ""));
	CHECK(!strcmp(ask("remove /top-level"), ""));
	CHECK_EQ(read_key(mcg_group_root(), "cgroup.stat", "nr_descendants"), 3);
}

static void test_slabinfo_metrics_all(void)
{
	CHECK(starts(ask("slabinfo"), "slabinfo - version: 2.1\n# name "));
	CHECK(strstr(ask("slabinfo"), "\nkmalloc-64 ") != NULL);
	CHECK(starts(ask("json slabinfo"), "[{\"name\":\"kmalloc-"));
	const char *m = ask("metrics");
	CHECK(starts(m, "# HELP memcg_groups "));
	CHECK(strstr(m, "\nmemcg_memory_current_bytes{group=\"/sp ace\"} 0\n") != NULL);
	const char *all = ask("json all");
	CHECK(starts(all, "{\"info\":{\"pid\":"));
	CHECK(strstr(all, "],\"slabinfo\":[{\"name\":") != NULL);
	CHECK(!strcmp(all + strlen(all) - 3, "]}\n"));
}

static void test_malformed(void)
{
	static const struct {
		const char *line, *reply;
	} bad[] = {
	        {"", "error EINVAL Invalid argument: an empty request (try: help)\n"},
	        {"   \t ", "error EINVAL Invalid argument: an empty request (try: help)\n"},
	        {"json", "error EINVAL Invalid argument: an empty request (try: help)\n"},
	        {"frobnicate", "error EINVAL Invalid argument: unknown command frobnicate "
	                       "(try: help)\n"},
	        {"fr%0abnicate", "error EINVAL Invalid argument: unknown command fr%0abnicate "
	                         "(try: help)\n"},
	        {"read /p-a%zz memory.max",
	         "error EINVAL Invalid argument: word 2: a bad %-escape or a NUL byte\n"},
	        {"read /p-a%00 memory.max",
	         "error EINVAL Invalid argument: word 2: a bad %-escape or a NUL byte\n"},
	        {"read /p-a", "error EINVAL Invalid argument: usage: read PATH FILE\n"},
	        {"write /p-a memory.max 1M extra",
	         "error EINVAL Invalid argument: usage: write PATH FILE VALUE\n"},
	        {"a b c d e f g h i", "error EINVAL Invalid argument: more than 8 words\n"},
	        {"json write /p-a memory.max 1M",
	         "error EINVAL Invalid argument: write has no JSON form\n"},
	        {"json metrics", "error EINVAL Invalid argument: metrics has no JSON form\n"},
	        {"all", "error EINVAL Invalid argument: all has no text form\n"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *r = ask(bad[i].line);
		if (strcmp(r, bad[i].reply))
			CHECK(!fprintf(stderr, "'%s' -> '%s'\n", bad[i].line, r));
		CHECK_EQ(last_err, -EINVAL);
	}
	/* A NUL byte inside the line itself. */
	last_err = mcg_control_handle_line("info\0x", 6, &reply);
	CHECK(starts(mcg_out_data(&reply), "error EINVAL "));
	/* The longest line passes the length check; one byte more does not. */
	char line[MCG_CONTROL_LINE_MAX + 1];
	memset(line, 'x', sizeof(line));
	memcpy(line, "read / ", 7);
	last_err = mcg_control_handle_line(line, MCG_CONTROL_LINE_MAX - 1, &reply);
	CHECK(starts(mcg_out_data(&reply), "error ENOENT ")); /* a file named xxx... */
	last_err = mcg_control_handle_line(line, MCG_CONTROL_LINE_MAX, &reply);
	CHECK(!strcmp(mcg_out_data(&reply),
	              "error E2BIG Argument list too long: a request is at most 4095 bytes\n"));
	CHECK(!strcmp(ask("read /p-a memory.max"), "max\n")); /* nothing changed meanwhile */
}

static void test_fault_sweep(void)
{
	static const char *const lines[] = {"json all", "metrics", "stat /", "read / memory.stat",
	                                    "json read / memory.stat"};
	for (size_t l = 0; l < sizeof(lines) / sizeof(lines[0]); l++) {
		int done = 0, failed = 0;
		for (unsigned long n = 1; n < 5000 && !done; n++) {
			mcg_fault_inject(n, 0);
			int err = mcg_control_handle_line(lines[l], strlen(lines[l]), &reply);
			unsigned long hit = mcg_fault_failed();
			mcg_fault_inject(0, 0);
			const char *r = mcg_out_data(&reply);
			if (err) {
				failed++;
				CHECK_EQ(err, -ENOMEM);
				CHECK(starts(r, "error ENOMEM "));
			} else {
				CHECK(starts(r, "ok "));
			}
			done = !hit;
			/* Each round starts with a fresh buffer, so growth is exercised. */
			mcg_out_free(&reply);
		}
		CHECK(done);
		CHECK(failed > 0);
	}
}

/* info's command is this process's command line, its NULs spaces. */
static void test_info_command(void)
{
	char cmd[512] = "";
	FILE *fp = fopen("/proc/self/cmdline", "r");
	REQUIRE(fp);
	size_t n = fread(cmd, 1, sizeof(cmd) - 1, fp);
	fclose(fp);
	REQUIRE(n > 0);
	while (n > 0 && cmd[n - 1] == '\0')
		n--;
	cmd[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (cmd[i] == '\0')
			cmd[i] = ' ';
	char want[600];
	snprintf(want, sizeof(want), "\ncommand %s\n", cmd);
	CHECK(strstr(ask("info"), want) != NULL);
}

/* A refused request gives back the scratch text of its error line: after
 * many, the library holds no more objects than before. */
static void test_errors_keep_nothing(void)
{
	static const char *const lines[] = {"frobnicate now", "read /no-such memory.max",
	                                    "json stat /no-such", "write /no-such memory.max 1"};
	for (size_t l = 0; l < sizeof(lines) / sizeof(lines[0]); l++)
		ask(lines[l]); /* the reply buffer at its size */
	size_t before = held_kmalloc_objects();
	for (int k = 0; k < 64; k++)
		for (size_t l = 0; l < sizeof(lines) / sizeof(lines[0]); l++)
			CHECK(starts(ask(lines[l]), "error E"));
	CHECK_EQ(held_kmalloc_objects(), before);
}

/*
 * Sticky faults (the Nth allocation and every one after it fail) over the
 * commands, the reply buffer kept between rounds: a whole reply, or an
 * ENOMEM error line, or nothing when the buffer had no room even for the
 * shortest one and no memory came.
 */
static void test_fault_sweep_sticky(void)
{
	static const char *const lines[] = {
	        "json all",    "slabinfo", "json slabinfo",     "groups",
	        "json stat /", "info",     "read / memory.stat"};
	for (int fresh = 0; fresh < 2; fresh++) {
		for (size_t l = 0; l < sizeof(lines) / sizeof(lines[0]); l++) {
			int done = 0, failed = 0;
			for (unsigned long n = 1; n < 5000 && !done; n++) {
				mcg_fault_inject(n, 1);
				int err =
				        mcg_control_handle_line(lines[l], strlen(lines[l]), &reply);
				unsigned long hit = mcg_fault_failed();
				mcg_fault_inject(0, 0);
				size_t len = reply.buf ? mcg_out_size(&reply) : 0;
				const char *r = len ? mcg_out_data(&reply) : NULL;
				if (err) {
					failed++;
					CHECK_EQ(err, -ENOMEM);
					if (r && !starts(r, "error ENOMEM "))
						CHECK(!fprintf(stderr, "'%s' n %lu: '%.*s'\n",
						               lines[l], n, (int)len, r));
				} else {
					CHECK(r && starts(r, "ok "));
				}
				done = !hit;
				if (fresh)
					mcg_out_free(&reply);
			}
			CHECK(done);
			CHECK(failed > 0 || !fresh); /* a kept buffer may need no memory */
		}
	}
}

/* An error about a word holding control bytes is still one printable line. */
static void test_error_text_printable(void)
{
	const char *r = ask("read /no%01pe%7f memory.max");
	CHECK(starts(r, "error ENOENT "));
	size_t n = strlen(r);
	for (size_t i = 0; i + 1 < n; i++)
		CHECK((unsigned char)r[i] >= 0x20 && r[i] != 0x7f);
}

/*
 * mcg_control_error() itself: control bytes in the text as '?', an errno
 * with no name as EIO, and a reply that cannot grow for the text (no
 * memory) replaced by the shortest line where the buffer has room for it.
 */
static void test_error_line(void)
{
	struct mcg_out o;
	mcg_out_init(&o);
	CHECK_EQ(mcg_control_error(&o, -EINVAL, "a%cb%cc%cd", 1, 0x7f, '\t'), -EINVAL);
	CHECK(!strcmp(mcg_out_data(&o), "error EINVAL Invalid argument: a?b?c?d\n"));
	CHECK_EQ(mcg_control_error(&o, -4000, "odd"), -4000);
	CHECK(!strcmp(mcg_out_data(&o), "error EIO error: odd\n"));
	/* The buffer holds 256 bytes; the text needs more, and no memory comes. */
	mcg_out_puts(&o, "0123456789");
	REQUIRE(o.cap == 256);
	mcg_fault_inject(1, 1);
	int err = mcg_control_error(&o, -EBUSY, "%0400d", 7);
	unsigned long failed = mcg_fault_failed();
	mcg_fault_inject(0, 0);
	CHECK_EQ(err, -EBUSY);
	CHECK_EQ(failed, 1);
	CHECK_EQ(o.err, 0);
	CHECK(!strcmp(mcg_out_data(&o), "error ENOMEM out of memory\n"));
	/* No buffer at all: no line either, the error still returned. */
	mcg_out_free(&o);
	mcg_fault_inject(1, 1);
	err = mcg_control_error(&o, -EBUSY, "x");
	mcg_fault_inject(0, 0);
	CHECK_EQ(err, -EBUSY);
	CHECK_EQ(mcg_out_size(&o), 0);
	mcg_out_free(&o);
}

/* An error line about a word whose encoding cannot get memory: the word
 * shows as "?", the error is the lookup's; or the whole line is ENOMEM. */
static void test_error_word_without_memory(void)
{
	static const char line[] = "read /no%20such memory.max";
	int done = 0, unknown = 0;
	for (unsigned long n = 1; n < 100 && !done; n++) {
		mcg_out_free(&reply);
		mcg_fault_inject(n, 0);
		int err = mcg_control_handle_line(line, strlen(line), &reply);
		unsigned long hit = mcg_fault_failed();
		mcg_fault_inject(0, 0);
		const char *r = mcg_out_data(&reply);
		if (!hit) {
			CHECK_EQ(err, -ENOENT);
			CHECK(!strcmp(
			        r, "error ENOENT No such file or directory: group /no%20such\n"));
			done = 1;
		} else if (err == -ENOENT) {
			CHECK(!strcmp(r, "error ENOENT No such file or directory: group ?\n"));
			unknown++;
		} else {
			CHECK_EQ(err, -ENOMEM);
			CHECK(starts(r, "error ENOMEM "));
		}
	}
	CHECK(done);
	CHECK(unknown >= 1);
}

int main(void)
{
	mcg_out_init(&reply);
	mcg_group_create(NULL, "p-a", &a);
	mcg_group_create(a, "x", &x);
	mcg_group_create(NULL, "sp ace", &sp);
	RUN(test_help_and_info);
	RUN(test_info_command);
	RUN(test_memory_figures);
	RUN(test_groups);
	RUN(test_read);
	RUN(test_stat);
	RUN(test_write);
	RUN(test_create_remove);
	RUN(test_slabinfo_metrics_all);
	RUN(test_malformed);
	RUN(test_errors_keep_nothing);
	RUN(test_fault_sweep);
	RUN(test_fault_sweep_sticky);
	RUN(test_error_text_printable);
	RUN(test_error_line);
	RUN(test_error_word_without_memory);
	mcg_out_free(&reply);
	mcg_group_t *gs[] = {x, a, sp};
	for (int i = 0; i < 3; i++) {
		mcg_group_remove(gs[i]);
		mcg_group_put(gs[i]);
	}
	return test_done();
}
