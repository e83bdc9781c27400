/* SPDX-License-Identifier: MIT */
#include "common/json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

int
eos_json_set(json_t *obj, const char *key, json_t *value)
{
	if (!value)
		return -ENOMEM;
	return json_object_set_new(obj, key, value) == 0 ? 0 : -ENOMEM;
}

int
eos_json_push(json_t *arr, json_t *value)
{
	if (!value)
		return -ENOMEM;
	return json_array_append_new(arr, value) == 0 ? 0 : -ENOMEM;
}

json_t *
eos_json_u64(uint64_t v)
{
	char s[24];

	if (v <= (1ULL << 53))
		return json_integer((json_int_t)v);
	snprintf(s, sizeof(s), "%llu", (unsigned long long)v);
	return json_string(s);
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when invalid. */
static size_t
utf8_seq_len(const unsigned char *p, size_t n)
{
	size_t len;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

json_t *
eos_json_bytes(const char *p, size_t n)
{
	struct eos_buf b;
	json_t *j;

	eos_buf_init(&b);
	for (size_t i = 0; i < n;) {
		size_t len = utf8_seq_len((const unsigned char *)p + i, n - i);
		int r = len && p[i] ? eos_buf_append(&b, p + i, len)
				    : eos_buf_append(&b, "\xef\xbf\xbd", 3);

		if (r < 0) {
			eos_buf_release(&b);
			return NULL;
		}
		i += len ? len : 1;
	}
	j = json_stringn(b.data ? (const char *)b.data : "", b.len);
	if (!j) /* overlong or surrogate forms jansson rejects: fall back to lossy ASCII */
		j = json_string("(invalid utf-8)");
	eos_buf_release(&b);
	return j;
}

json_t *
eos_json_digest(const struct eos_digest *d)
{
	char hex[EOS_DIGEST_HEX_LEN + 1];

	eos_digest_hex(d, hex);
	return json_string(hex);
}

json_t *
eos_json_error(const char *kind, int code, const struct eos_error *err)
{
	const char *msg = eos_error_message(err, code);

	return json_pack("{s:{s:s,s:o,s:i}}", "error", "kind", kind, "message",
			 eos_json_bytes(msg, strlen(msg)), "code", -code);
}

int
eos_json_print_line(FILE *f, const json_t *v)
{
	if (json_dumpf(v, f, JSON_COMPACT | JSON_ENSURE_ASCII) < 0 || fputc('\n', f) == EOF)
		return -EIO;
	return 0;
}

int
eos_json_print_pretty(FILE *f, const json_t *v)
{
	if (json_dumpf(v, f, JSON_INDENT(2)) < 0 || fputc('\n', f) == EOF)
		return -EIO;
	return 0;
}
