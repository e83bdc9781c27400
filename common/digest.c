/* SPDX-License-Identifier: MIT */
#include "common/digest.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>

int
eos_sha256(const void *p, size_t n, struct eos_digest *ret)
{
	unsigned int len = 0;

	if (!EVP_Digest(p, n, ret->b, &len, EVP_sha256(), NULL) || len != EOS_DIGEST_LEN)
		return -EIO;
	return 0;
}

int
eos_sha1(const void *p, size_t n, uint8_t *out)
{
	unsigned int len = 0;

	if (!EVP_Digest(p, n, out, &len, EVP_sha1(), NULL) || len != EOS_SHA1_LEN)
		return -EIO;
	return 0;
}

struct eos_md {
	EVP_MD_CTX *ctx;
	const EVP_MD *type;
	size_t len;
};

/* The SHA-256 stream is the general one at its length. */
struct eos_sha256 {
	struct eos_md md;
};

static int
md_init(struct eos_md *md, size_t len)
{
	md->len = len;
	md->type = len == EOS_SHA1_LEN ? EVP_sha1() : EVP_sha256();
	md->ctx = EVP_MD_CTX_new();
	return md->ctx && EVP_DigestInit_ex(md->ctx, md->type, NULL) ? 0 : -ENOMEM;
}

int
eos_md_new(size_t len, struct eos_md **ret)
{
	struct eos_md *md;

	if (len != EOS_SHA1_LEN && len != EOS_DIGEST_LEN)
		return -EINVAL;
	md = calloc(1, sizeof(*md));
	if (!md)
		return -ENOMEM;
	if (md_init(md, len) < 0) {
		eos_md_free(md);
		return -ENOMEM;
	}
	*ret = md;
	return 0;
}

int
eos_md_update(struct eos_md *md, const void *p, size_t n)
{
	return EVP_DigestUpdate(md->ctx, p, n) ? 0 : -EIO;
}

int
eos_md_final(struct eos_md *md, uint8_t *out)
{
	unsigned int len = 0;

	if (!EVP_DigestFinal_ex(md->ctx, out, &len) || len != md->len)
		return -EIO;
	return EVP_DigestInit_ex(md->ctx, md->type, NULL) ? 0 : -EIO;
}

void
eos_md_free(struct eos_md *md)
{
	if (!md)
		return;
	EVP_MD_CTX_free(md->ctx);
	free(md);
}

int
eos_sha256_new(struct eos_sha256 **ret)
{
	struct eos_sha256 *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	if (md_init(&c->md, EOS_DIGEST_LEN) < 0) {
		eos_sha256_free(c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

int
eos_sha256_update(struct eos_sha256 *ctx, const void *p, size_t n)
{
	return eos_md_update(&ctx->md, p, n);
}

int
eos_sha256_final(struct eos_sha256 *ctx, struct eos_digest *ret)
{
	return eos_md_final(&ctx->md, ret->b);
}

void
eos_sha256_free(struct eos_sha256 *ctx)
{
	if (!ctx)
		return;
	EVP_MD_CTX_free(ctx->md.ctx);
	free(ctx);
}

void
eos_digest_hex(const struct eos_digest *d, char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < EOS_DIGEST_LEN; i++) {
		out[2 * i] = hex[d->b[i] >> 4];
		out[2 * i + 1] = hex[d->b[i] & 15];
	}
	out[EOS_DIGEST_HEX_LEN] = '\0';
}

static int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
eos_digest_from_hex(const char *hex, struct eos_digest *ret)
{
	struct eos_digest d;

	for (int i = 0; i < EOS_DIGEST_LEN; i++) {
		int hi = hex_value(hex[2 * i]);
		int lo = hi < 0 ? -1 : hex_value(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		d.b[i] = (uint8_t)(hi << 4 | lo);
	}
	if (hex[EOS_DIGEST_HEX_LEN] != '\0')
		return -EINVAL;
	*ret = d;
	return 0;
}
