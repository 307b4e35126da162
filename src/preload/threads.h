/* SPDX-License-Identifier: MIT */
/*
 * preload/threads.h - the shim's threads: the reaper and the control
 * socket's server, and when they start (preload/threads.c).
 */
#ifndef MCG_PRELOAD_THREADS_H
#define MCG_PRELOAD_THREADS_H

/**
 * mcg_preload_threads_exit - at the program's exit: start no thread from
 * now on, and stop the reaper if this process started one (a forked child
 * has none to join), so that the exit report is stable.
 */
void mcg_preload_threads_exit(void);

#endif /* MCG_PRELOAD_THREADS_H */
