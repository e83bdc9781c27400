/* SPDX-License-Identifier: MIT */
/*
 * store/blame: line ownership (who wrote each line of a file), computed by publishes and stored
 * in EOS_CF_BLAME apart from the layer entries (squash and gc never touch it; destroy deletes a
 * sandbox's records). Internal to store/. Layout: doc/store-format.md.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/error.h"

#include "store/kv.h"
#include "store/store.h"

struct eos_blame_run {
	uint32_t count;
	uint32_t owner; /* index into owners */
};

struct eos_blame {
	uint32_t lines; /* sum of run counts */
	struct eos_blame_run *runs;
	size_t nruns; /* coalesced: adjacent runs have different owners */
	char **owners;
	size_t nowners; /* distinct owner strings */
};

void eos_blame_init(struct eos_blame *b);
/* Free what b holds and re-initialise it. */
void eos_blame_release(struct eos_blame *b);
/* A blame of `lines` lines, all owned by owner (0 lines: no runs). b is replaced. */
int eos_blame_single(struct eos_blame *b, uint32_t lines, const char *owner);

struct eos_blame_input {
	/*
	 * The file this content replaces at the head: its bytes and owners (prev_blame NULL: there
	 * was no file, every line is new).
	 */
	const void *prev;
	size_t prev_len;
	const struct eos_blame *prev_blame;
	/*
	 * The session's version of the file and who wrote which of its bytes. ours NULL: ours is
	 * data itself (no merge happened).
	 */
	const void *ours;
	size_t ours_len;
	const struct eos_write_range *ranges;
	size_t nranges;
	const void *data; /* the new content (merged, or ours) */
	size_t len;
	const char *writer; /* owner of new lines that no range claims */
};

/*
 * Lines of data kept from prev (eos_line_map) keep prev's owner; other lines are owned by the
 * owner of the range covering most of that line's bytes in ours (mapped from data to ours with
 * eos_line_map(ours, data) when ours != NULL), else writer. Binary content (a NUL byte or invalid
 * UTF-8) or content above EOS_MERGE_TEXT_MAX: identical to prev -> prev's owners; else one run
 * owned by the range owner covering most bytes (else writer). Result lines == line count of data.
 * *ret is replaced (initialised by the caller).
 */
int eos_blame_compute(const struct eos_blame_input *in, struct eos_blame *ret,
		      struct eos_error *err);

/*
 * Records: blame CF key  be64 sbx · path · 0x00 · be64 version (the version of the entry record
 * it describes, NOT inverted); value: a versioned owner table + runs (doc/store-format.md).
 * Decoding checks everything: a corrupt value is -EBADMSG.
 */
int eos_blame_key(struct eos_buf *out, uint64_t sbx, const char *path, uint64_t version);
int eos_blame_encode(const struct eos_blame *b, struct eos_buf *out);
int eos_blame_decode(const void *p, size_t n, struct eos_blame *ret);
/* Stage the record of path at version into batch. */
int eos_blame_stage(struct eos_kv_batch *batch, uint64_t sbx, const char *path, uint64_t version,
		    const struct eos_blame *b);

/*
 * The owners of file entry e (found at path; e->version is the version that wrote it), its
 * content being `lines` lines long: the stored record at (path, e->version); without one, every
 * line "original" when e->version is the sandbox's import version, else "unknown". A record
 * whose line count differs from `lines` is treated as missing (unknown). snap may be NULL.
 * A corrupt record is -EBADMSG naming the path.
 */
int eos_blame_for_entry(struct eos_store *st, const struct eos_kv_snapshot *snap, uint64_t sbx,
			const char *path, const struct eos_stat *e, uint32_t lines,
			struct eos_blame *ret, struct eos_error *err);
