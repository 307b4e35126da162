/* SPDX-License-Identifier: MIT */
/*
 * memcg/memcg.h - library-wide settings: version and runtime options.
 *
 * Options (the table: `memcg options`, docs/options.md) are read from MCG_*
 * environment variables when the library initialises, on first use.  Call
 * these before anything else to override them or to keep the library out of
 * the environment entirely.
 */
#ifndef MEMCG_MEMCG_H
#define MEMCG_MEMCG_H

#ifdef __cplusplus
extern "C" {
#endif

#define MCG_VERSION_MAJOR 0
#define MCG_VERSION_MINOR 1
#define MCG_VERSION_PATCH 0

/**
 * mcg_options_use_env - whether initialisation reads MCG_* environment
 * variables (default: yes).  Return: 0, or -EBUSY once options were read.
 */
int mcg_options_use_env(int use);

/**
 * mcg_option_set - set option @name (as listed by `memcg options`) to @value.
 * Options that shape initialisation (rseq, numa_nodes) must be set before the
 * library's first use.  Return: 0, -ENOENT (no such option) or -EINVAL
 * (out of range; nothing changed).
 */
int mcg_option_set(const char *name, long value);

#ifdef __cplusplus
}
#endif
#endif /* MEMCG_MEMCG_H */
