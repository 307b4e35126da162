/* SPDX-License-Identifier: MIT */
/* iface/server.h - what the malloc shim asks of the control server (server.c). */
#ifndef MCG_IFACE_SERVER_H
#define MCG_IFACE_SERVER_H

/**
 * mcg_control_exit_unlink - remove this process's socket file, for a
 * process that is exiting (a destructor, _exit()).  Async-signal-safe; the
 * serving thread is left to end with the process.
 */
void mcg_control_exit_unlink(void);

#endif /* MCG_IFACE_SERVER_H */
