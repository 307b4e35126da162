/* SPDX-License-Identifier: MIT */
/*
 * test_lru.c - the file LRU (pagecache/lru.c): the moves between inactive
 * and active, reclaim dropping clean pages only (dirty ones rotated and
 * moved to the tail when written), the shrinker under the reclaim driver
 * with memory.max, memory.reclaim and memory.min.
 */
#include <errno.h>
#include <fcntl.h>

#include "group_file.h"
#include "memcg/file.h"
#include "memcg/memcg.h"
#include "memcg/reclaim.h"
#include "pagecache/filemap.h"
#include "pagecache/lru.h"
#include "pagecache/writeback.h"
#include "test.h"
#include "tmpdir.h"

static char dir[PATH_MAX];

static const char *path_of(const char *name)
{
	static char p[PATH_MAX];
	return tmpdir_path(p, sizeof(p), dir, name);
}

static mcg_file_t *open_new(const char *name, mcg_group_t *g)
{
	mcg_file_t *f = NULL;
	mcg_file_opts_t o = {g, MCG_FILE_NO_DIRECT};
	unlink(path_of(name));
	CHECK_EQ(mcg_file_open(path_of(name), O_RDWR | O_CREAT, 0644, &o, &f), 0);
	return f;
}

static long stat_of(mcg_group_t *g, const char *key) { return read_key(g, "memory.stat", key); }

static struct mcg_fpage *page_at(mcg_file_t *f, uint64_t i)
{
	struct mcg_fpage *p = mcg_inode_find_get(f->inode, i);
	if (p)
		mcg_fpage_put(p); /* the index holds it */
	return p;
}

/* New -> inactive; an access -> referenced; another -> active. */
static void test_moves(void)
{
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "lrum", &g));
	mcg_file_t *f = open_new("moves", g);
	REQUIRE(f);
	char b[4096];
	memset(b, 1, sizeof(b));
	CHECK_EQ(mcg_file_pwrite(f, b, sizeof(b), 0), 4096);
	struct mcg_fpage *p = page_at(f, 0);
	REQUIRE(p);
	uint32_t fl = mcg_fpage_flags(p);
	CHECK((fl & PG_LRU) && !(fl & PG_ACTIVE) && (fl & PG_REFERENCED)); /* the write was one */
	CHECK_EQ(stat_of(g, "inactive_file"), 4096);
	CHECK_EQ(mcg_file_pread(f, b, 10, 0), 10);
	fl = mcg_fpage_flags(p);
	CHECK((fl & PG_ACTIVE) && !(fl & PG_REFERENCED));
	CHECK_EQ(stat_of(g, "active_file"), 4096);
	CHECK_EQ(stat_of(g, "inactive_file"), 0);
	CHECK_EQ(mcg_file_pread(f, b, 10, 0), 10);
	CHECK(mcg_fpage_flags(p) & PG_REFERENCED);
	CHECK_EQ(stat_of(g, "pgactivate"), 1);
	mcg_file_close(f);
	mcg_file_sync_all();
	mcg_file_drop_caches();
	mcg_group_remove(g);
	mcg_group_put(g);
}

/* Reclaim: clean pages go, dirty ones are rotated with RECLAIM and, once
 * written, sit at the inactive tail for the next pass. */
static void test_shrink_clean_only(void)
{
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "lrus", &g));
	mcg_file_t *f = open_new("shrink", g);
	REQUIRE(f);
	char b[8 * 4096];
	memset(b, 2, sizeof(b));
	CHECK_EQ(mcg_file_pwrite(f, b, 4 * 4096, 0), 4 * 4096);
	CHECK_EQ(mcg_file_fsync(f), 0);                                /* pages 0-3 clean */
	CHECK_EQ(mcg_file_pwrite(f, b, 4 * 4096, 4 * 4096), 4 * 4096); /* 4-7 dirty */
	struct mcg_pcg *p = mcg_pcg_of(g);
	REQUIRE(p);
	struct mcg_lruvec *lv = &p->lruvec[page_at(f, 0)->nid];
	unsigned long dirty;
	CHECK_EQ(mcg_lru_shrink(lv, 8, &dirty), 4);
	CHECK_EQ(dirty, 4);
	mcg_file_stat_t st;
	mcg_file_stat(f, &st);
	CHECK_EQ(st.pages, 4);
	CHECK_EQ(st.dirty, 4);
	for (int i = 4; i < 8; i++) {
		struct mcg_fpage *pg = page_at(f, (uint64_t)i);
		REQUIRE(pg);
		CHECK(mcg_fpage_test(pg, PG_RECLAIM | PG_LRU));
	}
	/* Written: RECLAIM pages go to the tail and the next pass frees them. */
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK(!mcg_fpage_test(page_at(f, 4), PG_RECLAIM));
	CHECK_EQ(mcg_lru_shrink(lv, 4, &dirty), 4);
	CHECK_EQ(dirty, 0);
	mcg_group_drain_stocks();
	CHECK_EQ(read_long(g, "memory.current"), 0);
	mcg_file_close(f);
	mcg_group_remove(g);
	mcg_group_put(g);
}

/* Deactivation keeps inactive at least as long as active. */
static void test_deactivate(void)
{
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "lrud", &g));
	mcg_file_t *f = open_new("deact", g);
	REQUIRE(f);
	char b[16 * 4096];
	memset(b, 3, sizeof(b));
	CHECK_EQ(mcg_file_pwrite(f, b, sizeof(b), 0), (ssize_t)sizeof(b));
	CHECK_EQ(mcg_file_pread(f, b, sizeof(b), 0), (ssize_t)sizeof(b)); /* all active */
	CHECK_EQ(mcg_file_fsync(f), 0);
	CHECK_EQ(stat_of(g, "active_file"), 16 * 4096);
	struct mcg_lruvec *lv = &mcg_pcg_of(g)->lruvec[page_at(f, 0)->nid];
	unsigned long dirty;
	/* Asked for 4: 4 deactivated, then scanned and freed from the tail. */
	CHECK_EQ(mcg_lru_shrink(lv, 4, &dirty), 4);
	CHECK_EQ(stat_of(g, "pgdeactivate"), 4);
	CHECK_EQ(stat_of(g, "active_file"), 12 * 4096);
	CHECK_EQ(stat_of(g, "inactive_file"), 0);
	/* The oldest pages went (the writes' order: 0..3). */
	CHECK(!page_at(f, 0) && !page_at(f, 3) && page_at(f, 4));
	mcg_file_close(f);
	mcg_file_drop_caches();
	mcg_group_remove(g);
	mcg_group_put(g);
}

/* The driver: a group at memory.max drops its clean pages to read more. */
static void test_max_reclaims_cache(void)
{
	mcg_group_t *g;
	REQUIRE(!mcg_group_create(NULL, "lrumax", &g));
	REQUIRE(!mcg_group_write(g, "memory.max", "1M"));
	mcg_file_t *f = open_new("max", NULL);
	REQUIRE(f);
	/* 4 MiB of data written (to the root), on disk, not cached. */
	char *b = malloc(4 << 20), *r = malloc(4 << 20);
	REQUIRE(b && r);
	for (int i = 0; i < (4 << 20); i++)
		b[i] = (char)(i / 4096 + i);
	CHECK_EQ(mcg_file_pwrite(f, b, 4 << 20, 0), 4 << 20);
	CHECK_EQ(mcg_file_fsync(f), 0);
	mcg_file_close(f);
	mcg_file_drop_caches();
	/* Read it all through a handle charged to the 1 MiB group. */
	mcg_file_opts_t o = {g, MCG_FILE_NO_DIRECT};
	REQUIRE(!mcg_file_open(path_of("max"), O_RDONLY, 0, &o, &f));
	CHECK_EQ(mcg_file_pread(f, r, 4 << 20, 0), 4 << 20);
	CHECK(!memcmp(r, b, 4 << 20));
	mcg_group_drain_stocks();
	CHECK(read_long(g, "memory.current") <= 1 << 20);
	CHECK(stat_of(g, "pgsteal") >= 512); /* at least 3 MiB of it reclaimed */
	CHECK_EQ(read_key(g, "memory.events", "oom"), 0);
	/* memory.reclaim takes what is left. */
	CHECK_EQ(mcg_group_write(g, "memory.reclaim", "1M"), 0);
	mcg_group_drain_stocks();
	CHECK(read_long(g, "memory.current") < 64 * 4096);
	mcg_file_close(f);
	mcg_file_drop_caches();
	mcg_group_remove(g);
	mcg_group_put(g);
	free(b);
	free(r);
}

/* memory.min protects a group's cached pages from its parent's reclaim. */
static void test_min_protects(void)
{
	mcg_group_t *p, *kept, *other;
	REQUIRE(!mcg_group_create(NULL, "lrup", &p));
	REQUIRE(!mcg_group_create(p, "kept", &kept));
	REQUIRE(!mcg_group_create(p, "other", &other));
	REQUIRE(!mcg_group_write(kept, "memory.min", "1M"));
	mcg_file_t *a = open_new("mina", kept), *b = open_new("minb", other);
	REQUIRE(a && b);
	char *d = malloc(512 << 10);
	REQUIRE(d);
	memset(d, 4, 512 << 10);
	CHECK_EQ(mcg_file_pwrite(a, d, 512 << 10, 0), 512 << 10);
	CHECK_EQ(mcg_file_pwrite(b, d, 512 << 10, 0), 512 << 10);
	CHECK_EQ(mcg_file_fsync(a), 0);
	CHECK_EQ(mcg_file_fsync(b), 0);
	CHECK_EQ(mcg_group_write(p, "memory.reclaim", "512K"), 0);
	mcg_group_drain_stocks();
	CHECK_EQ(read_key(kept, "memory.stat", "file"), 512 << 10);
	CHECK(read_key(other, "memory.stat", "file") <= 32 * 4096);
	mcg_file_close(a);
	mcg_file_close(b);
	mcg_file_drop_caches();
	mcg_group_remove(kept);
	mcg_group_remove(other);
	mcg_group_remove(p);
	mcg_group_put(kept);
	mcg_group_put(other);
	mcg_group_put(p);
	free(d);
}

int main(void)
{
	mcg_options_use_env(0);
	if (tmpdir_make(dir, sizeof(dir), NULL)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_moves);
	RUN(test_shrink_clean_only);
	RUN(test_deactivate);
	RUN(test_max_reclaims_cache);
	RUN(test_min_protects);
	mcg_file_sync_all();
	mcg_file_drop_caches();
	tmpdir_remove(dir);
	return test_done();
}
