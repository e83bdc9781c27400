/* SPDX-License-Identifier: MIT */
/*
 * store/sandbox: sandbox registry, heads, layer records and leases (EOS_CF_META, EOS_CF_LAYERS).
 *
 * Internally a sandbox is a number (be64, >= 1) that prefixes all its keys; number 0 holds the
 * store-global meta keys. Meta keys are be64 number · ASCII name:
 *	0·"format"            le32 format version
 *	0·"next-sandbox"      le64 next sandbox number
 *	0·"sandbox:" id       le64 sandbox number
 *	N·"info"              sandbox record (eos_sandbox_record_encode)
 *	N·"head"              le64 head version
 *	N·"lease:" name       le64 version, le64 created_ns
 * Layer keys: be64 number · be64 version.
 *
 * Sandbox id -> number resolution is cached in the store (sandboxes are never renumbered; the
 * cache entry is dropped on destroy).
 */
#pragma once

#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"

#include "store/store.h"

struct eos_kv_batch;
struct eos_kv_snapshot;

enum {
	EOS_SANDBOX_GLOBAL = 0,
};

/* The persistent sandbox record (N·"info"). */
struct eos_sandbox_record {
	char id[EOS_SANDBOX_ID_MAX + 1];
	char source[256];
	int64_t created_ns;
	uint64_t next_link_group; /* next free hard-link group id (>= 1) */
};

int eos_sandbox_record_encode(const struct eos_sandbox_record *r, struct eos_buf *out);
int eos_sandbox_record_decode(const void *p, size_t n, struct eos_sandbox_record *ret);

/* Check an id-like name ([A-Za-z0-9._-], alnum first, 1..max bytes); messages say "what". */
int eos_store_name_check(const char *what, const char *name, size_t max, struct eos_error *err);

/* be64 sbx · name appended to out. */
int eos_meta_key(struct eos_buf *out, uint64_t sbx, const char *name);
/* be64 sbx · be64 version appended to out. */
int eos_layer_key(struct eos_buf *out, uint64_t sbx, uint64_t version);

/* Layer record: u8 format 1, le64 parent, le64 squashed_from, le64 created_ns, lp owner,
 * le64 created, le64 modified, le64 deleted, le64 bytes. */
int eos_layer_record_encode(const struct eos_layer_info *l, struct eos_buf *out);
int eos_layer_record_decode(const void *p, size_t n, uint64_t version, struct eos_layer_info *ret);

/* Number of sandbox id, or -ENOENT "sandbox 'id' does not exist". Cached. */
int eos_sandbox_resolve(struct eos_store *st, const char *id, uint64_t *ret_sbx,
			struct eos_error *err);
/* Forget a cached id (after destroy). */
void eos_sandbox_forget(struct eos_store *st, const char *id);
/* Read the sandbox record / head of number sbx. */
int eos_sandbox_record_get(struct eos_store *st, uint64_t sbx, struct eos_sandbox_record *ret,
			   struct eos_error *err);
int eos_sandbox_head(struct eos_store *st, uint64_t sbx, uint64_t *ret, struct eos_error *err);

/*
 * Resolve a caller's version: 0 means the head; otherwise v must have a layer record, else
 * -ENOENT "version L000004 of sandbox 'x' does not exist" (or "… was squashed into L000007").
 */
int eos_sandbox_version(struct eos_store *st, uint64_t sbx, const char *id, uint64_t v,
			uint64_t *ret, struct eos_error *err);

/*
 * Allocate a new sandbox number (under the writer lock): stages 0·"next-sandbox" into b.
 * Caller holds st->write_lock.
 */
int eos_sandbox_alloc_number(struct eos_store *st, struct eos_kv_batch *b, uint64_t *ret,
			     struct eos_error *err);

/* Stage head := v for sbx into b. */
int eos_sandbox_stage_head(struct eos_kv_batch *b, uint64_t sbx, uint64_t v);

/* Versions currently pinned by leases of sbx (sorted, unique). Caller owns *ret (free()). */
int eos_lease_versions(struct eos_store *st, uint64_t sbx, uint64_t **ret, size_t *ret_n,
		       struct eos_error *err);
