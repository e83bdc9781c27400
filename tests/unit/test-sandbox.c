/* SPDX-License-Identifier: MIT */
/*
 * store/sandbox, layer and lease: record codecs, meta keys, id checks, version resolution and its
 * messages, the public sandbox/layer queries and persistent leases, against a real store whose
 * registry keys are written directly.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"
#include "common/error.h"

#include "store/kv.h"
#include "store/sandbox.h"
#include "store/store-internal.h"
#include "tests/unit/testutil.h"

/* --- codecs ----------------------------------------------------------------------------------- */

START_TEST(test_meta_and_layer_keys)
{
	struct eos_buf b;

	eos_buf_init(&b);
	ck_assert_int_eq(eos_meta_key(&b, 0, "format"), 0);
	ck_assert_uint_eq(b.len, 14);
	ck_assert_mem_eq(b.data, "\0\0\0\0\0\0\0\0format", 14);
	eos_buf_truncate(&b, 0);
	ck_assert_int_eq(eos_meta_key(&b, 0x0102, "head"), 0);
	ck_assert_mem_eq(b.data, "\0\0\0\0\0\0\x01\x02head", 12);
	eos_buf_truncate(&b, 0);
	ck_assert_int_eq(eos_layer_key(&b, 3, 0x0a0b), 0);
	ck_assert_uint_eq(b.len, 16);
	ck_assert_mem_eq(b.data, "\0\0\0\0\0\0\0\x03\0\0\0\0\0\0\x0a\x0b", 16);
	/* Layer keys of one sandbox sort by version. */
	for (uint64_t v = 1; v < 1000; v += 13) {
		struct eos_buf a, c;

		eos_buf_init(&a);
		eos_buf_init(&c);
		eos_layer_key(&a, 3, v);
		eos_layer_key(&c, 3, v + 1);
		ck_assert_int_lt(memcmp(a.data, c.data, 16), 0);
		eos_buf_release(&a);
		eos_buf_release(&c);
	}
	eos_buf_release(&b);
}
END_TEST

static void
check_truncations_rejected(const struct eos_buf *b,
			   int (*decode)(const uint8_t *p, size_t n, void *ret), void *ret)
{
	for (size_t len = 0; len < b->len; len++) {
		uint8_t *cut = malloc(len ? len : 1);

		memcpy(cut, b->data, len);
		ck_assert_int_eq(decode(cut, len, ret), -EBADMSG);
		free(cut);
	}
}

static int
decode_sandbox(const uint8_t *p, size_t n, void *ret)
{
	return eos_sandbox_record_decode(p, n, ret);
}

static int
decode_layer(const uint8_t *p, size_t n, void *ret)
{
	return eos_layer_record_decode(p, n, 5, ret);
}

START_TEST(test_sandbox_record_codec)
{
	struct eos_sandbox_record r = { .created_ns = -7, .next_link_group = 42 }, d;
	struct eos_buf b;

	eos_buf_init(&b);
	memset(r.id, 'i', EOS_SANDBOX_ID_MAX);
	memset(r.source, 's', sizeof(r.source) - 1);
	ck_assert_int_eq(eos_sandbox_record_encode(&r, &b), 0);
	ck_assert_int_eq(eos_sandbox_record_decode(b.data, b.len, &d), 0);
	ck_assert_str_eq(d.id, r.id);
	ck_assert_str_eq(d.source, r.source);
	ck_assert_int_eq(d.created_ns, -7);
	ck_assert_uint_eq(d.next_link_group, 42);
	check_truncations_rejected(&b, decode_sandbox, &d);
	b.data[0] = 2; /* format */
	ck_assert_int_eq(eos_sandbox_record_decode(b.data, b.len, &d), -EBADMSG);
	b.data[0] = 1;
	eos_put_le32(b.data + 1, EOS_SANDBOX_ID_MAX + 1); /* id too long */
	ck_assert_int_eq(eos_sandbox_record_decode(b.data, b.len, &d), -EBADMSG);
	eos_put_le32(b.data + 1, EOS_SANDBOX_ID_MAX);
	b.data[5] = '\0'; /* NUL inside the id */
	ck_assert_int_eq(eos_sandbox_record_decode(b.data, b.len, &d), -EBADMSG);
	b.data[5] = 'i';
	eos_buf_append_u8(&b, 0); /* trailing byte */
	ck_assert_int_eq(eos_sandbox_record_decode(b.data, b.len, &d), -EBADMSG);
	eos_buf_release(&b);
}
END_TEST

START_TEST(test_layer_record_codec)
{
	struct eos_layer_info l = { .version = 99,
				    .parent = 4,
				    .squashed_from = 2,
				    .created_ns = 1700000000123456789LL,
				    .created = 1,
				    .modified = 2,
				    .deleted = 3,
				    .bytes = 1ULL << 40 },
			      d;
	struct eos_buf b;
	uint8_t garbage[120];

	eos_buf_init(&b);
	memset(l.owner, 'o', EOS_OWNER_MAX);
	ck_assert_int_eq(eos_layer_record_encode(&l, &b), 0);
	ck_assert_int_eq(eos_layer_record_decode(b.data, b.len, 5, &d), 0);
	ck_assert_uint_eq(d.version, 5); /* from the key, not the record */
	ck_assert_uint_eq(d.parent, 4);
	ck_assert_uint_eq(d.squashed_from, 2);
	ck_assert_int_eq(d.created_ns, l.created_ns);
	ck_assert_str_eq(d.owner, l.owner);
	ck_assert_uint_eq(d.created + d.modified + d.deleted, 6);
	ck_assert_uint_eq(d.bytes, 1ULL << 40);
	check_truncations_rejected(&b, decode_layer, &d);
	eos_put_le32(b.data + 25, EOS_OWNER_MAX + 1);
	ck_assert_int_eq(eos_layer_record_decode(b.data, b.len, 5, &d), -EBADMSG);
	for (uint64_t seed = 1; seed < 5000; seed++) {
		size_t n = seed % sizeof(garbage);
		int r;

		eos_test_fill_random(garbage, n, seed);
		r = eos_layer_record_decode(garbage, n, 1, &d);
		ck_assert(r == 0 || r == -EBADMSG);
	}
	eos_buf_release(&b);
}
END_TEST

START_TEST(test_id_check)
{
	const char *good[] = { "a", "0", "eos-0123456789ab", "A.b_c-d", "x..y" };
	const char *bad[] = { "", "-a", ".a", "_a", "a/b", "a b", "ü", "a\n", "a:b" };
	char longest[EOS_SANDBOX_ID_MAX + 2];
	struct eos_error err = { 0 };

	for (size_t i = 0; i < EOS_ARRAY_SIZE(good); i++)
		ck_assert_msg(eos_sandbox_id_check(good[i], &err) == 0, "'%s'", good[i]);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(bad); i++) {
		eos_error_clear(&err);
		ck_assert_msg(eos_sandbox_id_check(bad[i], &err) == -EINVAL, "'%s'", bad[i]);
		if (bad[i][0])
			ck_assert_msg(strstr(err.msg, bad[i]), "message '%s' names the id",
				      err.msg);
	}
	memset(longest, 'a', sizeof(longest));
	longest[EOS_SANDBOX_ID_MAX] = '\0';
	ck_assert_int_eq(eos_sandbox_id_check(longest, &err), 0);
	longest[EOS_SANDBOX_ID_MAX] = 'a';
	longest[EOS_SANDBOX_ID_MAX + 1] = '\0';
	ck_assert_int_eq(eos_sandbox_id_check(longest, &err), -EINVAL);
}
END_TEST

/* --- against a store -------------------------------------------------------------------------- */

static void
fixture_reopen(struct eos_test_fixture *f)
{
	struct eos_store_options o = { .cache_bytes = 8 << 20 };
	struct eos_error err = { 0 };
	int r;

	eos_store_close(f->st);
	f->st = NULL;
	r = eos_store_open(f->dir, &o, &f->st, &err);
	ck_assert_msg(r == 0, "reopen: %s", eos_error_message(&err, r));
}

static void
put_meta_u64(struct eos_store *st, uint64_t sbx, const char *name, uint64_t v)
{
	struct eos_buf k;
	uint8_t val[8];

	eos_buf_init(&k);
	eos_put_le64(val, v);
	ck_assert_int_eq(eos_meta_key(&k, sbx, name), 0);
	eos_test_kv_put(st, EOS_CF_META, &k, val, sizeof(val));
	eos_buf_release(&k);
}

static void
put_layer(struct eos_store *st, uint64_t sbx, uint64_t v, uint64_t parent, uint64_t squashed_from)
{
	struct eos_layer_info l = { .parent = parent, .squashed_from = squashed_from };
	struct eos_buf k, val;

	eos_buf_init(&k);
	eos_buf_init(&val);
	snprintf(l.owner, sizeof(l.owner), "test:%llu", (unsigned long long)v);
	l.created = v;
	ck_assert_int_eq(eos_layer_key(&k, sbx, v), 0);
	ck_assert_int_eq(eos_layer_record_encode(&l, &val), 0);
	eos_test_kv_put(st, EOS_CF_LAYERS, &k, val.data, val.len);
	eos_buf_release(&k);
	eos_buf_release(&val);
}

/* Register sandbox id as number sbx with a record and head. */
static void
put_sandbox(struct eos_store *st, const char *id, uint64_t sbx, uint64_t head)
{
	struct eos_sandbox_record rec = { .created_ns = (int64_t)sbx * 1000, .next_link_group = 1 };
	char name[100];
	struct eos_buf k, val;

	eos_buf_init(&k);
	eos_buf_init(&val);
	snprintf(name, sizeof(name), "sandbox:%s", id);
	put_meta_u64(st, 0, name, sbx);
	put_meta_u64(st, sbx, "head", head);
	snprintf(rec.id, sizeof(rec.id), "%s", id);
	snprintf(rec.source, sizeof(rec.source), "dir:/src/%s", id);
	ck_assert_int_eq(eos_sandbox_record_encode(&rec, &val), 0);
	ck_assert_int_eq(eos_meta_key(&k, sbx, "info"), 0);
	eos_test_kv_put(st, EOS_CF_META, &k, val.data, val.len);
	eos_buf_release(&k);
	eos_buf_release(&val);
}

/*
 * "box" (number 1): layers 1, 2, 7 (squashed 3..6 in), 9 (head); "next" (number 2): layer 5
 * (squashed 1..4 in) whose records must never answer for "box".
 */
static void
put_histories(struct eos_store *st)
{
	put_sandbox(st, "box", 1, 9);
	put_layer(st, 1, 1, 0, 0);
	put_layer(st, 1, 2, 1, 0);
	put_layer(st, 1, 7, 2, 3);
	put_layer(st, 1, 9, 7, 0);
	put_sandbox(st, "next", 2, 5);
	put_layer(st, 2, 5, 0, 1);
}

static int
version(struct eos_test_fixture *f, uint64_t v, uint64_t *ret, struct eos_error *err)
{
	eos_error_clear(err);
	return eos_sandbox_version(f->st, 1, "box", v, ret, err);
}

START_TEST(test_version_resolution)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_error err = { 0 };
	uint64_t v = 0;

	put_histories(f.st);
	ck_assert_int_eq(version(&f, 0, &v, &err), 0);
	ck_assert_uint_eq(v, 9);
	ck_assert_int_eq(version(&f, 2, &v, &err), 0);
	ck_assert_uint_eq(v, 2);
	ck_assert_int_eq(version(&f, 7, &v, &err), 0);
	ck_assert_uint_eq(v, 7);
	for (uint64_t s = 3; s <= 6; s++) {
		char want[128];

		ck_assert_int_eq(version(&f, s, &v, &err), -ENOENT);
		snprintf(want, sizeof(want),
			 "version L%06llu of sandbox 'box' was squashed into L000007",
			 (unsigned long long)s);
		ck_assert_str_eq(err.msg, want);
	}
	ck_assert_uint_eq(v, 7); /* untouched on failure */
	ck_assert_int_eq(version(&f, 8, &v, &err), -ENOENT);
	ck_assert_str_eq(err.msg, "version L000008 of sandbox 'box' does not exist");
	ck_assert_int_eq(version(&f, 10, &v, &err), -ENOENT);
	ck_assert_str_eq(err.msg, "version L000010 of sandbox 'box' does not exist");
	ck_assert_int_eq(version(&f, UINT64_MAX, &v, &err), -ENOENT);
	/* Sandbox 2 sees its own squash. */
	ck_assert_int_eq(eos_sandbox_version(f.st, 2, "next", 3, &v, &err), -ENOENT);
	ck_assert_str_eq(err.msg, "version L000003 of sandbox 'next' was squashed into L000005");
	eos_test_fixture_close(&f);
}
END_TEST

START_TEST(test_resolve_cache_and_records)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_error err = { 0 };
	struct eos_sandbox_record rec;
	struct eos_buf k;
	uint64_t sbx = 0, head = 0;

	eos_buf_init(&k);
	ck_assert_int_eq(eos_sandbox_resolve(f.st, "box", &sbx, &err), -ENOENT);
	ck_assert_str_eq(err.msg, "sandbox 'box' does not exist");
	ck_assert_int_eq(eos_sandbox_resolve(f.st, "bad id", &sbx, &err), -EINVAL);
	put_histories(f.st);
	ck_assert_int_eq(eos_sandbox_resolve(f.st, "box", &sbx, &err), 0);
	ck_assert_uint_eq(sbx, 1);
	ck_assert_int_eq(eos_sandbox_resolve(f.st, "next", &sbx, &err), 0);
	ck_assert_uint_eq(sbx, 2);
	/* Cached: still resolves after the registry key is gone, until forgotten. */
	ck_assert_int_eq(eos_meta_key(&k, 0, "sandbox:box"), 0);
	ck_assert_int_eq(eos_kv_delete(f.st->kv, EOS_CF_META, k.data, k.len, true, &err), 0);
	ck_assert_int_eq(eos_sandbox_resolve(f.st, "box", &sbx, &err), 0);
	ck_assert_uint_eq(sbx, 1);
	eos_sandbox_forget(f.st, "box");
	ck_assert_int_eq(eos_sandbox_resolve(f.st, "box", &sbx, &err), -ENOENT);
	ck_assert_int_eq(eos_sandbox_resolve(f.st, "next", &sbx, &err), 0);
	ck_assert_uint_eq(sbx, 2);
	/* Records and heads. */
	ck_assert_int_eq(eos_sandbox_record_get(f.st, 2, &rec, &err), 0);
	ck_assert_str_eq(rec.id, "next");
	ck_assert_str_eq(rec.source, "dir:/src/next");
	ck_assert_int_eq(eos_sandbox_record_get(f.st, 3, &rec, &err), -ENOENT);
	ck_assert_int_eq(eos_sandbox_head(f.st, 2, &head, &err), 0);
	ck_assert_uint_eq(head, 5);
	ck_assert_int_eq(eos_sandbox_head(f.st, 3, &head, &err), -ENOENT);
	/* A corrupt head value. */
	eos_buf_truncate(&k, 0);
	ck_assert_int_eq(eos_meta_key(&k, 2, "head"), 0);
	eos_test_kv_put(f.st, EOS_CF_META, &k, "xyz", 3);
	ck_assert_int_eq(eos_sandbox_head(f.st, 2, &head, &err), -EBADMSG);
	eos_buf_release(&k);
	eos_test_fixture_close(&f);
}
END_TEST

START_TEST(test_resolve_many_cached)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_error err = { 0 };
	char id[32];

	for (uint64_t i = 1; i <= 100; i++) {
		snprintf(id, sizeof(id), "sbx-%llu", (unsigned long long)i);
		put_sandbox(f.st, id, i, 1);
	}
	for (int round = 0; round < 2; round++)
		for (uint64_t i = 1; i <= 100; i++) {
			uint64_t sbx = 0;

			snprintf(id, sizeof(id), "sbx-%llu", (unsigned long long)i);
			ck_assert_int_eq(eos_sandbox_resolve(f.st, id, &sbx, &err), 0);
			ck_assert_uint_eq(sbx, i);
		}
	ck_assert_uint_eq(f.st->sbx_cache_n, 100);
	eos_test_fixture_close(&f);
}
END_TEST

static void
write_batch(struct eos_store *st, struct eos_kv_batch *b)
{
	struct eos_error err = { 0 };
	int r = eos_kv_batch_write(st->kv, b, true, &err);

	ck_assert_msg(r == 0, "batch: %s", eos_error_message(&err, r));
}

START_TEST(test_alloc_number_and_head)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_error err = { 0 };
	uint64_t n = 0, head = 0;

	for (uint64_t want = 1; want <= 3; want++) {
		EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *b = NULL;

		ck_assert_int_eq(eos_kv_batch_new(&b), 0);
		ck_assert_int_eq(eos_sandbox_alloc_number(f.st, b, &n, &err), 0);
		ck_assert_uint_eq(n, want);
		ck_assert_int_eq(eos_sandbox_stage_head(b, n, 10 * want), 0);
		ck_assert_uint_eq(eos_kv_batch_count(b), 2);
		write_batch(f.st, b);
	}
	fixture_reopen(&f);
	for (uint64_t sbx = 1; sbx <= 3; sbx++) {
		ck_assert_int_eq(eos_sandbox_head(f.st, sbx, &head, &err), 0);
		ck_assert_uint_eq(head, 10 * sbx);
	}
	eos_test_fixture_close(&f);
}
END_TEST

START_TEST(test_public_sandbox_and_layers)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_error err = { 0 };
	struct eos_sandbox_info info, *all = NULL;
	struct eos_layer_info l, *layers = NULL;
	size_t n = 0;

	ck_assert_int_eq(eos_store_sandbox_list(f.st, &all, &n, &err), 0);
	ck_assert_uint_eq(n, 0);
	free(all);
	put_histories(f.st);
	put_sandbox(f.st, "alpha", 3, 1);
	put_layer(f.st, 3, 1, 0, 0);
	ck_assert_int_eq(eos_store_sandbox_get(f.st, "box", &info, &err), 0);
	ck_assert_str_eq(info.id, "box");
	ck_assert_str_eq(info.source, "dir:/src/box");
	ck_assert_uint_eq(info.head, 9);
	ck_assert_uint_eq(info.base, 1);
	ck_assert_uint_eq(info.layers, 4);
	ck_assert_int_eq(info.created_ns, 1000);
	ck_assert_int_eq(eos_store_sandbox_get(f.st, "nope", &info, &err), -ENOENT);
	ck_assert_str_eq(err.msg, "sandbox 'nope' does not exist");

	ck_assert_int_eq(eos_store_sandbox_list(f.st, &all, &n, &err), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(all[0].id, "alpha");
	ck_assert_str_eq(all[1].id, "box");
	ck_assert_str_eq(all[2].id, "next");
	ck_assert_uint_eq(all[2].base, 5);
	ck_assert_uint_eq(all[2].layers, 1);
	free(all);

	ck_assert_int_eq(eos_store_layer_get(f.st, "box", 7, &l, &err), 0);
	ck_assert_uint_eq(l.version, 7);
	ck_assert_uint_eq(l.squashed_from, 3);
	ck_assert_str_eq(l.owner, "test:7");
	ck_assert_int_eq(eos_store_layer_get(f.st, "box", 0, &l, &err), 0);
	ck_assert_uint_eq(l.version, 9);
	ck_assert_int_eq(eos_store_layer_get(f.st, "box", 4, &l, &err), -ENOENT);
	ck_assert_str_eq(err.msg, "version L000004 of sandbox 'box' was squashed into L000007");
	ck_assert_int_eq(eos_store_layer_list(f.st, "box", &layers, &n, &err), 0);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(layers[0].version, 1);
	ck_assert_uint_eq(layers[1].version, 2);
	ck_assert_uint_eq(layers[2].version, 7);
	ck_assert_uint_eq(layers[3].version, 9);
	ck_assert_uint_eq(layers[3].parent, 7);
	free(layers);
	ck_assert_int_eq(eos_store_layer_list(f.st, "nope", &layers, &n, &err), -ENOENT);
	eos_test_fixture_close(&f);
}
END_TEST

/* --- leases ----------------------------------------------------------------------------------- */

static void
check_leases(struct eos_store *st, const char *want)
{
	struct eos_lease_info *l = NULL;
	struct eos_error err = { 0 };
	char got[512] = "";
	size_t n = 0;
	int r = eos_store_lease_list(st, "box", &l, &n, &err);

	ck_assert_msg(r == 0, "list: %s", eos_error_message(&err, r));
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(got);

		ck_assert_int_gt(l[i].created_ns, 0);
		snprintf(got + len, sizeof(got) - len, "%s%s=%llu", i ? "," : "", l[i].name,
			 (unsigned long long)l[i].version);
	}
	ck_assert_str_eq(got, want);
	free(l);
}

static void
check_versions(struct eos_store *st, const char *want)
{
	struct eos_error err = { 0 };
	uint64_t *v = NULL;
	char got[256] = "";
	size_t n = 0;

	ck_assert_int_eq(eos_lease_versions(st, 1, &v, &n, &err), 0);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(got);

		snprintf(got + len, sizeof(got) - len, "%s%llu", i ? "," : "",
			 (unsigned long long)v[i]);
	}
	ck_assert_str_eq(got, want);
	free(v);
}

START_TEST(test_leases)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_error err = { 0 };
	char longname[EOS_LEASE_NAME_MAX + 2], want[400];
	uint64_t v = 0;

	put_histories(f.st);
	check_leases(f.st, "");
	check_versions(f.st, "");
	ck_assert_int_eq(eos_store_lease_acquire(f.st, "box", "ws:1", 0, &v, &err), 0);
	ck_assert_uint_eq(v, 9);
	ck_assert_int_eq(eos_store_lease_acquire(f.st, "box", "op-2", 2, &v, &err), 0);
	ck_assert_uint_eq(v, 2);
	ck_assert_int_eq(eos_store_lease_acquire(f.st, "box", "also two", 2, NULL, &err), 0);
	ck_assert_int_eq(eos_store_lease_acquire(f.st, "box", "x", 4, &v, &err), -ENOENT);
	ck_assert_str_eq(
		err.msg,
		"acquire lease 'x': version L000004 of sandbox 'box' was squashed into L000007");
	ck_assert_int_eq(eos_store_lease_acquire(f.st, "box", "x", 12, &v, &err), -ENOENT);
	ck_assert_int_eq(eos_store_lease_acquire(f.st, "nope", "x", 0, &v, &err), -ENOENT);
	ck_assert_int_eq(eos_store_lease_acquire(f.st, "box", "", 0, &v, &err), -EINVAL);
	ck_assert_int_eq(eos_store_lease_acquire(f.st, "box", "a/b", 0, &v, &err), -EINVAL);
	ck_assert_int_eq(eos_store_lease_acquire(f.st, "box", "tab\there", 0, &v, &err), -EINVAL);
	memset(longname, 'l', sizeof(longname));
	longname[EOS_LEASE_NAME_MAX + 1] = '\0';
	ck_assert_int_eq(eos_store_lease_acquire(f.st, "box", longname, 0, &v, &err), -EINVAL);
	longname[EOS_LEASE_NAME_MAX] = '\0';
	ck_assert_int_eq(eos_store_lease_acquire(f.st, "box", longname, 1, &v, &err), 0);
	snprintf(want, sizeof(want), "also two=2,%s=1,op-2=2,ws:1=9", longname);
	check_leases(f.st, want);
	check_versions(f.st, "1,2,9");
	eos_test_fixture_close(&f);
}
END_TEST

START_TEST(test_leases_persist)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_error err = { 0 };
	uint64_t v = 0;

	put_histories(f.st);
	ck_assert_int_eq(eos_store_lease_acquire(f.st, "box", "b", 0, &v, &err), 0);
	ck_assert_int_eq(eos_store_lease_acquire(f.st, "box", "a", 2, &v, &err), 0);
	ck_assert_int_eq(eos_store_lease_acquire(f.st, "box", "c", 2, &v, &err), 0);
	ck_assert_int_eq(eos_store_lease_acquire(f.st, "next", "a", 5, &v, &err), 0);
	check_leases(f.st, "a=2,b=9,c=2");
	check_versions(f.st, "2,9");
	fixture_reopen(&f);
	check_leases(f.st, "a=2,b=9,c=2");
	/* Re-acquiring moves the lease. */
	ck_assert_int_eq(eos_store_lease_acquire(f.st, "box", "c", 7, &v, &err), 0);
	check_versions(f.st, "2,7,9");
	ck_assert_int_eq(eos_store_lease_release(f.st, "box", "a", &err), 0);
	ck_assert_int_eq(eos_store_lease_release(f.st, "box", "a", &err), -ENOENT);
	ck_assert_str_eq(err.msg, "lease 'a' of sandbox 'box' does not exist");
	fixture_reopen(&f);
	check_leases(f.st, "b=9,c=7");
	check_versions(f.st, "7,9");
	ck_assert_int_eq(eos_store_lease_release(f.st, "next", "a", &err), 0);
	ck_assert_int_eq(eos_store_lease_release(f.st, "nope", "a", &err), -ENOENT);
	eos_test_fixture_close(&f);
}
END_TEST

static Suite *
sandbox_suite(void)
{
	Suite *s = suite_create("sandbox");
	TCase *codec = tcase_create("codec");
	TCase *store = tcase_create("store");

	tcase_add_test(codec, test_meta_and_layer_keys);
	tcase_add_test(codec, test_sandbox_record_codec);
	tcase_add_test(codec, test_layer_record_codec);
	tcase_add_test(codec, test_id_check);
	suite_add_tcase(s, codec);
	tcase_set_timeout(store, 60);
	tcase_add_test(store, test_version_resolution);
	tcase_add_test(store, test_resolve_cache_and_records);
	tcase_add_test(store, test_resolve_many_cached);
	tcase_add_test(store, test_alloc_number_and_head);
	tcase_add_test(store, test_public_sandbox_and_layers);
	tcase_add_test(store, test_leases);
	tcase_add_test(store, test_leases_persist);
	suite_add_tcase(s, store);
	return s;
}

int
main(void)
{
	return eos_test_run(sandbox_suite());
}
