/* SPDX-License-Identifier: MIT */
/*
 * store/fsck-internal.h: the state of one eos_store_fsck() run, shared by store/fsck.c (format,
 * registry, sandboxes, blame, the order of the passes), store/fsck-content.c (entries, reference
 * counts, chunks, manifests) and store/fsck-damage.c (keys RocksDB cannot read, and the
 * sandboxes, versions and paths they affect). One thread; nothing here outlives the run.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#include "store/kv.h"
#include "store/refs.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

enum {
	EOS_FSCK_MSG_MAX = 768,
	EOS_FSCK_HEX_KEY_MAX = 24, /* bytes of a malformed key shown in a message */
};

/* A recomputed reference count, keyed like EOS_CF_REFS. */
struct eos_fsck_ref {
	uint8_t key[EOS_REF_KEY_LEN];
	uint64_t count;
	bool seen;	 /* a refs key exists for it (or the refs key is unreadable) */
	bool present;	 /* the chunk / manifest record exists */
	bool damaged;	 /* unreadable or corrupt; a manifest also when one of its chunks is */
	bool unverified; /* its reference count is unreadable */
	size_t via;	 /* damaged manifest: index of its first damaged chunk (SIZE_MAX: itself) */
};

struct eos_fsck_refvec {
	struct eos_fsck_ref *v;
	size_t n, cap;
};

/* What of a sandbox is unreadable (bits). */
enum eos_fsck_damage {
	EOS_FSCK_DAMAGE_META = 1 << 0,	  /* its record, head or leases */
	EOS_FSCK_DAMAGE_LAYERS = 1 << 1,  /* layer records */
	EOS_FSCK_DAMAGE_ENTRIES = 1 << 2, /* entry records: paths at some versions */
	EOS_FSCK_DAMAGE_CONTENT = 1 << 3, /* chunks or manifests of its files */
	EOS_FSCK_DAMAGE_OTHER = 1 << 4,	  /* blame or session records */
};

struct eos_fsck_sandbox {
	char id[EOS_SANDBOX_ID_MAX + 1];
	uint64_t sbx;
	uint64_t head;		       /* 0 when missing */
	struct eos_layer_info *layers; /* sorted by version */
	size_t nlayers, cap;
	unsigned damage;	/* enum eos_fsck_damage */
	uint64_t damaged_paths; /* entries whose content is damaged */
};

struct eos_fsck {
	struct eos_store *st;
	const struct eos_kv_snapshot *snap;
	enum eos_fsck_flags flags;
	eos_fsck_fn fn;
	void *ctx;
	struct eos_fsck_result res;
	struct eos_fsck_sandbox *sbx; /* sorted by number */
	size_t nsbx, capsbx;
	struct eos_fsck_refvec refs;
	struct eos_fsck_sandbox *cur; /* the sandbox whose layers or leases are being scanned */
	bool registry_damaged;	      /* some registrations unreadable: orphan checks are off */
	bool counts_partial;	      /* some entries or manifests unreadable: counts may be low */
	bool quiet_damage;	      /* a second pass: damage was reported by the first */
	uint64_t obs_records, obs_bytes; /* observations counted by the scan */
	uint64_t *reported;		 /* hashes of cf · message of the stretches reported */
	size_t nreported, capreported;
};

typedef int (*eos_fsck_scan_fn)(struct eos_fsck *fs, const uint8_t *k, size_t klen,
				const uint8_t *v, size_t vlen);

/* Report one violation of kind (counted in res.violations). */
void eos_fsck_report(struct eos_fsck *fs, const char *kind, const char *fmt, ...) EOS_PRINTF(3, 4);
/* Hex of (the start of) a key into out[2 * EOS_FSCK_HEX_KEY_MAX + 1]. */
const char *eos_fsck_hex_key(const uint8_t *k, size_t n, char *out);

/*
 * Scan cf over [lo, hi) (NULL = unbounded), with values when values is set. Keys RocksDB cannot
 * read are reported (eos_fsck_damage) and skipped. Fails only for lack of memory.
 */
int eos_fsck_scan(struct eos_fsck *fs, enum eos_cf cf, const void *lo, size_t llen, const void *hi,
		  size_t hlen, bool values, eos_fsck_scan_fn fn, struct eos_error *err);

struct eos_fsck_sandbox *eos_fsck_find_sandbox(struct eos_fsck *fs, uint64_t sbx);
/* The sandbox's id, or "#<number>" when it is not registered (into buf[32]). */
const char *eos_fsck_sandbox_name(struct eos_fsck *fs, uint64_t sbx, char *buf);
/* The layer covering version v: v itself, or (unless exact) a squashed range ending later. */
const struct eos_layer_info *eos_fsck_find_layer(const struct eos_fsck_sandbox *s, uint64_t v,
						 bool exact);
/* The recomputed count of type · digest, NULL when nothing references it. */
struct eos_fsck_ref *eos_fsck_find_ref(const struct eos_fsck_refvec *rv, enum eos_ref_type type,
				       const uint8_t *digest);

/* fsck-content.c: entries, reference counts, chunks, manifests. */
int eos_fsck_content(struct eos_fsck *fs, struct eos_error *err);

/*
 * fsck-damage.c. eos_fsck_damage: a scan of cf could not read the keys after `after` and before
 * `resume` (NULL: the ends); report them and what they cover. eos_fsck_read_failed: a point
 * read of what (a meta record of sandbox s, NULL for the store's) failed with err (damage):
 * report it. eos_fsck_object_damaged: chunk or manifest rc is unreadable (msg) or corrupt.
 * eos_fsck_damaged_paths: name every entry whose content is damaged, and sum up per sandbox.
 */
int eos_fsck_damage(struct eos_fsck *fs, enum eos_cf cf, const uint8_t *after, size_t alen,
		    const uint8_t *resume, size_t rlen, const char *msg);
void eos_fsck_read_failed(struct eos_fsck *fs, struct eos_fsck_sandbox *s, const char *what,
			  const struct eos_error *err);
void eos_fsck_object_damaged(struct eos_fsck *fs, struct eos_fsck_ref *rc, const char *msg);
int eos_fsck_damaged_paths(struct eos_fsck *fs, struct eos_error *err);
