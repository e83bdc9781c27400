/* SPDX-License-Identifier: MIT */
/*
 * Quoting names for text output, as git quotes paths (core.quotePath, except that bytes >= 0x80
 * pass through so UTF-8 names stay readable): a name holding a control character (a byte below
 * 0x20, or 0x7f), a double quote or a backslash is printed in double quotes with C escapes
 * (\a \b \t \n \v \f \r \" \\, and \ooo in octal for the other control bytes); any other name is
 * printed as it is. So a name never spans, ends or forges an output line, and a quoted name can be
 * read back unambiguously.
 *
 * Messages that quote their subjects themselves ("open 'a/b': …") are escaped without the double
 * quotes: control characters and backslashes as above, everything else as it is.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"

/* True when s (n bytes) must be quoted: it holds a control byte, '"' or '\\'. */
bool eos_quote_needed(const char *s, size_t n);
/* Append s (n bytes) to b, in double quotes with escapes when eos_quote_needed(). 0 or -ENOMEM. */
int eos_quote_append(struct eos_buf *b, const char *s, size_t n);
/*
 * The C string s for text output: s itself when it needs nothing, else its quoted form (with
 * bare, its escaped form) kept in *owned for the caller to free, or "?" when memory ran out.
 *	cleanup_free char *q = NULL;
 *	printf("%s\n", eos_quote_cstr(name, false, &q));
 */
const char *eos_quote_cstr(const char *s, bool bare, char **owned);
