/* SPDX-License-Identifier: MIT */
/*
 * Workspace session records (EOS_CF_SESSION) and data directories.
 *
 * Keys: be64 sbx · name · 0x00 · 'R'          session record: u8 1, le64 version, le64 created
 *       be64 sbx · name · 0x00 · 'D' · key    delta record (opaque to the store, owned by fs/)
 * The lease "session:<name>" pins the version; record and lease are written in one batch.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"
#include "common/path.h"

#include "store/kv.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

enum {
	TAG_RECORD = 'R',
	TAG_DELTA = 'D',
	RECORD_FORMAT = 1,
	RECORD_LEN = 17,
	DELTA_KEY_MAX = 1024,
	SESSION_CREATE_BYTES = 512, /* about what its record and lease add */
};

static const char LEASE_PREFIX[] = "session:";

int
eos_session_name_check(const char *name, struct eos_error *err)
{
	return eos_store_name_check("session name", name, EOS_SESSION_NAME_MAX, err);
}

/* be64 sbx · name · 0 · tag */
static int
session_key(struct eos_buf *out, uint64_t sbx, const char *name, char tag)
{
	int r = eos_buf_append_be64(out, sbx);

	r = r ?: eos_buf_append(out, name, strlen(name) + 1);
	return r ?: eos_buf_append_u8(out, (uint8_t)tag);
}

static int
session_resolve(struct eos_store *st, const char *sandbox, const char *name, uint64_t *ret_sbx,
		struct eos_error *err)
{
	int r = eos_session_name_check(name, err);

	return r ?: eos_sandbox_resolve(st, sandbox, ret_sbx, err);
}

static int
record_decode(const uint8_t *v, size_t n, const char *name, struct eos_session_info *ret)
{
	if (n != RECORD_LEN || v[0] != RECORD_FORMAT)
		return -EBADMSG;
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->name, sizeof(ret->name), "%s", name);
	ret->version = eos_get_le64(v + 1);
	ret->created_ns = (int64_t)eos_get_le64(v + 9);
	return 0;
}

static int
record_read(struct eos_store *st, uint64_t sbx, const char *sandbox, const char *name,
	    struct eos_session_info *ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 }, val = { 0 };
	int r = session_key(&key, sbx, name, TAG_RECORD);

	if (r < 0)
		return eos_error_set(err, r, "session '%s': out of memory", name);
	r = eos_kv_get(st->kv, NULL, EOS_CF_SESSION, key.data, key.len, &val, err);
	if (r == -ENOENT)
		return eos_error_set(err, r, "session '%s' of sandbox '%s' does not exist", name,
				     sandbox);
	if (r < 0)
		return r;
	if (record_decode(val.data, val.len, name, ret) < 0)
		return eos_error_set(err, -EBADMSG, "session '%s' of sandbox '%s': corrupt record",
				     name, sandbox);
	return 0;
}

int
eos_store_session_get(struct eos_store *st, const char *sandbox, const char *name,
		      struct eos_session_info *ret, struct eos_error *err)
{
	uint64_t sbx;
	int r = session_resolve(st, sandbox, name, &sbx, err);

	return r ?: record_read(st, sbx, sandbox, name, ret, err);
}

static int
lease_name(const char *name, char *out, size_t size)
{
	return snprintf(out, size, "%s%s", LEASE_PREFIX, name) < (int)size ? 0 : -ENAMETOOLONG;
}

/* The record's key and value: version v, created now. */
static int
record_encode(struct eos_buf *key, struct eos_buf *val, uint64_t sbx, const char *name, uint64_t v)
{
	int r = session_key(key, sbx, name, TAG_RECORD);

	r = r ?: eos_buf_append_u8(val, RECORD_FORMAT);
	r = r ?: eos_buf_append_le64(val, v);
	return r ?: eos_buf_append_le64(val, (uint64_t)eos_store_now_ns());
}

static int
record_write(struct eos_store *st, uint64_t sbx, const char *name, uint64_t v,
	     struct eos_session_info *ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 }, val = { 0 };
	int r = record_encode(&key, &val, sbx, name, v);

	if (r < 0)
		return eos_error_set(err, r, "session '%s': out of memory", name);
	r = eos_kv_put(st->kv, EOS_CF_SESSION, key.data, key.len, val.data, val.len, true, err);
	if (r < 0 || !ret)
		return r;
	record_decode(val.data, val.len, name, ret);
	return 0;
}

int
eos_store_session_create(struct eos_store *st, const char *sandbox, const char *name, uint64_t v,
			 struct eos_session_info *ret, struct eos_error *err)
{
	char lease[EOS_LEASE_NAME_MAX + 1];
	struct eos_session_info old;
	uint64_t sbx, pinned = 0;
	int r = session_resolve(st, sandbox, name, &sbx, err);

	if (r < 0)
		return r;
	r = record_read(st, sbx, sandbox, name, &old, NULL);
	if (r == 0)
		return eos_error_set(err, -EEXIST, "session '%s' of sandbox '%s' already exists",
				     name, sandbox);
	if (lease_name(name, lease, sizeof(lease)) < 0)
		return eos_error_set(err, -EINVAL, "session name '%s' is too long", name);
	r = eos_space_check(&st->space, EOS_SPACE_GROW, SESSION_CREATE_BYTES, err);
	if (r < 0)
		return eos_error_prefix(err, r, "session '%s'", name);
	r = eos_store_lease_acquire(st, sandbox, lease, v, &pinned, err);
	if (r < 0)
		return eos_error_prefix(err, r, "session '%s'", name);
	r = record_write(st, sbx, name, pinned, ret, err);
	if (r < 0)
		eos_store_lease_release(st, sandbox, lease, NULL);
	return r;
}

struct list_ctx {
	struct eos_session_info *v;
	size_t n, cap;
	size_t plen;
};

static int
list_one(void *ctx, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	struct list_ctx *c = ctx;
	const uint8_t *name = k + c->plen;
	const uint8_t *nul = memchr(name, 0, klen - c->plen);
	size_t nlen = nul ? (size_t)(nul - name) : 0;

	/* only "name · 0 · R" keys: the name ends at the first NUL, the tag follows it */
	if (!nul || klen != c->plen + nlen + 2 || nul[1] != TAG_RECORD)
		return 0;
	if (nlen == 0 || nlen > EOS_SESSION_NAME_MAX)
		return -EBADMSG;
	if (eos_buf_array_reserve(&c->v, &c->cap, c->n + 1, sizeof(*c->v), 8) < 0)
		return -ENOMEM;
	char nm[EOS_SESSION_NAME_MAX + 1];
	memcpy(nm, name, nlen);
	nm[nlen] = 0;
	if (record_decode(v, vlen, nm, &c->v[c->n]) < 0)
		return -EBADMSG;
	c->n++;
	return 0;
}

int
eos_store_session_list(struct eos_store *st, const char *sandbox, struct eos_session_info **ret,
		       size_t *ret_n, struct eos_error *err)
{
	struct list_ctx c = { .plen = 8 };
	uint8_t lo[8], hi[8];
	uint64_t sbx;
	int r = eos_sandbox_resolve(st, sandbox, &sbx, err);

	if (r < 0)
		return r;
	eos_put_be64(lo, sbx);
	eos_put_be64(hi, sbx + 1);
	struct eos_kv_scan s = { .cf = EOS_CF_SESSION,
				 .lo = lo,
				 .llen = 8,
				 .hi = hi,
				 .hlen = 8,
				 .values = true,
				 .fn = list_one,
				 .ctx = &c };
	r = eos_kv_scan(st->kv, &s, err);
	if (r < 0) {
		free(c.v);
		return r == -EBADMSG ? eos_error_set(err, r, "sandbox '%s': corrupt session record",
						     sandbox)
				     : r;
	}
	*ret = c.v;
	*ret_n = c.n;
	return 0;
}

static int
session_dir_path(struct eos_store *st, const char *sandbox, const char *name, char **ret)
{
	return asprintf(ret, "%s/sessions/%s/%s", st->dir, sandbox, name) < 0 ? -ENOMEM : 0;
}

int
eos_session_dirs_remove(struct eos_store *st, const char *sandbox, const char *name,
			struct eos_error *err)
{
	cleanup_free char *dir = NULL;
	int r;

	if (session_dir_path(st, sandbox, name ? name : "", &dir) < 0)
		return eos_error_set(err, -ENOMEM, "out of memory");
	r = eos_rm_rf(dir);
	if (r < 0)
		return eos_error_set(err, r, "remove session directory '%s': %s", dir,
				     strerror(-r));
	return 0;
}

static int
records_delete(struct eos_store *st, uint64_t sbx, const char *name, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf lo = { 0 }, hi = { 0 };
	EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *b = NULL;
	int r = eos_buf_append_be64(&lo, sbx);

	r = r ?: eos_buf_append(&lo, name, strlen(name) + 1);
	r = r ?: eos_buf_append(&hi, lo.data, lo.len);
	r = r ?: eos_buf_append_u8(&hi, 0xff);
	r = r ?: eos_kv_batch_new(&b);
	if (r < 0)
		return eos_error_set(err, r, "session '%s': out of memory", name);
	eos_kv_batch_delete_range(b, EOS_CF_SESSION, lo.data, lo.len, hi.data, hi.len);
	return eos_kv_batch_write(st->kv, b, true, err);
}

int
eos_session_stage_reset(struct eos_kv_batch *b, uint64_t sbx, const char *name, uint64_t v,
			int64_t created_ns)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf lo = { 0 }, hi = { 0 }, val = { 0 };
	char lease[EOS_LEASE_NAME_MAX + 1];
	int r = session_key(&lo, sbx, name, TAG_DELTA);

	r = r ?: session_key(&hi, sbx, name, TAG_DELTA + 1);
	r = r ?: lease_name(name, lease, sizeof(lease));
	if (r < 0)
		return r;
	eos_kv_batch_delete_range(b, EOS_CF_SESSION, lo.data, lo.len, hi.data, hi.len);
	eos_buf_truncate(&lo, 0);
	r = session_key(&lo, sbx, name, TAG_RECORD);
	r = r ?: eos_buf_append_u8(&val, RECORD_FORMAT);
	r = r ?: eos_buf_append_le64(&val, v);
	r = r ?: eos_buf_append_le64(&val, (uint64_t)created_ns);
	if (r < 0)
		return r;
	eos_kv_batch_put(b, EOS_CF_SESSION, lo.data, lo.len, val.data, val.len);
	return eos_lease_stage(b, sbx, lease, v);
}

struct copy_ctx {
	struct eos_kv_batch *b;
	struct eos_buf key; /* the new session's delta prefix, then each key */
	size_t prefix_len;
};

/* eos_session_scan_fn: key is relative to the session. */
static int
copy_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct copy_ctx *c = ctx;
	int r;

	eos_buf_truncate(&c->key, c->prefix_len);
	r = eos_buf_append(&c->key, key, klen);
	if (r == 0)
		eos_kv_batch_put(c->b, EOS_CF_SESSION, c->key.data, c->key.len, val, vlen);
	return r;
}

/* Stage a copy of every delta record of from as name's. */
static int
copy_records(struct eos_store *st, const char *sandbox, uint64_t sbx, const char *from,
	     const char *name, struct eos_kv_batch *b, struct eos_error *err)
{
	struct copy_ctx c = { .b = b };
	int r = session_key(&c.key, sbx, name, TAG_DELTA);

	c.prefix_len = c.key.len;
	r = r ?: eos_store_session_scan(st, sandbox, from, copy_one, &c, err);
	eos_buf_release(&c.key);
	return r;
}

static int
copy_write(struct eos_store *st, uint64_t sbx, const char *name,
	   const struct eos_session_info *from, struct eos_kv_batch *b,
	   struct eos_session_info *ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 }, val = { 0 };
	char lease[EOS_LEASE_NAME_MAX + 1];
	int r = record_encode(&key, &val, sbx, name, from->version);

	r = r ?: lease_name(name, lease, sizeof(lease));
	r = r ?: eos_lease_stage(b, sbx, lease, from->version);
	if (r < 0)
		return eos_error_set(err, r, "session '%s': out of memory", name);
	eos_kv_batch_put(b, EOS_CF_SESSION, key.data, key.len, val.data, val.len);
	r = eos_space_check(&st->space, EOS_SPACE_GROW, eos_kv_batch_bytes(b), err);
	r = r ?: eos_kv_batch_write(st->kv, b, true, err);
	if (r == 0 && ret)
		record_decode(val.data, val.len, name, ret);
	return r;
}

int
eos_store_session_copy(struct eos_store *st, const char *sandbox, const char *from,
		       const char *name, struct eos_session_info *ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *b = NULL;
	struct eos_session_info src, old;
	uint64_t sbx;
	int r = session_resolve(st, sandbox, name, &sbx, err);

	r = r ?: eos_session_name_check(from, err);
	r = r ?: record_read(st, sbx, sandbox, from, &src, err);
	if (r < 0)
		return r;
	if (record_read(st, sbx, sandbox, name, &old, NULL) == 0)
		return eos_error_set(err, -EEXIST, "session '%s' of sandbox '%s' already exists",
				     name, sandbox);
	if (eos_kv_batch_new(&b) < 0)
		return eos_error_set(err, -ENOMEM, "session '%s': out of memory", name);
	/* under the writer lock, as a lease is acquired: squash sees no lease or a valid one */
	pthread_mutex_lock(&st->write_lock);
	r = copy_records(st, sandbox, sbx, from, name, b, err);
	r = r ?: copy_write(st, sbx, name, &src, b, ret, err);
	pthread_mutex_unlock(&st->write_lock);
	return r < 0 ? eos_error_prefix(err, r, "fork session '%s' as '%s'", from, name) : 0;
}

int
eos_store_session_remove(struct eos_store *st, const char *sandbox, const char *name,
			 struct eos_error *err)
{
	char lease[EOS_LEASE_NAME_MAX + 1];
	struct eos_session_info info;
	uint64_t sbx;
	int r = session_resolve(st, sandbox, name, &sbx, err);

	r = r ?: record_read(st, sbx, sandbox, name, &info, err);
	r = r ?: records_delete(st, sbx, name, err);
	if (r < 0)
		return r;
	if (lease_name(name, lease, sizeof(lease)) == 0)
		eos_store_lease_release(st, sandbox, lease, NULL);
	return eos_session_dirs_remove(st, sandbox, name, err);
}

int
eos_store_session_dir(struct eos_store *st, const char *sandbox, const char *name, char **ret,
		      struct eos_error *err)
{
	cleanup_free char *dir = NULL;
	uint64_t sbx;
	int r = session_resolve(st, sandbox, name, &sbx, err);

	if (r < 0)
		return r;
	if (session_dir_path(st, sandbox, name, &dir) < 0)
		return eos_error_set(err, -ENOMEM, "session '%s': out of memory", name);
	r = eos_mkdir_parents(dir, 0700, true);
	if (r < 0)
		return eos_error_set(err, r, "create session directory '%s': %s", dir,
				     strerror(-r));
	*ret = TAKE_PTR(dir);
	return 0;
}

struct scan_ctx {
	size_t plen;
	eos_session_scan_fn fn;
	void *ctx;
	int stop; /* the callback's positive return value */
};

static int
scan_one(void *ctx, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	struct scan_ctx *c = ctx;
	int r = c->fn(c->ctx, k + c->plen, klen - c->plen, v, vlen);

	if (r > 0) {
		c->stop = r;
		return -ECANCELED; /* eos_kv_scan stops on negative values only */
	}
	return r;
}

int
eos_store_session_scan(struct eos_store *st, const char *sandbox, const char *name,
		       eos_session_scan_fn fn, void *ctx, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf lo = { 0 }, hi = { 0 };
	uint64_t sbx;
	int r = session_resolve(st, sandbox, name, &sbx, err);

	r = r ?: session_key(&lo, sbx, name, TAG_DELTA);
	r = r ?: session_key(&hi, sbx, name, TAG_DELTA + 1);
	if (r < 0)
		return r;
	struct scan_ctx c = { .plen = lo.len, .fn = fn, .ctx = ctx };
	struct eos_kv_scan s = { .cf = EOS_CF_SESSION,
				 .lo = lo.data,
				 .llen = lo.len,
				 .hi = hi.data,
				 .hlen = hi.len,
				 .values = true,
				 .fn = scan_one,
				 .ctx = &c };
	r = eos_kv_scan(st->kv, &s, err);
	return c.stop ? c.stop : r;
}

/*
 * A batch is the list of its puts and deletes (u8 op · lp key · lp value, keys relative to the
 * session), which is all a view that journals it needs; the store's batch is built from it only
 * when it is written.
 */
struct eos_session_batch {
	struct eos_store *st;
	bool puts;    /* b holds a put (a batch of deletes only is written at any fill level) */
	bool freeing; /* … or one that frees space (eos_session_batch_freeing) */
	size_t n;     /* puts and deletes held */
	struct eos_buf prefix;
	struct eos_buf key;
	struct eos_buf ops;
};

int
eos_session_batch_new(struct eos_store *st, const char *sandbox, const char *name,
		      struct eos_session_batch **ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;
	uint64_t sbx;
	int r = session_resolve(st, sandbox, name, &sbx, err);

	if (r < 0)
		return r;
	b = calloc(1, sizeof(*b));
	if (!b || session_key(&b->prefix, sbx, name, TAG_DELTA) < 0)
		return eos_error_set(err, -ENOMEM, "session '%s': out of memory", name);
	b->st = st;
	*ret = TAKE_PTR(b);
	return 0;
}

static int
record_op(struct eos_session_batch *b, uint8_t op, const void *key, size_t klen, const void *val,
	  size_t vlen)
{
	size_t old = b->ops.len;
	int r = klen == 0 || klen > DELTA_KEY_MAX ? -EINVAL : 0;

	r = r ?: eos_buf_append_u8(&b->ops, op);
	r = r ?: eos_buf_append_lp(&b->ops, key, klen);
	r = r ?: eos_buf_append_lp(&b->ops, val, vlen);
	if (r < 0) {
		eos_buf_truncate(&b->ops, old);
		return r;
	}
	b->n++;
	return 0;
}

int
eos_session_batch_put(struct eos_session_batch *b, const void *key, size_t klen, const void *val,
		      size_t vlen)
{
	int r = record_op(b, EOS_SESSION_OP_PUT, key, klen, val, vlen);

	if (r == 0)
		b->puts = true;
	return r;
}

int
eos_session_batch_delete(struct eos_session_batch *b, const void *key, size_t klen)
{
	return record_op(b, EOS_SESSION_OP_DELETE, key, klen, NULL, 0);
}

const void *
eos_session_batch_ops(const struct eos_session_batch *b, size_t *ret_len)
{
	*ret_len = b->ops.len;
	return b->ops.data;
}

/* About what b adds to the store: its records with their full keys. */
static uint64_t
batch_bytes(const struct eos_session_batch *b)
{
	return b->ops.len + b->n * b->prefix.len;
}

bool
eos_session_batch_frees(const struct eos_session_batch *b)
{
	return b->freeing || !b->puts;
}

int
eos_session_batch_room(struct eos_session_batch *b, struct eos_error *err)
{
	if (eos_session_batch_frees(b))
		return 0;
	return eos_space_check(&b->st->space, EOS_SPACE_RECORD, batch_bytes(b), err);
}

void
eos_session_batch_clear(struct eos_session_batch *b)
{
	eos_buf_truncate(&b->ops, 0);
	b->n = 0;
	b->puts = b->freeing = false;
}

int
eos_session_ops_next(const uint8_t **p, size_t *left, struct eos_session_op *ret)
{
	struct eos_reader rd = { .p = *p, .left = *left };
	int r;

	if (*left == 0)
		return 0;
	r = eos_reader_u8(&rd, &ret->op);
	r = r ?: eos_reader_lp(&rd, DELTA_KEY_MAX, &ret->key, &ret->klen);
	r = r ?: eos_reader_lp(&rd, UINT32_MAX, &ret->val, &ret->vlen);
	if (r == 0 && (ret->klen == 0 || (ret->op != EOS_SESSION_OP_PUT &&
					  (ret->op != EOS_SESSION_OP_DELETE || ret->vlen))))
		r = -EBADMSG;
	if (r < 0)
		return r;
	*p = rd.p;
	*left = rd.left;
	return 1;
}

/* The store's batch of b's records, their keys under the session's prefix. */
static int
build_kv(struct eos_session_batch *b, struct eos_kv_batch *kb)
{
	const uint8_t *p = b->ops.data;
	size_t left = b->ops.len;
	struct eos_session_op o;
	int r;

	while ((r = eos_session_ops_next(&p, &left, &o)) > 0) {
		eos_buf_truncate(&b->key, 0);
		r = eos_buf_append(&b->key, b->prefix.data, b->prefix.len);
		r = r ?: eos_buf_append(&b->key, o.key, o.klen);
		if (r < 0)
			return r;
		if (o.op == EOS_SESSION_OP_PUT)
			eos_kv_batch_put(kb, EOS_CF_SESSION, b->key.data, b->key.len, o.val,
					 o.vlen);
		else
			eos_kv_batch_delete(kb, EOS_CF_SESSION, b->key.data, b->key.len);
	}
	return r;
}

/*
 * Puts are small records: refused only below the hard reserve (store/space.h), so that the view
 * keeps working on what exists while the soft reserve stops new data; deletes always go through.
 * A refused batch is dropped like a written one: nothing of it is applied.
 */
int
eos_session_batch_write(struct eos_session_batch *b, bool sync, struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *kb = NULL;
	int r = eos_session_batch_room(b, err);

	if (r == 0 && (b->n > 0 || sync)) {
		r = eos_kv_batch_new(&kb) < 0 ? -ENOMEM : build_kv(b, kb);
		if (r < 0)
			eos_error_set(err, r, "session batch: %s", strerror(-r));
		else
			r = eos_kv_batch_write(b->st->kv, kb, sync, err);
	}
	eos_session_batch_clear(b);
	return r;
}

void
eos_session_batch_freeing(struct eos_session_batch *b)
{
	b->freeing = true;
}

void
eos_session_batch_free(struct eos_session_batch *b)
{
	if (!b)
		return;
	eos_buf_release(&b->prefix);
	eos_buf_release(&b->key);
	eos_buf_release(&b->ops);
	free(b);
}
