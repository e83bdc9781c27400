/* SPDX-License-Identifier: MIT */
/* Workspace sessions of the store: records, leases, delta batches and scans, data directories. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"

#include "store/store.h"
#include "tests/unit/testutil.h"

static const char SBX[] = "sbx";
static const char OTHER[] = "other";

static struct eos_test_fixture fx;

#define ck_ok(r, err) \
	ck_assert_msg((r) >= 0, "line %d: %s", __LINE__, eos_error_message(&(err), (r)))

/* r is code and err's message contains needle. */
#define ck_fails(r, err, code, needle)                                                          \
	do {                                                                                    \
		int r_ = (r);                                                                   \
		ck_assert_msg(r_ == (code), "line %d: returned %d (%s), want %d", __LINE__, r_, \
			      eos_error_message(&(err), r_), (code));                           \
		ck_assert_msg(strstr((err).msg, (needle)), "line %d: message '%s' lacks '%s'",  \
			      __LINE__, (err).msg, (needle));                                   \
	} while (0)

/* --- fixtures -------------------------------------------------------------------------------- */

static void
sandbox_new(const char *id, const char *content)
{
	struct eos_attr root = eos_test_attr(0755), a = eos_test_attr(0644);
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	struct eos_error err = { 0 };
	int r = eos_changeset_new_sandbox(fx.st, id, "test:session", &root, &cs, &err);

	ck_ok(r, err);
	r = eos_changeset_put_file_mem(cs, "f", &a, content, strlen(content), &err);
	ck_ok(r, err);
	r = eos_changeset_commit(cs, 0, NULL, &err);
	ck_ok(r, err);
}

static void
setup(void)
{
	fx = eos_test_fixture_open();
	sandbox_new(SBX, "one");
	sandbox_new(OTHER, "other");
}

static void
teardown(void)
{
	eos_test_fixture_close(&fx);
}

static struct eos_session_info
create(const char *sandbox, const char *name, uint64_t v)
{
	struct eos_session_info info = { 0 };
	struct eos_error err = { 0 };
	int r = eos_store_session_create(fx.st, sandbox, name, v, &info, &err);

	ck_ok(r, err);
	ck_assert_str_eq(info.name, name);
	return info;
}

/* The version of lease name, or 0 when there is none. */
static uint64_t
lease_version(const char *sandbox, const char *name)
{
	cleanup_free struct eos_lease_info *ls = NULL;
	struct eos_error err = { 0 };
	uint64_t v = 0;
	size_t n = 0;
	int r = eos_store_lease_list(fx.st, sandbox, &ls, &n, &err);

	ck_ok(r, err);
	for (size_t i = 0; i < n; i++)
		if (strcmp(ls[i].name, name) == 0)
			v = ls[i].version;
	return v;
}

static uint64_t
commit_f(const char *content)
{
	struct eos_attr a = eos_test_attr(0644);
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	struct eos_commit_result res;
	struct eos_error err = { 0 };
	int r = eos_changeset_new(fx.st, SBX, &cs, &err);

	ck_ok(r, err);
	r = eos_changeset_put_file_mem(cs, "f", &a, content, strlen(content), &err);
	ck_ok(r, err);
	r = eos_changeset_commit(cs, 0, &res, &err);
	ck_ok(r, err);
	return res.version;
}

/* Read the whole file f of SBX at v into buf (NUL-terminated). */
static void
read_f(uint64_t v, char *buf, size_t size)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	struct eos_error err = { 0 };
	int r = eos_store_file_open(fx.st, SBX, v, "f", &f, &err);
	ssize_t n;

	ck_ok(r, err);
	n = eos_file_pread(f, buf, size - 1, 0, &err);
	ck_ok(n, err);
	buf[n] = 0;
}

/* --- delta records ---------------------------------------------------------------------------- */

struct rec {
	uint8_t *k, *v;
	size_t klen, vlen;
};

struct recs {
	struct rec *v;
	size_t n;
	int stop_after; /* 0: never */
};

static void
recs_free(struct recs *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		free(rs->v[i].k);
		free(rs->v[i].v);
	}
	free(rs->v);
	*rs = (struct recs){ 0 };
}

static int
collect(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct recs *rs = ctx;
	struct rec *p = reallocarray(rs->v, rs->n + 1, sizeof(*p));

	ck_assert_ptr_nonnull(p);
	rs->v = p;
	p[rs->n] = (struct rec){
		.k = malloc(klen + 1), .v = malloc(vlen + 1), .klen = klen, .vlen = vlen
	};
	ck_assert(p[rs->n].k && p[rs->n].v);
	memcpy(p[rs->n].k, key, klen);
	memcpy(p[rs->n].v, val, vlen);
	rs->n++;
	return rs->stop_after && (int)rs->n == rs->stop_after ? 42 : 0;
}

static int
stop_negative(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	return collect(ctx, key, klen, val, vlen) ? -ECANCELED : 0;
}

static struct recs
scan(const char *sandbox, const char *name)
{
	struct recs rs = { 0 };
	struct eos_error err = { 0 };
	int r = eos_store_session_scan(fx.st, sandbox, name, collect, &rs, &err);

	ck_ok(r, err);
	ck_assert_int_eq(r, 0);
	return rs;
}

/* A record given as text key and value (lengths explicit, so keys may hold NULs). */
struct kv {
	const char *k;
	size_t klen;
	const char *v;
	size_t vlen;
};

#define KV(k, v)                                       \
	{                                              \
		(k), sizeof(k) - 1, (v), sizeof(v) - 1 \
	}

static void
expect_recs(const struct recs *rs, const struct kv *want, size_t n, int line)
{
	ck_assert_msg(rs->n == n, "line %d: %zu records, want %zu", line, rs->n, n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(rs->v[i].klen == want[i].klen &&
				      memcmp(rs->v[i].k, want[i].k, want[i].klen) == 0,
			      "line %d: record %zu has key '%.*s', want '%.*s'", line, i,
			      (int)rs->v[i].klen, rs->v[i].k, (int)want[i].klen, want[i].k);
		ck_assert_msg(rs->v[i].vlen == want[i].vlen &&
				      memcmp(rs->v[i].v, want[i].v, want[i].vlen) == 0,
			      "line %d: record %zu ('%.*s') has value '%.*s', want '%.*s'", line, i,
			      (int)want[i].klen, want[i].k, (int)rs->v[i].vlen, rs->v[i].v,
			      (int)want[i].vlen, want[i].v);
	}
}

#define EXPECT_RECS(sandbox, name, ...)                                               \
	do {                                                                          \
		const struct kv want_[] = { __VA_ARGS__ };                            \
		struct recs rs_ = scan((sandbox), (name));                            \
		expect_recs(&rs_, want_, sizeof(want_) / sizeof(want_[0]), __LINE__); \
		recs_free(&rs_);                                                      \
	} while (0)

static void
expect_no_recs(const char *sandbox, const char *name)
{
	struct recs rs = scan(sandbox, name);

	ck_assert_msg(rs.n == 0, "session '%s': %zu records, want none", name, rs.n);
	recs_free(&rs);
}

/* A session that does not exist: its scan fails with -ENOENT or finds nothing. */
static void
expect_gone(const char *sandbox, const char *name)
{
	struct recs rs = { 0 };
	int r = eos_store_session_scan(fx.st, sandbox, name, collect, &rs, NULL);

	ck_assert_msg(r == 0 || r == -ENOENT, "scan of '%s': %d", name, r);
	ck_assert_msg(rs.n == 0, "session '%s': %zu records, want none", name, rs.n);
	recs_free(&rs);
}

static struct eos_session_batch *
batch(const char *sandbox, const char *name)
{
	struct eos_session_batch *b = NULL;
	struct eos_error err = { 0 };
	int r = eos_session_batch_new(fx.st, sandbox, name, &b, &err);

	ck_ok(r, err);
	return b;
}

static void
put(struct eos_session_batch *b, const struct kv *kv)
{
	ck_assert_int_eq(eos_session_batch_put(b, kv->k, kv->klen, kv->v, kv->vlen), 0);
}

static void
write_batch(struct eos_session_batch *b, bool sync)
{
	struct eos_error err = { 0 };
	int r = eos_session_batch_write(b, sync, &err);

	ck_ok(r, err);
}

/* Put one record "k" = value into a session, written at once. */
static void
put_one(const char *sandbox, const char *name, const char *k, const char *value)
{
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = batch(sandbox, name);
	struct kv kv = { k, strlen(k), value, strlen(value) };

	put(b, &kv);
	write_batch(b, false);
}

/* --- create / get ---------------------------------------------------------------------------- */

START_TEST(test_create_leases_head)
{
	struct eos_session_info info, got;
	struct eos_error err = { 0 };
	int r;

	info = create(SBX, "s1", 0);
	ck_assert_uint_eq(info.version, 1);
	ck_assert_int_gt(info.created_ns, 0);
	ck_assert_uint_eq(lease_version(SBX, "session:s1"), 1);
	ck_assert_uint_eq(lease_version(OTHER, "session:s1"), 0);
	r = eos_store_session_get(fx.st, SBX, "s1", &got, &err);
	ck_ok(r, err);
	ck_assert_str_eq(got.name, "s1");
	ck_assert_uint_eq(got.version, info.version);
	ck_assert_int_eq(got.created_ns, info.created_ns);
	/* the session follows no head: a later commit leaves it on version 1 */
	ck_assert_uint_eq(commit_f("two"), 2);
	r = eos_store_session_get(fx.st, SBX, "s1", &got, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(got.version, 1);
	/* a new session takes the new head; ret may be NULL */
	r = eos_store_session_create(fx.st, SBX, "s2", 0, NULL, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(lease_version(SBX, "session:s2"), 2);
	/* an explicit older version */
	info = create(SBX, "s3", 1);
	ck_assert_uint_eq(info.version, 1);
	ck_assert_uint_eq(lease_version(SBX, "session:s3"), 1);
}
END_TEST

START_TEST(test_create_twice)
{
	struct eos_error err = { 0 };

	create(SBX, "s1", 0);
	ck_fails(eos_store_session_create(fx.st, SBX, "s1", 0, NULL, &err), err, -EEXIST, "'s1'");
	/* the same name in another sandbox is another session */
	create(OTHER, "s1", 0);
	eos_error_clear(&err);
	ck_fails(eos_store_session_create(fx.st, OTHER, "s1", 0, NULL, &err), err, -EEXIST, "'s1'");
}
END_TEST

START_TEST(test_bad_names)
{
	static const char *const bad[] = { "-x",  ".x",	  "_x", "a/b", "a b",
					   "a:b", "a\nb", "sé", "..",  "x*" };
	char long_name[EOS_SESSION_NAME_MAX + 2], max_name[EOS_SESSION_NAME_MAX + 1];
	char lease[EOS_LEASE_NAME_MAX + 1];
	struct eos_session_batch *b = NULL;
	struct eos_session_info info;
	struct eos_error err = { 0 };
	char *dir = NULL;

	for (size_t i = 0; i < EOS_ARRAY_SIZE(bad); i++) {
		eos_error_clear(&err);
		ck_fails(eos_store_session_create(fx.st, SBX, bad[i], 0, NULL, &err), err, -EINVAL,
			 bad[i]);
		eos_error_clear(&err);
		ck_fails(eos_session_name_check(bad[i], &err), err, -EINVAL, bad[i]);
		eos_error_clear(&err);
		ck_fails(eos_store_session_get(fx.st, SBX, bad[i], &info, &err), err, -EINVAL,
			 bad[i]);
		eos_error_clear(&err);
		ck_fails(eos_store_session_remove(fx.st, SBX, bad[i], &err), err, -EINVAL, bad[i]);
		eos_error_clear(&err);
		ck_fails(eos_session_batch_new(fx.st, SBX, bad[i], &b, &err), err, -EINVAL, bad[i]);
		eos_error_clear(&err);
		ck_fails(eos_store_session_dir(fx.st, SBX, bad[i], &dir, &err), err, -EINVAL,
			 bad[i]);
		eos_error_clear(&err);
		ck_fails(eos_store_session_scan(fx.st, SBX, bad[i], collect, NULL, &err), err,
			 -EINVAL, bad[i]);
	}
	ck_assert_ptr_null(b);
	ck_assert_ptr_null(dir);
	eos_error_clear(&err);
	ck_fails(eos_store_session_create(fx.st, SBX, "", 0, NULL, &err), err, -EINVAL,
		 "session name");
	/* one byte too long is refused, the maximum is fine */
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = 0;
	memcpy(max_name, long_name, sizeof(max_name) - 1);
	max_name[sizeof(max_name) - 1] = 0;
	eos_error_clear(&err);
	ck_fails(eos_store_session_create(fx.st, SBX, long_name, 0, NULL, &err), err, -EINVAL,
		 max_name);
	create(SBX, max_name, 0);
	snprintf(lease, sizeof(lease), "session:%s", max_name);
	ck_assert_uint_eq(lease_version(SBX, lease), 1);
	/* nothing was created by the refusals */
	{
		cleanup_free struct eos_session_info *ls = NULL;
		size_t n = 0;
		int r = eos_store_session_list(fx.st, SBX, &ls, &n, &err);

		ck_ok(r, err);
		ck_assert_uint_eq(n, 1);
		ck_assert_str_eq(ls[0].name, max_name);
	}
}
END_TEST

START_TEST(test_unknown_sandbox_and_version)
{
	cleanup_free struct eos_session_info *ls = NULL;
	struct eos_session_batch *b = NULL;
	struct eos_session_info info;
	struct eos_error err = { 0 };
	size_t n = 0;

	ck_fails(eos_store_session_create(fx.st, "nosuch", "s1", 0, NULL, &err), err, -ENOENT,
		 "nosuch");
	eos_error_clear(&err);
	ck_fails(eos_store_session_get(fx.st, "nosuch", "s1", &info, &err), err, -ENOENT, "nosuch");
	eos_error_clear(&err);
	ck_fails(eos_store_session_list(fx.st, "nosuch", &ls, &n, &err), err, -ENOENT, "nosuch");
	eos_error_clear(&err);
	ck_fails(eos_session_batch_new(fx.st, "nosuch", "s1", &b, &err), err, -ENOENT, "nosuch");
	eos_error_clear(&err);
	ck_fails(eos_store_session_scan(fx.st, "nosuch", "s1", collect, NULL, &err), err, -ENOENT,
		 "nosuch");
	eos_error_clear(&err);
	ck_fails(eos_store_session_remove(fx.st, "nosuch", "s1", &err), err, -ENOENT, "nosuch");
	/* a version that does not exist: no record, no lease */
	eos_error_clear(&err);
	ck_assert_int_eq(eos_store_session_create(fx.st, SBX, "s1", 99, NULL, &err), -ENOENT);
	eos_error_clear(&err);
	ck_fails(eos_store_session_get(fx.st, SBX, "s1", &info, &err), err, -ENOENT,
		 "session 's1' of sandbox 'sbx' does not exist");
	ck_assert_uint_eq(lease_version(SBX, "session:s1"), 0);
	/* removing a session that does not exist */
	eos_error_clear(&err);
	ck_fails(eos_store_session_remove(fx.st, SBX, "s1", &err), err, -ENOENT, "'s1'");
}
END_TEST

/* --- list ------------------------------------------------------------------------------------ */

static void
expect_list(const char *sandbox, const char *const *want, size_t n)
{
	cleanup_free struct eos_session_info *ls = NULL;
	struct eos_error err = { 0 };
	size_t got = 99;
	int r = eos_store_session_list(fx.st, sandbox, &ls, &got, &err);

	ck_ok(r, err);
	ck_assert_msg(got == n, "sandbox '%s': %zu sessions, want %zu", sandbox, got, n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_str_eq(ls[i].name, want[i]);
		ck_assert_uint_eq(ls[i].version, 1);
		ck_assert_int_gt(ls[i].created_ns, 0);
	}
}

START_TEST(test_list_sorted)
{
	static const char *const names[] = { "b", "ab", "a", "c", "a.b", "A", "a-", "a0", "B1" };
	static const char *const sorted[] = { "A", "B1", "a", "a-", "a.b", "a0", "ab", "b", "c" };

	expect_list(SBX, NULL, 0);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(names); i++)
		create(SBX, names[i], 0);
	create(OTHER, "zz", 0);
	expect_list(SBX, sorted, EOS_ARRAY_SIZE(sorted));
	expect_list(OTHER, (const char *const[]){ "zz" }, 1);
}
END_TEST

/* Delta records must not confuse the listing of session records, whatever their keys. */
START_TEST(test_list_ignores_delta_records)
{
	/* the view's node record of inode 82: 'N' · be64 82 ends with the bytes 0x00 'R' */
	static const char node82[] = "N\0\0\0\0\0\0\0R";
	static const char *const want[] = { "a", "ab" };
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;
	struct kv kvs[] = {
		{ node82, sizeof(node82) - 1, "x", 1 },
		KV("x\0R", "v"),
		KV("R", "v"),
		KV("\0R", "12345678901234567"), /* even with a 17-byte value */
	};

	create(SBX, "a", 0);
	create(SBX, "ab", 0);
	b = batch(SBX, "a");
	for (size_t i = 0; i < EOS_ARRAY_SIZE(kvs); i++)
		put(b, &kvs[i]);
	write_batch(b, false);
	expect_list(SBX, want, EOS_ARRAY_SIZE(want));
}
END_TEST

/* --- batches and scans ----------------------------------------------------------------------- */

START_TEST(test_batch_scan_key_order)
{
	const struct kv kvs[] = {
		KV("m", "middle"),  KV("b", "bee"),   KV("a\0z", "nul inside"),
		KV("\xff", "high"), KV("a", "first"), KV("ab", "after a"),
		KV("gone", "x"),    KV("empty", ""),  KV("\0", "nul"),
	};
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;

	create(SBX, "s", 0);
	expect_no_recs(SBX, "s");
	b = batch(SBX, "s");
	for (size_t i = 0; i < EOS_ARRAY_SIZE(kvs); i++)
		put(b, &kvs[i]);
	/* nothing is visible before the write */
	expect_no_recs(SBX, "s");
	write_batch(b, false);
	/* the batch is reusable: overwrite, delete, delete a key never written */
	put(b, &(struct kv)KV("m", "changed"));
	ck_assert_int_eq(eos_session_batch_delete(b, "gone", 4), 0);
	ck_assert_int_eq(eos_session_batch_delete(b, "never", 5), 0);
	write_batch(b, true);
	EXPECT_RECS(SBX, "s", KV("\0", "nul"), KV("a", "first"), KV("a\0z", "nul inside"),
		    KV("ab", "after a"), KV("b", "bee"), KV("empty", ""), KV("m", "changed"),
		    KV("\xff", "high"));
	/* put then delete in one batch: the last change wins */
	put(b, &(struct kv)KV("p", "1"));
	ck_assert_int_eq(eos_session_batch_delete(b, "p", 1), 0);
	ck_assert_int_eq(eos_session_batch_delete(b, "b", 1), 0);
	put(b, &(struct kv)KV("b", "again"));
	write_batch(b, false);
	/* an empty batch writes nothing and fails nothing, synced or not */
	write_batch(b, false);
	write_batch(b, true);
	EXPECT_RECS(SBX, "s", KV("\0", "nul"), KV("a", "first"), KV("a\0z", "nul inside"),
		    KV("ab", "after a"), KV("b", "again"), KV("empty", ""), KV("m", "changed"),
		    KV("\xff", "high"));
}
END_TEST

START_TEST(test_batch_key_limits)
{
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;
	char key[1025];
	struct recs rs;

	memset(key, 'k', sizeof(key));
	create(SBX, "s", 0);
	b = batch(SBX, "s");
	ck_assert_int_eq(eos_session_batch_put(b, key, 0, "v", 1), -EINVAL);
	ck_assert_int_eq(eos_session_batch_delete(b, key, 0), -EINVAL);
	ck_assert_int_eq(eos_session_batch_put(b, key, 1025, "v", 1), -EINVAL);
	ck_assert_int_eq(eos_session_batch_delete(b, key, 1025), -EINVAL);
	ck_assert_int_eq(eos_session_batch_put(b, key, 1024, "v", 1), 0);
	write_batch(b, false);
	rs = scan(SBX, "s");
	ck_assert_uint_eq(rs.n, 1);
	ck_assert_uint_eq(rs.v[0].klen, 1024);
	recs_free(&rs);
}
END_TEST

START_TEST(test_scan_stops_early)
{
	struct recs rs = { .stop_after = 2 };
	struct eos_error err = { 0 };
	int r;

	create(SBX, "s", 0);
	put_one(SBX, "s", "a", "1");
	put_one(SBX, "s", "b", "2");
	put_one(SBX, "s", "c", "3");
	r = eos_store_session_scan(fx.st, SBX, "s", collect, &rs, &err);
	ck_assert_msg(rs.n == 2, "a positive return did not stop the scan: %zu records", rs.n);
	ck_assert_int_eq(r, 42); /* as eos_store_readdir: fn's non-zero value */
	recs_free(&rs);
	/* a negative return stops it too, and is returned */
	rs = (struct recs){ .stop_after = 1 };
	r = eos_store_session_scan(fx.st, SBX, "s", stop_negative, &rs, &err);
	ck_assert_int_eq(r, -ECANCELED);
	ck_assert_uint_eq(rs.n, 1);
	recs_free(&rs);
}
END_TEST

START_TEST(test_scan_isolation)
{
	create(SBX, "a", 0);
	create(SBX, "ab", 0);
	create(SBX, "a.b", 0);
	create(SBX, "b", 0);
	create(OTHER, "a", 0);
	put_one(SBX, "a", "k", "sbx/a");
	put_one(SBX, "a", "\xff\xff", "sbx/a high");
	put_one(SBX, "ab", "k", "sbx/ab");
	{
		EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = batch(SBX, "ab");

		put(b, &(struct kv)KV("\0", "sbx/ab low"));
		write_batch(b, false);
	}
	put_one(SBX, "a.b", "k", "sbx/a.b");
	put_one(OTHER, "a", "k", "other/a");
	EXPECT_RECS(SBX, "a", KV("k", "sbx/a"), KV("\xff\xff", "sbx/a high"));
	EXPECT_RECS(SBX, "ab", KV("\0", "sbx/ab low"), KV("k", "sbx/ab"));
	EXPECT_RECS(SBX, "a.b", KV("k", "sbx/a.b"));
	EXPECT_RECS(OTHER, "a", KV("k", "other/a"));
	expect_no_recs(SBX, "b");
	expect_gone(OTHER, "ab");
}
END_TEST

/* --- remove / dir ---------------------------------------------------------------------------- */

static char *
session_dir(const char *sandbox, const char *name)
{
	struct eos_error err = { 0 };
	char *dir = NULL;
	int r = eos_store_session_dir(fx.st, sandbox, name, &dir, &err);

	ck_ok(r, err);
	return dir;
}

static bool
exists(const char *path)
{
	struct stat sb;

	return lstat(path, &sb) == 0;
}

START_TEST(test_session_dir)
{
	cleanup_free char *dir = NULL, *again = NULL, *want = NULL;
	struct stat sb;

	create(SBX, "s", 0);
	dir = session_dir(SBX, "s");
	ck_assert_int_ge(asprintf(&want, "%s/sessions/%s/s", fx.dir, SBX), 0);
	ck_assert_str_eq(dir, want);
	ck_assert_int_eq(stat(dir, &sb), 0);
	ck_assert(S_ISDIR(sb.st_mode));
	ck_assert_uint_eq(sb.st_mode & 07777, 0700);
	/* again: same path, contents kept */
	free(want);
	want = NULL;
	ck_assert_int_ge(asprintf(&want, "%s/file", dir), 0);
	eos_test_write_file(want, "data", 4, 0600);
	again = session_dir(SBX, "s");
	ck_assert_str_eq(again, dir);
	ck_assert(exists(want));
}
END_TEST

START_TEST(test_remove)
{
	cleanup_free char *dir_a = NULL, *dir_ab = NULL, *file = NULL;
	struct eos_session_info info;
	struct eos_error err = { 0 };
	int r;

	create(SBX, "a", 0);
	create(SBX, "ab", 0);
	put_one(SBX, "a", "k1", "v1");
	put_one(SBX, "a", "k2", "v2");
	put_one(SBX, "ab", "k1", "ab");
	dir_a = session_dir(SBX, "a");
	dir_ab = session_dir(SBX, "ab");
	ck_assert_int_ge(asprintf(&file, "%s/sub/0000000000000002", dir_a), 0);
	eos_test_write_file(file, "data", 4, 0600);

	r = eos_store_session_remove(fx.st, SBX, "a", &err);
	ck_ok(r, err);
	/* record, lease, records and directory are gone */
	eos_error_clear(&err);
	ck_fails(eos_store_session_get(fx.st, SBX, "a", &info, &err), err, -ENOENT, "'a'");
	ck_assert_uint_eq(lease_version(SBX, "session:a"), 0);
	expect_gone(SBX, "a");
	ck_assert(!exists(dir_a));
	/* the session whose name extends it is untouched */
	r = eos_store_session_get(fx.st, SBX, "ab", &info, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(lease_version(SBX, "session:ab"), 1);
	EXPECT_RECS(SBX, "ab", KV("k1", "ab"));
	ck_assert(exists(dir_ab));
	expect_list(SBX, (const char *const[]){ "ab" }, 1);
	/* twice */
	eos_error_clear(&err);
	ck_fails(eos_store_session_remove(fx.st, SBX, "a", &err), err, -ENOENT, "'a'");
	/* a session never given a directory is removed too */
	create(SBX, "nodir", 0);
	r = eos_store_session_remove(fx.st, SBX, "nodir", &err);
	ck_ok(r, err);
	/* a new session of the same name starts empty */
	create(SBX, "a", 0);
	expect_no_recs(SBX, "a");
	ck_assert_uint_eq(lease_version(SBX, "session:a"), 1);
}
END_TEST

/* Destroying the sandbox takes its sessions along: records, leases and data directories. */
START_TEST(test_sandbox_destroy)
{
	cleanup_free char *dir = NULL, *file = NULL;
	struct eos_session_info info;
	struct eos_error err = { 0 };
	int r;

	create(SBX, "s", 0);
	create(OTHER, "s", 0);
	put_one(SBX, "s", "k", "v");
	put_one(OTHER, "s", "k", "other");
	dir = session_dir(SBX, "s");
	ck_assert_int_ge(asprintf(&file, "%s/0000000000000002", dir), 0);
	eos_test_write_file(file, "data", 4, 0600);
	r = eos_store_sandbox_destroy(fx.st, SBX, &err);
	ck_ok(r, err);
	ck_assert_int_eq(eos_store_session_get(fx.st, SBX, "s", &info, NULL), -ENOENT);
	ck_assert_msg(!exists(dir), "session directory '%s' outlives its sandbox", dir);
	/* a new sandbox of the same id starts without sessions */
	sandbox_new(SBX, "again");
	expect_list(SBX, NULL, 0);
	expect_gone(SBX, "s");
	EXPECT_RECS(OTHER, "s", KV("k", "other"));
}
END_TEST

/* --- leases and squash ----------------------------------------------------------------------- */

START_TEST(test_lease_survives_squash)
{
	cleanup_free char *src = eos_test_tmpdir("session-src"), *path = NULL;
	struct eos_import_options io = { .sandbox = "imp", .threads = 1 };
	struct eos_import_result ir;
	struct eos_squash_result sq;
	struct eos_session_info info;
	struct eos_error err = { 0 };
	struct eos_stat s;
	char buf[64];
	int r;

	/* the fixture's sandbox SBX is used for the history; "imp" checks import works too */
	ck_assert_int_ge(asprintf(&path, "%s/f", src), 0);
	eos_test_write_file(path, "imported", 8, 0644);
	r = eos_store_import(fx.st, src, &io, &ir, &err);
	ck_ok(r, err);
	create("imp", "s", 0);
	ck_assert_uint_eq(lease_version("imp", "session:s"), 1);

	ck_assert_uint_eq(commit_f("two"), 2);
	info = create(SBX, "mid", 0);
	ck_assert_uint_eq(info.version, 2);
	ck_assert_uint_eq(commit_f("three"), 3);
	ck_assert_uint_eq(commit_f("four"), 4);
	ck_assert_uint_eq(lease_version(SBX, "session:mid"), 2);
	r = eos_store_squash(fx.st, SBX, &sq, &err);
	ck_ok(r, err);
	ck_assert_uint_ge(sq.layers_removed, 1);
	/* version 3 was squashed, the session's version 2 still reads as it did */
	eos_error_clear(&err);
	ck_fails(eos_store_stat(fx.st, SBX, 3, "f", &s, &err), err, -ENOENT, "squashed");
	read_f(2, buf, sizeof(buf));
	ck_assert_str_eq(buf, "two");
	read_f(4, buf, sizeof(buf));
	ck_assert_str_eq(buf, "four");
	r = eos_store_session_get(fx.st, SBX, "mid", &info, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(info.version, 2);

	/* without the session, the next squash folds version 2 away */
	r = eos_store_session_remove(fx.st, SBX, "mid", &err);
	ck_ok(r, err);
	r = eos_store_squash(fx.st, SBX, &sq, &err);
	ck_ok(r, err);
	eos_error_clear(&err);
	ck_fails(eos_store_stat(fx.st, SBX, 2, "f", &s, &err), err, -ENOENT, "squashed");
	eos_test_rm_rf(src);
}
END_TEST

/* --- persistence ----------------------------------------------------------------------------- */

START_TEST(test_reopen)
{
	struct eos_store_options o = { .create = false, .cache_bytes = 8 << 20 };
	struct eos_session_info before, after;
	struct eos_error err = { 0 };
	int r;

	before = create(SBX, "s", 0);
	create(SBX, "t", 0);
	put_one(SBX, "s", "k", "v");
	put_one(SBX, "t", "k", "w");
	r = eos_store_session_remove(fx.st, SBX, "t", &err);
	ck_ok(r, err);
	eos_store_close(fx.st);
	fx.st = NULL;
	r = eos_store_open(fx.dir, &o, &fx.st, &err);
	ck_ok(r, err);
	r = eos_store_session_get(fx.st, SBX, "s", &after, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(after.version, before.version);
	ck_assert_int_eq(after.created_ns, before.created_ns);
	ck_assert_uint_eq(lease_version(SBX, "session:s"), 1);
	ck_assert_uint_eq(lease_version(SBX, "session:t"), 0);
	expect_list(SBX, (const char *const[]){ "s" }, 1);
	EXPECT_RECS(SBX, "s", KV("k", "v"));
	expect_gone(SBX, "t");
}
END_TEST

static Suite *
session_suite(void)
{
	Suite *s = suite_create("session");
	TCase *tc = tcase_create("session");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_create_leases_head);
	tcase_add_test(tc, test_create_twice);
	tcase_add_test(tc, test_bad_names);
	tcase_add_test(tc, test_unknown_sandbox_and_version);
	tcase_add_test(tc, test_list_sorted);
	tcase_add_test(tc, test_list_ignores_delta_records);
	tcase_add_test(tc, test_batch_scan_key_order);
	tcase_add_test(tc, test_batch_key_limits);
	tcase_add_test(tc, test_scan_stops_early);
	tcase_add_test(tc, test_scan_isolation);
	tcase_add_test(tc, test_session_dir);
	tcase_add_test(tc, test_remove);
	tcase_add_test(tc, test_sandbox_destroy);
	tcase_add_test(tc, test_lease_survives_squash);
	tcase_add_test(tc, test_reopen);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(session_suite());
}
