/* SPDX-License-Identifier: MIT */
/* percpu/pcpu_stack.c - the locked path of per-CPU stacks (see pcpu_stack.h):
 * bounded by cap and 0, since lo and hi read stopped in locked mode. */
#include "percpu/pcpu_stack.h"

void *mcg_cpulock_stack_pop(struct mcg_pcpu_stack *base)
{
	struct mcg_pcpu_stack *s = mcg_pcpu_stack_lock_mine(base);
	void *obj = NULL;
	if (s->cur > 0) {
		obj = s->slots[s->cur - 1];
		MCG_WRITE_ONCE(s->cur, s->cur - 1); /* read racily by stats and reap */
	}
	mcg_unlock(&s->lock);
	return obj;
}

int mcg_cpulock_stack_push(struct mcg_pcpu_stack *base, void *obj)
{
	struct mcg_pcpu_stack *s = mcg_pcpu_stack_lock_mine(base);
	int r = MCG_PCPU_FAIL;
	if (s->cur < s->cap) {
		if (s->cur > 0 && s->slots[s->cur - 1] == obj) {
			r = MCG_PCPU_DOUBLE;
		} else {
			s->slots[s->cur] = obj;
			MCG_WRITE_ONCE(s->cur, s->cur + 1);
			r = MCG_PCPU_OK;
		}
	}
	mcg_unlock(&s->lock);
	return r;
}

uint32_t mcg_cpulock_stack_push_batch(struct mcg_pcpu_stack *base, void *const *src, uint32_t n)
{
	struct mcg_pcpu_stack *s = mcg_pcpu_stack_lock_mine(base);
	uint32_t k = 0;
	if (s->cur < s->cap) {
		k = MCG_MIN(n, s->cap - s->cur);
		for (uint32_t i = 0; i < k; i++)
			s->slots[s->cur + i] = src[i];
		MCG_WRITE_ONCE(s->cur, s->cur + k);
	}
	mcg_unlock(&s->lock);
	return k;
}

uint32_t mcg_cpulock_stack_pop_batch(struct mcg_pcpu_stack *base, void **dst, uint32_t n)
{
	struct mcg_pcpu_stack *s = mcg_pcpu_stack_lock_mine(base);
	uint32_t k = 0;
	if (s->cur > 0) {
		k = MCG_MIN(n, s->cur);
		MCG_WRITE_ONCE(s->cur, s->cur - k);
		for (uint32_t i = 0; i < k; i++)
			dst[i] = s->slots[s->cur + i];
	}
	mcg_unlock(&s->lock);
	return k;
}
