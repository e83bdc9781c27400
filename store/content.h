/* SPDX-License-Identifier: MIT */
/*
 * store/content: file content in and out of the chunk store.
 *
 * Writing: a content writer turns bytes into a struct eos_content — inline (<= EOS_INLINE_MAX),
 * one chunk, or a manifest of FastCDC chunks — hashing, compressing and writing chunks and the
 * manifest with sync=false (the commit's synced batch makes them durable: one WAL). A chunk whose
 * reference count is already positive is not written again; the writer also remembers what it
 * wrote itself. Reference counts are NOT touched here: the commit adds them (store/refs.h).
 * Writers are thread-safe: several threads may put through one writer.
 *
 * Reading: chunks go through the store's chunk cache and are verified on decode.
 */
#pragma once

#include <stdint.h>

#include "common/buf.h"
#include "common/digest.h"
#include "common/error.h"

#include "store/cache.h"
#include "store/store.h"

struct eos_content_writer;

struct eos_content_writer_stats {
	uint64_t raw_bytes; /* bytes put */
	uint64_t chunks_written;
	uint64_t stored_bytes; /* frame bytes written (after dedup) */
};

int eos_content_writer_new(struct eos_store *st, struct eos_content_writer **ret);
void eos_content_writer_free(struct eos_content_writer *w);
EOS_DEFINE_CLEANUP(struct eos_content_writer *, eos_content_writer_free)
void eos_content_writer_stats(struct eos_content_writer *w, struct eos_content_writer_stats *ret);

/* Store len bytes; fill *ret. */
int eos_content_put_mem(struct eos_content_writer *w, const void *data, size_t len,
			struct eos_content *ret, struct eos_error *err);
/* Store the bytes of fd from its offset to EOF, streaming (bounded memory). */
int eos_content_put_fd(struct eos_content_writer *w, int fd, struct eos_content *ret,
		       struct eos_error *err);

/* One entry of a manifest: chunk digest, raw length and offset in the file. */
struct eos_manifest_chunk {
	struct eos_digest digest;
	uint32_t len;
	uint64_t off;
};

struct eos_manifest {
	uint64_t size;
	uint32_t n;
	struct eos_manifest_chunk chunks[]; /* n entries, offsets ascending */
};

/*
 * Manifest record: u8 format 1, le32 n, then n × (32-byte digest, le32 length).
 * Encode appends to out.
 */
int eos_manifest_encode(const struct eos_manifest *m, struct eos_buf *out);
/* Decode; caller owns *ret (free()). -EBADMSG when malformed. */
int eos_manifest_decode(const void *p, size_t n, struct eos_manifest **ret);
/* Read manifest d from the store. Caller owns *ret (free()). */
int eos_manifest_read(struct eos_store *st, const struct eos_digest *d, struct eos_manifest **ret,
		      struct eos_error *err);

/* Read, verify and cache chunk d. Caller owns a reference (eos_cached_chunk_unref()). */
int eos_chunk_read(struct eos_store *st, const struct eos_digest *d, struct eos_cached_chunk **ret,
		   struct eos_error *err);
