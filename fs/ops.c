/* SPDX-License-Identifier: MIT */
/*
 * fs/ops: the FUSE low-level operation table. Each handler converts arguments, calls the view
 * (fs/namespace.c, fs/file.c, …) and replies; mounting and serving are in fs/fuse-mount.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "common/path.h"

#include "fs/ops-internal.h"

static const double TIMEOUT = 86400.0; /* only eos changes a view: cache for a day */

static struct eos_view_mount *
mount_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct eos_view *
view_of(fuse_req_t req)
{
	return mount_of(req)->view;
}

/* Attributes as this mount shows them. */
static int
getattr_shown(fuse_req_t req, struct eos_node *n, struct stat *st)
{
	int r = eos_fs_getattr(view_of(req), n, st);

	if (r == 0)
		eos_owners_show(&mount_of(req)->owners, st);
	return r;
}

static struct eos_node *
node_of(fuse_req_t req, fuse_ino_t ino)
{
	return eos_node_get(view_of(req), ino);
}

/* The caller, with the ids its new nodes are recorded with. */
static struct eos_ctx
ctx_of(fuse_req_t req)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct eos_ctx ctx = { .uid = c->uid, .gid = c->gid, .pid = c->pid };

	eos_owners_creator(&mount_of(req)->owners, &ctx);
	return ctx;
}

static struct eos_handle *
handle_of(struct fuse_file_info *fi)
{
	return (struct eos_handle *)(uintptr_t)fi->fh;
}

/*
 * The handle of fi into *ret: its own, or for a file the kernel opened without an OPEN (fh 0,
 * see serve_open) tmp, a transient handle for this request (end it with handle_end).
 */
static int
handle_begin(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct eos_handle *tmp,
	     struct eos_handle **ret)
{
	struct eos_node *n;
	int r;

	*ret = handle_of(fi);
	if (*ret)
		return 0;
	n = node_of(req, ino);
	r = n ? eos_fs_transient_begin(view_of(req), n, fuse_req_ctx(req)->pid, tmp) : -ESTALE;
	*ret = r < 0 ? NULL : tmp;
	return r;
}

/*
 * After the reply (req is gone then, and a handle of fi's own may be released already: only a
 * transient one, tmp, is looked at).
 */
static void
handle_end(struct eos_view *v, const struct eos_handle *h, struct eos_handle *tmp)
{
	if (h == tmp)
		eos_fs_transient_end(v, tmp);
}

/* Reply with the entry of n, which holds one new kernel reference. */
static void
reply_entry(fuse_req_t req, struct eos_node *n)
{
	struct fuse_entry_param e = { .ino = n->ino,
				      .attr_timeout = TIMEOUT,
				      .entry_timeout = TIMEOUT };
	int r = getattr_shown(req, n, &e.attr);

	if (r < 0) {
		eos_node_forget(view_of(req), n->ino, 1);
		fuse_reply_err(req, -r);
		return;
	}
	fuse_reply_entry(req, &e);
}

#define NODE_OR_FAIL(n, req, ino)                    \
	struct eos_node *n = node_of(req, ino);      \
	do {                                         \
		if (!n) {                            \
			fuse_reply_err(req, ESTALE); \
			return;                      \
		}                                    \
	} while (0)

static void
serve_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	NODE_OR_FAIL(p, req, parent);
	struct eos_node *n;
	int r = strlen(name) > EOS_NAME_MAX ? -ENAMETOOLONG
					    : eos_fs_lookup(view_of(req), p, name, &n);

	if (r == -ENOENT) {
		struct fuse_entry_param e = { .entry_timeout = TIMEOUT };

		fuse_reply_entry(req, &e); /* a cached negative entry */
		return;
	}
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_entry(req, n);
}

static void
serve_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	eos_node_forget(view_of(req), ino, nlookup);
	fuse_reply_none(req);
}

static void
serve_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		eos_node_forget(view_of(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void
serve_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	NODE_OR_FAIL(n, req, ino);
	struct stat st;
	int r = getattr_shown(req, n, &st);

	(void)fi;
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, TIMEOUT);
}

static unsigned
setattr_valid(int to_set)
{
	static const struct {
		int fuse;
		unsigned eos;
	} map[] = {
		{ FUSE_SET_ATTR_MODE, EOS_SET_MODE },
		{ FUSE_SET_ATTR_UID, EOS_SET_UID },
		{ FUSE_SET_ATTR_GID, EOS_SET_GID },
		{ FUSE_SET_ATTR_SIZE, EOS_SET_SIZE },
		{ FUSE_SET_ATTR_ATIME, EOS_SET_ATIME },
		{ FUSE_SET_ATTR_MTIME, EOS_SET_MTIME },
		{ FUSE_SET_ATTR_ATIME_NOW, EOS_SET_ATIME_NOW },
		{ FUSE_SET_ATTR_MTIME_NOW, EOS_SET_MTIME_NOW },
		{ FUSE_SET_ATTR_CTIME, EOS_SET_CTIME },
	};
	unsigned valid = 0;

	for (size_t i = 0; i < EOS_ARRAY_SIZE(map); i++)
		if (to_set & map[i].fuse)
			valid |= map[i].eos;
	return valid;
}

static void
serve_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
	      struct fuse_file_info *fi)
{
	NODE_OR_FAIL(n, req, ino);
	const struct eos_owners *o = &mount_of(req)->owners;
	unsigned valid = eos_owners_setattr(o, attr, setattr_valid(to_set));
	struct stat st;
	int r = 0;

	(void)fi;
	if (mount_of(req)->killpriv_v2 && to_set & FUSE_SET_ATTR_KILL_SUID) {
		/* a chown, or a truncate by a caller without CAP_FSETID: clear the set-ID bits */
		r = valid & EOS_SET_MODE ? 0 : eos_fs_getattr(view_of(req), n, &st);
		if (r == 0 && !(valid & EOS_SET_MODE))
			attr->st_mode = st.st_mode;
		if (eos_owners_killed_mode(attr->st_mode) != attr->st_mode) {
			attr->st_mode = eos_owners_killed_mode(attr->st_mode);
			valid |= EOS_SET_MODE;
		}
	}
	r = r ?: eos_fs_setattr(view_of(req), n, attr, valid, &st);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	eos_owners_show(o, &st);
	fuse_reply_attr(req, &st, TIMEOUT);
}

static void
serve_readlink(fuse_req_t req, fuse_ino_t ino)
{
	NODE_OR_FAIL(n, req, ino);
	cleanup_free char *target = NULL;
	int r = eos_fs_readlink(view_of(req), n, &target);

	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_readlink(req, target);
}

static void
make(fuse_req_t req, fuse_ino_t parent, const char *name, uint32_t mode, const char *target)
{
	NODE_OR_FAIL(p, req, parent);
	struct eos_ctx ctx = ctx_of(req);
	struct eos_node *n;
	int r = strlen(name) > EOS_NAME_MAX
			? -ENAMETOOLONG
			: eos_fs_make(view_of(req), &ctx, p, name, mode, target, &n);

	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_entry(req, n);
}

static void
serve_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	NODE_OR_FAIL(p, req, parent);
	struct eos_ctx ctx = ctx_of(req);
	struct eos_node *n;
	int r = strlen(name) > EOS_NAME_MAX
			? -ENAMETOOLONG
			: eos_fs_mknod(view_of(req), &ctx, p, name, mode, rdev, &n);

	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_entry(req, n);
}

static void
serve_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make(req, parent, name, S_IFDIR | (mode & 07777), NULL);
}

static void
serve_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name)
{
	make(req, parent, name, S_IFLNK | 0777, target);
}

static void
serve_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	NODE_OR_FAIL(p, req, parent);
	fuse_reply_err(req, -eos_fs_unlink(view_of(req), p, name, false));
}

static void
serve_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	NODE_OR_FAIL(p, req, parent);
	fuse_reply_err(req, -eos_fs_unlink(view_of(req), p, name, true));
}

static void
serve_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	     const char *newname, unsigned int flags)
{
	NODE_OR_FAIL(p1, req, parent);
	NODE_OR_FAIL(p2, req, newparent);
	unsigned f = 0;

	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (flags & RENAME_NOREPLACE)
		f |= EOS_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		f |= EOS_RENAME_EXCHANGE;
	if (strlen(newname) > EOS_NAME_MAX) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	fuse_reply_err(req, -eos_fs_rename(view_of(req), p1, name, p2, newname, f));
}

static void
serve_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	NODE_OR_FAIL(n, req, ino);
	NODE_OR_FAIL(p, req, newparent);
	int r = strlen(newname) > EOS_NAME_MAX ? -ENAMETOOLONG
					       : eos_fs_link(view_of(req), n, p, newname);

	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_entry(req, n);
}

static void
open_reply(struct fuse_file_info *fi, struct eos_handle *h)
{
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->keep_cache = 1;
	fi->noflush = 1;
}

/*
 * Clear n's set-ID bits on the kernel's word (killpriv_v2: a WRITE or an OPEN with O_TRUNC by a
 * caller without CAP_FSETID). The kernel keeps the mode it had cached (a stat asking only for
 * the mode would show it): have it forget n's attributes, not its pages, whose locks the
 * request may hold.
 */
static int
killed(fuse_req_t req, struct eos_node *n)
{
	int r = eos_owners_kill_setid(view_of(req), n);

	if (r > 0)
		fuse_lowlevel_notify_inval_inode(mount_of(req)->se, n->ino, -1, 0);
	return r < 0 ? r : 0;
}

static void
serve_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	NODE_OR_FAIL(n, req, ino);
	struct eos_ctx ctx = ctx_of(req);
	struct eos_handle *h;
	int r;

	if (mount_of(req)->no_open) {
		/* the kernel takes this as a success and opens files without asking from now on:
		 * each request on them gets a transient handle (handle_begin) */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	r = eos_fs_open(view_of(req), &ctx, n, fi->flags, &h);

	if (r == 0 && fi->flags & O_TRUNC && mount_of(req)->killpriv_v2) {
		r = eos_mount_request_kills() & EOS_KILL_OPEN ? killed(req, n) : 0;
		if (r < 0)
			eos_fs_release(view_of(req), h);
	} else if (r == 0 && fi->flags & O_TRUNC) {
		r = eos_owners_truncated(view_of(req), n, ctx.pid);
		if (r < 0)
			eos_fs_release(view_of(req), h);
	}
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	open_reply(fi, h);
	if (fuse_reply_open(req, fi) < 0)
		eos_fs_release(view_of(req), h);
}

static void
serve_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	     struct fuse_file_info *fi)
{
	NODE_OR_FAIL(p, req, parent);
	struct eos_ctx ctx = ctx_of(req);
	struct fuse_entry_param e = { .attr_timeout = TIMEOUT, .entry_timeout = TIMEOUT };
	struct eos_handle *h;
	struct eos_node *n;
	int r;

	if (mount_of(req)->no_open) {
		/* the kernel makes the file with a MKNOD then, and opens it without asking (no
		 * RELEASE either), as every other file: from now on */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	r = strlen(name) > EOS_NAME_MAX
		    ? -ENAMETOOLONG
		    : eos_fs_make(view_of(req), &ctx, p, name, S_IFREG | (mode & 07777), NULL, &n);

	if (r == -EEXIST && !(fi->flags & O_EXCL))
		r = -EEXIST; /* the kernel looked it up first: a race with another creator */
	r = r ?: eos_fs_open(view_of(req), &ctx, n, fi->flags & ~O_TRUNC, &h);
	r = r ?: getattr_shown(req, n, &e.attr);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	e.ino = n->ino;
	open_reply(fi, h);
	if (fuse_reply_create(req, &e, fi) < 0)
		eos_fs_release(view_of(req), h);
}

static void
read_reply(fuse_req_t req, struct eos_handle *h, size_t size, off_t off)
{
	int fd = eos_fs_read_fd(h);
	cleanup_free char *buf = NULL;
	ssize_t got;

	if (fd >= 0) {
		struct fuse_bufvec bv = FUSE_BUFVEC_INIT(size);

		bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
		bv.buf[0].fd = fd;
		bv.buf[0].pos = off;
		fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
		return;
	}
	buf = malloc(size ? size : 1);
	got = buf ? eos_fs_read(view_of(req), h, buf, size, (uint64_t)off) : -ENOMEM;
	if (got < 0)
		fuse_reply_err(req, got == -EBADMSG ? EIO : (int)-got);
	else
		fuse_reply_buf(req, buf, (size_t)got);
}

static void
serve_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct eos_view *v = view_of(req);
	struct eos_handle tmp, *h;
	int r = handle_begin(req, ino, fi, &tmp, &h);

	/* the data file stays open until the reply is sent */
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		read_reply(req, h, size, off);
	handle_end(v, h, &tmp);
}

static void
serve_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	    struct fuse_file_info *fi)
{
	struct eos_view *v = view_of(req);
	struct eos_handle tmp, *h;
	ssize_t got = handle_begin(req, ino, fi, &tmp, &h);

	/* a caller without CAP_FSETID writes: clear the set-ID bits first (killpriv_v2) */
	if (got == 0 && mount_of(req)->killpriv_v2 && eos_mount_request_kills() & EOS_KILL_WRITE)
		got = killed(req, h->node);
	got = got ?: eos_fs_write(view_of(req), h, buf, size, (uint64_t)off);
	if (got < 0)
		fuse_reply_err(req, (int)-got);
	else
		fuse_reply_write(req, (size_t)got);
	handle_end(v, h, &tmp);
}

static void
serve_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	/* nothing to do at a close (the journal holds every write): ENOSYS, and the kernel sends
	 * no FLUSH again (it writes cached pages back before asking, with the writeback cache) */
	fuse_reply_err(req, ENOSYS);
}

static void
serve_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	if (handle_of(fi))
		eos_fs_release(view_of(req), handle_of(fi));
	fuse_reply_err(req, 0);
}

static void
serve_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	NODE_OR_FAIL(n, req, ino);
	(void)fi;
	fuse_reply_err(req, -eos_fs_fsync(view_of(req), n, datasync));
}

static void
serve_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	NODE_OR_FAIL(n, req, ino);

	if (!eos_node_is_dir(n)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (view_of(req)->no_opendir) {
		fuse_reply_err(req, ENOSYS); /* the kernel stops asking: listings need no handle */
		return;
	}
	fi->fh = 0;
	fi->cache_readdir = 1; /* only this mount changes the directory: the kernel may keep it */
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/* Add one entry at offset next (plus: with a looked-up node). Returns bytes added, 0 if full. */
static size_t
add_entry(fuse_req_t req, struct eos_node *dir, const struct eos_dirent_snap *e, char *buf,
	  size_t size, off_t next, bool plus)
{
	struct stat st = { .st_ino = e->ino, .st_mode = e->type };
	struct fuse_entry_param fe = { .attr = st };
	struct eos_node *n;
	size_t len;

	if (!plus)
		return fuse_add_direntry(req, buf, size, e->name, &st, next);
	if (strcmp(e->name, ".") == 0 || strcmp(e->name, "..") == 0)
		return fuse_add_direntry_plus(req, buf, size, e->name, &fe, next);
	if ((e->lower ? eos_fs_lookup_listed(view_of(req), dir, e->name, e->lower, &n)
		      : eos_fs_lookup(view_of(req), dir, e->name, &n)) < 0)
		return SIZE_MAX; /* gone since opendir: skip it */
	fe.ino = n->ino;
	fe.attr_timeout = fe.entry_timeout = TIMEOUT;
	if (getattr_shown(req, n, &fe.attr) < 0) {
		eos_node_forget(view_of(req), n->ino, 1);
		return SIZE_MAX;
	}
	len = fuse_add_direntry_plus(req, buf, size, e->name, &fe, next);
	if (len > size)
		eos_node_forget(view_of(req), n->ino, 1);
	return len;
}

enum {
	DIRENT_MIN_BYTES = 32
}; /* the smallest fuse_dirent: bounds a reply's entries */

static void
readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	NODE_OR_FAIL(n, req, ino);
	struct eos_dir_snapshot batch = { 0 };
	cleanup_free char *buf = malloc(size);
	size_t used = 0;
	int r = buf ? 0 : -ENOMEM;

	if (r == 0)
		r = eos_dirlist_read(view_of(req), n, (uint64_t)EOS_MAX(off, 0),
				     size / DIRENT_MIN_BYTES + 1, &batch);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	size_t dots_n = EOS_DIRLIST_FIRST - 1; /* "." and ".." */

	/* the dots at cookies 1 and 2 (those not yet returned), then the entries */
	for (size_t i = (size_t)EOS_MIN(EOS_MAX(off, 0), (off_t)dots_n); i < dots_n + batch.n;
	     i++) {
		struct eos_dirent_snap dots = { .name = (char *)(i == 0 ? "." : ".."),
						.type = S_IFDIR,
						.ino = i == 0 ? n->ino : eos_node_parent(n),
						.cookie = i + 1 };
		const struct eos_dirent_snap *e = i < dots_n ? &dots : &batch.v[i - dots_n];
		size_t len = add_entry(req, n, e, buf + used, size - used, (off_t)e->cookie, plus);

		if (len == SIZE_MAX)
			continue;
		if (len > size - used)
			break;
		used += len;
	}
	eos_dir_snapshot_release(&batch);
	fuse_reply_buf(req, buf, used);
}

static void
serve_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	readdir_common(req, ino, size, off, false);
}

static void
serve_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	readdir_common(req, ino, size, off, true);
}

static void
serve_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	NODE_OR_FAIL(n, req, ino);
	(void)fi;
	fuse_reply_err(req, -eos_fs_fsync(view_of(req), n, datasync));
}

static void
serve_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;
	int r = eos_fs_statfs(view_of(req), &st);

	(void)ino;
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_statfs(req, &st);
}

static void
serve_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
	       int flags)
{
	NODE_OR_FAIL(n, req, ino);
	fuse_reply_err(req, -eos_xattr_set(view_of(req), n, name, value, size, flags));
}

static void
reply_xattr(fuse_req_t req, size_t size, ssize_t r, const char *buf)
{
	if (r < 0)
		fuse_reply_err(req, (int)-r);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)r);
	else
		fuse_reply_buf(req, buf, (size_t)r);
}

static void
serve_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	NODE_OR_FAIL(n, req, ino);
	cleanup_free char *buf = size ? malloc(size) : NULL;

	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	reply_xattr(req, size, eos_xattr_get(view_of(req), n, name, buf, size), buf);
}

static void
serve_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	NODE_OR_FAIL(n, req, ino);
	cleanup_free char *buf = size ? malloc(size) : NULL;

	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	reply_xattr(req, size, eos_xattr_list(view_of(req), n, buf, size), buf);
}

static void
serve_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	NODE_OR_FAIL(n, req, ino);
	fuse_reply_err(req, -eos_xattr_set(view_of(req), n, name, NULL, 0, 0));
}

static void
serve_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
		struct fuse_file_info *fi)
{
	struct eos_view *v = view_of(req);
	struct eos_handle tmp, *h;
	int r = handle_begin(req, ino, fi, &tmp, &h);

	fuse_reply_err(
		req, -(r ?: eos_fs_fallocate(view_of(req), h, mode, (uint64_t)off, (uint64_t)len)));
	handle_end(v, h, &tmp);
}

static void
serve_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in, struct fuse_file_info *fi_in,
		      fuse_ino_t ino_out, off_t off_out, struct fuse_file_info *fi_out, size_t len,
		      int flags)
{
	struct eos_view *v = view_of(req);
	struct eos_handle tmp_in, tmp_out, *in = NULL, *out = NULL;
	ssize_t got = flags ? -EINVAL : handle_begin(req, ino_in, fi_in, &tmp_in, &in);

	if (got < 0) {
		fuse_reply_err(req, (int)-got);
		return;
	}
	got = handle_begin(req, ino_out, fi_out, &tmp_out, &out);
	got = got
		      ?: eos_fs_copy_range(view_of(req), in, (uint64_t)off_in, out,
					   (uint64_t)off_out, len);
	if (got < 0)
		fuse_reply_err(req, (int)-got);
	else
		fuse_reply_write(req, (size_t)got);
	handle_end(v, in, &tmp_in);
	handle_end(v, out, &tmp_out);
}

static void
serve_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi)
{
	struct eos_view *v = view_of(req);
	struct eos_handle tmp, *h;
	int64_t r = handle_begin(req, ino, fi, &tmp, &h);

	r = r ?: eos_fs_lseek(view_of(req), h, off, whence);
	if (r < 0)
		fuse_reply_err(req, (int)-r);
	else
		fuse_reply_lseek(req, (off_t)r);
	handle_end(v, h, &tmp);
}

static void
op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct eos_view_mount *m = userdata;
	struct eos_view *v = m->view;

	v->no_opendir = conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT;
	v->writeback = v->writeback && conn->capable & FUSE_CAP_WRITEBACK_CACHE;
	/* no OPEN and RELEASE for each open file: a read from the page cache asks nothing; writes
	 * are attributed per WRITE (its pid), so not with the writeback cache, whose writes come
	 * from the kernel */
	m->no_open = !v->writeback && conn->capable & FUSE_CAP_NO_OPEN_SUPPORT;
	conn->want |= conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT;
	conn->want |= conn->capable & (FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_CACHE_SYMLINKS |
				       FUSE_CAP_READDIRPLUS | FUSE_CAP_PARALLEL_DIROPS);
	/* without an OPEN, open(O_TRUNC) must truncate through a SETATTR (the kernel's) */
	if (m->no_open)
		conn->want &= ~(unsigned)FUSE_CAP_ATOMIC_O_TRUNC;
	if (m->host_served)
		conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
	else
		conn->want |= conn->capable & (FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
	/* the kernel clears set-user-ID and set-group-ID on write, truncate and chown as on ext4,
	 * sending the new mode in a SETATTR, unless HANDLE_KILLPRIV leaves it to the view (which
	 * libfuse asks for by default); the truncate of open(O_TRUNC) is the view's (op_open) */
	conn->want &= ~(unsigned)FUSE_CAP_HANDLE_KILLPRIV;
	/* always readdirplus: a listing brings every entry's attributes, so the walk that follows
	 * (find, git status, make) is answered from the kernel's cache; "auto" lists first without
	 * them and costs one LOOKUP or GETATTR per entry on the next pass */
	conn->want &= ~(unsigned)FUSE_CAP_READDIRPLUS_AUTO;
	if (v->writeback)
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	conn->max_background = 64;
}

/* --- the gate (fs/gate.c): every request passes it ------------------------------------------- */

/* op_<name>(params): serve_<name>(args) behind the gate, as a reader or a writer of the view. */
#define GATED(kind, name, params, args)            \
	static void op_##name params               \
	{                                          \
		struct eos_view *v = view_of(req); \
                                                   \
		if (eos_gate_##kind##_enter(v))    \
			serve_##name args;         \
		else                               \
			fuse_reply_err(req, EIO);  \
		eos_gate_##kind##_leave(v);        \
	}

GATED(read, lookup, (fuse_req_t req, fuse_ino_t parent, const char *name), (req, parent, name))

GATED(read, forget, (fuse_req_t req, fuse_ino_t ino, uint64_t nlookup), (req, ino, nlookup))

GATED(read, forget_multi, (fuse_req_t req, size_t count, struct fuse_forget_data *forgets),
      (req, count, forgets))

GATED(read, getattr, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi), (req, ino, fi))

GATED(write, setattr,
      (fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi),
      (req, ino, attr, to_set, fi))

GATED(read, readlink, (fuse_req_t req, fuse_ino_t ino), (req, ino))

GATED(write, mknod, (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev),
      (req, parent, name, mode, rdev))

GATED(write, mkdir, (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode),
      (req, parent, name, mode))

GATED(write, symlink, (fuse_req_t req, const char *target, fuse_ino_t parent, const char *name),
      (req, target, parent, name))

GATED(write, unlink, (fuse_req_t req, fuse_ino_t parent, const char *name), (req, parent, name))

GATED(write, rmdir, (fuse_req_t req, fuse_ino_t parent, const char *name), (req, parent, name))

GATED(write, rename,
      (fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
       const char *newname, unsigned int flags),
      (req, parent, name, newparent, newname, flags))

GATED(write, link, (fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname),
      (req, ino, newparent, newname))

GATED(write, create,
      (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi),
      (req, parent, name, mode, fi))

GATED(read, read,
      (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi),
      (req, ino, size, off, fi))

GATED(write, write,
      (fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
       struct fuse_file_info *fi),
      (req, ino, buf, size, off, fi))

GATED(read, flush, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi), (req, ino, fi))

GATED(read, release, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi), (req, ino, fi))

GATED(write, fsync, (fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi),
      (req, ino, datasync, fi))

GATED(read, opendir, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi), (req, ino, fi))

GATED(read, readdir,
      (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi),
      (req, ino, size, off, fi))

GATED(read, readdirplus,
      (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi),
      (req, ino, size, off, fi))

GATED(write, fsyncdir, (fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi),
      (req, ino, datasync, fi))

GATED(read, statfs, (fuse_req_t req, fuse_ino_t ino), (req, ino))

GATED(write, setxattr,
      (fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size, int flags),
      (req, ino, name, value, size, flags))

GATED(read, getxattr, (fuse_req_t req, fuse_ino_t ino, const char *name, size_t size),
      (req, ino, name, size))

GATED(read, listxattr, (fuse_req_t req, fuse_ino_t ino, size_t size), (req, ino, size))

GATED(write, removexattr, (fuse_req_t req, fuse_ino_t ino, const char *name), (req, ino, name))

GATED(write, fallocate,
      (fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len, struct fuse_file_info *fi),
      (req, ino, mode, off, len, fi))

GATED(write, copy_file_range,
      (fuse_req_t req, fuse_ino_t ino_in, off_t off_in, struct fuse_file_info *fi_in,
       fuse_ino_t ino_out, off_t off_out, struct fuse_file_info *fi_out, size_t len, int flags),
      (req, ino_in, off_in, fi_in, ino_out, off_out, fi_out, len, flags))

GATED(read, lseek,
      (fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi),
      (req, ino, off, whence, fi))

/* An open for reading changes nothing; one for writing may copy up or truncate. */
static void
op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct eos_view *v = view_of(req);
	bool writes = (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC);

	if (writes ? eos_gate_write_enter(v) : eos_gate_read_enter(v))
		serve_open(req, ino, fi);
	else
		fuse_reply_err(req, EIO);
	if (writes)
		eos_gate_write_leave(v);
	else
		eos_gate_read_leave(v);
}

const struct fuse_lowlevel_ops eos_fs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.symlink = op_symlink,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.fallocate = op_fallocate,
	.copy_file_range = op_copy_file_range,
	.lseek = op_lseek,
};
