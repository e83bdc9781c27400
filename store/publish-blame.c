/* SPDX-License-Identifier: MIT */
/*
 * Line owners for the publish gate: computing them for a file a publish writes
 * (eos_pub_blame), and staging one blame record per file record of the new layer
 * (eos_pub_stage_blame) — computed ones, or the previous owners carried over for records whose
 * content did not change (attribute changes, hard links).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/digest.h"

#include "store/git.h"
#include "store/publish.h"
#include "store/store-internal.h"

enum {
	COUNT_BLOCK = 1 << 20,
};

/* Lines of stored content, streaming (any size). */
static int
content_lines(struct eos_store *st, const struct eos_content *c, uint32_t *ret,
	      struct eos_error *err)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	cleanup_free uint8_t *buf = NULL;
	uint64_t lines = 0;
	uint8_t last = '\n';
	ssize_t n;
	int r = eos_store_file_open_content(st, c, &f, err);

	if (r < 0)
		return r;
	buf = malloc(COUNT_BLOCK);
	if (!buf)
		return eos_error_set(err, -ENOMEM, "count lines: out of memory");
	for (uint64_t off = 0; off < c->size; off += (uint64_t)n) {
		n = eos_file_pread(f, buf, COUNT_BLOCK, off, err);
		if (n <= 0)
			return n < 0 ? (int)n : eos_error_set(err, -EBADMSG, "content ends early");
		for (const uint8_t *q = buf; (q = memchr(q, '\n', (size_t)(buf + n - q))); q++)
			lines++;
		last = buf[n - 1];
	}
	if (last != '\n')
		lines++;
	*ret = lines > UINT32_MAX ? UINT32_MAX : (uint32_t)lines;
	return 0;
}

/* The owner of most bytes among the write ranges, else the publish's owner. */
static const char *
main_owner(const struct eos_publish *p, const struct eos_pub_op *op)
{
	uint64_t best = 0;
	const char *owner = p->owner;

	for (size_t i = 0; i < op->nranges; i++) {
		uint64_t n = op->ranges[i].end - op->ranges[i].start;

		if (n > best && op->ranges[i].owner[0]) {
			best = n;
			owner = op->ranges[i].owner;
		}
	}
	return owner;
}

/* The owners of the previous file prev (its bytes pdata, plen) at path. */
static int
prev_blame(struct eos_publish *p, const struct eos_pub_blame_args *a, uint32_t lines,
	   struct eos_blame *ret, struct eos_error *err)
{
	return eos_blame_for_entry(p->st, NULL, p->sbx, a->prev_path, a->prev, lines, ret, err);
}

/* Files too large to diff: the previous owners when unchanged, else one owner for all. */
static int
blame_large(struct eos_publish *p, struct eos_pub_op *op, const struct eos_pub_blame_args *a,
	    struct eos_error *err)
{
	uint32_t lines;
	int r = content_lines(p->st, a->c, &lines, err);

	if (r < 0)
		return r;
	if (a->prev && eos_digest_eq(&a->prev->content.digest, &a->c->digest))
		return prev_blame(p, a, lines, &op->blame, err);
	return eos_blame_single(&op->blame, lines, main_owner(p, op));
}

static int
blame_text(struct eos_publish *p, struct eos_pub_op *op, const struct eos_pub_blame_args *a,
	   const uint8_t *data, size_t len, struct eos_error *err)
{
	EOS_CLEANUP(eos_blame_release) struct eos_blame pb;
	cleanup_free uint8_t *prev = NULL;
	struct eos_blame_input in = {
		.ours = a->ours,
		.ours_len = a->ours_len,
		.ranges = op->ranges,
		.nranges = op->nranges,
		.data = data,
		.len = len,
		.writer = p->owner,
	};
	size_t plen = 0;
	int r;

	eos_blame_init(&pb);
	if (a->prev && a->prev->content.size <= EOS_MERGE_TEXT_MAX) {
		r = eos_pub_read_content(p->st, &a->prev->content, &prev, &plen, err);
		r = r ?: prev_blame(p, a, eos_text_lines(prev, plen), &pb, err);
		if (r < 0)
			return r;
		in.prev = prev;
		in.prev_len = plen;
		in.prev_blame = &pb;
	}
	return eos_blame_compute(&in, &op->blame, err);
}

int
eos_pub_blame(struct eos_publish *p, struct eos_pub_op *op, const struct eos_pub_blame_args *a,
	      struct eos_error *err)
{
	cleanup_free uint8_t *owned = NULL;
	const uint8_t *data = a->data;
	size_t len = a->len;
	int r;

	eos_blame_release(&op->blame);
	eos_blame_init(&op->blame);
	op->blame_ready = false;
	if (a->c->size > EOS_MERGE_TEXT_MAX) {
		r = blame_large(p, op, a, err);
	} else {
		if (!data) {
			r = eos_pub_read_content(p->st, a->c, &owned, &len, err);
			if (r < 0)
				return r;
			data = owned;
		}
		r = blame_text(p, op, a, data, len, err);
	}
	if (r < 0)
		return eos_error_prefix(err, r, "blame of '%s'", op->path);
	op->blame_ready = true;
	return 0;
}

/* --- the commit hook's part ------------------------------------------------------------------- */

int
eos_pub_blame_carry(struct eos_publish *p, const struct eos_kv_snapshot *snap,
		    const struct eos_content *c, const char *prev_path, const struct eos_stat *prev,
		    struct eos_blame *ret, struct eos_error *err)
{
	uint32_t lines;
	int r = content_lines(p->st, c, &lines, err);

	if (r < 0)
		return r;
	if (prev && prev->kind == EOS_KIND_FILE && eos_digest_eq(&prev->content.digest, &c->digest))
		return eos_blame_for_entry(p->st, snap, p->sbx, prev_path, prev, lines, ret, err);
	return eos_blame_single(ret, lines, EOS_OWNER_UNKNOWN);
}

/* Carry the owners of entry prev (at prev_path) over to a new record of content c at path. */
static int
stage_carried(struct eos_publish *p, struct eos_commit *cx, const char *path,
	      const struct eos_content *c, const char *prev_path, const struct eos_stat *prev,
	      struct eos_error *err)
{
	EOS_CLEANUP(eos_blame_release) struct eos_blame b;
	int r;

	eos_blame_init(&b);
	r = eos_pub_blame_carry(p, cx->snap, c, prev_path, prev, &b, err);
	return r ?: eos_blame_stage(cx->batch, cx->sbx, path, cx->version, &b);
}

/* A written plan: its computed owners, else the owners of what it links or keeps. */
static int
stage_plan_blame(struct eos_publish *p, struct eos_commit *cx, const struct eos_commit_plan *pl,
		 struct eos_error *err)
{
	const char *path = pl->op->path;
	const struct eos_pub_op *op = eos_pub_find(p, path);
	const struct eos_pub_op *src = pl->src ? eos_pub_find(p, pl->src->op->path) : NULL;
	const struct eos_stat *before = pl->before ? &pl->before->st : NULL;

	if (op && op->kind == EOS_PUB_FILE && op->blame_ready)
		return eos_blame_stage(cx->batch, cx->sbx, path, cx->version, &op->blame);
	/* an attribute change of the file prepare carried the owners over from */
	if (op && op->kind == EOS_PUB_ATTR && op->blame_ready && before &&
	    before->version == op->blame_prev_version)
		return eos_blame_stage(cx->batch, cx->sbx, path, cx->version, &op->blame);
	if (src && src->kind == EOS_PUB_FILE && src->blame_ready)
		return eos_blame_stage(cx->batch, cx->sbx, path, cx->version, &src->blame);
	if (pl->src_entry)
		return stage_carried(p, cx, path, &pl->src_entry->st.content, pl->op->target,
				     &pl->src_entry->st, err);
	if (pl->op->kind == EOS_OP_PUT_FILE)
		return stage_carried(p, cx, path, &pl->op->content, path, before, err);
	if (!before)
		return 0;
	return stage_carried(p, cx, path, &before->content, path, before, err);
}

int
eos_pub_stage_blame(struct eos_publish *p, struct eos_commit *cx, struct eos_error *err)
{
	int r = 0;

	for (size_t i = 0; r >= 0 && i < cx->n; i++) {
		const struct eos_commit_plan *pl = &cx->plans[i];

		if (pl->written && pl->kind == EOS_KIND_FILE)
			r = stage_plan_blame(p, cx, pl, err);
	}
	for (struct eos_hashmap_iter it = { 0 }; r >= 0 && eos_hashmap_next(&cx->sources, &it);) {
		const struct eos_commit_link_source *s = it.value->ptr;

		if (s->rewrite)
			r = stage_carried(p, cx, s->path, &s->e.st.content, s->path, &s->e.st, err);
	}
	return r;
}
