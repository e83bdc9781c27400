/* SPDX-License-Identifier: MIT */
#include "tests/unit/testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/path.h"

#include "store/content.h"
#include "store/kv.h"
#include "store/store-internal.h"

/*
 * Every unit-test program keeps its temporary files in one scratch directory of its own, made
 * its TMPDIR before main() runs and removed when the program exits. A test that fails stops its
 * forked child before its teardown, so per-test cleanup alone left stores behind in /tmp.
 */
static char *scratch;
static pid_t scratch_owner;

static void
scratch_remove(void)
{
	/* forked test children exit too: only the program that made it removes it */
	if (scratch && getpid() == scratch_owner)
		eos_rm_rf(scratch);
}

__attribute__((constructor)) static void
scratch_init(void)
{
	const char *base = getenv("TMPDIR");

	if (!base || !base[0])
		base = "/tmp";
	if (asprintf(&scratch, "%s/eos-unit-XXXXXX", base) < 0 || !mkdtemp(scratch)) {
		free(scratch);
		scratch = NULL;
		return; /* tests then use TMPDIR itself */
	}
	/* like /tmp: tests that switch to another uid create files here too */
	if (chmod(scratch, 01777) < 0 || setenv("TMPDIR", scratch, 1) < 0) {
		rmdir(scratch);
		free(scratch);
		scratch = NULL;
		return;
	}
	scratch_owner = getpid();
	atexit(scratch_remove);
}

char *
eos_test_tmpdir(const char *tag)
{
	const char *base = getenv("TMPDIR");
	char *path = NULL;

	if (!base || !base[0])
		base = "/tmp";
	if (asprintf(&path, "%s/eos-test-%s-XXXXXX", base, tag) < 0)
		ck_abort_msg("out of memory");
	if (!mkdtemp(path))
		ck_abort_msg("mkdtemp '%s' failed", path);
	return path;
}

void
eos_test_rm_rf(const char *path)
{
	if (path)
		eos_rm_rf(path);
}

struct eos_kv *
eos_test_kv_open(const char *dir, bool create)
{
	struct eos_kv_options o = { .threads = 2, .create = create };
	struct eos_error err = { 0 };
	struct eos_kv *kv = NULL;
	int r = eos_kv_open(dir, &o, &kv, &err);

	ck_assert_msg(r == 0, "open '%s': %s", dir, eos_error_message(&err, r));
	return kv;
}

struct eos_store *
eos_test_store_new(char **ret_dir)
{
	struct eos_store_options o = { .create = true, .cache_bytes = 8 << 20 };
	struct eos_error err = { 0 };
	struct eos_store *st = NULL;
	char *dir = eos_test_tmpdir("store");
	int r = eos_store_open(dir, &o, &st, &err);

	ck_assert_msg(r == 0, "open store '%s': %s", dir, eos_error_message(&err, r));
	*ret_dir = dir;
	return st;
}

static void
mkdir_parents(const char *path)
{
	char *copy = strdup(path);

	for (char *p = copy + 1; p && *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(copy, 0755);
			*p = '/';
		}
	free(copy);
}

void
eos_test_write_file(const char *path, const void *data, size_t len, unsigned mode)
{
	cleanup_close int fd = -1;
	const char *p = data;

	mkdir_parents(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	ck_assert_msg(fd >= 0, "create '%s'", path);
	while (len) {
		ssize_t n = write(fd, p, len);

		ck_assert_msg(n > 0, "write '%s'", path);
		p += n;
		len -= (size_t)n;
	}
	fchmod(fd, mode);
}

void
eos_test_make_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	cleanup_close int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_msg(fd >= 0 && strlen(path) < sizeof(sa.sun_path), "socket '%s'", path);
	memcpy(sa.sun_path, path, strlen(path));
	ck_assert_msg(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind '%s'", path);
}

void
eos_test_fill_random(void *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)(x >> 24);
	}
}

struct eos_attr
eos_test_attr(unsigned mode)
{
	struct eos_attr a = {
		.mode = mode,
		.uid = (uint32_t)getuid(),
		.gid = (uint32_t)getgid(),
		.mtime_ns = 1700000000LL * 1000000000LL,
	};
	return a;
}

int
eos_test_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

struct eos_test_fixture
eos_test_fixture_open(void)
{
	struct eos_test_fixture f;

	f.st = eos_test_store_new(&f.dir);
	return f;
}

void
eos_test_fixture_close(struct eos_test_fixture *f)
{
	eos_store_close(f->st);
	eos_test_rm_rf(f->dir);
	free(f->dir);
}

void
eos_test_kv_put(struct eos_store *st, enum eos_cf cf, const struct eos_buf *k, const void *v,
		size_t n)
{
	struct eos_error err = { 0 };
	int r = eos_kv_put(st->kv, cf, k->data, k->len, v, n, true, &err);

	ck_assert_msg(r == 0, "put: %s", eos_error_message(&err, r));
}

void
eos_test_kv_dump(struct eos_store *st, enum eos_cf cf, struct eos_buf *out)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	int r = eos_kv_iter_new(st->kv, cf, NULL, NULL, 0, 0, &it);

	ck_assert_int_eq(r, 0);
	eos_buf_init(out);
	for (eos_kv_iter_seek_first(it); eos_kv_iter_valid(it); eos_kv_iter_next(it)) {
		size_t kn, vn;
		const uint8_t *k = eos_kv_iter_key(it, &kn), *v = eos_kv_iter_value(it, &vn);

		ck_assert_int_eq(eos_buf_append_lp(out, k, kn), 0);
		ck_assert_int_eq(eos_buf_append_lp(out, v, vn), 0);
	}
	ck_assert_int_eq(eos_kv_iter_status(it, NULL), 0);
}

/* --- chunk sets ------------------------------------------------------------------------------- */

void
eos_test_chunk_set_add(struct eos_test_chunk_set *s, const struct eos_digest *d)
{
	struct eos_digest *p = reallocarray(s->v, s->n + 1, sizeof(*p));

	ck_assert_ptr_nonnull(p);
	s->v = p;
	s->v[s->n++] = *d;
}

static int
digest_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct eos_digest));
}

void
eos_test_chunk_set_sort(struct eos_test_chunk_set *s)
{
	size_t out = 0;

	if (s->n == 0)
		return;
	qsort(s->v, s->n, sizeof(*s->v), digest_cmp);
	for (size_t i = 1; i < s->n; i++)
		if (digest_cmp(&s->v[out], &s->v[i]) != 0)
			s->v[++out] = s->v[i];
	s->n = out + 1;
}

bool
eos_test_chunk_set_eq(const struct eos_test_chunk_set *a, const struct eos_test_chunk_set *b)
{
	return a->n == b->n && (a->n == 0 || memcmp(a->v, b->v, a->n * sizeof(*a->v)) == 0);
}

void
eos_test_chunk_set_release(struct eos_test_chunk_set *s)
{
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

void
eos_test_chunk_set_add_content(struct eos_test_chunk_set *s, struct eos_store *st,
			       const struct eos_content *c)
{
	cleanup_free struct eos_manifest *m = NULL;
	struct eos_error err = { 0 };
	int r;

	if (c->kind == EOS_CONTENT_CHUNK)
		eos_test_chunk_set_add(s, &c->digest);
	if (c->kind != EOS_CONTENT_MANIFEST)
		return;
	r = eos_manifest_read(st, &c->digest, &m, &err);
	ck_assert_msg(r == 0, "manifest: %s", eos_error_message(&err, r));
	for (uint32_t i = 0; i < m->n; i++)
		eos_test_chunk_set_add(s, &m->chunks[i].digest);
}

struct eos_test_chunk_set
eos_test_chunk_set_stored(struct eos_store *st)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	struct eos_test_chunk_set s = { 0 };

	ck_assert_int_eq(eos_kv_iter_new(st->kv, EOS_CF_CHUNKS, NULL, NULL, 0, 0, &it), 0);
	for (eos_kv_iter_seek_first(it); eos_kv_iter_valid(it); eos_kv_iter_next(it)) {
		struct eos_digest d;
		size_t n;
		const uint8_t *k = eos_kv_iter_key(it, &n);

		ck_assert_uint_eq(n, EOS_DIGEST_LEN);
		memcpy(d.b, k, EOS_DIGEST_LEN);
		eos_test_chunk_set_add(&s, &d);
	}
	ck_assert_int_eq(eos_kv_iter_status(it, NULL), 0);
	eos_test_chunk_set_sort(&s);
	return s;
}

static int
count_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	(void)key;
	(void)klen;
	(void)val;
	(void)vlen;
	(*(size_t *)ctx)++;
	return 0;
}

size_t
eos_test_session_records(struct eos_store *st, const char *sandbox, const char *session)
{
	struct eos_error err = { 0 };
	size_t n = 0;
	int r = eos_store_session_scan(st, sandbox, session, count_one, &n, &err);

	ck_assert_msg(r >= 0, "scan session '%s': %s", session, eos_error_message(&err, r));
	return n;
}
