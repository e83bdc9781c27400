/* SPDX-License-Identifier: MIT */
#include "store/cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/endian.h"

#include "store/chunk-mem.h"

enum {
	CACHE_SHARDS = 16,
	CACHE_SHARD_BITS = 4,
	CACHE_MIN_BUCKETS = 64,
};

/*
 * A cache entry. The cache holds one reference while the entry is linked into its shard; every
 * reader holds one more. The last unref frees it, so an evicted chunk stays valid for readers.
 */
struct cache_entry {
	struct eos_cached_chunk pub; /* first: readers see only this */
	atomic_uint refs;
	struct eos_digest digest;
	uint8_t *data;		   /* owned; pub.data points here */
	struct eos_chunk_mem *mem; /* where data lives; NULL: malloc() */
	struct cache_entry *hnext; /* hash chain; protected by the shard mutex */
	struct cache_entry *prev;  /* LRU list, most recent at head; protected by the shard mutex */
	struct cache_entry *next;
};

struct cache_shard {
	pthread_mutex_t lock;
	struct cache_entry **buckets; /* nbuckets chains, a power of two */
	size_t nbuckets;
	size_t count;
	size_t bytes;
	size_t capacity;
	struct cache_entry *head, *tail;
};

struct eos_chunk_cache {
	size_t capacity;
	struct eos_chunk_mem *mem; /* the cached chunks' memory (NULL: malloc's) */
	atomic_uint_fast64_t hits;
	atomic_uint_fast64_t misses;
	struct cache_shard shards[CACHE_SHARDS];
};

static uint64_t
digest_hash(const struct eos_digest *d)
{
	return eos_get_le64(d->b);
}

static struct cache_shard *
shard_of(struct eos_chunk_cache *c, uint64_t h)
{
	return &c->shards[h & (CACHE_SHARDS - 1)];
}

static size_t
bucket_of(const struct cache_shard *s, uint64_t h)
{
	return (size_t)(h >> CACHE_SHARD_BITS) & (s->nbuckets - 1);
}

static void
entry_free(struct cache_entry *e)
{
	if (!eos_chunk_mem_release(e->mem, e->data, e->pub.len))
		free(e->data);
	free(e);
}

static void
entry_unref(struct cache_entry *e)
{
	if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1)
		entry_free(e);
}

static void
entry_ref(struct cache_entry *e)
{
	atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
}

void
eos_cached_chunk_unref(struct eos_cached_chunk *ch)
{
	if (ch)
		entry_unref((struct cache_entry *)ch);
}

int
eos_chunk_cache_new(size_t capacity_bytes, struct eos_chunk_cache **ret)
{
	struct eos_chunk_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->capacity = capacity_bytes;
	/* room for a full cache and its rounding to pages; without it chunks live in malloc's heap
	 */
	if (capacity_bytes > 0 &&
	    eos_chunk_mem_new(capacity_bytes + capacity_bytes / 8, &c->mem) < 0)
		c->mem = NULL;
	atomic_init(&c->hits, 0);
	atomic_init(&c->misses, 0);
	for (int i = 0; i < CACHE_SHARDS; i++) {
		struct cache_shard *s = &c->shards[i];

		pthread_mutex_init(&s->lock, NULL);
		s->capacity = capacity_bytes / CACHE_SHARDS;
	}
	*ret = c;
	return 0;
}

static void
shard_release(struct cache_shard *s)
{
	struct cache_entry *e = s->head;

	while (e) {
		struct cache_entry *next = e->next;

		entry_unref(e);
		e = next;
	}
	free(s->buckets);
	pthread_mutex_destroy(&s->lock);
}

void
eos_chunk_cache_free(struct eos_chunk_cache *c)
{
	if (!c)
		return;
	for (int i = 0; i < CACHE_SHARDS; i++)
		shard_release(&c->shards[i]);
	eos_chunk_mem_unref(c->mem); /* unmapped once chunks still read are unref'd */
	free(c);
}

static struct cache_entry *
shard_find(const struct cache_shard *s, const struct eos_digest *d, uint64_t h)
{
	if (!s->buckets)
		return NULL;
	for (struct cache_entry *e = s->buckets[bucket_of(s, h)]; e; e = e->hnext)
		if (eos_digest_eq(&e->digest, d))
			return e;
	return NULL;
}

static void
lru_unlink(struct cache_shard *s, struct cache_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		s->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		s->tail = e->prev;
	e->prev = e->next = NULL;
}

static void
lru_push_front(struct cache_shard *s, struct cache_entry *e)
{
	e->prev = NULL;
	e->next = s->head;
	if (s->head)
		s->head->prev = e;
	s->head = e;
	if (!s->tail)
		s->tail = e;
}

int
eos_chunk_cache_get(struct eos_chunk_cache *c, const struct eos_digest *d,
		    struct eos_cached_chunk **ret)
{
	uint64_t h = digest_hash(d);
	struct cache_shard *s = shard_of(c, h);
	struct cache_entry *e;

	pthread_mutex_lock(&s->lock);
	e = shard_find(s, d, h);
	if (e) {
		entry_ref(e);
		lru_unlink(s, e);
		lru_push_front(s, e);
	}
	pthread_mutex_unlock(&s->lock);
	if (!e) {
		atomic_fetch_add_explicit(&c->misses, 1, memory_order_relaxed);
		return -ENOENT;
	}
	atomic_fetch_add_explicit(&c->hits, 1, memory_order_relaxed);
	*ret = &e->pub;
	return 0;
}

/* Double the bucket array when the load factor exceeds 1 (best effort: stays on -ENOMEM). */
static void
shard_grow(struct cache_shard *s)
{
	size_t n = s->nbuckets ? s->nbuckets * 2 : CACHE_MIN_BUCKETS;
	struct cache_entry **b;

	if (s->count < s->nbuckets)
		return;
	b = calloc(n, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i < s->nbuckets; i++) {
		struct cache_entry *e = s->buckets[i];

		while (e) {
			struct cache_entry *next = e->hnext;
			size_t j = (size_t)(digest_hash(&e->digest) >> CACHE_SHARD_BITS) & (n - 1);

			e->hnext = b[j];
			b[j] = e;
			e = next;
		}
	}
	free(s->buckets);
	s->buckets = b;
	s->nbuckets = n;
}

static void
shard_remove(struct cache_shard *s, struct cache_entry *e)
{
	struct cache_entry **pp = &s->buckets[bucket_of(s, digest_hash(&e->digest))];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	lru_unlink(s, e);
	s->count--;
	s->bytes -= e->pub.len;
	entry_unref(e);
}

static void
shard_evict(struct cache_shard *s)
{
	while (s->bytes > s->capacity && s->tail)
		shard_remove(s, s->tail);
}

static struct cache_entry *
entry_new(const struct eos_digest *d, uint8_t *data, size_t len)
{
	struct cache_entry *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->digest = *d;
	e->data = data;
	e->pub.data = data;
	e->pub.len = len;
	atomic_init(&e->refs, 1);
	return e;
}

/* Link e (one reference for the caller already) unless d is cached; returns the winner. */
static struct cache_entry *
shard_insert(struct cache_shard *s, struct cache_entry *e, uint64_t h)
{
	struct cache_entry *old;

	pthread_mutex_lock(&s->lock);
	old = shard_find(s, &e->digest, h);
	if (old) {
		entry_ref(old);
		pthread_mutex_unlock(&s->lock);
		entry_unref(e);
		return old;
	}
	shard_grow(s);
	if (s->buckets) {
		size_t b = bucket_of(s, h);

		entry_ref(e);
		e->hnext = s->buckets[b];
		s->buckets[b] = e;
		lru_push_front(s, e);
		s->count++;
		s->bytes += e->pub.len;
		shard_evict(s);
	}
	pthread_mutex_unlock(&s->lock);
	return e;
}

/* Whether the cache keeps a chunk of len bytes (else a put hands it back uncached). */
static bool
keeps(const struct eos_chunk_cache *c, const struct cache_shard *s, size_t len)
{
	return c->capacity > 0 && len <= s->capacity;
}

uint8_t *
eos_chunk_cache_alloc(struct eos_chunk_cache *c, size_t len)
{
	uint8_t *p = NULL;

	/* every shard has the same capacity */
	if (keeps(c, &c->shards[0], len))
		p = eos_chunk_mem_alloc(c->mem, len);
	return p ? p : malloc(len ? len : 1);
}

void
eos_chunk_cache_free_data(struct eos_chunk_cache *c, uint8_t *data, size_t len)
{
	if (!eos_chunk_mem_release(c->mem, data, len))
		free(data);
}

/* Move a chunk the cache keeps into its pool (one copy), away from malloc's short-lived buffers. */
static void
entry_to_pool(struct eos_chunk_cache *c, struct cache_entry *e)
{
	uint8_t *p;

	if (eos_chunk_mem_owns(c->mem, e->data))
		return; /* eos_chunk_cache_alloc() put it there */
	p = eos_chunk_mem_alloc(c->mem, e->pub.len);
	if (!p)
		return;
	memcpy(p, e->data, e->pub.len);
	free(e->data);
	e->data = p;
	e->pub.data = p;
	e->mem = c->mem;
}

int
eos_chunk_cache_put(struct eos_chunk_cache *c, const struct eos_digest *d, uint8_t *data,
		    size_t len, struct eos_cached_chunk **ret)
{
	uint64_t h = digest_hash(d);
	struct cache_shard *s = shard_of(c, h);
	struct cache_entry *e = entry_new(d, data, len);

	if (!e) {
		eos_chunk_cache_free_data(c, data, len);
		return -ENOMEM;
	}
	if (eos_chunk_mem_owns(c->mem, data))
		e->mem = c->mem;
	/* Chunks larger than a shard are handed back uncached rather than flushing the shard. */
	if (keeps(c, s, len)) {
		entry_to_pool(c, e);
		e = shard_insert(s, e, h);
	}
	*ret = &e->pub;
	return 0;
}

bool
eos_chunk_cache_prefault_due(struct eos_chunk_cache *c)
{
	return eos_chunk_mem_prefault_due(c->mem);
}

void
eos_chunk_cache_prefault(struct eos_chunk_cache *c)
{
	eos_chunk_mem_prefault(c->mem);
}

void
eos_chunk_cache_counters(const struct eos_chunk_cache *c, uint64_t *ret_hits, uint64_t *ret_misses)
{
	if (ret_hits)
		*ret_hits = atomic_load_explicit(&c->hits, memory_order_relaxed);
	if (ret_misses)
		*ret_misses = atomic_load_explicit(&c->misses, memory_order_relaxed);
}
