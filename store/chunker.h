/* SPDX-License-Identifier: MIT */
/*
 * store/chunker: FastCDC content-defined chunking (normalised chunking, level 2) with a fixed
 * 256-entry gear table. Boundaries depend only on the bytes near them, so inserting bytes at the
 * front of a file changes only the first chunk or two. The gear table and the masks are part of
 * the store format (changing them breaks dedup with existing stores, not correctness).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

enum {
	EOS_CHUNK_MIN = 16 * 1024,
	EOS_CHUNK_AVG = 64 * 1024,
	EOS_CHUNK_MAX = 256 * 1024,
};

/*
 * Length of the first chunk of p[0, n). When n <= EOS_CHUNK_MIN, returns n. When no boundary is
 * found before min(n, EOS_CHUNK_MAX), returns min(n, EOS_CHUNK_MAX). So callers streaming a file
 * must pass at least EOS_CHUNK_MAX bytes unless they are at end of file.
 */
size_t eos_chunker_cut(const uint8_t *p, size_t n);
