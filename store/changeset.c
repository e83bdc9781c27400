/* SPDX-License-Identifier: MIT */
/* Change sets: staging (see store/changeset.h for the contract; the commit is store/commit.c). */
#include "store/changeset.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/digest.h"
#include "common/path.h"

#include "store/content.h"
#include "store/kv.h"
#include "store/refs.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

enum {
	SYMLINK_TARGET_MAX = 4095,
	GENERATED_ID_BYTES = 6, /* "eos-" + 12 hex digits */
};

/* --- ops ---------------------------------------------------------------------------------------
 */

static void
op_free(struct eos_op *op)
{
	if (!op)
		return;
	for (size_t i = 0; i < op->nedits; i++) {
		free(op->edits[i].name);
		free(op->edits[i].value);
	}
	free(op->edits);
	free(op->target);
	free(op->path);
	free(op);
}
EOS_DEFINE_CLEANUP(struct eos_op *, op_free)

static int
op_new(const char *path, enum eos_op_kind kind, const struct eos_attr *attr, struct eos_op **ret)
{
	struct eos_op *op = calloc(1, sizeof(*op));

	if (!op)
		return -ENOMEM;
	op->path = strdup(path);
	if (!op->path) {
		free(op);
		return -ENOMEM;
	}
	op->kind = kind;
	if (attr)
		op->attr = *attr;
	*ret = op;
	return 0;
}

static int
changeset_check_open_locked(const struct eos_changeset *cs, struct eos_error *err)
{
	switch (cs->state) {
	case EOS_CHANGESET_OPEN:
		return 0;
	case EOS_CHANGESET_COMMITTING:
		return eos_error_set(err, -EINVAL, "change set of '%s' is being committed",
				     cs->sandbox);
	case EOS_CHANGESET_COMMITTED:
		return eos_error_set(err, -EINVAL, "change set of '%s' already committed",
				     cs->sandbox);
	case EOS_CHANGESET_FAILED:
		return eos_error_set(err, -EINVAL, "change set of '%s' failed to commit",
				     cs->sandbox);
	}
	return -EINVAL;
}

static int
changeset_add_locked(struct eos_changeset *cs, struct eos_op *op, struct eos_error *err)
{
	int r = changeset_check_open_locked(cs, err);

	if (r < 0)
		return r;
	if (eos_buf_array_reserve(&cs->ops, &cs->cap, cs->nops, sizeof(*cs->ops), 64) < 0)
		return -ENOMEM;
	r = eos_hashmap_put(&cs->paths, op->path, strlen(op->path), op);
	if (r == -EEXIST)
		return eos_error_set(err, -EEXIST, "'%s' is staged twice", op->path);
	if (r < 0)
		return r;
	cs->ops[cs->nops++] = op;
	return 0;
}

/* Add op to the change set; takes ownership of *op (reset to NULL) on success. */
static int
changeset_add(struct eos_changeset *cs, struct eos_op **op, struct eos_error *err)
{
	int r;

	pthread_mutex_lock(&cs->lock);
	r = changeset_add_locked(cs, *op, err);
	pthread_mutex_unlock(&cs->lock);
	if (r == 0)
		*op = NULL;
	return r;
}

static int
check_attr(const char *path, const struct eos_attr *attr, struct eos_error *err)
{
	if (!attr)
		return eos_error_set(err, -EINVAL, "'%s': no attributes given", path);
	if (attr->mode & ~07777U)
		return eos_error_set(err, -EINVAL, "'%s': mode %#o has bits outside 07777", path,
				     attr->mode);
	return 0;
}

/* Check a staged path; the root "" is allowed only when allow_root and not a new sandbox. */
static int
check_path(const struct eos_changeset *cs, const char *path, bool allow_root, struct eos_error *err)
{
	int r;

	if (!path)
		return eos_error_set(err, -EINVAL, "no path given");
	r = eos_path_check(path, err);
	if (r < 0)
		return r;
	if (path[0] == '\0' && (!allow_root || cs->new_sandbox))
		return eos_error_set(err, -EINVAL, "the root cannot be %s",
				     allow_root
					     ? "staged in a new sandbox (use its root attributes)"
					     : "replaced or removed");
	return 0;
}

/* --- lifecycle ---------------------------------------------------------------------------------
 */

static int
changeset_alloc(struct eos_store *st, struct eos_changeset **ret)
{
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	int r;

	cs = calloc(1, sizeof(*cs));
	if (!cs)
		return -ENOMEM;
	cs->st = st;
	pthread_mutex_init(&cs->lock, NULL);
	r = eos_content_writer_new(st, &cs->writer);
	if (r < 0)
		return r;
	eos_store_pin(st);
	cs->pinned = true;
	*ret = TAKE_PTR(cs);
	return 0;
}

int
eos_changeset_new(struct eos_store *st, const char *sandbox, struct eos_changeset **ret,
		  struct eos_error *err)
{
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	uint64_t sbx = 0;
	int r;

	r = eos_sandbox_id_check(sandbox, err);
	if (r < 0)
		return r;
	r = eos_sandbox_resolve(st, sandbox, &sbx, err);
	if (r < 0)
		return r;
	r = changeset_alloc(st, &cs);
	if (r < 0)
		return eos_error_set(err, r, "change set of '%s': out of memory", sandbox);
	memcpy(cs->sandbox, sandbox, strlen(sandbox) + 1);
	cs->sbx = sbx;
	*ret = TAKE_PTR(cs);
	return 0;
}

static int
generate_id(char out[EOS_SANDBOX_ID_MAX + 1], struct eos_error *err)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t rnd[GENERATED_ID_BYTES];
	char *p = out;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return eos_error_set(err, eos_neg_errno(), "generate a sandbox id: getrandom");
	memcpy(p, "eos-", 4);
	p += 4;
	for (size_t i = 0; i < sizeof(rnd); i++) {
		*p++ = hex[rnd[i] >> 4];
		*p++ = hex[rnd[i] & 15];
	}
	*p = '\0';
	return 0;
}

static int
new_sandbox_id(struct eos_store *st, const char *id, char out[EOS_SANDBOX_ID_MAX + 1],
	       struct eos_error *err)
{
	struct eos_error ignored = { 0 };
	uint64_t sbx;
	int r;

	if (!id)
		r = generate_id(out, err);
	else if ((r = eos_sandbox_id_check(id, err)) >= 0)
		memcpy(out, id, strlen(id) + 1);
	if (r < 0)
		return r;
	/* Early check (the commit checks again under the writer lock). */
	r = eos_sandbox_resolve(st, out, &sbx, &ignored);
	if (r == 0)
		return eos_error_set(err, -EEXIST, "sandbox '%s' exists", out);
	if (r != -ENOENT)
		return eos_error_set(err, r, "sandbox '%s': %s", out,
				     eos_error_message(&ignored, r));
	return 0;
}

int
eos_changeset_new_sandbox(struct eos_store *st, const char *id, const char *source,
			  const struct eos_attr *root, struct eos_changeset **ret,
			  struct eos_error *err)
{
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	char sid[EOS_SANDBOX_ID_MAX + 1];
	struct eos_attr def;
	int r;

	r = new_sandbox_id(st, id, sid, err);
	if (r < 0)
		return r;
	if (!root) {
		def = (struct eos_attr){ .mode = 0755,
					 .uid = (uint32_t)getuid(),
					 .gid = (uint32_t)getgid(),
					 .mtime_ns = eos_store_now_ns() };
		root = &def;
	}
	r = check_attr("", root, err);
	if (r < 0)
		return eos_error_prefix(err, r, "root of new sandbox '%s'", sid);
	r = changeset_alloc(st, &cs);
	if (r < 0)
		return eos_error_set(err, r, "change set of '%s': out of memory", sid);
	memcpy(cs->sandbox, sid, sizeof(sid));
	cs->new_sandbox = true;
	cs->root = *root;
	cs->source = strdup(source ? source : "");
	if (!cs->source)
		return eos_error_set(err, -ENOMEM, "change set of '%s': out of memory", sid);
	*ret = TAKE_PTR(cs);
	return 0;
}

const char *
eos_changeset_sandbox(const struct eos_changeset *cs)
{
	return cs->sandbox;
}

int
eos_changeset_set_owner(struct eos_changeset *cs, const char *owner, struct eos_error *err)
{
	char *copy;

	if (!owner || !owner[0] || strlen(owner) > EOS_OWNER_MAX)
		return eos_error_set(err, -EINVAL, "owner '%s' must be 1..%d bytes",
				     owner ? owner : "", EOS_OWNER_MAX);
	copy = strdup(owner);
	if (!copy)
		return -ENOMEM;
	pthread_mutex_lock(&cs->lock);
	free(cs->owner);
	cs->owner = copy;
	pthread_mutex_unlock(&cs->lock);
	return 0;
}

void
eos_changeset_free(struct eos_changeset *cs)
{
	if (!cs)
		return;
	for (size_t i = 0; i < cs->nops; i++)
		op_free(cs->ops[i]);
	free(cs->ops);
	eos_hashmap_release(&cs->paths);
	if (cs->writer)
		eos_content_writer_free(cs->writer);
	if (cs->pinned)
		eos_store_unpin(cs->st);
	pthread_mutex_destroy(&cs->lock);
	free(cs->owner);
	free(cs->source);
	free(cs);
}

struct eos_op *
eos_changeset_op(struct eos_changeset *cs, const char *path)
{
	return eos_hashmap_get(&cs->paths, path, strlen(path));
}

int
eos_changeset_begin_commit(struct eos_changeset *cs, struct eos_error *err)
{
	int r;

	pthread_mutex_lock(&cs->lock);
	r = changeset_check_open_locked(cs, err);
	if (r == 0)
		cs->state = EOS_CHANGESET_COMMITTING;
	pthread_mutex_unlock(&cs->lock);
	return r;
}

void
eos_changeset_end_commit(struct eos_changeset *cs, bool ok)
{
	pthread_mutex_lock(&cs->lock);
	cs->state = ok ? EOS_CHANGESET_COMMITTED : EOS_CHANGESET_FAILED;
	pthread_mutex_unlock(&cs->lock);
}

/* --- staging -----------------------------------------------------------------------------------
 */

static int
stage_file(struct eos_changeset *cs, const char *path, const struct eos_attr *attr,
	   const struct eos_content *c, struct eos_error *err)
{
	EOS_CLEANUP(op_freep) struct eos_op *op = NULL;
	int r;

	r = op_new(path, EOS_OP_PUT_FILE, attr, &op);
	if (r < 0)
		return r;
	op->content = *c;
	return changeset_add(cs, &op, err);
}

static int
check_file_args(const struct eos_changeset *cs, const char *path, const struct eos_attr *attr,
		struct eos_error *err)
{
	int r = check_path(cs, path, false, err);

	return r < 0 ? r : check_attr(path, attr, err);
}

int
eos_changeset_put_file_mem(struct eos_changeset *cs, const char *path, const struct eos_attr *attr,
			   const void *data, size_t len, struct eos_error *err)
{
	struct eos_content c;
	int r;

	r = check_file_args(cs, path, attr, err);
	if (r < 0)
		return r;
	r = eos_content_put_mem(cs->writer, data, len, &c, err);
	if (r < 0)
		return eos_error_prefix(err, r, "stage '%s'", path);
	return stage_file(cs, path, attr, &c, err);
}

int
eos_changeset_put_file_fd(struct eos_changeset *cs, const char *path, const struct eos_attr *attr,
			  int fd, struct eos_error *err)
{
	struct eos_content c;
	int r;

	r = check_file_args(cs, path, attr, err);
	if (r < 0)
		return r;
	r = eos_content_put_fd(cs->writer, fd, &c, err);
	if (r < 0)
		return eos_error_prefix(err, r, "stage '%s'", path);
	return stage_file(cs, path, attr, &c, err);
}

static int
check_inline(const char *path, const struct eos_content *c, struct eos_error *err)
{
	struct eos_digest d;
	int r;

	if (c->size > EOS_INLINE_MAX || c->inline_len != c->size)
		return eos_error_set(err, -EINVAL,
				     "'%s': inline content of %llu bytes is malformed", path,
				     (unsigned long long)c->size);
	r = eos_sha256(c->inline_data, c->inline_len, &d);
	if (r < 0)
		return r;
	if (!eos_digest_eq(&d, &c->digest))
		return eos_error_set(err, -EINVAL, "'%s': inline content does not match its digest",
				     path);
	return 0;
}

/* Content given by reference must already be in the store (referenced, or at least written). */
static int
check_stored(struct eos_store *st, const char *path, const struct eos_content *c,
	     struct eos_error *err)
{
	bool chunk = c->kind == EOS_CONTENT_CHUNK;
	char hex[EOS_DIGEST_HEX_LEN + 1];
	uint64_t count = 0;
	int r;

	r = eos_refs_get(st, chunk ? EOS_REF_CHUNK : EOS_REF_MANIFEST, &c->digest, &count, err);
	if (r < 0 || count > 0)
		return r;
	r = eos_kv_exists(st->kv, chunk ? EOS_CF_CHUNKS : EOS_CF_MANIFESTS, c->digest.b,
			  EOS_DIGEST_LEN, err);
	if (r < 0)
		return r;
	eos_digest_hex(&c->digest, hex);
	if (r == 0)
		return eos_error_set(err, -ENOENT, "'%s': %s '%s' is not in the store", path,
				     chunk ? "chunk" : "manifest", hex);
	return 0;
}

static int
check_content(struct eos_store *st, const char *path, const struct eos_content *c,
	      struct eos_error *err)
{
	switch (c->kind) {
	case EOS_CONTENT_INLINE:
		return check_inline(path, c, err);
	case EOS_CONTENT_CHUNK:
	case EOS_CONTENT_MANIFEST:
		return check_stored(st, path, c, err);
	case EOS_CONTENT_NONE:
		break;
	}
	return eos_error_set(err, -EINVAL, "'%s': content kind %d is not file content", path,
			     (int)c->kind);
}

int
eos_changeset_put_file_content(struct eos_changeset *cs, const char *path,
			       const struct eos_attr *attr, const struct eos_content *c,
			       struct eos_error *err)
{
	int r;

	r = check_file_args(cs, path, attr, err);
	if (r < 0)
		return r;
	if (!c)
		return eos_error_set(err, -EINVAL, "'%s': no content given", path);
	r = check_content(cs->st, path, c, err);
	if (r < 0)
		return r;
	return stage_file(cs, path, attr, c, err);
}

/* A new op of kind for path (the root allowed) with attr, both checked. */
static int
attr_op_new(struct eos_changeset *cs, const char *path, enum eos_op_kind kind,
	    const struct eos_attr *attr, struct eos_op **ret, struct eos_error *err)
{
	int r;

	r = check_path(cs, path, true, err);
	if (r >= 0)
		r = check_attr(path, attr, err);
	if (r >= 0)
		r = op_new(path, kind, attr, ret);
	return r;
}

int
eos_changeset_mkdir(struct eos_changeset *cs, const char *path, const struct eos_attr *attr,
		    bool opaque, struct eos_error *err)
{
	EOS_CLEANUP(op_freep) struct eos_op *op = NULL;
	int r = attr_op_new(cs, path, EOS_OP_MKDIR, attr, &op, err);

	if (r < 0)
		return r;
	op->opaque = opaque;
	return changeset_add(cs, &op, err);
}

/* Stage an op of kind for path with attr (may be NULL) and a copy of target, all checked. */
static int
target_op_add(struct eos_changeset *cs, const char *path, enum eos_op_kind kind,
	      const struct eos_attr *attr, const char *target, struct eos_error *err)
{
	EOS_CLEANUP(op_freep) struct eos_op *op = NULL;
	int r = op_new(path, kind, attr, &op);

	if (r < 0)
		return r;
	op->target = strdup(target);
	if (!op->target)
		return -ENOMEM;
	return changeset_add(cs, &op, err);
}

int
eos_changeset_symlink(struct eos_changeset *cs, const char *path, const struct eos_attr *attr,
		      const char *target, struct eos_error *err)
{
	size_t n = target ? strlen(target) : 0;
	int r;

	r = check_path(cs, path, false, err);
	if (r >= 0)
		r = check_attr(path, attr, err);
	if (r < 0)
		return r;
	if (n == 0 || n > SYMLINK_TARGET_MAX)
		return eos_error_set(err, -EINVAL, "symlink '%s': target must be 1..%d bytes", path,
				     SYMLINK_TARGET_MAX);
	return target_op_add(cs, path, EOS_OP_SYMLINK, attr, target, err);
}

int
eos_changeset_mknod(struct eos_changeset *cs, const char *path, const struct eos_attr *attr,
		    enum eos_kind kind, uint64_t rdev, struct eos_error *err)
{
	EOS_CLEANUP(op_freep) struct eos_op *op = NULL;
	int r;

	if (kind != EOS_KIND_FIFO && !eos_kind_has_rdev(kind))
		return eos_error_set(err, -EINVAL, "mknod '%s': kind %d is not a fifo or a device",
				     path ? path : "", (int)kind);
	if (rdev && !eos_kind_has_rdev(kind))
		return eos_error_set(err, -EINVAL, "mknod '%s': a fifo has no device number",
				     path ? path : "");
	r = check_path(cs, path, false, err);
	r = r ?: check_attr(path, attr, err);
	r = r ?: op_new(path, EOS_OP_MKNOD, attr, &op);
	if (r < 0)
		return r;
	op->node = kind;
	op->rdev = rdev;
	return changeset_add(cs, &op, err);
}

int
eos_changeset_link(struct eos_changeset *cs, const char *path, const char *target,
		   struct eos_error *err)
{
	int r;

	r = check_path(cs, path, false, err);
	if (r < 0)
		return r;
	r = check_path(cs, target, false, err);
	if (r < 0)
		return eos_error_prefix(err, r, "link '%s'", path);
	if (strcmp(path, target) == 0)
		return eos_error_set(err, -EINVAL, "link '%s': target is the path itself", path);
	return target_op_add(cs, path, EOS_OP_LINK, NULL, target, err);
}

int
eos_changeset_remove(struct eos_changeset *cs, const char *path, struct eos_error *err)
{
	EOS_CLEANUP(op_freep) struct eos_op *op = NULL;
	int r;

	r = check_path(cs, path, false, err);
	if (r >= 0)
		r = op_new(path, EOS_OP_REMOVE, NULL, &op);
	if (r < 0)
		return r;
	return changeset_add(cs, &op, err);
}

int
eos_changeset_set_attr(struct eos_changeset *cs, const char *path, const struct eos_attr *attr,
		       struct eos_error *err)
{
	EOS_CLEANUP(op_freep) struct eos_op *op = NULL;
	int r = attr_op_new(cs, path, EOS_OP_SET_ATTR, attr, &op, err);

	if (r < 0)
		return r;
	return changeset_add(cs, &op, err);
}

static int
xattr_edit_init(struct eos_xattr_edit *e, const char *name, const void *value, size_t len)
{
	e->name = strdup(name);
	e->value = NULL;
	e->len = len;
	if (value)
		e->value = malloc(len ? len : 1);
	if (!e->name || (value && !e->value)) {
		free(e->name);
		free(e->value);
		return -ENOMEM;
	}
	if (value && len)
		memcpy(e->value, value, len);
	return 0;
}

static int
set_xattr_locked(struct eos_changeset *cs, const char *path, const struct eos_xattr_edit *e,
		 struct eos_error *err)
{
	struct eos_op *op;
	struct eos_xattr_edit *edits;
	int r;

	r = changeset_check_open_locked(cs, err);
	if (r < 0)
		return r;
	op = eos_hashmap_get(&cs->paths, path, strlen(path));
	if (!op)
		return eos_error_set(err, -ENOENT, "xattr '%s' of '%s': the path is not staged",
				     e->name, path);
	if (op->kind == EOS_OP_REMOVE)
		return eos_error_set(err, -EINVAL, "xattr '%s' of '%s': the path is removed",
				     e->name, path);
	edits = realloc(op->edits, (op->nedits + 1) * sizeof(*edits));
	if (!edits)
		return -ENOMEM;
	op->edits = edits;
	op->edits[op->nedits++] = *e;
	return 0;
}

int
eos_changeset_set_xattr(struct eos_changeset *cs, const char *path, const char *name,
			const void *value, size_t len, struct eos_error *err)
{
	struct eos_xattr_edit e;
	int r;

	if (!path || !name || !name[0] || strlen(name) > EOS_NAME_MAX)
		return eos_error_set(err, -EINVAL, "xattr name '%s' must be 1..%d bytes",
				     name ? name : "", EOS_NAME_MAX);
	if (value && len > EOS_XATTR_VALUE_MAX)
		return eos_error_set(err, -E2BIG,
				     "xattr '%s' of '%s': value of %zu bytes is over %d", name,
				     path, len, EOS_XATTR_VALUE_MAX);
	r = xattr_edit_init(&e, name, value, len);
	if (r < 0)
		return r;
	pthread_mutex_lock(&cs->lock);
	r = set_xattr_locked(cs, path, &e, err);
	pthread_mutex_unlock(&cs->lock);
	if (r < 0) {
		free(e.name);
		free(e.value);
	}
	return r;
}
