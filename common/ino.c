/* SPDX-License-Identifier: MIT */
#include "common/ino.h"

#include <string.h>

#include "common/endian.h"
#include "common/hashmap.h"

/* Derived numbers are promised stable: the hash under them never changes (common/hashmap.h). */
uint64_t
eos_ino_derived(const char *path, uint64_t group)
{
	uint8_t g[8];
	uint64_t h;

	if (group) {
		eos_put_be64(g, group);
		h = eos_hashmap_hash_seeded(0x6A09E667F3BCC908ULL, g, sizeof(g));
	} else {
		h = eos_hashmap_hash(path, strlen(path));
	}
	h |= EOS_INO_DERIVED;
	/* UINT64_MAX is the view's whiteout mark (EOS_DIRENT_WHITEOUT) */
	return h == UINT64_MAX ? EOS_INO_DERIVED : h;
}
