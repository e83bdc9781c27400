/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the publish gate's unit tests: a store in a temp dir with one sandbox per
 * scenario, change lists written as tables (struct pu_op), publishes driven through the public
 * API (store/store.h, "publishing"), and checks of what a publish must and must not leave
 * behind. Every helper aborts the test (ck_abort_msg) on unexpected failures.
 */
#pragma once

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/buf.h"
#include "common/digest.h"

#include "store/store.h"

#define ck_ok(r, err) \
	ck_assert_msg((r) >= 0, "line %d: %s", __LINE__, eos_error_message(&(err), (r)))

/* One staged change (or one path of a base tree). */
enum pu_op_kind {
	PU_END = 0,
	PU_FILE,     /* put_file: data (len bytes, or strlen when len is 0), mode */
	PU_DIR,	     /* mkdir (mode) */
	PU_OPAQUE,   /* mkdir with opaque: replaces whatever was there */
	PU_SYMLINK,  /* symlink to data */
	PU_REMOVE,   /* remove (a directory with everything below it) */
	PU_MODE,     /* set_attr: only the permission bits change */
	PU_RENAME,   /* put_file path with the content of data at the base, origin data (the caller
		      * also removes data with a PU_REMOVE) */
	PU_HARDLINK, /* link path to data */
	PU_RENAME_DIR, /* the gate only: mkdir path (opaque) with everything below data at the base,
			* origin data (the caller also removes data with a PU_REMOVE) */
};

struct pu_op {
	enum pu_op_kind kind;
	const char *path;
	const char *data;
	size_t len;
	unsigned mode;
};

/* clang-format off */
#define PU_F(p, d)	{ .kind = PU_FILE, .path = (p), .data = (d), .mode = 0644 }
#define PU_FL(p, d, l)	{ .kind = PU_FILE, .path = (p), .data = (d), .len = (l), .mode = 0644 }
#define PU_FX(p, d)	{ .kind = PU_FILE, .path = (p), .data = (d), .mode = 0755 }
#define PU_FM(p, d, m)	{ .kind = PU_FILE, .path = (p), .data = (d), .mode = (m) }
#define PU_D(p)		{ .kind = PU_DIR, .path = (p), .mode = 0755 }
#define PU_OPQ(p)	{ .kind = PU_OPAQUE, .path = (p), .mode = 0755 }
#define PU_L(p, t)	{ .kind = PU_SYMLINK, .path = (p), .data = (t), .mode = 0777 }
#define PU_RM(p)	{ .kind = PU_REMOVE, .path = (p) }
#define PU_MODE(p, m)	{ .kind = PU_MODE, .path = (p), .mode = (m) }
#define PU_MV(from, to)	{ .kind = PU_REMOVE, .path = (from) }, \
			{ .kind = PU_RENAME, .path = (to), .data = (from), .mode = 0644 }
#define PU_MVD(from, to) { .kind = PU_REMOVE, .path = (from) }, \
			{ .kind = PU_RENAME_DIR, .path = (to), .data = (from), .mode = 0755 }
#define PU_LINK(p, t)	{ .kind = PU_HARDLINK, .path = (p), .data = (t) }
#define PU_NONE		{ .kind = PU_END }
/* clang-format on */

/* How the two sides of a pair are published. */
enum pu_mode {
	PU_PLAIN = 0,	/* plain change sets with an explicit base and an "operation:" owner */
	PU_SESSION = 1, /* workspace sessions created on the base before either publishes */
};

extern struct eos_store *pu_st;
extern char *pu_dir;
extern char pu_sbx[EOS_SANDBOX_ID_MAX + 1]; /* the current sandbox */

/*
 * Unchecked fixture (runs in the runner's process): a temp dir made $TMPDIR for the tests'
 * stores, removed afterwards with whatever a failed test (which skips its teardown) left.
 */
void pu_suite_setup(void);
void pu_suite_teardown(void);
/* Check fixture: open a store in a fresh temp dir / close and remove it. */
void pu_setup(void);
void pu_teardown(void);
/* Close and reopen the store (same directory). */
void pu_reopen(void);

/* Create a new sandbox (a fresh id, made current) whose version 1 holds ops. Returns 1. */
uint64_t pu_sandbox(const struct pu_op *ops);
/* Commit ops with a plain eos_changeset (not the gate) on the current sandbox; the new head. */
uint64_t pu_changeset(const struct pu_op *ops);

/* Begin a publish on the current sandbox (session may be NULL; owner may be NULL). */
struct eos_publish *pu_begin(const char *session, uint64_t base, const char *owner);
/* Stage ops into p. */
void pu_stage(struct eos_publish *p, const struct pu_op *ops);
/* Stage a file with write ranges (and an origin, may be NULL). */
void pu_stage_ranged(struct eos_publish *p, const char *path, const char *data,
		     const struct eos_write_range *ranges, size_t n, const char *origin);
/* Commit p (asserting the call itself succeeds); res is filled, release it. Returns status. */
enum eos_publish_status pu_commit(struct eos_publish *p, struct eos_publish_result *res);
/* begin + stage + commit + free. res may be NULL (released inside). */
enum eos_publish_status pu_publish(const char *session, uint64_t base, const char *owner,
				   const struct pu_op *ops, struct eos_publish_result *res);
/* Create session name on version v of the current sandbox. */
void pu_session(const char *name, uint64_t v);
/* Write an opaque delta record into the session (as the FUSE view would). */
void pu_session_record(const char *name, const char *key, const char *value);

/* Contents of path at v (0 = head), NUL-terminated, *len set; NULL when absent. Caller frees. */
char *pu_read(uint64_t v, const char *path, size_t *len);
/* path at v is a regular file with exactly these bytes (len 0: strlen) and mode. */
void pu_expect_file_at(int line, uint64_t v, const char *path, const char *data, size_t len,
		       unsigned mode);
#define pu_expect_file(v, p, d, m) pu_expect_file_at(__LINE__, (v), (p), (d), 0, (m))
/* path is absent at v. */
void pu_expect_absent_at(int line, uint64_t v, const char *path);
#define pu_expect_absent(v, p) pu_expect_absent_at(__LINE__, (v), (p))
/* Kind of path at v (EOS_KIND_NONE when absent). */
enum eos_kind pu_kind(uint64_t v, const char *path);

uint64_t pu_head(void);
size_t pu_layer_count(void);
struct eos_layer_info pu_layer(uint64_t v);
/* fsck (verifying chunks) finds nothing. */
void pu_fsck_clean(void);

/* The conflict on path, or NULL. */
const struct eos_conflict *pu_conflict(const struct eos_publish_result *res, const char *path);
/* res is REJECTED with a conflict of kind (by name) on path; returns it. */
const struct eos_conflict *pu_expect_conflict_at(int line, const struct eos_publish_result *res,
						 const char *path, const char *kind);
#define pu_expect_conflict(res, p, k) pu_expect_conflict_at(__LINE__, (res), (p), (k))
/* Render a result for failure messages (static buffer, one thread). */
const char *pu_result_str(const struct eos_publish_result *res);
/* The fingerprint of a regular file: "file:<mode octal 4>:<sha256 hex>". */
void pu_file_fp(const void *data, size_t len, unsigned mode, char out[EOS_FINGERPRINT_MAX]);

/* Everything a rejected publish must leave as it was. */
struct pu_state {
	uint64_t head;
	size_t layers;
	struct eos_digest tree;
	bool has_session;
	struct eos_session_info session;
	uint64_t lease;	      /* the session's lease version, 0 when none */
	struct eos_buf delta; /* the session's delta records */
};
/* Read the state (session may be NULL). Release with pu_state_release(). */
void pu_state_read(struct pu_state *s, const char *session);
void pu_state_release(struct pu_state *s);
/* a and b are the same (head, layers, tree, session record, lease and delta). */
void pu_state_expect_same_at(int line, const struct pu_state *a, const struct pu_state *b);
#define pu_state_expect_same(a, b) pu_state_expect_same_at(__LINE__, (a), (b))
/* Number of delta records of session name. */
size_t pu_delta_count(const char *name);
/* The version of lease "session:<name>", 0 when none. */
uint64_t pu_session_lease(const char *name);

/* Blame of path at v. Caller frees *ret. */
void pu_blame(uint64_t v, const char *path, struct eos_blame_range **ret, size_t *n);
/* Owner of line (1-based) at v, from the blame; aborts when no range covers it. */
const char *pu_line_owner(const struct eos_blame_range *r, size_t n, uint32_t line);
/* Owner of line (1-based) of path at v (a static copy: one thread, until the next call). */
const char *pu_line_owner_at(uint64_t v, const char *path, uint32_t line);
/* Line owners at v equal owners[0..nlines) (one per line). */
void pu_expect_owners_at(int line, uint64_t v, const char *path, const char *const *owners,
			 size_t nlines);
#define pu_expect_owners(v, p, ...)                                                      \
	do {                                                                             \
		const char *const o_[] = { __VA_ARGS__ };                                \
		pu_expect_owners_at(__LINE__, (v), (p), o_, sizeof(o_) / sizeof(o_[0])); \
	} while (0)
/* Lines of data as the gate counts them ('\n' count, plus a final unterminated line). */
uint32_t pu_line_count(const void *data, size_t len);
