/* SPDX-License-Identifier: MIT */
/*
 * memcg/pressure.h - global pressure: a budget for the whole process, with
 * watermarks, and a background reclaimer thread (the kernel's kswapd).
 *
 * The budget is what the process really has.  Unless configured, it is
 * detected once at mcg_pressure_start():
 *   1. cgroup v2: /proc/self/cgroup "0::/path" -> the smallest of
 *      memory.max and memory.high of that cgroup and its ancestors
 *      (the v2 mount at /sys/fs/cgroup, or /sys/fs/cgroup/unified);
 *   2. cgroup v1: the "memory" controller's line -> the smallest
 *      memory.limit_in_bytes of /sys/fs/cgroup/memory/<path> and ancestors;
 *   3. else physical memory (/proc/meminfo MemTotal, or sysinfo(2)).
 * Huge "unlimited" values (v1's 2^63 - 4096, anything above physical memory)
 * count as no limit.  Missing or unreadable files are skipped, never fatal;
 * mcg_pressure_status() says which sources are in use and why others are not.
 *
 * Usage is the root group's memory.current (what memcg has charged) or,
 * when the budget comes from a cgroup whose usage file is readable
 * (v2 memory.current, v1 memory.usage_in_bytes), the larger of the two:
 * other memory in the cgroup counts against the same limit.
 *
 * The reclaimer wakes every interval, on mcg_pressure_wake(), and on the
 * kernel's PSI memory pressure: a trigger ("some 150000 1000000", or the
 * 2 s window that unprivileged callers are allowed) written to the cgroup's
 * memory.pressure or to /proc/pressure/memory, then poll() for POLLPRI.
 * Where a trigger cannot be armed it reads the file's "some avg10" each
 * interval instead.  When usage is above the high watermark it reclaims
 * from the root group down to the low watermark; on a PSI event it reclaims
 * at least 1/16 of the root's usage, so the process gives back its caches
 * before the kernel's OOM killer has to act.
 *
 * Nothing starts unless asked: no thread and no file is opened before
 * mcg_pressure_start().  All calls are thread safe.
 */
#ifndef MEMCG_PRESSURE_H
#define MEMCG_PRESSURE_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flags of mcg_pressure_config_t. */
/** Do not read the process's cgroup; the budget is physical memory (or configured). */
#define MCG_PRESSURE_NO_CGROUP 0x1u
/** Do not use PSI (no trigger, no polling of the pressure files). */
#define MCG_PRESSURE_NO_PSI 0x2u
/** Use the root group's usage only, never the cgroup's usage file. */
#define MCG_PRESSURE_NO_EXTERNAL_USAGE 0x4u
/** All flags; any other bit is -EINVAL. */
#define MCG_PRESSURE_FLAGS_ALL 0x7u

/**
 * Reclaim function: free about @nr_bytes of reclaimable memory.
 * Return: bytes freed (0: nothing could be freed).  Called from the
 * reclaimer thread (or mcg_pressure_balance()'s caller) with no memcg lock held.
 */
typedef size_t (*mcg_pressure_reclaim_fn)(size_t nr_bytes, void *arg);

/** Configuration of mcg_pressure_start(); all zeros means the defaults. */
typedef struct mcg_pressure_config {
	size_t budget;        /**< bytes; 0: detect (see above) */
	unsigned high_pct;    /**< high watermark in % of the budget, 1..100; 0: 90 */
	unsigned low_pct;     /**< low watermark in %, below high_pct; 0: 80 (or high - 10) */
	unsigned interval_ms; /**< check period; 0: 100 ms */
	unsigned flags;       /**< MCG_PRESSURE_* */
	mcg_pressure_reclaim_fn reclaim; /**< NULL: reclaim from the root group */
	void *reclaim_arg;               /**< passed to @reclaim */
} mcg_pressure_config_t;

/** Where the budget came from (mcg_pressure_status_t.budget_kind). */
enum mcg_pressure_budget_kind {
	MCG_BUDGET_CONFIGURED, /**< mcg_pressure_config_t.budget */
	MCG_BUDGET_CGROUP_V2,  /**< memory.max / memory.high */
	MCG_BUDGET_CGROUP_V1,  /**< memory.limit_in_bytes */
	MCG_BUDGET_PHYSICAL,   /**< physical memory */
};

/** How PSI is watched (mcg_pressure_status_t.psi_kind). */
enum mcg_pressure_psi_kind {
	MCG_PSI_NONE,    /**< not available or turned off */
	MCG_PSI_TRIGGER, /**< a trigger is armed: woken by POLLPRI */
	MCG_PSI_POLLED,  /**< no trigger could be armed: avg10 read each interval */
};

/** A snapshot of the global pressure state. */
typedef struct mcg_pressure_status {
	int running;              /**< 1 between start and stop */
	size_t budget;            /**< bytes */
	size_t high, low;         /**< watermarks, bytes */
	size_t usage;             /**< the last usage seen, bytes */
	size_t root_usage;        /**< the root group's memory.current at the last check */
	long long external_usage; /**< the cgroup's usage at the last check; -1: not used */
	enum mcg_pressure_budget_kind budget_kind;
	enum mcg_pressure_psi_kind psi_kind;
	char budget_source[256]; /**< e.g. "cgroup v2 /sys/fs/cgroup/a/memory.max" */
	char usage_source[256];  /**< "root group" or "root group + <file>" */
	char psi_source[256];  /**< e.g. "trigger \"some 150000 1000000\" on /proc/pressure/memory"
	                        */
	char notes[512];       /**< sources tried and skipped, with the reason */
	unsigned long wakeups; /**< reclaimer passes */
	unsigned long wakeups_watermark; /**< passes that found usage over high */
	unsigned long wakeups_psi;       /**< PSI events (trigger or polled) */
	unsigned long reclaim_calls;     /**< calls of the reclaim function */
	unsigned long failed_passes;     /**< passes that wanted memory and got none */
	size_t reclaimed;                /**< bytes reclaimed in all */
} mcg_pressure_status_t;

/**
 * mcg_pressure_set_root - read the cgroup and proc files below @root instead
 * of "/" (for tests: a fake tree with proc/self/cgroup, proc/meminfo,
 * proc/pressure/memory, sys/fs/cgroup/...).  NULL or "/" restores the real root.
 * Return: 0; -EBUSY while running; -ENAMETOOLONG; -EINVAL.
 */
int mcg_pressure_set_root(const char *root);

/**
 * mcg_pressure_start - detect the budget, arm PSI, start the reclaimer thread.
 * @cfg: NULL or all zeros for the defaults.
 * Return: 0; -EALREADY (running); -EINVAL (bad config); -ENOMEM or -errno
 * (the wake eventfd or the thread could not be created: nothing is left
 * running or half set up).
 * Pair with mcg_pressure_stop().
 */
int mcg_pressure_start(const mcg_pressure_config_t *cfg);

/**
 * mcg_pressure_stop - stop the reclaimer, wait for its pass to finish, close
 * the PSI file.  Idempotent; safe from any thread but the reclaimer itself
 * (a reclaim function must not call it).  Counters stay readable.
 */
void mcg_pressure_stop(void);

/**
 * mcg_pressure_wake - ask the reclaimer to check now (cheap; a no-op when
 * not running).  Safe from any thread, with memcg locks held.
 */
void mcg_pressure_wake(void);

/**
 * mcg_pressure_balance - run one reclaimer pass in the calling thread, as
 * the thread does on a wakeup (serialized with it).  For tests and for
 * callers that prefer to drive reclaim themselves.
 * Return: bytes reclaimed; -ENOTCONN when not started.
 */
long mcg_pressure_balance(void);

/** mcg_pressure_status - fill @st.  Return 0 or -EINVAL. */
int mcg_pressure_status(mcg_pressure_status_t *st);

/**
 * mcg_pressure_read - the status as text, one "key value" per line
 * (budget, watermarks, usage in bytes; sources; counters), snprintf-like:
 * Return: the length (>= @len means truncated) or -EINVAL.
 */
ssize_t mcg_pressure_read(char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* MEMCG_PRESSURE_H */
