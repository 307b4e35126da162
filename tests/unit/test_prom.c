/* SPDX-License-Identifier: MIT */
/*
 * test_prom.c - the Prometheus text format (iface/prom.c): on a snapshot
 * built by hand, the samples of each family exactly (limits, +Inf for max,
 * events, memory.stat's items sorted into bytes / counters / seconds /
 * other, the root's pressure lines, cgroup.stat, caches), labels escaped,
 * HELP and TYPE before each family's samples; then a real process's
 * snapshot (odd group names, an accounted cache, a reclaimed group)
 * checked by `promtool check metrics` (Debian's prometheus package).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/wait.h>

#include "iface/prom.h"
#include "memcg/kmalloc.h"
#include "memcg/slab.h"
#include "test.h"

static struct mcg_snapshot hand_made(void)
{
	struct mcg_snapshot s;
	mcg_snapshot_init(&s);
	const char *root[MCG_SNAP_NR_FILES] = {
	        [MCG_SNAP_CURRENT] = "8192\n",
	        [MCG_SNAP_MAX] = "max\n",
	        [MCG_SNAP_HIGH] = "max\n",
	        [MCG_SNAP_STAT] = "anon 4096\nkernel 4096\npgsteal 3\nthrottled_ms 1500\n"
	                          "new_item 9\npressure_running 1\npressure_budget 1048576\n"
	                          "pressure_budget_source cgroup_v2\npressure_psi trigger\n"
	                          "pressure_wakeups 5\n",
	        [MCG_SNAP_EVENTS] = "low 0\nmax 2\n",
	        [MCG_SNAP_CGROUP_STAT] = "nr_descendants 1\nnr_dying_descendants 0\n"};
	const char *odd[MCG_SNAP_NR_FILES] = {[MCG_SNAP_CURRENT] = "4096\n",
	                                      [MCG_SNAP_MAX] = "65536\n",
	                                      [MCG_SNAP_HIGH] = "max\n",
	                                      [MCG_SNAP_STAT] = "anon 4096\npgsteal 1\n",
	                                      [MCG_SNAP_EVENTS] = "low 1\nmax 2\n"};
	mcg_snapshot_add_group(&s, "/", 0, root);
	mcg_snapshot_add_group(&s, "/q\"u\\o\nte", 1, odd);
	mcg_cache_stats_t st = {.active_objs = 3,
	                        .num_objs = 64,
	                        .cached_objs = 1,
	                        .slot_size = 64,
	                        .objs_per_slab = 64,
	                        .slab_bytes = 4096,
	                        .active_slabs = 1,
	                        .num_slabs = 2,
	                        .purged_bytes = 8192};
	mcg_snapshot_add_cache(&s, "kmalloc-64", &st);
	return s;
}

/* Whether @text has the line @line (without its newline). */
static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; (p = strstr(p, line)); p++)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return true;
	return false;
}

static void test_families(void)
{
	struct mcg_snapshot s = hand_made();
	struct mcg_out o;
	mcg_out_init(&o);
	mcg_prom_render(&o, &s);
	const char *t = mcg_out_data(&o);
	static const char *const lines[] = {
	        "# TYPE memcg_groups gauge",
	        "memcg_groups 2",
	        "# HELP memcg_memory_current_bytes memory.current: bytes charged to the group "
	        "and its descendants",
	        "# TYPE memcg_memory_current_bytes gauge",
	        "memcg_memory_current_bytes{group=\"/\"} 8192",
	        "memcg_memory_current_bytes{group=\"/q\\\"u\\\\o\\nte\"} 4096",
	        "memcg_memory_max_bytes{group=\"/\"} +Inf",
	        "memcg_memory_max_bytes{group=\"/q\\\"u\\\\o\\nte\"} 65536",
	        "memcg_memory_high_bytes{group=\"/\"} +Inf",
	        "# TYPE memcg_memory_events_total counter",
	        "memcg_memory_events_total{group=\"/\",event=\"max\"} 2",
	        "memcg_memory_events_total{group=\"/q\\\"u\\\\o\\nte\",event=\"low\"} 1",
	        "memcg_memory_stat_bytes{group=\"/\",item=\"anon\"} 4096",
	        "memcg_memory_stat_bytes{group=\"/\",item=\"kernel\"} 4096",
	        "# TYPE memcg_memory_stat_total counter",
	        "memcg_memory_stat_total{group=\"/\",item=\"pgsteal\"} 3",
	        "memcg_memory_throttled_seconds_total{group=\"/\"} 1.500",
	        "memcg_memory_stat{group=\"/\",item=\"new_item\"} 9",
	        "memcg_pressure_running{group=\"/\"} 1",
	        "memcg_pressure_budget_bytes{group=\"/\"} 1048576",
	        "memcg_pressure_wakeups_total{group=\"/\"} 5",
	        "memcg_pressure_info{group=\"/\",budget_source=\"cgroup_v2\",psi=\"trigger\"} 1",
	        "memcg_cgroup_descendants{group=\"/\"} 1",
	        "memcg_slab_objects{cache=\"kmalloc-64\",state=\"active\"} 3",
	        "memcg_slab_objects{cache=\"kmalloc-64\",state=\"cached\"} 1",
	        "memcg_slab_objects{cache=\"kmalloc-64\",state=\"total\"} 64",
	        "memcg_slab_slabs{cache=\"kmalloc-64\",state=\"active\"} 1",
	        "memcg_slab_slabs{cache=\"kmalloc-64\",state=\"total\"} 2",
	        "memcg_slab_object_size_bytes{cache=\"kmalloc-64\"} 64",
	        "memcg_slab_slab_size_bytes{cache=\"kmalloc-64\"} 4096",
	        "# TYPE memcg_slab_purged_bytes gauge",
	        "memcg_slab_purged_bytes{cache=\"kmalloc-64\"} 8192",
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		if (!has_line(t, lines[i]))
			CHECK(!fprintf(stderr, "missing: %s\n", lines[i]));
	/* Pressure families only where their lines are; no string item as a sample. */
	CHECK(strstr(t, "pressure_budget_source\"} ") == NULL);
	CHECK(strstr(t, "memcg_pressure_psi_events_total") == NULL);
	CHECK(strstr(t, "memcg_pressure_running{group=\"/q") == NULL);
	/* Each family's HELP and TYPE come once, before its first sample. */
	const char *type = strstr(t, "# TYPE memcg_memory_stat_bytes gauge\n");
	const char *first = strstr(t, "memcg_memory_stat_bytes{");
	CHECK(type && first && type < first && !strstr(type + 1, "# TYPE memcg_memory_stat_bytes"));
	/* The process's memory: only where the snapshot took it. */
	CHECK(strstr(t, "memcg_mapped_bytes") == NULL && strstr(t, "memcg_large_bytes") == NULL);
	s.process = (struct mcg_snap_process){
	        .have = true, .mapped = 1 << 22, .large = {.in_use = 3, .retained = 5, .cap = 7}};
	mcg_out_reset(&o, 0);
	mcg_prom_render(&o, &s);
	t = mcg_out_data(&o);
	static const char *const process[] = {
	        "# TYPE memcg_mapped_bytes gauge",         "memcg_mapped_bytes 4194304",
	        "# TYPE memcg_large_bytes gauge",          "memcg_large_bytes{state=\"in_use\"} 3",
	        "memcg_large_bytes{state=\"retained\"} 5", "memcg_large_bytes{state=\"cap\"} 7"};
	for (size_t i = 0; i < sizeof(process) / sizeof(process[0]); i++)
		if (!has_line(t, process[i]))
			CHECK(!fprintf(stderr, "missing: %s\n", process[i]));
	mcg_out_free(&o);
	mcg_snapshot_free(&s);
}

/* throttled_ms in seconds, exact to the millisecond, whatever its sign. */
static void test_throttled_seconds(void)
{
	static const struct {
		const char *stat, *line;
	} cases[] = {
	        {"throttled_ms 1500\n", "memcg_memory_throttled_seconds_total{group=\"/\"} 1.500"},
	        {"throttled_ms 7\n", "memcg_memory_throttled_seconds_total{group=\"/\"} 0.007"},
	        {"throttled_ms -1\n", "memcg_memory_throttled_seconds_total{group=\"/\"} -0.001"},
	        {"throttled_ms -2030\n",
	         "memcg_memory_throttled_seconds_total{group=\"/\"} -2.030"},
	};
	for (size_t i = 0; i < MCG_ARRAY_SIZE(cases); i++) {
		struct mcg_snapshot s;
		mcg_snapshot_init(&s);
		const char *files[MCG_SNAP_NR_FILES] = {[MCG_SNAP_STAT] = cases[i].stat};
		REQUIRE(mcg_snapshot_add_group(&s, "/", 0, files) == 0);
		struct mcg_out o;
		mcg_out_init(&o);
		mcg_prom_render(&o, &s);
		CHECK(has_line(mcg_out_data(&o), cases[i].line));
		mcg_out_free(&o);
		mcg_snapshot_free(&s);
	}
}

/* How many lines of @text start with @prefix. */
static int count_prefix(const char *text, const char *prefix)
{
	int n = 0;
	size_t k = strlen(prefix);
	for (const char *p = text; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
		n += !strncmp(p, prefix, k);
	return n;
}

/* Lines a family cannot use (no number, a key where a value belongs, a value
 * without its key, a near-miss key) give no sample; the good lines beside
 * them still do, and the pressure info needs both of its lines. */
static void test_malformed_lines_skipped(void)
{
	struct mcg_snapshot s;
	mcg_snapshot_init(&s);
	const char *a[MCG_SNAP_NR_FILES] = {
	        [MCG_SNAP_CURRENT] = "abc\n",
	        [MCG_SNAP_MAX] = "key 5\n",
	        [MCG_SNAP_HIGH] = "mix\n",
	        [MCG_SNAP_LOW] = "ma\n",
	        [MCG_SNAP_STAT] = "lonely\nanon x\nanon 4096\npressure_budget_source cgroup_v2\n"
	                          "pressure_budget_sourcX 1\n",
	        [MCG_SNAP_EVENTS] = "lonely\nlow x\nmax 2\n",
	        [MCG_SNAP_CGROUP_STAT] = "nr_descendants x\nnr_descendantX 1\nnr_descendants 3\n"};
	const char *b[MCG_SNAP_NR_FILES] = {[MCG_SNAP_STAT] = "pressure_psi trigger\n"};
	REQUIRE(mcg_snapshot_add_group(&s, "/", 0, a) == 0);
	REQUIRE(mcg_snapshot_add_group(&s, "/b", 1, b) == 0);
	struct mcg_out o;
	mcg_out_init(&o);
	mcg_prom_render(&o, &s);
	const char *t = mcg_out_data(&o);
	CHECK_EQ(count_prefix(t, "memcg_memory_current_bytes{"), 0);
	CHECK_EQ(count_prefix(t, "memcg_memory_max_bytes{"), 0);
	CHECK_EQ(count_prefix(t, "memcg_memory_high_bytes{"), 0);
	CHECK_EQ(count_prefix(t, "memcg_memory_low_bytes{"), 0);
	CHECK_EQ(count_prefix(t, "memcg_memory_stat_bytes{"), 1);
	CHECK(has_line(t, "memcg_memory_stat_bytes{group=\"/\",item=\"anon\"} 4096"));
	CHECK_EQ(count_prefix(t, "memcg_memory_stat{"), 1);
	CHECK(has_line(t, "memcg_memory_stat{group=\"/\",item=\"pressure_budget_sourcX\"} 1"));
	CHECK_EQ(count_prefix(t, "memcg_memory_events_total{"), 1);
	CHECK(has_line(t, "memcg_memory_events_total{group=\"/\",event=\"max\"} 2"));
	CHECK_EQ(count_prefix(t, "memcg_cgroup_descendants{"), 1);
	CHECK(has_line(t, "memcg_cgroup_descendants{group=\"/\"} 3"));
	CHECK_EQ(count_prefix(t, "memcg_pressure_info"), 0);
	CHECK_EQ(count_prefix(t, "# TYPE memcg_pressure_info"), 0);
	mcg_out_free(&o);
	mcg_snapshot_free(&s);
}

static void test_promtool_passes(void)
{
	if (access("/usr/bin/promtool", X_OK) != 0) {
		fprintf(stderr,
		        "  promtool is not installed (scripts/deps.sh installs prometheus)\n");
		REQUIRE(access("/usr/bin/promtool", X_OK) == 0);
	}
	mcg_group_t *a, *b, *odd;
	REQUIRE(mcg_group_create(NULL, "tenant-a", &a) == 0);
	REQUIRE(mcg_group_create(a, "b", &b) == 0);
	REQUIRE(mcg_group_create(NULL, "q\"u\\ote \xc3\xbcn\xc3\xaf", &odd) == 0);
	mcg_group_write(b, "memory.max", "1M");
	void *p[400];
	int n = 0;
	while (n < 400 && (p[n] = mcg_malloc_account(4096, b)))
		n++;
	CHECK(n < 400); /* the limit stopped it: events counted */
	mcg_cache_t *c = mcg_cache_create("prom-test", 200, 0, MCG_CACHE_ACCOUNT, NULL);
	void *obj = mcg_cache_alloc_account(c, a);

	struct mcg_snapshot s;
	mcg_snapshot_init(&s);
	REQUIRE(mcg_snapshot_take(&s, NULL, MCG_SNAP_FILES | MCG_SNAP_CACHES) == 0);
	struct mcg_out o;
	mcg_out_init(&o);
	mcg_prom_render(&o, &s);
	CHECK(has_line(mcg_out_data(&o), "memcg_memory_max_bytes{group=\"/tenant-a/b\"} 1048576"));
	CHECK(strstr(mcg_out_data(&o), "\nmemcg_large_bytes{state=\"retained\"} ") != NULL);

	char path[] = "/tmp/memcg-prom-XXXXXX";
	int fd = mkstemp(path);
	REQUIRE(fd >= 0);
	CHECK_EQ(write(fd, mcg_out_data(&o), mcg_out_size(&o)), (ssize_t)mcg_out_size(&o));
	lseek(fd, 0, SEEK_SET);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd, 0);
		execl("/usr/bin/promtool", "promtool", "check", "metrics", (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(fd);
	unlink(path);

	mcg_out_free(&o);
	mcg_snapshot_free(&s);
	mcg_cache_free(c, obj);
	mcg_cache_destroy(c);
	while (n)
		mcg_free(p[--n]);
	mcg_group_remove(b);
	mcg_group_remove(a);
	mcg_group_remove(odd);
	mcg_group_put(b);
	mcg_group_put(a);
	mcg_group_put(odd);
}

int main(void)
{
	RUN(test_families);
	RUN(test_throttled_seconds);
	RUN(test_malformed_lines_skipped);
	RUN(test_promtool_passes);
	return test_done();
}
