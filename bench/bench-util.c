/* SPDX-License-Identifier: MIT */
#include "bench/bench-util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
bench_report(const char *name, double value, const char *unit)
{
	printf("%s\t%.3f\t%s\n", name, value, unit);
	fflush(stdout);
}

int
bench_fail(const char *prog, const char *what, const struct eos_error *err, int r)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, eos_error_message(err, r));
	return EXIT_FAILURE;
}

void
bench_fill(void *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
	uint8_t *p = buf;
	size_t i = 0;

	for (; i < len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, len - i < 8 ? len - i : 8);
	}
}
