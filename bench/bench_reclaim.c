/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_reclaim.c - `memcg bench reclaim`: seed 003 reproduced.
 *
 * 1. postmark: a small-file workload whose "files" are metadata objects in
 *    two slab caches (pm_dentry 64 B with the LRU link, pm_inode 256 B),
 *    on a memcg-aware list_lru with a shrinker (second chance: a read sets
 *    `referenced`, the isolate callback rotates it once).  Phases, each
 *    timed in thread CPU time: create N files, N random reads (a file the
 *    shrinker dropped is read back "from disk": allocated again), N
 *    transactions (a read plus a create or a delete), delete all.  The
 *    budget is half of what the files need, so reclaim runs all along.
 *    The caches are reclaimable, and every object is accounted to its
 *    tenant's group (mcg_cache_alloc_account: byte charges through the
 *    objcg, as the kernel's SLAB_ACCOUNT dentries and inodes).
 *    Sixteen users each own a sixteenth of the files and run their own
 *    postmark: each phase's operations go in turns of 256 per user, round
 *    robin - sixteen postmark processes time-sliced on one CPU (a turn is
 *    ~100 us, finer than a scheduler's slice).  Every variant runs the same
 *    sequence of operations; only where the files are charged differs.
 *    Variants, interleaved within each run:
 *      root      - every file charged to the root; the bench checks the
 *                  budget after each charge and calls mcg_reclaim(NULL)
 *                  itself (the root has no memory.max);
 *      1-group   - one group with memory.max = budget: the charge path reclaims;
 *      16-groups - each user's files in its own group, max = budget/16 each.
 *    Target: every op >= 0.98x of root (seed 003 lost 14 % of deletes).
 *    `--turn N` sets the operations per turn (1: users interleave operation
 *    by operation; then each group's reclaim frees objects scattered among
 *    the fifteen others', and the pointer chases of the LRU walks and slab
 *    freelists miss far more - docs/benchmarks.md has the figures).
 * 2. Shrinker scalability: 1 group holds objects, 0 / 1000 / 10000 empty
 *    groups exist: time per mcg_reclaim(NULL, 32 pages) (flat is the goal).
 * 3. Efficiency: objects freed / objects scanned by the shrinker during
 *    postmark, and memory.stat's pgscan/pgsteal of the groups.
 * 4. Throttling: a thread charging unreclaimable pages past memory.high;
 *    wall time spent in mcg_charge and memory.stat's throttle_ms.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/group.h"
#include "harness.h"
#include "memcg/group.h"
#include "memcg/reclaim.h"
#include "memcg/slab.h"

#define PAGE 4096L

enum { V_ROOT, V_ONE, V_SIXTEEN, NR_VARIANTS };
static const char *const variant_names[NR_VARIANTS] = {"root", "1-group", "16-groups"};
static const int variant_groups[NR_VARIANTS] = {0, 1, 16};

enum { OP_CREATE, OP_READ, OP_TRANSACT, OP_DELETE, NR_OPS };
static const char *const op_names[NR_OPS] = {"create", "read", "transactions", "delete"};
static const char *const op_rows[NR_OPS] = {"FilesCreate", "DataRead", "Transactions",
                                            "FilesDeleted"};

/* ------------------------------------------------------------ the file system */

struct tenant {
	mcg_group_t *g;
};

struct inode {
	unsigned long ino, size, mtime, nlink;
	unsigned char data[224];
};

struct dentry {
	mcg_lru_link_t link;
	struct inode *inode;
	struct tenant *tenant;
	unsigned slot;
	int referenced; /* relaxed atomic */
};

#define OBJ_BYTES ((long)(sizeof(struct dentry) + sizeof(struct inode)))

struct slot {
	struct dentry *cached; /* NULL: on "disk" only (or not existing) */
	bool exists;
};

static struct {
	mcg_cache_t *dcache, *icache;
	mcg_shrinker_t *shrinker;
	mcg_list_lru_t *lru;
	struct slot *slots;
	unsigned nslots;
	struct tenant tenants[16];
	int ntenants;
	bool root_budget;  /* V_ROOT: check the budget in the bench */
	long budget_pages; /* V_ROOT */
	unsigned long scanned, freed, misses, failures;
	unsigned long long rng;
} fs;

/* Sixteen users, each with its own files, take turns of `turn` operations. */
#define NR_USERS 16
static unsigned turn = 256;

/* The user whose turn op @i of a phase falls in. */
static unsigned op_user(unsigned i) { return i / turn % NR_USERS; }
/* How many ops that user ran in this phase before op @i. */
static unsigned op_nth(unsigned i) { return i / (turn * NR_USERS) * turn + i % turn; }
/* The first file of the user of op @i. */
static unsigned user_files(unsigned i) { return op_user(i) * (fs.nslots / NR_USERS); }

static unsigned rnd(unsigned n)
{
	fs.rng ^= fs.rng << 13, fs.rng ^= fs.rng >> 7, fs.rng ^= fs.rng << 17;
	return (unsigned)(fs.rng % n);
}

/* V_ROOT: what the charge path does at memory.max, for the root (no max). */
static void root_budget_check(void)
{
	if (fs.root_budget && mcg_page_counter_read(&mcg_group_root()->memory) > fs.budget_pages)
		mcg_reclaim(NULL, 32, MCG_RECLAIM_DIRECT);
}

static void dentry_free(struct dentry *d)
{
	mcg_cache_free(fs.icache, d->inode); /* uncharges */
	mcg_cache_free(fs.dcache, d);
}

static enum mcg_lru_status isolate(mcg_lru_link_t *item, mcg_list_lru_one_t *list, void *arg)
{
	struct dentry *d = (struct dentry *)item;
	fs.scanned++;
	if (__atomic_exchange_n(&d->referenced, 0, __ATOMIC_RELAXED))
		return MCG_LRU_ROTATE;
	mcg_list_lru_isolate_move(list, item, arg);
	return MCG_LRU_REMOVED;
}

static unsigned long pm_count(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	return mcg_list_lru_shrink_count(fs.lru, sc);
}

static unsigned long pm_scan(mcg_shrinker_t *s, mcg_shrink_control_t *sc)
{
	mcg_lru_link_t dispose;
	mcg_lru_link_init(&dispose);
	unsigned long n = mcg_list_lru_shrink_walk(fs.lru, sc, isolate, &dispose);
	for (mcg_lru_link_t *l = dispose.next, *next; l != &dispose; l = next) {
		next = l->next;
		struct dentry *d = (struct dentry *)l;
		fs.slots[d->slot].cached = NULL;
		dentry_free(d);
		fs.freed++;
	}
	return n;
}

/* Bring file @i into the cache (create or read back).  Return 0 or -ENOMEM. */
static int instantiate(unsigned i)
{
	unsigned user = i / (fs.nslots / NR_USERS);
	struct tenant *t = &fs.tenants[user % (unsigned)fs.ntenants];
	struct dentry *d = mcg_cache_alloc_account(fs.dcache, t->g);
	struct inode *in = d ? mcg_cache_alloc_account(fs.icache, t->g) : NULL;
	if (!in) {
		mcg_cache_free(fs.dcache, d);
		return -ENOMEM;
	}
	root_budget_check();
	in->ino = i;
	in->size = 500 + i % 9500;
	in->nlink = 1;
	memset(in->data, (int)i, 16);
	mcg_lru_link_init(&d->link);
	d->inode = in;
	d->tenant = t;
	d->slot = i;
	d->referenced = 0;
	fs.slots[i].cached = d;
	mcg_list_lru_add(fs.lru, &d->link, 0, t->g);
	return 0;
}

static void op_create(unsigned i)
{
	if (fs.slots[i].exists)
		return;
	if (instantiate(i)) {
		fs.failures++;
		return;
	}
	fs.slots[i].exists = true;
}

static unsigned long op_read(unsigned i)
{
	if (!fs.slots[i].exists)
		return 0;
	struct dentry *d = fs.slots[i].cached;
	if (!d) {
		fs.misses++;
		if (instantiate(i)) {
			fs.failures++;
			return 0;
		}
		d = fs.slots[i].cached;
	}
	__atomic_store_n(&d->referenced, 1, __ATOMIC_RELAXED);
	return d->inode->size + d->inode->data[0];
}

static void op_delete(unsigned i)
{
	struct dentry *d = fs.slots[i].cached;
	if (d) {
		mcg_list_lru_del(fs.lru, &d->link, 0, d->tenant->g);
		fs.slots[i].cached = NULL;
		dentry_free(d);
	}
	fs.slots[i].exists = false;
}

static int fs_setup(unsigned nslots)
{
	fs.dcache = mcg_cache_create("pm_dentry", sizeof(struct dentry), 0, MCG_CACHE_RECLAIMABLE,
	                             NULL);
	fs.icache =
	        mcg_cache_create("pm_inode", sizeof(struct inode), 0, MCG_CACHE_RECLAIMABLE, NULL);
	fs.slots = calloc(nslots, sizeof(*fs.slots));
	fs.nslots = nslots;
	if (!fs.dcache || !fs.icache || !fs.slots)
		return -1;
	mcg_shrinker_ops_t ops = {.name = "postmark",
	                          .count_objects = pm_count,
	                          .scan_objects = pm_scan,
	                          .seeks = MCG_DEFAULT_SEEKS,
	                          .flags = MCG_SHRINKER_MEMCG_AWARE};
	if (mcg_shrinker_create(&ops, &fs.shrinker) || mcg_list_lru_create(fs.shrinker, &fs.lru) ||
	    mcg_shrinker_register(fs.shrinker))
		return -1;
	return 0;
}

/* Groups for variant @v; budget in pages.  Return 0 or -1. */
static int variant_setup(int v, long budget_pages)
{
	int n = variant_groups[v];
	fs.root_budget = n == 0;
	fs.budget_pages = budget_pages;
	fs.ntenants = n ? n : 1;
	memset(fs.tenants, 0, sizeof(fs.tenants));
	if (!n) {
		fs.tenants[0].g = mcg_group_root();
		return 0;
	}
	char name[32], max[32];
	snprintf(max, sizeof(max), "%ld", budget_pages / n * PAGE);
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "pm-%d", i);
		if (mcg_group_create(NULL, name, &fs.tenants[i].g) ||
		    mcg_group_write(fs.tenants[i].g, "memory.max", max))
			return -1;
	}
	return 0;
}

static void variant_teardown(int v)
{
	for (int i = 0; i < variant_groups[v]; i++) {
		mcg_group_remove(fs.tenants[i].g);
		mcg_group_put(fs.tenants[i].g);
	}
}

struct pm_result {
	double ops[NR_OPS]; /* ops/s */
	unsigned long scanned, freed, misses, failures;
	long long pgscan, pgsteal;
};

static long long sum_stat(const char *key)
{
	long long s = 0;
	for (int i = 0; i < fs.ntenants; i++) {
		long long v = bench_group_key(fs.tenants[i].g, "memory.stat", key);
		s += v > 0 ? v : 0;
	}
	return s;
}

static int postmark(int v, unsigned nfiles, long budget_pages, struct pm_result *r)
{
	if (variant_setup(v, budget_pages))
		return -1;
	memset(r, 0, sizeof(*r));
	fs.scanned = fs.freed = fs.misses = fs.failures = 0;
	fs.rng = 88172645463325252ull;
	long long scan0 = sum_stat("pgscan"), steal0 = sum_stat("pgsteal");
	volatile unsigned long sink = 0;
	unsigned per = nfiles / NR_USERS; /* files per user */
	uint64_t t0 = bench_thread_cpu_ns();
	for (unsigned i = 0; i < nfiles; i++)
		op_create(user_files(i) + op_nth(i));
	uint64_t t1 = bench_thread_cpu_ns();
	for (unsigned i = 0; i < nfiles; i++)
		sink += op_read(user_files(i) + rnd(per));
	uint64_t t2 = bench_thread_cpu_ns();
	for (unsigned i = 0; i < nfiles; i++) {
		sink += op_read(user_files(i) + rnd(per));
		unsigned j = user_files(i) + rnd(per);
		if (fs.slots[j].exists)
			op_delete(j);
		else
			op_create(j);
	}
	uint64_t t3 = bench_thread_cpu_ns();
	unsigned deleted = 0;
	for (unsigned i = 0; i < nfiles; i++) {
		unsigned f = user_files(i) + op_nth(i);
		if (fs.slots[f].exists)
			op_delete(f), deleted++;
	}
	uint64_t t4 = bench_thread_cpu_ns();
	(void)sink;
	r->ops[OP_CREATE] = nfiles / ((double)(t1 - t0) / 1e9);
	r->ops[OP_READ] = nfiles / ((double)(t2 - t1) / 1e9);
	r->ops[OP_TRANSACT] = nfiles / ((double)(t3 - t2) / 1e9);
	r->ops[OP_DELETE] = deleted / ((double)(t4 - t3) / 1e9);
	r->scanned = fs.scanned;
	r->freed = fs.freed;
	r->misses = fs.misses;
	r->failures = fs.failures;
	r->pgscan = sum_stat("pgscan") - scan0;
	r->pgsteal = sum_stat("pgsteal") - steal0;
	/* Every file is gone: the next variant starts from fresh slabs, not from
	 * freelists this one scrambled.  Before the groups go: the freed
	 * objects' charges then return to live objcgs, whose removal returns
	 * them to the counters (after it, they would wait in byte stock words
	 * charged to the root, the next variant's budget). */
	mcg_cache_shrink(fs.dcache);
	mcg_cache_shrink(fs.icache);
	variant_teardown(v);
	return 0;
}

/* ------------------------------------------------------------ scalability */

/* ns per mcg_reclaim(NULL, 32) with 1 group holding objects and @empty empty groups. */
static double scalability(unsigned empty, unsigned nobjs)
{
	mcg_group_t **gs = calloc(empty + 1, sizeof(*gs));
	char name[32];
	for (unsigned i = 0; i < empty; i++) {
		snprintf(name, sizeof(name), "empty-%u", i);
		if (mcg_group_create(NULL, name, &gs[i]))
			break;
	}
	fs.root_budget = false;
	fs.ntenants = 1;
	memset(fs.tenants, 0, sizeof(fs.tenants));
	mcg_group_create(NULL, "holder", &fs.tenants[0].g);
	for (unsigned i = 0; i < nobjs && i < fs.nslots; i++)
		op_create(i);
	unsigned long calls = 0;
	/* The holder's own lists: mcg_list_lru_count() would visit every
	 * group's and time the walk of the empty ones, not reclaim. */
	mcg_group_t *holder = fs.tenants[0].g;
	unsigned nodes = mcg_nr_nodes();
	uint64_t t0 = bench_thread_cpu_ns();
	for (;;) {
		unsigned long left = 0;
		for (unsigned nid = 0; nid < nodes; nid++)
			left += mcg_list_lru_count_one(fs.lru, nid, holder);
		if (left <= nobjs / 2 || calls >= 100000)
			break;
		mcg_reclaim(NULL, 32, MCG_RECLAIM_DIRECT);
		calls++;
	}
	uint64_t t1 = bench_thread_cpu_ns();
	for (unsigned i = 0; i < fs.nslots; i++)
		if (fs.slots[i].exists)
			op_delete(i);
	mcg_group_remove(fs.tenants[0].g);
	mcg_group_put(fs.tenants[0].g);
	for (unsigned i = 0; i < empty; i++) {
		if (!gs[i])
			break;
		mcg_group_remove(gs[i]);
		mcg_group_put(gs[i]);
	}
	free(gs);
	return calls ? (double)(t1 - t0) / (double)calls : 0;
}

/* ------------------------------------------------------------ throttling */

/* ms of wall time a thread spent in mcg_charge() charging past memory.high. */
static double throttling(bool smoke, long long *throttle_ms, long *charges)
{
	mcg_group_t *g;
	if (mcg_group_create(NULL, "throttled", &g))
		return -1;
	long high = smoke ? 256 : 2048; /* pages */
	char buf[32];
	snprintf(buf, sizeof(buf), "%ld", high * PAGE);
	mcg_group_write(g, "memory.high", buf);
	long charged = 0;
	*charges = 0;
	uint64_t t0 = bench_now_ns(), spent = 0;
	long target = high + high / (smoke ? 32 : 8);
	uint64_t limit_ns = smoke ? 1000000000ull : 3000000000ull;
	while (charged < target && bench_now_ns() - t0 < limit_ns) {
		uint64_t a = bench_now_ns();
		if (mcg_charge(g, 16, 0))
			break;
		spent += bench_now_ns() - a;
		charged += 16;
		(*charges)++;
	}
	*throttle_ms = bench_group_key(g, "memory.stat", "throttled_ms");
	mcg_uncharge(g, (unsigned long)charged);
	mcg_group_remove(g);
	mcg_group_put(g);
	return (double)spent / 1e6;
}

/* ------------------------------------------------------------ main */

int bench_reclaim_main(int argc, char **argv)
{
	/* `--turn N` is this bench's own option: taken out before the common ones. */
	char *args[64];
	int n = 0;
	for (int i = 0; i < argc && n < 63; i++) {
		if (!strcmp(argv[i], "--turn") && i + 1 < argc) {
			turn = (unsigned)atoi(argv[++i]);
			continue;
		}
		args[n++] = argv[i];
	}
	args[n] = NULL;
	struct bench_opts o;
	if (bench_parse_opts(n, args, &o))
		return 2;
	unsigned nfiles = o.smoke ? 20000 : 200000; /* a multiple of NR_USERS */
	if (turn < 1 || turn > nfiles / NR_USERS) {
		fprintf(stderr, "memcg bench reclaim: --turn must be 1..%u\n", nfiles / NR_USERS);
		return 2;
	}
	mcg_reclaim_init();
	long budget_pages = (long)nfiles * OBJ_BYTES / PAGE / 2;
	if (fs_setup(nfiles)) {
		fprintf(stderr, "memcg bench reclaim: setup failed\n");
		return 1;
	}
	int runs = o.runs > 64 ? 64 : o.runs;
	bench_progress("reclaim: postmark %u files of %ld B, budget %ld pages, %d run(s)", nfiles,
	               OBJ_BYTES, budget_pages, runs);
	/* Each round runs every variant, in an order that rotates from round to
	 * round (what one variant leaves behind must not always meet the same
	 * next one); ratios are taken within a round, then the median. */
	static double ops[NR_VARIANTS][NR_OPS][64], ratio[NR_VARIANTS][NR_OPS][64];
	struct pm_result last[NR_VARIANTS];
	for (int r = 0; r < runs; r++) {
		for (int i = 0; i < NR_VARIANTS; i++) {
			int v = (i + r) % NR_VARIANTS;
			struct pm_result res;
			if (postmark(v, nfiles, budget_pages, &res)) {
				fprintf(stderr, "memcg bench reclaim: cannot set up %s\n",
				        variant_names[v]);
				return 1;
			}
			for (int k = 0; k < NR_OPS; k++)
				ops[v][k][r] = res.ops[k];
			last[v] = res;
		}
	}
	double med[NR_VARIANTS][NR_OPS], med_ratio[NR_VARIANTS][NR_OPS];
	for (int v = 0; v < NR_VARIANTS; v++)
		for (int k = 0; k < NR_OPS; k++) {
			for (int r = 0; r < runs; r++)
				ratio[v][k][r] = ops[v][k][r] / ops[V_ROOT][k][r];
			med_ratio[v][k] = bench_median(ratio[v][k], runs);
			med[v][k] = bench_median(ops[v][k], runs);
		}

	unsigned empties[] = {0, 1000, 10000};
	int nscal = 3;
	double scal[3];
	unsigned nobjs = o.smoke ? 4000 : 20000;
	for (int i = 0; i < nscal; i++) {
		unsigned e = o.smoke && empties[i] > 1000 ? 2000 : empties[i];
		empties[i] = e;
		bench_progress("reclaim: scalability with %u empty groups", e);
		scal[i] = scalability(e, nobjs);
	}
	long long thr_ms = 0;
	long charges = 0;
	long thr_high = o.smoke ? 256 : 2048;
	double thr_wall = throttling(o.smoke, &thr_ms, &charges);

	bool ok = true;
	for (int v = 0; v < NR_VARIANTS; v++)
		if (last[v].failures)
			ok = false;
	if (o.json) {
		char extra[256];
		for (int v = 0; v < NR_VARIANTS; v++)
			for (int k = 0; k < NR_OPS; k++) {
				snprintf(extra, sizeof(extra),
				         "\"op\":\"%s\",\"files\":%u,\"budget_pages\":%ld,"
				         "\"turn\":%u,\"ratio\":%.4f",
				         op_names[k], nfiles, budget_pages, turn, med_ratio[v][k]);
				bench_emit_json("postmark", variant_names[v], extra, med[v][k],
				                "ops/s");
			}
		for (int v = 0; v < NR_VARIANTS; v++) {
			snprintf(extra, sizeof(extra),
			         "\"scanned\":%lu,\"freed\":%lu,\"pgscan\":%lld,\"pgsteal\":%lld",
			         last[v].scanned, last[v].freed, last[v].pgscan, last[v].pgsteal);
			bench_emit_json("efficiency", variant_names[v], extra,
			                last[v].scanned ? (double)last[v].freed / last[v].scanned
			                                : 0,
			                "freed/scanned");
		}
		for (int i = 0; i < nscal; i++) {
			snprintf(extra, sizeof(extra), "\"empty_groups\":%u,\"objects\":%u",
			         empties[i], nobjs);
			bench_emit_json("shrinker_scalability", "reclaim32", extra, scal[i],
			                "ns/call");
		}
		snprintf(extra, sizeof(extra), "\"charges\":%ld,\"throttled_ms_stat\":%lld",
		         charges, thr_ms);
		bench_emit_json("throttle", "over-high", extra, thr_wall, "ms");
		return ok ? 0 : 1;
	}
	printf("memcg bench reclaim: seed 003's postmark, %u files (%ld B of objects each), "
	       "budget %ld pages (half the working set), median of %d rounds\n"
	       "(16 users with their own files take turns of %u operations; ratios: the median "
	       "of each round's ratio to root)\n",
	       nfiles, OBJ_BYTES, budget_pages, runs, turn);
	printf("%-24s %14s %22s %22s\n", "", "root", "1-group", "16-groups");
	for (int k = 0; k < NR_OPS; k++) {
		printf("Ops/sec %-16s %14.0f", op_rows[k], med[V_ROOT][k]);
		for (int v = V_ONE; v < NR_VARIANTS; v++)
			printf(" %12.0f (%5.2fx)", med[v][k], med_ratio[v][k]);
		printf("\n");
	}
	printf("%-24s", "shrinker scanned/freed");
	for (int v = 0; v < NR_VARIANTS; v++)
		printf("   %9lu/%-9lu", last[v].scanned, last[v].freed);
	printf("\n%-24s", "efficiency freed/scanned");
	for (int v = 0; v < NR_VARIANTS; v++)
		printf(" %21.1f%%",
		       last[v].scanned ? 100.0 * (double)last[v].freed / last[v].scanned : 0);
	printf("\n%-24s", "misses (read back)");
	for (int v = 0; v < NR_VARIANTS; v++)
		printf(" %22lu", last[v].misses);
	printf("\n%-24s", "memory.stat pgscan/steal");
	for (int v = 0; v < NR_VARIANTS; v++)
		printf("   %9lld/%-9lld", last[v].pgscan, last[v].pgsteal);
	printf("\n%-24s", "failed charges");
	for (int v = 0; v < NR_VARIANTS; v++)
		printf(" %22lu", last[v].failures);
	printf("\ntarget: every op >= 0.98x of root\n\n");
	printf("shrinker scalability: mcg_reclaim(root, 32 pages), 1 group with %u objects\n",
	       nobjs);
	for (int i = 0; i < nscal; i++)
		printf("  %5u empty groups: %10.0f ns/call (%.2fx of 0)\n", empties[i], scal[i],
		       scal[0] > 0 ? scal[i] / scal[0] : 0);
	printf("\nthrottling: %ld charges of 16 unreclaimable pages past memory.high (%ld pages): "
	       "%.1f ms in mcg_charge, memory.stat throttled_ms %lld\n",
	       charges, thr_high, thr_wall, thr_ms);
	return ok ? 0 : 1;
}
