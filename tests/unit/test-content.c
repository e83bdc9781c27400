/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/digest.h"

#include "store/chunker.h"
#include "store/codec.h"
#include "store/content.h"
#include "store/kv.h"
#include "store/refs.h"
#include "store/store-internal.h"
#include "tests/unit/testutil.h"

enum {
	BIG = 5 << 20,
	MID = 2 << 20,
};

/* A store in a temp dir, removed at the end of the test. */
struct fixture {
	struct eos_store *st;
	char *dir;
	struct eos_content_writer *w;
};

static void
fixture_open(struct fixture *fx)
{
	fx->st = eos_test_store_new(&fx->dir);
	ck_assert_int_eq(eos_content_writer_new(fx->st, &fx->w), 0);
}

static void
fixture_close(struct fixture *fx)
{
	eos_content_writer_free(fx->w);
	eos_store_close(fx->st);
	eos_test_rm_rf(fx->dir);
	free(fx->dir);
}

static uint8_t *
random_buf(size_t n, uint64_t seed)
{
	uint8_t *p = malloc(n ? n : 1);

	ck_assert_ptr_nonnull(p);
	eos_test_fill_random(p, n, seed);
	return p;
}

static struct eos_content
put_mem(struct eos_content_writer *w, const void *p, size_t n)
{
	struct eos_error err = { 0 };
	struct eos_content c;
	int r = eos_content_put_mem(w, p, n, &c, &err);

	ck_assert_msg(r == 0, "put %zu bytes: %s", n, eos_error_message(&err, r));
	ck_assert_uint_eq(c.size, n);
	return c;
}

static void
assert_digest_of(const struct eos_content *c, const void *p, size_t n)
{
	struct eos_digest d;

	ck_assert_int_eq(eos_sha256(p, n, &d), 0);
	ck_assert(eos_digest_eq(&c->digest, &d));
}

START_TEST(test_kind_by_size)
{
	struct fixture fx;
	cleanup_free uint8_t *p = random_buf(MID, 1);
	static const size_t inline_sizes[] = { 0, 1, 100, EOS_INLINE_MAX };
	static const size_t chunk_sizes[] = { EOS_INLINE_MAX + 1, 4096, EOS_CHUNK_MIN };

	fixture_open(&fx);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(inline_sizes); i++) {
		struct eos_content c = put_mem(fx.w, p, inline_sizes[i]);

		ck_assert_int_eq(c.kind, EOS_CONTENT_INLINE);
		ck_assert_uint_eq(c.inline_len, inline_sizes[i]);
		ck_assert(memcmp(c.inline_data, p, inline_sizes[i]) == 0);
		assert_digest_of(&c, p, inline_sizes[i]);
	}
	for (size_t i = 0; i < EOS_ARRAY_SIZE(chunk_sizes); i++) {
		struct eos_content c = put_mem(fx.w, p, chunk_sizes[i]);

		ck_assert_int_eq(c.kind, EOS_CONTENT_CHUNK);
		assert_digest_of(&c, p, chunk_sizes[i]);
	}
	{
		struct eos_content c = put_mem(fx.w, p, MID);

		ck_assert_int_eq(c.kind, EOS_CONTENT_MANIFEST);
		assert_digest_of(&c, p, MID);
	}
	fixture_close(&fx);
}
END_TEST

START_TEST(test_manifest_record)
{
	struct fixture fx;
	cleanup_free uint8_t *p = random_buf(MID, 2);
	cleanup_free struct eos_manifest *m = NULL;
	struct eos_error err = { 0 };
	struct eos_content c;
	uint64_t off = 0;
	int r;

	fixture_open(&fx);
	c = put_mem(fx.w, p, MID);
	r = eos_manifest_read(fx.st, &c.digest, &m, &err);
	ck_assert_msg(r == 0, "%s", eos_error_message(&err, r));
	ck_assert_uint_eq(m->size, MID);
	ck_assert_uint_gt(m->n, 1);
	for (uint32_t i = 0; i < m->n; i++) {
		EOS_CLEANUP(eos_cached_chunk_unrefp) struct eos_cached_chunk *ch = NULL;

		ck_assert_uint_eq(m->chunks[i].off, off);
		ck_assert_uint_eq(m->chunks[i].len, eos_chunker_cut(p + off, MID - off));
		ck_assert_int_eq(eos_chunk_read(fx.st, &m->chunks[i].digest, &ch, &err), 0);
		ck_assert(ch->len == m->chunks[i].len && memcmp(ch->data, p + off, ch->len) == 0);
		off += m->chunks[i].len;
	}
	fixture_close(&fx);
}
END_TEST

static struct eos_manifest *
manifest_new(uint32_t n)
{
	struct eos_manifest *m = calloc(1, sizeof(*m) + n * sizeof(m->chunks[0]));

	ck_assert_ptr_nonnull(m);
	m->n = n;
	for (uint32_t i = 0; i < n; i++) {
		memset(m->chunks[i].digest.b, (int)i + 1, EOS_DIGEST_LEN);
		m->chunks[i].len = 1000 + i;
		m->chunks[i].off = m->size;
		m->size += m->chunks[i].len;
	}
	return m;
}

static void
expect_malformed(const struct eos_buf *rec, size_t len)
{
	struct eos_manifest *m = NULL;

	ck_assert_int_eq(eos_manifest_decode(rec->data, len, &m), -EBADMSG);
	ck_assert_ptr_null(m);
}

START_TEST(test_manifest_codec)
{
	cleanup_free struct eos_manifest *m = manifest_new(5);
	cleanup_free struct eos_manifest *back = NULL;
	struct eos_buf rec = { 0 };

	ck_assert_int_eq(eos_manifest_encode(m, &rec), 0);
	ck_assert_uint_eq(rec.len, 5 + 5 * (EOS_DIGEST_LEN + 4));
	ck_assert_int_eq(eos_manifest_decode(rec.data, rec.len, &back), 0);
	ck_assert_uint_eq(back->n, 5);
	ck_assert_uint_eq(back->size, m->size);
	ck_assert(memcmp(back->chunks, m->chunks, 5 * sizeof(m->chunks[0])) == 0);
	expect_malformed(&rec, rec.len - 1);
	expect_malformed(&rec, 4);
	expect_malformed(&rec, 0);
	ck_assert_int_eq(eos_buf_append_u8(&rec, 0), 0);
	expect_malformed(&rec, rec.len); /* trailing byte */
	rec.data[0] = 2;		 /* format */
	expect_malformed(&rec, rec.len - 1);
	rec.data[0] = 1;
	rec.data[1] = 6; /* count */
	expect_malformed(&rec, rec.len - 1);
	rec.data[1] = 5;
	memset(rec.data + 5 + EOS_DIGEST_LEN, 0, 4); /* a zero-length chunk */
	expect_malformed(&rec, rec.len - 1);
	eos_buf_release(&rec);
	ck_assert_int_eq(eos_buf_append(&rec, "\x01\0\0\0\0", 5), 0); /* no chunks */
	expect_malformed(&rec, rec.len);
	eos_buf_release(&rec);
}
END_TEST

static char *
write_temp(const char *dir, const void *p, size_t n)
{
	char *path = NULL;

	ck_assert_int_ge(asprintf(&path, "%s/input", dir), 0);
	eos_test_write_file(path, p, n, 0644);
	return path;
}

static struct eos_content
put_path(struct eos_content_writer *w, const char *path)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct eos_error err = { 0 };
	struct eos_content c;
	int r;

	ck_assert_int_ge(fd, 0);
	r = eos_content_put_fd(w, fd, &c, &err);
	ck_assert_msg(r == 0, "put_fd '%s': %s", path, eos_error_message(&err, r));
	return c;
}

static void
assert_same_content(const struct eos_content *a, const struct eos_content *b)
{
	ck_assert_int_eq(a->kind, b->kind);
	ck_assert_uint_eq(a->size, b->size);
	ck_assert(eos_digest_eq(&a->digest, &b->digest));
	ck_assert_uint_eq(a->inline_len, b->inline_len);
	ck_assert(memcmp(a->inline_data, b->inline_data, a->inline_len) == 0);
}

START_TEST(test_put_fd_equals_put_mem)
{
	static const size_t sizes[] = { 0, 200, EOS_INLINE_MAX + 1, 100 * 1024, MID, BIG };
	struct fixture fx;
	cleanup_free uint8_t *p = random_buf(BIG, 3);
	cleanup_free char *tmp = eos_test_tmpdir("content-fd");

	fixture_open(&fx);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(sizes); i++) {
		cleanup_free char *path = write_temp(tmp, p, sizes[i]);
		struct eos_content a = put_mem(fx.w, p, sizes[i]);
		struct eos_content b = put_path(fx.w, path);

		assert_same_content(&a, &b);
	}
	ck_assert_int_eq(put_mem(fx.w, p, BIG).kind, EOS_CONTENT_MANIFEST);
	fixture_close(&fx);
	eos_test_rm_rf(tmp);
}
END_TEST

struct pipe_feed {
	int fd;
	const uint8_t *p;
	size_t n;
};

/* Write in small odd-sized pieces so the reader sees short reads. */
static void *
pipe_writer(void *arg)
{
	struct pipe_feed *f = arg;
	size_t off = 0;

	while (off < f->n) {
		ssize_t w = write(f->fd, f->p + off, EOS_MIN((size_t)1777, f->n - off));

		if (w <= 0)
			break;
		off += (size_t)w;
	}
	close(f->fd);
	return NULL;
}

START_TEST(test_put_fd_from_pipe)
{
	struct fixture fx;
	cleanup_free uint8_t *p = random_buf(MID + 12345, 4);
	struct eos_content a, b;
	struct pipe_feed feed = { .p = p, .n = MID + 12345 };
	struct eos_error err = { 0 };
	pthread_t t;
	int fds[2];
	int r;

	fixture_open(&fx);
	ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	feed.fd = fds[1];
	ck_assert_int_eq(pthread_create(&t, NULL, pipe_writer, &feed), 0);
	r = eos_content_put_fd(fx.w, fds[0], &b, &err);
	ck_assert_msg(r == 0, "%s", eos_error_message(&err, r));
	pthread_join(t, NULL);
	close(fds[0]);
	a = put_mem(fx.w, p, MID + 12345);
	assert_same_content(&a, &b);
	fixture_close(&fx);
}
END_TEST

START_TEST(test_put_fd_read_error)
{
	struct fixture fx;
	struct eos_error err = { 0 };
	struct eos_content c;
	cleanup_close int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	fixture_open(&fx);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(eos_content_put_fd(fx.w, fd, &c, &err), -EISDIR);
	ck_assert_msg(strstr(err.msg, "read") != NULL, "message '%s'", err.msg);
	fixture_close(&fx);
}
END_TEST

static struct eos_file *
open_content(struct eos_store *st, const struct eos_content *c)
{
	struct eos_error err = { 0 };
	struct eos_file *f = NULL;
	int r = eos_store_file_open_content(st, c, &f, &err);

	ck_assert_msg(r == 0, "open content: %s", eos_error_message(&err, r));
	ck_assert_uint_eq(eos_file_size(f), c->size);
	return f;
}

/* Read [off, off + len) and compare with the source p of n bytes. */
static void
check_range(struct eos_file *f, const uint8_t *p, size_t n, uint64_t off, size_t len)
{
	cleanup_free uint8_t *buf = malloc(len + 1);
	struct eos_error err = { 0 };
	size_t want = off >= n ? 0 : EOS_MIN(len, n - (size_t)off);
	ssize_t r;

	ck_assert_ptr_nonnull(buf);
	r = eos_file_pread(f, buf, len, off, &err);
	ck_assert_msg(r == (ssize_t)want, "pread %zu at %llu: %zd (%s), expected %zu", len,
		      (unsigned long long)off, r, eos_error_message(&err, (int)r), want);
	ck_assert(want == 0 || memcmp(buf, p + off, want) == 0);
}

static void
check_reads(struct eos_store *st, const struct eos_content *c, const uint8_t *p, size_t n)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = open_content(st, c);
	uint64_t x = n * 2654435761u + 1;

	check_range(f, p, n, 0, n);
	check_range(f, p, n, 0, n + 100);
	check_range(f, p, n, n, 10);
	check_range(f, p, n, n + 1000, 10);
	check_range(f, p, n, 0, 0);
	for (int i = 0; i < 200; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		size_t off = (size_t)(x >> 33) % (n + 10);
		size_t len = (size_t)(x >> 13) % (i % 4 == 0 ? 600000 : 5000);

		check_range(f, p, n, off, len);
	}
	/* Around every chunk boundary. */
	for (size_t off = 0; off < n; off += eos_chunker_cut(p + off, n - off))
		check_range(f, p, n, off > 7 ? off - 7 : 0, 14);
}

START_TEST(test_read_ranges)
{
	static const size_t sizes[] = { 0, 1, EOS_INLINE_MAX, 5000, 200 * 1024, BIG };
	struct fixture fx;
	cleanup_free uint8_t *p = random_buf(BIG, 5);

	fixture_open(&fx);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(sizes); i++) {
		struct eos_content c = put_mem(fx.w, p, sizes[i]);

		check_reads(fx.st, &c, p, sizes[i]);
	}
	fixture_close(&fx);
}
END_TEST

/* Reopen the store with a cache too small to hold a chunk, so every read decodes. */
static void
reopen_uncached(struct fixture *fx)
{
	struct eos_store_options o = { .cache_bytes = 1 };
	struct eos_error err = { 0 };
	int r;

	eos_content_writer_free(fx->w);
	eos_store_close(fx->st);
	fx->w = NULL;
	r = eos_store_open(fx->dir, &o, &fx->st, &err);
	ck_assert_msg(r == 0, "reopen: %s", eos_error_message(&err, r));
	ck_assert_int_eq(eos_content_writer_new(fx->st, &fx->w), 0);
}

static void
flip_stored_byte(struct eos_store *st, const struct eos_digest *d)
{
	struct eos_buf frame = { 0 };

	ck_assert_int_eq(
		eos_kv_get(st->kv, NULL, EOS_CF_CHUNKS, d->b, EOS_DIGEST_LEN, &frame, NULL), 0);
	ck_assert_uint_gt(frame.len, EOS_CODEC_HEADER_LEN + 100);
	frame.data[EOS_CODEC_HEADER_LEN + (frame.len - EOS_CODEC_HEADER_LEN) / 2] ^= 0x10;
	ck_assert_int_eq(eos_kv_put(st->kv, EOS_CF_CHUNKS, d->b, EOS_DIGEST_LEN, frame.data,
				    frame.len, false, NULL),
			 0);
	eos_buf_release(&frame);
}

START_TEST(test_flipped_byte_detected_on_read)
{
	struct fixture fx;
	cleanup_free uint8_t *p = random_buf(MID, 6);
	cleanup_free struct eos_manifest *m = NULL;
	cleanup_free uint8_t *buf = malloc(MID);
	struct eos_error err = { 0 };
	char hex[EOS_DIGEST_HEX_LEN + 1];
	struct eos_content c;
	ssize_t r;

	fixture_open(&fx);
	c = put_mem(fx.w, p, MID);
	ck_assert_int_eq(eos_manifest_read(fx.st, &c.digest, &m, NULL), 0);
	flip_stored_byte(fx.st, &m->chunks[1].digest);
	eos_digest_hex(&m->chunks[1].digest, hex);
	reopen_uncached(&fx);
	{
		EOS_CLEANUP(eos_file_closep) struct eos_file *f = open_content(fx.st, &c);

		/* The chunks before it read fine; any range touching it fails. */
		check_range(f, p, MID, 0, m->chunks[1].off);
		r = eos_file_pread(f, buf, MID, 0, &err);
		ck_assert_int_eq(r, -EBADMSG);
		ck_assert_msg(strstr(err.msg, hex) != NULL, "message '%s' lacks '%s'", err.msg,
			      hex);
		eos_error_clear(&err);
		r = eos_file_pread(f, buf, 1, m->chunks[1].off + m->chunks[1].len - 1, &err);
		ck_assert_int_eq(r, -EBADMSG);
		ck_assert(strstr(err.msg, hex) != NULL);
	}
	fixture_close(&fx);
}
END_TEST

START_TEST(test_missing_objects)
{
	struct fixture fx;
	cleanup_free uint8_t *p = random_buf(MID, 7);
	struct eos_error err = { 0 };
	char hex[EOS_DIGEST_HEX_LEN + 1];
	struct eos_file *f = NULL;
	struct eos_content c, one;
	uint8_t b;

	fixture_open(&fx);
	c = put_mem(fx.w, p, MID);
	one = put_mem(fx.w, p, 3000);
	ck_assert_int_eq(
		eos_kv_delete(fx.st->kv, EOS_CF_CHUNKS, one.digest.b, EOS_DIGEST_LEN, false, NULL),
		0);
	ck_assert_int_eq(
		eos_kv_delete(fx.st->kv, EOS_CF_MANIFESTS, c.digest.b, EOS_DIGEST_LEN, false, NULL),
		0);
	reopen_uncached(&fx);
	eos_digest_hex(&c.digest, hex);
	ck_assert_int_eq(eos_store_file_open_content(fx.st, &c, &f, &err), -ENOENT);
	ck_assert_msg(strstr(err.msg, hex) && strstr(err.msg, "missing"), "'%s'", err.msg);
	f = open_content(fx.st, &one);
	eos_digest_hex(&one.digest, hex);
	ck_assert_int_eq(eos_file_pread(f, &b, 1, 0, &err), -ENOENT);
	ck_assert_msg(strstr(err.msg, hex) && strstr(err.msg, "missing"), "'%s'", err.msg);
	eos_file_close(f);
	fixture_close(&fx);
}
END_TEST

/* Commit references for c the way a changeset commit does. */
static void
add_refs(struct eos_store *st, const struct eos_content *c)
{
	EOS_CLEANUP(eos_refdelta_freep) struct eos_refdelta *d = NULL;
	EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *b = NULL;
	struct eos_error err = { 0 };
	int r;

	ck_assert_int_eq(eos_refdelta_new(&d), 0);
	ck_assert_int_eq(eos_kv_batch_new(&b), 0);
	ck_assert_int_eq(eos_refdelta_add_content(d, c, 1), 0);
	pthread_mutex_lock(&st->write_lock);
	r = eos_refdelta_apply(st, d, b, NULL, &err);
	if (r == 0)
		r = eos_kv_batch_write(st->kv, b, true, &err);
	pthread_mutex_unlock(&st->write_lock);
	ck_assert_msg(r == 0, "%s", eos_error_message(&err, r));
}

START_TEST(test_dedup)
{
	struct fixture fx;
	cleanup_free uint8_t *p = random_buf(MID, 8);
	struct eos_content_writer_stats s1, s2, s3;
	struct eos_content_writer *w2 = NULL;
	struct eos_content a, b;

	fixture_open(&fx);
	a = put_mem(fx.w, p, MID);
	eos_content_writer_stats(fx.w, &s1);
	ck_assert_uint_eq(s1.raw_bytes, MID);
	ck_assert_uint_gt(s1.chunks_written, 1);
	ck_assert_uint_ge(s1.stored_bytes, MID);
	/* Same writer: nothing new. */
	b = put_mem(fx.w, p, MID);
	assert_same_content(&a, &b);
	eos_content_writer_stats(fx.w, &s2);
	ck_assert_uint_eq(s2.raw_bytes, 2 * MID);
	ck_assert_uint_eq(s2.chunks_written, s1.chunks_written);
	ck_assert_uint_eq(s2.stored_bytes, s1.stored_bytes);
	/* Another writer after the content is referenced by the store: nothing new either. */
	add_refs(fx.st, &a);
	ck_assert_int_eq(eos_content_writer_new(fx.st, &w2), 0);
	b = put_mem(w2, p, MID);
	assert_same_content(&a, &b);
	eos_content_writer_stats(w2, &s3);
	ck_assert_uint_eq(s3.raw_bytes, MID);
	ck_assert_uint_eq(s3.chunks_written, 0);
	ck_assert_uint_eq(s3.stored_bytes, 0);
	eos_content_writer_free(w2);
	fixture_close(&fx);
}
END_TEST

struct put_job {
	struct eos_content_writer *w;
	const uint8_t *p;
	size_t n;
	struct eos_content c;
	int r;
};

static void *
put_thread(void *arg)
{
	struct put_job *j = arg;

	j->r = eos_content_put_mem(j->w, j->p, j->n, &j->c, NULL);
	return NULL;
}

START_TEST(test_concurrent_puts)
{
	struct fixture fx;
	cleanup_free uint8_t *p = random_buf(MID, 9);
	struct put_job jobs[4];
	pthread_t t[4];

	fixture_open(&fx);
	for (int i = 0; i < 4; i++) {
		/* Overlapping contents: shared chunks are deduplicated across threads. */
		jobs[i] = (struct put_job){ .w = fx.w, .p = p + i * 1000, .n = MID - 3000 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, put_thread, &jobs[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
		ck_assert_int_eq(jobs[i].r, 0);
		check_reads(fx.st, &jobs[i].c, jobs[i].p, jobs[i].n);
	}
	fixture_close(&fx);
}
END_TEST

static Suite *
content_suite(void)
{
	Suite *s = suite_create("content");
	TCase *tc = tcase_create("content");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_kind_by_size);
	tcase_add_test(tc, test_manifest_record);
	tcase_add_test(tc, test_manifest_codec);
	tcase_add_test(tc, test_put_fd_equals_put_mem);
	tcase_add_test(tc, test_put_fd_from_pipe);
	tcase_add_test(tc, test_put_fd_read_error);
	tcase_add_test(tc, test_read_ranges);
	tcase_add_test(tc, test_flipped_byte_detected_on_read);
	tcase_add_test(tc, test_missing_objects);
	tcase_add_test(tc, test_dedup);
	tcase_add_test(tc, test_concurrent_puts);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(content_suite());
}
