/* SPDX-License-Identifier: MIT */
/*
 * A hash map from byte-string keys to one fixed-size value slot (union eos_hashmap_value), the
 * one table behind the digest sets, reference deltas and path maps of the store.
 *
 * Open addressing with linear probing; the capacity is a power of two and the load factor
 * stays at or below 1/2 (the table doubles before it would exceed that). The hash is a 64-bit
 * multiply-rotate hash over all key bytes; slots keep it, so growing never rereads the keys.
 * There is no removal of single entries: a map drops the entries it no longer needs all at once
 * with eos_hashmap_compact(), which rebuilds it (and gives back their key bytes).
 *
 * Ownership: keys are COPIED into the map (into blocks the map owns), so callers may pass
 * stack buffers. Key pointers handed out by eos_hashmap_next() are borrowed and stay valid and
 * unchanged until eos_hashmap_release(), growth included. Value slot pointers (from
 * eos_hashmap_find(), eos_hashmap_get_or_insert() or eos_hashmap_next()) are valid only until
 * the next insertion, which may move the slots. The map never frees what a `ptr` value points
 * to.
 *
 * Calling sequence: struct eos_hashmap is embedded; a zero-filled map (or eos_hashmap_init())
 * is valid and empty, allocating nothing until the first insertion; eos_hashmap_release() frees
 * everything and leaves an empty, reusable map. Keys may be of any length, 0 included, and may
 * contain NUL bytes; a key pointer is never NULL (pass "" for the empty key). Allocation failures
 * return -ENOMEM and leave the map as it was.
 *
 * Locking: none; callers serialise access (a map may be read from several threads at once when
 * nobody inserts).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The value stored with each key; a new entry's slot starts zeroed. */
union eos_hashmap_value {
	void *ptr;
	int64_t i64;
	uint64_t u64;
};

struct eos_hashmap_slot;
struct eos_hashmap_block;

struct eos_hashmap {
	struct eos_hashmap_slot *slots; /* cap slots; owned */
	size_t cap;			/* 0 or a power of two */
	size_t count;			/* entries in use */
	struct eos_hashmap_block *keys; /* copied key bytes; owned */
};

/* Iteration cursor: zero-fill it (`= { 0 }`) before the first eos_hashmap_next(). */
struct eos_hashmap_iter {
	size_t pos;	 /* private */
	const void *key; /* borrowed, see above */
	size_t klen;
	union eos_hashmap_value *value; /* valid until the next insertion */
};

/* Make m empty (same as zero-filling it). */
void eos_hashmap_init(struct eos_hashmap *m);
/* Free the slots and the copied keys and make m empty again. NULL-safe. */
void eos_hashmap_release(struct eos_hashmap *m);
/* Number of entries. */
size_t eos_hashmap_count(const struct eos_hashmap *m);
/* The value slot of key[0..klen), or NULL when absent. */
union eos_hashmap_value *eos_hashmap_find(struct eos_hashmap *m, const void *key, size_t klen);
/* The `ptr` value of key[0..klen), or NULL when absent (or when NULL was stored). */
void *eos_hashmap_get(const struct eos_hashmap *m, const void *key, size_t klen);
/*
 * Find key[0..klen) or insert it (copying the key) with a zeroed value slot. Sets *ret_value to
 * its slot and returns 1 when it was inserted, 0 when it was present, or -ENOMEM (nothing
 * inserted, *ret_value untouched).
 */
int eos_hashmap_get_or_insert(struct eos_hashmap *m, const void *key, size_t klen,
			      union eos_hashmap_value **ret_value);
/* Insert key[0..klen) (copied) with `ptr` = value: 0, -EEXIST when present (unchanged), -ENOMEM. */
int eos_hashmap_put(struct eos_hashmap *m, const void *key, size_t klen, void *value);
/*
 * Advance it to the next entry (in no particular order) and return true, or false at the end.
 * Inserting during an iteration invalidates it.
 */
bool eos_hashmap_next(struct eos_hashmap *m, struct eos_hashmap_iter *it);
/*
 * Rebuild m with only the entries keep(value, ctx) accepts, freeing the rest and their key bytes.
 * Invalidates every key and value pointer handed out before. -ENOMEM leaves m as it was.
 */
int eos_hashmap_compact(struct eos_hashmap *m,
			bool (*keep)(const union eos_hashmap_value *value, void *ctx), void *ctx);
/*
 * The 64-bit hash of key[0..klen) the map uses (for tests, and callers that shard by it), and
 * the same hash from another seed. Values of both are on disk (journal record checks, derived
 * inode numbers that doc/fs.md promises stable across versions of eos): never change them.
 */
uint64_t eos_hashmap_hash(const void *key, size_t klen);
uint64_t eos_hashmap_hash_seeded(uint64_t seed, const void *key, size_t klen);
