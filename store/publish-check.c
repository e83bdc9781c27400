/* SPDX-License-Identifier: MIT */
/*
 * The publish gate's per-path decision (store/publish.h, step 1): compare what the session
 * changed with what the head changed since the base, then take, drop or merge the session's
 * change, or record a conflict.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/digest.h"
#include "common/path.h"

#include "store/ignore.h"
#include "store/kv.h"
#include "store/publish.h"
#include "store/store-internal.h"

/* --- conflicts -------------------------------------------------------------------------------- */

void
eos_pub_conflicts_release(struct eos_pub_conflicts *cs)
{
	struct eos_publish_result r = { .conflicts = cs->v, .nconflicts = cs->n };

	eos_publish_result_release(&r);
	cs->v = NULL;
	cs->n = cs->cap = 0;
}

static void
fingerprints(const struct eos_pub_check *c, const struct eos_pub_op *op, struct eos_conflict *k)
{
	struct eos_op *staged = eos_changeset_op(c->p->cs, op->path);
	struct eos_stat s = { 0 };

	eos_pub_fingerprint(op->base_found ? &op->base.st : NULL, op->base.target, k->base_fp);
	eos_pub_fingerprint(op->head_found ? &op->head.st : NULL, op->head.target, k->head_fp);
	switch (op->kind) {
	case EOS_PUB_REMOVE:
		eos_pub_fingerprint(NULL, NULL, k->session_fp);
		return;
	case EOS_PUB_MKDIR:
		s.kind = EOS_KIND_DIR;
		break;
	case EOS_PUB_SYMLINK:
		s.kind = EOS_KIND_SYMLINK;
		break;
	case EOS_PUB_NODE:
		s.kind = op->node;
		s.rdev = op->rdev;
		break;
	case EOS_PUB_ATTR:
		s = op->base.st;
		break;
	case EOS_PUB_FILE:
	case EOS_PUB_LINK:
		s.kind = EOS_KIND_FILE;
		s.content = op->content;
		break;
	}
	s.attr = staged ? staged->attr : op->attr;
	eos_pub_fingerprint(&s, op->kind == EOS_PUB_ATTR ? op->base.target : op->target,
			    k->session_fp);
}

int
eos_pub_conflict(struct eos_pub_check *c, const struct eos_pub_op *op, enum eos_conflict_kind kind,
		 const char *detail, const char *fmt, ...)
{
	struct eos_pub_conflicts *cs = &c->conflicts;
	struct eos_conflict *k;
	va_list ap;
	int n;

	if (eos_buf_array_reserve(&cs->v, &cs->cap, cs->n, sizeof(*cs->v), 16) < 0)
		return -ENOMEM;
	k = &cs->v[cs->n];
	memset(k, 0, sizeof(*k));
	k->kind = kind;
	k->path = strdup(op->path);
	k->detail = detail ? strdup(detail) : NULL;
	va_start(ap, fmt);
	n = vasprintf(&k->message, fmt, ap);
	va_end(ap);
	if (n < 0)
		k->message = NULL;
	cs->n++;
	if (!k->path || (detail && !k->detail) || !k->message)
		return -ENOMEM;
	fingerprints(c, op, k);
	return 0;
}

/* --- helpers ---------------------------------------------------------------------------------- */

static enum eos_kind
session_kind(const struct eos_pub_op *op)
{
	switch (op->kind) {
	case EOS_PUB_FILE:
	case EOS_PUB_LINK:
		return EOS_KIND_FILE;
	case EOS_PUB_MKDIR:
		return EOS_KIND_DIR;
	case EOS_PUB_SYMLINK:
		return EOS_KIND_SYMLINK;
	case EOS_PUB_NODE:
		return op->node;
	case EOS_PUB_ATTR:
		return op->base_found ? op->base.st.kind : EOS_KIND_NONE;
	case EOS_PUB_REMOVE:
		break;
	}
	return EOS_KIND_NONE;
}

static void
drop(struct eos_pub_check *c, struct eos_pub_op *op)
{
	struct eos_op *staged = eos_changeset_op(c->p->cs, op->path);

	if (staged)
		staged->dropped = true;
	op->resolved = true;
}

static int
take(struct eos_pub_op *op)
{
	op->resolved = true;
	return 0;
}

/* --- .gitignore of the base ------------------------------------------------------------------- */

static int
read_gitignore(void *ctx, const char *dir, char **ret_text, size_t *ret_len, struct eos_error *err)
{
	struct eos_pub_check *c = ctx;
	cleanup_free char *path = NULL;
	EOS_CLEANUP(eos_entry_release) struct eos_entry e;
	struct eos_error local = { 0 };
	uint8_t *data;
	int r;

	eos_entry_init(&e);
	if (asprintf(&path, "%s%s.gitignore", dir, *dir ? "/" : "") < 0)
		return -ENOMEM;
	r = eos_entry_resolve(c->p->st, NULL, c->p->sbx, c->p->base, path, &e, &local);
	if (r == -ENOENT || r == -ENOTDIR || (r == 0 && e.st.kind != EOS_KIND_FILE))
		return -ENOENT;
	if (r < 0)
		return eos_error_set(err, r, "%s", local.msg);
	if (e.st.content.size > EOS_MERGE_TEXT_MAX)
		return -ENOENT;
	r = eos_pub_read_content(c->p->st, &e.st.content, &data, ret_len, err);
	if (r < 0)
		return r;
	*ret_text = (char *)data;
	return 0;
}

static int
ignored(struct eos_pub_check *c, const struct eos_pub_op *op, bool *ret, struct eos_error *err)
{
	bool is_dir = session_kind(op) == EOS_KIND_DIR ||
		      (op->base_found && op->base.st.kind == EOS_KIND_DIR);
	int r;

	*ret = false;
	if (c->p->blind || !*op->path)
		return 0;
	if (!c->ignore) {
		r = eos_ignore_new(read_gitignore, c, &c->ignore);
		if (r < 0)
			return eos_error_set(err, r, "publish: out of memory");
	}
	return eos_ignore_check(c->ignore, op->path, is_dir, ret, err);
}

/* --- records below a directory in (base, head] ------------------------------------------------ */

struct below_ctx {
	uint64_t base, head;
	char *found;
};

static int
below_one(void *ctx, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	struct below_ctx *b = ctx;
	struct eos_entry_key_parts parts;

	(void)v;
	(void)vlen;
	if (eos_entry_key_decode(k, klen, &parts) < 0)
		return -EBADMSG;
	if (parts.version <= b->base || parts.version > b->head)
		return 0;
	if (asprintf(&b->found, "%.*s/%.*s", (int)parts.plen, parts.parent, (int)parts.nlen,
		     parts.name) < 0)
		return -ENOMEM;
	return -ECANCELED; /* found: stop the scan */
}

/* Scan the entry keys in [lo, hi) of sbx (dir as the parent path prefix, lo/hi suffixes). */
static int
below_scan(struct eos_pub_check *c, const char *dir, uint8_t lo_tail, uint8_t hi_tail,
	   struct below_ctx *b, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf lo = { 0 }, hi = { 0 };
	struct eos_kv_scan s = { .cf = EOS_CF_ENTRIES, .snap = c->snap, .fn = below_one, .ctx = b };
	int r = eos_entry_sandbox_prefix(&lo, c->p->sbx);

	r = r ?: eos_buf_append(&lo, dir, strlen(dir));
	r = r ?: eos_buf_append(&hi, lo.data, lo.len);
	r = r ?: eos_buf_append_u8(&lo, lo_tail);
	r = r ?: eos_buf_append_u8(&hi, hi_tail);
	if (r < 0)
		return -ENOMEM;
	s.lo = lo.data;
	s.llen = lo.len;
	s.hi = hi.data;
	s.hlen = hi.len;
	return eos_kv_scan(c->p->st->kv, &s, err);
}

/* The first path below dir with a record in (base, head] into *ret (NULL: none). */
static int
changed_below(struct eos_pub_check *c, const char *dir, char **ret, struct eos_error *err)
{
	struct below_ctx b = { .base = c->p->base, .head = c->head };
	int r = below_scan(c, dir, 0x00, 0x01, &b, err);

	if (r == 0)
		r = below_scan(c, dir, '/', '/' + 1, &b, err);
	if (r == -ECANCELED && b.found)
		r = 0;
	if (r < 0) {
		free(b.found);
		return r;
	}
	*ret = b.found;
	return 0;
}

/* Removing or replacing the base's directory op->path: nothing below it may have changed. */
static int
check_subtree(struct eos_pub_check *c, struct eos_pub_op *op, bool *ret_conflict,
	      struct eos_error *err)
{
	cleanup_free char *found = NULL;
	int r;

	*ret_conflict = false;
	r = changed_below(c, op->path, &found, err);
	if (r < 0 || !found)
		return r;
	*ret_conflict = true;
	return eos_pub_conflict(c, op, EOS_CONFLICT_DIRECTORY, found,
				"'%s': the session %s the directory, the head changed '%s' in it",
				op->path, op->kind == EOS_PUB_REMOVE ? "deleted" : "replaced",
				found);
}

/* Whether path is a directory at version v: 1 yes, 0 no (absent or not a directory), -errno. */
static int
dir_at(struct eos_pub_check *c, uint64_t v, const char *path, struct eos_error *err)
{
	EOS_CLEANUP(eos_entry_release) struct eos_entry e;
	struct eos_error local = { 0 };
	int r;

	eos_entry_init(&e);
	r = eos_entry_resolve(c->p->st, c->snap, c->p->sbx, v, path, &e, &local);
	if (r == -ENOENT || r == -ENOTDIR)
		return 0;
	if (r < 0)
		return eos_error_set(err, r, "%s", local.msg);
	return e.st.kind == EOS_KIND_DIR;
}

/* A path created where nothing was: its parent must still be a directory at the head. */
static int
check_parent(struct eos_pub_check *c, struct eos_pub_op *op, struct eos_error *err)
{
	cleanup_free char *parent = NULL;
	const char *name;
	size_t plen;
	int r;

	eos_path_split(op->path, &plen, &name);
	parent = strndup(op->path, plen);
	if (!parent)
		return -ENOMEM;
	if (!*parent || eos_pub_find(c->p, parent))
		return take(op);
	r = dir_at(c, c->head, parent, err);
	if (r != 0)
		return r < 0 ? r : take(op);
	r = c->p->blind ? 0 : dir_at(c, c->p->base, parent, err);
	if (r < 0)
		return r;
	if (r == 0)
		return eos_pub_conflict(c, op, EOS_CONFLICT_PARENT, parent,
					"'%s': its parent '%s' is not a directory", op->path,
					parent);
	return eos_pub_conflict(c, op, EOS_CONFLICT_PARENT, parent,
				"'%s': the head deleted or replaced its parent directory '%s'",
				op->path, parent);
}

/* --- per kind --------------------------------------------------------------------------------- */

static int
set_staged_attr(struct eos_pub_check *c, struct eos_pub_op *op, const struct eos_attr *a)
{
	struct eos_op *staged = eos_changeset_op(c->p->cs, op->path);

	if (staged)
		staged->attr = *a;
	return take(op);
}

static int
merge_attr_op(struct eos_pub_check *c, struct eos_pub_op *op, const struct eos_attr *base)
{
	struct eos_attr merged;
	int r = eos_pub_merge_op_attr(c, op, base, &merged);

	return r <= 0 ? r : set_staged_attr(c, op, &merged);
}

static int
merge_symlink(struct eos_pub_check *c, struct eos_pub_op *op)
{
	const char *base = op->base_found ? op->base.target : NULL;
	const char *head = op->head.target ? op->head.target : "";
	struct eos_op *staged;

	if (!strcmp(op->target, head))
		return merge_attr_op(c, op, op->base_found ? &op->base.st.attr : &op->head.st.attr);
	if (base && !strcmp(base, head))
		return take(op);
	if (!base || strcmp(base, op->target))
		return eos_pub_conflict(c, op, EOS_CONFLICT_SYMLINK, NULL,
					"'%s': the session points it at '%s', the head at '%s'",
					op->path, op->target, head);
	staged = eos_changeset_op(c->p->cs, op->path);
	if (!staged)
		return -EIO;
	free(staged->target);
	staged->target = strdup(head);
	if (!staged->target)
		return -ENOMEM;
	c->merged++;
	return take(op);
}

/*
 * Both changed a fifo or device of one kind: its device number merges like a symlink's target
 * (taken from the side that changed it), its attributes as always.
 */
static int
merge_node(struct eos_pub_check *c, struct eos_pub_op *op, const struct eos_attr *base)
{
	uint64_t was = op->base_found ? op->base.st.rdev : op->head.st.rdev;
	struct eos_op *staged;

	if (op->rdev == op->head.st.rdev || was == op->head.st.rdev)
		return merge_attr_op(c, op, base);
	if (was != op->rdev)
		return eos_pub_conflict(c, op, EOS_CONFLICT_DEVICE, NULL,
					"'%s': the session made it device %u:%u, the head %u:%u",
					op->path, major(op->rdev), minor(op->rdev),
					major(op->head.st.rdev), minor(op->head.st.rdev));
	staged = eos_changeset_op(c->p->cs, op->path);
	if (!staged)
		return -EIO;
	staged->rdev = op->rdev = op->head.st.rdev;
	c->merged++;
	return merge_attr_op(c, op, base);
}

/*
 * Whether the head already has hard link op: the path in the group of its target, which this
 * publish does not rewrite (not staged, or dropped as what the head has).
 */
static bool
linked_at_head(struct eos_pub_check *c, const struct eos_pub_op *op)
{
	const struct eos_pub_op *t = eos_pub_find(c->p, op->target);
	const struct eos_op *staged = t ? eos_changeset_op(c->p->cs, t->path) : NULL;
	EOS_CLEANUP(eos_entry_release) struct eos_entry e;
	uint64_t group = op->head.st.link_group;

	eos_entry_init(&e);
	if (op->head.st.kind != EOS_KIND_FILE || !group)
		return false;
	if (t)
		return t->resolved && staged && staged->dropped && t->head_found &&
		       t->head.st.link_group == group;
	return eos_entry_resolve(c->p->st, c->snap, c->p->sbx, c->head, op->target, &e, NULL) ==
		       0 &&
	       e.st.kind == EOS_KIND_FILE && e.st.link_group == group;
}

static int
merge_same_kind(struct eos_pub_check *c, struct eos_pub_op *op, struct eos_error *err)
{
	const struct eos_attr *base = op->base_found ? &op->base.st.attr : &op->head.st.attr;

	switch (op->kind) {
	case EOS_PUB_MKDIR:
		if (op->opaque)
			return take(op);
		return merge_attr_op(c, op, base);
	case EOS_PUB_ATTR:
		return merge_attr_op(c, op, base);
	case EOS_PUB_SYMLINK:
		return merge_symlink(c, op);
	case EOS_PUB_NODE:
		return merge_node(c, op, base);
	case EOS_PUB_FILE:
		return eos_pub_merge_file(c, op, err);
	case EOS_PUB_LINK:
		if (linked_at_head(c, op)) {
			drop(c, op);
			return 0;
		}
		return eos_pub_conflict(c, op, EOS_CONFLICT_CONTENT, NULL,
					"'%s': the session made it a hard link of '%s', the head "
					"changed it",
					op->path, op->target);
	case EOS_PUB_REMOVE:
		break;
	}
	return -EINVAL;
}

/* Whether the session's op leaves exactly what the head has (kind and bytes). */
static bool
same_as_head(const struct eos_pub_op *op)
{
	switch (op->kind) {
	case EOS_PUB_FILE:
		return op->head.st.kind == EOS_KIND_FILE &&
		       eos_digest_eq(&op->content.digest, &op->head.st.content.digest);
	case EOS_PUB_SYMLINK:
		return op->head.st.kind == EOS_KIND_SYMLINK && op->head.target &&
		       !strcmp(op->target, op->head.target);
	case EOS_PUB_MKDIR:
		return op->head.st.kind == EOS_KIND_DIR;
	case EOS_PUB_NODE:
		return op->head.st.kind == op->node && op->head.st.rdev == op->rdev;
	case EOS_PUB_LINK:
	case EOS_PUB_ATTR:
	case EOS_PUB_REMOVE:
		break;
	}
	return false;
}

/* Both sides changed op->path since the base and the head still has it. */
static int
check_changed(struct eos_pub_check *c, struct eos_pub_op *op, struct eos_error *err)
{
	enum eos_kind ks = session_kind(op), kh = op->head.st.kind;
	enum eos_kind kb = op->base_found ? op->base.st.kind : kh;

	if (op->kind == EOS_PUB_REMOVE)
		return eos_pub_conflict(c, op, EOS_CONFLICT_DELETE_MODIFY, NULL,
					"'%s': the session deleted the %s, the head changed it",
					op->path, eos_kind_name(kb));
	if (ks == kh && kb != kh && same_as_head(op))
		/* both changed the type the same way: only the attributes can differ */
		return merge_attr_op(c, op, &op->head.st.attr);
	if (ks != kh || kb != kh)
		return eos_pub_conflict(c, op, EOS_CONFLICT_TYPE, NULL,
					"'%s': the session made it a %s, the head a %s (it was %s)",
					op->path, eos_kind_name(ks), eos_kind_name(kh),
					op->base_found ? eos_kind_name(kb) : "absent");
	return merge_same_kind(c, op, err);
}

/* The head deleted op->path (or a parent of it) since the base. */
static int
check_deleted(struct eos_pub_check *c, struct eos_pub_op *op)
{
	if (op->kind == EOS_PUB_REMOVE) {
		drop(c, op);
		return 0;
	}
	return eos_pub_conflict(c, op, EOS_CONFLICT_MODIFY_DELETE, NULL,
				"'%s': the session changed the %s, the head deleted it", op->path,
				eos_kind_name(op->base.st.kind));
}

/*
 * Whether path is below a directory this publish stages as opaque, which hides everything older
 * below it: a removal there has nothing to remove (a name deleted in a moved directory, even
 * where the base has that path).
 */
static bool
below_opaque(struct eos_publish *p, const char *path)
{
	cleanup_free char *dir = strdup(path);

	for (char *slash = dir ? strrchr(dir, '/') : NULL; slash; slash = strrchr(dir, '/')) {
		const struct eos_pub_op *op;

		*slash = '\0';
		op = eos_pub_find(p, dir);
		if (op && op->kind == EOS_PUB_MKDIR && op->opaque)
			return true;
	}
	return false;
}

/* A removal of nothing: absent at the base, or below a directory the publish replaces. */
static bool
removes_nothing(struct eos_pub_check *c, const struct eos_pub_op *op)
{
	return op->kind == EOS_PUB_REMOVE && !c->p->blind &&
	       (!op->base_found || below_opaque(c->p, op->path));
}

int
eos_pub_check_unchanged(struct eos_pub_check *c, struct eos_pub_op *op)
{
	if (removes_nothing(c, op))
		drop(c, op); /* nothing to delete (a name below a moved directory) */
	else
		take(op);
	return 0;
}

/* Whether op removes or replaces a directory of the base (its subtree must be unchanged). */
static bool
replaces_dir(const struct eos_pub_op *op)
{
	if (!op->base_found || op->base.st.kind != EOS_KIND_DIR || op->kind == EOS_PUB_ATTR)
		return false;
	return op->kind != EOS_PUB_MKDIR || op->opaque;
}

/* Whether the head has at op->path what the base had (nothing, or the same record). */
static bool
head_kept(const struct eos_pub_op *op)
{
	return op->base_found == op->head_found &&
	       (!op->base_found || op->base.st.version == op->head.st.version);
}

/*
 * An opaque directory hides what the base had below it. Where the base had no directory and the
 * head has one (both sides created it, or renamed one there), it is merged with the head's like
 * any other directory: raising the floor would hide the head's children.
 */
static void
merge_opaque_dir(struct eos_pub_check *c, struct eos_pub_op *op)
{
	struct eos_op *staged;

	if (op->kind != EOS_PUB_MKDIR || !op->opaque ||
	    (op->base_found && op->base.st.kind == EOS_KIND_DIR) || !op->head_found ||
	    op->head.st.kind != EOS_KIND_DIR)
		return;
	op->opaque = false;
	staged = eos_changeset_op(c->p->cs, op->path);
	if (staged)
		staged->opaque = false;
}

int
eos_pub_check_op(struct eos_pub_check *c, struct eos_pub_op *op, struct eos_error *err)
{
	bool unchanged = head_kept(op);
	bool skip = false, conflict;
	int r;

	merge_opaque_dir(c, op);
	if (op->kind == EOS_PUB_REMOVE && below_opaque(c->p, op->path)) {
		drop(c, op);
		return 0;
	}

	if (!replaces_dir(op) && unchanged)
		return op->base_found		    ? take(op)
		       : op->kind == EOS_PUB_REMOVE ? (drop(c, op), 0)
						    : check_parent(c, op, err);
	r = ignored(c, op, &skip, err);
	if (r < 0)
		return r;
	if (!skip && replaces_dir(op)) {
		r = check_subtree(c, op, &conflict, err);
		if (r < 0 || conflict)
			return r;
	}
	if (unchanged || (skip && (op->head_found || op->kind == EOS_PUB_REMOVE)))
		return take(op);
	if (skip) /* last writer wins, where the head deleted it too */
		return check_parent(c, op, err);
	if (!op->head_found)
		return check_deleted(c, op);
	return check_changed(c, op, err);
}

int
eos_pub_check_renames(struct eos_pub_check *c, struct eos_error *err)
{
	struct eos_publish *p = c->p;
	bool skip;
	int r = 0;

	for (size_t i = 0; r >= 0 && i < p->nops; i++) {
		struct eos_pub_op *to = p->ops[i];
		struct eos_pub_op *from = to->origin ? eos_pub_find(p, to->origin) : NULL;

		/* a head that also changed the destination (the same rename) is judged there */
		if (!from || from->kind != EOS_PUB_REMOVE || !from->base_found ||
		    from->head_found || !head_kept(to))
			continue;
		r = ignored(c, to, &skip, err);
		if (r < 0 || skip) /* last writer wins */
			continue;
		r = eos_pub_conflict(c, to, EOS_CONFLICT_RENAME, from->path,
				     "'%s': the session renamed '%s' here, the head deleted or "
				     "renamed '%s'",
				     to->path, from->path, from->path);
		if (r < 0)
			r = eos_error_set(err, r, "publish: out of memory");
	}
	return r;
}
