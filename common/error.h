/* SPDX-License-Identifier: MIT */
/*
 * Error convention of eos.
 *
 * Fallible functions return int: >= 0 is success, a negative errno is failure. Slow-path APIs take
 * a trailing nullable `struct eos_error *err` that receives a human message; it lives on the
 * caller's stack and is never freed. Helpers fill it and return the code, so a call site can write
 *
 *	r = eos_store_get(st, ..., err);
 *	if (r < 0)
 *		return eos_error_prefix(err, r, "read '%s'", path);
 *
 * Messages are lowercase, put the problem first and quote their subject: "chunk 'ab12…': bad
 * checksum". Domain conditions map to errno values; see doc/error-handling.md.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>

#define EOS_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#define EOS_ERROR_MSG_MAX     512

struct eos_error {
	int code;		     /* negative errno; 0 = unset */
	char msg[EOS_ERROR_MSG_MAX]; /* "import 'x': open 'a/b': Permission denied" */
};

/* Fill err (NULL-safe) with code and a formatted message; return code. */
int eos_error_set(struct eos_error *err, int code, const char *fmt, ...) EOS_PRINTF(3, 4);

/*
 * Prepend "ctx: " to err->msg and return code unchanged. When err holds no message yet, the
 * message becomes "ctx: strerror(code)". NULL-safe.
 */
int eos_error_prefix(struct eos_error *err, int code, const char *fmt, ...) EOS_PRINTF(3, 4);

/* Reset err to "no error". NULL-safe. */
void eos_error_clear(struct eos_error *err);

/* The message of err, or strerror(-code) when err carries none. Borrowed from err or static. */
const char *eos_error_message(const struct eos_error *err, int code);

/* -errno of the last failed libc call, never 0 (falls back to -EIO). */
static inline int
eos_neg_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}
