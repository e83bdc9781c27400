/* SPDX-License-Identifier: MIT */
#include "common/quote.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The letter of a C escape for c ('n' for '\n'), or 0 when c has none. */
static char
escape_letter(unsigned char c)
{
	static const char from[] = "\a\b\t\n\v\f\r\"\\";
	static const char to[] = "abtnvfr\"\\";
	const char *p = c ? memchr(from, c, sizeof(from) - 1) : NULL;

	return p ? to[p - from] : 0;
}

static bool
is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

bool
eos_quote_needed(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (is_control(c) || c == '"' || c == '\\')
			return true;
	}
	return false;
}

/* Append s escaped; with bare, '"' stays as it is (nothing around it is quoted). */
static int
escape(struct eos_buf *b, const char *s, size_t n, bool bare)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[5];
		int r;

		if (!is_control(c) && c != '\\' && (bare || c != '"')) {
			r = eos_buf_append(b, &s[i], 1);
		} else if (escape_letter(c)) {
			esc[0] = '\\';
			esc[1] = escape_letter(c);
			r = eos_buf_append(b, esc, 2);
		} else {
			snprintf(esc, sizeof(esc), "\\%03o", c);
			r = eos_buf_append(b, esc, 4);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

int
eos_quote_append(struct eos_buf *b, const char *s, size_t n)
{
	int r;

	if (!eos_quote_needed(s, n))
		return eos_buf_append(b, s, n);
	r = eos_buf_append(b, "\"", 1);
	r = r ?: escape(b, s, n, false);
	return r ?: eos_buf_append(b, "\"", 1);
}

const char *
eos_quote_cstr(const char *s, bool bare, char **owned)
{
	size_t n = strlen(s);
	struct eos_buf b;
	int r;

	*owned = NULL;
	if (!eos_quote_needed(s, n))
		return s;
	eos_buf_init(&b);
	r = bare ? escape(&b, s, n, true) : eos_quote_append(&b, s, n);
	if (r < 0) {
		eos_buf_release(&b);
		return "?";
	}
	*owned = (char *)eos_buf_steal(&b, NULL);
	return *owned;
}
