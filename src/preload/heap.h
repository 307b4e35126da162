/* SPDX-License-Identifier: MIT */
/*
 * preload/heap.h - the shim's heap group: when `memcg run --max/--high`
 * asks for it, every malloc of the program is charged to one group.
 */
#ifndef MCG_PRELOAD_HEAP_H
#define MCG_PRELOAD_HEAP_H

#include "base/compiler.h"

struct mcg_objcg;

/** The heap group's objcg (anon), or NULL: heap not accounted.  Set once, before threads. */
extern mcg_hidden struct mcg_objcg *mcg_preload_heap;

/** mcg_preload_heap_report - write the heap group's files to @fd (nothing if not accounted). */
void mcg_preload_heap_report(int fd);

#endif /* MCG_PRELOAD_HEAP_H */
