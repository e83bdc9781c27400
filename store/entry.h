/* SPDX-License-Identifier: MIT */
/*
 * store/entry: the MVCC entry model.
 *
 * Key (EOS_CF_ENTRIES): be64 sandbox number · parent path · 0x00 · name · 0x00 · be64 ~version.
 * The root directory has parent "" and name "" (so it sorts among the root's children and
 * listings skip the empty name). Versions are inverted so the newest version of a name sorts
 * first: a lookup at V is one Seek(prefix·~V).
 *
 * Record (little-endian): u8 format 1, u8 kind, u8 content kind, u8 flags(0), le32 mode, le32 uid,
 * le32 gid, le64 mtime_ns, le64 size, le64 floor, le64 link_group, [32-byte digest when content
 * kind != NONE], [lp inline data when INLINE], [lp target when SYMLINK], [le32 major, le32 minor
 * when CHR or BLK], le32 nxattrs, nxattrs × (lp name, lp value). Fifos and devices have size 0 and
 * no content; the store links regular files only (link_group is 0 for every other kind).
 *
 * Visibility at V: the newest version <= V of (parent, name), unless it is a whiteout or older
 * than the parent directory's floor. Directory floors are >= their parent's floor (commit keeps
 * that invariant), so checking the immediate parent's floor suffices.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"

#include "store/store.h"

struct eos_xattr {
	char *name;
	uint8_t *value;
	size_t len;
};

/* A decoded entry record. Owns target and xattrs; release with eos_entry_release(). */
struct eos_entry {
	struct eos_stat
		st;   /* kind, attr, version (from the key), floor, link_group, size, content */
	char *target; /* symlink target, else NULL */
	uint32_t nxattrs;
	struct eos_xattr *xattrs;
};

void eos_entry_init(struct eos_entry *e);
void eos_entry_release(struct eos_entry *e);
/* Deep copy (caller releases dst). */
int eos_entry_copy(struct eos_entry *dst, const struct eos_entry *src);

/* Key of (parent, name) at version v appended to out. */
int eos_entry_key(struct eos_buf *out, uint64_t sbx, const char *parent, size_t plen,
		  const char *name, size_t nlen, uint64_t v);
/* The listing prefix of directory dir: sandbox · dir · 0x00, appended to out. */
int eos_entry_dir_prefix(struct eos_buf *out, uint64_t sbx, const char *dir, size_t dlen);
/* Prefix of every entry key of a sandbox (8 bytes) appended to out. */
int eos_entry_sandbox_prefix(struct eos_buf *out, uint64_t sbx);

/* Split a key into its parts (borrowed from k). -EBADMSG when malformed. */
struct eos_entry_key_parts {
	uint64_t sbx;
	const char *parent;
	size_t plen;
	const char *name;
	size_t nlen;
	uint64_t version;
};
int eos_entry_key_decode(const uint8_t *k, size_t n, struct eos_entry_key_parts *ret);

/* Encode e (version not stored: it lives in the key) appended to out. */
int eos_entry_encode(const struct eos_entry *e, struct eos_buf *out);
/* Decode into *ret (initialised by the caller; released on failure). -EBADMSG when corrupt. */
int eos_entry_decode(const uint8_t *v, size_t n, uint64_t version, struct eos_entry *ret);

/*
 * The newest record of (parent, name) with version <= v, regardless of floors and whiteouts:
 * 0 and *ret filled (ret may be NULL), or -ENOENT. snap may be NULL.
 */
struct eos_kv_snapshot;
int eos_entry_get_raw(struct eos_store *st, const struct eos_kv_snapshot *snap, uint64_t sbx,
		      uint64_t v, const char *parent, size_t plen, const char *name, size_t nlen,
		      struct eos_entry *ret, struct eos_error *err);

/*
 * Visible entry of name in directory parent (whose floor is floor) at v: like get_raw but
 * -ENOENT for whiteouts and versions < floor.
 */
int eos_entry_lookup(struct eos_store *st, const struct eos_kv_snapshot *snap, uint64_t sbx,
		     uint64_t v, const char *parent, size_t plen, uint64_t floor, const char *name,
		     size_t nlen, struct eos_entry *ret, struct eos_error *err);

/*
 * Resolve a whole tree path at v from the root, one lookup per component. -ENOENT / -ENOTDIR
 * (naming the component) as for stat.
 */
int eos_entry_resolve(struct eos_store *st, const struct eos_kv_snapshot *snap, uint64_t sbx,
		      uint64_t v, const char *path, struct eos_entry *ret, struct eos_error *err);

enum eos_entry_list_flags {
	EOS_ENTRY_LIST_WHITEOUTS = 1 << 0,   /* also report whiteouts (kind WHITEOUT) */
	EOS_ENTRY_LIST_BELOW_FLOOR = 1 << 1, /* also report records older than the floor */
	EOS_ENTRY_LIST_NO_CACHE = 1 << 2,    /* leave the blocks read out of the block cache */
};

/* Per child: name (nlen bytes, NUL-terminated copy), its record. Non-zero stops. */
typedef int (*eos_entry_list_fn)(void *ctx, const char *name, size_t nlen,
				 const struct eos_entry *e);

/*
 * Walk directory dir (floor = its floor) at v in name order with one prefix scan, calling fn with
 * the newest record <= v of each name (visible ones only unless flags say otherwise).
 * start_after (may be NULL) skips names <= it. Returns 0, fn's value, or -errno.
 */
int eos_entry_list(struct eos_store *st, const struct eos_kv_snapshot *snap, uint64_t sbx,
		   uint64_t v, const char *dir, size_t dlen, uint64_t floor,
		   const char *start_after, enum eos_entry_list_flags flags, eos_entry_list_fn fn,
		   void *ctx, struct eos_error *err);
