/* SPDX-License-Identifier: MIT */
/* Fixed-width big- and little-endian load/store for on-disk formats (no struct dumps). */
#pragma once

#include <stdint.h>
#include <string.h>

static inline void
eos_put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline uint64_t
eos_get_be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

static inline void
eos_put_be32(uint8_t *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline uint32_t
eos_get_be32(const uint8_t *p)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++)
		v = (v << 8) | p[i];
	return v;
}

static inline void
eos_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline uint64_t
eos_get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline void
eos_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline uint32_t
eos_get_le32(const uint8_t *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}
