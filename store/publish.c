/* SPDX-License-Identifier: MIT */
/*
 * eos_publish_*: beginning a publish, staging its changes, results and release (the flow is
 * described in store/publish.h).
 */
#include "store/publish.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/digest.h"
#include "common/path.h"

#include "store/store-internal.h"

static const char *const conflict_names[] = {
	[EOS_CONFLICT_CONTENT] = "content",
	[EOS_CONFLICT_BINARY] = "binary",
	[EOS_CONFLICT_TOO_LARGE] = "too_large",
	[EOS_CONFLICT_DELETE_MODIFY] = "delete_modify",
	[EOS_CONFLICT_MODIFY_DELETE] = "modify_delete",
	[EOS_CONFLICT_TYPE] = "type",
	[EOS_CONFLICT_DIRECTORY] = "directory",
	[EOS_CONFLICT_PARENT] = "parent",
	[EOS_CONFLICT_MODE] = "mode",
	[EOS_CONFLICT_SYMLINK] = "symlink",
	[EOS_CONFLICT_DEVICE] = "device",
	[EOS_CONFLICT_RENAME] = "rename",
};

const char *
eos_conflict_kind_name(enum eos_conflict_kind k)
{
	if ((size_t)k < EOS_ARRAY_SIZE(conflict_names) && conflict_names[k])
		return conflict_names[k];
	return "unknown";
}

const char *
eos_publish_status_name(enum eos_publish_status s)
{
	switch (s) {
	case EOS_PUBLISH_PUBLISHED:
		return "published";
	case EOS_PUBLISH_NO_OP:
		return "no_op";
	case EOS_PUBLISH_REJECTED:
		return "rejected";
	}
	return "unknown";
}

/* --- begin ------------------------------------------------------------------------------------ */

static int
begin_session(struct eos_publish *p, const struct eos_publish_options *o, struct eos_error *err)
{
	struct eos_session_info info;
	int r = eos_store_session_get(p->st, o->sandbox, o->session, &info, err);

	if (r < 0)
		return r;
	p->session = strdup(o->session);
	if (!p->session)
		return -ENOMEM;
	p->session_created_ns = info.created_ns;
	p->keep_session_dir = o->keep_session_dir;
	if (o->base && o->base != info.version)
		return eos_error_set(
			err, -EINVAL,
			"session '%s' is based on L%06llu, not on the given base L%06llu",
			o->session, (unsigned long long)info.version, (unsigned long long)o->base);
	p->base = info.version;
	return 0;
}

static int
begin_owner(struct eos_publish *p, const struct eos_publish_options *o, struct eos_error *err)
{
	int n;

	if (o->owner)
		n = snprintf(p->owner, sizeof(p->owner), "%s", o->owner);
	else if (o->session)
		n = snprintf(p->owner, sizeof(p->owner), "workspace_session:%s", o->session);
	else
		n = snprintf(p->owner, sizeof(p->owner), "%s", EOS_OWNER_UNKNOWN);
	if (n <= 0 || (size_t)n >= sizeof(p->owner))
		return eos_error_set(err, -EINVAL, "owner '%s' is empty or longer than %d bytes",
				     o->owner ? o->owner : "", EOS_OWNER_MAX);
	return eos_changeset_set_owner(p->cs, p->owner, err);
}

static int
begin_base(struct eos_publish *p, const struct eos_publish_options *o, struct eos_error *err)
{
	struct eos_sandbox_info info;
	int r;

	if (o->session)
		return begin_session(p, o, err);
	if (!o->base) {
		p->blind = true;
		return 0;
	}
	r = eos_store_sandbox_get(p->st, o->sandbox, &info, err);
	if (r < 0)
		return r;
	if (o->base < info.base || o->base > info.head)
		return eos_error_set(
			err, -ENOENT,
			"base L%06llu of sandbox '%s' is not retained (L%06llu..L%06llu)",
			(unsigned long long)o->base, o->sandbox, (unsigned long long)info.base,
			(unsigned long long)info.head);
	p->base = o->base;
	return 0;
}

int
eos_publish_begin(struct eos_store *st, const struct eos_publish_options *o,
		  struct eos_publish **ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	int r;

	if (!o || !o->sandbox)
		return eos_error_set(err, -EINVAL, "publish: no sandbox given");
	p = calloc(1, sizeof(*p));
	if (!p)
		return eos_error_set(err, -ENOMEM, "publish: out of memory");
	p->st = st;
	snprintf(p->sandbox, sizeof(p->sandbox), "%s", o->sandbox);
	r = eos_changeset_new(st, o->sandbox, &p->cs, err);
	if (r >= 0)
		p->sbx = p->cs->sbx; /* resolved by the change set */
	r = r ?: begin_base(p, o, err);
	r = r ?: begin_owner(p, o, err);
	if (r < 0)
		return r == -ENOMEM ? eos_error_set(err, r, "publish: out of memory") : r;
	*ret = TAKE_PTR(p);
	return 0;
}

uint64_t
eos_publish_base(const struct eos_publish *p)
{
	return p->base;
}

/* --- staging ---------------------------------------------------------------------------------- */

struct eos_pub_op *
eos_pub_find(struct eos_publish *p, const char *path)
{
	return eos_hashmap_get(&p->paths, path, strlen(path));
}

static void
op_free(struct eos_pub_op *op)
{
	if (!op)
		return;
	free(op->path);
	free(op->target);
	free(op->data_path);
	free(op->data);
	for (size_t i = 0; i < op->nranges; i++)
		free((char *)op->ranges[i].owner);
	free(op->ranges);
	free(op->origin);
	for (size_t i = 0; i < op->nedits; i++) {
		free(op->edits[i].name);
		free(op->edits[i].value);
	}
	free(op->edits);
	eos_entry_release(&op->base);
	eos_entry_release(&op->head);
	eos_blame_release(&op->blame);
	free(op);
}

static int
check_open(const struct eos_publish *p, const char *path, struct eos_error *err)
{
	if (p->prepared || p->committed)
		return eos_error_set(err, -EINVAL, "publish to '%s': '%s' staged after prepare",
				     p->sandbox, path ? path : "");
	if (!path)
		return eos_error_set(err, -EINVAL, "publish to '%s': no path given", p->sandbox);
	return eos_path_check(path, err);
}

/* A new op for path of kind, added to p (-EEXIST when the path is staged already). */
static int
op_add(struct eos_publish *p, const char *path, enum eos_pub_kind kind, const struct eos_attr *attr,
       struct eos_pub_op **ret, struct eos_error *err)
{
	struct eos_pub_op *op;
	int r = check_open(p, path, err);

	if (r < 0)
		return r;
	if (*path == '\0' && kind != EOS_PUB_ATTR && kind != EOS_PUB_MKDIR)
		return eos_error_set(err, -EINVAL, "publish: the root cannot be replaced");
	if (eos_pub_find(p, path))
		return eos_error_set(err, -EEXIST, "'%s' is staged twice", path);
	if (eos_buf_array_reserve(&p->ops, &p->cap, p->nops, sizeof(*p->ops), 64) < 0)
		return eos_error_set(err, -ENOMEM, "publish: out of memory");
	op = calloc(1, sizeof(*op));
	if (!op || !(op->path = strdup(path))) {
		free(op);
		return eos_error_set(err, -ENOMEM, "publish: out of memory");
	}
	eos_blame_init(&op->blame);
	eos_entry_init(&op->base);
	eos_entry_init(&op->head);
	op->kind = kind;
	if (attr)
		op->attr = *attr;
	r = eos_hashmap_put(&p->paths, path, strlen(path), op);
	if (r < 0) {
		op_free(op);
		return eos_error_set(err, r, "publish: out of memory");
	}
	p->ops[p->nops++] = op;
	*ret = op;
	return 0;
}

/* Copy the write ranges that name an owner (the others fall to the publish's owner). */
static int
copy_ranges(struct eos_pub_op *op, const struct eos_publish_file *f)
{
	if (!f->nranges)
		return 0;
	op->ranges = calloc(f->nranges, sizeof(*op->ranges));
	if (!op->ranges)
		return -ENOMEM;
	for (size_t i = 0; i < f->nranges; i++) {
		const struct eos_write_range *w = &f->ranges[i];
		struct eos_write_range *to = &op->ranges[op->nranges];

		if (!w->owner || !*w->owner || w->end <= w->start)
			continue;
		*to = *w;
		to->owner = strdup(w->owner);
		if (!to->owner)
			return -ENOMEM;
		op->nranges++;
	}
	return 0;
}

static int
file_source(struct eos_pub_op *op, const struct eos_publish_file *f, struct eos_error *err)
{
	int given = !!f->data_path + !!(f->data || f->len) + !!f->content;

	if (given != 1)
		return eos_error_set(
			err, -EINVAL,
			"'%s': give exactly one of a data file, bytes or stored content", op->path);
	if (f->data_path && !(op->data_path = strdup(f->data_path)))
		return -ENOMEM;
	if (f->content) {
		op->content = *f->content;
		op->has_content = true;
	}
	if (f->data || f->len) {
		op->data = malloc(f->len ? f->len : 1);
		if (!op->data)
			return -ENOMEM;
		memcpy(op->data, f->data, f->len);
		op->len = f->len;
	}
	return 0;
}

int
eos_publish_put_file(struct eos_publish *p, const char *path, const struct eos_publish_file *f,
		     struct eos_error *err)
{
	struct eos_pub_op *op;
	int r;

	if (!f)
		return eos_error_set(err, -EINVAL, "'%s': no file given", path ? path : "");
	r = op_add(p, path, EOS_PUB_FILE, &f->attr, &op, err);
	if (r < 0)
		return r;
	r = file_source(op, f, err);
	if (r >= 0 && f->origin) {
		r = eos_path_check(f->origin, err);
		if (r >= 0 && !(op->origin = strdup(f->origin)))
			r = -ENOMEM;
	}
	if (r >= 0 && copy_ranges(op, f) < 0)
		r = -ENOMEM;
	if (r == -ENOMEM)
		return eos_error_set(err, r, "'%s': out of memory", path);
	return r;
}

int
eos_publish_mkdir(struct eos_publish *p, const char *path, const struct eos_attr *attr, bool opaque,
		  struct eos_error *err)
{
	struct eos_pub_op *op;
	int r = op_add(p, path, EOS_PUB_MKDIR, attr, &op, err);

	if (r >= 0)
		op->opaque = opaque;
	return r;
}

static int
target_op(struct eos_publish *p, const char *path, enum eos_pub_kind kind,
	  const struct eos_attr *attr, const char *target, struct eos_error *err)
{
	struct eos_pub_op *op;
	int r;

	if (!target || !*target)
		return eos_error_set(err, -EINVAL, "'%s': empty target", path ? path : "");
	r = op_add(p, path, kind, attr, &op, err);
	if (r >= 0 && !(op->target = strdup(target)))
		return eos_error_set(err, -ENOMEM, "'%s': out of memory", path);
	return r;
}

int
eos_publish_symlink(struct eos_publish *p, const char *path, const struct eos_attr *attr,
		    const char *target, struct eos_error *err)
{
	return target_op(p, path, EOS_PUB_SYMLINK, attr, target, err);
}

int
eos_publish_mknod(struct eos_publish *p, const char *path, const struct eos_attr *attr,
		  enum eos_kind kind, uint64_t rdev, struct eos_error *err)
{
	struct eos_pub_op *op;
	int r = op_add(p, path, EOS_PUB_NODE, attr, &op, err);

	if (r >= 0) {
		op->node = kind;
		op->rdev = rdev;
	}
	return r;
}

int
eos_publish_link(struct eos_publish *p, const char *path, const char *target, struct eos_error *err)
{
	int r = target ? eos_path_check(target, err) : 0;

	return r ?: target_op(p, path, EOS_PUB_LINK, NULL, target, err);
}

int
eos_publish_remove(struct eos_publish *p, const char *path, struct eos_error *err)
{
	struct eos_pub_op *op;

	return op_add(p, path, EOS_PUB_REMOVE, NULL, &op, err);
}

int
eos_publish_set_attr(struct eos_publish *p, const char *path, const struct eos_attr *attr,
		     struct eos_error *err)
{
	struct eos_pub_op *op;

	if (!attr)
		return eos_error_set(err, -EINVAL, "'%s': no attributes given", path ? path : "");
	return op_add(p, path, EOS_PUB_ATTR, attr, &op, err);
}

int
eos_publish_set_origin(struct eos_publish *p, const char *path, const char *origin,
		       struct eos_error *err)
{
	struct eos_pub_op *op;
	char *copy;
	int r = check_open(p, path, err);

	r = r ?: (origin ? eos_path_check(origin, err) : 0);
	if (r < 0)
		return r;
	op = eos_pub_find(p, path);
	if (!op)
		return eos_error_set(err, -ENOENT, "origin of '%s': the path is not staged", path);
	copy = origin ? strdup(origin) : NULL;
	if (origin && !copy)
		return eos_error_set(err, -ENOMEM, "'%s': out of memory", path);
	free(op->origin);
	op->origin = copy;
	return 0;
}

int
eos_publish_set_xattr(struct eos_publish *p, const char *path, const char *name, const void *value,
		      size_t len, struct eos_error *err)
{
	struct eos_pub_op *op;
	struct eos_xattr_edit *e;
	int r = check_open(p, path, err);

	if (r < 0)
		return r;
	op = eos_pub_find(p, path);
	if (!op)
		return eos_error_set(err, -ENOENT, "xattr '%s' of '%s': the path is not staged",
				     name ? name : "", path);
	if (!name)
		return eos_error_set(err, -EINVAL, "'%s': no xattr name given", path);
	e = reallocarray(op->edits, op->nedits + 1, sizeof(*e));
	if (!e)
		return eos_error_set(err, -ENOMEM, "'%s': out of memory", path);
	op->edits = e;
	e = &op->edits[op->nedits];
	*e = (struct eos_xattr_edit){ .name = strdup(name), .len = len };
	if (value)
		e->value = malloc(len ? len : 1);
	if (!e->name || (value && !e->value)) {
		free(e->name);
		free(e->value);
		return eos_error_set(err, -ENOMEM, "'%s': out of memory", path);
	}
	if (value)
		memcpy(e->value, value, len);
	op->nedits++;
	/* The change set checks the name and value when prepare stages the edit. */
	return 0;
}

/* --- helpers ---------------------------------------------------------------------------------- */

int
eos_pub_read_content(struct eos_store *st, const struct eos_content *c, uint8_t **ret,
		     size_t *ret_len, struct eos_error *err)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	cleanup_free uint8_t *buf = NULL;
	size_t size = (size_t)c->size;
	ssize_t n;
	int r = eos_store_file_open_content(st, c, &f, err);

	if (r < 0)
		return r;
	buf = malloc(size ? size : 1);
	if (!buf)
		return eos_error_set(err, -ENOMEM, "read content: out of memory");
	for (size_t off = 0; off < size; off += (size_t)n) {
		n = eos_file_pread(f, buf + off, size - off, off, err);
		if (n < 0)
			return (int)n;
		if (n == 0)
			return eos_error_set(err, -EBADMSG, "stored content ends early");
	}
	*ret = TAKE_PTR(buf);
	*ret_len = size;
	return 0;
}

int
eos_pub_read_path(const char *path, size_t max, uint8_t **ret, size_t *ret_len,
		  struct eos_error *err)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	cleanup_free uint8_t *buf = NULL;
	struct stat sb;
	int r;

	if (fd < 0 || fstat(fd, &sb) < 0)
		return eos_error_set(err, eos_neg_errno(), "open '%s': %m", path);
	if (!S_ISREG(sb.st_mode))
		return eos_error_set(err, -EINVAL, "'%s' is not a regular file", path);
	if ((uint64_t)sb.st_size > max)
		return -EFBIG;
	buf = malloc(sb.st_size ? (size_t)sb.st_size : 1);
	if (!buf)
		return eos_error_set(err, -ENOMEM, "read '%s': out of memory", path);
	r = eos_pread_all(fd, buf, (size_t)sb.st_size);
	if (r == -ENODATA)
		return eos_error_set(err, -EIO, "'%s' shrank while being read", path);
	if (r < 0)
		return eos_error_set(err, r, "read '%s': %s", path, strerror(-r));
	*ret = TAKE_PTR(buf);
	*ret_len = (size_t)sb.st_size;
	return 0;
}

void
eos_pub_fingerprint(const struct eos_stat *s, const char *target, char *out)
{
	char hex[EOS_DIGEST_HEX_LEN + 1];
	struct eos_digest d;

	if (!s) {
		snprintf(out, EOS_FINGERPRINT_MAX, "absent");
	} else if (s->kind == EOS_KIND_DIR) {
		snprintf(out, EOS_FINGERPRINT_MAX, "dir:%04o", s->attr.mode & 07777);
	} else if (s->kind == EOS_KIND_SYMLINK) {
		if (!target || eos_sha256(target, strlen(target), &d) < 0)
			memset(&d, 0, sizeof(d));
		eos_digest_hex(&d, hex);
		snprintf(out, EOS_FINGERPRINT_MAX, "symlink:%s", hex);
	} else if (s->kind == EOS_KIND_FIFO) {
		snprintf(out, EOS_FINGERPRINT_MAX, "fifo:%04o", s->attr.mode & 07777);
	} else if (eos_kind_has_rdev(s->kind)) {
		snprintf(out, EOS_FINGERPRINT_MAX, "%s:%04o:%u:%u",
			 s->kind == EOS_KIND_CHR ? "chr" : "blk", s->attr.mode & 07777,
			 major(s->rdev), minor(s->rdev));
	} else {
		eos_digest_hex(&s->content.digest, hex);
		snprintf(out, EOS_FINGERPRINT_MAX, "file:%04o:%s", s->attr.mode & 07777, hex);
	}
}

/* --- results and release ---------------------------------------------------------------------- */

void
eos_publish_result_release(struct eos_publish_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nconflicts; i++) {
		free(r->conflicts[i].path);
		free(r->conflicts[i].detail);
		free(r->conflicts[i].lines);
		free(r->conflicts[i].message);
	}
	free(r->conflicts);
	r->conflicts = NULL;
	r->nconflicts = 0;
	for (size_t i = 0; i < r->nskipped; i++)
		free(r->skipped[i]);
	free(r->skipped);
	r->skipped = NULL;
	r->nskipped = 0;
}

void
eos_publish_free(struct eos_publish *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nops; i++)
		op_free(p->ops[i]);
	free(p->ops);
	eos_hashmap_release(&p->paths);
	eos_changeset_free(p->cs);
	free(p->session);
	free(p);
}
