/* SPDX-License-Identifier: MIT */
/*
 * Merging a file both the session and the head changed since the base: attributes three-way,
 * content taken from the side that changed it, or merged line by line (store/git.c) when both
 * did; binary or large files that differ, and overlapping edits, are conflicts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/digest.h"

#include "store/content.h"
#include "store/git.h"
#include "store/publish.h"

bool
eos_pub_merge_attr(const struct eos_attr *base, const struct eos_attr *head,
		   const struct eos_attr *ours, struct eos_attr *ret)
{
	*ret = *head;
	if (ours->mode != base->mode) {
		if (head->mode != base->mode && head->mode != ours->mode)
			return false;
		ret->mode = ours->mode;
	}
	if (ours->uid != base->uid)
		ret->uid = ours->uid;
	if (ours->gid != base->gid)
		ret->gid = ours->gid;
	if (ours->mtime_ns != base->mtime_ns)
		ret->mtime_ns = ours->mtime_ns;
	return true;
}

int
eos_pub_merge_op_attr(struct eos_pub_check *c, struct eos_pub_op *op, const struct eos_attr *base,
		      struct eos_attr *ret)
{
	if (eos_pub_merge_attr(base, &op->head.st.attr, &op->attr, ret))
		return 1;
	return eos_pub_conflict(c, op, EOS_CONFLICT_MODE, NULL,
				"'%s': permissions changed to %04o by the session and to %04o by "
				"the head",
				op->path, op->attr.mode & 07777, op->head.st.attr.mode & 07777);
}

/* The three sides' bytes; base is empty when the path did not exist at the base. */
struct sides {
	uint8_t *base, *head, *ours;
	size_t blen, hlen, olen;
};

static void
sides_release(struct sides *s)
{
	free(s->base);
	free(s->head);
	free(s->ours);
}

static int
sides_read(struct eos_pub_check *c, const struct eos_pub_op *op, struct sides *s,
	   struct eos_error *err)
{
	struct eos_store *st = c->p->st;
	int r = 0;

	if (op->base_found)
		r = eos_pub_read_content(st, &op->base.st.content, &s->base, &s->blen, err);
	r = r ?: eos_pub_read_content(st, &op->head.st.content, &s->head, &s->hlen, err);
	return r ?: eos_pub_read_content(st, &op->content, &s->ours, &s->olen, err);
}

static bool
too_large(const struct eos_pub_op *op)
{
	return (op->base_found && op->base.st.content.size > EOS_MERGE_TEXT_MAX) ||
	       op->head.st.content.size > EOS_MERGE_TEXT_MAX ||
	       op->content.size > EOS_MERGE_TEXT_MAX;
}

static int
conflict_regions(struct eos_pub_check *c, const struct eos_pub_op *op, const struct eos_merge3 *m)
{
	struct eos_conflict *k;
	int r = eos_pub_conflict(c, op, EOS_CONFLICT_CONTENT, NULL,
				 "'%s': %zu conflicting region%s between the session's and the "
				 "head's edits",
				 op->path, m->nregions, m->nregions == 1 ? "" : "s");

	if (r < 0 || !m->nregions)
		return r;
	k = &c->conflicts.v[c->conflicts.n - 1];
	k->lines = calloc(m->nregions, sizeof(*k->lines));
	if (!k->lines)
		return -ENOMEM;
	memcpy(k->lines, m->regions, m->nregions * sizeof(*k->lines));
	k->nlines = m->nregions;
	return 0;
}

/* A clean merge: store the merged bytes as the staged content and recompute the owners. */
static int
take_merged(struct eos_pub_check *c, struct eos_pub_op *op, struct eos_op *staged,
	    const struct eos_merge3 *m, const struct sides *s, struct eos_error *err)
{
	struct eos_pub_blame_args a = { .data = m->data,
					.len = m->len,
					.prev = &op->head.st,
					.prev_path = op->path,
					.ours = s->ours,
					.ours_len = s->olen };
	struct eos_content merged;
	int r = eos_content_put_mem(c->p->cs->writer, m->data, m->len, &merged, err);

	if (r < 0)
		return r;
	staged->content = merged;
	op->content = merged;
	a.c = &op->content;
	r = eos_pub_blame(c->p, op, &a, err);
	if (r < 0)
		return r;
	op->blame_prev_version = op->head.st.version; /* computed against the head already */
	c->merged++;
	op->resolved = true;
	return 0;
}

static int
merge_content(struct eos_pub_check *c, struct eos_pub_op *op, struct eos_op *staged,
	      struct eos_error *err)
{
	struct sides s = { 0 };
	struct eos_merge3 m = { 0 };
	int r;

	if (too_large(op))
		return eos_pub_conflict(c, op, EOS_CONFLICT_TOO_LARGE, NULL,
					"'%s': both sides changed it and it is larger than %d MiB",
					op->path, EOS_MERGE_TEXT_MAX >> 20);
	r = sides_read(c, op, &s, err);
	if (r < 0)
		goto out;
	if (eos_text_is_binary(s.base, s.blen) || eos_text_is_binary(s.head, s.hlen) ||
	    eos_text_is_binary(s.ours, s.olen)) {
		r = eos_pub_conflict(c, op, EOS_CONFLICT_BINARY, NULL,
				     "'%s': both sides changed this binary file", op->path);
		goto out;
	}
	r = eos_git_merge3(s.base, s.blen, s.head, s.hlen, s.ours, s.olen, &m, err);
	if (r >= 0)
		r = m.clean ? take_merged(c, op, staged, &m, &s, err) : conflict_regions(c, op, &m);
out:
	eos_merge3_release(&m);
	sides_release(&s);
	return r;
}

int
eos_pub_merge_file(struct eos_pub_check *c, struct eos_pub_op *op, struct eos_error *err)
{
	struct eos_op *staged = eos_changeset_op(c->p->cs, op->path);
	const struct eos_attr *base = op->base_found ? &op->base.st.attr : &op->head.st.attr;
	const struct eos_digest *hd = &op->head.st.content.digest;
	struct eos_attr attr;
	int64_t t0;
	int r;

	if (!staged)
		return eos_error_set(err, -EIO, "'%s': staged file is missing", op->path);
	r = eos_pub_merge_op_attr(c, op, base, &attr);
	if (r <= 0)
		return r;
	staged->attr = attr;
	op->resolved = true;
	if (eos_digest_eq(&op->content.digest, hd)) {
		/* the identical change: nothing to write unless the permissions or owner differ */
		staged->dropped = attr.mode == op->head.st.attr.mode &&
				  attr.uid == op->head.st.attr.uid &&
				  attr.gid == op->head.st.attr.gid;
		return 0;
	}
	if (op->base_found && eos_digest_eq(&op->content.digest, &op->base.st.content.digest)) {
		/* only the head changed the bytes: keep them, and their owners */
		staged->content = op->head.st.content;
		op->content = op->head.st.content;
		op->blame_ready = false;
		return 0;
	}
	if (op->base_found && eos_digest_eq(hd, &op->base.st.content.digest))
		return 0; /* only the session changed the bytes */
	op->resolved = false;
	t0 = eos_mono_ns();
	r = merge_content(c, op, staged, err);
	c->merge_ns += eos_mono_ns() - t0;
	return r;
}
