/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the model-checking test programs (fs-model, publish-model): allocation that exits 2
 * (their status for setup problems) when memory runs out, and path joining. libc only.
 */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* realloc that exits 2, naming the program, when memory runs out. */
static inline void *
mu_realloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		fprintf(stderr, "%s: out of memory\n", program_invocation_short_name);
		exit(2);
	}
	return p;
}

static inline char *
mu_strdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(mu_realloc(NULL, n), s, n);
}

/* "dir/name", or "name" when dir is the root (""); caller frees. */
static inline char *
mu_join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p = mu_realloc(NULL, a + b + 2);

	if (a == 0) {
		memcpy(p, name, b + 1);
		return p;
	}
	memcpy(p, dir, a);
	p[a] = '/';
	memcpy(p + a + 1, name, b + 1);
	return p;
}
