/* SPDX-License-Identifier: MIT */
/*
 * supervisor/console: the web console's logins (doc/console.md). The console is a page eosd
 * serves on its TCP listener (supervisor/gateway-console.c: the routes, cookies and headers;
 * supervisor/console-assets.c: its files, generated at build time from supervisor/console/).
 * Everything it shows and does goes through the same POST /v1/<surface>/<operation> as any
 * client; what this module adds is how a browser authenticates those requests:
 *
 *	login (a token, or a one-time code eosctl console minted) → a console session: a random
 *	session id (the HttpOnly SameSite=Strict cookie) and a random CSRF token (sent back by the
 *	page in a header with every request) → eosd_console_check() for each request: the session,
 *	its CSRF token, then the tokens it was opened with, checked again as bearer tokens are
 *	(a revoked or expired token ends what it opened).
 *
 * Only digests are kept: of the session ids and of the tokens, never the texts; the CSRF token
 * is compared in constant time. Sessions live in memory (a restart of eosd logs everyone out).
 *
 * Threads: the loop thread only (the gateway's routes and its authentication run there), so
 * there is no lock; eosd_auth_*() lock themselves.
 */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "common/catalog.h"
#include "common/cleanup.h"
#include "common/digest.h"
#include "common/error.h"

#include "supervisor/auth.h"

enum {
	EOSD_CONSOLE_SESSIONS_MAX = 64,	 /* the oldest goes when a login would pass it */
	EOSD_CONSOLE_CODES_MAX = 16,	 /* one-time codes waiting; the oldest goes */
	EOSD_CONSOLE_TOKENS_MAX = 3,	 /* tokens one login may combine (one per surface) */
	EOSD_CONSOLE_IDLE_S = 12 * 3600, /* a session unused this long has ended */
	EOSD_CONSOLE_LIFE_S = 7 * 86400, /* and every session ends this long after its login */
	EOSD_CONSOLE_CODE_S = 120,	 /* a one-time code is good this long */
	EOSD_CONSOLE_SECRET_LEN = 64,	 /* hex digits of a session id, CSRF token or code */
};

struct eosd_console;

/* What a login gives the browser: the cookie's value and the CSRF token. */
struct eosd_console_login {
	char sid[EOSD_CONSOLE_SECRET_LEN + 1];
	char csrf[EOSD_CONSOLE_SECRET_LEN + 1];
	int64_t expires_at; /* seconds since the epoch: the session's end at the latest */
};

/* auth is borrowed for the console's life. Caller owns *ret; free with eosd_console_free(). */
int eosd_console_new(struct eosd_auth *auth, struct eosd_console **ret);
void eosd_console_free(struct eosd_console *c);
EOS_DEFINE_CLEANUP(struct eosd_console *, eosd_console_free)

/*
 * Log in with n tokens (their texts, 1 to EOSD_CONSOLE_TOKENS_MAX): the management token alone
 * (every surface, every sandbox), or tokens of the other surfaces, either all limited to one
 * sandbox or none. -EACCES / -EPERM with *ret_kind (unauthorized, forbidden) or -EINVAL
 * (invalid_request) and a message saying which token or rule.
 */
int eosd_console_login(struct eosd_console *c, const char *const *tokens, size_t n,
		       struct eosd_console_login *ret, int *ret_kind, struct eos_error *err);
/*
 * A one-time code (64 hex digits into code[65], good for EOSD_CONSOLE_CODE_S) that logs in with
 * the token whose digest is d (a bearer already checked: eosctl console).
 */
int eosd_console_code_new(struct eosd_console *c, const struct eos_digest *d, char *code,
			  int64_t *ret_expires_at, struct eos_error *err);
/* Log in with a code (used up, valid or not), as eosd_console_login() with its token. */
int eosd_console_login_code(struct eosd_console *c, const char *code,
			    struct eosd_console_login *ret, int *ret_kind, struct eos_error *err);
/* End the session of cookie value sid (nothing when there is none). */
void eosd_console_logout(struct eosd_console *c, const char *sid);

/*
 * A request of the console to run op: sid (the cookie's value), csrf (the header's, NULL when
 * missing). 0 with *ret the scope of the session's token for op (the session's use is
 * recorded), or -EACCES/-EPERM with *ret_kind (unauthorized: no such session, ended, a wrong
 * CSRF token, a token revoked; forbidden: no token of the session may call op) and a message.
 */
int eosd_console_check(struct eosd_console *c, const char *sid, const char *csrf,
		       const struct eos_op *op, struct eosd_auth_scope *ret, int *ret_kind,
		       struct eos_error *err);
/*
 * The session of sid for the page: {"logged_in": true, "csrf", "surfaces": [...], "sandbox_id" (or
 * null), "token_ids": [...], "expires_at", "operations": {name: surface}}. NULL with *ret_kind and
 * err when there is no such session (or a token of it is no longer valid).
 */
json_t *eosd_console_session_json(struct eosd_console *c, const char *sid, int *ret_kind,
				  struct eos_error *err);

/* One file of the console (supervisor/console-assets.c, generated). */
struct eosd_console_asset {
	const char *path; /* the URL path: "/console/app.js"; "/" for index.html */
	const char *type; /* its Content-Type */
	const unsigned char *data;
	size_t len;
};
/* The file served at path, or NULL. */
const struct eosd_console_asset *eosd_console_asset_find(const char *path);
