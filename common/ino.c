/* SPDX-License-Identifier: MIT */
#include "common/ino.h"

#include <string.h>

#include "common/endian.h"

static uint64_t
rotl64(uint64_t x, unsigned r)
{
	return (x << r) | (x >> (64 - r));
}

/*
 * A 64-bit hash of len bytes from seed. Inode numbers derive from it and are promised stable
 * across sessions and versions of eos (doc/fs.md, "Inode numbers"): never change it.
 */
static uint64_t
stable_hash(uint64_t seed, const uint8_t *p, size_t len)
{
	uint64_t h = seed ^ ((uint64_t)len * 0xC2B2AE3D27D4EB4FULL);
	uint8_t tail[8] = { 0 };

	for (; len >= 8; p += 8, len -= 8)
		h = rotl64(h ^ (eos_get_le64(p) * 0x87C37B91114253D5ULL), 31) *
		    0x4CF5AD432745937FULL;
	memcpy(tail, p, len);
	h ^= eos_get_le64(tail) * 0x87C37B91114253D5ULL;
	h ^= h >> 33;
	h *= 0xFF51AFD7ED558CCDULL;
	h ^= h >> 33;
	h *= 0xC4CEB9FE1A85EC53ULL;
	return h ^ (h >> 33);
}

uint64_t
eos_ino_derived(const char *path, uint64_t group)
{
	uint8_t g[8];
	uint64_t h;

	if (group) {
		eos_put_be64(g, group);
		h = stable_hash(0x6A09E667F3BCC908ULL, g, sizeof(g));
	} else {
		h = stable_hash(0x9E3779B97F4A7C15ULL, (const uint8_t *)path, strlen(path));
	}
	h |= EOS_INO_DERIVED;
	/* UINT64_MAX is the view's whiteout mark (EOS_DIRENT_WHITEOUT) */
	return h == UINT64_MAX ? EOS_INO_DERIVED : h;
}
