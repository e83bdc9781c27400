/* SPDX-License-Identifier: MIT */
/*
 * bench/bench-util: what the small benchmark programs (squash-block, space-fill, space-reclaim)
 * share: their output format and their test data.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* One figure on stdout: "name<TAB>value<TAB>unit" (flushed: progress goes to stderr). */
void bench_report(const char *name, double value, const char *unit);
/* "prog: what: message" on stderr; returns EXIT_FAILURE. */
int bench_fail(const char *prog, const char *what, const struct eos_error *err, int r);
/* Deterministic pseudo-random bytes for seed (xorshift), len a multiple of 8 or not. */
void bench_fill(void *buf, size_t len, uint64_t seed);
