/* SPDX-License-Identifier: MIT */
/*
 * The dir export: apply a delta onto an existing directory, atomically.
 *
 * The result is built in a staging directory beside the destination (same filesystem): a
 * hard-link copy of the destination in which every change is applied by replacing names, never by
 * writing a linked inode, so the destination itself is not touched. Directory attributes (mode,
 * owner, mtime) are set last, deepest first, because adding children changes a directory's mtime
 * and a read-only mode would stop them being added. The staging tree then replaces the destination
 * with one renameat2(RENAME_EXCHANGE), and the old tree, now under the staging name, is removed.
 *
 * An interrupted export leaves either the old destination and a staging directory, or the new
 * destination and the old tree under the staging name: the next export into the same destination
 * removes that leftover first. Exports into one parent directory serialise on a flock() of it.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/failpoint.h"
#include "common/path.h"

#include "store/export.h"
#include "store/store-internal.h"

enum {
	STAGING_NAME_MAX = 200, /* longer destination names get a hashed staging name */
};

static void
entry_releasep(struct eos_entry *e)
{
	eos_entry_release(e);
}

/* Attributes a directory gets once everything else is in place. */
struct fixup {
	char *path;
	size_t seq;   /* later fixups of a path win */
	size_t depth; /* components */
	uint32_t mode, uid, gid;
	struct timespec mtime;
};

struct dirx {
	struct eos_export *x;
	const char *dest; /* canonical destination (messages) */
	int parent_fd;	  /* the destination's parent, flock()ed */
	const char *name; /* the destination's name in it */
	char staging[STAGING_NAME_MAX + 32];
	int stage_fd;
	bool root; /* running as root: owners are applied */
	struct fixup *fix;
	size_t nfix, capfix;
	struct eos_error *err;
};

static void
dirx_release(struct dirx *dx)
{
	for (size_t i = 0; i < dx->nfix; i++)
		free(dx->fix[i].path);
	free(dx->fix);
	if (dx->stage_fd >= 0)
		close(dx->stage_fd);
	if (dx->parent_fd >= 0)
		close(dx->parent_fd);
}

/* "export to 'DEST': <verb> '<path>': <strerror>" */
static int
fail(struct dirx *dx, int code, const char *verb, const char *path)
{
	return eos_error_set(dx->err, code, "export to '%s': %s '%s': %s", dx->dest, verb, path,
			     strerror(-code));
}

static struct timespec
timespec_of(int64_t ns)
{
	int64_t s = ns / 1000000000, rem = ns % 1000000000;

	if (rem < 0) {
		s--;
		rem += 1000000000;
	}
	return (struct timespec){ .tv_sec = (time_t)s, .tv_nsec = (long)rem };
}

/* --- directory attributes --------------------------------------------------------------------- */

static int
fixup_add(struct dirx *dx, const char *path, uint32_t mode, uint32_t uid, uint32_t gid,
	  struct timespec mtime)
{
	struct fixup *f;
	size_t depth = path[0] ? 1 : 0;

	for (const char *p = path; *p; p++)
		depth += *p == '/';
	if (eos_buf_array_reserve(&dx->fix, &dx->capfix, dx->nfix, sizeof(*dx->fix), 64) < 0)
		return -ENOMEM;
	f = &dx->fix[dx->nfix];
	*f = (struct fixup){ .seq = dx->nfix,
			     .depth = depth,
			     .mode = mode & 07777,
			     .uid = uid,
			     .gid = gid,
			     .mtime = mtime };
	f->path = strdup(path);
	if (!f->path)
		return -ENOMEM;
	dx->nfix++;
	return 0;
}

static int
fixup_entry(struct dirx *dx, const char *path, const struct eos_entry *e)
{
	const struct eos_attr *a = &e->st.attr;

	return fixup_add(dx, path, a->mode, a->uid, a->gid, timespec_of(a->mtime_ns));
}

/* eos_export_dir_fn: a directory of the hard-link copy keeps the destination's attributes. */
static int
fixup_copied(void *ctx, const char *path, const struct stat *sb)
{
	return fixup_add(ctx, path, sb->st_mode, sb->st_uid, sb->st_gid, sb->st_mtim);
}

/* By path, then latest first. */
static int
fixup_cmp_path(const void *a, const void *b)
{
	const struct fixup *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	return c ? c : (x->seq < y->seq) - (x->seq > y->seq);
}

/* Deepest first. */
static int
fixup_cmp_depth(const void *a, const void *b)
{
	const struct fixup *x = a, *y = b;

	return (x->depth < y->depth) - (x->depth > y->depth);
}

/* Keep the latest fixup of each path, deepest paths first. */
static void
fixups_sort(struct dirx *dx)
{
	size_t out = 0;

	if (dx->nfix == 0)
		return;
	qsort(dx->fix, dx->nfix, sizeof(*dx->fix), fixup_cmp_path);
	for (size_t i = 1; i < dx->nfix; i++) {
		if (strcmp(dx->fix[out].path, dx->fix[i].path) == 0) {
			free(dx->fix[i].path);
			continue;
		}
		dx->fix[++out] = dx->fix[i];
	}
	dx->nfix = out + 1;
	qsort(dx->fix, dx->nfix, sizeof(*dx->fix), fixup_cmp_depth);
}

/* Open tree path below the staging root, every component a real directory (not created). */
static int
stage_open(struct dirx *dx, const char *path)
{
	cleanup_free char *copy = strdup(path);
	cleanup_close int cur = -1;
	char *save = NULL;

	if (!copy)
		return -ENOMEM;
	cur = eos_export_fs_opendir(dx->stage_fd, ".");
	for (char *c = strtok_r(copy, "/", &save); cur >= 0 && c; c = strtok_r(NULL, "/", &save)) {
		int next = eos_export_fs_opendir(cur, c);

		close(cur);
		cur = next;
	}
	return TAKE_FD(cur);
}

static int
fixup_apply(struct dirx *dx, const struct fixup *f)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, f->mtime };
	cleanup_close int fd = stage_open(dx, f->path);
	struct stat sb;

	if (fd == -ENOENT || fd == -ENOTDIR || fd == -ELOOP)
		return 0; /* removed or replaced by a change */
	if (fd < 0)
		return fail(dx, fd, "open", f->path);
	if (fstat(fd, &sb) < 0)
		return fail(dx, eos_neg_errno(), "stat", f->path);
	if (dx->root && (sb.st_uid != f->uid || sb.st_gid != f->gid) &&
	    fchown(fd, f->uid, f->gid) < 0)
		return fail(dx, eos_neg_errno(), "change the owner of", f->path);
	if (fchmod(fd, f->mode) < 0 || futimens(fd, ts) < 0)
		return fail(dx, eos_neg_errno(), "set the attributes of", f->path);
	return 0;
}

static int
fixups_apply(struct dirx *dx)
{
	fixups_sort(dx);
	for (size_t i = 0; i < dx->nfix; i++) {
		int r = fixup_apply(dx, &dx->fix[i]);

		if (r < 0)
			return r;
	}
	return 0;
}

/* --- walking the staging tree ----------------------------------------------------------------- */

/* A component that should be a directory is something else in the destination. */
static int
not_dir(struct dirx *dx, int dirfd, const char *name, const char *path)
{
	struct stat sb;

	if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(sb.st_mode))
		return eos_error_set(dx->err, -ENOTDIR,
				     "export to '%s': '%s' is a symlink in the destination, where "
				     "the export needs a directory (not followed)",
				     dx->dest, path);
	return eos_error_set(dx->err, -ENOTDIR,
			     "export to '%s': '%s' is not a directory in the destination", dx->dest,
			     path);
}

/* A parent the destination lacks is created with its attributes at the exported version. */
static int
create_missing(struct dirx *dx, int dirfd, const char *name, const char *path)
{
	EOS_CLEANUP(entry_releasep) struct eos_entry e = { 0 };
	const struct eos_export *x = dx->x;
	int r = eos_entry_resolve(x->st, x->snap, x->sbx, x->to, path, &e, dx->err);

	if (r < 0)
		return r;
	if (e.st.kind != EOS_KIND_DIR)
		return eos_error_set(dx->err, -EBADMSG,
				     "'%s' is not a directory at the export's end", path);
	if (mkdirat(dirfd, name, 0700) < 0)
		return fail(dx, eos_neg_errno(), "create directory", path);
	return fixup_entry(dx, path, &e);
}

/* Open the parent directory of tree path (creating missing ones); *ret_name points into path. */
static int
open_parent(struct dirx *dx, const char *path, int *ret_fd, const char **ret_name)
{
	cleanup_free char *prefix = strdup(path);
	cleanup_close int cur = eos_export_fs_opendir(dx->stage_fd, ".");
	const char *p = path, *slash;

	if (!prefix || cur < 0)
		return cur < 0 ? fail(dx, cur, "open", ".") : -ENOMEM;
	while ((slash = strchr(p, '/'))) {
		size_t end = (size_t)(slash - path);
		int next, r;

		prefix[end] = '\0';
		next = eos_export_fs_opendir(cur, prefix + (p - path));
		if (next == -ENOENT &&
		    (r = create_missing(dx, cur, prefix + (p - path), prefix)) < 0)
			return r;
		if (next == -ENOENT)
			next = eos_export_fs_opendir(cur, prefix + (p - path));
		if (next == -ENOTDIR || next == -ELOOP)
			return not_dir(dx, cur, prefix + (p - path), prefix);
		if (next < 0)
			return fail(dx, next, "open", prefix);
		close(cur);
		cur = next;
		prefix[end] = '/';
		p = slash + 1;
	}
	*ret_fd = TAKE_FD(cur);
	*ret_name = p;
	return 0;
}

/* --- applying changes ------------------------------------------------------------------------- */

static bool
xattr_ignorable(int e)
{
	return e == ENOTSUP || e == EPERM || e == EACCES;
}

/* Give fd the extended attributes of new, removing those only old had. */
static int
apply_xattrs(struct dirx *dx, int fd, const struct eos_entry *old, const struct eos_entry *new,
	     const char *path)
{
	for (uint32_t i = 0; i < old->nxattrs; i++)
		if (fremovexattr(fd, old->xattrs[i].name) < 0 && errno != ENODATA &&
		    !xattr_ignorable(errno))
			return fail(dx, eos_neg_errno(), "remove an extended attribute of", path);
	for (uint32_t i = 0; i < new->nxattrs; i++) {
		const struct eos_xattr *xa = &new->xattrs[i];

		if (fsetxattr(fd, xa->name, xa->value, xa->len, 0) < 0 && !xattr_ignorable(errno))
			return fail(dx, eos_neg_errno(), "set an extended attribute of", path);
	}
	return 0;
}

struct file_sink {
	int fd;
	uint64_t bytes;
};

static int
file_sink(void *ctx, const void *p, size_t len, struct eos_error *err)
{
	struct file_sink *s = ctx;
	int r = eos_export_write_all(s->fd, p, len);

	if (r < 0)
		return eos_error_set(err, r, "write: %s", strerror(-r));
	s->bytes += len;
	return 0;
}

static int
put_file(struct dirx *dx, int dirfd, const char *name, const struct eos_export_change *c)
{
	const struct eos_attr *a = &c->new.st.attr;
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, timespec_of(a->mtime_ns) };
	struct file_sink s = { .fd = -1 };
	cleanup_close int fd = -1;
	int r;

	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(dx, eos_neg_errno(), "create", c->path);
	s.fd = fd;
	r = eos_export_content(dx->x, &c->new, c->path, file_sink, &s, dx->err);
	if (r < 0)
		return eos_error_prefix(dx->err, r, "export to '%s'", dx->dest);
	if (dx->root && fchown(fd, a->uid, a->gid) < 0)
		return fail(dx, eos_neg_errno(), "change the owner of", c->path);
	if (fchmod(fd, a->mode & 07777) < 0 || futimens(fd, ts) < 0)
		return fail(dx, eos_neg_errno(), "set the attributes of", c->path);
	r = apply_xattrs(dx, fd, &(struct eos_entry){ 0 }, &c->new, c->path);
	/* New data must be on disk before the swap publishes it (linked files already are). */
	if (r == 0 && fsync(fd) < 0)
		return fail(dx, eos_neg_errno(), "sync", c->path);
	dx->x->res->files += r == 0;
	dx->x->res->bytes += r == 0 ? s.bytes : 0;
	return r;
}

static int
put_symlink(struct dirx *dx, int dirfd, const char *name, const struct eos_export_change *c)
{
	const struct eos_attr *a = &c->new.st.attr;
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, timespec_of(a->mtime_ns) };

	if (!c->new.target || symlinkat(c->new.target, dirfd, name) < 0)
		return fail(dx, c->new.target ? eos_neg_errno() : -EBADMSG, "create symlink",
			    c->path);
	if (dx->root && fchownat(dirfd, name, a->uid, a->gid, AT_SYMLINK_NOFOLLOW) < 0)
		return fail(dx, eos_neg_errno(), "change the owner of", c->path);
	if (utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return fail(dx, eos_neg_errno(), "set the mtime of", c->path);
	dx->x->res->symlinks++;
	return 0;
}

/*
 * A fifo or a device. Devices need CAP_MKNOD: without it the kernel's EPERM fails the export
 * naming the path. Linux keeps user.* xattrs off such nodes, so none are applied (as for symlinks).
 */
static int
put_node(struct dirx *dx, int dirfd, const char *name, const struct eos_export_change *c)
{
	const struct eos_attr *a = &c->new.st.attr;
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, timespec_of(a->mtime_ns) };
	enum eos_kind k = c->new.st.kind;
	char verb[64];

	snprintf(verb, sizeof(verb), "create %s", eos_kind_name(k));
	if (mknodat(dirfd, name, eos_kind_mode(k) | 0600, (dev_t)c->new.st.rdev) < 0)
		return fail(dx, eos_neg_errno(), verb, c->path);
	if (dx->root && fchownat(dirfd, name, a->uid, a->gid, AT_SYMLINK_NOFOLLOW) < 0)
		return fail(dx, eos_neg_errno(), "change the owner of", c->path);
	if (fchmodat(dirfd, name, a->mode & 07777, 0) < 0 ||
	    utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return fail(dx, eos_neg_errno(), "set the attributes of", c->path);
	dx->x->res->specials++;
	return 0;
}

/* A directory: kept when one is there already (and was at from), else created anew. */
static int
put_dir(struct dirx *dx, int dirfd, const char *name, const struct eos_export_change *c, bool keep)
{
	cleanup_close int fd = -1;
	int r;

	if (!keep && mkdirat(dirfd, name, 0700) < 0)
		return fail(dx, eos_neg_errno(), "create directory", c->path);
	fd = eos_export_fs_opendir(dirfd, name);
	if (fd < 0)
		return fail(dx, fd, "open", c->path);
	r = apply_xattrs(dx, fd, keep ? &c->old : &(struct eos_entry){ 0 }, &c->new, c->path);
	r = r ?: fixup_entry(dx, c->path, &c->new);
	dx->x->res->dirs += r == 0;
	return r;
}

/* Make name in dirfd what c->new says (or remove it). */
static int
apply_at(struct dirx *dx, int dirfd, const char *name, const struct eos_export_change *c)
{
	bool keep = false;
	struct stat sb;
	int r;

	if (c->new.st.kind == EOS_KIND_DIR && c->old.st.kind == EOS_KIND_DIR)
		keep = fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode);
	if (!keep && (r = eos_export_fs_remove(dirfd, name)) < 0)
		return fail(dx, r, "remove", c->path);
	switch (c->new.st.kind) {
	case EOS_KIND_DIR:
		return put_dir(dx, dirfd, name, c, keep);
	case EOS_KIND_FILE:
		return put_file(dx, dirfd, name, c);
	case EOS_KIND_SYMLINK:
		return put_symlink(dx, dirfd, name, c);
	case EOS_KIND_FIFO:
	case EOS_KIND_CHR:
	case EOS_KIND_BLK:
		return put_node(dx, dirfd, name, c);
	case EOS_KIND_NONE:
	case EOS_KIND_WHITEOUT:
		break;
	}
	dx->x->res->deleted++;
	return 0;
}

static int
apply_root(struct dirx *dx, const struct eos_export_change *c)
{
	int r = apply_xattrs(dx, dx->stage_fd, &c->old, &c->new, ".");

	r = r ?: fixup_entry(dx, "", &c->new);
	dx->x->res->dirs += r == 0;
	return r;
}

static int
apply_change(struct dirx *dx, const struct eos_export_change *c)
{
	cleanup_close int dirfd = -1;
	const char *name = NULL;
	int r;

	if (c->flags & EOS_EXPORT_BELOW_REMOVED)
		return 0; /* gone with the directory above it */
	if (c->path[0] == '\0')
		return c->new.st.kind == EOS_KIND_DIR ? apply_root(dx, c) : -EBADMSG;
	r = open_parent(dx, c->path, &dirfd, &name);
	return r ?: apply_at(dx, dirfd, name, c);
}

static int
apply_all(struct dirx *dx, const struct eos_export_diff *d)
{
	eos_export_progress(dx->x, 0, d->n, true);
	for (size_t i = 0; i < d->n; i++) {
		int r = apply_change(dx, &d->v[i]);

		/* Tests interrupt the export here, in the middle of the apply. */
		r = r ?: EOS_FAILPOINT("export.dir.apply");
		if (r < 0)
			return eos_error_prefix(dx->err, r, "export to '%s': apply '%s'", dx->dest,
						d->v[i].path);
		eos_export_progress(dx->x, i + 1, d->n, i + 1 == d->n);
	}
	return 0;
}

/* --- staging and swap ------------------------------------------------------------------------- */

static void
staging_name(struct dirx *dx)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	if (strlen(dx->name) <= STAGING_NAME_MAX) {
		snprintf(dx->staging, sizeof(dx->staging), ".%s.eos-export", dx->name);
		return;
	}
	for (const char *p = dx->name; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ULL;
	snprintf(dx->staging, sizeof(dx->staging), ".eos-export-%016llx", (unsigned long long)h);
}

/* Open and lock the destination's parent; remove what an interrupted export left behind. */
static int
staging_prepare(struct dirx *dx, const char *parent)
{
	int r;

	dx->parent_fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dx->parent_fd < 0)
		return fail(dx, eos_neg_errno(), "open", parent);
	if (flock(dx->parent_fd, LOCK_EX) < 0)
		return fail(dx, eos_neg_errno(), "lock", parent);
	staging_name(dx);
	if ((r = eos_export_fs_remove(dx->parent_fd, dx->staging)) < 0)
		return fail(dx, r, "remove the leftover", dx->staging);
	return 0;
}

/* The staging directory as a hard-link copy of the destination. */
static int
staging_fill(struct dirx *dx)
{
	cleanup_close int dest_fd = eos_export_fs_opendir(dx->parent_fd, dx->name);
	struct stat sb;
	int r;

	if (dest_fd < 0)
		return fail(dx, dest_fd, "open", dx->dest);
	if (fstat(dest_fd, &sb) < 0 || mkdirat(dx->parent_fd, dx->staging, 0700) < 0)
		return fail(dx, eos_neg_errno(), "create the staging directory", dx->staging);
	dx->stage_fd = eos_export_fs_opendir(dx->parent_fd, dx->staging);
	if (dx->stage_fd < 0)
		return fail(dx, dx->stage_fd, "open", dx->staging);
	eos_export_fs_copy_xattrs(dest_fd, dx->stage_fd);
	r = fixup_copied(dx, "", &sb);
	r = r ?: eos_export_fs_link_tree(dest_fd, dx->stage_fd, fixup_copied, dx, dx->err);
	if (r < 0)
		return eos_error_prefix(dx->err, r, "export to '%s': copy the destination",
					dx->dest);
	return 0;
}

static int
staging_swap(struct dirx *dx)
{
	int r = EOS_FAILPOINT("export.dir.swap");

	if (r < 0)
		return eos_error_set(dx->err, r, "export to '%s': swap: failpoint", dx->dest);
	if (fsync(dx->stage_fd) < 0)
		return fail(dx, eos_neg_errno(), "sync", dx->staging);
	if (renameat2(dx->parent_fd, dx->staging, dx->parent_fd, dx->name, RENAME_EXCHANGE) < 0)
		return fail(dx, eos_neg_errno(), "swap in", dx->staging);
	(void)fsync(dx->parent_fd);
	return 0;
}

static int
dir_run(struct dirx *dx, const struct eos_export_diff *d)
{
	int r = staging_fill(dx);

	r = r ?: apply_all(dx, d);
	r = r ?: fixups_apply(dx);
	r = r ?: staging_swap(dx);
	/*
	 * Either the unfinished staging tree or, after the swap, the old destination. Should this
	 * fail, the next export into the destination removes the leftover.
	 */
	(void)eos_export_fs_remove(dx->parent_fd, dx->staging);
	return r;
}

int
eos_export_dir(struct eos_export *x, const struct eos_export_diff *d, const char *dest_dir,
	       struct eos_error *err)
{
	EOS_CLEANUP(dirx_release)
	struct dirx dx = { .x = x, .dest = dest_dir, .parent_fd = -1, .stage_fd = -1, .err = err };
	const char *slash = strrchr(dest_dir, '/');
	cleanup_free char *parent = NULL;
	int r;

	if (!slash || !slash[1])
		return eos_error_set(err, -EINVAL, "export to '%s': not a directory name",
				     dest_dir);
	parent = slash == dest_dir ? strdup("/") : strndup(dest_dir, (size_t)(slash - dest_dir));
	if (!parent)
		return -ENOMEM;
	dx.name = slash + 1;
	dx.root = geteuid() == 0;
	r = staging_prepare(&dx, parent);
	if (r < 0 || d->n == 0)
		return r;
	return dir_run(&dx, d);
}
