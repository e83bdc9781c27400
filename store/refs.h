/* SPDX-License-Identifier: MIT */
/*
 * store/refs: chunk and manifest reference counts (EOS_CF_REFS), changed only under the store's
 * writer lock by read-modify-write inside the batch of a commit, squash or destroy.
 *
 * Key: one type byte ('c' chunk, 'm' manifest) · 32-byte digest. Value: le64 count (> 0; a
 * count reaching 0 deletes the key). Meaning:
 *	refs['m'·d] = number of entry records whose content is manifest d
 *	refs['c'·d] = number of entry records whose content is chunk d
 *	            + number of occurrences of d in manifests that have refs['m'] > 0
 * When a manifest's count goes 0 -> n its chunks gain one reference per occurrence; when it goes
 * n -> 0 the manifest record is deleted and its chunks lose them. A chunk reaching 0 is deleted.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/digest.h"
#include "common/error.h"

#include "store/store.h"

struct eos_hashmap;
struct eos_kv_batch;

enum eos_ref_type {
	EOS_REF_CHUNK = 'c',
	EOS_REF_MANIFEST = 'm',
};

enum {
	EOS_REF_KEY_LEN = 1 + EOS_DIGEST_LEN,
};

void eos_ref_key(uint8_t out[EOS_REF_KEY_LEN], enum eos_ref_type type, const struct eos_digest *d);

/* Accumulated reference changes (a hash map digest -> delta). */
struct eos_refdelta;

int eos_refdelta_new(struct eos_refdelta **ret);
void eos_refdelta_free(struct eos_refdelta *d);
EOS_DEFINE_CLEANUP(struct eos_refdelta *, eos_refdelta_free)
int eos_refdelta_add(struct eos_refdelta *d, enum eos_ref_type type, const struct eos_digest *dg,
		     int64_t delta);
/* +delta for the content of an entry (chunk or manifest); no-op for inline and none. */
int eos_refdelta_add_content(struct eos_refdelta *d, const struct eos_content *c, int64_t delta);

struct eos_refs_freed {
	uint64_t chunks, manifests;
	uint64_t bytes; /* stored frame bytes of freed chunks */
};

/*
 * Caller holds st->write_lock. Read the current counts, apply d (expanding manifests that appear
 * or disappear), and stage into b: new counts, deletions of keys reaching 0, deletions of freed
 * chunks and manifests. A count that would go negative, or a manifest or chunk that must exist
 * but doesn't, is -EBADMSG / -ENOENT naming the digest (nothing staged is valid then).
 * ret (may be NULL) receives what gets freed.
 */
int eos_refdelta_apply(struct eos_store *st, struct eos_refdelta *d, struct eos_kv_batch *b,
		       struct eos_refs_freed *ret, struct eos_error *err);

/* Current count (0 when absent). */
int eos_refs_get(struct eos_store *st, enum eos_ref_type type, const struct eos_digest *d,
		 uint64_t *ret, struct eos_error *err);

/*
 * --- shared with store/squash-refs.c ----------------------------------------------------------
 * Both keep their deltas in a hash map of eos_ref_key() -> i64 delta and read, check and stage
 * the counts of one type at a time with these.
 */

/* The digest of reference key key. */
static inline const struct eos_digest *
eos_ref_key_digest(const uint8_t key[EOS_REF_KEY_LEN])
{
	return (const struct eos_digest *)(key + 1);
}

/* deltas[key] += delta (a new key starts at 0). */
int eos_ref_deltas_add(struct eos_hashmap *deltas, const uint8_t key[EOS_REF_KEY_LEN],
		       int64_t delta);

/* One reference key with its delta and the count read from the store. */
struct eos_ref_item {
	uint8_t key[EOS_REF_KEY_LEN];
	int64_t delta;
	uint64_t count;
};

/*
 * The non-zero deltas of type in deltas, copied out (the map may grow while they are processed),
 * with their current counts. *ret (free() it) is set only on success.
 */
int eos_ref_items_load(struct eos_store *st, struct eos_hashmap *deltas, enum eos_ref_type type,
		       struct eos_ref_item **ret, size_t *ret_n, struct eos_error *err);
/* Fill items[i].count with the current counts, 0 when absent; a corrupt count is -EBADMSG. */
int eos_ref_items_read(struct eos_store *st, struct eos_ref_item *items, size_t n,
		       struct eos_error *err);
/* The count after it->delta; -EBADMSG naming the object when it would drop below zero. */
int eos_ref_item_count_after(const struct eos_ref_item *it, uint64_t *ret, struct eos_error *err);
/* Stage count as the count of key into b (0 deletes the key). */
void eos_ref_stage_count(struct eos_kv_batch *b, const uint8_t key[EOS_REF_KEY_LEN],
			 uint64_t count);
