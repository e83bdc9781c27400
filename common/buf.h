/* SPDX-License-Identifier: MIT */
/*
 * Growable byte buffers and a bounds-checked reader, used to encode and decode every on-disk
 * record (fixed-width little-endian fields, length-prefixed strings).
 *
 * struct eos_buf is embedded: eos_buf_init() / eos_buf_release(). Appends return 0 or -ENOMEM;
 * after a failed append the buffer keeps its previous contents. `data` is always NUL-terminated
 * (one spare byte beyond `len`), so text can be used as a C string.
 *
 * struct eos_reader walks a borrowed byte range; every get returns -EBADMSG when the input is
 * too short, so a truncated or corrupt record never reads out of bounds.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct eos_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
};

void eos_buf_init(struct eos_buf *b);
/* Free the storage and reset to empty. NULL-safe. */
void eos_buf_release(struct eos_buf *b);
/* Ensure room for `extra` more bytes. */
int eos_buf_reserve(struct eos_buf *b, size_t extra);
int eos_buf_append(struct eos_buf *b, const void *p, size_t n);
int eos_buf_append_str(struct eos_buf *b, const char *s);
int eos_buf_append_u8(struct eos_buf *b, uint8_t v);
int eos_buf_append_le32(struct eos_buf *b, uint32_t v);
int eos_buf_append_le64(struct eos_buf *b, uint64_t v);
int eos_buf_append_be64(struct eos_buf *b, uint64_t v);
/* Append a LE32 length followed by n bytes. */
int eos_buf_append_lp(struct eos_buf *b, const void *p, size_t n);
/* Keep only the first n bytes (n <= len). */
void eos_buf_truncate(struct eos_buf *b, size_t n);
/* Move the storage out: caller owns the returned pointer (free()); b becomes empty. */
uint8_t *eos_buf_steal(struct eos_buf *b, size_t *ret_len);

/*
 * Growable arrays of any element type, kept as a pointer, a count n and a capacity *cap (in
 * elements): make room for element n of size bytes. When n >= *cap, *arrayp (a `T **` passed as
 * void *) is reallocated to *cap (min_cap for an empty array) doubled until it exceeds n, and *cap
 * updated.
 * Returns 0 or -ENOMEM (then *arrayp and *cap are unchanged, and still owned by the caller):
 *	if (eos_buf_array_reserve(&a->v, &a->cap, a->n, sizeof(*a->v), 16) < 0)
 *		return -ENOMEM;
 *	a->v[a->n++] = x;
 */
int eos_buf_array_reserve(void *arrayp, size_t *cap, size_t n, size_t size, size_t min_cap);

struct eos_reader {
	const uint8_t *p;
	size_t left;
};

static inline void
eos_reader_init(struct eos_reader *r, const void *p, size_t n)
{
	r->p = p;
	r->left = n;
}

int eos_reader_u8(struct eos_reader *r, uint8_t *ret);
int eos_reader_le32(struct eos_reader *r, uint32_t *ret);
int eos_reader_le64(struct eos_reader *r, uint64_t *ret);
/* Borrow n bytes from the input (valid as long as the input). */
int eos_reader_bytes(struct eos_reader *r, size_t n, const uint8_t **ret);
/* Borrow a LE32-length-prefixed byte string, at most max bytes long. */
int eos_reader_lp(struct eos_reader *r, size_t max, const uint8_t **ret, size_t *ret_len);
static inline bool
eos_reader_done(const struct eos_reader *r)
{
	return r->left == 0;
}
