/* SPDX-License-Identifier: MIT */
/* percpu/pcpu_stack.c - the locked path of per-CPU stacks (see pcpu_stack.h):
 * bounded by cap and 0, since lo and hi read stopped in locked mode. */
#include "percpu/pcpu_stack.h"

void *mcg_cpulock_stack_pop(struct mcg_pcpu_stack *base)
{
	struct mcg_pcpu_stack *s = mcg_pcpu_stack_lock_mine(base);
	struct mcg_pcpu_side *a = mcg_pcpu_stack_alloc_side(s);
	void *obj = NULL;
	if (a->cur == 0 && s->cap && mcg_pcpu_stack_free_side(s)->cur > 0) {
		MCG_WRITE_ONCE(s->which, s->which ^ MCG_PCPU_SIDE_STRIDE); /* the swap */
		a = mcg_pcpu_stack_alloc_side(s);
	}
	if (a->cur > 0) {
		obj = a->slots[a->cur - 1];
		MCG_WRITE_ONCE(a->cur, a->cur - 1); /* read racily by stats and aging */
	}
	mcg_unlock(&s->lock);
	return obj;
}

int mcg_cpulock_stack_push(struct mcg_pcpu_stack *base, void *obj)
{
	struct mcg_pcpu_stack *s = mcg_pcpu_stack_lock_mine(base);
	struct mcg_pcpu_side *f = mcg_pcpu_stack_free_side(s);
	int r = MCG_PCPU_FAIL;
	if (f->cur < s->cap) {
		if (f->cur > 0 && f->slots[f->cur - 1] == obj) {
			r = MCG_PCPU_DOUBLE;
		} else {
			f->slots[f->cur] = obj;
			MCG_WRITE_ONCE(f->cur, f->cur + 1);
			r = MCG_PCPU_OK;
		}
	}
	mcg_unlock(&s->lock);
	return r;
}

uint32_t mcg_cpulock_stack_push_batch(struct mcg_pcpu_stack *base, void *const *src, uint32_t n)
{
	struct mcg_pcpu_stack *s = mcg_pcpu_stack_lock_mine(base);
	struct mcg_pcpu_side *a = mcg_pcpu_stack_alloc_side(s);
	uint32_t k = 0;
	if (a->cur < s->cap) {
		k = MCG_MIN(n, s->cap - a->cur);
		for (uint32_t i = 0; i < k; i++)
			a->slots[a->cur + i] = src[i];
		MCG_WRITE_ONCE(a->cur, a->cur + k);
	}
	mcg_unlock(&s->lock);
	return k;
}

uint32_t mcg_cpulock_stack_pop_batch(struct mcg_pcpu_stack *base, void **dst, uint32_t n)
{
	struct mcg_pcpu_stack *s = mcg_pcpu_stack_lock_mine(base);
	struct mcg_pcpu_side *f = mcg_pcpu_stack_free_side(s);
	uint32_t k = 0;
	if (f->cur > 0) {
		k = MCG_MIN(n, f->cur);
		MCG_WRITE_ONCE(f->cur, f->cur - k);
		for (uint32_t i = 0; i < k; i++)
			dst[i] = f->slots[f->cur + i];
	}
	mcg_unlock(&s->lock);
	return k;
}
