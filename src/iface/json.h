/* SPDX-License-Identifier: MIT */
/*
 * iface/json.h - snapshots (iface/snapshot.h) as JSON.
 *
 * A cgroup file becomes a value: a number ("4096\n" -> 4096), a string
 * ("max\n" -> "max"), or, for a flat-keyed file, an object of its lines
 * ("anon 0\nkernel 8192\n" -> {"anon":0,"kernel":8192}).  A group is an
 * object with its "path" and each file under its name; a cache an object
 * with slabinfo's columns by name.  Output is compact (no spaces) and valid
 * UTF-8 (iface/escape.h).
 *
 * Pure functions of their arguments; no locks.
 */
#ifndef MCG_IFACE_JSON_H
#define MCG_IFACE_JSON_H

#include "iface/out.h"
#include "iface/snapshot.h"

/** mcg_json_file_value - append the cgroup file text @text as a JSON value (null if empty). */
void mcg_json_file_value(struct mcg_out *o, const char *text);

/** mcg_json_group - append group @g of @s as an object. */
void mcg_json_group(struct mcg_out *o, const struct mcg_snapshot *s,
                    const struct mcg_snap_group *g);

/** mcg_json_caches - append the caches of @s as an array of objects. */
void mcg_json_caches(struct mcg_out *o, const struct mcg_snapshot *s);

/** mcg_json_snapshot - append {"groups":[...],"slabinfo":[...]} (slabinfo only if @s has caches).
 */
void mcg_json_snapshot(struct mcg_out *o, const struct mcg_snapshot *s);

#endif /* MCG_IFACE_JSON_H */
