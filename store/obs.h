/* SPDX-License-Identifier: MIT */
/*
 * store/obs internals: what fsck checks of the observations (store/obs.c; the public API is in
 * store/store.h). Never included outside store/ and tests/.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#include "store/kv.h"
#include "store/store.h"

/* Whether k and v are one well-formed observation: its key's length and prefix, its record. */
bool eos_obs_record_valid(const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen);

/*
 * The 0·"obs" record as of snap: 0, -ENOENT when there is none (no observation was ever
 * written), -EBADMSG when it does not decode, or the read's error.
 */
int eos_obs_stats_read(struct eos_store *st, const struct eos_kv_snapshot *snap,
		       struct eos_obs_stats *ret, struct eos_error *err);
