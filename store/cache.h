/* SPDX-License-Identifier: MIT */
/*
 * store/cache: LRU cache of decompressed chunks, keyed by digest, bounded in bytes, sharded
 * (16 shards, one mutex each) so concurrent readers rarely contend. Entries are reference
 * counted: a reader keeps using a chunk after it is evicted until it unrefs it.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/cleanup.h"
#include "common/digest.h"

struct eos_chunk_cache;

/* A cached chunk: data is read-only and valid until eos_cached_chunk_unref(). */
struct eos_cached_chunk {
	const uint8_t *data;
	size_t len;
};

/* capacity_bytes = 0 disables caching (get always misses, put hands back a private copy). */
int eos_chunk_cache_new(size_t capacity_bytes, struct eos_chunk_cache **ret);
void eos_chunk_cache_free(struct eos_chunk_cache *c);
/* Look up d; on a hit *ret holds a new reference. Returns 0 or -ENOENT. */
int eos_chunk_cache_get(struct eos_chunk_cache *c, const struct eos_digest *d,
			struct eos_cached_chunk **ret);
/*
 * Memory for a chunk of len bytes about to be put: in the cache's pool when the cache would keep
 * it (a put then copies nothing), else malloc()'s. NULL when out of memory. Give it back with
 * eos_chunk_cache_free_data() if it is not put.
 */
uint8_t *eos_chunk_cache_alloc(struct eos_chunk_cache *c, size_t len);
void eos_chunk_cache_free_data(struct eos_chunk_cache *c, uint8_t *data, size_t len);
/*
 * Insert data (from malloc() or eos_chunk_cache_alloc(); ownership passes to the cache, even on
 * failure) and return a new reference in *ret. If d is present already, data is freed and the
 * cached copy returned.
 */
int eos_chunk_cache_put(struct eos_chunk_cache *c, const struct eos_digest *d, uint8_t *data,
			size_t len, struct eos_cached_chunk **ret);
void eos_cached_chunk_unref(struct eos_cached_chunk *ch);
EOS_DEFINE_CLEANUP(struct eos_cached_chunk *, eos_cached_chunk_unref)
/* Populate the cached chunks' memory ahead of use, from a host's thread (store/chunk-mem.h). */
bool eos_chunk_cache_prefault_due(struct eos_chunk_cache *c);
void eos_chunk_cache_prefault(struct eos_chunk_cache *c);
void eos_chunk_cache_counters(const struct eos_chunk_cache *c, uint64_t *ret_hits,
			      uint64_t *ret_misses);
