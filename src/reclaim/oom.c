/* SPDX-License-Identifier: MIT */
/*
 * reclaim/oom.c - the OOM policy: an application callback that may "kill"
 * a victim group (cancel a tenant's work) when a charge cannot fit under
 * memory.max even after reclaim.  The charge path (group/stock.c) counts
 * "oom" on the group over its limit, calls mcg_oom_invoke() once per
 * charge, and retries with full reclaim after a kill; "oom_kill" is
 * counted on the victim (and, hierarchically, its ancestors).
 *
 * Locks: none; the policy pointer and argument are atomics.  A thread
 * inside the policy is marked, so that charges it makes fail instead of
 * recursing into OOM.
 */
#include "reclaim/oom.h"

#include "group/group.h"

static struct {
	mcg_oom_policy_fn fn;
	void *arg;
} policy;

static __thread bool in_oom;

mcg_public void mcg_oom_set_policy(mcg_oom_policy_fn fn, void *arg)
{
	mcg_reclaim_init();
	__atomic_store_n(&policy.arg, arg, __ATOMIC_RELAXED);
	__atomic_store_n(&policy.fn, fn, __ATOMIC_RELEASE);
}

bool mcg_oom_invoke(mcg_group_t *over, unsigned long nr_pages)
{
	mcg_oom_policy_fn fn = __atomic_load_n(&policy.fn, __ATOMIC_ACQUIRE);
	if (!fn || in_oom)
		return false;
	in_oom = true;
	mcg_group_t *victim = fn(over, nr_pages, __atomic_load_n(&policy.arg, __ATOMIC_RELAXED));
	in_oom = false;
	if (!victim)
		return false;
	mcg_group_event(victim, MCG_EVENT_OOM_KILL);
	return true;
}
