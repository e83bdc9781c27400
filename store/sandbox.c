/* SPDX-License-Identifier: MIT */
#include "store/sandbox.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"

#include "store/kv.h"
#include "store/store-internal.h"

enum {
	SANDBOX_RECORD_FORMAT = 1,
	META_SBX_LEN = 8,
	LAYER_KEY_LEN = 16,
	SOURCE_MAX = 255,
};

static const char SANDBOX_ID_KEY[] = "sandbox:";

/* --- ids and records -------------------------------------------------------------------------- */

static bool
id_char_valid(char c, bool first)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return !first && (c == '.' || c == '_' || c == '-');
}

int
eos_store_name_check(const char *what, const char *name, size_t max, struct eos_error *err)
{
	size_t n = strnlen(name, max + 1);

	if (n == 0)
		return eos_error_set(err, -EINVAL, "empty %s", what);
	if (n > max)
		return eos_error_set(err, -EINVAL, "%s '%.64s…' is longer than %zu characters",
				     what, name, max);
	for (size_t i = 0; i < n; i++)
		if (!id_char_valid(name[i], i == 0))
			return eos_error_set(err, -EINVAL,
					     "%s '%s' is invalid: [A-Za-z0-9._-], alnum first",
					     what, name);
	return 0;
}

int
eos_sandbox_id_check(const char *id, struct eos_error *err)
{
	return eos_store_name_check("sandbox id", id, EOS_SANDBOX_ID_MAX, err);
}

/* Record: u8 format 1, lp id, lp source, le64 created_ns, le64 next_link_group. */
int
eos_sandbox_record_encode(const struct eos_sandbox_record *r, struct eos_buf *out)
{
	size_t old = out->len;
	int rc = 0;

	rc = rc ?: eos_buf_append_u8(out, SANDBOX_RECORD_FORMAT);
	rc = rc ?: eos_buf_append_lp(out, r->id, strnlen(r->id, EOS_SANDBOX_ID_MAX));
	rc = rc ?: eos_buf_append_lp(out, r->source, strnlen(r->source, SOURCE_MAX));
	rc = rc ?: eos_buf_append_le64(out, (uint64_t)r->created_ns);
	rc = rc ?: eos_buf_append_le64(out, r->next_link_group);
	if (rc < 0)
		eos_buf_truncate(out, old);
	return rc;
}

/* Copy an lp string of at most max bytes without NULs into out[max + 1]. */
static int
read_string(struct eos_reader *rd, size_t max, char *out)
{
	const uint8_t *p;
	size_t n;
	int r = eos_reader_lp(rd, max, &p, &n);

	if (r < 0 || memchr(p, 0, n))
		return -EBADMSG;
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

int
eos_sandbox_record_decode(const void *p, size_t n, struct eos_sandbox_record *ret)
{
	struct eos_sandbox_record rec = { 0 };
	struct eos_reader rd;
	uint8_t format = 0;
	uint64_t created = 0;
	int r = 0;

	eos_reader_init(&rd, p, n);
	r = r ?: eos_reader_u8(&rd, &format);
	r = r ?: read_string(&rd, EOS_SANDBOX_ID_MAX, rec.id);
	r = r ?: read_string(&rd, SOURCE_MAX, rec.source);
	r = r ?: eos_reader_le64(&rd, &created);
	r = r ?: eos_reader_le64(&rd, &rec.next_link_group);
	if (r < 0 || format != SANDBOX_RECORD_FORMAT || !eos_reader_done(&rd))
		return -EBADMSG;
	rec.created_ns = (int64_t)created;
	*ret = rec;
	return 0;
}

int
eos_meta_key(struct eos_buf *out, uint64_t sbx, const char *name)
{
	size_t n = strlen(name);
	int r = eos_buf_reserve(out, META_SBX_LEN + n);

	if (r < 0)
		return r;
	/* Cannot fail after the reserve. */
	eos_buf_append_be64(out, sbx);
	return eos_buf_append(out, name, n);
}

/* A le64 meta value: -EBADMSG unless exactly 8 bytes. */
static int
meta_get_u64(struct eos_store *st, uint64_t sbx, const char *name, uint64_t *ret,
	     struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	int r = eos_meta_key(&key, sbx, name);

	if (r < 0)
		return r;
	r = eos_kv_get(st->kv, NULL, EOS_CF_META, key.data, key.len, &val, err);
	if (r < 0)
		return r;
	if (val.len != 8)
		return eos_error_set(err, -EBADMSG, "corrupt meta value '%s' of sandbox #%llu",
				     name, (unsigned long long)sbx);
	*ret = eos_get_le64(val.data);
	return 0;
}

/* --- id -> number ----------------------------------------------------------------------------- */

/* Index of id in the cache, or -1. Caller holds sbx_lock. */
static ssize_t
cache_index_locked(const struct eos_store *st, const char *id)
{
	for (size_t i = 0; i < st->sbx_cache_n; i++)
		if (strcmp(st->sbx_cache[i].id, id) == 0)
			return (ssize_t)i;
	return -1;
}

static bool
cache_find(struct eos_store *st, const char *id, uint64_t *ret)
{
	ssize_t i;

	pthread_mutex_lock(&st->sbx_lock);
	i = cache_index_locked(st, id);
	if (i >= 0)
		*ret = st->sbx_cache[i].sbx;
	pthread_mutex_unlock(&st->sbx_lock);
	return i >= 0;
}

static bool
cache_reserve_locked(struct eos_store *st)
{
	return eos_buf_array_reserve(&st->sbx_cache, &st->sbx_cache_cap, st->sbx_cache_n,
				     sizeof(*st->sbx_cache), 16) == 0;
}

/* Best effort: without memory the id is simply not cached. */
static void
cache_add(struct eos_store *st, const char *id, uint64_t sbx)
{
	pthread_mutex_lock(&st->sbx_lock);
	if (cache_index_locked(st, id) < 0 && cache_reserve_locked(st)) {
		struct eos_sandbox_cache_entry *c = &st->sbx_cache[st->sbx_cache_n++];

		snprintf(c->id, sizeof(c->id), "%s", id);
		c->sbx = sbx;
	}
	pthread_mutex_unlock(&st->sbx_lock);
}

void
eos_sandbox_forget(struct eos_store *st, const char *id)
{
	ssize_t i;

	pthread_mutex_lock(&st->sbx_lock);
	i = cache_index_locked(st, id);
	if (i >= 0)
		st->sbx_cache[i] = st->sbx_cache[--st->sbx_cache_n];
	pthread_mutex_unlock(&st->sbx_lock);
}

int
eos_sandbox_resolve(struct eos_store *st, const char *id, uint64_t *ret_sbx, struct eos_error *err)
{
	char name[sizeof(SANDBOX_ID_KEY) + EOS_SANDBOX_ID_MAX];
	uint64_t sbx;
	int r = eos_sandbox_id_check(id, err);

	if (r < 0)
		return r;
	if (cache_find(st, id, ret_sbx))
		return 0;
	snprintf(name, sizeof(name), "%s%s", SANDBOX_ID_KEY, id);
	r = meta_get_u64(st, EOS_SANDBOX_GLOBAL, name, &sbx, err);
	if (r == -ENOENT)
		return eos_error_set(err, r, "sandbox '%s' does not exist", id);
	if (r < 0)
		return eos_error_prefix(err, r, "sandbox '%s'", id);
	if (sbx == EOS_SANDBOX_GLOBAL)
		return eos_error_set(err, -EBADMSG, "sandbox '%s' has the reserved number 0", id);
	cache_add(st, id, sbx);
	*ret_sbx = sbx;
	return 0;
}

int
eos_sandbox_record_get(struct eos_store *st, uint64_t sbx, struct eos_sandbox_record *ret,
		       struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	int r = eos_meta_key(&key, sbx, "info");

	if (r < 0)
		return r;
	r = eos_kv_get(st->kv, NULL, EOS_CF_META, key.data, key.len, &val, err);
	if (r == -ENOENT)
		return eos_error_set(err, r, "record of sandbox #%llu does not exist",
				     (unsigned long long)sbx);
	if (r < 0)
		return r;
	r = eos_sandbox_record_decode(val.data, val.len, ret);
	if (r < 0)
		return eos_error_set(err, r, "corrupt record of sandbox #%llu",
				     (unsigned long long)sbx);
	return 0;
}

int
eos_sandbox_head(struct eos_store *st, uint64_t sbx, uint64_t *ret, struct eos_error *err)
{
	int r = meta_get_u64(st, sbx, "head", ret, err);

	if (r == -ENOENT)
		return eos_error_set(err, r, "head of sandbox #%llu does not exist",
				     (unsigned long long)sbx);
	return r;
}

/* --- versions --------------------------------------------------------------------------------- */

/* The oldest retained layer after v: 0 and *ret filled, or -ENOENT. */
static int
next_layer(struct eos_store *st, uint64_t sbx, uint64_t v, struct eos_layer_info *ret,
	   struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	uint8_t key[LAYER_KEY_LEN];
	const uint8_t *k, *val;
	size_t kn, vn;
	int r;

	if (v == UINT64_MAX)
		return -ENOENT;
	eos_put_be64(key, sbx);
	eos_put_be64(key + 8, v + 1);
	r = eos_kv_iter_new(st->kv, EOS_CF_LAYERS, NULL, NULL, 0, 0, &it);
	if (r < 0)
		return eos_error_set(err, r, "create a layer iterator");
	eos_kv_iter_seek(it, key, sizeof(key));
	if (!eos_kv_iter_valid(it))
		return eos_kv_iter_status(it, err) ?: -ENOENT;
	k = eos_kv_iter_key(it, &kn);
	if (kn != LAYER_KEY_LEN || memcmp(k, key, 8) != 0)
		return -ENOENT;
	val = eos_kv_iter_value(it, &vn);
	r = eos_layer_record_decode(val, vn, eos_get_be64(k + 8), ret);
	if (r < 0)
		return eos_error_set(err, r, "corrupt layer record of sandbox #%llu",
				     (unsigned long long)sbx);
	return 0;
}

static int
version_missing(struct eos_store *st, uint64_t sbx, const char *id, uint64_t v,
		struct eos_error *err)
{
	struct eos_layer_info next;
	char vid[EOS_LAYER_ID_LEN], nid[EOS_LAYER_ID_LEN];
	int r = next_layer(st, sbx, v, &next, err);

	if (r < 0 && r != -ENOENT)
		return r;
	eos_layer_id_format(v, vid);
	if (r == 0 && next.squashed_from != 0 && next.squashed_from <= v) {
		eos_layer_id_format(next.version, nid);
		return eos_error_set(err, -ENOENT,
				     "version %s of sandbox '%s' was squashed into %s", vid, id,
				     nid);
	}
	return eos_error_set(err, -ENOENT, "version %s of sandbox '%s' does not exist", vid, id);
}

int
eos_sandbox_version(struct eos_store *st, uint64_t sbx, const char *id, uint64_t v, uint64_t *ret,
		    struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	int r;

	if (v == 0) {
		r = eos_sandbox_head(st, sbx, ret, err);
		return r < 0 ? eos_error_prefix(err, r, "sandbox '%s'", id) : 0;
	}
	r = eos_layer_key(&key, sbx, v);
	if (r < 0)
		return r;
	r = eos_kv_exists(st->kv, EOS_CF_LAYERS, key.data, key.len, err);
	if (r < 0)
		return eos_error_prefix(err, r, "sandbox '%s'", id);
	if (r == 0)
		return version_missing(st, sbx, id, v, err);
	*ret = v;
	return 0;
}

int
eos_sandbox_alloc_number(struct eos_store *st, struct eos_kv_batch *b, uint64_t *ret,
			 struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	uint8_t val[8];
	uint64_t n = 1;
	int r = meta_get_u64(st, EOS_SANDBOX_GLOBAL, "next-sandbox", &n, err);

	if (r == -ENOENT)
		n = 1;
	else if (r < 0)
		return r;
	if (n == EOS_SANDBOX_GLOBAL || n == UINT64_MAX)
		return eos_error_set(err, -EBADMSG, "corrupt next sandbox number %llu",
				     (unsigned long long)n);
	r = eos_meta_key(&key, EOS_SANDBOX_GLOBAL, "next-sandbox");
	if (r < 0)
		return r;
	eos_put_le64(val, n + 1);
	eos_kv_batch_put(b, EOS_CF_META, key.data, key.len, val, sizeof(val));
	*ret = n;
	return 0;
}

int
eos_sandbox_stage_head(struct eos_kv_batch *b, uint64_t sbx, uint64_t v)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	uint8_t val[8];
	int r = eos_meta_key(&key, sbx, "head");

	if (r < 0)
		return r;
	eos_put_le64(val, v);
	eos_kv_batch_put(b, EOS_CF_META, key.data, key.len, val, sizeof(val));
	return 0;
}

/* --- public sandbox queries ------------------------------------------------------------------- */

/* Count the layer records of sbx and find the oldest. */
static int
layer_stats(struct eos_store *st, uint64_t sbx, uint64_t *ret_base, uint64_t *ret_count,
	    struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	uint8_t lower[8], upper[8];
	uint64_t base = 0, count = 0;
	int r;

	eos_put_be64(lower, sbx);
	eos_put_be64(upper, sbx + 1);
	r = eos_kv_iter_new(st->kv, EOS_CF_LAYERS, NULL, upper, sizeof(upper), 0, &it);
	if (r < 0)
		return eos_error_set(err, r, "create a layer iterator");
	for (eos_kv_iter_seek(it, lower, sizeof(lower)); eos_kv_iter_valid(it);
	     eos_kv_iter_next(it)) {
		size_t kn;
		const uint8_t *k = eos_kv_iter_key(it, &kn);

		if (kn != LAYER_KEY_LEN)
			return eos_error_set(err, -EBADMSG, "corrupt layer key of sandbox #%llu",
					     (unsigned long long)sbx);
		if (count++ == 0)
			base = eos_get_be64(k + 8);
	}
	*ret_base = base;
	*ret_count = count;
	return eos_kv_iter_status(it, err);
}

static int
sandbox_info(struct eos_store *st, uint64_t sbx, struct eos_sandbox_info *ret,
	     struct eos_error *err)
{
	struct eos_sandbox_record rec;
	struct eos_sandbox_info info = { 0 };
	int r = eos_sandbox_record_get(st, sbx, &rec, err);

	r = r ?: eos_sandbox_head(st, sbx, &info.head, err);
	r = r ?: layer_stats(st, sbx, &info.base, &info.layers, err);
	if (r < 0)
		return r;
	memcpy(info.id, rec.id, sizeof(info.id));
	memcpy(info.source, rec.source, sizeof(info.source));
	info.created_ns = rec.created_ns;
	*ret = info;
	return 0;
}

int
eos_store_sandbox_get(struct eos_store *st, const char *id, struct eos_sandbox_info *ret,
		      struct eos_error *err)
{
	uint64_t sbx;
	int r = eos_sandbox_resolve(st, id, &sbx, err);

	if (r < 0)
		return r;
	r = sandbox_info(st, sbx, ret, err);
	if (r < 0)
		return eos_error_prefix(err, r, "sandbox '%s'", id);
	return 0;
}

struct sandbox_array {
	struct eos_sandbox_info *v;
	size_t n, cap;
};

static void
sandbox_array_release(struct sandbox_array *a)
{
	free(a->v);
}

static int
sandbox_array_push(struct sandbox_array *a, struct eos_sandbox_info **ret)
{
	if (eos_buf_array_reserve(&a->v, &a->cap, a->n, sizeof(*a->v), 8) < 0)
		return -ENOMEM;
	*ret = &a->v[a->n++];
	return 0;
}

/* One 0·"sandbox:" id key: its number, then the info. */
static int
list_one(struct eos_store *st, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn,
	 struct sandbox_array *a, struct eos_error *err)
{
	const size_t plen = META_SBX_LEN + sizeof(SANDBOX_ID_KEY) - 1;
	struct eos_sandbox_info *info;
	int r;

	if (vn != 8 || kn <= plen || kn - plen > EOS_SANDBOX_ID_MAX)
		return eos_error_set(err, -EBADMSG, "corrupt sandbox registry key '%.*s'",
				     (int)(kn - META_SBX_LEN), (const char *)k + META_SBX_LEN);
	r = sandbox_array_push(a, &info);
	if (r < 0)
		return r;
	r = sandbox_info(st, eos_get_le64(v), info, err);
	if (r < 0)
		return eos_error_prefix(err, r, "sandbox '%.*s'", (int)(kn - plen),
					(const char *)k + plen);
	return 0;
}

int
eos_store_sandbox_list(struct eos_store *st, struct eos_sandbox_info **ret, size_t *ret_n,
		       struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	EOS_CLEANUP(eos_buf_release) struct eos_buf prefix = { 0 };
	EOS_CLEANUP(sandbox_array_release) struct sandbox_array a = { 0 };
	int r = eos_meta_key(&prefix, EOS_SANDBOX_GLOBAL, SANDBOX_ID_KEY);

	if (r < 0)
		return r;
	prefix.data[prefix.len - 1]++; /* "sandbox;" bounds the scan */
	r = eos_kv_iter_new(st->kv, EOS_CF_META, NULL, prefix.data, prefix.len, 0, &it);
	if (r < 0)
		return eos_error_set(err, r, "create a meta iterator");
	prefix.data[prefix.len - 1]--;
	for (eos_kv_iter_seek(it, prefix.data, prefix.len); r == 0 && eos_kv_iter_valid(it);
	     eos_kv_iter_next(it)) {
		size_t kn, vn;
		const uint8_t *k = eos_kv_iter_key(it, &kn), *v = eos_kv_iter_value(it, &vn);

		r = list_one(st, k, kn, v, vn, &a, err);
	}
	r = r ?: eos_kv_iter_status(it, err);
	if (r < 0)
		return r;
	*ret_n = a.n;
	*ret = TAKE_PTR(a.v);
	return 0;
}
