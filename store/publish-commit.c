/* SPDX-License-Identifier: MIT */
/*
 * eos_publish_commit: the part of a publish that runs under the writer lock (store/publish.h,
 * steps 1-3), and the result it reports.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/failpoint.h"

#include "store/ignore.h"
#include "store/publish.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

static int
failpoint(const char *name, struct eos_error *err)
{
	int r = EOS_FAILPOINT(name);

	return r < 0 ? eos_error_set(err, r, "publish: failpoint '%s'", name) : 0;
}

/* op->head: the entry at the head. */
static int
lookup_head(struct eos_pub_check *c, struct eos_pub_op *op, struct eos_error *err)
{
	struct eos_error local = { 0 };
	int r;

	eos_entry_release(&op->head);
	eos_entry_init(&op->head);
	r = eos_entry_resolve(c->p->st, c->snap, c->p->sbx, c->head, op->path, &op->head, &local);
	op->head_found = r == 0;
	if (r == -ENOENT || r == -ENOTDIR)
		return 0;
	if (r < 0 && err)
		*err = local;
	return r;
}

/* Step 1: every op against the head. */
static int
check_all(struct eos_pub_check *c, struct eos_error *err)
{
	struct eos_publish *p = c->p;
	int r = 0;

	/*
	 * Blind writes check nothing; and when nothing was published since the base, every path
	 * is as the session saw it (the change set's own validation still runs).
	 */
	bool take_all = p->blind || c->head == p->base;

	for (size_t i = 0; r >= 0 && i < p->nops; i++) {
		struct eos_pub_op *op = p->ops[i];

		if (take_all) {
			eos_pub_check_unchanged(c, op);
			continue;
		}
		r = lookup_head(c, op, err);
		r = r ?: eos_pub_check_op(c, op, err);
	}
	if (r >= 0 && !take_all)
		r = eos_pub_check_renames(c, err);
	return r ?: failpoint("publish.check", err);
}

/*
 * Owners computed before the lock assumed the file each path replaces is the one at the base
 * (or the head then, for blind writes): recompute those whose assumption no longer holds.
 */
static int
refresh_blame(struct eos_pub_check *c, struct eos_error *err)
{
	struct eos_publish *p = c->p;

	if (!p->blind && c->head == p->base)
		return 0; /* computed against the base, which is the head */
	for (size_t i = 0; i < p->nops; i++) {
		struct eos_pub_op *op = p->ops[i];
		struct eos_pub_blame_args a = { .c = &op->content, .prev_path = op->path };
		struct eos_op *staged = eos_changeset_op(p->cs, op->path);
		int r;

		if (op->kind != EOS_PUB_FILE || !op->blame_ready || op->origin ||
		    (staged && staged->dropped))
			continue;
		if (p->blind)
			r = lookup_head(c, op, err);
		else
			r = 0;
		if (r < 0)
			return r;
		if (op->head_found && op->head.st.kind == EOS_KIND_FILE)
			a.prev = &op->head.st;
		if ((a.prev ? a.prev->version : 0) == op->blame_prev_version)
			continue;
		r = eos_pub_blame(p, op, &a, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The commit hook: blame records and the session's reset, in the layer's batch. */
static int
commit_hook(void *ctx, struct eos_commit *cx, struct eos_error *err)
{
	struct eos_publish *p = ctx;
	int r = eos_pub_stage_blame(p, cx, err);

	r = r ?: failpoint("publish.blame", err);
	if (r >= 0 && p->session) {
		r = eos_session_stage_reset(cx->batch, cx->sbx, p->session, cx->version,
					    p->session_created_ns);
		if (r < 0)
			r = eos_error_set(err, r, "publish: out of memory");
	}
	return r ?: failpoint("publish.before_write", err);
}

/* A session whose changes all resolved away: move it to the head with an empty delta. */
static int
reset_session(struct eos_publish *p, uint64_t head, struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *b = NULL;
	int r = eos_kv_batch_new(&b);

	r = r ?: eos_session_stage_reset(b, p->sbx, p->session, head, p->session_created_ns);
	if (r < 0)
		return eos_error_set(err, r, "publish: out of memory");
	r = eos_space_check(&p->st->space, EOS_SPACE_RECORD, eos_kv_batch_bytes(b), err);
	return r ?: eos_kv_batch_write(p->st->kv, b, true, err);
}

static void
result_conflicts(struct eos_pub_check *c, struct eos_publish_result *ret)
{
	ret->status = EOS_PUBLISH_REJECTED;
	ret->conflicts = c->conflicts.v;
	ret->nconflicts = c->conflicts.n;
	c->conflicts.v = NULL;
	c->conflicts.n = c->conflicts.cap = 0;
}

static int
commit_locked(struct eos_pub_check *c, struct eos_publish_result *ret, struct eos_error *err)
{
	struct eos_publish *p = c->p;
	struct eos_commit_result res = { 0 };
	int r = failpoint("publish.lock", err);

	r = r ?: eos_sandbox_head(p->st, p->sbx, &c->head, err);
	r = r ?: check_all(c, err);
	ret->phases.check_end = eos_mono_ns();
	if (r < 0)
		return r;
	ret->head = c->head;
	if (c->conflicts.n) {
		result_conflicts(c, ret);
		return 0;
	}
	r = failpoint("publish.merge", err);
	r = r ?: refresh_blame(c, err);
	ret->phases.merge_end = eos_mono_ns();
	r = r ?: eos_changeset_commit_locked(p->cs, c->head, commit_hook, p, &res, err);
	ret->phases.commit_end = eos_mono_ns();
	if (r < 0)
		return r;
	ret->status = res.version ? EOS_PUBLISH_PUBLISHED : EOS_PUBLISH_NO_OP;
	ret->version = res.version;
	ret->created = res.created;
	ret->modified = res.modified;
	ret->deleted = res.deleted;
	ret->bytes = res.bytes;
	if (!res.version && p->session)
		r = reset_session(p, c->head, err);
	return r;
}

static void
result_init(const struct eos_publish *p, struct eos_publish_result *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->base = p->base;
	ret->staged = p->nops;
	ret->prepare_ns = p->prepare_ns;
	ret->phases.prepare_start = p->prepare_start;
	ret->phases.prepare_end = p->prepare_end;
	snprintf(ret->owner, sizeof(ret->owner), "%s", p->owner);
}

static int
commit(struct eos_publish *p, struct eos_publish_result *ret, struct eos_error *err)
{
	struct eos_pub_check c = { .p = p };
	int64_t t0;
	int r;

	ret->phases.lock_wait_start = eos_mono_ns();
	pthread_mutex_lock(&p->st->write_lock);
	t0 = eos_mono_ns();
	ret->phases.lock_acquired = t0;
	r = commit_locked(&c, ret, err);
	ret->lock_ns = eos_mono_ns() - t0;
	pthread_mutex_unlock(&p->st->write_lock);
	ret->phases.lock_released = eos_mono_ns();
	ret->phases.merge_ns = c.merge_ns;
	ret->merged = c.merged;
	if (p->blind)
		ret->base = c.head;
	eos_pub_conflicts_release(&c.conflicts);
	eos_ignore_free(c.ignore);
	return r;
}

int
eos_publish_commit(struct eos_publish *p, struct eos_publish_result *ret, struct eos_error *err)
{
	int64_t t0 = eos_mono_ns();
	bool was_prepared = p->prepared;
	int r;

	if (p->committed)
		return eos_error_set(err, -EINVAL, "publish to '%s' already committed", p->sandbox);
	r = eos_publish_prepare(p, err);
	if (r < 0)
		return r;
	p->committed = true;
	result_init(p, ret);
	r = commit(p, ret, err);
	if (r < 0) {
		eos_publish_result_release(ret);
		return eos_error_prefix(err, r, "publish to '%s'", p->sandbox);
	}
	/* the change set is spent: unpin now, so the squash told below can free chunks at once */
	eos_changeset_free(TAKE_PTR(p->cs));
	if (ret->status == EOS_PUBLISH_PUBLISHED) {
		if (p->session && !p->keep_session_dir)
			eos_session_dirs_remove(p->st, p->sandbox, p->session, NULL);
		eos_autosquash_notify(p->st, p->sandbox);
	} else if (ret->status == EOS_PUBLISH_NO_OP && p->session && !p->keep_session_dir) {
		eos_session_dirs_remove(p->st, p->sandbox, p->session, NULL);
	}
	ret->total_ns = eos_mono_ns() - t0 + (was_prepared ? p->prepare_ns : 0);
	return 0;
}
