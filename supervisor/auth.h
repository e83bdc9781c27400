/* SPDX-License-Identifier: MIT */
/*
 * supervisor/auth: who may call what. Three surface tokens (management, runtime, observability)
 * live in <state>/tokens/<surface> (one line of 64 hex digits, mode 0600, the directory 0700),
 * made at the first start. issue_token mints more, each limited to one sandbox and one surface,
 * optionally expiring; only their SHA-256 is kept, in <state>/tokens/issued.json (0600, replaced
 * atomically). A presented token is hashed and compared with every known digest in constant
 * time.
 *
 * Calling sequence: eosd_auth_open() at start, then eosd_auth_check() (the gateway's loop) and
 * eosd_auth_issue() / eosd_auth_revoke() (handlers, on workers) from any thread at once (one
 * mutex), eosd_auth_free() at the end.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/catalog.h"
#include "common/cleanup.h"
#include "common/digest.h"
#include "common/error.h"

enum {
	EOSD_TOKEN_HEX_LEN = 64, /* 32 random bytes */
	EOSD_TOKEN_ID_MAX = 32,
};

struct eosd_auth;

/* What a token reaches; copies, valid after the token is revoked. */
struct eosd_auth_scope {
	enum eos_surface surface;
	bool limited;			      /* to sandbox */
	char sandbox[EOS_CATALOG_ID_MAX + 1]; /* when limited */
	char token_id[EOSD_TOKEN_ID_MAX + 1]; /* "" for the surface tokens */
};

/*
 * Load (or, missing, make) the surface tokens under state_dir/tokens and load issued.json.
 * Caller owns *ret; free with eosd_auth_free().
 */
int eosd_auth_open(const char *state_dir, struct eosd_auth **ret, struct eos_error *err);
void eosd_auth_free(struct eosd_auth *a);
EOS_DEFINE_CLEANUP(struct eosd_auth *, eosd_auth_free)

/*
 * Whether the Authorization header (NULL: none) lets the caller run op (on sandbox_id, NULL for
 * none). 0 with *ret filled, or a negative errno with *ret_kind EOS_ERRKIND_UNAUTHORIZED (no,
 * malformed, unknown, expired or revoked token) or EOS_ERRKIND_FORBIDDEN (a valid token of
 * another surface, or limited to another sandbox) and a message saying which. Each surface's
 * operations need that surface's token; ping and version take any valid token.
 */
int eosd_auth_check(struct eosd_auth *a, const char *header, const struct eos_op *op,
		    const char *sandbox_id, struct eosd_auth_scope *ret, int *ret_kind,
		    struct eos_error *err);

/*
 * eosd_auth_check() of a token already hashed (the console keeps digests, never tokens). With
 * all_surfaces, the management token (not limited to a sandbox) opens every surface: the
 * console's rule (doc/console.md), since that token can mint a token of any surface anyway;
 * *ret then names op's surface.
 */
int eosd_auth_check_digest(struct eosd_auth *a, const struct eos_digest *d, const struct eos_op *op,
			   const char *sandbox_id, bool all_surfaces, struct eosd_auth_scope *ret,
			   int *ret_kind, struct eos_error *err);
/* The SHA-256 of token (64 hex digits), or -EACCES with *ret_kind EOS_ERRKIND_UNAUTHORIZED. */
int eosd_auth_digest(const char *token, struct eos_digest *ret, int *ret_kind,
		     struct eos_error *err);
/*
 * What the token whose digest is d reaches, whatever the operation: 0 with *ret, or -EACCES
 * with *ret_kind EOS_ERRKIND_UNAUTHORIZED (unknown, revoked, expired) and a message saying which.
 */
int eosd_auth_identify(struct eosd_auth *a, const struct eos_digest *d, struct eosd_auth_scope *ret,
		       int *ret_kind, struct eos_error *err);
/*
 * eosd_auth_identify() of the Authorization header's bearer token: eosd_auth_check() without
 * its surface and sandbox checks (the MCP endpoint serves the token's surface).
 */
int eosd_auth_identify_header(struct eosd_auth *a, const char *header, struct eosd_auth_scope *ret,
			      int *ret_kind, struct eos_error *err);

/*
 * Mint a token of surface (runtime or observability) limited to sandbox, expiring after
 * ttl_seconds (0: never). *out: {"token", "token_id", "surface", "sandbox_id", "expires_at"
 * (seconds since the epoch, or null)}; the token itself is never stored.
 */
int eosd_auth_issue(struct eosd_auth *a, enum eos_surface surface, const char *sandbox,
		    int64_t ttl_seconds, json_t **out, struct eos_error *err);
/* Revoke an issued token: -ENOENT naming token_id when there is none. */
int eosd_auth_revoke(struct eosd_auth *a, const char *token_id, json_t **out,
		     struct eos_error *err);

/* 2 * bytes lowercase hex digits of getrandom() bytes (at most 32) and a NUL into out; -EIO. */
int eosd_auth_random_hex(char *out, size_t bytes);
/* Compare n bytes in time that depends only on n. */
bool eosd_auth_equal(const void *a, const void *b, size_t n);
