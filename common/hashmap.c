/* SPDX-License-Identifier: MIT */
#include "common/hashmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/endian.h"

enum {
	HASHMAP_MIN_CAP = 64,		/* power of two */
	HASHMAP_BLOCK_MIN = 4096,	/* bytes of the first key block */
	HASHMAP_BLOCK_MAX = 1024 * 1024 /* key blocks stop doubling here */
};

struct eos_hashmap_slot {
	uint64_t hash;
	const uint8_t *key; /* NULL: empty slot; points into a key block */
	size_t klen;
	union eos_hashmap_value value;
};

/* Copied keys, packed; blocks never move, so key pointers survive growth. */
struct eos_hashmap_block {
	struct eos_hashmap_block *next;
	size_t used, cap;
	uint8_t data[];
};

static const uint8_t hashmap_empty_key[1];

static inline uint64_t
hashmap_rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

uint64_t
eos_hashmap_hash_seeded(uint64_t seed, const void *key, size_t klen)
{
	const uint8_t *p = key;
	uint64_t h = seed ^ ((uint64_t)klen * 0xC2B2AE3D27D4EB4FULL);
	uint8_t tail[8] = { 0 };

	for (; klen >= 8; p += 8, klen -= 8)
		h = hashmap_rotl(h ^ (eos_get_le64(p) * 0x87C37B91114253D5ULL), 31) *
		    0x4CF5AD432745937FULL;
	if (klen > 0)
		memcpy(tail, p, klen);
	h ^= eos_get_le64(tail) * 0x87C37B91114253D5ULL;
	/* murmur3 finaliser: every key bit reaches the low bits used as the index */
	h ^= h >> 33;
	h *= 0xFF51AFD7ED558CCDULL;
	h ^= h >> 33;
	h *= 0xC4CEB9FE1A85EC53ULL;
	return h ^ (h >> 33);
}

uint64_t
eos_hashmap_hash(const void *key, size_t klen)
{
	return eos_hashmap_hash_seeded(0x9E3779B97F4A7C15ULL, key, klen);
}

void
eos_hashmap_init(struct eos_hashmap *m)
{
	*m = (struct eos_hashmap){ 0 };
}

void
eos_hashmap_release(struct eos_hashmap *m)
{
	struct eos_hashmap_block *b, *next;

	if (!m)
		return;
	for (b = m->keys; b; b = next) {
		next = b->next;
		free(b);
	}
	free(m->slots);
	eos_hashmap_init(m);
}

size_t
eos_hashmap_count(const struct eos_hashmap *m)
{
	return m->count;
}

static struct eos_hashmap_slot *
hashmap_probe(struct eos_hashmap_slot *slots, size_t cap, uint64_t hash, const void *key,
	      size_t klen)
{
	size_t i = (size_t)hash & (cap - 1);

	while (slots[i].key && (slots[i].hash != hash || slots[i].klen != klen ||
				memcmp(slots[i].key, key, klen) != 0))
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

/* The first empty slot for hash in a table known not to hold its key (rehashing). */
static struct eos_hashmap_slot *
hashmap_probe_empty(struct eos_hashmap_slot *slots, size_t cap, uint64_t hash)
{
	size_t i = (size_t)hash & (cap - 1);

	while (slots[i].key)
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

static int
hashmap_grow(struct eos_hashmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : HASHMAP_MIN_CAP;
	struct eos_hashmap_slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].key)
			*hashmap_probe_empty(slots, cap, m->slots[i].hash) = m->slots[i];
	free(m->slots);
	m->slots = slots;
	m->cap = cap;
	return 0;
}

/* A stable copy of key[0..klen) in the map's key blocks, or NULL on allocation failure. */
static const uint8_t *
hashmap_copy_key(struct eos_hashmap *m, const void *key, size_t klen)
{
	struct eos_hashmap_block *b = m->keys;
	size_t cap;

	if (klen == 0)
		return hashmap_empty_key;
	if (!b || b->cap - b->used < klen) {
		cap = b ? b->cap * 2 : HASHMAP_BLOCK_MIN;
		if (cap > HASHMAP_BLOCK_MAX)
			cap = HASHMAP_BLOCK_MAX;
		if (cap < klen)
			cap = klen;
		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		*b = (struct eos_hashmap_block){ .next = m->keys, .cap = cap };
		m->keys = b;
	}
	memcpy(b->data + b->used, key, klen);
	b->used += klen;
	return b->data + b->used - klen;
}

union eos_hashmap_value *
eos_hashmap_find(struct eos_hashmap *m, const void *key, size_t klen)
{
	struct eos_hashmap_slot *s;

	if (m->count == 0)
		return NULL;
	s = hashmap_probe(m->slots, m->cap, eos_hashmap_hash(key, klen), key, klen);
	return s->key ? &s->value : NULL;
}

void *
eos_hashmap_get(const struct eos_hashmap *m, const void *key, size_t klen)
{
	const struct eos_hashmap_slot *s;

	if (m->count == 0)
		return NULL;
	s = hashmap_probe(m->slots, m->cap, eos_hashmap_hash(key, klen), key, klen);
	return s->key ? s->value.ptr : NULL;
}

int
eos_hashmap_get_or_insert(struct eos_hashmap *m, const void *key, size_t klen,
			  union eos_hashmap_value **ret_value)
{
	uint64_t hash = eos_hashmap_hash(key, klen);
	struct eos_hashmap_slot *s = NULL;
	const uint8_t *copy;

	if (m->cap > 0) {
		s = hashmap_probe(m->slots, m->cap, hash, key, klen);
		if (s->key) {
			*ret_value = &s->value;
			return 0;
		}
	}
	if ((m->count + 1) * 2 > m->cap) {
		if (hashmap_grow(m) < 0)
			return -ENOMEM;
		s = hashmap_probe_empty(m->slots, m->cap, hash);
	}
	copy = hashmap_copy_key(m, key, klen);
	if (!copy)
		return -ENOMEM;
	*s = (struct eos_hashmap_slot){ .hash = hash, .key = copy, .klen = klen };
	m->count++;
	*ret_value = &s->value;
	return 1;
}

int
eos_hashmap_put(struct eos_hashmap *m, const void *key, size_t klen, void *value)
{
	union eos_hashmap_value *v;
	int r = eos_hashmap_get_or_insert(m, key, klen, &v);

	if (r < 0)
		return r;
	if (r == 0)
		return -EEXIST;
	v->ptr = value;
	return 0;
}

bool
eos_hashmap_next(struct eos_hashmap *m, struct eos_hashmap_iter *it)
{
	for (; it->pos < m->cap; it->pos++) {
		struct eos_hashmap_slot *s = &m->slots[it->pos];

		if (!s->key)
			continue;
		it->key = s->key;
		it->klen = s->klen;
		it->value = &s->value;
		it->pos++;
		return true;
	}
	return false;
}

int
eos_hashmap_compact(struct eos_hashmap *m,
		    bool (*keep)(const union eos_hashmap_value *value, void *ctx), void *ctx)
{
	struct eos_hashmap fresh = { 0 };
	struct eos_hashmap_iter it = { 0 };

	while (eos_hashmap_next(m, &it)) {
		union eos_hashmap_value *slot;

		if (!keep(it.value, ctx))
			continue;
		if (eos_hashmap_get_or_insert(&fresh, it.key, it.klen, &slot) < 0) {
			eos_hashmap_release(&fresh);
			return -ENOMEM;
		}
		*slot = *it.value;
	}
	eos_hashmap_release(m);
	*m = fresh;
	return 0;
}
