/* SPDX-License-Identifier: MIT */
/* Commit of a change set as one new layer (the contract is in store/changeset.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"
#include "common/failpoint.h"
#include "common/path.h"

#include "store/changeset.h"
#include "store/content.h"
#include "store/entry.h"
#include "store/kv.h"
#include "store/refs.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

/* A directory at H (cache for parent checks and lookups). */
struct dir_state {
	enum eos_kind kind; /* NONE when absent or below a non-directory */
	uint64_t floor;
	char path[];
};

static int
commit_failpoint(const char *name, struct eos_error *err)
{
	int r = EOS_FAILPOINT(name);

	if (r < 0)
		return eos_error_set(err, r, "commit: failpoint '%s'", name);
	return 0;
}

/* Forward a lookup error held in local to err (absence is not an error for the caller). */
static int
forward_error(struct eos_error *err, const struct eos_error *local, int r)
{
	if (err)
		*err = *local;
	return r;
}

static bool
plan_cuts(const struct eos_commit *cx, const struct eos_commit_plan *a)
{
	/* Paths below a are invisible at H: removed, not a directory, or given a new floor. */
	return a->kind != EOS_KIND_DIR || a->floor == cx->version;
}

/* The nearest proper ancestor of path that is staged (the root "" included), or NULL. */
static struct eos_commit_plan *
staged_ancestor(const struct eos_commit *cx, const char *path)
{
	size_t len = strlen(path);
	struct eos_commit_plan *p;

	if (len == 0)
		return NULL;
	for (size_t i = len; i-- > 0;) {
		if (path[i] != '/')
			continue;
		p = eos_hashmap_get(&cx->staged, path, i);
		if (p)
			return p;
	}
	return eos_hashmap_get(&cx->staged, "", 0);
}

static int
dir_resolve(struct eos_commit *cx, struct dir_state *d, struct eos_error *err)
{
	struct eos_error local = { 0 };
	struct eos_entry e;
	int r;

	if (cx->cs->new_sandbox) {
		/* Nothing exists at H = 0 but the root this change set creates. */
		d->kind = d->path[0] ? EOS_KIND_NONE : EOS_KIND_DIR;
		d->floor = 1;
		return 0;
	}
	eos_entry_init(&e);
	r = eos_entry_resolve(cx->st, cx->snap, cx->sbx, cx->head, d->path, &e, &local);
	if (r == 0) {
		d->kind = e.st.kind;
		d->floor = e.st.floor;
	}
	eos_entry_release(&e);
	if (r == -ENOENT || r == -ENOTDIR)
		return 0;
	return r < 0 ? forward_error(err, &local, r) : 0;
}

/* The state at H of directory path[0..plen) (cached). */
static int
dir_at_head(struct eos_commit *cx, const char *path, size_t plen, const struct dir_state **ret,
	    struct eos_error *err)
{
	const struct dir_state *cached = eos_hashmap_get(&cx->dirs, path, plen);
	cleanup_free struct dir_state *d = NULL;
	int r;

	if (cached) {
		*ret = cached;
		return 0;
	}
	d = calloc(1, sizeof(*d) + plen + 1);
	if (!d)
		return -ENOMEM;
	memcpy(d->path, path, plen);
	r = dir_resolve(cx, d, err);
	if (r >= 0)
		r = eos_hashmap_put(&cx->dirs, d->path, strlen(d->path), d);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(d);
	return 0;
}

/* Floor at H of the parent path[0..plen), seen through the staged ops: 1, or 0 when none. */
static int
parent_floor(struct eos_commit *cx, const char *path, size_t plen, uint64_t *ret,
	     struct eos_error *err)
{
	const struct eos_commit_plan *q = eos_hashmap_get(&cx->staged, path, plen);
	const struct dir_state *d = NULL;
	int r;

	if (q) {
		if (!q->before || q->before->st.kind != EOS_KIND_DIR)
			return 0;
		*ret = q->before->st.floor;
		return 1;
	}
	r = dir_at_head(cx, path, plen, &d, err);
	if (r < 0)
		return r;
	if (d->kind != EOS_KIND_DIR)
		return 0;
	*ret = d->floor;
	return 1;
}

static int
lookup_entry(struct eos_commit *cx, const char *path, size_t plen, uint64_t floor,
	     struct eos_entry **ret, struct eos_error *err)
{
	cleanup_free struct eos_entry *e = calloc(1, sizeof(*e));
	struct eos_error local = { 0 };
	const char *name = path + plen + (plen ? 1 : 0);
	int r;

	if (!e)
		return -ENOMEM;
	eos_entry_init(e);
	if (!path[0])
		r = eos_entry_resolve(cx->st, cx->snap, cx->sbx, cx->head, "", e, &local);
	else
		r = eos_entry_lookup(cx->st, cx->snap, cx->sbx, cx->head, path, plen, floor, name,
				     strlen(name), e, &local);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return forward_error(err, &local, r);
	*ret = TAKE_PTR(e);
	return 1;
}

int
eos_commit_overlay_lookup(struct eos_commit *cx, const char *path, struct eos_entry **ret,
			  struct eos_error *err)
{
	const struct eos_commit_plan *a;
	uint64_t floor = 0;
	size_t plen = 0;
	const char *name;
	int r;

	*ret = NULL;
	if (cx->cs->new_sandbox)
		return 0;
	if (path[0]) {
		a = staged_ancestor(cx, path);
		if (a && plan_cuts(cx, a))
			return 0;
		eos_path_split(path, &plen, &name);
		r = parent_floor(cx, path, plen, &floor, err);
		if (r <= 0)
			return r;
	}
	return lookup_entry(cx, path, plen, floor, ret, err);
}

void
eos_commit_entry_free(struct eos_entry *e)
{
	if (!e)
		return;
	eos_entry_release(e);
	free(e);
}

/* --- pass 1: before states, kinds and parent checks ------------------------------------------- */

static int
plan_check_parent(struct eos_commit *cx, const struct eos_commit_plan *p, struct eos_error *err)
{
	const char *path = p->op->path;
	const struct eos_commit_plan *a = staged_ancestor(cx, path);
	const struct dir_state *d = NULL;
	const char *name;
	size_t plen;
	int r;

	if (!path[0])
		return 0;
	if (a && a->kind == EOS_KIND_WHITEOUT)
		return eos_error_set(err, -EINVAL,
				     "'%s' is staged below '%s', which this change set removes",
				     path, a->op->path);
	if (a && a->kind != EOS_KIND_DIR)
		return eos_error_set(
			err, -EINVAL,
			"'%s' is staged below '%s', which is no directory after this change set",
			path, a->op->path);
	eos_path_split(path, &plen, &name);
	if (a && strlen(a->op->path) == plen)
		return 0;
	if (a && a->floor == cx->version)
		return eos_error_set(err, -ENOENT, "parent '%.*s' of '%s' does not exist",
				     (int)plen, path, path);
	r = dir_at_head(cx, path, plen, &d, err);
	if (r < 0)
		return r;
	if (d->kind == EOS_KIND_NONE || d->kind == EOS_KIND_WHITEOUT)
		return eos_error_set(err, -ENOENT, "parent '%.*s' of '%s' does not exist",
				     (int)plen, path, path);
	if (d->kind != EOS_KIND_DIR)
		return eos_error_set(err, -ENOTDIR, "parent '%.*s' of '%s' is not a directory",
				     (int)plen, path, path);
	return 0;
}

static int
plan_missing(const struct eos_commit *cx, const struct eos_commit_plan *p, const char *what,
	     struct eos_error *err)
{
	char id[EOS_LAYER_ID_LEN];

	eos_layer_id_format(cx->head, id);
	return eos_error_set(err, -ENOENT, "%s '%s': no such path at %s", what, p->op->path, id);
}

static int
plan_kind(struct eos_commit *cx, struct eos_commit_plan *p, struct eos_error *err)
{
	const struct eos_entry *b = p->before;

	switch (p->op->kind) {
	case EOS_OP_PUT_FILE:
	case EOS_OP_LINK:
		p->kind = EOS_KIND_FILE;
		return 0;
	case EOS_OP_SYMLINK:
		p->kind = EOS_KIND_SYMLINK;
		return 0;
	case EOS_OP_MKNOD:
		p->kind = p->op->node;
		return 0;
	case EOS_OP_MKDIR:
		p->kind = EOS_KIND_DIR;
		p->floor = b && b->st.kind == EOS_KIND_DIR && !p->op->opaque ? b->st.floor
									     : cx->version;
		return 0;
	case EOS_OP_REMOVE:
		if (!b)
			return plan_missing(cx, p, "remove", err);
		p->kind = EOS_KIND_WHITEOUT;
		return 0;
	case EOS_OP_SET_ATTR:
		if (!b)
			return plan_missing(cx, p, "set attributes of", err);
		p->kind = b->st.kind;
		p->floor = b->st.floor;
		if (eos_commit_attr_equal(&b->st.attr, &p->op->attr) && p->op->nedits == 0)
			p->group = b->st.link_group;
		return 0;
	}
	return -EINVAL;
}

static int
plan_all(struct eos_commit *cx, struct eos_error *err)
{
	for (size_t i = 0; i < cx->n; i++) {
		struct eos_commit_plan *p = &cx->plans[i];
		int r;

		r = plan_check_parent(cx, p, err);
		if (r >= 0)
			r = eos_commit_overlay_lookup(cx, p->op->path, &p->before, err);
		if (r >= 0)
			r = plan_kind(cx, p, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* --- pass 3: the batch ------------------------------------------------------------------------ */

/* Stage rec as the record of path at V, with its reference. */
static int
stage_record(struct eos_commit *cx, const char *path, const struct eos_entry *rec)
{
	const char *name;
	size_t plen;
	int r;

	eos_path_split(path, &plen, &name);
	eos_buf_truncate(&cx->key, 0);
	eos_buf_truncate(&cx->val, 0);
	r = eos_entry_key(&cx->key, cx->sbx, path, plen, name, strlen(name), cx->version);
	if (r >= 0)
		r = eos_entry_encode(rec, &cx->val);
	if (r >= 0 && rec->st.kind == EOS_KIND_FILE)
		r = eos_refdelta_add_content(cx->refs, &rec->st.content, 1);
	if (r < 0)
		return r;
	eos_kv_batch_put(cx->batch, EOS_CF_ENTRIES, cx->key.data, cx->key.len, cx->val.data,
			 cx->val.len);
	cx->changed = true;
	return 0;
}

static void
count_plan(struct eos_commit *cx, const struct eos_commit_plan *p)
{
	if (p->op->kind == EOS_OP_REMOVE)
		cx->res.deleted++;
	else if (p->before)
		cx->res.modified++;
	else
		cx->res.created++;
	if (p->op->kind == EOS_OP_PUT_FILE)
		cx->res.bytes += p->op->content.size;
}

static int
stage_plan(struct eos_commit *cx, struct eos_commit_plan *p, struct eos_error *err)
{
	struct eos_entry rec;
	int r;

	eos_entry_init(&rec);
	r = eos_commit_plan_record(cx, p, &rec);
	if (r >= 0 && !(p->before && eos_commit_entry_equal(p->before, &rec))) {
		r = stage_record(cx, p->op->path, &rec);
		if (r >= 0)
			count_plan(cx, p);
		p->written = r >= 0;
	}
	eos_entry_release(&rec);
	if (r < 0)
		return eos_error_set(err, r, "commit '%s': %s", p->op->path, strerror(-r));
	return 0;
}

static int
stage_entries(struct eos_commit *cx, struct eos_error *err)
{
	for (size_t i = 0; i < cx->n; i++) {
		int r = stage_plan(cx, &cx->plans[i], err);

		if (r < 0)
			return r;
	}
	for (struct eos_hashmap_iter it = { 0 }; eos_hashmap_next(&cx->sources, &it);) {
		const struct eos_commit_link_source *s = it.value->ptr;
		int r;

		if (!s->rewrite)
			continue;
		r = stage_record(cx, s->path, &s->e);
		if (r < 0)
			return eos_error_set(err, r, "commit '%s': %s", s->path, strerror(-r));
	}
	return 0;
}

static int
stage_meta(struct eos_commit *cx, uint64_t sbx, const char *name)
{
	eos_buf_truncate(&cx->key, 0);
	return eos_meta_key(&cx->key, sbx, name);
}

/* The registry keys and root directory of a new sandbox. */
static int
stage_new_sandbox(struct eos_commit *cx, struct eos_error *err)
{
	char name[sizeof("sandbox:") + EOS_SANDBOX_ID_MAX];
	struct eos_entry root;
	uint8_t number[8];
	int r;

	r = eos_sandbox_alloc_number(cx->st, cx->batch, &cx->sbx, err);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "sandbox:%s", cx->cs->sandbox);
	r = stage_meta(cx, EOS_SANDBOX_GLOBAL, name);
	if (r < 0)
		return r;
	eos_put_le64(number, cx->sbx);
	eos_kv_batch_put(cx->batch, EOS_CF_META, cx->key.data, cx->key.len, number, sizeof(number));
	eos_entry_init(&root);
	root.st.kind = EOS_KIND_DIR;
	root.st.attr = cx->cs->root;
	root.st.version = cx->version;
	root.st.floor = cx->version;
	r = stage_record(cx, "", &root);
	eos_entry_release(&root);
	if (r < 0)
		return r;
	return eos_commit_load_record(cx, err);
}

static int
stage_sandbox_record(struct eos_commit *cx)
{
	int r;

	if (!cx->record_dirty && !cx->cs->new_sandbox)
		return 0;
	r = stage_meta(cx, cx->sbx, "info");
	eos_buf_truncate(&cx->val, 0);
	if (r >= 0)
		r = eos_sandbox_record_encode(&cx->record, &cx->val);
	if (r < 0)
		return r;
	eos_kv_batch_put(cx->batch, EOS_CF_META, cx->key.data, cx->key.len, cx->val.data,
			 cx->val.len);
	return 0;
}

static int
stage_layer(struct eos_commit *cx)
{
	const char *owner = cx->cs->owner;
	struct eos_layer_info l = {
		.version = cx->version,
		.parent = cx->head,
		.created_ns = eos_store_now_ns(),
		.created = cx->res.created,
		.modified = cx->res.modified,
		.deleted = cx->res.deleted,
		.bytes = cx->res.bytes,
	};
	int r;

	if (!owner)
		owner = cx->cs->new_sandbox ? "import" : "unknown";
	snprintf(l.owner, sizeof(l.owner), "%s", owner);
	eos_buf_truncate(&cx->key, 0);
	eos_buf_truncate(&cx->val, 0);
	r = eos_layer_key(&cx->key, cx->sbx, cx->version);
	if (r >= 0)
		r = eos_layer_record_encode(&l, &cx->val);
	if (r < 0)
		return r;
	eos_kv_batch_put(cx->batch, EOS_CF_LAYERS, cx->key.data, cx->key.len, cx->val.data,
			 cx->val.len);
	return 0;
}

/* Reference counts, sandbox record, layer record and head: everything but the entries. */
static int
stage_rest(struct eos_commit *cx, struct eos_error *err)
{
	int r;

	r = eos_refdelta_apply(cx->st, cx->refs, cx->batch, NULL, err);
	if (r < 0)
		return eos_error_prefix(err, r, "commit to '%s'", cx->cs->sandbox);
	r = commit_failpoint("commit.refs", err);
	if (r >= 0)
		r = stage_sandbox_record(cx);
	if (r >= 0)
		r = stage_layer(cx);
	if (r >= 0)
		r = commit_failpoint("commit.layer", err);
	if (r >= 0)
		r = eos_sandbox_stage_head(cx->batch, cx->sbx, cx->version);
	return r;
}

static int
read_head(struct eos_commit *cx, uint64_t expected, struct eos_error *err)
{
	const struct eos_changeset *cs = cx->cs;
	char have[EOS_LAYER_ID_LEN], want[EOS_LAYER_ID_LEN];
	struct eos_error local = { 0 };
	uint64_t sbx = 0;
	int r = 0;

	if (cs->new_sandbox) {
		r = eos_sandbox_resolve(cx->st, cs->sandbox, &sbx, &local);
		if (r == 0)
			return eos_error_set(err, -EEXIST, "sandbox '%s' exists", cs->sandbox);
		if (r != -ENOENT)
			return forward_error(err, &local, r);
		cx->head = 0;
	} else {
		r = eos_sandbox_head(cx->st, cx->sbx, &cx->head, err);
		if (r < 0)
			return r;
	}
	cx->version = cx->head + 1;
	if (expected == 0 || expected == cx->head)
		return 0;
	eos_layer_id_format(cx->head, have);
	eos_layer_id_format(expected, want);
	return eos_error_set(err, -ESTALE, "head of sandbox '%s' is %s, expected %s", cs->sandbox,
			     have, want);
}

static int
commit_locked(struct eos_commit *cx, uint64_t expected, eos_commit_hook_fn hook, void *ctx,
	      struct eos_error *err)
{
	int r;

	r = commit_failpoint("commit.lock", err);
	if (r >= 0)
		r = read_head(cx, expected, err);
	if (r >= 0)
		r = commit_failpoint("commit.head", err);
	if (r < 0)
		return r;
	cx->snap = eos_kv_snapshot_new(cx->st->kv);
	r = plan_all(cx, err);
	if (r >= 0)
		r = eos_commit_link_all(cx, err);
	if (r >= 0)
		r = commit_failpoint("commit.validate", err);
	if (r >= 0 && cx->cs->new_sandbox)
		r = stage_new_sandbox(cx, err);
	if (r >= 0)
		r = stage_entries(cx, err);
	if (r < 0 || !cx->changed)
		return r;
	r = stage_rest(cx, err);
	if (r >= 0 && hook)
		r = hook(ctx, cx, err);
	if (r >= 0)
		r = commit_failpoint("commit.before_write", err);
	if (r >= 0)
		r = eos_space_check(&cx->st->space, EOS_SPACE_GROW, eos_kv_batch_bytes(cx->batch),
				    err);
	if (r >= 0)
		r = eos_kv_batch_write(cx->st->kv, cx->batch, true, err);
	if (r < 0)
		return r;
	cx->res.version = cx->version;
	return 0;
}

static int
op_cmp(const void *a, const void *b)
{
	return strcmp((*(struct eos_op *const *)a)->path, (*(struct eos_op *const *)b)->path);
}

/* Outside the writer lock: sort the ops and set up the plans. */
static int
commit_prepare(struct eos_commit *cx, struct eos_changeset *cs)
{
	int r;

	cx->cs = cs;
	cx->st = cs->st;
	cx->sbx = cs->sbx;
	eos_buf_init(&cx->key);
	eos_buf_init(&cx->val);
	if (cs->nops > 1)
		qsort(cs->ops, cs->nops, sizeof(cs->ops[0]), op_cmp);
	cx->plans = calloc(cs->nops ? cs->nops : 1, sizeof(*cx->plans));
	if (!cx->plans)
		return -ENOMEM;
	for (size_t i = 0; i < cs->nops; i++) {
		const char *path = cs->ops[i]->path;

		if (cs->ops[i]->dropped)
			continue;
		cx->plans[cx->n].op = cs->ops[i];
		r = eos_hashmap_put(&cx->staged, path, strlen(path), &cx->plans[cx->n++]);
		if (r < 0)
			return r;
	}
	r = eos_kv_batch_new(&cx->batch);
	if (r >= 0)
		r = eos_refdelta_new(&cx->refs);
	return r;
}

static void
commit_release(struct eos_commit *cx)
{
	for (size_t i = 0; cx->plans && i < cx->n; i++)
		eos_commit_entry_free(cx->plans[i].before);
	free(cx->plans);
	for (struct eos_hashmap_iter it = { 0 }; eos_hashmap_next(&cx->dirs, &it);)
		free(it.value->ptr);
	for (struct eos_hashmap_iter it = { 0 }; eos_hashmap_next(&cx->sources, &it);) {
		struct eos_commit_link_source *s = it.value->ptr;

		eos_entry_release(&s->e);
		free(s);
	}
	eos_hashmap_release(&cx->staged);
	eos_hashmap_release(&cx->dirs);
	eos_hashmap_release(&cx->sources);
	if (cx->snap)
		eos_kv_snapshot_free(cx->st->kv, cx->snap);
	if (cx->batch)
		eos_kv_batch_free(cx->batch);
	eos_refdelta_free(cx->refs);
	eos_buf_release(&cx->key);
	eos_buf_release(&cx->val);
}

/* Keep the next change sets' chunks out of this one's blob files (store/reclaim.c). */
static void
commit_flush_chunks(struct eos_changeset *cs)
{
	struct eos_content_writer_stats s;

	eos_content_writer_stats(cs->writer, &s);
	eos_store_chunks_committed(cs->st, s.stored_bytes);
}

/* Commit with st->write_lock held by the caller (locked) or taken here. */
static int
changeset_commit(struct eos_changeset *cs, uint64_t expected_head, bool locked,
		 eos_commit_hook_fn hook, void *ctx, struct eos_commit_result *ret,
		 struct eos_error *err)
{
	struct eos_commit cx = { 0 };
	int r;

	r = eos_changeset_begin_commit(cs, err);
	if (r < 0)
		return r;
	r = commit_prepare(&cx, cs);
	if (r < 0) {
		eos_error_set(err, r, "commit to '%s': out of memory", cs->sandbox);
	} else {
		if (!locked)
			pthread_mutex_lock(&cs->st->write_lock);
		r = commit_locked(&cx, expected_head, hook, ctx, err);
		if (!locked)
			pthread_mutex_unlock(&cs->st->write_lock);
	}
	if (r >= 0 && cs->new_sandbox)
		cs->sbx = cx.sbx;
	if (r >= 0 && cx.res.version)
		commit_flush_chunks(cs);
	eos_changeset_end_commit(cs, r >= 0);
	if (r >= 0 && ret)
		*ret = cx.res;
	commit_release(&cx);
	return r < 0 ? r : 0;
}

int
eos_changeset_commit(struct eos_changeset *cs, uint64_t expected_head,
		     struct eos_commit_result *ret, struct eos_error *err)
{
	return changeset_commit(cs, expected_head, false, NULL, NULL, ret, err);
}

int
eos_changeset_commit_locked(struct eos_changeset *cs, uint64_t expected_head,
			    eos_commit_hook_fn hook, void *ctx, struct eos_commit_result *ret,
			    struct eos_error *err)
{
	return changeset_commit(cs, expected_head, true, hook, ctx, ret, err);
}
