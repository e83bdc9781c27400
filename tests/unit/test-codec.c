/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/digest.h"
#include "common/error.h"

#include "store/codec.h"
#include "tests/unit/testutil.h"

enum {
	TEXT_LEN = 200 * 1024,
	RANDOM_LEN = 100 * 1024,
};

/* Repetitive text-like bytes that zstd compresses well. */
static uint8_t *
make_text(size_t n)
{
	static const char *const words[] = { "store ", "chunk ", "return ", "struct ", "eos_",
					     "{\n\t",  "}\n",	 "0x1f, ",  "int ",    "the " };
	uint8_t *p = malloc(n);
	size_t i = 0, k = 0;

	ck_assert_ptr_nonnull(p);
	while (i < n) {
		const char *w = words[(k++ * 2654435761u >> 7) % EOS_ARRAY_SIZE(words)];
		size_t l = EOS_MIN(strlen(w), n - i);

		memcpy(p + i, w, l);
		i += l;
	}
	return p;
}

static uint8_t *
make_random(size_t n, uint64_t seed)
{
	uint8_t *p = malloc(n);

	ck_assert_ptr_nonnull(p);
	eos_test_fill_random(p, n, seed);
	return p;
}

/* Encode p, check the codec used, decode and compare. */
static void
round_trip(const uint8_t *p, size_t n, enum eos_codec_id want)
{
	struct eos_buf frame = { 0 }, out = { 0 };
	struct eos_error err = { 0 };
	struct eos_digest d;
	uint32_t raw_len = 0;
	int r;

	ck_assert_int_eq(eos_sha256(p, n, &d), 0);
	ck_assert_int_eq(eos_codec_encode(p, n, 3, &frame), 0);
	ck_assert_int_ge(frame.len, EOS_CODEC_HEADER_LEN);
	ck_assert_int_eq(frame.data[0], EOS_CODEC_MAGIC);
	ck_assert_int_eq(frame.data[2], want);
	ck_assert_int_eq(eos_codec_raw_len(frame.data, frame.len, &raw_len), 0);
	ck_assert_uint_eq(raw_len, n);
	if (want == EOS_CODEC_RAW)
		ck_assert_uint_eq(frame.len, EOS_CODEC_HEADER_LEN + n);
	else
		ck_assert_uint_lt(frame.len, n);
	r = eos_codec_decode(frame.data, frame.len, &d, &out, &err);
	ck_assert_msg(r == 0, "decode: %s", eos_error_message(&err, r));
	ck_assert_uint_eq(out.len, n);
	ck_assert(n == 0 || memcmp(out.data, p, n) == 0);
	eos_buf_release(&frame);
	eos_buf_release(&out);
}

START_TEST(test_round_trip_compressible)
{
	cleanup_free uint8_t *p = make_text(TEXT_LEN);

	round_trip(p, TEXT_LEN, EOS_CODEC_ZSTD);
}
END_TEST

START_TEST(test_round_trip_random_uses_raw)
{
	cleanup_free uint8_t *p = make_random(RANDOM_LEN, 7);

	round_trip(p, RANDOM_LEN, EOS_CODEC_RAW);
}
END_TEST

START_TEST(test_round_trip_empty_and_tiny)
{
	const uint8_t one = 'x';

	round_trip(&one, 0, EOS_CODEC_RAW);
	round_trip(&one, 1, EOS_CODEC_RAW);
}
END_TEST

START_TEST(test_encode_appends)
{
	cleanup_free uint8_t *p = make_text(4096);
	struct eos_buf frame = { 0 }, out = { 0 };
	struct eos_digest d;

	ck_assert_int_eq(eos_buf_append(&frame, "prefix", 6), 0);
	ck_assert_int_eq(eos_codec_encode(p, 4096, 1, &frame), 0);
	ck_assert(memcmp(frame.data, "prefix", 6) == 0);
	ck_assert_int_eq(eos_sha256(p, 4096, &d), 0);
	ck_assert_int_eq(eos_codec_decode(frame.data + 6, frame.len - 6, &d, &out, NULL), 0);
	ck_assert(out.len == 4096 && memcmp(out.data, p, 4096) == 0);
	eos_buf_release(&frame);
	eos_buf_release(&out);
}
END_TEST

/* A frame of p plus its digest, for the corruption tests. */
struct frame_fixture {
	struct eos_buf frame;
	struct eos_digest d;
	char hex[EOS_DIGEST_HEX_LEN + 1];
};

static void
fixture_make(struct frame_fixture *fx, const uint8_t *p, size_t n)
{
	eos_buf_init(&fx->frame);
	ck_assert_int_eq(eos_sha256(p, n, &fx->d), 0);
	ck_assert_int_eq(eos_codec_encode(p, n, 3, &fx->frame), 0);
	eos_digest_hex(&fx->d, fx->hex);
}

/* Decoding must fail with -EBADMSG naming the digest, and leave no bytes in out. */
static void
expect_bad(const void *frame, size_t n, const struct eos_digest *d, const char *hex)
{
	struct eos_buf out = { 0 };
	struct eos_error err = { 0 };
	int r;

	ck_assert_int_eq(eos_buf_append(&out, "stale", 5), 0);
	r = eos_codec_decode(frame, n, d, &out, &err);
	ck_assert_int_eq(r, -EBADMSG);
	ck_assert_int_eq(err.code, -EBADMSG);
	ck_assert_msg(strstr(err.msg, hex) != NULL, "message '%s' lacks the digest", err.msg);
	ck_assert_msg(strncmp(err.msg, "chunk '", 7) == 0, "message '%s'", err.msg);
	ck_assert_uint_eq(out.len, 0);
	eos_buf_release(&out);
}

START_TEST(test_flipped_payload_byte)
{
	cleanup_free uint8_t *text = make_text(TEXT_LEN);
	cleanup_free uint8_t *rnd = make_random(RANDOM_LEN, 8);
	struct frame_fixture z, raw;

	fixture_make(&z, text, TEXT_LEN);
	fixture_make(&raw, rnd, RANDOM_LEN);
	ck_assert_int_eq(z.frame.data[2], EOS_CODEC_ZSTD);
	ck_assert_int_eq(raw.frame.data[2], EOS_CODEC_RAW);
	for (size_t pos = EOS_CODEC_HEADER_LEN; pos < z.frame.len; pos += z.frame.len / 7 + 1) {
		z.frame.data[pos] ^= 0x01;
		expect_bad(z.frame.data, z.frame.len, &z.d, z.hex);
		z.frame.data[pos] ^= 0x01;
	}
	raw.frame.data[EOS_CODEC_HEADER_LEN + 1234] ^= 0x80;
	expect_bad(raw.frame.data, raw.frame.len, &raw.d, raw.hex);
	eos_buf_release(&z.frame);
	eos_buf_release(&raw.frame);
}
END_TEST

START_TEST(test_truncated_frame)
{
	cleanup_free uint8_t *text = make_text(TEXT_LEN);
	cleanup_free uint8_t *rnd = make_random(RANDOM_LEN, 9);
	struct frame_fixture z, raw;
	uint32_t len;

	fixture_make(&z, text, TEXT_LEN);
	fixture_make(&raw, rnd, RANDOM_LEN);
	expect_bad(z.frame.data, z.frame.len - 1, &z.d, z.hex);
	expect_bad(z.frame.data, z.frame.len / 2, &z.d, z.hex);
	expect_bad(raw.frame.data, raw.frame.len - 1, &raw.d, raw.hex);
	expect_bad(raw.frame.data, EOS_CODEC_HEADER_LEN - 1, &raw.d, raw.hex);
	expect_bad(raw.frame.data, 0, &raw.d, raw.hex);
	ck_assert_int_eq(eos_codec_raw_len(raw.frame.data, 5, &len), -EBADMSG);
	eos_buf_release(&z.frame);
	eos_buf_release(&raw.frame);
}
END_TEST

START_TEST(test_wrong_digest)
{
	cleanup_free uint8_t *text = make_text(TEXT_LEN);
	struct frame_fixture z;
	struct eos_digest other;
	char hex[EOS_DIGEST_HEX_LEN + 1];

	fixture_make(&z, text, TEXT_LEN);
	other = z.d;
	other.b[31] ^= 1;
	eos_digest_hex(&other, hex);
	expect_bad(z.frame.data, z.frame.len, &other, hex);
	eos_buf_release(&z.frame);
}
END_TEST

START_TEST(test_bad_header)
{
	cleanup_free uint8_t *text = make_text(TEXT_LEN);
	struct eos_buf out = { 0 };
	struct frame_fixture z;
	uint32_t len;

	fixture_make(&z, text, TEXT_LEN);
	z.frame.data[0] = 0xE1; /* magic */
	expect_bad(z.frame.data, z.frame.len, &z.d, z.hex);
	ck_assert_int_eq(eos_codec_raw_len(z.frame.data, z.frame.len, &len), -EBADMSG);
	z.frame.data[0] = EOS_CODEC_MAGIC;
	z.frame.data[1] = 2; /* format */
	expect_bad(z.frame.data, z.frame.len, &z.d, z.hex);
	z.frame.data[1] = EOS_CODEC_FORMAT;
	z.frame.data[2] = 7; /* codec */
	expect_bad(z.frame.data, z.frame.len, &z.d, z.hex);
	z.frame.data[2] = EOS_CODEC_RAW; /* zstd payload read as raw */
	expect_bad(z.frame.data, z.frame.len, &z.d, z.hex);
	z.frame.data[2] = EOS_CODEC_ZSTD;
	z.frame.data[4] ^= 1; /* raw length */
	expect_bad(z.frame.data, z.frame.len, &z.d, z.hex);
	z.frame.data[4] ^= 1;
	ck_assert_int_eq(eos_codec_decode(z.frame.data, z.frame.len, &z.d, &out, NULL), 0);
	ck_assert_uint_eq(out.len, TEXT_LEN);
	eos_buf_release(&z.frame);
	eos_buf_release(&out);
}
END_TEST

static void *
codec_thread(void *arg)
{
	uint64_t seed = (uint64_t)(uintptr_t)arg;
	cleanup_free uint8_t *text = make_text(64 * 1024 + seed);
	struct eos_buf frame = { 0 }, out = { 0 };
	struct eos_digest d;
	bool ok = eos_sha256(text, 64 * 1024 + seed, &d) == 0;

	for (int i = 0; i < 50 && ok; i++) {
		frame.len = 0;
		ok = eos_codec_encode(text, 64 * 1024 + seed, 1 + i % 5, &frame) == 0 &&
		     eos_codec_decode(frame.data, frame.len, &d, &out, NULL) == 0 &&
		     out.len == 64 * 1024 + seed && memcmp(out.data, text, out.len) == 0;
	}
	eos_buf_release(&frame);
	eos_buf_release(&out);
	return ok ? arg : NULL;
}

START_TEST(test_threads)
{
	pthread_t t[4];

	for (uintptr_t i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, codec_thread, (void *)(i + 1)), 0);
	for (uintptr_t i = 0; i < 4; i++) {
		void *res = NULL;

		ck_assert_int_eq(pthread_join(t[i], &res), 0);
		ck_assert_ptr_eq(res, (void *)(i + 1));
	}
}
END_TEST

static Suite *
codec_suite(void)
{
	Suite *s = suite_create("codec");
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, test_round_trip_compressible);
	tcase_add_test(tc, test_round_trip_random_uses_raw);
	tcase_add_test(tc, test_round_trip_empty_and_tiny);
	tcase_add_test(tc, test_encode_appends);
	tcase_add_test(tc, test_flipped_payload_byte);
	tcase_add_test(tc, test_truncated_frame);
	tcase_add_test(tc, test_wrong_digest);
	tcase_add_test(tc, test_bad_header);
	tcase_add_test(tc, test_threads);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(codec_suite());
}
