/* SPDX-License-Identifier: MIT */
/*
 * The tar export: the delta as an OCI image layer (pax, so that mtimes keep their nanoseconds;
 * optionally zstd-compressed), written through store/archive.h.
 *
 *   - created or changed paths: their entry at the exported version, with mode, owner, mtime,
 *     symlink target, device number and extended attributes (pax SCHILY.xattr); members of one
 *     hard-link group after the first are hard links to it;
 *   - every directory above a written entry is written too (docker does the same), so that an
 *     extraction restores the mtimes the changes of its children disturbed;
 *   - a deleted path: "dir/.wh.name" (deletions below a deleted directory need none);
 *   - a kind change: the whiteout of the old entry, then the new entry;
 *   - a directory replaced between the versions: its entry, "dir/.wh..wh..opq", then everything
 *     it holds at the exported version.
 * The root directory is the member "./".
 */
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/hashmap.h"
#include "common/path.h"

#include "store/archive.h"
#include "store/export.h"

#define WHITEOUT_PREFIX ".wh."
#define OPAQUE_NAME	".wh..wh..opq"

static void
entry_releasep(struct eos_entry *e)
{
	eos_entry_release(e);
}

struct tarx {
	struct eos_export *x;
	struct eos_archive_writer *w;
	struct eos_hashmap dirs;  /* directory paths already written */
	struct eos_hashmap links; /* link group (u64) -> first path written (owned ptr) */
	struct eos_error *err;
};

static void
tarx_release(struct tarx *t)
{
	struct eos_hashmap_iter it = { 0 };

	while (eos_hashmap_next(&t->links, &it))
		free(it.value->ptr);
	eos_hashmap_release(&t->links);
	eos_hashmap_release(&t->dirs);
	eos_archive_writer_free(t->w);
}

static const char *
member_name(const char *path)
{
	return path[0] ? path : ".";
}

static void
set_time(struct eos_archive_entry *ae, int64_t ns)
{
	int64_t rem = ns % 1000000000;

	ae->mtime_set = true;
	ae->mtime_sec = ns / 1000000000 - (rem < 0);
	ae->mtime_nsec = (long)(rem < 0 ? rem + 1000000000 : rem);
}

/* The extended attributes of e for a header (caller frees *ret; NULL when there are none). */
static int
xattrs_of(const struct eos_entry *e, struct eos_archive_xattr **ret)
{
	struct eos_archive_xattr *v;

	*ret = NULL;
	if (e->nxattrs == 0)
		return 0;
	v = calloc(e->nxattrs, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < e->nxattrs; i++)
		v[i] = (struct eos_archive_xattr){ .name = e->xattrs[i].name,
						   .value = e->xattrs[i].value,
						   .len = e->xattrs[i].len };
	*ret = v;
	return 0;
}

static void
header_of(const char *path, const struct eos_entry *e, struct eos_archive_entry *ret)
{
	*ret = (struct eos_archive_entry){
		.path = member_name(path),
		.perm = e->st.attr.mode & 07777,
		.uid = e->st.attr.uid,
		.gid = e->st.attr.gid,
	};
	set_time(ret, e->st.attr.mtime_ns);
	switch (e->st.kind) {
	case EOS_KIND_DIR:
		ret->type = EOS_ARCHIVE_DIR;
		break;
	case EOS_KIND_SYMLINK:
		ret->type = EOS_ARCHIVE_SYMLINK;
		ret->symlink = e->target;
		break;
	case EOS_KIND_FIFO:
		ret->type = EOS_ARCHIVE_FIFO;
		break;
	case EOS_KIND_CHR:
	case EOS_KIND_BLK:
		ret->type = e->st.kind == EOS_KIND_CHR ? EOS_ARCHIVE_CHAR : EOS_ARCHIVE_BLOCK;
		ret->rdev = e->st.rdev;
		break;
	case EOS_KIND_FILE:
	case EOS_KIND_NONE:
	case EOS_KIND_WHITEOUT:
		ret->type = EOS_ARCHIVE_FILE;
		ret->size = (int64_t)e->st.content.size;
		break;
	}
}

static int
member_fail(struct tarx *t, int r, const char *path)
{
	return eos_error_prefix(t->err, r, "add '%s' to the archive", member_name(path));
}

/* Write the header ae of entry e (with its extended attributes). */
static int
write_header(struct tarx *t, struct eos_archive_entry *ae, const struct eos_entry *e,
	     const char *path)
{
	cleanup_free struct eos_archive_xattr *xattrs = NULL;
	int r = xattrs_of(e, &xattrs);

	if (r < 0)
		return r;
	ae->xattrs = xattrs;
	ae->nxattrs = e->nxattrs;
	r = eos_archive_writer_header(t->w, ae, t->err);
	ae->xattrs = NULL;
	return r < 0 ? member_fail(t, r, path) : 0;
}

/* --- directories ------------------------------------------------------------------------------ */

static int
write_dir(struct tarx *t, const char *path, const struct eos_entry *e)
{
	struct eos_archive_entry ae;
	union eos_hashmap_value *v;
	int r;

	header_of(path, e, &ae);
	if ((r = write_header(t, &ae, e, path)) < 0)
		return r;
	t->x->res->dirs++;
	r = eos_hashmap_get_or_insert(&t->dirs, path, strlen(path), &v);
	return r < 0 ? r : 0;
}

/* Write directory path (as it is at the exported version) unless it is in the archive already. */
static int
ensure_dir(struct tarx *t, const char *path)
{
	EOS_CLEANUP(entry_releasep) struct eos_entry e = { 0 };
	const struct eos_export *x = t->x;
	int r;

	if (eos_hashmap_find(&t->dirs, path, strlen(path)))
		return 0;
	r = eos_entry_resolve(x->st, x->snap, x->sbx, x->to, path, &e, t->err);
	if (r < 0)
		return r;
	if (e.st.kind != EOS_KIND_DIR)
		return eos_error_set(t->err, -EBADMSG,
				     "'%s' is not a directory at the export's end", path);
	return write_dir(t, path, &e);
}

/* Every directory above path, from the root down. */
static int
ensure_parents(struct tarx *t, const char *path)
{
	cleanup_free char *prefix = strdup(path);
	int r = prefix ? ensure_dir(t, "") : -ENOMEM;

	for (char *p = prefix; r == 0 && p && (p = strchr(p, '/')); p++) {
		*p = '\0';
		r = ensure_dir(t, prefix);
		*p = '/';
	}
	return r;
}

/* --- members ---------------------------------------------------------------------------------- */

/* "parent/<prefix>name", or "<prefix>name" at the root. Caller owns *ret. */
static int
whiteout_name(const char *path, const char *prefix, const char *name, char **ret)
{
	size_t plen;
	const char *base;

	eos_path_split(path, &plen, &base);
	if (!name)
		name = base;
	else
		plen = strlen(path);
	if (asprintf(ret, "%.*s%s%s%s", (int)plen, path, plen ? "/" : "", prefix, name) < 0)
		return -ENOMEM;
	return 0;
}

static int
write_marker(struct tarx *t, const char *member, const char *path)
{
	struct eos_archive_entry ae = { .path = member, .type = EOS_ARCHIVE_FILE };
	int r;

	set_time(&ae, t->x->to_created_ns);
	if ((r = eos_archive_writer_header(t->w, &ae, t->err)) < 0)
		return member_fail(t, r, path);
	return 0;
}

/* "dir/.wh.name": path is deleted. */
static int
write_whiteout(struct tarx *t, const char *path)
{
	cleanup_free char *member = NULL;
	int r = whiteout_name(path, WHITEOUT_PREFIX, NULL, &member);

	r = r ?: write_marker(t, member, path);
	t->x->res->deleted += r == 0;
	return r;
}

/* "dir/.wh..wh..opq": the directory hides everything older below it. */
static int
write_opaque(struct tarx *t, const char *path)
{
	cleanup_free char *member = NULL;
	int r = path[0] ? whiteout_name(path, "", OPAQUE_NAME, &member)
			: ((member = strdup(OPAQUE_NAME)) ? 0 : -ENOMEM);

	return r ?: write_marker(t, member, path);
}

struct data_sink {
	struct eos_archive_writer *w;
};

static int
data_sink(void *ctx, const void *p, size_t len, struct eos_error *err)
{
	struct data_sink *s = ctx;

	return eos_archive_writer_data(s->w, p, len, err);
}

/* A file, or a hard link to the first member of its link group. */
static int
write_file(struct tarx *t, const char *path, const struct eos_entry *e)
{
	struct data_sink s = { .w = t->w };
	union eos_hashmap_value *v = NULL;
	struct eos_archive_entry ae;
	uint64_t group = e->st.link_group;
	int r = 0;

	header_of(path, e, &ae);
	if (group && (r = eos_hashmap_get_or_insert(&t->links, &group, sizeof(group), &v)) < 0)
		return r;
	if (v && !v->ptr && !(v->ptr = strdup(path)))
		return -ENOMEM;
	if (v && strcmp(v->ptr, path) != 0)
		ae.hardlink = v->ptr;
	if ((r = write_header(t, &ae, e, path)) < 0)
		return r;
	t->x->res->files++;
	if (ae.hardlink)
		return 0;
	r = eos_export_content(t->x, e, path, data_sink, &s, t->err);
	if (r < 0)
		return member_fail(t, r, path);
	t->x->res->bytes += e->st.content.size;
	return 0;
}

/* A member without data: a symlink, a fifo or a device. */
static int
write_plain(struct tarx *t, const char *path, const struct eos_entry *e, uint64_t *count)
{
	struct eos_archive_entry ae;
	int r;

	header_of(path, e, &ae);
	if ((r = write_header(t, &ae, e, path)) < 0)
		return r;
	(*count)++;
	return 0;
}

static int
write_entry(struct tarx *t, const char *path, const struct eos_entry *e)
{
	switch (e->st.kind) {
	case EOS_KIND_DIR:
		return write_dir(t, path, e);
	case EOS_KIND_FILE:
		return write_file(t, path, e);
	case EOS_KIND_SYMLINK:
		return write_plain(t, path, e, &t->x->res->symlinks);
	case EOS_KIND_FIFO:
	case EOS_KIND_CHR:
	case EOS_KIND_BLK:
		return write_plain(t, path, e, &t->x->res->specials);
	case EOS_KIND_NONE:
	case EOS_KIND_WHITEOUT:
		break;
	}
	return write_whiteout(t, path);
}

static int
write_change(struct tarx *t, const struct eos_export_change *c)
{
	bool replaced = c->old.st.kind != EOS_KIND_NONE && c->old.st.kind != c->new.st.kind &&
			c->new.st.kind != EOS_KIND_NONE;
	int r;

	if (c->flags & (EOS_EXPORT_BELOW_REMOVED | EOS_EXPORT_BELOW_OPAQUE))
		return 0; /* hidden by a whiteout above it */
	r = c->path[0] ? ensure_parents(t, c->path) : 0;
	if (r == 0 && replaced)
		r = write_whiteout(t, c->path);
	r = r ?: write_entry(t, c->path, &c->new);
	if (r == 0 && (c->flags & EOS_EXPORT_OPAQUE))
		r = write_opaque(t, c->path);
	return r;
}

int
eos_export_tar(struct eos_export *x, const struct eos_export_diff *d, int fd, bool zstd,
	       struct eos_error *err)
{
	EOS_CLEANUP(tarx_release) struct tarx t = { .x = x, .err = err };
	int r = eos_archive_writer_open(
		fd, zstd ? EOS_ARCHIVE_FILTER_ZSTD : EOS_ARCHIVE_FILTER_NONE, &t.w, err);

	eos_export_progress(x, 0, d->n, true);
	for (size_t i = 0; r == 0 && i < d->n; i++) {
		r = write_change(&t, &d->v[i]);
		eos_export_progress(x, i + 1, d->n, i + 1 == d->n);
	}
	return r ?: eos_archive_writer_close(t.w, err);
}
