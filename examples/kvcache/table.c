/* SPDX-License-Identifier: MIT */
/*
 * table.c - a tenant's keyspace (see table.h for the locking).
 *
 * Each operation: hash the key (SipHash-1-3 with a random key, so a
 * client cannot choose keys that share a chain), lock the key's stripe,
 * find the entry - dropping it if its time is up (lazy expiry) - do the
 * work, unlock, and only then free what was unlinked.  A new entry is
 * allocated before the lock is taken, so reclaim and eviction run with no
 * stripe lock of ours held; INCR, which must read before it knows the
 * size, allocates under the lock (safe: see table.h).
 */
#include "table.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "evict.h"
#include "memcg/kmalloc.h"
#include "resp.h"

/* Allocation attempts, each after an explicit eviction, once reclaim failed. */
#define KV_ALLOC_TRIES 8
/* Entries the explicit eviction drops per attempt. */
#define KV_EVICT_BATCH 128
/* The bucket array a stripe starts with. */
#define KV_MIN_BUCKETS 16

/* ------------------------------------------------------------ hashing */

static uint64_t hash_k0 = 0x736f6d6570736575ull, hash_k1 = 0x646f72616e646f6dull;

void kv_hash_seed(uint64_t k0, uint64_t k1)
{
	hash_k0 = k0;
	hash_k1 = k1;
}

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
	do {                                                                                       \
		v0 += v1, v1 = ROTL(v1, 13), v1 ^= v0, v0 = ROTL(v0, 32);                          \
		v2 += v3, v3 = ROTL(v3, 16), v3 ^= v2;                                             \
		v0 += v3, v3 = ROTL(v3, 21), v3 ^= v0;                                             \
		v2 += v1, v1 = ROTL(v1, 17), v1 ^= v2, v2 = ROTL(v2, 32);                          \
	} while (0)

/* SipHash-1-3 (Redis's choice for its dict): one round per word, three at the end. */
static uint64_t hash_key(const char *key, size_t len)
{
	uint64_t v0 = 0x736f6d6570736575ull ^ hash_k0, v1 = 0x646f72616e646f6dull ^ hash_k1;
	uint64_t v2 = 0x6c7967656e657261ull ^ hash_k0, v3 = 0x7465646279746573ull ^ hash_k1;
	const unsigned char *p = (const unsigned char *)key;
	size_t full = len & ~(size_t)7;
	for (size_t i = 0; i < full; i += 8) {
		uint64_t m;
		memcpy(&m, p + i, 8);
		v3 ^= m;
		SIPROUND;
		v0 ^= m;
	}
	uint64_t b = (uint64_t)len << 56;
	for (size_t i = 0; i < (len & 7); i++)
		b |= (uint64_t)p[full + i] << (8 * i);
	v3 ^= b;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

/* ------------------------------------------------------------ time */

int64_t kv_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------ entries */

static struct kv_stripe *stripe_of(struct kv_table *t, uint64_t hash)
{
	return &t->stripes[hash & (KV_STRIPES - 1)];
}

static size_t bucket_of(const struct kv_stripe *s, uint64_t hash)
{
	return (size_t)(hash / KV_STRIPES) & s->mask;
}

/* An entry charged to @t's group: reclaim runs inside the allocation when
   the group is at its limit; if that still is not enough, evict the
   group's oldest keys ourselves and try again, a bounded number of times. */
static struct kv_entry *entry_alloc(struct kv_table *t, size_t klen, size_t vlen)
{
	size_t size = sizeof(struct kv_entry) + klen + vlen;
	for (int i = 0;; i++) {
		struct kv_entry *e = mcg_malloc_account(size, t->group);
		if (e) {
			*e = (struct kv_entry){
			        .table = t, .klen = (uint32_t)klen, .vlen = (uint32_t)vlen};
			mcg_lru_link_init(&e->lru);
			return e;
		}
		if (i == KV_ALLOC_TRIES || !kv_evict_some(t->evict, t->group, KV_EVICT_BATCH)) {
			__atomic_fetch_add(&t->failed_writes, 1, __ATOMIC_RELAXED);
			return NULL;
		}
	}
}

void kv_entry_free(struct kv_entry *e) { mcg_free(e); }

/* Entries unlinked under a stripe lock, freed after it (chained by next). */
struct graveyard {
	struct kv_entry *head;
};

static void bury(struct graveyard *g, struct kv_entry *e)
{
	e->next = g->head;
	g->head = e;
}

static void graveyard_free(struct graveyard *g)
{
	for (struct kv_entry *e = g->head, *next; e; e = next) {
		next = e->next;
		kv_entry_free(e);
	}
	g->head = NULL;
}

/* Take @e off its chain (*@link points to it) and off the list_lru. */
static void unlink_locked(struct kv_table *t, struct kv_stripe *s, struct kv_entry **link,
                          struct kv_entry *e)
{
	*link = e->next;
	kv_evict_del(t->evict, e, t->group);
	s->st.keys--;
	if (e->expire_ms)
		s->st.volatile_keys--;
}

static bool expired(const struct kv_entry *e, int64_t now)
{
	return e->expire_ms && e->expire_ms <= now;
}

/* Find @key on its chain; an expired entry found is unlinked into @g.
   Return: the link that points to the entry (*link is NULL if not found). */
static struct kv_entry **find_locked(struct kv_table *t, struct kv_stripe *s, const char *key,
                                     size_t klen, uint64_t hash, int64_t now, struct graveyard *g)
{
	/* The link reported for "absent" where no chain link fits: a thread's own. */
	static __thread struct kv_entry *none;
	if (!s->buckets) {
		none = NULL;
		return &none;
	}
	struct kv_entry **link = &s->buckets[bucket_of(s, hash)];
	for (struct kv_entry *e; (e = *link); link = &e->next) {
		if (e->hash != hash || e->klen != klen || memcmp(e->data, key, klen))
			continue;
		if (expired(e, now)) {
			unlink_locked(t, s, link, e);
			s->st.expired++;
			bury(g, e);
			none = NULL; /* *link is the next entry now: report "absent" */
			return &none;
		}
		return link;
	}
	return link;
}

/* Double the stripe's buckets when it holds more keys than buckets.  The
   array is charged to the tenant too; if it cannot be had, chains grow. */
static void maybe_grow_locked(struct kv_table *t, struct kv_stripe *s)
{
	size_t n = s->buckets ? (size_t)s->mask + 1 : 0;
	if (n && (size_t)s->st.keys < n)
		return;
	size_t nn = n ? 2 * n : KV_MIN_BUCKETS;
	if (nn > (size_t)UINT32_MAX + 1)
		return;
	struct kv_entry **b = mcg_calloc_account(nn, sizeof(*b), t->group);
	if (!b) {
		if (n)
			return;
		/* The first array: without it there is no table - try smaller. */
		b = mcg_calloc_account(nn = 1, sizeof(*b), t->group);
		if (!b)
			return;
	}
	for (size_t i = 0; i < n; i++) {
		for (struct kv_entry *e = s->buckets[i], *next; e; e = next) {
			next = e->next;
			size_t j = (size_t)(e->hash / KV_STRIPES) & (nn - 1);
			e->next = b[j];
			b[j] = e;
		}
	}
	mcg_free(s->buckets);
	s->buckets = b;
	s->mask = (uint32_t)(nn - 1);
}

/* Put @e (hash set) in place of *@link's entry (none if NULL), which goes
   to @g, and on the list_lru.  Return: false (nothing changed) when the
   list_lru cannot take it or the stripe has no buckets.  @link comes from
   find_locked() after maybe_grow_locked(): growing moves the chains. */
static bool replace_locked(struct kv_table *t, struct kv_stripe *s, struct kv_entry **link,
                           struct kv_entry *e, struct graveyard *g)
{
	if (!s->buckets || kv_evict_add(t->evict, e, t->group))
		return false;
	struct kv_entry *old = *link;
	if (old) {
		unlink_locked(t, s, link, old);
		bury(g, old);
	}
	struct kv_entry **head = &s->buckets[bucket_of(s, e->hash)];
	e->next = *head;
	*head = e;
	s->st.keys++;
	if (e->expire_ms)
		s->st.volatile_keys++;
	return true;
}

bool kv_entry_try_unlink(struct kv_entry *e)
{
	struct kv_table *t = e->table;
	struct kv_stripe *s = stripe_of(t, e->hash);
	if (pthread_mutex_trylock(&s->lock))
		return false;
	struct kv_entry **link = &s->buckets[bucket_of(s, e->hash)];
	while (*link != e)
		link = &(*link)->next;
	*link = e->next; /* the walker takes it off the list_lru */
	s->st.keys--;
	if (e->expire_ms)
		s->st.volatile_keys--;
	s->st.evictions++;
	pthread_mutex_unlock(&s->lock);
	return true;
}

/* ------------------------------------------------------------ the table */

int kv_table_init(struct kv_table *t, mcg_group_t *group, struct kv_evict *evict)
{
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < KV_STRIPES; i++)
		pthread_mutex_init(&t->stripes[i].lock, NULL);
	mcg_group_get(group);
	t->group = group;
	t->evict = evict;
	return 0;
}

void kv_table_destroy(struct kv_table *t)
{
	kv_flush(t);
	for (int i = 0; i < KV_STRIPES; i++)
		pthread_mutex_destroy(&t->stripes[i].lock);
	mcg_group_put(t->group);
	t->group = NULL;
}

void kv_table_stats(struct kv_table *t, struct kv_table_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < KV_STRIPES; i++) {
		struct kv_stripe *s = &t->stripes[i];
		pthread_mutex_lock(&s->lock);
		out->keys += s->st.keys;
		out->volatile_keys += s->st.volatile_keys;
		out->hits += s->st.hits;
		out->misses += s->st.misses;
		out->evictions += s->st.evictions;
		out->expired += s->st.expired;
		pthread_mutex_unlock(&s->lock);
	}
	out->failed_writes = __atomic_load_n(&t->failed_writes, __ATOMIC_RELAXED);
}

long kv_count(struct kv_table *t)
{
	long n = 0;
	for (int i = 0; i < KV_STRIPES; i++) {
		struct kv_stripe *s = &t->stripes[i];
		pthread_mutex_lock(&s->lock);
		n += s->st.keys;
		pthread_mutex_unlock(&s->lock);
	}
	return n;
}

void kv_flush(struct kv_table *t)
{
	for (int i = 0; i < KV_STRIPES; i++) {
		struct kv_stripe *s = &t->stripes[i];
		struct graveyard g = {0};
		pthread_mutex_lock(&s->lock);
		struct kv_entry **buckets = s->buckets;
		for (size_t b = 0; buckets && b <= s->mask; b++) {
			for (struct kv_entry *e; (e = buckets[b]);) {
				unlink_locked(t, s, &buckets[b], e);
				bury(&g, e);
			}
		}
		s->buckets = NULL;
		s->mask = 0;
		pthread_mutex_unlock(&s->lock);
		mcg_free(buckets);
		graveyard_free(&g);
	}
}

/* ------------------------------------------------------------ operations */

bool kv_get(struct kv_table *t, const char *key, size_t klen, kv_emit_fn emit, void *arg)
{
	uint64_t hash = hash_key(key, klen);
	struct kv_stripe *s = stripe_of(t, hash);
	struct graveyard g = {0};
	pthread_mutex_lock(&s->lock);
	struct kv_entry *e = *find_locked(t, s, key, klen, hash, kv_now_ms(), &g);
	if (e) {
		emit(arg, kv_entry_val(e), e->vlen);
		if (!__atomic_load_n(&e->referenced, __ATOMIC_RELAXED))
			__atomic_store_n(&e->referenced, 1, __ATOMIC_RELAXED);
		s->st.hits++;
	} else {
		s->st.misses++;
	}
	pthread_mutex_unlock(&s->lock);
	graveyard_free(&g);
	return e != NULL;
}

enum kv_result kv_set(struct kv_table *t, const char *key, size_t klen, const char *val,
                      size_t vlen, int64_t expire_ms, unsigned flags, kv_emit_fn emit, void *arg,
                      bool *found)
{
	struct kv_entry *e = entry_alloc(t, klen, vlen);
	if (!e)
		return KV_NOMEM;
	e->hash = hash_key(key, klen);
	e->expire_ms = expire_ms;
	memcpy(e->data, key, klen);
	memcpy(e->data + klen, val, vlen);

	struct kv_stripe *s = stripe_of(t, e->hash);
	struct graveyard g = {0};
	enum kv_result r = KV_OK;
	pthread_mutex_lock(&s->lock);
	maybe_grow_locked(t, s);
	struct kv_entry **link = find_locked(t, s, key, klen, e->hash, kv_now_ms(), &g);
	struct kv_entry *old = *link;
	if (found)
		*found = old != NULL;
	if (old && (flags & KV_SET_GET))
		emit(arg, kv_entry_val(old), old->vlen);
	if ((flags & KV_SET_NX && old) || (flags & KV_SET_XX && !old)) {
		r = KV_NOT_DONE;
		bury(&g, e);
	} else {
		if (old && (flags & KV_SET_KEEPTTL))
			e->expire_ms = old->expire_ms;
		if (!replace_locked(t, s, link, e, &g)) {
			r = KV_NOMEM;
			bury(&g, e);
		}
	}
	pthread_mutex_unlock(&s->lock);
	graveyard_free(&g);
	return r;
}

/* Room for the value in @e's block, as allocated (the size class's slack included). */
static size_t value_room(const struct kv_entry *e)
{
	return mcg_malloc_usable_size(e) - sizeof(*e) - e->klen;
}

enum kv_result kv_incr(struct kv_table *t, const char *key, size_t klen, long long delta,
                       long long *out)
{
	uint64_t hash = hash_key(key, klen);
	struct kv_stripe *s = stripe_of(t, hash);
	struct graveyard g = {0};
	enum kv_result r = KV_OK;
	pthread_mutex_lock(&s->lock);
	maybe_grow_locked(t, s);
	struct kv_entry **link = find_locked(t, s, key, klen, hash, kv_now_ms(), &g);
	struct kv_entry *old = *link;
	long long v = 0;
	if (old && !kv_string2ll(kv_entry_val(old), old->vlen, &v)) {
		r = KV_NOT_INT;
	} else if ((delta < 0 && v < 0 && delta < LLONG_MIN - v) ||
	           (delta > 0 && v > 0 && delta > LLONG_MAX - v)) {
		r = KV_OVERFLOW;
	} else {
		v += delta;
		char digits[24];
		size_t n = (size_t)snprintf(digits, sizeof(digits), "%lld", v);
		if (old && value_room(old) >= n) {
			memcpy(old->data + old->klen, digits, n); /* in place, keeps its TTL */
			old->vlen = (uint32_t)n;
		} else {
			/* Allocating under the stripe lock: reclaim skips this stripe. */
			struct kv_entry *e = entry_alloc(t, klen, n);
			if (!e) {
				r = KV_NOMEM;
			} else {
				e->hash = hash;
				e->expire_ms = old ? old->expire_ms : 0;
				memcpy(e->data, key, klen);
				memcpy(e->data + klen, digits, n);
				if (!replace_locked(t, s, link, e, &g)) {
					r = KV_NOMEM;
					bury(&g, e);
				}
			}
		}
		*out = v;
	}
	pthread_mutex_unlock(&s->lock);
	graveyard_free(&g);
	return r;
}

bool kv_del(struct kv_table *t, const char *key, size_t klen)
{
	uint64_t hash = hash_key(key, klen);
	struct kv_stripe *s = stripe_of(t, hash);
	struct graveyard g = {0};
	pthread_mutex_lock(&s->lock);
	struct kv_entry **link = find_locked(t, s, key, klen, hash, kv_now_ms(), &g);
	struct kv_entry *e = *link;
	if (e) {
		unlink_locked(t, s, link, e);
		bury(&g, e);
	}
	pthread_mutex_unlock(&s->lock);
	graveyard_free(&g);
	return e != NULL;
}

bool kv_exists(struct kv_table *t, const char *key, size_t klen)
{
	uint64_t hash = hash_key(key, klen);
	struct kv_stripe *s = stripe_of(t, hash);
	struct graveyard g = {0};
	pthread_mutex_lock(&s->lock);
	bool found = *find_locked(t, s, key, klen, hash, kv_now_ms(), &g) != NULL;
	pthread_mutex_unlock(&s->lock);
	graveyard_free(&g);
	return found;
}

bool kv_expire(struct kv_table *t, const char *key, size_t klen, int64_t when_ms, unsigned flags)
{
	uint64_t hash = hash_key(key, klen);
	struct kv_stripe *s = stripe_of(t, hash);
	struct graveyard g = {0};
	int64_t now = kv_now_ms();
	bool done = false;
	pthread_mutex_lock(&s->lock);
	struct kv_entry **link = find_locked(t, s, key, klen, hash, now, &g);
	struct kv_entry *e = *link;
	if (!e)
		goto out;
	int64_t cur = e->expire_ms; /* 0: none, an infinite TTL */
	if ((flags & KV_EXP_NX && cur) || (flags & KV_EXP_XX && !cur) ||
	    (flags & KV_EXP_GT && (!cur || when_ms <= cur)) ||
	    (flags & KV_EXP_LT && cur && when_ms >= cur))
		goto out;
	done = true;
	if (when_ms <= now) {
		unlink_locked(t, s, link, e);
		bury(&g, e);
		goto out;
	}
	if (!cur)
		s->st.volatile_keys++;
	e->expire_ms = when_ms;
out:
	pthread_mutex_unlock(&s->lock);
	graveyard_free(&g);
	return done;
}

int64_t kv_ttl(struct kv_table *t, const char *key, size_t klen)
{
	uint64_t hash = hash_key(key, klen);
	struct kv_stripe *s = stripe_of(t, hash);
	struct graveyard g = {0};
	int64_t now = kv_now_ms(), ttl = -2;
	pthread_mutex_lock(&s->lock);
	struct kv_entry *e = *find_locked(t, s, key, klen, hash, now, &g);
	if (e)
		ttl = !e->expire_ms ? -1 : e->expire_ms > now ? e->expire_ms - now : 0;
	pthread_mutex_unlock(&s->lock);
	graveyard_free(&g);
	return ttl;
}

long kv_expire_cycle(struct kv_table *t, unsigned stripes)
{
	long dropped = 0;
	int64_t now = kv_now_ms();
	for (unsigned k = 0; k < stripes; k++) {
		unsigned i = __atomic_fetch_add(&t->expire_cursor, 1, __ATOMIC_RELAXED);
		struct kv_stripe *s = &t->stripes[i % KV_STRIPES];
		struct graveyard g = {0};
		pthread_mutex_lock(&s->lock);
		for (size_t b = 0; s->st.volatile_keys && s->buckets && b <= s->mask; b++) {
			struct kv_entry **link = &s->buckets[b];
			for (struct kv_entry *e; (e = *link);) {
				if (!expired(e, now)) {
					link = &e->next;
					continue;
				}
				unlink_locked(t, s, link, e);
				s->st.expired++;
				bury(&g, e);
				dropped++;
			}
		}
		pthread_mutex_unlock(&s->lock);
		graveyard_free(&g);
	}
	return dropped;
}
