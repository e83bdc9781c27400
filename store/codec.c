/* SPDX-License-Identifier: MIT */
#include "store/codec.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/types.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "common/endian.h"

/*
 * One compression and one decompression context per thread, created on first use and freed by
 * the pthread key destructors when the thread exits.
 */
static pthread_key_t cctx_key;
static pthread_key_t dctx_key;
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;
static int keys_status;

static void
free_cctx(void *p)
{
	ZSTD_freeCCtx(p);
}

static void
free_dctx(void *p)
{
	ZSTD_freeDCtx(p);
}

static void
create_keys(void)
{
	if (pthread_key_create(&cctx_key, free_cctx) != 0) {
		keys_status = -EAGAIN;
		return;
	}
	if (pthread_key_create(&dctx_key, free_dctx) != 0)
		keys_status = -EAGAIN;
}

static ZSTD_CCtx *
thread_cctx(void)
{
	ZSTD_CCtx *c;

	if (pthread_once(&keys_once, create_keys) != 0 || keys_status < 0)
		return NULL;
	c = pthread_getspecific(cctx_key);
	if (c)
		return c;
	c = ZSTD_createCCtx();
	if (c && pthread_setspecific(cctx_key, c) != 0) {
		ZSTD_freeCCtx(c);
		return NULL;
	}
	return c;
}

static ZSTD_DCtx *
thread_dctx(void)
{
	ZSTD_DCtx *d;

	if (pthread_once(&keys_once, create_keys) != 0 || keys_status < 0)
		return NULL;
	d = pthread_getspecific(dctx_key);
	if (d)
		return d;
	d = ZSTD_createDCtx();
	if (d && pthread_setspecific(dctx_key, d) != 0) {
		ZSTD_freeDCtx(d);
		return NULL;
	}
	return d;
}

static void
put_header(uint8_t *p, enum eos_codec_id codec, uint32_t raw_len)
{
	p[0] = EOS_CODEC_MAGIC;
	p[1] = EOS_CODEC_FORMAT;
	p[2] = (uint8_t)codec;
	p[3] = 0;
	eos_put_le32(p + 4, raw_len);
}

/* Compress into out after its header; returns the payload size, 0 when not smaller, or -errno. */
static ssize_t
compress_payload(const void *raw, size_t n, int level, uint8_t *dst, size_t cap)
{
	ZSTD_CCtx *cctx = thread_cctx();
	size_t z;

	if (!cctx)
		return -ENOMEM;
	z = ZSTD_compressCCtx(cctx, dst, cap, raw, n, level);
	if (ZSTD_isError(z))
		return ZSTD_getErrorCode(z) == ZSTD_error_memory_allocation ? -ENOMEM : -EIO;
	return z < n ? (ssize_t)z : 0;
}

int
eos_codec_encode(const void *raw, size_t n, int level, struct eos_buf *out)
{
	size_t start = out->len, bound = ZSTD_compressBound(n);
	ssize_t z;
	int r;

	if (n > EOS_CODEC_RAW_MAX || ZSTD_isError(bound))
		return -EFBIG;
	r = eos_buf_reserve(out, EOS_CODEC_HEADER_LEN + bound);
	if (r < 0)
		return r;
	z = compress_payload(raw, n, level, out->data + start + EOS_CODEC_HEADER_LEN, bound);
	if (z < 0)
		return (int)z;
	if (z > 0) {
		put_header(out->data + start, EOS_CODEC_ZSTD, (uint32_t)n);
		out->len = start + EOS_CODEC_HEADER_LEN + (size_t)z;
		out->data[out->len] = '\0';
		return 0;
	}
	put_header(out->data + start, EOS_CODEC_RAW, (uint32_t)n);
	out->len = start + EOS_CODEC_HEADER_LEN;
	return eos_buf_append(out, raw, n);
}

/* Parse and check the header: 0 with codec and raw length, or -EBADMSG with what is wrong. */
static int
parse_header(const uint8_t *p, size_t n, enum eos_codec_id *ret_codec, uint32_t *ret_len,
	     const char **ret_what)
{
	if (n < EOS_CODEC_HEADER_LEN) {
		*ret_what = "truncated frame header";
		return -EBADMSG;
	}
	if (p[0] != EOS_CODEC_MAGIC || p[1] != EOS_CODEC_FORMAT || p[3] != 0) {
		*ret_what = "bad frame header";
		return -EBADMSG;
	}
	switch ((enum eos_codec_id)p[2]) {
	case EOS_CODEC_RAW:
	case EOS_CODEC_ZSTD:
		*ret_codec = (enum eos_codec_id)p[2];
		*ret_len = eos_get_le32(p + 4);
		if (*ret_len > EOS_CODEC_RAW_MAX) {
			*ret_what = "raw length above the frame limit";
			return -EBADMSG;
		}
		return 0;
	}
	*ret_what = "unknown codec";
	return -EBADMSG;
}

int
eos_codec_raw_len(const void *frame, size_t n, uint32_t *ret)
{
	enum eos_codec_id codec;
	const char *what;

	return parse_header(frame, n, &codec, ret, &what);
}

static int
bad_chunk(struct eos_error *err, const struct eos_digest *d, const char *what)
{
	char hex[EOS_DIGEST_HEX_LEN + 1];

	eos_digest_hex(d, hex);
	return eos_error_set(err, -EBADMSG, "chunk '%s': %s", hex, what);
}

/*
 * A frame's raw length, checked against its payload before anything is allocated: a corrupt
 * size must not allocate more than the payload can expand to. Each zstd block yields at most
 * ZSTD_BLOCKSIZE_MAX bytes and has a 3-byte header (RFC 8878), so 20 bytes cannot claim 4 GiB.
 */
static int
checked_len(const uint8_t *f, size_t n, enum eos_codec_id *ret_codec, uint32_t *ret_len,
	    const char **ret_what)
{
	int r = parse_header(f, n, ret_codec, ret_len, ret_what);

	if (r < 0)
		return r;
	n -= EOS_CODEC_HEADER_LEN;
	if (*ret_codec == EOS_CODEC_RAW && n != *ret_len) {
		*ret_what = "raw payload length does not match the header";
		return -EBADMSG;
	}
	if (*ret_codec == EOS_CODEC_ZSTD && *ret_len / ZSTD_BLOCKSIZE_MAX > n / 3) {
		*ret_what = "zstd frame too short for its size";
		return -EBADMSG;
	}
	return 0;
}

/* Decompress a zstd payload of exactly raw_len bytes into dst; 0 or -EBADMSG/-ENOMEM. */
static int
decompress_payload(const uint8_t *p, size_t n, uint32_t raw_len, uint8_t *dst,
		   const char **ret_what)
{
	ZSTD_DCtx *dctx = thread_dctx();
	size_t z;

	if (!dctx)
		return -ENOMEM;
	/* The encoder always records the content size. */
	if (ZSTD_getFrameContentSize(p, n) != raw_len) {
		*ret_what = "zstd frame size does not match the header";
		return -EBADMSG;
	}
	z = ZSTD_decompressDCtx(dctx, dst, raw_len, p, n);
	if (ZSTD_isError(z)) {
		*ret_what = ZSTD_getErrorName(z);
		return -EBADMSG;
	}
	if (z != raw_len) {
		*ret_what = "decompressed length does not match the header";
		return -EBADMSG;
	}
	return 0;
}

/* Decode frame f (its length checked by checked_len) into dst and verify its digest. */
static int
decode_verify(const uint8_t *f, size_t n, enum eos_codec_id codec, uint32_t raw_len,
	      const struct eos_digest *expect, uint8_t *dst, const char **ret_what)
{
	struct eos_digest got;
	int r = 0;

	f += EOS_CODEC_HEADER_LEN;
	n -= EOS_CODEC_HEADER_LEN;
	if (codec == EOS_CODEC_ZSTD)
		r = decompress_payload(f, n, raw_len, dst, ret_what);
	else if (raw_len)
		memcpy(dst, f, raw_len);
	if (r < 0)
		return r;
	r = eos_sha256(dst, raw_len, &got);
	if (r < 0) {
		*ret_what = "cannot compute sha-256";
		return r;
	}
	if (!eos_digest_eq(&got, expect)) {
		*ret_what = "content does not match its digest";
		return -EBADMSG;
	}
	return 0;
}

static int
decode_failed(struct eos_error *err, const struct eos_digest *expect, int r, const char *what)
{
	char hex[EOS_DIGEST_HEX_LEN + 1];

	if (r == -EBADMSG)
		return bad_chunk(err, expect, what);
	eos_digest_hex(expect, hex);
	return eos_error_set(err, r, "chunk '%s': %s", hex, what);
}

int
eos_codec_decoded_len(const void *frame, size_t n, const struct eos_digest *expect, uint32_t *ret,
		      struct eos_error *err)
{
	enum eos_codec_id codec;
	const char *what;
	int r = checked_len(frame, n, &codec, ret, &what);

	return r < 0 ? decode_failed(err, expect, r, what) : 0;
}

int
eos_codec_decode_into(const void *frame, size_t n, const struct eos_digest *expect, void *dst,
		      uint32_t len, struct eos_error *err)
{
	enum eos_codec_id codec;
	const char *what = "out of memory";
	uint32_t raw_len;
	int r = checked_len(frame, n, &codec, &raw_len, &what);

	if (r == 0 && raw_len != len) {
		what = "raw length does not match the buffer";
		r = -EBADMSG;
	}
	if (r == 0)
		r = decode_verify(frame, n, codec, raw_len, expect, dst, &what);
	return r < 0 ? decode_failed(err, expect, r, what) : 0;
}

int
eos_codec_decode(const void *frame, size_t n, const struct eos_digest *expect, struct eos_buf *out,
		 struct eos_error *err)
{
	uint32_t len;
	int r;

	eos_buf_truncate(out, 0);
	r = eos_codec_decoded_len(frame, n, expect, &len, err);
	if (r == 0 && eos_buf_reserve(out, len) < 0)
		r = decode_failed(err, expect, -ENOMEM, "out of memory");
	if (r == 0)
		r = eos_codec_decode_into(frame, n, expect, out->data, len, err);
	if (r < 0)
		return r;
	out->len = len;
	out->data[len] = '\0';
	return 0;
}
