/* SPDX-License-Identifier: MIT */
/*
 * table.h - one tenant's keyspace: a hash table of entries in accounted
 * memory, with expiry; every entry also sits on the eviction list_lru
 * (evict.h) of the group it is charged to.
 *
 * An entry is one allocation - header, key, value - charged to the
 * table's group (mcg_malloc_account): a tenant's keys and values count in
 * its memory.current and nowhere else.  The bucket arrays are charged to
 * the same group.
 *
 * Locking: the table is KV_STRIPES independent hash tables ("stripes"),
 * chosen by the key's hash, each with its own mutex; an operation takes
 * exactly one stripe lock, so there is no order among them.  The
 * list_lru's own list lock nests inside a stripe lock (an entry is added
 * and deleted with its stripe held).  Reclaim walks the list_lru with the
 * list lock held and needs the stripe lock to unlink an entry: that is
 * the reverse order, so it only ever *tries* the stripe lock and skips the
 * entry when it is busy (kv_entry_try_unlink(), the dentry shrinker's
 * way).  Hence allocating with a stripe lock held is safe: reclaim in
 * this thread skips that stripe.
 *
 * Invariant: an entry is on its stripe's chain iff it is on the list_lru;
 * both change only with the stripe lock held.  Whoever unlinks it from
 * the chain owns it and frees it.
 */
#ifndef KV_TABLE_H
#define KV_TABLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memcg/group.h"
#include "memcg/reclaim.h"

#define KV_STRIPES 64

struct kv_evict;
struct kv_table;

struct kv_entry {
	mcg_lru_link_t lru;    /* on the list_lru of the table's group */
	struct kv_entry *next; /* hash chain (stripe lock) */
	struct kv_table *table;
	int64_t expire_ms; /* unix time in ms; 0: never */
	uint64_t hash;
	uint32_t klen, vlen;
	uint8_t referenced; /* read since reclaim last looked (relaxed atomic) */
	char data[];        /* the key, then the value */
};

static inline const char *kv_entry_key(const struct kv_entry *e) { return e->data; }
static inline const char *kv_entry_val(const struct kv_entry *e) { return e->data + e->klen; }

/** Counters of a table, or of one stripe (there: under its lock). */
struct kv_table_stats {
	long keys, volatile_keys;
	long hits, misses;  /* reads of a key found / not found */
	long evictions;     /* entries dropped by reclaim or to make room */
	long expired;       /* entries dropped because their time was up */
	long failed_writes; /* writes refused: no memory even after eviction */
};

/* One stripe: a hash table of its own.  Its counters live beside its
   lock, so counting a hit writes no line another stripe's users share. */
struct kv_stripe {
	pthread_mutex_t lock;
	struct kv_entry **buckets; /* NULL until the first key */
	uint32_t mask;             /* buckets - 1 */
	struct kv_table_stats st;
} __attribute__((aligned(64)));

struct kv_table {
	struct kv_stripe stripes[KV_STRIPES];
	mcg_group_t *group;     /* what entries are charged to (referenced) */
	struct kv_evict *evict; /* the list_lru they sit on */
	long failed_writes;     /* atomic */
	unsigned expire_cursor; /* atomic: the next stripe active expiry visits */
};

/** kv_table_init - an empty table charging @group, its entries on @evict's list_lru. */
int kv_table_init(struct kv_table *t, mcg_group_t *group, struct kv_evict *evict);
/** kv_table_destroy - free every entry and the buckets. */
void kv_table_destroy(struct kv_table *t);

/** kv_now_ms - the unix time in ms (CLOCK_REALTIME, as Redis's mstime()). */
int64_t kv_now_ms(void);

/** What a write did. */
enum kv_result {
	KV_OK,
	KV_NOT_DONE, /* a condition (NX, XX...) was not met; nothing changed */
	KV_NOT_INT,  /* the value is not an integer */
	KV_OVERFLOW, /* the result would not fit 64 bits */
	KV_NOMEM,    /* no memory even after evicting the tenant's own keys */
};

/** Emits a value to the caller (under the stripe lock: copy it, call nothing). */
typedef void (*kv_emit_fn)(void *arg, const char *val, size_t len);

/**
 * kv_get - call @emit with @key's value and count a hit (and mark the key
 * used for the LRU), or count a miss.  Return: true if found.
 */
bool kv_get(struct kv_table *t, const char *key, size_t klen, kv_emit_fn emit, void *arg);

/* kv_set flags (Redis's SET options). */
#define KV_SET_NX 0x1u      /* only if absent */
#define KV_SET_XX 0x2u      /* only if present */
#define KV_SET_KEEPTTL 0x4u /* keep the old expiry */
#define KV_SET_GET 0x8u     /* emit the old value (or nothing when absent) */

/**
 * kv_set - store @val under @key with expiry @expire_ms (0: none),
 * subject to @flags.  With KV_SET_GET, @emit gets the old value if any
 * (before the condition is checked, as Redis does); *@found says whether
 * there was one.  Return: KV_OK, KV_NOT_DONE, KV_NOMEM.
 */
enum kv_result kv_set(struct kv_table *t, const char *key, size_t klen, const char *val,
                      size_t vlen, int64_t expire_ms, unsigned flags, kv_emit_fn emit, void *arg,
                      bool *found);

/** kv_incr - add @delta to @key's integer value (absent: 0); *@out the result. */
enum kv_result kv_incr(struct kv_table *t, const char *key, size_t klen, long long delta,
                       long long *out);

/** kv_del - remove @key.  Return: true if it existed. */
bool kv_del(struct kv_table *t, const char *key, size_t klen);

/** kv_exists - whether @key exists (no hit or miss counted). */
bool kv_exists(struct kv_table *t, const char *key, size_t klen);

/* kv_expire flags (Redis's EXPIRE options). */
#define KV_EXP_NX 0x1u /* only if it has no expiry */
#define KV_EXP_XX 0x2u /* only if it has one */
#define KV_EXP_GT 0x4u /* only if later than the current one */
#define KV_EXP_LT 0x8u /* only if earlier than the current one */

/**
 * kv_expire - set @key's expiry to @when_ms (unix ms), subject to @flags;
 * a time already past deletes the key.  Return: true if done (Redis's 1).
 */
bool kv_expire(struct kv_table *t, const char *key, size_t klen, int64_t when_ms, unsigned flags);

/** kv_ttl - -2: no such key; -1: no expiry; else the ms left (>= 0). */
int64_t kv_ttl(struct kv_table *t, const char *key, size_t klen);

/** kv_table_stats - sum the stripes' counters (takes each stripe's lock in turn). */
void kv_table_stats(struct kv_table *t, struct kv_table_stats *out);

/** kv_count - the keys in @t (expired ones not yet dropped included, as Redis's DBSIZE). */
long kv_count(struct kv_table *t);

/** kv_flush - remove every key. */
void kv_flush(struct kv_table *t);

/**
 * kv_expire_cycle - active expiry: look at the next @stripes stripes and
 * drop their expired keys.  Return: keys dropped.
 */
long kv_expire_cycle(struct kv_table *t, unsigned stripes);

/**
 * kv_entry_try_unlink - for reclaim (evict.c), with the list_lru's lock
 * held: take @e off its stripe's chain if the stripe lock is free.
 * Return: true if unlinked (the caller frees it: kv_entry_free()).
 */
bool kv_entry_try_unlink(struct kv_entry *e);

/** kv_entry_free - free an unlinked entry (its charge goes with it). */
void kv_entry_free(struct kv_entry *e);

/** kv_hash_seed - set the keyed hash's key (random at start; tests fix it). */
void kv_hash_seed(uint64_t k0, uint64_t k1);

#endif /* KV_TABLE_H */
