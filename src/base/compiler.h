/* SPDX-License-Identifier: MIT */
/*
 * base/compiler.h - compiler helpers and build-time configuration constants.
 *
 * Build options are constants, not #ifdef forests: every configuration
 * compiles, and the optimiser drops the dead branches.
 */
#ifndef MCG_BASE_COMPILER_H
#define MCG_BASE_COMPILER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define mcg_noinline __attribute__((noinline))
#define mcg_cold __attribute__((cold, noinline))
#define mcg_always_inline inline __attribute__((always_inline))
#define mcg_public __attribute__((visibility("default")))
/* For extern declarations of internal data: direct, not GOT, access in PIC code. */
#define mcg_hidden __attribute__((visibility("hidden")))
/* Thread-local data of the fast paths: one %fs load, no __tls_get_addr call
 * (the library is loaded at start-up, or fits the static TLS surplus). */
#define mcg_tls __thread __attribute__((tls_model("initial-exec")))
#define mcg_cacheline_aligned __attribute__((aligned(64)))
/* A fast-path entry point that starts on a cache line: its hot blocks sit
 * where its own code puts them, whatever precedes it in the binary, so a
 * change elsewhere cannot move its loop across a line or a fetch boundary.
 * On mcg_cache_alloc/free and mcg_malloc/free. */
#define mcg_entry_aligned __attribute__((aligned(64)))
#define MCG_CACHELINE 64

#define MCG_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MCG_MIN(a, b) ((a) < (b) ? (a) : (b))
#define MCG_MAX(a, b) ((a) > (b) ? (a) : (b))
#define MCG_ALIGN_UP(x, a) (((x) + ((a)-1)) & ~((__typeof__(x))(a)-1))
#define MCG_ALIGN_DOWN(x, a) ((x) & ~((__typeof__(x))(a)-1))
#define mcg_container_of(p, type, member) ((type *)((char *)(p)-offsetof(type, member)))

#ifndef MCG_CONFIG_DEBUG
#define MCG_CONFIG_DEBUG 0
#endif
/** Debug checks: lock ranks, invariants (on in sanitizer builds). */
static const bool mcg_config_debug = MCG_CONFIG_DEBUG;

#if defined(__SANITIZE_THREAD__)
#define MCG_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MCG_TSAN 1
#endif
#endif
#ifndef MCG_TSAN
#define MCG_TSAN 0
#endif
/** TSan cannot model rseq: such builds use the per-CPU lock path. */
static const bool mcg_config_tsan = MCG_TSAN;

#if defined(__x86_64__)
#define MCG_HAVE_RSEQ_ASM 1
#else
#define MCG_HAVE_RSEQ_ASM 0
#endif
/** rseq critical sections are written for x86-64 only; others use locks. */
static const bool mcg_config_rseq_asm = MCG_HAVE_RSEQ_ASM;

#define MCG_READ_ONCE(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define MCG_WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

#endif /* MCG_BASE_COMPILER_H */
