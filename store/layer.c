/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"

#include "store/kv.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

enum {
	LAYER_RECORD_FORMAT = 1,
	LAYER_KEY_LEN = 16,
};

int
eos_layer_key(struct eos_buf *out, uint64_t sbx, uint64_t version)
{
	uint8_t k[LAYER_KEY_LEN];

	eos_put_be64(k, sbx);
	eos_put_be64(k + 8, version);
	return eos_buf_append(out, k, sizeof(k));
}

int
eos_layer_record_encode(const struct eos_layer_info *l, struct eos_buf *out)
{
	size_t old = out->len;
	int r = 0;

	r = r ?: eos_buf_append_u8(out, LAYER_RECORD_FORMAT);
	r = r ?: eos_buf_append_le64(out, l->parent);
	r = r ?: eos_buf_append_le64(out, l->squashed_from);
	r = r ?: eos_buf_append_le64(out, (uint64_t)l->created_ns);
	r = r ?: eos_buf_append_lp(out, l->owner, strnlen(l->owner, EOS_OWNER_MAX));
	r = r ?: eos_buf_append_le64(out, l->created);
	r = r ?: eos_buf_append_le64(out, l->modified);
	r = r ?: eos_buf_append_le64(out, l->deleted);
	r = r ?: eos_buf_append_le64(out, l->bytes);
	if (r < 0)
		eos_buf_truncate(out, old);
	return r;
}

int
eos_layer_record_decode(const void *p, size_t n, uint64_t version, struct eos_layer_info *ret)
{
	struct eos_layer_info l = { .version = version };
	struct eos_reader rd;
	const uint8_t *owner = NULL;
	size_t olen = 0;
	uint64_t created_ns = 0;
	uint8_t format = 0;
	int r = 0;

	eos_reader_init(&rd, p, n);
	r = r ?: eos_reader_u8(&rd, &format);
	r = r ?: eos_reader_le64(&rd, &l.parent);
	r = r ?: eos_reader_le64(&rd, &l.squashed_from);
	r = r ?: eos_reader_le64(&rd, &created_ns);
	r = r ?: eos_reader_lp(&rd, EOS_OWNER_MAX, &owner, &olen);
	r = r ?: eos_reader_le64(&rd, &l.created);
	r = r ?: eos_reader_le64(&rd, &l.modified);
	r = r ?: eos_reader_le64(&rd, &l.deleted);
	r = r ?: eos_reader_le64(&rd, &l.bytes);
	if (r < 0 || format != LAYER_RECORD_FORMAT || !eos_reader_done(&rd) ||
	    memchr(owner, 0, olen))
		return -EBADMSG;
	if (olen)
		memcpy(l.owner, owner, olen);
	l.owner[olen] = '\0';
	l.created_ns = (int64_t)created_ns;
	*ret = l;
	return 0;
}

static int
layer_corrupt(struct eos_error *err, const char *sandbox, uint64_t v)
{
	char id[EOS_LAYER_ID_LEN];

	eos_layer_id_format(v, id);
	return eos_error_set(err, -EBADMSG, "corrupt layer record %s of sandbox '%s'", id, sandbox);
}

int
eos_store_layer_get(struct eos_store *st, const char *sandbox, uint64_t v,
		    struct eos_layer_info *ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	uint64_t sbx, version;
	int r = eos_sandbox_resolve(st, sandbox, &sbx, err);

	r = r ?: eos_sandbox_version(st, sbx, sandbox, v, &version, err);
	if (r < 0)
		return r;
	r = eos_layer_key(&key, sbx, version);
	if (r < 0)
		return r;
	r = eos_kv_get(st->kv, NULL, EOS_CF_LAYERS, key.data, key.len, &val, err);
	if (r == -ENOENT) /* squashed since the check */
		return eos_sandbox_version(st, sbx, sandbox, version, &version, err) ?: r;
	if (r < 0)
		return eos_error_prefix(err, r, "sandbox '%s'", sandbox);
	if (eos_layer_record_decode(val.data, val.len, version, ret) < 0)
		return layer_corrupt(err, sandbox, version);
	return 0;
}

struct layer_array {
	struct eos_layer_info *v;
	size_t n, cap;
};

static void
layer_array_release(struct layer_array *a)
{
	free(a->v);
}

static int
layer_array_push(struct layer_array *a, struct eos_layer_info **ret)
{
	if (eos_buf_array_reserve(&a->v, &a->cap, a->n, sizeof(*a->v), 16) < 0)
		return -ENOMEM;
	*ret = &a->v[a->n++];
	return 0;
}

static int
layer_list_one(struct eos_kv_iter *it, const char *sandbox, struct layer_array *a,
	       struct eos_error *err)
{
	struct eos_layer_info *l;
	const uint8_t *k, *v;
	size_t kn, vn;
	int r;

	k = eos_kv_iter_key(it, &kn);
	v = eos_kv_iter_value(it, &vn);
	if (kn != LAYER_KEY_LEN)
		return eos_error_set(err, -EBADMSG, "corrupt layer key of sandbox '%s'", sandbox);
	r = layer_array_push(a, &l);
	if (r < 0)
		return r;
	if (eos_layer_record_decode(v, vn, eos_get_be64(k + 8), l) < 0)
		return layer_corrupt(err, sandbox, eos_get_be64(k + 8));
	return 0;
}

int
eos_store_layer_list(struct eos_store *st, const char *sandbox, struct eos_layer_info **ret,
		     size_t *ret_n, struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	EOS_CLEANUP(layer_array_release) struct layer_array a = { 0 };
	uint8_t lower[8], upper[8];
	uint64_t sbx;
	int r = eos_sandbox_resolve(st, sandbox, &sbx, err);

	if (r < 0)
		return r;
	eos_put_be64(lower, sbx);
	eos_put_be64(upper, sbx + 1);
	r = eos_kv_iter_new(st->kv, EOS_CF_LAYERS, NULL, upper, sizeof(upper), 0, &it);
	if (r < 0)
		return eos_error_set(err, r, "create a layer iterator");
	for (eos_kv_iter_seek(it, lower, sizeof(lower)); r == 0 && eos_kv_iter_valid(it);
	     eos_kv_iter_next(it))
		r = layer_list_one(it, sandbox, &a, err);
	r = r ?: eos_kv_iter_status(it, err);
	if (r < 0)
		return r;
	*ret_n = a.n;
	*ret = TAKE_PTR(a.v);
	return 0;
}
