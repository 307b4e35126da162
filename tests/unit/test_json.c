/* SPDX-License-Identifier: MIT */
/*
 * test_json.c - snapshots as JSON (iface/json.c), on snapshots built by
 * hand: a file's text as a number, a string or an object; a group with its
 * path escaped; the caches; the whole snapshot - each compared byte for
 * byte with the expected text.
 */
#include "iface/json.h"
#include "test.h"

static const char *value(const char *text, struct mcg_out *o)
{
	mcg_out_reset(o, 0);
	mcg_json_file_value(o, text);
	return mcg_out_data(o);
}

static void test_file_values(void)
{
	struct mcg_out o;
	mcg_out_init(&o);
	CHECK(!strcmp(value("4096\n", &o), "4096"));
	CHECK(!strcmp(value("max\n", &o), "\"max\""));
	CHECK(!strcmp(value("", &o), "null"));
	CHECK(!strcmp(value("anon 0\nkernel 8192\n", &o), "{\"anon\":0,\"kernel\":8192}"));
	CHECK(!strcmp(value("pressure_running 1\npressure_psi trigger\n", &o),
	              "{\"pressure_running\":1,\"pressure_psi\":\"trigger\"}"));
	CHECK(!strcmp(value("a 1\nlonely\n", &o), "{\"a\":1,\"lonely\":null}"));
	/* a key alone first, with lines after it: an object, not one value */
	CHECK(!strcmp(value("lonely\na 1\n", &o), "{\"lonely\":null,\"a\":1}"));
	/* the last line without its newline */
	CHECK(!strcmp(value("4096", &o), "4096"));
	CHECK(!strcmp(value("a 1\nb 2", &o), "{\"a\":1,\"b\":2}"));
	mcg_out_free(&o);
}

static struct mcg_snapshot snap(void)
{
	struct mcg_snapshot s;
	mcg_snapshot_init(&s);
	const char *root[MCG_SNAP_NR_FILES] = {[MCG_SNAP_CURRENT] = "8192\n",
	                                       [MCG_SNAP_MAX] = "max\n",
	                                       [MCG_SNAP_EVENTS] = "low 0\nmax 2\n"};
	const char *odd[MCG_SNAP_NR_FILES] = {
	        [MCG_SNAP_CURRENT] = "4096\n", [MCG_SNAP_MAX] = "65536\n"};
	mcg_snapshot_add_group(&s, "/", 0, root);
	mcg_snapshot_add_group(&s, "/q\"u\\ote \xc3\xbc", 1, odd);
	mcg_cache_stats_t st = {.active_objs = 3,
	                        .num_objs = 64,
	                        .cached_objs = 1,
	                        .slot_size = 64,
	                        .object_size = 60,
	                        .objs_per_slab = 64,
	                        .slab_bytes = 4096,
	                        .cpu_limit = 16,
	                        .batch = 8,
	                        .active_slabs = 1,
	                        .num_slabs = 1,
	                        .flags = 0x10,
	                        .purged_bytes = 12288};
	mcg_snapshot_add_cache(&s, "kmalloc-64", &st);
	return s;
}

static void test_group_and_snapshot(void)
{
	struct mcg_snapshot s = snap();
	REQUIRE(s.err == 0 && s.nr_groups == 2 && s.nr_caches == 1);
	struct mcg_out o;
	mcg_out_init(&o);
	mcg_json_group(&o, &s, &s.groups[1]);
	CHECK(!strcmp(mcg_out_data(&o),
	              "{\"path\":\"/q\\\"u\\\\ote \xc3\xbc\",\"memory.current\":4096,"
	              "\"memory.min\":null,\"memory.low\":null,\"memory.high\":null,"
	              "\"memory.max\":65536,\"memory.peak\":null,\"memory.stat\":null,"
	              "\"memory.events\":null,\"memory.events.local\":null,\"cgroup.stat\":null}"));
	mcg_out_reset(&o, 0);
	mcg_json_caches(&o, &s);
	CHECK(!strcmp(mcg_out_data(&o),
	              "[{\"name\":\"kmalloc-64\",\"active_objs\":3,\"num_objs\":64,"
	              "\"cached_objs\":1,\"objsize\":64,\"object_size\":60,\"objperslab\":64,"
	              "\"pagesperslab\":1,\"limit\":16,\"batchcount\":8,\"active_slabs\":1,"
	              "\"num_slabs\":1,\"purged_bytes\":12288,\"accounted\":true}]"));
	mcg_out_reset(&o, 0);
	mcg_json_snapshot(&o, &s);
	const char *t = mcg_out_data(&o);
	CHECK(!strncmp(t, "{\"groups\":[{\"path\":\"/\",\"memory.current\":8192,", 45));
	CHECK(strstr(t, "\"memory.events\":{\"low\":0,\"max\":2}") != NULL);
	CHECK(strstr(t, "}],\"slabinfo\":[{\"name\":\"kmalloc-64\"") != NULL);
	CHECK(t[mcg_out_size(&o) - 1] == '}' && t[mcg_out_size(&o) - 2] == ']');
	/* With the process's memory: an object after the caches. */
	s.process = (struct mcg_snap_process){
	        .have = true, .mapped = 1 << 22, .large = {.in_use = 3, .retained = 5, .cap = 7}};
	mcg_out_reset(&o, 0);
	mcg_json_snapshot(&o, &s);
	t = mcg_out_data(&o);
	static const char tail[] =
	        "}],\"memory\":{\"mapped_bytes\":4194304,\"large_in_use_bytes\":3,"
	        "\"large_retained_bytes\":5,\"large_retained_cap_bytes\":7}}";
	CHECK(mcg_out_size(&o) > strlen(tail) &&
	      !strcmp(t + mcg_out_size(&o) - strlen(tail), tail));
	mcg_out_free(&o);
	mcg_snapshot_free(&s);
}

int main(void)
{
	RUN(test_file_values);
	RUN(test_group_and_snapshot);
	return test_done();
}
