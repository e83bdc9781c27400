/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"

#include "store/kv.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

enum {
	META_SBX_LEN = 8,
	LEASE_VALUE_LEN = 16, /* le64 version, le64 created_ns */
};

static const char LEASE_KEY[] = "lease:";

static int
lease_name_check(const char *name, struct eos_error *err)
{
	size_t n = strnlen(name, EOS_LEASE_NAME_MAX + 1);

	if (n == 0)
		return eos_error_set(err, -EINVAL, "empty lease name");
	if (n > EOS_LEASE_NAME_MAX)
		return eos_error_set(err, -EINVAL, "lease name '%.40s…' is longer than %d bytes",
				     name, EOS_LEASE_NAME_MAX);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c < 0x20 || c > 0x7e || c == '/')
			return eos_error_set(
				err, -EINVAL,
				"lease name '%s' is invalid: use printable ASCII without '/'",
				name);
	}
	return 0;
}

/* N·"lease:" name (name may be "" for the scan prefix). */
static int
lease_key(struct eos_buf *out, uint64_t sbx, const char *name)
{
	int r = eos_meta_key(out, sbx, LEASE_KEY);

	return r ?: eos_buf_append_str(out, name);
}

/*
 * Scan every lease of sbx. fn gets the name (not NUL-terminated), the version and created_ns.
 * A malformed key or value is -EBADMSG.
 */
typedef int (*lease_scan_fn)(void *ctx, const char *name, size_t nlen, uint64_t v,
			     int64_t created_ns);

static int
lease_scan_one(struct eos_kv_iter *it, size_t plen, lease_scan_fn fn, void *ctx,
	       struct eos_error *err)
{
	size_t kn, vn;
	const uint8_t *k = eos_kv_iter_key(it, &kn), *v = eos_kv_iter_value(it, &vn);

	if (kn <= plen || kn - plen > EOS_LEASE_NAME_MAX || vn != LEASE_VALUE_LEN)
		return eos_error_set(err, -EBADMSG, "corrupt lease '%.*s'",
				     (int)(kn - META_SBX_LEN), (const char *)k + META_SBX_LEN);
	return fn(ctx, (const char *)k + plen, kn - plen, eos_get_le64(v),
		  (int64_t)eos_get_le64(v + 8));
}

static int
lease_scan(struct eos_store *st, uint64_t sbx, lease_scan_fn fn, void *ctx, struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	EOS_CLEANUP(eos_buf_release) struct eos_buf prefix = { 0 };
	int r = lease_key(&prefix, sbx, "");

	if (r < 0)
		return r;
	prefix.data[prefix.len - 1]++; /* "lease;" bounds the scan */
	r = eos_kv_iter_new(st->kv, EOS_CF_META, NULL, prefix.data, prefix.len, 0, &it);
	if (r < 0)
		return eos_error_set(err, r, "create a meta iterator");
	prefix.data[prefix.len - 1]--;
	for (eos_kv_iter_seek(it, prefix.data, prefix.len); r == 0 && eos_kv_iter_valid(it);
	     eos_kv_iter_next(it))
		r = lease_scan_one(it, prefix.len, fn, ctx, err);
	return r ?: eos_kv_iter_status(it, err);
}

/* --- versions --------------------------------------------------------------------------------- */

struct version_array {
	uint64_t *v;
	size_t n, cap;
};

static void
version_array_release(struct version_array *a)
{
	free(a->v);
}

static int
version_push(void *ctx, const char *name, size_t nlen, uint64_t v, int64_t created_ns)
{
	struct version_array *a = ctx;

	(void)name;
	(void)nlen;
	(void)created_ns;
	if (eos_buf_array_reserve(&a->v, &a->cap, a->n, sizeof(*a->v), 8) < 0)
		return -ENOMEM;
	a->v[a->n++] = v;
	return 0;
}

static int
u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

int
eos_lease_versions(struct eos_store *st, uint64_t sbx, uint64_t **ret, size_t *ret_n,
		   struct eos_error *err)
{
	EOS_CLEANUP(version_array_release) struct version_array a = { 0 };
	size_t n = 0;
	int r = lease_scan(st, sbx, version_push, &a, err);

	if (r < 0)
		return r;
	if (a.n)
		qsort(a.v, a.n, sizeof(*a.v), u64_cmp);
	for (size_t i = 0; i < a.n; i++)
		if (n == 0 || a.v[n - 1] != a.v[i])
			a.v[n++] = a.v[i];
	*ret_n = n;
	*ret = TAKE_PTR(a.v);
	return 0;
}

int
eos_lease_stage(struct eos_kv_batch *b, uint64_t sbx, const char *name, uint64_t v)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	uint8_t val[LEASE_VALUE_LEN];
	int r = lease_key(&key, sbx, name);

	if (r < 0)
		return r;
	eos_put_le64(val, v);
	eos_put_le64(val + 8, (uint64_t)eos_store_now_ns());
	eos_kv_batch_put(b, EOS_CF_META, key.data, key.len, val, sizeof(val));
	return 0;
}

/* --- public API ------------------------------------------------------------------------------- */

static int
lease_put_locked(struct eos_store *st, uint64_t sbx, const char *sandbox, const char *name,
		 uint64_t v, uint64_t *ret_version, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	uint8_t val[LEASE_VALUE_LEN];
	uint64_t version;
	int r = eos_sandbox_version(st, sbx, sandbox, v, &version, err);

	if (r < 0)
		return r;
	r = lease_key(&key, sbx, name);
	if (r < 0)
		return r;
	eos_put_le64(val, version);
	eos_put_le64(val + 8, (uint64_t)eos_store_now_ns());
	r = eos_kv_put(st->kv, EOS_CF_META, key.data, key.len, val, sizeof(val), true, err);
	if (r < 0)
		return r;
	if (ret_version)
		*ret_version = version;
	return 0;
}

int
eos_store_lease_acquire(struct eos_store *st, const char *sandbox, const char *name, uint64_t v,
			uint64_t *ret_version, struct eos_error *err)
{
	uint64_t sbx;
	int r = lease_name_check(name, err);

	r = r ?: eos_sandbox_resolve(st, sandbox, &sbx, err);
	if (r < 0)
		return r;
	/* Under the writer lock, so that squash sees either no lease or a valid one. */
	pthread_mutex_lock(&st->write_lock);
	r = lease_put_locked(st, sbx, sandbox, name, v, ret_version, err);
	pthread_mutex_unlock(&st->write_lock);
	if (r < 0)
		return eos_error_prefix(err, r, "acquire lease '%s'", name);
	return 0;
}

static int
lease_delete_locked(struct eos_store *st, uint64_t sbx, const char *sandbox, const char *name,
		    struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	int r = lease_key(&key, sbx, name);

	if (r < 0)
		return r;
	r = eos_kv_exists(st->kv, EOS_CF_META, key.data, key.len, err);
	if (r < 0)
		return r;
	if (r == 0)
		return eos_error_set(err, -ENOENT, "lease '%s' of sandbox '%s' does not exist",
				     name, sandbox);
	return eos_kv_delete(st->kv, EOS_CF_META, key.data, key.len, true, err);
}

int
eos_store_lease_release(struct eos_store *st, const char *sandbox, const char *name,
			struct eos_error *err)
{
	uint64_t sbx;
	int r = lease_name_check(name, err);

	r = r ?: eos_sandbox_resolve(st, sandbox, &sbx, err);
	if (r < 0)
		return r;
	pthread_mutex_lock(&st->write_lock);
	r = lease_delete_locked(st, sbx, sandbox, name, err);
	pthread_mutex_unlock(&st->write_lock);
	if (r < 0 && r != -ENOENT)
		return eos_error_prefix(err, r, "release lease '%s' of sandbox '%s'", name,
					sandbox);
	return r;
}

struct lease_array {
	struct eos_lease_info *v;
	size_t n, cap;
};

static void
lease_array_release(struct lease_array *a)
{
	free(a->v);
}

static int
lease_push(void *ctx, const char *name, size_t nlen, uint64_t v, int64_t created_ns)
{
	struct lease_array *a = ctx;
	struct eos_lease_info *l;

	if (eos_buf_array_reserve(&a->v, &a->cap, a->n, sizeof(*a->v), 8) < 0)
		return -ENOMEM;
	l = &a->v[a->n++];
	memset(l, 0, sizeof(*l));
	memcpy(l->name, name, nlen);
	l->version = v;
	l->created_ns = created_ns;
	return 0;
}

int
eos_store_lease_list(struct eos_store *st, const char *sandbox, struct eos_lease_info **ret,
		     size_t *ret_n, struct eos_error *err)
{
	EOS_CLEANUP(lease_array_release) struct lease_array a = { 0 };
	uint64_t sbx;
	int r = eos_sandbox_resolve(st, sandbox, &sbx, err);

	if (r < 0)
		return r;
	r = lease_scan(st, sbx, lease_push, &a, err);
	if (r < 0)
		return eos_error_prefix(err, r, "sandbox '%s'", sandbox);
	*ret_n = a.n;
	*ret = TAKE_PTR(a.v);
	return 0;
}
