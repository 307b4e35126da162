/* SPDX-License-Identifier: MIT */
/* base/list.h - intrusive circular doubly linked list (the kernel's list_head). */
#ifndef MCG_BASE_LIST_H
#define MCG_BASE_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include "base/compiler.h" /* mcg_container_of */

struct mcg_list {
	struct mcg_list *next, *prev;
};

#define MCG_LIST_INIT(name)                                                                        \
	{                                                                                          \
		&(name), &(name)                                                                   \
	}

static inline void mcg_list_init(struct mcg_list *h) { h->next = h->prev = h; }
static inline bool mcg_list_empty(const struct mcg_list *h) { return h->next == h; }

static inline void mcg_list_insert_(struct mcg_list *n, struct mcg_list *prev,
                                    struct mcg_list *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}
/** Add @n at the head of @h. */
static inline void mcg_list_add(struct mcg_list *n, struct mcg_list *h)
{
	mcg_list_insert_(n, h, h->next);
}
/** Add @n at the tail of @h. */
static inline void mcg_list_add_tail(struct mcg_list *n, struct mcg_list *h)
{
	mcg_list_insert_(n, h->prev, h);
}
/** Unlink @n and leave it self-linked. */
static inline void mcg_list_del(struct mcg_list *n)
{
	n->next->prev = n->prev;
	n->prev->next = n->next;
	n->next = n->prev = n;
}
/** Move @n to the head of @h. */
static inline void mcg_list_move(struct mcg_list *n, struct mcg_list *h)
{
	mcg_list_del(n);
	mcg_list_add(n, h);
}
/** Move @n to the tail of @h. */
static inline void mcg_list_move_tail(struct mcg_list *n, struct mcg_list *h)
{
	mcg_list_del(n);
	mcg_list_add_tail(n, h);
}
/** Move all of @from to the tail of @to; @from ends empty. */
static inline void mcg_list_splice_tail(struct mcg_list *from, struct mcg_list *to)
{
	if (mcg_list_empty(from))
		return;
	struct mcg_list *first = from->next, *last = from->prev;
	first->prev = to->prev;
	to->prev->next = first;
	last->next = to;
	to->prev = last;
	mcg_list_init(from);
}

#define mcg_list_entry(p, type, member) mcg_container_of(p, type, member)
#define mcg_list_for_each(pos, head)                                                               \
	for (struct mcg_list *pos = (head)->next; pos != (head); pos = pos->next)
#define mcg_list_for_each_safe(pos, tmp, head)                                                     \
	for (struct mcg_list *pos = (head)->next, *tmp = pos->next; pos != (head);                 \
	     pos = tmp, tmp = pos->next)

#endif /* MCG_BASE_LIST_H */
