/* SPDX-License-Identifier: MIT */
#include "tests/unit/publish-util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

#include "tests/unit/testutil.h"

struct eos_store *pu_st;
char *pu_dir;
char pu_sbx[EOS_SANDBOX_ID_MAX + 1];
static unsigned sandbox_seq;

static char *suite_tmp, *saved_tmpdir;

void
pu_suite_setup(void)
{
	const char *t = getenv("TMPDIR");

	saved_tmpdir = t ? strdup(t) : NULL;
	suite_tmp = eos_test_tmpdir("publish");
	ck_assert_int_eq(setenv("TMPDIR", suite_tmp, 1), 0);
}

void
pu_suite_teardown(void)
{
	eos_test_rm_rf(suite_tmp);
	free(suite_tmp);
	suite_tmp = NULL;
	if (saved_tmpdir)
		setenv("TMPDIR", saved_tmpdir, 1);
	else
		unsetenv("TMPDIR");
	free(saved_tmpdir);
	saved_tmpdir = NULL;
}

void
pu_setup(void)
{
	pu_st = eos_test_store_new(&pu_dir);
	sandbox_seq = 0;
	pu_sbx[0] = '\0';
}

void
pu_teardown(void)
{
	eos_store_close(pu_st);
	pu_st = NULL;
	eos_test_rm_rf(pu_dir);
	free(pu_dir);
	pu_dir = NULL;
}

void
pu_reopen(void)
{
	struct eos_store_options o = { .cache_bytes = 8 << 20 };
	struct eos_error err = { 0 };
	int r;

	eos_store_close(pu_st);
	pu_st = NULL;
	r = eos_store_open(pu_dir, &o, &pu_st, &err);
	ck_ok(r, err);
}

/* --- plain change sets ------------------------------------------------------------------------ */

static struct eos_stat
stat_at(uint64_t v, const char *path)
{
	struct eos_stat s;
	struct eos_error err = { 0 };
	int r = eos_store_stat(pu_st, pu_sbx, v, path, &s, &err);

	ck_ok(r, err);
	return s;
}

static size_t
op_len(const struct pu_op *op)
{
	return op->len ? op->len : strlen(op->data);
}

static int
cs_stage_one(struct eos_changeset *cs, const struct pu_op *op, struct eos_error *err)
{
	struct eos_attr a = eos_test_attr(op->mode);
	struct eos_stat s;

	switch (op->kind) {
	case PU_FILE:
		return eos_changeset_put_file_mem(cs, op->path, &a, op->data, op_len(op), err);
	case PU_DIR:
	case PU_OPAQUE:
		return eos_changeset_mkdir(cs, op->path, &a, op->kind == PU_OPAQUE, err);
	case PU_SYMLINK:
		return eos_changeset_symlink(cs, op->path, &a, op->data, err);
	case PU_REMOVE:
		return eos_changeset_remove(cs, op->path, err);
	case PU_MODE:
		s = stat_at(0, op->path);
		s.attr.mode = op->mode;
		return eos_changeset_set_attr(cs, op->path, &s.attr, err);
	case PU_RENAME:
		s = stat_at(0, op->data);
		return eos_changeset_put_file_content(cs, op->path, &s.attr, &s.content, err);
	case PU_HARDLINK:
		return eos_changeset_link(cs, op->path, op->data, err);
	case PU_RENAME_DIR:
		ck_abort_msg("'%s': PU_RENAME_DIR is for publishes only", op->path);
		break;
	case PU_END:
	default:
		ck_abort_msg("bad op kind %d", op->kind);
	}
	return -EINVAL;
}

static uint64_t
cs_commit(struct eos_changeset *cs, const struct pu_op *ops)
{
	struct eos_commit_result res = { 0 };
	struct eos_error err = { 0 };
	int r;

	for (; ops && ops->kind != PU_END; ops++) {
		r = cs_stage_one(cs, ops, &err);
		ck_assert_msg(r >= 0, "stage '%s': %s", ops->path, eos_error_message(&err, r));
	}
	r = eos_changeset_commit(cs, 0, &res, &err);
	ck_ok(r, err);
	return res.version;
}

uint64_t
pu_sandbox(const struct pu_op *ops)
{
	struct eos_attr root = eos_test_attr(0755);
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	struct eos_error err = { 0 };
	uint64_t v;
	int r;

	snprintf(pu_sbx, sizeof(pu_sbx), "t%u", sandbox_seq++);
	r = eos_changeset_new_sandbox(pu_st, pu_sbx, "test:publish", &root, &cs, &err);
	ck_ok(r, err);
	v = cs_commit(cs, ops);
	ck_assert_uint_eq(v, 1);
	return v;
}

uint64_t
pu_changeset(const struct pu_op *ops)
{
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	struct eos_error err = { 0 };
	int r = eos_changeset_new(pu_st, pu_sbx, &cs, &err);

	ck_ok(r, err);
	return cs_commit(cs, ops);
}

/* --- publishes -------------------------------------------------------------------------------- */

struct eos_publish *
pu_begin(const char *session, uint64_t base, const char *owner)
{
	struct eos_publish_options o = {
		.sandbox = pu_sbx,
		.session = session,
		.base = base,
		.owner = owner,
	};
	struct eos_publish *p = NULL;
	struct eos_error err = { 0 };
	int r = eos_publish_begin(pu_st, &o, &p, &err);

	ck_ok(r, err);
	ck_assert_ptr_nonnull(p);
	return p;
}

static int
pub_stage_file(struct eos_publish *p, const struct pu_op *op, struct eos_error *err)
{
	struct eos_publish_file f = {
		.attr = eos_test_attr(op->mode),
		.data = op->data,
		.len = op_len(op),
	};

	return eos_publish_put_file(p, op->path, &f, err);
}

static int
pub_stage_rename(struct eos_publish *p, const struct pu_op *op, struct eos_error *err)
{
	struct eos_stat s = stat_at(eos_publish_base(p), op->data);
	struct eos_publish_file f = {
		.attr = s.attr,
		.content = &s.content,
		.origin = op->data,
	};

	return eos_publish_put_file(p, op->path, &f, err);
}

struct copy_ctx {
	struct eos_publish *p;
	const char *to, *from;
	struct eos_error *err;
	int r;
};

static int pub_copy_tree(struct eos_publish *p, const char *to, const char *from,
			 struct eos_error *err);

/* One child of a renamed directory, as fs/publish.c stages it. */
static int
copy_child(void *ctx, const char *name, const struct eos_stat *st)
{
	struct copy_ctx *k = ctx;
	cleanup_free char *to = NULL, *from = NULL, *target = NULL;
	struct eos_publish_file f = { .attr = st->attr, .content = &st->content };
	uint64_t base = eos_publish_base(k->p);

	ck_assert_int_ge(asprintf(&to, "%s/%s", k->to, name), 0);
	ck_assert_int_ge(asprintf(&from, "%s/%s", k->from, name), 0);
	f.origin = from;
	if (st->kind == EOS_KIND_DIR)
		k->r = eos_publish_mkdir(k->p, to, &st->attr, true, k->err)
			       ?: pub_copy_tree(k->p, to, from, k->err);
	else if (st->kind == EOS_KIND_SYMLINK)
		k->r = eos_store_readlink(pu_st, pu_sbx, base, from, &target, k->err)
			       ?: eos_publish_symlink(k->p, to, &st->attr, target, k->err);
	else
		k->r = eos_publish_put_file(k->p, to, &f, k->err);
	return k->r < 0 ? 1 : 0;
}

static int
pub_copy_tree(struct eos_publish *p, const char *to, const char *from, struct eos_error *err)
{
	struct copy_ctx k = { .p = p, .to = to, .from = from, .err = err };
	int r = eos_store_readdir(pu_st, pu_sbx, eos_publish_base(p), from, NULL, copy_child, &k,
				  err);

	return k.r < 0 ? k.r : r < 0 ? r : 0;
}

static int
pub_stage_rename_dir(struct eos_publish *p, const struct pu_op *op, struct eos_error *err)
{
	struct eos_stat s = stat_at(eos_publish_base(p), op->data);
	int r = eos_publish_mkdir(p, op->path, &s.attr, true, err);

	r = r ?: eos_publish_set_origin(p, op->path, op->data, err);
	return r ?: pub_copy_tree(p, op->path, op->data, err);
}

static int
pub_stage_one(struct eos_publish *p, const struct pu_op *op, struct eos_error *err)
{
	struct eos_attr a = eos_test_attr(op->mode);
	struct eos_stat s;

	switch (op->kind) {
	case PU_FILE:
		return pub_stage_file(p, op, err);
	case PU_DIR:
	case PU_OPAQUE:
		return eos_publish_mkdir(p, op->path, &a, op->kind == PU_OPAQUE, err);
	case PU_SYMLINK:
		return eos_publish_symlink(p, op->path, &a, op->data, err);
	case PU_REMOVE:
		return eos_publish_remove(p, op->path, err);
	case PU_MODE:
		s = stat_at(eos_publish_base(p), op->path);
		s.attr.mode = op->mode;
		return eos_publish_set_attr(p, op->path, &s.attr, err);
	case PU_RENAME:
		return pub_stage_rename(p, op, err);
	case PU_RENAME_DIR:
		return pub_stage_rename_dir(p, op, err);
	case PU_HARDLINK:
		return eos_publish_link(p, op->path, op->data, err);
	case PU_END:
	default:
		ck_abort_msg("bad op kind %d", op->kind);
	}
	return -EINVAL;
}

void
pu_stage(struct eos_publish *p, const struct pu_op *ops)
{
	struct eos_error err = { 0 };
	int r;

	for (; ops && ops->kind != PU_END; ops++) {
		r = pub_stage_one(p, ops, &err);
		ck_assert_msg(r >= 0, "stage '%s': %s", ops->path, eos_error_message(&err, r));
	}
}

void
pu_stage_ranged(struct eos_publish *p, const char *path, const char *data,
		const struct eos_write_range *ranges, size_t n, const char *origin)
{
	struct eos_publish_file f = {
		.attr = eos_test_attr(0644),
		.data = data,
		.len = strlen(data),
		.ranges = ranges,
		.nranges = n,
		.origin = origin,
	};
	struct eos_error err = { 0 };
	int r = eos_publish_put_file(p, path, &f, &err);

	ck_ok(r, err);
}

enum eos_publish_status
pu_commit(struct eos_publish *p, struct eos_publish_result *res)
{
	struct eos_error err = { 0 };
	int r;

	memset(res, 0, sizeof(*res));
	r = eos_publish_commit(p, res, &err);
	ck_ok(r, err);
	ck_assert_msg(res->status >= EOS_PUBLISH_PUBLISHED && res->status <= EOS_PUBLISH_REJECTED,
		      "bad status %d", res->status);
	if (res->status == EOS_PUBLISH_PUBLISHED)
		ck_assert_uint_ne(res->version, 0);
	else
		ck_assert_uint_eq(res->version, 0);
	if (res->status == EOS_PUBLISH_REJECTED)
		ck_assert_msg(res->nconflicts > 0, "rejected without conflicts");
	else
		ck_assert_msg(res->nconflicts == 0, "%s", pu_result_str(res));
	return res->status;
}

enum eos_publish_status
pu_publish(const char *session, uint64_t base, const char *owner, const struct pu_op *ops,
	   struct eos_publish_result *res)
{
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = pu_begin(session, base, owner);
	struct eos_publish_result local;
	enum eos_publish_status s;

	pu_stage(p, ops);
	s = pu_commit(p, res ? res : &local);
	if (!res)
		eos_publish_result_release(&local);
	return s;
}

void
pu_session(const char *name, uint64_t v)
{
	struct eos_error err = { 0 };
	int r = eos_store_session_create(pu_st, pu_sbx, name, v, NULL, &err);

	ck_ok(r, err);
}

void
pu_session_record(const char *name, const char *key, const char *value)
{
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;
	struct eos_error err = { 0 };
	int r = eos_session_batch_new(pu_st, pu_sbx, name, &b, &err);

	ck_ok(r, err);
	r = eos_session_batch_put(b, key, strlen(key), value, strlen(value));
	ck_assert_int_eq(r, 0);
	r = eos_session_batch_write(b, true, &err);
	ck_ok(r, err);
}

/* --- reading ---------------------------------------------------------------------------------- */

char *
pu_read(uint64_t v, const char *path, size_t *len)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	struct eos_error err = { 0 };
	cleanup_free char *buf = NULL;
	uint64_t size;
	int r = eos_store_file_open(pu_st, pu_sbx, v, path, &f, &err);

	if (r == -ENOENT)
		return NULL;
	ck_assert_msg(r >= 0, "open '%s' at %llu: %s", path, (unsigned long long)v,
		      eos_error_message(&err, r));
	size = eos_file_size(f);
	buf = malloc(size + 1);
	ck_assert_ptr_nonnull(buf);
	for (uint64_t off = 0; off < size;) {
		ssize_t n = eos_file_pread(f, buf + off, size - off, off, &err);

		ck_assert_msg(n > 0, "read '%s': %s", path, eos_error_message(&err, (int)n));
		off += (uint64_t)n;
	}
	buf[size] = '\0';
	if (len)
		*len = size;
	return TAKE_PTR(buf);
}

void
pu_expect_file_at(int line, uint64_t v, const char *path, const char *data, size_t len,
		  unsigned mode)
{
	struct eos_stat s;
	struct eos_error err = { 0 };
	cleanup_free char *got = NULL;
	size_t n = 0;
	int r = eos_store_stat(pu_st, pu_sbx, v, path, &s, &err);

	ck_assert_msg(r == 0, "line %d: stat '%s': %s", line, path, eos_error_message(&err, r));
	ck_assert_msg(s.kind == EOS_KIND_FILE, "line %d: '%s' is not a file (%d)", line, path,
		      s.kind);
	ck_assert_msg((s.attr.mode & 07777) == mode, "line %d: '%s' mode %o, want %o", line, path,
		      s.attr.mode, mode);
	if (!len)
		len = strlen(data);
	got = pu_read(v, path, &n);
	ck_assert_msg(got && n == len && memcmp(got, data, len) == 0,
		      "line %d: '%s' holds '%s' (%zu bytes), want '%.*s' (%zu bytes)", line, path,
		      got ? got : "(absent)", n, (int)len, data, len);
}

void
pu_expect_absent_at(int line, uint64_t v, const char *path)
{
	struct eos_stat s;
	int r = eos_store_stat(pu_st, pu_sbx, v, path, &s, NULL);

	ck_assert_msg(r == -ENOENT || r == -ENOTDIR, "line %d: '%s' exists (%d)", line, path, r);
}

enum eos_kind
pu_kind(uint64_t v, const char *path)
{
	struct eos_stat s;
	int r = eos_store_stat(pu_st, pu_sbx, v, path, &s, NULL);

	if (r == -ENOENT || r == -ENOTDIR)
		return EOS_KIND_NONE;
	ck_assert_msg(r == 0, "stat '%s': %d", path, r);
	return s.kind;
}

uint64_t
pu_head(void)
{
	struct eos_sandbox_info info;
	struct eos_error err = { 0 };
	int r = eos_store_sandbox_get(pu_st, pu_sbx, &info, &err);

	ck_ok(r, err);
	return info.head;
}

size_t
pu_layer_count(void)
{
	cleanup_free struct eos_layer_info *ls = NULL;
	struct eos_error err = { 0 };
	size_t n = 0;
	int r = eos_store_layer_list(pu_st, pu_sbx, &ls, &n, &err);

	ck_ok(r, err);
	return n;
}

struct eos_layer_info
pu_layer(uint64_t v)
{
	struct eos_layer_info info;
	struct eos_error err = { 0 };
	int r = eos_store_layer_get(pu_st, pu_sbx, v, &info, &err);

	ck_ok(r, err);
	return info;
}

static void
fsck_violation(void *ctx, const char *kind, const char *message)
{
	(void)ctx;
	ck_abort_msg("fsck: %s: %s", kind, message);
}

void
pu_fsck_clean(void)
{
	struct eos_fsck_result res = { 0 };
	struct eos_error err = { 0 };
	int r = eos_store_fsck(pu_st, EOS_FSCK_VERIFY_CHUNKS, fsck_violation, NULL, &res, &err);

	ck_ok(r, err);
	ck_assert_uint_eq(res.violations, 0);
}

/* --- conflicts -------------------------------------------------------------------------------- */

const struct eos_conflict *
pu_conflict(const struct eos_publish_result *res, const char *path)
{
	for (size_t i = 0; i < res->nconflicts; i++)
		if (res->conflicts[i].path && strcmp(res->conflicts[i].path, path) == 0)
			return &res->conflicts[i];
	return NULL;
}

const struct eos_conflict *
pu_expect_conflict_at(int line, const struct eos_publish_result *res, const char *path,
		      const char *kind)
{
	const struct eos_conflict *c;

	ck_assert_msg(res->status == EOS_PUBLISH_REJECTED, "line %d: not rejected: %s", line,
		      pu_result_str(res));
	c = pu_conflict(res, path);
	ck_assert_msg(c, "line %d: no conflict on '%s': %s", line, path, pu_result_str(res));
	ck_assert_msg(strcmp(eos_conflict_kind_name(c->kind), kind) == 0,
		      "line %d: conflict on '%s' is '%s', want '%s': %s", line, path,
		      eos_conflict_kind_name(c->kind), kind, pu_result_str(res));
	ck_assert_msg(c->message && strstr(c->message, path),
		      "line %d: conflict message '%s' does not name '%s'", line,
		      c->message ? c->message : "(null)", path);
	return c;
}

const char *
pu_result_str(const struct eos_publish_result *res)
{
	static char buf[4096];
	size_t off;

	off = (size_t)snprintf(buf, sizeof(buf), "%s (base %llu, head %llu, version %llu)",
			       eos_publish_status_name(res->status), (unsigned long long)res->base,
			       (unsigned long long)res->head, (unsigned long long)res->version);
	for (size_t i = 0; i < res->nconflicts && off < sizeof(buf); i++) {
		const struct eos_conflict *c = &res->conflicts[i];

		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "; %s '%s'%s%s: %s",
					eos_conflict_kind_name(c->kind), c->path,
					c->detail ? " detail " : "", c->detail ? c->detail : "",
					c->message ? c->message : "");
	}
	return buf;
}

void
pu_file_fp(const void *data, size_t len, unsigned mode, char out[EOS_FINGERPRINT_MAX])
{
	struct eos_digest d;
	char hex[EOS_DIGEST_HEX_LEN + 1];

	ck_assert_int_eq(eos_sha256(data, len, &d), 0);
	eos_digest_hex(&d, hex);
	snprintf(out, EOS_FINGERPRINT_MAX, "file:%04o:%s", mode, hex);
}

/* --- state ------------------------------------------------------------------------------------ */

static int
delta_append(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct eos_buf *b = ctx;

	ck_assert_int_eq(eos_buf_append_lp(b, key, klen), 0);
	ck_assert_int_eq(eos_buf_append_lp(b, val, vlen), 0);
	return 0;
}

uint64_t
pu_session_lease(const char *name)
{
	cleanup_free struct eos_lease_info *ls = NULL;
	struct eos_error err = { 0 };
	char want[EOS_LEASE_NAME_MAX + 1];
	uint64_t v = 0;
	size_t n = 0;
	int r = eos_store_lease_list(pu_st, pu_sbx, &ls, &n, &err);

	ck_ok(r, err);
	snprintf(want, sizeof(want), "session:%s", name);
	for (size_t i = 0; i < n; i++)
		if (strcmp(ls[i].name, want) == 0)
			v = ls[i].version;
	return v;
}

void
pu_state_read(struct pu_state *s, const char *session)
{
	struct eos_error err = { 0 };
	int r;

	memset(s, 0, sizeof(*s));
	eos_buf_init(&s->delta);
	s->head = pu_head();
	s->layers = pu_layer_count();
	s->tree = eos_test_tree_digest(pu_st, pu_sbx, s->head);
	if (!session)
		return;
	r = eos_store_session_get(pu_st, pu_sbx, session, &s->session, &err);
	ck_assert_msg(r == 0 || r == -ENOENT, "%s", eos_error_message(&err, r));
	s->has_session = r == 0;
	if (!s->has_session)
		return;
	s->lease = pu_session_lease(session);
	r = eos_store_session_scan(pu_st, pu_sbx, session, delta_append, &s->delta, &err);
	ck_ok(r, err);
}

void
pu_state_release(struct pu_state *s)
{
	eos_buf_release(&s->delta);
}

void
pu_state_expect_same_at(int line, const struct pu_state *a, const struct pu_state *b)
{
	ck_assert_msg(a->head == b->head, "line %d: head moved %llu -> %llu", line,
		      (unsigned long long)a->head, (unsigned long long)b->head);
	ck_assert_msg(a->layers == b->layers, "line %d: layers %zu -> %zu", line, a->layers,
		      b->layers);
	ck_assert_msg(eos_digest_eq(&a->tree, &b->tree), "line %d: the head tree changed", line);
	ck_assert_msg(a->has_session == b->has_session, "line %d: session appeared/vanished", line);
	if (!a->has_session)
		return;
	ck_assert_msg(a->session.version == b->session.version &&
			      a->session.created_ns == b->session.created_ns,
		      "line %d: session record changed (version %llu -> %llu)", line,
		      (unsigned long long)a->session.version,
		      (unsigned long long)b->session.version);
	ck_assert_msg(a->lease == b->lease, "line %d: session lease moved", line);
	ck_assert_msg(a->delta.len == b->delta.len &&
			      (a->delta.len == 0 ||
			       memcmp(a->delta.data, b->delta.data, a->delta.len) == 0),
		      "line %d: session delta records changed", line);
}

size_t
pu_delta_count(const char *name)
{
	return eos_test_session_records(pu_st, pu_sbx, name);
}

/* --- blame ------------------------------------------------------------------------------------ */

void
pu_blame(uint64_t v, const char *path, struct eos_blame_range **ret, size_t *n)
{
	struct eos_error err = { 0 };
	int r = eos_store_blame(pu_st, pu_sbx, v, path, ret, n, &err);

	ck_assert_msg(r >= 0, "blame '%s' at %llu: %s", path, (unsigned long long)v,
		      eos_error_message(&err, r));
}

const char *
pu_line_owner(const struct eos_blame_range *r, size_t n, uint32_t line)
{
	for (size_t i = 0; i < n; i++)
		if (line >= r[i].start_line && line < r[i].start_line + r[i].line_count)
			return r[i].owner;
	ck_abort_msg("no blame range covers line %u", line);
	return NULL;
}

const char *
pu_line_owner_at(uint64_t v, const char *path, uint32_t line)
{
	static char owner[EOS_OWNER_MAX + 1];
	cleanup_free struct eos_blame_range *r = NULL;
	size_t n = 0;

	pu_blame(v, path, &r, &n);
	snprintf(owner, sizeof(owner), "%s", pu_line_owner(r, n, line));
	return owner;
}

/* Ranges are sorted, contiguous from line 1, coalesced and cover exactly lines lines. */
static void
blame_check_shape(int line, const struct eos_blame_range *r, size_t n, uint32_t lines)
{
	uint32_t next = 1;

	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(r[i].start_line == next && r[i].line_count > 0,
			      "line %d: blame range %zu starts at %u (count %u), want %u", line, i,
			      r[i].start_line, r[i].line_count, next);
		ck_assert_msg(r[i].owner, "line %d: blame range without owner", line);
		if (i > 0)
			ck_assert_msg(strcmp(r[i].owner, r[i - 1].owner) != 0,
				      "line %d: blame ranges %zu and %zu not coalesced", line,
				      i - 1, i);
		next += r[i].line_count;
	}
	ck_assert_msg(next - 1 == lines, "line %d: blame covers %u lines, the file has %u", line,
		      next - 1, lines);
}

void
pu_expect_owners_at(int line, uint64_t v, const char *path, const char *const *owners,
		    size_t nlines)
{
	cleanup_free struct eos_blame_range *r = NULL;
	size_t n = 0;

	pu_blame(v, path, &r, &n);
	blame_check_shape(line, r, n, (uint32_t)nlines);
	for (size_t i = 0; i < nlines; i++) {
		const char *got = pu_line_owner(r, n, (uint32_t)(i + 1));

		ck_assert_msg(strcmp(got, owners[i]) == 0,
			      "line %d: '%s' line %zu is owned by '%s', want '%s'", line, path,
			      i + 1, got, owners[i]);
	}
}

uint32_t
pu_line_count(const void *data, size_t len)
{
	const char *p = data;
	uint32_t n = 0;

	for (size_t i = 0; i < len; i++)
		if (p[i] == '\n')
			n++;
	if (len && p[len - 1] != '\n')
		n++;
	return n;
}
