/* SPDX-License-Identifier: MIT */
#include "store/content.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/failpoint.h"
#include "common/hashmap.h"

#include "store/chunker.h"
#include "store/codec.h"
#include "store/refs.h"
#include "store/store-internal.h"

enum {
	MANIFEST_FORMAT = 1,
	MANIFEST_HEADER_LEN = 1 + 4,
	MANIFEST_ENTRY_LEN = EOS_DIGEST_LEN + 4,
	PUT_FD_BUFFER = 4 * EOS_CHUNK_MAX, /* >= 2 × max: a full chunk always fits after a refill */
};

struct eos_content_writer {
	struct eos_store *st;
	pthread_mutex_t lock;
	struct eos_hashmap chunks;    /* digests of chunks this writer wrote; protected by lock */
	struct eos_hashmap manifests; /* digests of manifests it wrote; protected by lock */
	struct eos_content_writer_stats stats; /* protected by lock */
};

/* Hex form of a digest usable inside one expression: hexd(d).s. */
struct digest_hex {
	char s[EOS_DIGEST_HEX_LEN + 1];
};

static struct digest_hex
hexd(const struct eos_digest *d)
{
	struct digest_hex h;

	eos_digest_hex(d, h.s);
	return h;
}

/* --- writer ----------------------------------------------------------------------------------- */

int
eos_content_writer_new(struct eos_store *st, struct eos_content_writer **ret)
{
	struct eos_content_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->st = st;
	pthread_mutex_init(&w->lock, NULL);
	*ret = w;
	return 0;
}

void
eos_content_writer_free(struct eos_content_writer *w)
{
	if (!w)
		return;
	eos_hashmap_release(&w->chunks);
	eos_hashmap_release(&w->manifests);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

void
eos_content_writer_stats(struct eos_content_writer *w, struct eos_content_writer_stats *ret)
{
	pthread_mutex_lock(&w->lock);
	*ret = w->stats;
	pthread_mutex_unlock(&w->lock);
}

static bool
writer_has(struct eos_content_writer *w, struct eos_hashmap *s, const struct eos_digest *d)
{
	bool has;

	pthread_mutex_lock(&w->lock);
	has = eos_hashmap_find(s, d->b, EOS_DIGEST_LEN) != NULL;
	pthread_mutex_unlock(&w->lock);
	return has;
}

/* Note that d was written. A failed insertion only costs a later duplicate write. */
static void
writer_note(struct eos_content_writer *w, struct eos_hashmap *s, const struct eos_digest *d,
	    size_t frame_len)
{
	union eos_hashmap_value *v;

	pthread_mutex_lock(&w->lock);
	(void)eos_hashmap_get_or_insert(s, d->b, EOS_DIGEST_LEN, &v);
	if (s == &w->chunks) {
		w->stats.chunks_written++;
		w->stats.stored_bytes += frame_len;
	}
	pthread_mutex_unlock(&w->lock);
}

static void
writer_count_raw(struct eos_content_writer *w, uint64_t n)
{
	pthread_mutex_lock(&w->lock);
	w->stats.raw_bytes += n;
	pthread_mutex_unlock(&w->lock);
}

/* 1 when the object must be written, 0 when this writer wrote it or the store references it. */
static int
object_needed(struct eos_content_writer *w, enum eos_ref_type type, const struct eos_digest *d,
	      struct eos_error *err)
{
	struct eos_hashmap *s = type == EOS_REF_CHUNK ? &w->chunks : &w->manifests;
	uint64_t count = 0;
	int r;

	if (writer_has(w, s, d))
		return 0;
	r = eos_refs_get(w->st, type, d, &count, err);
	if (r < 0)
		return r;
	return count == 0;
}

/* Compress and write one chunk unless present. frame is scratch space. */
static int
chunk_write(struct eos_content_writer *w, const struct eos_digest *d, const void *p, size_t n,
	    struct eos_buf *frame, struct eos_error *err)
{
	int r = object_needed(w, EOS_REF_CHUNK, d, err);

	if (r <= 0)
		return r;
	eos_buf_truncate(frame, 0);
	r = eos_codec_encode(p, n, w->st->zstd_level, frame);
	if (r < 0)
		return eos_error_set(err, r, "compress chunk '%s': %s", hexd(d).s, strerror(-r));
	r = EOS_FAILPOINT("content.chunk_write");
	if (r == 0)
		r = eos_space_check(&w->st->space, EOS_SPACE_GROW, frame->len, err);
	if (r == 0)
		r = eos_kv_put(w->st->kv, EOS_CF_CHUNKS, d->b, EOS_DIGEST_LEN, frame->data,
			       frame->len, false, err);
	if (r < 0)
		return eos_error_prefix(err, r, "write chunk '%s'", hexd(d).s);
	writer_note(w, &w->chunks, d, frame->len);
	return 0;
}

static int
manifest_write(struct eos_content_writer *w, const struct eos_digest *d,
	       const struct eos_manifest *m, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf rec = { 0 };
	int r = object_needed(w, EOS_REF_MANIFEST, d, err);

	if (r <= 0)
		return r;
	r = eos_manifest_encode(m, &rec);
	if (r < 0)
		return eos_error_set(err, r, "encode manifest '%s': %s", hexd(d).s, strerror(-r));
	r = EOS_FAILPOINT("content.manifest_write");
	if (r == 0)
		r = eos_space_check(&w->st->space, EOS_SPACE_GROW, rec.len, err);
	if (r == 0)
		r = eos_kv_put(w->st->kv, EOS_CF_MANIFESTS, d->b, EOS_DIGEST_LEN, rec.data, rec.len,
			       false, err);
	if (r < 0)
		return eos_error_prefix(err, r, "write manifest '%s'", hexd(d).s);
	writer_note(w, &w->manifests, d, rec.len);
	return 0;
}

/* --- putting content -------------------------------------------------------------------------- */

/* One put in progress: chunks so far, the whole-content hash and scratch space. */
struct put_state {
	struct eos_content_writer *w;
	struct eos_sha256 *whole;
	struct eos_buf frame;
	struct eos_manifest *m; /* chunks so far; m->size is the bytes so far */
	uint32_t cap;
};

static void
put_state_release(struct put_state *ps)
{
	eos_sha256_free(ps->whole);
	eos_buf_release(&ps->frame);
	free(ps->m);
}

static int
put_state_init(struct put_state *ps, struct eos_content_writer *w, struct eos_error *err)
{
	*ps = (struct put_state){ .w = w };
	ps->m = calloc(1, sizeof(*ps->m));
	if (!ps->m || eos_sha256_new(&ps->whole) < 0)
		return eos_error_set(err, -ENOMEM, "put content: out of memory");
	return 0;
}

static int
manifest_append(struct put_state *ps, const struct eos_digest *d, size_t n)
{
	struct eos_manifest *m;
	uint32_t cap;

	if (ps->m->n == ps->cap) {
		if (ps->cap > UINT32_MAX / 2)
			return -EFBIG;
		cap = ps->cap ? ps->cap * 2 : 16;
		m = realloc(ps->m, sizeof(*m) + (size_t)cap * sizeof(m->chunks[0]));
		if (!m)
			return -ENOMEM;
		ps->m = m;
		ps->cap = cap;
	}
	ps->m->chunks[ps->m->n++] = (struct eos_manifest_chunk){
		.digest = *d,
		.len = (uint32_t)n,
		.off = ps->m->size,
	};
	ps->m->size += n;
	return 0;
}

/*
 * Store one chunk. only is true when it is the whole content (first chunk and last): its digest
 * is then the file digest, so the whole-content hash is skipped.
 */
static int
put_chunk(struct put_state *ps, const uint8_t *p, size_t n, bool only, struct eos_error *err)
{
	struct eos_digest d;
	int r;

	r = eos_sha256(p, n, &d);
	if (r == 0 && !only)
		r = eos_sha256_update(ps->whole, p, n);
	if (r < 0)
		return eos_error_set(err, r, "hash chunk: %s", strerror(-r));
	r = chunk_write(ps->w, &d, p, n, &ps->frame, err);
	if (r < 0)
		return r;
	r = manifest_append(ps, &d, n);
	if (r < 0)
		return eos_error_set(err, r, "add chunk '%s' to manifest: %s", hexd(&d).s,
				     strerror(-r));
	return 0;
}

/* Fill ret from the chunks put: one chunk, or a manifest written to the store. */
static int
put_finish(struct put_state *ps, struct eos_content *ret, struct eos_error *err)
{
	struct eos_content c = { .size = ps->m->size };
	int r;

	if (ps->m->n == 1) {
		c.kind = EOS_CONTENT_CHUNK;
		c.digest = ps->m->chunks[0].digest;
	} else {
		c.kind = EOS_CONTENT_MANIFEST;
		r = eos_sha256_final(ps->whole, &c.digest);
		if (r < 0)
			return eos_error_set(err, r, "hash content: %s", strerror(-r));
		r = manifest_write(ps->w, &c.digest, ps->m, err);
		if (r < 0)
			return r;
	}
	writer_count_raw(ps->w, c.size);
	*ret = c;
	return 0;
}

static int
put_inline(struct eos_content_writer *w, const void *data, size_t len, struct eos_content *ret,
	   struct eos_error *err)
{
	struct eos_content c = { .kind = EOS_CONTENT_INLINE, .size = len };
	int r;

	r = eos_sha256(data, len, &c.digest);
	if (r < 0)
		return eos_error_set(err, r, "hash content: %s", strerror(-r));
	c.inline_len = (uint32_t)len;
	if (len)
		memcpy(c.inline_data, data, len);
	writer_count_raw(w, len);
	*ret = c;
	return 0;
}

int
eos_content_put_mem(struct eos_content_writer *w, const void *data, size_t len,
		    struct eos_content *ret, struct eos_error *err)
{
	EOS_CLEANUP(put_state_release) struct put_state ps = { 0 };
	const uint8_t *p = data;
	size_t off = 0;
	int r;

	if (len <= EOS_INLINE_MAX)
		return put_inline(w, data, len, ret, err);
	r = put_state_init(&ps, w, err);
	while (r == 0 && off < len) {
		size_t n = eos_chunker_cut(p + off, len - off);

		r = put_chunk(&ps, p + off, n, off == 0 && n == len, err);
		off += n;
	}
	if (r < 0)
		return r;
	return put_finish(&ps, ret, err);
}

/* Read until buf holds cap bytes or EOF; *have is updated, *eof set at end of file. */
static int
fill(int fd, uint8_t *buf, size_t cap, size_t *have, bool *eof, struct eos_error *err)
{
	while (*have < cap) {
		ssize_t n = read(fd, buf + *have, cap - *have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return eos_error_set(err, eos_neg_errno(), "read content: %s",
					     strerror(errno));
		if (n == 0) {
			*eof = true;
			return 0;
		}
		*have += (size_t)n;
	}
	return 0;
}

/* Cut and store the chunks of buf[0, *have) that are final; keep the rest at the front. */
static int
put_buffered(struct put_state *ps, uint8_t *buf, size_t *have, bool eof, struct eos_error *err)
{
	size_t off = 0;
	int r = 0;

	while (r == 0 && (*have - off >= EOS_CHUNK_MAX || (eof && off < *have))) {
		size_t n = eos_chunker_cut(buf + off, *have - off);
		bool only = eof && ps->m->n == 0 && n == *have;

		r = put_chunk(ps, buf + off, n, only, err);
		off += n;
	}
	memmove(buf, buf + off, *have - off);
	*have -= off;
	return r;
}

int
eos_content_put_fd(struct eos_content_writer *w, int fd, struct eos_content *ret,
		   struct eos_error *err)
{
	EOS_CLEANUP(put_state_release) struct put_state ps = { 0 };
	cleanup_free uint8_t *buf = malloc(PUT_FD_BUFFER);
	size_t have = 0;
	bool eof = false;
	int r;

	if (!buf)
		return eos_error_set(err, -ENOMEM, "put content: out of memory");
	r = put_state_init(&ps, w, err);
	while (r == 0 && !eof) {
		r = fill(fd, buf, PUT_FD_BUFFER, &have, &eof, err);
		if (r < 0)
			return r;
		if (eof && ps.m->n == 0 && have <= EOS_INLINE_MAX)
			return put_inline(w, buf, have, ret, err);
		r = put_buffered(&ps, buf, &have, eof, err);
	}
	if (r < 0)
		return r;
	return put_finish(&ps, ret, err);
}

/* --- manifests -------------------------------------------------------------------------------- */

int
eos_manifest_encode(const struct eos_manifest *m, struct eos_buf *out)
{
	size_t old = out->len;
	int r;

	r = eos_buf_reserve(out, MANIFEST_HEADER_LEN + (size_t)m->n * MANIFEST_ENTRY_LEN);
	if (r == 0)
		r = eos_buf_append_u8(out, MANIFEST_FORMAT);
	if (r == 0)
		r = eos_buf_append_le32(out, m->n);
	for (uint32_t i = 0; r == 0 && i < m->n; i++) {
		r = eos_buf_append(out, m->chunks[i].digest.b, EOS_DIGEST_LEN);
		if (r == 0)
			r = eos_buf_append_le32(out, m->chunks[i].len);
	}
	if (r < 0)
		eos_buf_truncate(out, old);
	return r;
}

static int
manifest_decode_chunks(struct eos_reader *rd, struct eos_manifest *m)
{
	for (uint32_t i = 0; i < m->n; i++) {
		struct eos_manifest_chunk *c = &m->chunks[i];
		const uint8_t *d;

		if (eos_reader_bytes(rd, EOS_DIGEST_LEN, &d) < 0 ||
		    eos_reader_le32(rd, &c->len) < 0 || c->len == 0)
			return -EBADMSG;
		memcpy(c->digest.b, d, EOS_DIGEST_LEN);
		c->off = m->size;
		m->size += c->len;
	}
	return 0;
}

int
eos_manifest_decode(const void *p, size_t n, struct eos_manifest **ret)
{
	cleanup_free struct eos_manifest *m = NULL;
	struct eos_reader rd;
	uint8_t format;
	uint32_t count;

	eos_reader_init(&rd, p, n);
	if (eos_reader_u8(&rd, &format) < 0 || format != MANIFEST_FORMAT ||
	    eos_reader_le32(&rd, &count) < 0 || count == 0 ||
	    rd.left / MANIFEST_ENTRY_LEN != count || rd.left % MANIFEST_ENTRY_LEN != 0)
		return -EBADMSG;
	m = calloc(1, sizeof(*m) + (size_t)count * sizeof(m->chunks[0]));
	if (!m)
		return -ENOMEM;
	m->n = count;
	if (manifest_decode_chunks(&rd, m) < 0)
		return -EBADMSG;
	*ret = TAKE_PTR(m);
	return 0;
}

int
eos_manifest_read(struct eos_store *st, const struct eos_digest *d, struct eos_manifest **ret,
		  struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf rec = { 0 };
	int r;

	r = eos_kv_get(st->kv, NULL, EOS_CF_MANIFESTS, d->b, EOS_DIGEST_LEN, &rec, err);
	if (r == -ENOENT)
		return eos_error_set(err, r, "manifest '%s' is missing", hexd(d).s);
	if (r < 0)
		return eos_error_prefix(err, r, "read manifest '%s'", hexd(d).s);
	r = eos_manifest_decode(rec.data, rec.len, ret);
	if (r == -EBADMSG)
		return eos_error_set(err, r, "manifest '%s': malformed record", hexd(d).s);
	if (r < 0)
		return eos_error_set(err, r, "manifest '%s': %s", hexd(d).s, strerror(-r));
	return 0;
}

/* --- chunks ----------------------------------------------------------------------------------- */

struct chunk_decode {
	struct eos_chunk_cache *cache;
	const struct eos_digest *d;
	uint8_t *data; /* from the cache's allocator, decoded and verified */
	uint32_t len;
	bool found; /* decode_pinned() ran: its errors are worded already */
	struct eos_error *err;
};

/* Decode a chunk's frame, still pinned by RocksDB, straight into the memory the cache keeps. */
static int
decode_pinned(void *ctx, const void *frame, size_t n)
{
	struct chunk_decode *c = ctx;
	int r = eos_codec_decoded_len(frame, n, c->d, &c->len, c->err);

	c->found = true;
	if (r < 0)
		return r;
	c->data = eos_chunk_cache_alloc(c->cache, c->len);
	if (!c->data)
		return eos_error_set(c->err, -ENOMEM, "chunk '%s': out of memory", hexd(c->d).s);
	r = eos_codec_decode_into(frame, n, c->d, c->data, c->len, c->err);
	if (r < 0) {
		eos_chunk_cache_free_data(c->cache, c->data, c->len);
		c->data = NULL;
	}
	return r;
}

int
eos_chunk_read(struct eos_store *st, const struct eos_digest *d, struct eos_cached_chunk **ret,
	       struct eos_error *err)
{
	struct chunk_decode c = { .cache = st->cache, .d = d, .err = err };
	int r;

	if (eos_chunk_cache_get(st->cache, d, ret) == 0)
		return 0;
	r = eos_kv_get_with(st->kv, EOS_CF_CHUNKS, d->b, EOS_DIGEST_LEN, decode_pinned, &c, err);
	if (r < 0 && c.found)
		return r;
	if (r == -ENOENT)
		return eos_error_set(err, r, "chunk '%s' is missing", hexd(d).s);
	if (r < 0)
		return eos_error_prefix(err, r, "read chunk '%s'", hexd(d).s);
	r = eos_chunk_cache_put(st->cache, d, c.data, c.len, ret);
	if (r < 0)
		return eos_error_set(err, r, "cache chunk '%s': %s", hexd(d).s, strerror(-r));
	return 0;
}

bool
eos_store_background_due(struct eos_store *st)
{
	return eos_chunk_cache_prefault_due(st->cache);
}

void
eos_store_background(struct eos_store *st)
{
	eos_chunk_cache_prefault(st->cache);
}
