/* SPDX-License-Identifier: MIT */
#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int
eos_error_set(struct eos_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

/* Append src to dst (capacity cap, NUL-terminated), truncating; returns the new length. */
static size_t
append_trunc(char *dst, size_t len, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (len + 1 >= cap)
		return len;
	if (n > cap - len - 1)
		n = cap - len - 1;
	memcpy(dst + len, src, n);
	dst[len + n] = '\0';
	return len + n;
}

int
eos_error_prefix(struct eos_error *err, int code, const char *fmt, ...)
{
	char msg[EOS_ERROR_MSG_MAX];
	size_t len;
	va_list ap;

	if (!err)
		return code;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	len = append_trunc(msg, strlen(msg), sizeof(msg), ": ");
	append_trunc(msg, len, sizeof(msg),
		     err->msg[0] ? err->msg : strerror(code < 0 ? -code : code));
	memcpy(err->msg, msg, sizeof(msg));
	err->code = code;
	return code;
}

void
eos_error_clear(struct eos_error *err)
{
	if (!err)
		return;
	err->code = 0;
	err->msg[0] = '\0';
}

const char *
eos_error_message(const struct eos_error *err, int code)
{
	if (err && err->msg[0])
		return err->msg;
	return strerror(code < 0 ? -code : code);
}
