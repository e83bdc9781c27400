/* SPDX-License-Identifier: MIT */
/*
 * store/linediff: our own line diff (no library). Myers' O(ND) algorithm on line hashes after
 * trimming the common prefix and suffix, with a bounded edit budget: beyond it the untrimmed
 * middle is treated as replaced (bounded time and memory on huge, completely different inputs).
 *
 * A line includes its '\n': "a\n" and a final unterminated "a" are different lines, and so are
 * "a\r\n" and "a\n".
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* The number of lines of p: its '\n' count, plus one for a final unterminated line. */
uint32_t eos_line_count(const void *p, size_t n);

/* True when p is text: no NUL byte and valid UTF-8. */
bool eos_line_is_text(const void *p, size_t n);

/*
 * For each line i (0-based) of new, map[i] = 1 + the index of the line of old it is kept from
 * (an unchanged line in a longest-common-subsequence-like alignment), or 0 for an added line.
 * *ret_n = eos_line_count(new, nlen). Caller frees *ret_map (NULL when *ret_n is 0).
 * -EFBIG when an input has more than UINT32_MAX - 1 lines, -ENOMEM.
 */
int eos_line_map(const void *old, size_t olen, const void *new, size_t nlen, uint32_t **ret_map,
		 uint32_t *ret_n, struct eos_error *err);
