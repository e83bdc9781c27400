/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

#include "store/content.h"
#include "store/store-internal.h"
#include "store/store.h"

/*
 * An open file. Immutable after eos_store_file_open_content(), so one handle may be read from
 * many threads at once without a lock (the chunk cache does its own locking).
 */
struct eos_file {
	struct eos_store *st;
	struct eos_content c;
	struct eos_manifest *m; /* EOS_CONTENT_MANIFEST only; owned */
};

static int
file_check_content(struct eos_store *st, const struct eos_content *c, struct eos_manifest **ret_m,
		   struct eos_error *err)
{
	char hex[EOS_DIGEST_HEX_LEN + 1];
	int r;

	switch (c->kind) {
	case EOS_CONTENT_NONE:
		return eos_error_set(err, -EINVAL, "open content: not a regular file");
	case EOS_CONTENT_INLINE:
		if (c->inline_len > EOS_INLINE_MAX || c->inline_len != c->size)
			return eos_error_set(err, -EBADMSG,
					     "inline content: length %u does not match size %llu",
					     c->inline_len, (unsigned long long)c->size);
		return 0;
	case EOS_CONTENT_CHUNK:
		return 0;
	case EOS_CONTENT_MANIFEST:
		r = eos_manifest_read(st, &c->digest, ret_m, err);
		if (r < 0 || (*ret_m)->size == c->size)
			return r;
		eos_digest_hex(&c->digest, hex);
		return eos_error_set(err, -EBADMSG, "manifest '%s': size %llu does not match %llu",
				     hex, (unsigned long long)(*ret_m)->size,
				     (unsigned long long)c->size);
	}
	return eos_error_set(err, -EBADMSG, "open content: unknown content kind %d", (int)c->kind);
}

int
eos_store_file_open_content(struct eos_store *st, const struct eos_content *c,
			    struct eos_file **ret, struct eos_error *err)
{
	cleanup_free struct eos_manifest *m = NULL;
	struct eos_file *f;
	int r;

	r = file_check_content(st, c, &m, err);
	if (r < 0)
		return r;
	f = calloc(1, sizeof(*f));
	if (!f)
		return eos_error_set(err, -ENOMEM, "open content: out of memory");
	f->st = st;
	f->c = *c;
	f->m = TAKE_PTR(m);
	*ret = f;
	return 0;
}

uint64_t
eos_file_size(const struct eos_file *f)
{
	return f->c.size;
}

void
eos_file_close(struct eos_file *f)
{
	if (!f)
		return;
	free(f->m);
	free(f);
}

/*
 * Copy the overlap of [off, off + len) with the chunk d at [chunk_off, chunk_off + chunk_len) of
 * the file into buf (which holds the file bytes from off). Returns the bytes copied or -errno.
 */
static ssize_t
copy_chunk(struct eos_file *f, const struct eos_digest *d, uint64_t chunk_off, uint64_t chunk_len,
	   uint8_t *buf, size_t len, uint64_t off, struct eos_error *err)
{
	EOS_CLEANUP(eos_cached_chunk_unrefp) struct eos_cached_chunk *ch = NULL;
	char hex[EOS_DIGEST_HEX_LEN + 1];
	uint64_t from = EOS_MAX(off, chunk_off), to = EOS_MIN(off + len, chunk_off + chunk_len);
	int r;

	r = eos_chunk_read(f->st, d, &ch, err);
	if (r < 0)
		return r;
	if (ch->len != chunk_len) {
		eos_digest_hex(d, hex);
		return eos_error_set(err, -EBADMSG, "chunk '%s': length %zu, expected %llu", hex,
				     ch->len, (unsigned long long)chunk_len);
	}
	memcpy(buf + (from - off), ch->data + (from - chunk_off), to - from);
	return (ssize_t)(to - from);
}

/* Index of the chunk containing file offset off (off < m->size). */
static uint32_t
manifest_find(const struct eos_manifest *m, uint64_t off)
{
	uint32_t lo = 0, hi = m->n;

	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (m->chunks[mid].off <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static ssize_t
read_manifest(struct eos_file *f, uint8_t *buf, size_t len, uint64_t off, struct eos_error *err)
{
	const struct eos_manifest *m = f->m;
	size_t done = 0;

	for (uint32_t i = manifest_find(m, off); done < len && i < m->n; i++) {
		const struct eos_manifest_chunk *c = &m->chunks[i];
		ssize_t n = copy_chunk(f, &c->digest, c->off, c->len, buf, len, off, err);

		if (n < 0)
			return n;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

ssize_t
eos_file_pread(struct eos_file *f, void *buf, size_t len, uint64_t off, struct eos_error *err)
{
	if (off >= f->c.size || len == 0)
		return 0;
	len = (size_t)EOS_MIN((uint64_t)len, f->c.size - off);
	len = EOS_MIN(len, (size_t)SSIZE_MAX);
	switch (f->c.kind) {
	case EOS_CONTENT_INLINE:
		memcpy(buf, f->c.inline_data + off, len);
		return (ssize_t)len;
	case EOS_CONTENT_CHUNK:
		return copy_chunk(f, &f->c.digest, 0, f->c.size, buf, len, off, err);
	case EOS_CONTENT_MANIFEST:
		return read_manifest(f, buf, len, off, err);
	case EOS_CONTENT_NONE:
		break;
	}
	return eos_error_set(err, -EINVAL, "read: not a regular file");
}
