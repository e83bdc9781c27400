/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 digests (OpenSSL libcrypto EVP; the only file that includes the OpenSSL headers).
 * Content addresses of chunks, manifests and whole files. SHA-1 only for the trailer of a git
 * index (store/git-index.c), which is git's and not a content address of eos.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	EOS_DIGEST_LEN = 32,
	EOS_DIGEST_HEX_LEN = 64,
	EOS_SHA1_LEN = 20,
};

struct eos_digest {
	uint8_t b[EOS_DIGEST_LEN];
};

/* Streaming context; opaque. */
struct eos_sha256;

/* One-shot digest of n bytes. Returns 0 or -ENOMEM / -EIO. */
int eos_sha256(const void *p, size_t n, struct eos_digest *ret);

/* One-shot SHA-1 of n bytes into out[EOS_SHA1_LEN]. Returns 0 or -EIO. */
int eos_sha1(const void *p, size_t n, uint8_t *out);

/* Caller owns *ret; free with eos_sha256_free(). */
int eos_sha256_new(struct eos_sha256 **ret);
int eos_sha256_update(struct eos_sha256 *ctx, const void *p, size_t n);
/* Finish and reset the context for reuse. */
int eos_sha256_final(struct eos_sha256 *ctx, struct eos_digest *ret);
void eos_sha256_free(struct eos_sha256 *ctx);

/* Streaming SHA-1 or SHA-256 chosen by digest length (git's object ids); opaque. */
struct eos_md;

/* len: EOS_SHA1_LEN or EOS_DIGEST_LEN, else -EINVAL. Caller frees *ret with eos_md_free(). */
int eos_md_new(size_t len, struct eos_md **ret);
int eos_md_update(struct eos_md *md, const void *p, size_t n);
/* Finish into out[len] and reset the stream for reuse. Returns 0 or -EIO. */
int eos_md_final(struct eos_md *md, uint8_t *out);
void eos_md_free(struct eos_md *md);
static inline void
eos_md_freep(struct eos_md **md)
{
	eos_md_free(*md);
}

/* Write 64 lowercase hex digits and a NUL into out (at least 65 bytes). */
void eos_digest_hex(const struct eos_digest *d, char *out);
/* Parse 64 hex digits. Returns 0 or -EINVAL. */
int eos_digest_from_hex(const char *hex, struct eos_digest *ret);
static inline bool
eos_digest_eq(const struct eos_digest *a, const struct eos_digest *b)
{
	for (int i = 0; i < EOS_DIGEST_LEN; i++)
		if (a->b[i] != b->b[i])
			return false;
	return true;
}
