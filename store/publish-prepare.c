/* SPDX-License-Identifier: MIT */
/*
 * eos_publish_prepare: stage every op into the change set (reading, hashing, chunking and
 * writing file content), look up each path at the base, and compute line owners against the
 * base. No store lock is held; this is where the time of a large publish goes.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"

#include "store/publish.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

/* Stage a file whose bytes are in a host file: small ones through memory (kept for blame). */
static int
stage_file_path(struct eos_publish *p, struct eos_pub_op *op, uint8_t **ret_data, size_t *ret_len,
		struct eos_error *err)
{
	cleanup_close int fd = -1;
	int r = eos_pub_read_path(op->data_path, EOS_MERGE_TEXT_MAX, ret_data, ret_len, err);

	if (r == 0)
		return eos_changeset_put_file_mem(p->cs, op->path, &op->attr, *ret_data, *ret_len,
						  err);
	if (r != -EFBIG)
		return eos_error_prefix(err, r, "publish '%s'", op->path);
	fd = open(op->data_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return eos_error_set(err, eos_neg_errno(), "open '%s': %m", op->data_path);
	return eos_changeset_put_file_fd(p->cs, op->path, &op->attr, fd, err);
}

/* Stage op's file content; *ret_data holds its bytes when they were read into memory. */
static int
stage_file(struct eos_publish *p, struct eos_pub_op *op, uint8_t **ret_data, size_t *ret_len,
	   struct eos_error *err)
{
	struct eos_op *staged;
	int r;

	if (op->data_path)
		r = stage_file_path(p, op, ret_data, ret_len, err);
	else if (op->has_content)
		r = eos_changeset_put_file_content(p->cs, op->path, &op->attr, &op->content, err);
	else
		r = eos_changeset_put_file_mem(p->cs, op->path, &op->attr, op->data, op->len, err);
	if (r < 0)
		return r;
	staged = eos_changeset_op(p->cs, op->path);
	if (!staged)
		return eos_error_set(err, -EIO, "'%s': staged content is missing", op->path);
	op->content = staged->content;
	return 0;
}

static int
stage_edits(struct eos_publish *p, const struct eos_pub_op *op, struct eos_error *err)
{
	for (size_t i = 0; i < op->nedits; i++) {
		const struct eos_xattr_edit *e = &op->edits[i];
		int r = eos_changeset_set_xattr(p->cs, op->path, e->name, e->value, e->len, err);

		if (r < 0)
			return r;
	}
	return 0;
}

static int
stage_other(struct eos_publish *p, const struct eos_pub_op *op, struct eos_error *err)
{
	switch (op->kind) {
	case EOS_PUB_MKDIR:
		return eos_changeset_mkdir(p->cs, op->path, &op->attr, op->opaque, err);
	case EOS_PUB_SYMLINK:
		return eos_changeset_symlink(p->cs, op->path, &op->attr, op->target, err);
	case EOS_PUB_NODE:
		return eos_changeset_mknod(p->cs, op->path, &op->attr, op->node, op->rdev, err);
	case EOS_PUB_LINK:
		return eos_changeset_link(p->cs, op->path, op->target, err);
	case EOS_PUB_REMOVE:
		return eos_changeset_remove(p->cs, op->path, err);
	case EOS_PUB_ATTR:
		return eos_changeset_set_attr(p->cs, op->path, &op->attr, err);
	case EOS_PUB_FILE:
		break;
	}
	return -EINVAL;
}

/* The entry of path at version v into *e: 1 found, 0 absent, or -errno. */
static int
lookup_at(struct eos_publish *p, uint64_t v, const char *path, struct eos_entry *e,
	  struct eos_error *err)
{
	struct eos_error local = { 0 };
	int r;

	eos_entry_release(e);
	eos_entry_init(e);
	r = eos_entry_resolve(p->st, NULL, p->sbx, v, path, e, &local);
	if (r == -ENOENT || r == -ENOTDIR)
		return 0;
	if (r < 0) {
		if (err)
			*err = local;
		return r;
	}
	return 1;
}

/* Line owners of a staged file against the file it replaces at version v (or its origin). */
static int
prepare_blame(struct eos_publish *p, struct eos_pub_op *op, uint64_t v, const uint8_t *data,
	      size_t len, struct eos_error *err)
{
	EOS_CLEANUP(eos_entry_release) struct eos_entry prev;
	const char *prev_path = op->origin ? op->origin : op->path;
	struct eos_pub_blame_args a = { .c = &op->content, .data = data, .len = len };
	int r;

	eos_entry_init(&prev);
	if (op->origin)
		r = lookup_at(p, v, op->origin, &prev, err);
	else
		r = op->base_found ? eos_entry_copy(&prev, &op->base) ?: 1 : 0;
	if (r < 0)
		return r;
	if (r > 0 && prev.st.kind == EOS_KIND_FILE) {
		a.prev = &prev.st;
		a.prev_path = prev_path;
	}
	r = eos_pub_blame(p, op, &a, err);
	if (r >= 0)
		op->blame_prev_version = a.prev ? prev.st.version : 0;
	return r;
}

/* An attribute change keeps the file's bytes: carry its owners now, outside the lock. */
static int
prepare_carry(struct eos_publish *p, struct eos_pub_op *op, struct eos_error *err)
{
	int r;

	if (!op->base_found || op->base.st.kind != EOS_KIND_FILE)
		return 0;
	r = eos_pub_blame_carry(p, NULL, &op->base.st.content, op->path, &op->base.st, &op->blame,
				err);
	if (r < 0)
		return r;
	op->blame_ready = true;
	op->blame_prev_version = op->base.st.version;
	return 0;
}

static int
prepare_op(struct eos_publish *p, struct eos_pub_op *op, uint64_t v, struct eos_error *err)
{
	cleanup_free uint8_t *data = NULL;
	size_t len = 0;
	int r = lookup_at(p, v, op->path, &op->base, err);

	if (r < 0)
		return r;
	op->base_found = r > 0;
	if (op->kind != EOS_PUB_FILE)
		r = stage_other(p, op, err);
	else
		r = stage_file(p, op, &data, &len, err);
	r = r ?: stage_edits(p, op, err);
	if (r >= 0 && op->kind == EOS_PUB_ATTR)
		return prepare_carry(p, op, err);
	if (r < 0 || op->kind != EOS_PUB_FILE)
		return r;
	if (!data && op->data) {
		r = prepare_blame(p, op, v, op->data, op->len, err);
		free(TAKE_PTR(op->data));
		return r;
	}
	return prepare_blame(p, op, v, data, len, err);
}

enum {
	PARALLEL_MIN_OPS = 32, /* below this, threads cost more than they save */
	PARALLEL_MAX = 8,
};

/* Ops are handed out one at a time from a shared cursor; the first failure stops everyone. */
struct worker_pool {
	struct eos_publish *p;
	uint64_t v;
	pthread_mutex_t lock;
	size_t next;
	int r;
	struct eos_error err;
};

static void *
worker(void *arg)
{
	struct worker_pool *w = arg;
	struct eos_error err = { 0 };

	for (;;) {
		size_t i;
		int r;

		pthread_mutex_lock(&w->lock);
		i = w->r < 0 ? w->p->nops : w->next++;
		pthread_mutex_unlock(&w->lock);
		if (i >= w->p->nops)
			return NULL;
		r = prepare_op(w->p, w->p->ops[i], w->v, &err);
		if (r < 0) {
			pthread_mutex_lock(&w->lock);
			if (w->r >= 0) {
				w->r = r;
				w->err = err;
			}
			pthread_mutex_unlock(&w->lock);
		}
	}
}

/* Prepare every op on up to PARALLEL_MAX threads (the calling one included). */
static int
prepare_ops(struct eos_publish *p, uint64_t v, struct eos_error *err)
{
	struct worker_pool w = { .p = p, .v = v, .lock = PTHREAD_MUTEX_INITIALIZER };
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t n = p->nops < PARALLEL_MIN_OPS ? 1 : (size_t)(cpus > 0 ? cpus : 1);
	pthread_t threads[PARALLEL_MAX];
	size_t started = 0;

	n = n > PARALLEL_MAX ? PARALLEL_MAX : n;
	while (started + 1 < n && pthread_create(&threads[started], NULL, worker, &w) == 0)
		started++;
	worker(&w);
	for (size_t i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	if (w.r < 0 && err)
		*err = w.err;
	return w.r < 0 ? w.r : 0;
}

int
eos_pub_prepare(struct eos_publish *p, struct eos_error *err)
{
	int64_t t0 = eos_mono_ns();
	uint64_t v = p->base;
	int r = 0;

	if (p->blind)
		r = eos_sandbox_head(p->st, p->sbx, &v, err);
	r = r ?: prepare_ops(p, v, err);
	if (r < 0)
		return r;
	p->prepared = true;
	p->prepare_start = t0;
	p->prepare_end = eos_mono_ns();
	p->prepare_ns = p->prepare_end - t0;
	return 0;
}

int
eos_publish_prepare(struct eos_publish *p, struct eos_error *err)
{
	if (p->committed)
		return eos_error_set(err, -EINVAL, "publish to '%s' already committed", p->sandbox);
	if (p->prepared)
		return 0;
	return eos_pub_prepare(p, err);
}
