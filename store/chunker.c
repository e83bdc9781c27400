/* SPDX-License-Identifier: MIT */
#include "store/chunker.h"

#include <pthread.h>

/*
 * FastCDC (Xia et al., USENIX ATC 2016; IEEE TPDS 2020) with normalised chunking level 2: the
 * gear hash fp = (fp << 1) + gear[byte] is tested against mask_s (18 one-bits: cuts are rare)
 * until EOS_CHUNK_AVG, then against mask_l (14 one-bits: cuts are frequent) until EOS_CHUNK_MAX.
 * The first EOS_CHUNK_MIN bytes of a chunk are skipped. The one-bits sit in the high half of fp,
 * where each bit depends on the last 22 to 64 bytes. mask_l is a subset of mask_s.
 *
 * STORE FORMAT: the gear table (splitmix64 from gear_seed, 256 draws in order) and both masks
 * decide every chunk boundary, hence the chunk digests. Changing any of them does not break
 * existing stores but stops new content from deduplicating against old content.
 */
static const uint64_t mask_s = 0xa5294a5294a00000ULL;
static const uint64_t mask_l = 0xa5294a5280000000ULL;
static const uint64_t gear_seed = 0x656f732d63646331ULL; /* "eos-cdc1" */

static uint64_t gear[256];
static pthread_once_t gear_once = PTHREAD_ONCE_INIT;

static uint64_t
splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void
gear_init(void)
{
	uint64_t state = gear_seed;

	for (int i = 0; i < 256; i++)
		gear[i] = splitmix64(&state);
}

size_t
eos_chunker_cut(const uint8_t *p, size_t n)
{
	size_t i = EOS_CHUNK_MIN, normal = EOS_CHUNK_AVG;
	uint64_t fp = 0;

	if (n <= EOS_CHUNK_MIN)
		return n;
	pthread_once(&gear_once, gear_init);
	if (n > EOS_CHUNK_MAX)
		n = EOS_CHUNK_MAX;
	if (normal > n)
		normal = n;
	for (; i < normal; i++) {
		fp = (fp << 1) + gear[p[i]];
		if (!(fp & mask_s))
			return i + 1;
	}
	for (; i < n; i++) {
		fp = (fp << 1) + gear[p[i]];
		if (!(fp & mask_l))
			return i + 1;
	}
	return n;
}
