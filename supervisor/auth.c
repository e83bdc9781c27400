/* SPDX-License-Identifier: MIT */
/* supervisor/auth: the surface tokens, issued tokens and the check of a bearer token. */
#include "supervisor/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/digest.h"
#include "common/errkind.h"
#include "common/json.h"

struct issued {
	char id[EOSD_TOKEN_ID_MAX + 1];
	struct eos_digest digest;
	enum eos_surface surface;
	char sandbox[EOS_CATALOG_ID_MAX + 1];
	int64_t created_at, expires_at; /* seconds since the epoch; expires_at 0: never */
	int64_t revoked_at;		/* 0: not revoked */
};

struct eosd_auth {
	char *dir; /* <state>/tokens */
	struct eos_digest surface[EOS_SURFACE_COUNT];
	pthread_mutex_t lock;	   /* the table: held briefly, also by the loop */
	pthread_mutex_t save_lock; /* serialises issue and revoke across their file write */
	struct issued *issued;	   /* protected by lock; changed under save_lock too */
	size_t nissued, cap;
};

bool
eosd_auth_equal(const void *a, const void *b, size_t n)
{
	const volatile unsigned char *x = a, *y = b;
	unsigned char d = 0;

	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

static bool
digest_equal(const struct eos_digest *a, const struct eos_digest *b)
{
	return eosd_auth_equal(a->b, b->b, sizeof(a->b));
}

static int64_t
now_s(void)
{
	return (int64_t)time(NULL);
}

int
eosd_auth_random_hex(char *out, size_t bytes)
{
	unsigned char buf[32];
	static const char hex[] = "0123456789abcdef";

	if (bytes > sizeof(buf) || getrandom(buf, bytes, 0) != (ssize_t)bytes)
		return -EIO;
	for (size_t i = 0; i < bytes; i++) {
		out[2 * i] = hex[buf[i] >> 4];
		out[2 * i + 1] = hex[buf[i] & 15];
	}
	out[2 * bytes] = '\0';
	return 0;
}

static bool
is_token_text(const char *s, size_t n)
{
	if (n != EOSD_TOKEN_HEX_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Make path holding a new token (O_EXCL: never replace one). */
static int
token_make(const char *path, struct eos_error *err)
{
	cleanup_close int fd = -1;
	char text[EOSD_TOKEN_HEX_LEN + 2];

	if (eosd_auth_random_hex(text, EOSD_TOKEN_HEX_LEN / 2) < 0)
		return eos_error_set(err, -EIO, "token '%s': getrandom failed", path);
	strcat(text, "\n");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return eos_error_set(err, eos_neg_errno(), "create '%s': %m", path);
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text) || fsync(fd) < 0)
		return eos_error_set(err, eos_neg_errno(), "write '%s': %m", path);
	return 0;
}

/* Read the token at path (made when missing) and keep its digest. */
static int
token_load(const char *path, struct eos_digest *ret, struct eos_error *err)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	char text[EOSD_TOKEN_HEX_LEN + 2];
	struct stat sb;
	ssize_t n;

	if (fd < 0 && errno == ENOENT) {
		int r = token_make(path, err);

		if (r < 0)
			return r;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (fd < 0 || fstat(fd, &sb) < 0)
		return eos_error_set(err, eos_neg_errno(), "open '%s': %m", path);
	if (sb.st_mode & 077)
		return eos_error_set(err, -EPERM,
				     "token '%s': mode %04o lets others read it (chmod 600 it)",
				     path, (unsigned)(sb.st_mode & 07777));
	n = read(fd, text, sizeof(text));
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
		n--;
	if (n < 0 || !is_token_text(text, (size_t)n))
		return eos_error_set(err, -EINVAL, "token '%s': not one line of %d hex digits",
				     path, EOSD_TOKEN_HEX_LEN);
	return eos_sha256(text, (size_t)n, ret);
}

/* --- issued.json ------------------------------------------------------------------------------ */

static json_t *
issued_json(const struct issued *t)
{
	char hex[EOS_DIGEST_HEX_LEN + 1];

	eos_digest_hex(&t->digest, hex);
	return json_pack("{s:s, s:s, s:s, s:s, s:I, s:o, s:o}", "token_id", t->id, "sha256", hex,
			 "surface", eos_surface_name(t->surface), "sandbox_id", t->sandbox,
			 "created_at", (json_int_t)t->created_at, "expires_at",
			 t->expires_at ? json_integer(t->expires_at) : json_null(), "revoked_at",
			 t->revoked_at ? json_integer(t->revoked_at) : json_null());
}

static int
issued_parse(json_t *j, struct issued *t)
{
	const char *id, *hex, *surface, *sandbox;
	json_int_t created;
	json_t *exp = NULL, *rev = NULL;
	int s;

	if (json_unpack(j, "{s:s, s:s, s:s, s:s, s:I, s:o, s:o}", "token_id", &id, "sha256", &hex,
			"surface", &surface, "sandbox_id", &sandbox, "created_at", &created,
			"expires_at", &exp, "revoked_at", &rev) < 0)
		return -EINVAL;
	s = eos_surface_parse(surface);
	if (s < 0 || strlen(id) > EOSD_TOKEN_ID_MAX || strlen(sandbox) > EOS_CATALOG_ID_MAX ||
	    eos_digest_from_hex(hex, &t->digest) < 0)
		return -EINVAL;
	snprintf(t->id, sizeof(t->id), "%s", id);
	snprintf(t->sandbox, sizeof(t->sandbox), "%s", sandbox);
	t->surface = (enum eos_surface)s;
	t->created_at = created;
	t->expires_at = json_is_integer(exp) ? json_integer_value(exp) : 0;
	t->revoked_at = json_is_integer(rev) ? json_integer_value(rev) : 0;
	return 0;
}

static int
issued_push(struct eosd_auth *a, const struct issued *t)
{
	if (a->nissued == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 16;
		struct issued *n = realloc(a->issued, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		a->issued = n;
		a->cap = cap;
	}
	a->issued[a->nissued++] = *t;
	return 0;
}

static int
issued_load(struct eosd_auth *a, struct eos_error *err)
{
	cleanup_free char *path = NULL;
	EOS_CLEANUP(json_decrefp) json_t *root = NULL;
	json_error_t jerr;
	json_t *list, *v;
	size_t i;

	if (asprintf(&path, "%s/issued.json", a->dir) < 0)
		return -ENOMEM;
	if (access(path, F_OK) < 0)
		return errno == ENOENT ? 0 : eos_error_set(err, eos_neg_errno(), "'%s': %m", path);
	root = json_load_file(path, 0, &jerr);
	list = root ? json_object_get(root, "tokens") : NULL;
	if (!json_is_array(list))
		return eos_error_set(err, -EBADMSG, "'%s': not a token list: %s", path,
				     root ? "no \"tokens\" array" : jerr.text);
	json_array_foreach(list, i, v)
	{
		struct issued t = { 0 };

		if (issued_parse(v, &t) < 0)
			return eos_error_set(err, -EBADMSG, "'%s': token %zu is malformed", path,
					     i);
		if (issued_push(a, &t) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * Write list as issued.json: a temporary file, fsync, rename, fsync of the directory. Under
 * a->save_lock only, so that the loop's checks never wait for the disk.
 */
static int
issued_save(const struct eosd_auth *a, const struct issued *list, size_t n, struct eos_error *err)
{
	EOS_CLEANUP(json_decrefp) json_t *root = json_pack("{s:i, s:[]}", "version", 1, "tokens");
	cleanup_free char *path = NULL, *tmp = NULL, *text = NULL;
	cleanup_close int fd = -1, dfd = -1;

	if (!root || asprintf(&path, "%s/issued.json", a->dir) < 0 ||
	    asprintf(&tmp, "%s/.issued.json.tmp", a->dir) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (eos_json_push(json_object_get(root, "tokens"), issued_json(&list[i])) < 0)
			return -ENOMEM;
	text = json_dumps(root, JSON_INDENT(1));
	if (!text)
		return -ENOMEM;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) || fsync(fd) < 0)
		return eos_error_set(err, eos_neg_errno(), "write '%s': %m", tmp);
	if (rename(tmp, path) < 0)
		return eos_error_set(err, eos_neg_errno(), "rename '%s': %m", tmp);
	dfd = open(a->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		(void)fsync(dfd);
	return 0;
}

/* --- open ------------------------------------------------------------------------------------- */

static int
tokens_dir(const char *state_dir, char **ret, struct eos_error *err)
{
	cleanup_free char *dir = NULL;
	struct stat sb;

	if (asprintf(&dir, "%s/tokens", state_dir) < 0)
		return -ENOMEM;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return eos_error_set(err, eos_neg_errno(), "create '%s': %m", dir);
	if (lstat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode))
		return eos_error_set(err, -ENOTDIR, "'%s': not a directory", dir);
	if (sb.st_mode & 077)
		return eos_error_set(err, -EPERM, "'%s': mode %04o lets others in (chmod 700 it)",
				     dir, (unsigned)(sb.st_mode & 07777));
	*ret = TAKE_PTR(dir);
	return 0;
}

int
eosd_auth_open(const char *state_dir, struct eosd_auth **ret, struct eos_error *err)
{
	EOS_CLEANUP(eosd_auth_freep) struct eosd_auth *a = calloc(1, sizeof(*a));
	int r;

	if (!a)
		return -ENOMEM;
	pthread_mutex_init(&a->lock, NULL);
	pthread_mutex_init(&a->save_lock, NULL);
	r = tokens_dir(state_dir, &a->dir, err);
	for (int s = 0; r >= 0 && s < EOS_SURFACE_COUNT; s++) {
		cleanup_free char *path = NULL;

		if (asprintf(&path, "%s/%s", a->dir, eos_surface_name((enum eos_surface)s)) < 0)
			return -ENOMEM;
		r = token_load(path, &a->surface[s], err);
	}
	if (r >= 0)
		r = issued_load(a, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(a);
	return 0;
}

void
eosd_auth_free(struct eosd_auth *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->lock);
	pthread_mutex_destroy(&a->save_lock);
	free(a->issued);
	free(a->dir);
	free(a);
}

/* --- check ------------------------------------------------------------------------------------ */

static int refuse(int *ret_kind, int kind, struct eos_error *err, const char *fmt, ...)
	EOS_PRINTF(4, 5);

static int
refuse(int *ret_kind, int kind, struct eos_error *err, const char *fmt, ...)
{
	char msg[EOS_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	*ret_kind = kind;
	return eos_error_set(err, kind == EOS_ERRKIND_FORBIDDEN ? -EPERM : -EACCES, "%s", msg);
}

/* Find the token whose digest is d: a surface token, else an issued one (under a->lock). */
static int
identify(struct eosd_auth *a, const struct eos_digest *d, struct eosd_auth_scope *ret,
	 int *ret_kind, struct eos_error *err)
{
	int found = -1;

	for (int s = 0; s < EOS_SURFACE_COUNT; s++)
		if (digest_equal(d, &a->surface[s]))
			found = s;
	if (found >= 0) {
		*ret = (struct eosd_auth_scope){ .surface = (enum eos_surface)found };
		return 0;
	}
	for (size_t i = 0; i < a->nissued; i++)
		if (digest_equal(d, &a->issued[i].digest))
			found = (int)i;
	if (found < 0)
		return refuse(ret_kind, EOS_ERRKIND_UNAUTHORIZED, err, "unknown token");
	const struct issued *t = &a->issued[found];
	if (t->revoked_at)
		return refuse(ret_kind, EOS_ERRKIND_UNAUTHORIZED, err, "token '%s' was revoked",
			      t->id);
	if (t->expires_at && now_s() >= t->expires_at) {
		return refuse(ret_kind, EOS_ERRKIND_UNAUTHORIZED, err,
			      "token '%s' expired at %" PRId64 " (seconds since the epoch)", t->id,
			      t->expires_at);
	}
	*ret = (struct eosd_auth_scope){ .surface = t->surface, .limited = true };
	snprintf(ret->sandbox, sizeof(ret->sandbox), "%s", t->sandbox);
	snprintf(ret->token_id, sizeof(ret->token_id), "%s", t->id);
	return 0;
}

int
eosd_auth_digest(const char *token, struct eos_digest *ret, int *ret_kind, struct eos_error *err)
{
	if (!is_token_text(token, strlen(token)))
		return refuse(ret_kind, EOS_ERRKIND_UNAUTHORIZED, err,
			      "unknown token (not %d hex digits)", EOSD_TOKEN_HEX_LEN);
	return eos_sha256(token, strlen(token), ret);
}

static int
bearer_digest(const char *header, struct eos_digest *ret, int *ret_kind, struct eos_error *err)
{
	const char *tok;

	if (!header)
		return refuse(ret_kind, EOS_ERRKIND_UNAUTHORIZED, err,
			      "no token: send 'Authorization: Bearer <token>'");
	if (strncasecmp(header, "Bearer ", 7) != 0)
		return refuse(ret_kind, EOS_ERRKIND_UNAUTHORIZED, err,
			      "the Authorization header is not 'Bearer <token>'");
	tok = header + 7;
	while (*tok == ' ')
		tok++;
	return eosd_auth_digest(tok, ret, ret_kind, err);
}

/* ping and version answer any valid token. */
static bool
any_token_op(const struct eos_op *op)
{
	return strcmp(op->name, "ping") == 0 || strcmp(op->name, "version") == 0;
}

int
eosd_auth_identify(struct eosd_auth *a, const struct eos_digest *d, struct eosd_auth_scope *ret,
		   int *ret_kind, struct eos_error *err)
{
	int r;

	pthread_mutex_lock(&a->lock);
	r = identify(a, d, ret, ret_kind, err);
	pthread_mutex_unlock(&a->lock);
	return r;
}

int
eosd_auth_identify_header(struct eosd_auth *a, const char *header, struct eosd_auth_scope *ret,
			  int *ret_kind, struct eos_error *err)
{
	struct eos_digest d;
	int r = bearer_digest(header, &d, ret_kind, err);

	return r < 0 ? r : eosd_auth_identify(a, &d, ret, ret_kind, err);
}

int
eosd_auth_check(struct eosd_auth *a, const char *header, const struct eos_op *op,
		const char *sandbox_id, struct eosd_auth_scope *ret, int *ret_kind,
		struct eos_error *err)
{
	struct eos_digest d;
	int r = bearer_digest(header, &d, ret_kind, err);

	if (r < 0)
		return r;
	return eosd_auth_check_digest(a, &d, op, sandbox_id, false, ret, ret_kind, err);
}

int
eosd_auth_check_digest(struct eosd_auth *a, const struct eos_digest *d, const struct eos_op *op,
		       const char *sandbox_id, bool all_surfaces, struct eosd_auth_scope *ret,
		       int *ret_kind, struct eos_error *err)
{
	struct eosd_auth_scope s;
	int r = eosd_auth_identify(a, d, &s, ret_kind, err);

	if (r < 0)
		return r;
	if (all_surfaces && s.surface == EOS_SURFACE_MANAGEMENT && !s.limited)
		s.surface = op->surface;
	if (s.surface != op->surface && !any_token_op(op))
		return refuse(ret_kind, EOS_ERRKIND_FORBIDDEN, err, "a %s token cannot call '%s'",
			      eos_surface_name(s.surface), op->name);
	if (s.limited && op->needs_sandbox && sandbox_id && strcmp(sandbox_id, s.sandbox) != 0)
		return refuse(ret_kind, EOS_ERRKIND_FORBIDDEN, err,
			      "this token is limited to sandbox '%s', not '%s'", s.sandbox,
			      sandbox_id);
	*ret = s;
	return 0;
}

/* --- issue and revoke ------------------------------------------------------------------------- */

static json_t *
issued_reply(const struct issued *t, const char *token)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:o}", "token", token, "token_id", t->id, "surface",
			 eos_surface_name(t->surface), "sandbox_id", t->sandbox, "expires_at",
			 t->expires_at ? json_integer(t->expires_at) : json_null());
}

static int
issued_new(enum eos_surface surface, const char *sandbox, int64_t ttl, struct issued *t,
	   char *token)
{
	char idhex[17];

	if (eosd_auth_random_hex(token, EOSD_TOKEN_HEX_LEN / 2) < 0 ||
	    eosd_auth_random_hex(idhex, 8) < 0)
		return -EIO;
	*t = (struct issued){ .surface = surface, .created_at = now_s() };
	snprintf(t->id, sizeof(t->id), "tok-%s", idhex);
	snprintf(t->sandbox, sizeof(t->sandbox), "%s", sandbox);
	t->expires_at = ttl > 0 ? t->created_at + ttl : 0;
	return eos_sha256(token, strlen(token), &t->digest);
}

/* A copy of the table with room for one more, and its length. Under save_lock. */
static struct issued *
snapshot(struct eosd_auth *a, size_t *ret_n)
{
	struct issued *copy;

	pthread_mutex_lock(&a->lock);
	copy = malloc((a->nissued + 1) * sizeof(*copy));
	if (copy && a->nissued)
		memcpy(copy, a->issued, a->nissued * sizeof(*copy));
	*ret_n = a->nissued;
	pthread_mutex_unlock(&a->lock);
	return copy;
}

/* Save the table plus t, then add t to it. */
static int
issued_add(struct eosd_auth *a, const struct issued *t, struct eos_error *err)
{
	cleanup_free struct issued *copy = NULL;
	size_t n;
	int r;

	pthread_mutex_lock(&a->save_lock);
	copy = snapshot(a, &n);
	if (!copy) {
		pthread_mutex_unlock(&a->save_lock);
		return -ENOMEM;
	}
	copy[n++] = *t;
	r = issued_save(a, copy, n, err);
	if (r >= 0) {
		pthread_mutex_lock(&a->lock);
		r = issued_push(a, t);
		pthread_mutex_unlock(&a->lock);
	}
	pthread_mutex_unlock(&a->save_lock);
	return r;
}

int
eosd_auth_issue(struct eosd_auth *a, enum eos_surface surface, const char *sandbox,
		int64_t ttl_seconds, json_t **out, struct eos_error *err)
{
	char token[EOSD_TOKEN_HEX_LEN + 1];
	struct issued t;
	int r;

	if (surface == EOS_SURFACE_MANAGEMENT || strlen(sandbox) > EOS_CATALOG_ID_MAX)
		return eos_error_set(err, -EINVAL, "issue_token: argument 'surface': %s",
				     "runtime or observability only");
	r = issued_new(surface, sandbox, ttl_seconds, &t, token);
	if (r < 0)
		return eos_error_set(err, r, "issue_token: make a token: %s", strerror(-r));
	r = issued_add(a, &t, err);
	if (r < 0)
		return eos_error_prefix(err, r, "issue_token");
	*out = issued_reply(&t, token);
	explicit_bzero(token, sizeof(token));
	return *out ? 0 : -ENOMEM;
}

/* Save the table with token_id revoked, then revoke it. -ENOENT when there is no such token. */
static int
issued_revoke(struct eosd_auth *a, const char *token_id, struct eos_error *err)
{
	cleanup_free struct issued *copy = NULL;
	size_t n, i;
	int r = 0;

	pthread_mutex_lock(&a->save_lock);
	copy = snapshot(a, &n);
	for (i = 0; copy && i < n && strcmp(copy[i].id, token_id) != 0; i++)
		;
	if (!copy)
		r = -ENOMEM;
	else if (i == n)
		r = eos_error_set(err, -ENOENT, "token '%s': no such token", token_id);
	else if (!copy[i].revoked_at) {
		copy[i].revoked_at = now_s();
		r = issued_save(a, copy, n, err);
	}
	if (r >= 0) {
		pthread_mutex_lock(&a->lock);
		a->issued[i].revoked_at = copy[i].revoked_at; /* i is stable under save_lock */
		pthread_mutex_unlock(&a->lock);
	}
	pthread_mutex_unlock(&a->save_lock);
	return r;
}

int
eosd_auth_revoke(struct eosd_auth *a, const char *token_id, json_t **out, struct eos_error *err)
{
	int r = issued_revoke(a, token_id, err);

	if (r == -ENOENT)
		return r;
	if (r < 0)
		return eos_error_prefix(err, r, "revoke_token '%s'", token_id);
	*out = json_pack("{s:s, s:b}", "token_id", token_id, "revoked", 1);
	return *out ? 0 : -ENOMEM;
}
