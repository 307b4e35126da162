/* SPDX-License-Identifier: MIT */
/*
 * iface/proto.h - the control protocol: one request line in, one reply out.
 * No sockets here (iface/server.c carries the bytes), so the parser and
 * dispatcher are tested, and fuzzed, on bytes alone.
 *
 * Request: a line of at most MCG_CONTROL_LINE_MAX bytes with its newline:
 * words separated by spaces or tabs, each percent-encoded ("%XX" is byte
 * XX, so "/my%20tenant" names the group "my tenant").  An optional first
 * word "json" asks for the JSON form of a command that has one.
 *
 *   help                      the commands
 *   info                      pid, uid, command, groups, memory, socket, metrics
 *   groups [PATH]             the paths of PATH's subtree (default /), depth first
 *   read PATH FILE            a group's file, as cat prints it
 *   stat [PATH]               every file of every group of PATH's subtree
 *   write PATH FILE VALUE     mcg_group_write(): "-EINVAL and nothing changed"
 *   create PATH               mcg_group_create() of PATH's last name under the rest
 *   remove PATH               mcg_group_remove()
 *   slabinfo                  /proc/slabinfo's format
 *   metrics                   the Prometheus text format (iface/prom.h)
 *   json all                  {"info":..,"groups":[..],"slabinfo":[..]}
 *
 * Reply: "ok LEN\n" and LEN bytes of body, or one line "error NAME text\n"
 * (NAME: the errno's name, "EINVAL"; text: the errno's description and
 * what failed), and then nothing changed.
 *
 * Locks: none of its own; the group and slab calls take theirs.
 */
#ifndef MCG_IFACE_PROTO_H
#define MCG_IFACE_PROTO_H

#include <stddef.h>

#include "iface/out.h"

/** The protocol's version, in `info`. */
#define MCG_CONTROL_PROTOCOL 1
/** Longest request line, its newline included. */
#define MCG_CONTROL_LINE_MAX 4096
/** Room a reply keeps in front for its "ok LEN\n" head. */
#define MCG_CONTROL_HEAD 32

/**
 * mcg_control_handle_line - answer the request @line (@len bytes, without
 * its newline; one trailing '\r' is ignored) into @reply, which is reset
 * first.
 * Return: 0 (reply "ok ...") or the -errno of the error line.
 */
int mcg_control_handle_line(const char *line, size_t len, struct mcg_out *reply);

/**
 * mcg_control_error - reset @reply to the error line for -@err (a negative
 * errno) with @fmt's text.  Return: @err.
 */
int mcg_control_error(struct mcg_out *reply, int err, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

#endif /* MCG_IFACE_PROTO_H */
