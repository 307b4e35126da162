/* SPDX-License-Identifier: MIT */
/*
 * pagecache/dirty.c - dirty limits and writer throttling: the kernel's
 * balance_dirty_pages with a domain per group (see dirty.h for the
 * formulas).  Kept close to mm/page-writeback.c, in its names, so the two
 * can be read side by side; time in ms (the kernel's jiffies at HZ=1000).
 *
 * The state of a writer (the kernel's current->nr_dirtied,
 * nr_dirtied_pause, dirty_paused_when) is thread-local; the per-CPU count
 * of pages dirtied (bdp_ratelimits) makes a CPU's threads look at the
 * limits together when they dirty ratelimit_pages between them.
 *
 * Locks: a domain's wb.lock while its rates are updated (every 200 ms);
 * the global domain's dirty_limit under gl_lock (a leaf).  None is held
 * while a writer sleeps.
 */
#include "pagecache/dirty.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/options.h"
#include "percpu/percpu.h"
#include "memcg/pressure.h"
#include "os/os.h"
#include "pagecache/flusher.h"
#include "pagecache/writeback.h"

#define PAGE 4096ul
#define RATELIMIT_SLOTS 1024

/* ------------------------------------------------------------ arithmetic */

static unsigned long ilog2_ul(unsigned long v) { return v ? 63u - (unsigned)__builtin_clzl(v) : 0; }

/* @v >= 2: its callers' constants (the clz of 0 is undefined). */
static unsigned long roundup_pow_of_two(unsigned long v)
{
	return 1ul << (64 - __builtin_clzl(v - 1));
}

static unsigned long div_round_up(unsigned long a, unsigned long b) { return (a + b - 1) / b; }

void mcg_dirty_thresholds(struct mcg_dtc *d, long ratio, long bytes, bool bytes_global,
                          long bg_ratio, long bg_bytes, bool bg_bytes_global,
                          unsigned long global_avail)
{
	/* Ratios in 1/PAGE (per-PAGE_SIZE) for precision, as the kernel's. */
	unsigned long r = (unsigned long)ratio * PAGE / 100,
	              bgr = (unsigned long)bg_ratio * PAGE / 100;
	unsigned long b = bytes > 0 ? (unsigned long)bytes : 0;
	unsigned long bgb = bg_bytes > 0 ? (unsigned long)bg_bytes : 0;
	/* The options' bytes cannot apply to a group as such: a ratio of the
	 * globally available memory (the kernel's domain_dirty_limits()). */
	if (bytes_global && global_avail && b) {
		r = MCG_MIN(div_round_up(b, global_avail), PAGE);
		b = 0;
	}
	if (bg_bytes_global && global_avail && bgb) {
		bgr = MCG_MIN(div_round_up(bgb, global_avail), PAGE);
		bgb = 0;
	}
	d->thresh = b ? div_round_up(b, PAGE) : (unsigned long)((__uint128_t)r * d->avail / PAGE);
	d->bg_thresh =
	        bgb ? div_round_up(bgb, PAGE) : (unsigned long)((__uint128_t)bgr * d->avail / PAGE);
	if (d->bg_thresh >= d->thresh)
		d->bg_thresh = d->thresh / 2;
}

unsigned long mcg_dirty_memcg_avail(unsigned long file, unsigned long dirty, unsigned long headroom,
                                    unsigned long global_avail, unsigned long global_dirty)
{
	unsigned long clean = file - MCG_MIN(file, dirty);
	unsigned long global_clean = global_avail - MCG_MIN(global_avail, global_dirty);
	unsigned long other_clean = global_clean - MCG_MIN(global_clean, clean);
	return file + MCG_MIN(headroom, other_clean);
}

long mcg_dirty_pos_ratio(unsigned long setpoint, unsigned long dirty, unsigned long limit)
{
	if (dirty >= limit)
		return 0;
	long long x = ((long long)setpoint - (long long)dirty) *
	              (1ll << MCG_DIRTY_RATELIMIT_SHIFT) / (long long)((limit - setpoint) | 1);
	/* |x| > 1 puts the cube past the clamp either way; keep it from overflowing. */
	if (x > 2048)
		x = 2048;
	if (x < -2048)
		x = -2048;
	long long pos = x;
	pos = pos * x >> MCG_DIRTY_RATELIMIT_SHIFT;
	pos = pos * x >> MCG_DIRTY_RATELIMIT_SHIFT;
	pos += 1ll << MCG_DIRTY_RATELIMIT_SHIFT;
	if (pos < 0)
		pos = 0;
	if (pos > 2ll << MCG_DIRTY_RATELIMIT_SHIFT)
		pos = 2ll << MCG_DIRTY_RATELIMIT_SHIFT;
	return (long)pos;
}

void mcg_dirty_position(struct mcg_dtc *d, unsigned long dom_limit)
{
	d->freerun = mcg_dirty_freerun(d->thresh, d->bg_thresh);
	d->limit = MCG_MAX(d->thresh, dom_limit); /* hard_dirty_limit() */
	d->setpoint = (d->freerun + d->limit) / 2;
	d->pos_ratio = mcg_dirty_pos_ratio(d->setpoint, d->dirty, d->limit);
	d->dirty_exceeded = d->dirty > d->thresh;
}

unsigned long mcg_dirty_limit_update(unsigned long limit, unsigned long thresh, unsigned long dirty)
{
	if (limit < thresh)
		return thresh; /* follow up in one step */
	/* Down slowly, toward the higher of thresh and dirty: the limit stays
	 * above the dirty pages even when thresh drops below them. */
	thresh = MCG_MAX(thresh, dirty);
	if (limit > thresh)
		limit -= (limit - thresh) >> 5;
	return limit;
}

unsigned long mcg_dirty_poll_interval(unsigned long dirty, unsigned long thresh)
{
	if (thresh > dirty)
		return 1ul << (ilog2_ul(thresh - dirty) >> 1);
	return 1;
}

void mcg_dirty_update_write_bw(struct mcg_wb *wb, unsigned long elapsed, long written)
{
	const unsigned long period = roundup_pow_of_two(3 * MCG_DIRTY_HZ);
	unsigned long avg = wb->avg_write_bw, old = wb->write_bw;
	uint64_t bw = (uint64_t)(written > 0 ? written : 0) * MCG_DIRTY_HZ;
	if (elapsed > period) {
		bw /= elapsed;
		avg = (unsigned long)bw;
		goto out;
	}
	bw += (uint64_t)old * (period - elapsed);
	bw >>= ilog2_ul(period);
	/* One more level of smoothing, for filtering out sudden spikes. */
	if (avg > old && old >= (unsigned long)bw)
		avg -= (avg - old) >> 3;
	if (avg < old && old <= (unsigned long)bw)
		avg += (old - avg) >> 3;
out:
	avg = MCG_MAX(avg, 1ul);
	__atomic_store_n(&wb->write_bw, (unsigned long)bw, __ATOMIC_RELAXED);
	__atomic_store_n(&wb->avg_write_bw, avg, __ATOMIC_RELAXED);
}

void mcg_dirty_update_ratelimit(struct mcg_wb *wb, const struct mcg_dtc *d, long dirtied,
                                unsigned long elapsed)
{
	unsigned long dirty = d->dirty, setpoint = d->setpoint;
	unsigned long write_bw = wb->avg_write_bw, dirty_ratelimit = wb->dirty_ratelimit;
	/* The dirty rate matches the writeout rate in the long run. */
	unsigned long dirty_rate =
	        (unsigned long)((uint64_t)(dirtied > 0 ? dirtied : 0) * MCG_DIRTY_HZ / elapsed);
	/* task_ratelimit: each writer's rate over the last 200 ms. */
	unsigned long task_ratelimit =
	        (unsigned long)((uint64_t)dirty_ratelimit * (uint64_t)d->pos_ratio >>
	                        MCG_DIRTY_RATELIMIT_SHIFT);
	task_ratelimit++; /* it helps ramp up from tiny values */
	/* N writers, each at task_ratelimit, dirty at N * task_ratelimit:
	 * the balanced rate is write_bw / N. */
	unsigned long balanced =
	        (unsigned long)((uint64_t)task_ratelimit * write_bw / (dirty_rate | 1));
	if (balanced > write_bw)
		balanced = write_bw;
	/* Step toward it only where task_ratelimit agrees (filters singular
	 * points), and by less when close. */
	unsigned long step = 0, x;
	if (dirty < setpoint) {
		x = MCG_MIN(MCG_MIN(wb->balanced_dirty_ratelimit, balanced), task_ratelimit);
		if (dirty_ratelimit < x)
			step = x - dirty_ratelimit;
	} else {
		x = MCG_MAX(MCG_MAX(wb->balanced_dirty_ratelimit, balanced), task_ratelimit);
		if (dirty_ratelimit > x)
			step = dirty_ratelimit - x;
	}
	unsigned long shift = dirty_ratelimit / (2 * step + 1);
	if (shift < 64)
		step = div_round_up(step >> shift, 8);
	else
		step = 0;
	if (dirty_ratelimit < balanced)
		dirty_ratelimit += step;
	else
		dirty_ratelimit -= step;
	__atomic_store_n(&wb->dirty_ratelimit, MCG_MAX(dirty_ratelimit, 1ul), __ATOMIC_RELAXED);
	wb->balanced_dirty_ratelimit = balanced;
}

long mcg_dirty_max_pause(const struct mcg_wb *wb, unsigned long wb_dirty)
{
	unsigned long bw = __atomic_load_n(&wb->avg_write_bw, __ATOMIC_RELAXED);
	/* Sleep at most an eighth of the time the dirty pages take to write:
	 * a small pool must not run dry while the writer sleeps. */
	unsigned long t = wb_dirty / (1 + bw / roundup_pow_of_two(1 + MCG_DIRTY_HZ / 8));
	t++;
	return (long)MCG_MIN(t, (unsigned long)MCG_DIRTY_MAX_PAUSE);
}

long mcg_dirty_min_pause(const struct mcg_wb *wb, long max_pause, unsigned long task_ratelimit,
                         unsigned long dirty_ratelimit, int *nr_dirtied_pause)
{
	long hi = (long)ilog2_ul(__atomic_load_n(&wb->avg_write_bw, __ATOMIC_RELAXED));
	long lo = (long)ilog2_ul(dirty_ratelimit);
	long t = MCG_MAX(1l, (long)MCG_DIRTY_HZ / 100); /* 10 ms for one writer */
	long pages;
	/* N * 10 ms for 2^N concurrent writers: fewer, longer pauses. */
	if (hi > lo)
		t += (hi - lo) * (10 * MCG_DIRTY_HZ) / 1024;
	/* At most max_pause / 2, so that small swings of task_ratelimit do not
	 * make the next pause exceed max_pause. */
	t = MCG_MIN(t, 1 + max_pause / 2);
	pages = (long)((uint64_t)dirty_ratelimit * (uint64_t)t / roundup_pow_of_two(MCG_DIRTY_HZ));
	/* Not fewer than DIRTY_POLL_THRESH pages between looks when possible. */
	if (pages < MCG_DIRTY_POLL_THRESH) {
		t = max_pause;
		pages = (long)((uint64_t)dirty_ratelimit * (uint64_t)t /
		               roundup_pow_of_two(MCG_DIRTY_HZ));
		if (pages > MCG_DIRTY_POLL_THRESH) {
			pages = MCG_DIRTY_POLL_THRESH;
			t = MCG_DIRTY_HZ * MCG_DIRTY_POLL_THRESH /
			    (long)MCG_MAX(dirty_ratelimit, 1ul);
		}
	}
	long pause = MCG_DIRTY_HZ * pages / (long)(task_ratelimit + 1);
	if (pause > max_pause) {
		t = max_pause;
		pages = (long)((uint64_t)task_ratelimit * (uint64_t)t /
		               roundup_pow_of_two(MCG_DIRTY_HZ));
	}
	*nr_dirtied_pause = (int)pages;
	return pages >= MCG_DIRTY_POLL_THRESH ? 1 + t / 2 : t;
}

bool mcg_dirty_expired(uint64_t dirtied_ms, uint64_t now_ms)
{
	uint64_t expire = (uint64_t)mcg_option(MCG_OPT_DIRTY_EXPIRE_CS) * 10;
	return now_ms >= dirtied_ms + expire;
}

uint64_t mcg_dirty_now_ms(void) { return mcg_os_now_ns() / 1000000u; }

/* ------------------------------------------------------------ domains */

void mcg_wb_init(struct mcg_wb *wb)
{
	mcg_lock_init(&wb->lock, MCG_RANK_WB);
	mcg_list_init(&wb->files);
	mcg_list_init(&wb->work_link);
	mcg_list_init(&wb->dirty_link);
	wb->write_bw = wb->avg_write_bw = MCG_DIRTY_INIT_BW;
	wb->dirty_ratelimit = wb->balanced_dirty_ratelimit = MCG_DIRTY_INIT_BW;
}

/* The process's memory in pages: global pressure's budget when it runs
 * (memcg/pressure.h), else physical memory; looked up once a second. */
static unsigned long budget_pages(void)
{
	static unsigned long cached;
	static uint64_t when;
	uint64_t now = mcg_dirty_now_ms();
	unsigned long b = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	if (b && now < __atomic_load_n(&when, __ATOMIC_RELAXED) + 1000)
		return b;
	mcg_pressure_status_t st;
	if (!mcg_pressure_status(&st) && st.running && st.budget)
		b = st.budget / PAGE;
	else
		b = (unsigned long)sysconf(_SC_PHYS_PAGES) *
		    ((unsigned long)sysconf(_SC_PAGESIZE) / PAGE);
	__atomic_store_n(&cached, b, __ATOMIC_RELAXED);
	__atomic_store_n(&when, now, __ATOMIC_RELAXED);
	return b;
}

static long ratelimit_pages = 32; /* thresh / (CPUs * 32), at least 16 (atomic) */

void mcg_dirty_global(struct mcg_dtc *gd)
{
	struct mcg_pcg *rp = mcg_pcg_root();
	unsigned long usage = (unsigned long)mcg_page_counter_read(&mcg_group_root()->memory);
	unsigned long file = (unsigned long)mcg_pcg_read(rp, MCG_PC_FILE), budget = budget_pages();
	/* global_dirtyable_memory(): free + file pages */
	gd->avail = (budget > usage ? budget - usage : 0) + file;
	gd->dirty = (unsigned long)mcg_pcg_read(rp, MCG_PC_DIRTY_WB);
	gd->dirty_only =
	        gd->dirty - MCG_MIN(gd->dirty, (unsigned long)mcg_pcg_read(rp, MCG_PC_WRITEBACK));
	mcg_dirty_thresholds(gd, mcg_option(MCG_OPT_DIRTY_RATIO), mcg_option(MCG_OPT_DIRTY_BYTES),
	                     false, mcg_option(MCG_OPT_DIRTY_BACKGROUND_RATIO),
	                     mcg_option(MCG_OPT_DIRTY_BACKGROUND_BYTES), false, 0);
	long rl = (long)(gd->thresh / (mcg_os_nr_cpus() * 32ul));
	__atomic_store_n(&ratelimit_pages, MCG_MAX(rl, 16l), __ATOMIC_RELAXED);
}

bool mcg_dirty_group(struct mcg_pcg *p, const struct mcg_dtc *gd, struct mcg_dtc *md)
{
	if (!mcg_option(MCG_OPT_DIRTY_ACCOUNTING) || mcg_pcg_resolve(p) == mcg_pcg_root())
		return false;
	struct mcg_pcg *l;
	mcg_group_t *g = mcg_pcg_group_get(p, &l);
	if (l == mcg_pcg_root()) {
		mcg_group_put(g);
		return false;
	}
	unsigned long file = (unsigned long)mcg_pcg_read(l, MCG_PC_FILE);
	md->dirty = (unsigned long)mcg_pcg_read(l, MCG_PC_DIRTY_WB);
	md->dirty_only =
	        md->dirty - MCG_MIN(md->dirty, (unsigned long)mcg_pcg_read(l, MCG_PC_WRITEBACK));
	/* Headroom: the least room under min(max, high) of the group and its
	 * non-root ancestors (mem_cgroup_wb_stats()). */
	unsigned long headroom = ~0ul;
	for (mcg_group_t *a = g; a->parent; a = a->parent) {
		long ceiling = MCG_MIN(mcg_page_counter_get(&a->memory, max),
		                       mcg_page_counter_get(&a->memory, high));
		long used = mcg_page_counter_read(&a->memory);
		headroom =
		        MCG_MIN(headroom, ceiling > used ? (unsigned long)(ceiling - used) : 0ul);
	}
	md->avail = mcg_dirty_memcg_avail(file, md->dirty, headroom, gd->avail, gd->dirty);
	long ratio = MCG_READ_ONCE(g->dirty_ratio), bytes = MCG_READ_ONCE(g->dirty_bytes);
	long bg_ratio = MCG_READ_ONCE(g->dirty_background_ratio);
	long bg_bytes = MCG_READ_ONCE(g->dirty_background_bytes);
	bool bytes_global = bytes < 0, bg_bytes_global = bg_bytes < 0;
	if (ratio < 0)
		ratio = mcg_option(MCG_OPT_DIRTY_RATIO);
	if (bytes < 0)
		bytes = mcg_option(MCG_OPT_DIRTY_BYTES);
	if (bg_ratio < 0)
		bg_ratio = mcg_option(MCG_OPT_DIRTY_BACKGROUND_RATIO);
	if (bg_bytes < 0)
		bg_bytes = mcg_option(MCG_OPT_DIRTY_BACKGROUND_BYTES);
	/* The group's own bytes apply as bytes; the options' as a ratio. */
	mcg_dirty_thresholds(md, ratio, bytes, bytes_global, bg_ratio, bg_bytes, bg_bytes_global,
	                     gd->avail);
	mcg_group_put(g);
	return true;
}

bool mcg_dirty_over_bg(struct mcg_pcg *p)
{
	struct mcg_dtc gd, md;
	mcg_dirty_global(&gd);
	if (gd.dirty_only > gd.bg_thresh)
		return true;
	return mcg_dirty_group(p, &gd, &md) && md.dirty_only > md.bg_thresh;
}

/* ------------------------------------------------------------ bandwidth */

static mcg_lock_t gl_lock = {PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP, MCG_RANK_LEAF};
static unsigned long global_dirty_limit; /* gl_lock; read racily */
static uint64_t global_limit_stamp;      /* gl_lock */

void mcg_dirty_fork_lock(void) { mcg_lock_raw(&gl_lock); }

void mcg_dirty_fork_unlock(void) { mcg_unlock_raw(&gl_lock); }

/*
 * __wb_update_bandwidth(): every 200 ms, the write bandwidth of @l's group
 * (its pages written back), and with @gd (the throttle's call) the domains'
 * dirty_limit and the group's dirty_ratelimit.
 */
static void update_bandwidth(struct mcg_pcg *l, const struct mcg_dtc *gd, const struct mcg_dtc *md)
{
	struct mcg_wb *wb = &l->wb;
	uint64_t now = mcg_dirty_now_ms();
	if (now <
	    __atomic_load_n(&wb->bw_time_stamp, __ATOMIC_RELAXED) + MCG_DIRTY_BANDWIDTH_INTERVAL)
		return;
	mcg_lock(&wb->lock);
	uint64_t stamp = wb->bw_time_stamp;
	unsigned long elapsed = (unsigned long)(now - stamp);
	if (stamp && elapsed < MCG_DIRTY_BANDWIDTH_INTERVAL) {
		mcg_unlock(&wb->lock);
		return;
	}
	long dirtied = (long)mcg_pcg_read_raw(l, MCG_PC_DIRTIED);
	long written = (long)mcg_pcg_read_raw(l, MCG_PC_WRITTEN);
	/* Skip quiet periods: after a second without a look, only restart. */
	if (stamp && elapsed <= MCG_DIRTY_HZ) {
		if (gd) {
			mcg_lock(&gl_lock);
			if (now >= global_limit_stamp + MCG_DIRTY_BANDWIDTH_INTERVAL) {
				__atomic_store_n(&global_dirty_limit,
				                 mcg_dirty_limit_update(global_dirty_limit,
				                                        gd->thresh, gd->dirty),
				                 __ATOMIC_RELAXED);
				global_limit_stamp = now;
			}
			mcg_unlock(&gl_lock);
			mcg_dirty_update_ratelimit(wb, gd, dirtied - wb->dirtied_stamp, elapsed);
			if (md) {
				__atomic_store_n(&wb->dirty_limit,
				                 mcg_dirty_limit_update(wb->dirty_limit, md->thresh,
				                                        md->dirty),
				                 __ATOMIC_RELAXED);
				mcg_dirty_update_ratelimit(wb, md, dirtied - wb->dirtied_stamp,
				                           elapsed);
			}
		}
		mcg_dirty_update_write_bw(wb, elapsed, written - wb->written_stamp);
	}
	wb->dirtied_stamp = dirtied;
	wb->written_stamp = written;
	__atomic_store_n(&wb->bw_time_stamp, now, __ATOMIC_RELAXED);
	mcg_unlock(&wb->lock);
}

void mcg_dirty_writeback_done(struct mcg_pcg *p)
{
	update_bandwidth(mcg_pcg_resolve(p), NULL, NULL);
}

/* ------------------------------------------------------------ the throttle */

/* This thread's writer state (dirty.h): the kernel's current->nr_dirtied & co. */
mcg_tls struct mcg_bdp mcg_bdp_ = {0, MCG_DIRTY_POLL_THRESH, 0};
#define bdp mcg_bdp_

static long bdp_ratelimits[RATELIMIT_SLOTS]; /* per CPU (relaxed atomics) */

static void (*trace_fn)(const struct mcg_dirty_trace *t, void *arg);
static void *trace_arg;

void mcg_dirty_set_trace(void (*fn)(const struct mcg_dirty_trace *t, void *arg), void *arg)
{
	__atomic_store_n(&trace_arg, arg, __ATOMIC_RELAXED);
	__atomic_store_n(&trace_fn, fn, __ATOMIC_RELEASE);
}

void mcg_dirty_note(unsigned pages)
{
	bdp.nr_dirtied += (int)pages;
	__atomic_fetch_add(&bdp_ratelimits[mcg_percpu_cpu() % RATELIMIT_SLOTS], (long)pages,
	                   __ATOMIC_RELAXED);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Queue background writeback on @l unless it is queued already; with no
 * flusher thread (none could be started), write a round here. */
static void kick_background(struct mcg_pcg *l)
{
	if (!(__atomic_load_n(&l->wb.work, __ATOMIC_RELAXED) & MCG_WB_WORK_BACKGROUND))
		mcg_flusher_queue(l, MCG_WB_WORK_BACKGROUND);
	if (unlikely(!mcg_flusher_running()))
		mcg_wb_domain_write(l, MCG_WB_WORK_BACKGROUND);
}

static int balance_dirty_pages(mcg_group_t *g, struct mcg_pcg *p, int pages_dirtied, bool nowait,
                               uint64_t *wait_ns)
{
	for (;;) {
		uint64_t now = mcg_dirty_now_ms();
		struct mcg_dtc gd = {0}, md = {0};
		struct mcg_pcg *l = mcg_pcg_resolve(p);
		struct mcg_wb *wb = &l->wb;
		mcg_dirty_global(&gd);
		bool have_md = mcg_dirty_group(l, &gd, &md);
		if (gd.dirty_only > gd.bg_thresh || (have_md && md.dirty_only > md.bg_thresh))
			kick_background(l);
		gd.freerun = mcg_dirty_freerun(gd.thresh, gd.bg_thresh);
		md.freerun = mcg_dirty_freerun(md.thresh, md.bg_thresh);
		if (gd.dirty <= gd.freerun && (!have_md || md.dirty <= md.freerun)) {
			unsigned long intv = mcg_dirty_poll_interval(gd.dirty, gd.thresh);
			if (have_md)
				intv = MCG_MIN(intv, mcg_dirty_poll_interval(md.dirty, md.thresh));
			bdp.paused_when = now;
			bdp.nr_dirtied = 0;
			bdp.nr_dirtied_pause = (int)MCG_MIN(intv, (unsigned long)INT32_MAX);
			return 0;
		}
		kick_background(l);
		mcg_dirty_position(&gd, __atomic_load_n(&global_dirty_limit, __ATOMIC_RELAXED));
		struct mcg_dtc *sd = &gd;
		if (have_md) {
			mcg_dirty_position(&md,
			                   __atomic_load_n(&wb->dirty_limit, __ATOMIC_RELAXED));
			if (md.pos_ratio < gd.pos_ratio)
				sd = &md;
		}
		__atomic_store_n(&wb->dirty_exceeded,
		                 gd.dirty_exceeded || (have_md && md.dirty_exceeded),
		                 __ATOMIC_RELAXED);
		update_bandwidth(l, &gd, have_md ? &md : NULL);

		unsigned long dirty_ratelimit =
		        __atomic_load_n(&wb->dirty_ratelimit, __ATOMIC_RELAXED);
		unsigned long task_ratelimit =
		        (unsigned long)((uint64_t)dirty_ratelimit * (uint64_t)sd->pos_ratio >>
		                        MCG_DIRTY_RATELIMIT_SHIFT);
		unsigned long wb_dirty = have_md ? md.dirty : gd.dirty;
		long max_pause = mcg_dirty_max_pause(wb, wb_dirty);
		int nr_dirtied_pause;
		long min_pause = mcg_dirty_min_pause(wb, max_pause, task_ratelimit, dirty_ratelimit,
		                                     &nr_dirtied_pause);
		/* Above freerun a thread looks again after at most 32 pages
		 * (shorter periods add up as debt), so N writers pass the limit
		 * by 32 N pages at most; the kernel lets the interval grow with
		 * the rate, its limits being gigabytes, a group's here may be a
		 * few megabytes. */
		nr_dirtied_pause = MCG_MIN(nr_dirtied_pause, MCG_DIRTY_POLL_THRESH);
		long period, pause;
		if (task_ratelimit == 0) {
			period = max_pause;
			pause = max_pause;
		} else {
			period = (long)(MCG_DIRTY_HZ * (uint64_t)pages_dirtied / task_ratelimit);
			pause = period;
			if (bdp.paused_when)
				pause -= (long)(now - bdp.paused_when);
			/* Less than min_pause: no sleep now, carried as debt (the
			 * virtual time moves on by the period) unless the writer
			 * was idle for over a second. */
			if (pause < min_pause) {
				if (pause < -MCG_DIRTY_HZ) {
					bdp.paused_when = now;
					bdp.nr_dirtied = 0;
				} else if (period) {
					bdp.paused_when += (uint64_t)period;
					bdp.nr_dirtied = 0;
				} else if (bdp.nr_dirtied_pause <= pages_dirtied) {
					bdp.nr_dirtied_pause =
					        MCG_MIN(bdp.nr_dirtied_pause + pages_dirtied,
					                MCG_DIRTY_POLL_THRESH);
				}
				return 0;
			}
			if (pause > max_pause) { /* an occasional drop of task_ratelimit */
				now += (uint64_t)MCG_MIN(pause - max_pause, max_pause);
				pause = max_pause;
			}
		}
		void (*fn)(const struct mcg_dirty_trace *, void *) =
		        __atomic_load_n(&trace_fn, __ATOMIC_ACQUIRE);
		if (fn) {
			struct mcg_dirty_trace t = {
			        .group = g,
			        .group_domain = sd == &md,
			        .dirty = sd->dirty,
			        .setpoint = sd->setpoint,
			        .limit = sd->limit,
			        .thresh = sd->thresh,
			        .bg_thresh = sd->bg_thresh,
			        .task_ratelimit = task_ratelimit,
			        .dirty_ratelimit = dirty_ratelimit,
			        .write_bw = __atomic_load_n(&wb->avg_write_bw, __ATOMIC_RELAXED),
			        .pause_ms = nowait ? 0 : pause,
			};
			fn(&t, __atomic_load_n(&trace_arg, __ATOMIC_RELAXED));
		}
		if (nowait) {
			*wait_ns = (uint64_t)pause * 1000000u;
			return -EAGAIN;
		}
		sleep_ms(pause);
		mcg_pcg_mod(l, MCG_PC_THROTTLED, pause);
		bdp.paused_when = now + (uint64_t)pause;
		bdp.nr_dirtied = 0;
		bdp.nr_dirtied_pause = nr_dirtied_pause;
		/* Below the limit: done.  At it: look again, until writeback
		 * brings the domain under it. */
		if (task_ratelimit || !wb_dirty)
			return 0;
	}
}

int mcg_balance_dirty_pages_ratelimited(mcg_group_t *g, bool nowait, uint64_t *wait_ns)
{
	if (!g)
		g = mcg_group_current();
	struct mcg_pcg *p = mcg_option(MCG_OPT_DIRTY_ACCOUNTING) ? mcg_pcg_of(g) : mcg_pcg_root();
	if (!p)
		p = mcg_pcg_root();
	struct mcg_pcg *l = mcg_pcg_resolve(p);
	int ratelimit = bdp.nr_dirtied_pause;
	if (__atomic_load_n(&l->wb.dirty_exceeded, __ATOMIC_RELAXED))
		ratelimit = MCG_MIN(ratelimit, 32 >> (12 - 10)); /* 8 pages */
	long *cpu = &bdp_ratelimits[mcg_percpu_cpu() % RATELIMIT_SLOTS];
	if (bdp.nr_dirtied >= ratelimit) {
		__atomic_store_n(cpu, 0, __ATOMIC_RELAXED);
	} else if (__atomic_load_n(cpu, __ATOMIC_RELAXED) >=
	           __atomic_load_n(&ratelimit_pages, __ATOMIC_RELAXED)) {
		/* This CPU's threads together dirtied enough: look now. */
		__atomic_store_n(cpu, 0, __ATOMIC_RELAXED);
		ratelimit = 0;
	}
	if (bdp.nr_dirtied >= ratelimit && bdp.nr_dirtied > 0)
		return balance_dirty_pages(g, p, bdp.nr_dirtied, nowait, wait_ns);
	return 0;
}
