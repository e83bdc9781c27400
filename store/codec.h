/* SPDX-License-Identifier: MIT */
/*
 * store/codec: chunk frames (the only file that includes <zstd.h>).
 *
 * Frame layout (little-endian): u8 magic 0xE0, u8 format 1, u8 codec (0 raw, 1 zstd), u8 0,
 * le32 raw length, payload. The raw bytes are verified against the expected SHA-256 on decode, so
 * a corrupt chunk is -EBADMSG naming the digest and never garbage bytes.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/digest.h"
#include "common/error.h"

enum eos_codec_id {
	EOS_CODEC_RAW = 0,
	EOS_CODEC_ZSTD = 1,
};

enum {
	EOS_CODEC_HEADER_LEN = 8,
	EOS_CODEC_MAGIC = 0xE0,
	EOS_CODEC_FORMAT = 1,
	/*
	 * Largest raw length of a frame (chunks are at most EOS_CHUNK_MAX = 256 KiB): bounds what
	 * a corrupt header can make a reader allocate.
	 */
	EOS_CODEC_RAW_MAX = 4 << 20,
};

/*
 * Append the frame of n raw bytes to out, compressed with zstd at level (stored raw when zstd
 * does not make it smaller). -EFBIG when n > EOS_CODEC_RAW_MAX. Thread-safe (per-thread
 * compression contexts).
 */
int eos_codec_encode(const void *raw, size_t n, int level, struct eos_buf *out);

/*
 * Decode a frame into out (contents replaced) and verify its SHA-256 equals expect.
 * -EBADMSG with "chunk '<hex>': …" on a bad header, a decompression error, a length mismatch or
 * a digest mismatch.
 */
int eos_codec_decode(const void *frame, size_t n, const struct eos_digest *expect,
		     struct eos_buf *out, struct eos_error *err);

/*
 * eos_codec_decode() in two steps, for a caller that decodes into memory of its own: the raw
 * length, checked against the frame (a corrupt size is refused before anything is allocated),
 * then the decode into dst of exactly that many bytes, verified against expect. Errors as
 * eos_codec_decode(); dst's bytes are undefined after an error.
 */
int eos_codec_decoded_len(const void *frame, size_t n, const struct eos_digest *expect,
			  uint32_t *ret, struct eos_error *err);
int eos_codec_decode_into(const void *frame, size_t n, const struct eos_digest *expect, void *dst,
			  uint32_t len, struct eos_error *err);

/* Raw length recorded in a frame header; -EBADMSG for a malformed header. */
int eos_codec_raw_len(const void *frame, size_t n, uint32_t *ret);
