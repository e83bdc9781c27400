/* SPDX-License-Identifier: MIT */
#include "common/buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/endian.h"

void
eos_buf_init(struct eos_buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void
eos_buf_release(struct eos_buf *b)
{
	if (!b)
		return;
	free(b->data);
	eos_buf_init(b);
}

int
eos_buf_reserve(struct eos_buf *b, size_t extra)
{
	size_t need, cap;
	uint8_t *p;

	if (extra > SIZE_MAX - b->len - 1)
		return -ENOMEM;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int
eos_buf_append(struct eos_buf *b, const void *p, size_t n)
{
	int r = eos_buf_reserve(b, n);

	if (r < 0)
		return r;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int
eos_buf_append_str(struct eos_buf *b, const char *s)
{
	return eos_buf_append(b, s, strlen(s));
}

int
eos_buf_append_u8(struct eos_buf *b, uint8_t v)
{
	return eos_buf_append(b, &v, 1);
}

int
eos_buf_append_le32(struct eos_buf *b, uint32_t v)
{
	uint8_t x[4];

	eos_put_le32(x, v);
	return eos_buf_append(b, x, sizeof(x));
}

int
eos_buf_append_le64(struct eos_buf *b, uint64_t v)
{
	uint8_t x[8];

	eos_put_le64(x, v);
	return eos_buf_append(b, x, sizeof(x));
}

int
eos_buf_append_be64(struct eos_buf *b, uint64_t v)
{
	uint8_t x[8];

	eos_put_be64(x, v);
	return eos_buf_append(b, x, sizeof(x));
}

int
eos_buf_append_lp(struct eos_buf *b, const void *p, size_t n)
{
	size_t old = b->len;
	int r;

	if (n > UINT32_MAX)
		return -EOVERFLOW;
	r = eos_buf_append_le32(b, (uint32_t)n);
	if (r >= 0)
		r = eos_buf_append(b, p, n);
	if (r < 0)
		eos_buf_truncate(b, old);
	return r;
}

void
eos_buf_truncate(struct eos_buf *b, size_t n)
{
	if (n >= b->len)
		return;
	b->len = n;
	b->data[n] = '\0';
}

uint8_t *
eos_buf_steal(struct eos_buf *b, size_t *ret_len)
{
	uint8_t *p = b->data;

	if (ret_len)
		*ret_len = b->len;
	eos_buf_init(b);
	return p;
}

int
eos_buf_array_reserve(void *arrayp, size_t *cap, size_t n, size_t size, size_t min_cap)
{
	size_t ncap;
	void *items, *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap : (min_cap ? min_cap : 1);
	while (ncap <= n) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	/* arrayp points at some T *, which has the representation of a void * */
	memcpy(&items, arrayp, sizeof(items));
	p = reallocarray(items, ncap, size);
	if (!p)
		return -ENOMEM;
	memcpy(arrayp, &p, sizeof(p));
	*cap = ncap;
	return 0;
}

int
eos_reader_bytes(struct eos_reader *r, size_t n, const uint8_t **ret)
{
	if (r->left < n)
		return -EBADMSG;
	*ret = r->p;
	r->p += n;
	r->left -= n;
	return 0;
}

int
eos_reader_u8(struct eos_reader *r, uint8_t *ret)
{
	const uint8_t *p;
	int rc = eos_reader_bytes(r, 1, &p);

	if (rc == 0)
		*ret = p[0];
	return rc;
}

int
eos_reader_le32(struct eos_reader *r, uint32_t *ret)
{
	const uint8_t *p;
	int rc = eos_reader_bytes(r, 4, &p);

	if (rc == 0)
		*ret = eos_get_le32(p);
	return rc;
}

int
eos_reader_le64(struct eos_reader *r, uint64_t *ret)
{
	const uint8_t *p;
	int rc = eos_reader_bytes(r, 8, &p);

	if (rc == 0)
		*ret = eos_get_le64(p);
	return rc;
}

int
eos_reader_lp(struct eos_reader *r, size_t max, const uint8_t **ret, size_t *ret_len)
{
	uint32_t n;
	int rc = eos_reader_le32(r, &n);

	if (rc < 0)
		return rc;
	if (n > max)
		return -EBADMSG;
	rc = eos_reader_bytes(r, n, ret);
	if (rc == 0)
		*ret_len = n;
	return rc;
}
