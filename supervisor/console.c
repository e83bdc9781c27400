/* SPDX-License-Identifier: MIT */
/* supervisor/console: the web console's logins and sessions (see console.h). */
#include "supervisor/console.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/errkind.h"
#include "common/json.h"

struct csession {
	bool live;
	struct eos_digest sid; /* SHA-256 of the cookie's value */
	char csrf[EOSD_CONSOLE_SECRET_LEN + 1];
	struct eos_digest tokens[EOSD_CONSOLE_TOKENS_MAX];
	size_t ntokens;
	int64_t created, used; /* seconds since the epoch */
};

struct ccode {
	bool live;
	struct eos_digest code;
	struct eos_digest token;
	int64_t expires;
};

struct eosd_console {
	struct eosd_auth *auth;
	struct csession sessions[EOSD_CONSOLE_SESSIONS_MAX];
	struct ccode codes[EOSD_CONSOLE_CODES_MAX];
};

static int64_t
now_s(void)
{
	return (int64_t)time(NULL);
}

static int
fail(int *ret_kind, int kind, int code, struct eos_error *err, const char *msg)
{
	*ret_kind = kind;
	return eos_error_set(err, code, "%s", msg);
}

int
eosd_console_new(struct eosd_auth *auth, struct eosd_console **ret)
{
	struct eosd_console *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->auth = auth;
	*ret = c;
	return 0;
}

void
eosd_console_free(struct eosd_console *c)
{
	if (!c)
		return;
	explicit_bzero(c, sizeof(*c));
	free(c);
}

/* The digest of a secret's text (64 hex digits), or -EINVAL. */
static int
secret_digest(const char *text, struct eos_digest *ret)
{
	size_t n = text ? strlen(text) : 0;

	if (n != EOSD_CONSOLE_SECRET_LEN || strspn(text, "0123456789abcdef") != n)
		return -EINVAL;
	return eos_sha256(text, n, ret);
}

static bool
session_ended(const struct csession *s, int64_t now)
{
	return now - s->used > EOSD_CONSOLE_IDLE_S || now - s->created > EOSD_CONSOLE_LIFE_S;
}

/* The live session of cookie value sid (ended ones are dropped on the way), or NULL. */
static struct csession *
session_find(struct eosd_console *c, const char *sid)
{
	struct csession *found = NULL;
	struct eos_digest d;
	int64_t now = now_s();

	if (secret_digest(sid, &d) < 0)
		return NULL;
	for (size_t i = 0; i < EOSD_CONSOLE_SESSIONS_MAX; i++) {
		struct csession *s = &c->sessions[i];

		if (s->live && session_ended(s, now))
			*s = (struct csession){ 0 };
		if (s->live && eosd_auth_equal(s->sid.b, d.b, sizeof(d.b)))
			found = s;
	}
	return found;
}

/* A free slot, else the one of the oldest login. */
static struct csession *
session_slot(struct eosd_console *c)
{
	struct csession *oldest = &c->sessions[0];

	for (size_t i = 0; i < EOSD_CONSOLE_SESSIONS_MAX; i++) {
		if (!c->sessions[i].live)
			return &c->sessions[i];
		if (c->sessions[i].created < oldest->created)
			oldest = &c->sessions[i];
	}
	return oldest;
}

/* The rules of one login's tokens (their scopes): see eosd_console_login(). */
static int
scopes_check(const struct eosd_auth_scope *s, size_t n, int *ret_kind, struct eos_error *err)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i].surface == EOS_SURFACE_MANAGEMENT && n > 1)
			return fail(ret_kind, EOS_ERRKIND_INVALID_REQUEST, -EINVAL, err,
				    "log in with the management token alone (it opens every "
				    "surface)");
		if (s[i].limited != s[0].limited ||
		    (s[i].limited && strcmp(s[i].sandbox, s[0].sandbox) != 0))
			return fail(ret_kind, EOS_ERRKIND_INVALID_REQUEST, -EINVAL, err,
				    "the tokens of one login must all be limited to the same "
				    "sandbox, or none of them");
	}
	return 0;
}

static int
login_digests(struct eosd_console *c, const struct eos_digest *d, size_t n,
	      struct eosd_console_login *ret, int *ret_kind, struct eos_error *err)
{
	struct eosd_auth_scope scopes[EOSD_CONSOLE_TOKENS_MAX];
	struct csession *s;
	int r = 0;

	for (size_t i = 0; r >= 0 && i < n; i++)
		r = eosd_auth_identify(c->auth, &d[i], &scopes[i], ret_kind, err);
	r = r < 0 ? r : scopes_check(scopes, n, ret_kind, err);
	if (r < 0)
		return r;
	*ret = (struct eosd_console_login){ 0 };
	if (eosd_auth_random_hex(ret->sid, EOSD_CONSOLE_SECRET_LEN / 2) < 0 ||
	    eosd_auth_random_hex(ret->csrf, EOSD_CONSOLE_SECRET_LEN / 2) < 0)
		return fail(ret_kind, EOS_ERRKIND_IO, -EIO, err, "console login: getrandom failed");
	s = session_slot(c);
	*s = (struct csession){ .live = true, .ntokens = n, .created = now_s() };
	s->used = s->created;
	memcpy(s->tokens, d, n * sizeof(*d));
	memcpy(s->csrf, ret->csrf, sizeof(s->csrf));
	ret->expires_at = s->created + EOSD_CONSOLE_LIFE_S;
	return secret_digest(ret->sid, &s->sid);
}

int
eosd_console_login(struct eosd_console *c, const char *const *tokens, size_t n,
		   struct eosd_console_login *ret, int *ret_kind, struct eos_error *err)
{
	struct eos_digest d[EOSD_CONSOLE_TOKENS_MAX];
	int r;

	if (n < 1 || n > EOSD_CONSOLE_TOKENS_MAX)
		return fail(ret_kind, EOS_ERRKIND_INVALID_REQUEST, -EINVAL, err,
			    "a login takes 1 to 3 tokens");
	for (size_t i = 0; i < n; i++)
		if ((r = eosd_auth_digest(tokens[i], &d[i], ret_kind, err)) < 0)
			return eos_error_prefix(err, r, "token %zu", i + 1);
	return login_digests(c, d, n, ret, ret_kind, err);
}

int
eosd_console_code_new(struct eosd_console *c, const struct eos_digest *d, char *code,
		      int64_t *ret_expires_at, struct eos_error *err)
{
	struct ccode *slot = &c->codes[0];
	int64_t now = now_s();

	for (size_t i = 0; i < EOSD_CONSOLE_CODES_MAX; i++) {
		struct ccode *k = &c->codes[i];

		if (k->live && k->expires <= now)
			*k = (struct ccode){ 0 };
		if (!k->live || (slot->live && k->expires < slot->expires))
			slot = k;
	}
	if (eosd_auth_random_hex(code, EOSD_CONSOLE_SECRET_LEN / 2) < 0)
		return eos_error_set(err, -EIO, "console link: getrandom failed");
	*slot = (struct ccode){ .live = true, .token = *d, .expires = now + EOSD_CONSOLE_CODE_S };
	*ret_expires_at = slot->expires;
	return secret_digest(code, &slot->code);
}

int
eosd_console_login_code(struct eosd_console *c, const char *code, struct eosd_console_login *ret,
			int *ret_kind, struct eos_error *err)
{
	struct eos_digest d, token;
	bool found = false;
	int64_t now = now_s();

	if (secret_digest(code, &d) == 0)
		for (size_t i = 0; i < EOSD_CONSOLE_CODES_MAX; i++) {
			struct ccode *k = &c->codes[i];

			if (!k->live || !eosd_auth_equal(k->code.b, d.b, sizeof(d.b)))
				continue;
			found = k->expires > now;
			token = k->token;
			*k = (struct ccode){ 0 }; /* used up, valid or not */
		}
	if (!found)
		return fail(ret_kind, EOS_ERRKIND_UNAUTHORIZED, -EACCES, err,
			    "this login link is used up or expired: 'eosctl console' prints a "
			    "new one");
	return login_digests(c, &token, 1, ret, ret_kind, err);
}

void
eosd_console_logout(struct eosd_console *c, const char *sid)
{
	struct csession *s = session_find(c, sid);

	if (s)
		*s = (struct csession){ 0 };
}

static struct csession *
session_or_fail(struct eosd_console *c, const char *sid, int *ret_kind, struct eos_error *err)
{
	struct csession *s = session_find(c, sid);

	if (!s)
		fail(ret_kind, EOS_ERRKIND_UNAUTHORIZED, -EACCES, err,
		     "no console session (logged out, ended, or eosd restarted): log in again");
	return s;
}

int
eosd_console_check(struct eosd_console *c, const char *sid, const char *csrf,
		   const struct eos_op *op, struct eosd_auth_scope *ret, int *ret_kind,
		   struct eos_error *err)
{
	struct csession *s = session_or_fail(c, sid, ret_kind, err);
	int r = -EPERM, first = 0;

	if (!s)
		return -EACCES;
	if (!csrf || strlen(csrf) != EOSD_CONSOLE_SECRET_LEN ||
	    !eosd_auth_equal(csrf, s->csrf, EOSD_CONSOLE_SECRET_LEN))
		return fail(ret_kind, EOS_ERRKIND_FORBIDDEN, -EPERM, err,
			    "the console's CSRF token is missing or wrong (header X-EOS-CSRF): "
			    "request refused");
	for (size_t i = 0; i < s->ntokens; i++) {
		struct eos_error e = { 0 };
		int kind = EOS_ERRKIND_FORBIDDEN;

		r = eosd_auth_check_digest(c->auth, &s->tokens[i], op, NULL, true, ret, &kind, &e);
		if (r == 0) {
			s->used = now_s();
			return 0;
		}
		/* a token no longer valid says so before another's "cannot call" */
		if (!first || kind == EOS_ERRKIND_UNAUTHORIZED) {
			first = r;
			*ret_kind = kind;
			if (err)
				*err = e;
		}
	}
	return first;
}

static json_t *
operations_json(void)
{
	json_t *o = json_object();
	size_t n;
	const struct eos_op *ops = eos_catalog_ops(&n);

	for (size_t i = 0; o && i < n; i++)
		if (eos_json_set(o, ops[i].name, json_string(eos_surface_name(ops[i].surface))) < 0)
			return NULL;
	return o;
}

/* Add the scope of a session's token to doc's surfaces, sandbox_id and token_ids. */
static void
scope_json(json_t *doc, const struct eosd_auth_scope *s)
{
	json_t *surfaces = json_object_get(doc, "surfaces");

	for (int k = 0; k < EOS_SURFACE_COUNT; k++)
		if (k == (int)s->surface || (s->surface == EOS_SURFACE_MANAGEMENT && !s->limited))
			eos_json_set(surfaces, eos_surface_name((enum eos_surface)k), json_true());
	if (s->limited)
		eos_json_set(doc, "sandbox_id", json_string(s->sandbox));
	if (s->token_id[0])
		eos_json_push(json_object_get(doc, "token_ids"), json_string(s->token_id));
}

json_t *
eosd_console_session_json(struct eosd_console *c, const char *sid, int *ret_kind,
			  struct eos_error *err)
{
	struct csession *s = session_or_fail(c, sid, ret_kind, err);
	EOS_CLEANUP(json_decrefp) json_t *doc = NULL;

	if (!s)
		return NULL;
	doc = json_pack("{s:b, s:s, s:{}, s:n, s:[], s:I, s:o}", "logged_in", 1, "csrf", s->csrf,
			"surfaces", "sandbox_id", "token_ids", "expires_at",
			(json_int_t)(s->created + EOSD_CONSOLE_LIFE_S), "operations",
			operations_json());
	for (size_t i = 0; doc && i < s->ntokens; i++) {
		struct eosd_auth_scope scope;

		if (eosd_auth_identify(c->auth, &s->tokens[i], &scope, ret_kind, err) < 0)
			return NULL;
		scope_json(doc, &scope);
	}
	if (!doc)
		fail(ret_kind, EOS_ERRKIND_OUT_OF_MEMORY, -ENOMEM, err, "out of memory");
	return TAKE_PTR(doc);
}
