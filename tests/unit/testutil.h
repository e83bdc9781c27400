/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the unit tests. They abort the test (ck_abort_msg) on setup failures, so
 * tests read as straight-line behaviour.
 */
#pragma once

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/digest.h"

#include "store/kv.h"
#include "store/store.h"

/* A fresh empty directory under $TMPDIR (or /tmp). Caller frees; remove with eos_test_rm_rf(). */
char *eos_test_tmpdir(const char *tag);
/* Remove a tree (like rm -rf; never follows symlinks). */
void eos_test_rm_rf(const char *path);
/* Open (with create, creating) the database in dir with 2 threads, or fail the test. */
struct eos_kv *eos_test_kv_open(const char *dir, bool create);
/* Open (creating) a store in a fresh temp dir; *ret_dir receives the dir (caller frees). */
struct eos_store *eos_test_store_new(char **ret_dir);
/* Write a host file with len bytes from data (creating parent dirs). */
void eos_test_write_file(const char *path, const void *data, size_t len, unsigned mode);
/* Bind a Unix socket at path and close it: the socket file stays behind, as a stale one does. */
void eos_test_make_socket(const char *path);
/* Deterministic pseudo-random bytes (xorshift) for a seed. */
void eos_test_fill_random(void *buf, size_t len, uint64_t seed);
/* Attr with mode, uid/gid of the caller and a fixed mtime. */
struct eos_attr eos_test_attr(unsigned mode);
/* Run the suite with CK_NORMAL output; returns the process exit status. */
int eos_test_run(Suite *s);

/* A store open in a fresh temp dir, for tests that reopen it or hand both to helpers. */
struct eos_test_fixture {
	char *dir;
	struct eos_store *st;
};

/* Open (creating) a store in a fresh temp dir (eos_test_store_new()). */
struct eos_test_fixture eos_test_fixture_open(void);
/* Close the store and remove and free the dir. */
void eos_test_fixture_close(struct eos_test_fixture *f);

/* Number of delta records session has (eos_store_session_scan). */
size_t eos_test_session_records(struct eos_store *st, const char *sandbox, const char *session);
/* Write one raw record (synced) straight into column family cf of st. */
void eos_test_kv_put(struct eos_store *st, enum eos_cf cf, const struct eos_buf *k, const void *v,
		     size_t n);
/* Every key and value of cf, length-prefixed, in key order (byte-for-byte comparisons). */
void eos_test_kv_dump(struct eos_store *st, enum eos_cf cf, struct eos_buf *out);

/*
 * A set of chunk digests: zero-initialise, add, then eos_test_chunk_set_sort() before comparing.
 * Owns v; free with eos_test_chunk_set_release().
 */
struct eos_test_chunk_set {
	struct eos_digest *v;
	size_t n;
};

void eos_test_chunk_set_add(struct eos_test_chunk_set *s, const struct eos_digest *d);
/* Sort bytewise and drop duplicates. */
void eos_test_chunk_set_sort(struct eos_test_chunk_set *s);
/* Same digests (both sorted). */
bool eos_test_chunk_set_eq(const struct eos_test_chunk_set *a, const struct eos_test_chunk_set *b);
/* Free v and reset to empty. */
void eos_test_chunk_set_release(struct eos_test_chunk_set *s);
/* Add the chunks content c references: the chunk itself, or every chunk of its manifest. */
void eos_test_chunk_set_add_content(struct eos_test_chunk_set *s, struct eos_store *st,
				    const struct eos_content *c);
/* Every key of EOS_CF_CHUNKS (asserted to be digests), sorted. Caller releases it. */
struct eos_test_chunk_set eos_test_chunk_set_stored(struct eos_store *st);

/*
 * Digest of the whole tree of sandbox at version v: every visible path in order with its kind,
 * mode, size, mtime, device number, symlink target, link-group membership and content digest
 * (content bytes are read back and hashed, so corruption changes it). Implemented in
 * tests/unit/treehash.c.
 */
struct eos_digest eos_test_tree_digest(struct eos_store *st, const char *sandbox, uint64_t v);
/* Number of visible paths (root excluded) at v. */
uint64_t eos_test_tree_count(struct eos_store *st, const char *sandbox, uint64_t v);
