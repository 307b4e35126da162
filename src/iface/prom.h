/* SPDX-License-Identifier: MIT */
/*
 * iface/prom.h - a snapshot (iface/snapshot.h) in the Prometheus text
 * exposition format, version 0.0.4: every family with its HELP and TYPE
 * lines, its samples together, names in base units (bytes, seconds) and
 * counters ending in _total.  The families and their sources:
 *
 *   memcg_groups                           number of groups in the snapshot
 *   memcg_memory_{current,peak}_bytes      memory.current, memory.peak
 *   memcg_memory_{min,low,high,max}_bytes  the limits; "max" is +Inf
 *   memcg_memory_events_total              memory.events {event}
 *   memcg_memory_events_local_total        memory.events.local {event}
 *   memcg_memory_stat_bytes                memory.stat's byte items {item}
 *   memcg_memory_stat_total                memory.stat's counters {item}
 *   memcg_memory_throttled_seconds_total   memory.stat throttled_ms
 *   memcg_memory_stat                      any other numeric memory.stat item {item}
 *   memcg_cgroup_{descendants,dying_descendants}   cgroup.stat
 *   memcg_pressure_*                       the root's global pressure lines
 *   memcg_slab_objects                     {cache, state=active|cached|total}
 *   memcg_slab_slabs                       {cache, state=active|total}
 *   memcg_slab_object_size_bytes, memcg_slab_objects_per_slab,
 *   memcg_slab_slab_size_bytes             {cache}
 *   memcg_slab_purged_bytes                {cache}: free pages inside partial slabs given back
 *
 * Every group sample has the label group="/a/b" ("/" for the root).
 * Pure functions of their arguments; no locks.
 */
#ifndef MCG_IFACE_PROM_H
#define MCG_IFACE_PROM_H

#include "iface/out.h"
#include "iface/snapshot.h"

/** The Content-Type of the format. */
#define MCG_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/** mcg_prom_render - append @s in the text exposition format. */
void mcg_prom_render(struct mcg_out *o, const struct mcg_snapshot *s);

#endif /* MCG_IFACE_PROM_H */
