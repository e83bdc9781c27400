/* SPDX-License-Identifier: MIT */
/*
 * eos_store_import(): source detection, the directory importer, and the steps shared with the
 * tar importer. Problem lists, progress and the worker pool are in store/import-pool.c. See
 * store/import.h.
 */
#include "store/import.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/path.h"

#include "store/changeset.h"
#include "store/kv.h"
#include "store/store-internal.h"

#if HAVE_DECL_SYS_OPENAT2
#include <linux/openat2.h>
#endif

enum {
	FILE_OPEN_FLAGS = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
	DIR_OPEN_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
};

enum {
	GROW_MIN = 64, /* first capacity of the walk's arrays */
};

int
eos_import_sys_fail(struct eos_error *err, const char *op, const char *path)
{
	int r = eos_neg_errno();

	return eos_error_set(err, r, "%s '%s': %s", op, path, strerror(-r));
}

int
eos_import_no_memory(struct eos_error *err)
{
	return eos_error_set(err, -ENOMEM, "out of memory");
}

/* --- host files ------------------------------------------------------------------------------- */

struct eos_attr
eos_import_attr_from_stat(const struct stat *sb)
{
	return (struct eos_attr){
		.mode = sb->st_mode & 07777,
		.uid = sb->st_uid,
		.gid = sb->st_gid,
		.mtime_ns = eos_import_time_ns(sb->st_mtim.tv_sec, sb->st_mtim.tv_nsec),
	};
}

static int
open_nofollow(int root_fd, const char *path)
{
	int fd = openat(root_fd, path, FILE_OPEN_FLAGS);

	return fd >= 0 ? fd : eos_neg_errno();
}

#if HAVE_DECL_SYS_OPENAT2
/* openat2 needs Linux 5.6; older kernels (ENOSYS) and seccomp filters (EPERM) fall back. */
int
eos_import_open_beneath(int root_fd, const char *path)
{
	struct open_how how = {
		.flags = FILE_OPEN_FLAGS,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
	};
	long fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));

	if (fd >= 0)
		return (int)fd;
	if (errno != ENOSYS && errno != EPERM)
		return eos_neg_errno();
	return open_nofollow(root_fd, path);
}
#else
int
eos_import_open_beneath(int root_fd, const char *path)
{
	return open_nofollow(root_fd, path);
}
#endif

/* --- extended attributes --------------------------------------------------------------------- */

enum {
	XATTR_LIST_MAX_BYTES = 65536,
};

int
eos_import_open_seen(int root_fd, const char *path, dev_t dev, ino_t ino, int *ret_fd,
		     struct stat *sb, struct eos_error *err)
{
	cleanup_close int fd = eos_import_open_beneath(root_fd, path);

	if (fd < 0)
		return eos_error_set(err, fd, "open '%s': %s", path, strerror(-fd));
	if (fstat(fd, sb) < 0)
		return eos_import_sys_fail(err, "stat", path);
	if (!S_ISREG(sb->st_mode) || sb->st_dev != dev || sb->st_ino != ino)
		return eos_error_set(err, -EAGAIN, "'%s' changed during the import", path);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

static int
copy_one_xattr(struct eos_changeset *cs, const char *path, int fd, const char *name,
	       struct eos_error *err)
{
	cleanup_free uint8_t *value = malloc(EOS_XATTR_VALUE_MAX);
	ssize_t n;

	if (!value)
		return eos_error_set(err, -ENOMEM, "import: out of memory");
	n = fgetxattr(fd, name, value, EOS_XATTR_VALUE_MAX);
	if (n < 0 && errno == ENODATA)
		return 0; /* removed since it was listed */
	if (n < 0)
		return eos_error_set(err, eos_neg_errno(), "read xattr '%s' of '%s': %m", name,
				     path);
	return eos_changeset_set_xattr(cs, path, name, value, (size_t)n, err);
}

int
eos_import_copy_xattrs(struct eos_changeset *cs, const char *path, int fd, struct eos_error *err)
{
	cleanup_free char *names = malloc(XATTR_LIST_MAX_BYTES);
	ssize_t n;

	if (!names)
		return eos_error_set(err, -ENOMEM, "import: out of memory");
	n = flistxattr(fd, names, XATTR_LIST_MAX_BYTES);
	if (n < 0 && errno == ENOTSUP)
		return 0;
	if (n < 0)
		return eos_error_set(err, eos_neg_errno(), "list xattrs of '%s': %m", path);
	for (const char *name = names; name < names + n; name += strlen(name) + 1) {
		int r;

		if (strncmp(name, "user.", 5) != 0)
			continue;
		r = copy_one_xattr(cs, path, fd, name, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* --- shared steps ----------------------------------------------------------------------------- */

unsigned
eos_import_threads(const struct eos_import_options *o)
{
	long n = o && o->threads ? (long)o->threads : sysconf(_SC_NPROCESSORS_ONLN);

	return (unsigned)EOS_MAX(1, EOS_MIN(n, (long)EOS_IMPORT_THREADS_MAX));
}

int64_t
eos_import_time_ns(int64_t sec, long nsec)
{
	const int64_t limit = INT64_MAX / 1000000000 - 1;

	if (sec > limit)
		return INT64_MAX;
	if (sec < -limit)
		return INT64_MIN;
	return sec * 1000000000 + nsec;
}

int
eos_import_begin(struct eos_store *st, const struct eos_import_options *o, const char *source,
		 const struct eos_attr *root, struct eos_changeset **ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	int r;

	r = eos_changeset_new_sandbox(st, o ? o->sandbox : NULL, source, root, &cs, err);
	if (r < 0)
		return r;
	r = eos_changeset_set_owner(cs, "import", err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(cs);
	return 0;
}

int
eos_import_commit(struct eos_changeset *cs, struct eos_import_result *ret, struct eos_error *err)
{
	struct eos_commit_result cr = { 0 };
	int r;

	r = eos_changeset_commit(cs, 0, &cr, err);
	if (r < 0)
		return r;
	snprintf(ret->sandbox, sizeof(ret->sandbox), "%s", eos_changeset_sandbox(cs));
	ret->version = cr.version;
	return 0;
}

/* --- directory walk --------------------------------------------------------------------------- */

struct walk_dir {
	char *path;
	struct eos_attr attr;
};

/* An entry without content: a symlink, a fifo or a device. */
struct walk_leaf {
	char *path;
	char *target; /* symlinks */
	struct eos_attr attr;
	enum eos_kind kind;
	uint64_t rdev; /* devices */
};

struct walk_file {
	char *path;
	uint64_t size;
	dev_t dev;
	ino_t ino;
	bool multi;	/* st_nlink > 1: may have further names */
	bool git_index; /* a work tree's or submodule's index: staged after the others */
	size_t link_to; /* index of the first name of this inode, or SIZE_MAX */
};

struct walk {
	struct walk_dir *dirs;
	size_t ndirs, cap_dirs;
	struct walk_leaf *syms;
	size_t nsyms, cap_syms, nnodes; /* nnodes of the leaves are fifos and devices */
	struct walk_file *files;
	size_t nfiles, cap_files;
	uint64_t nlinks;
	struct eos_import_problems specials, unreadable;
	struct eos_import_result *ret; /* sockets go to its skipped list */
};

static void
walk_release(struct walk *w)
{
	for (size_t i = 0; i < w->ndirs; i++)
		free(w->dirs[i].path);
	for (size_t i = 0; i < w->nsyms; i++) {
		free(w->syms[i].path);
		free(w->syms[i].target);
	}
	for (size_t i = 0; i < w->nfiles; i++)
		free(w->files[i].path);
	free(w->dirs);
	free(w->syms);
	free(w->files);
	eos_import_problems_release(&w->specials);
	eos_import_problems_release(&w->unreadable);
}

struct name_list {
	char **v;
	size_t n, cap;
};

static void
name_list_release(struct name_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in d, sorted bytewise (so imports are deterministic). */
static int
read_names(DIR *d, const char *path, struct name_list *l, struct eos_error *err)
{
	struct dirent *de;

	for (errno = 0; (de = readdir(d)); errno = 0) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (eos_buf_array_reserve(&l->v, &l->cap, l->n, sizeof(*l->v), GROW_MIN) < 0 ||
		    !(l->v[l->n] = strdup(de->d_name)))
			return eos_import_no_memory(err);
		l->n++;
	}
	if (errno != 0)
		return eos_import_sys_fail(err, "read directory", path[0] ? path : ".");
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), name_cmp);
	return 0;
}

static bool
is_denied(int e)
{
	return e == EACCES || e == EPERM;
}

static int
walk_problem(struct eos_import_problems *p, const char *path, const char *what,
	     struct eos_error *err)
{
	return eos_import_problems_add(p, path, what) < 0 ? eos_import_no_memory(err) : 0;
}

static int walk_dir(struct walk *w, int fd, const char *path, struct eos_error *err);

static int
walk_subdir(struct walk *w, int dfd, const char *name, char **path, const struct stat *sb,
	    struct eos_error *err)
{
	int fd = openat(dfd, name, DIR_OPEN_FLAGS);
	struct walk_dir *d;

	if (fd < 0 && is_denied(errno))
		return walk_problem(&w->unreadable, *path, "directory", err);
	if (fd < 0)
		return errno == ENOENT ? 0 : eos_import_sys_fail(err, "open", *path);
	if (eos_buf_array_reserve(&w->dirs, &w->cap_dirs, w->ndirs, sizeof(*d), GROW_MIN) < 0) {
		close(fd);
		return eos_import_no_memory(err);
	}
	d = &w->dirs[w->ndirs++];
	d->path = TAKE_PTR(*path);
	d->attr = eos_import_attr_from_stat(sb);
	return walk_dir(w, fd, d->path, err);
}

static int
walk_file(struct walk *w, int dfd, const char *name, char **path, const struct stat *sb,
	  struct eos_error *err)
{
	int fd = openat(dfd, name, FILE_OPEN_FLAGS);
	struct walk_file *f;

	/* Opened once here so that unreadable files are all found before any data is read. */
	if (fd < 0 && is_denied(errno))
		return walk_problem(&w->unreadable, *path, NULL, err);
	if (fd < 0)
		return errno == ENOENT ? 0 : eos_import_sys_fail(err, "open", *path);
	close(fd);
	if (eos_buf_array_reserve(&w->files, &w->cap_files, w->nfiles, sizeof(*f), GROW_MIN) < 0)
		return eos_import_no_memory(err);
	f = &w->files[w->nfiles++];
	*f = (struct walk_file){
		.path = TAKE_PTR(*path),
		.size = (uint64_t)sb->st_size,
		.dev = sb->st_dev,
		.ino = sb->st_ino,
		.multi = sb->st_nlink > 1,
		.link_to = SIZE_MAX,
	};
	f->git_index = !f->multi &&
		       (eos_import_is_git_index(f->path) || eos_import_is_module_index(f->path));
	return 0;
}

static int
walk_symlink(struct walk *w, int dfd, const char *name, char **path, const struct stat *sb,
	     struct eos_error *err)
{
	size_t size = sb->st_size > 0 ? (size_t)sb->st_size : EOS_PATH_MAX;
	cleanup_free char *target = malloc(size + 1);
	struct walk_leaf *s;
	ssize_t n;

	if (!target)
		return eos_import_no_memory(err);
	n = readlinkat(dfd, name, target, size + 1);
	if (n < 0)
		return errno == ENOENT ? 0 : eos_import_sys_fail(err, "read symlink", *path);
	if ((size_t)n > size)
		return eos_error_set(err, -EAGAIN, "'%s' changed during the import", *path);
	target[n] = '\0';
	if (eos_buf_array_reserve(&w->syms, &w->cap_syms, w->nsyms, sizeof(*s), GROW_MIN) < 0)
		return eos_import_no_memory(err);
	s = &w->syms[w->nsyms++];
	*s = (struct walk_leaf){ .path = TAKE_PTR(*path),
				 .target = TAKE_PTR(target),
				 .attr = eos_import_attr_from_stat(sb),
				 .kind = EOS_KIND_SYMLINK };
	return 0;
}

/* A fifo or a device: its type, attributes and device number only (it is never opened). */
static int
walk_node(struct walk *w, char **path, const struct stat *sb, struct eos_error *err)
{
	enum eos_kind kind = eos_kind_of_mode(sb->st_mode);

	if (eos_buf_array_reserve(&w->syms, &w->cap_syms, w->nsyms, sizeof(*w->syms), GROW_MIN) < 0)
		return eos_import_no_memory(err);
	w->syms[w->nsyms++] = (struct walk_leaf){
		.path = TAKE_PTR(*path),
		.attr = eos_import_attr_from_stat(sb),
		.kind = kind,
		.rdev = eos_kind_has_rdev(kind) ? (uint64_t)sb->st_rdev : 0,
	};
	w->nnodes++;
	return 0;
}

static int
walk_entry(struct walk *w, int dfd, const char *parent, const char *name, struct eos_error *err)
{
	cleanup_free char *path = NULL;
	struct stat sb;
	int r;

	if (eos_path_join(parent, name, &path) < 0)
		return eos_import_no_memory(err);
	r = eos_name_check(name, strlen(name), err);
	if (r < 0)
		return eos_error_prefix(err, r, "'%s'", path);
	if (strlen(path) > EOS_PATH_MAX)
		return eos_error_set(err, -ENAMETOOLONG, "path '%.60s…' is longer than %d bytes",
				     path, EOS_PATH_MAX);
	if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
		if (is_denied(errno))
			return walk_problem(&w->unreadable, path, NULL, err);
		return errno == ENOENT ? 0 : eos_import_sys_fail(err, "stat", path);
	}
	switch (sb.st_mode & S_IFMT) {
	case S_IFDIR:
		return walk_subdir(w, dfd, name, &path, &sb, err);
	case S_IFREG:
		return walk_file(w, dfd, name, &path, &sb, err);
	case S_IFLNK:
		return walk_symlink(w, dfd, name, &path, &sb, err);
	case S_IFIFO:
	case S_IFCHR:
	case S_IFBLK:
		return walk_node(w, &path, &sb, err);
	case S_IFSOCK:
		/* a runtime object (a stale one, too): nothing to keep */
		return eos_import_skip(w->ret, path) < 0 ? eos_import_no_memory(err) : 0;
	default:
		return walk_problem(&w->specials, path, "unknown file type", err);
	}
}

/* Walk directory fd (consumed) whose tree path is path. */
static int
walk_dir(struct walk *w, int fd, const char *path, struct eos_error *err)
{
	EOS_CLEANUP(name_list_release) struct name_list names = { 0 };
	cleanup_closedir DIR *d = fdopendir(fd);
	int r;

	if (!d) {
		r = eos_import_sys_fail(err, "open directory", path[0] ? path : ".");
		close(fd);
		return r;
	}
	r = read_names(d, path, &names, err);
	for (size_t i = 0; r >= 0 && i < names.n; i++)
		r = walk_entry(w, dirfd(d), path, names.v[i], err);
	return r;
}

/* --- directory staging ------------------------------------------------------------------------ */

struct inode_key {
	dev_t dev;
	ino_t ino;
	size_t idx;
};

static int
inode_key_cmp(const void *a, const void *b)
{
	const struct inode_key *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Point every later name of a multiply-linked inode at its first name (walk order). */
static int
walk_link_groups(struct walk *w)
{
	cleanup_free struct inode_key *keys = NULL;
	size_t n = 0;

	keys = calloc(w->nfiles ? w->nfiles : 1, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; i < w->nfiles; i++)
		if (w->files[i].multi)
			keys[n++] = (struct inode_key){ w->files[i].dev, w->files[i].ino, i };
	qsort(keys, n, sizeof(*keys), inode_key_cmp);
	for (size_t i = 1; i < n; i++) {
		size_t first = w->files[keys[i - 1].idx].link_to;

		if (keys[i].dev != keys[i - 1].dev || keys[i].ino != keys[i - 1].ino)
			continue;
		w->files[keys[i].idx].link_to = first != SIZE_MAX ? first : keys[i - 1].idx;
		w->nlinks++;
	}
	return 0;
}

/* A directory and its user.* xattrs (read through a descriptor opened beneath the root). */
static int
stage_dir(struct eos_changeset *cs, int root_fd, const char *path, const struct eos_attr *attr,
	  struct eos_error *err)
{
	cleanup_close int fd = -1;
	int r = eos_changeset_mkdir(cs, path, attr, false, err);

	if (r < 0)
		return r;
	fd = eos_import_open_beneath(root_fd, path);
	if (fd < 0)
		return eos_error_set(err, fd, "open '%s': %s", path, strerror(-fd));
	return eos_import_copy_xattrs(cs, path, fd, err);
}

static int
stage_tree(const struct walk *w, struct eos_changeset *cs, int root_fd, struct eos_error *err)
{
	int r;

	for (size_t i = 0; i < w->ndirs; i++) {
		r = stage_dir(cs, root_fd, w->dirs[i].path, &w->dirs[i].attr, err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < w->nsyms; i++) {
		const struct walk_leaf *s = &w->syms[i];

		if (s->kind == EOS_KIND_SYMLINK)
			r = eos_changeset_symlink(cs, s->path, &s->attr, s->target, err);
		else
			r = eos_changeset_mknod(cs, s->path, &s->attr, s->kind, s->rdev, err);
		if (r < 0)
			return r;
	}
	return 0;
}

struct size_key {
	uint64_t size;
	size_t idx;
};

static int
size_key_cmp(const void *a, const void *b)
{
	const struct size_key *x = a, *y = b;

	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Queue the first name of every file, biggest first so that no big file finishes last. */
static int
push_files(const struct walk *w, struct eos_import_pool *pool, struct eos_error *err)
{
	cleanup_free struct size_key *order = calloc(w->nfiles ? w->nfiles : 1, sizeof(*order));
	struct eos_attr none = { 0 };
	size_t n = 0;
	int r;

	if (!order)
		return eos_import_no_memory(err);
	for (size_t i = 0; i < w->nfiles; i++)
		if (w->files[i].link_to == SIZE_MAX && !w->files[i].git_index)
			order[n++] = (struct size_key){ w->files[i].size, i };
	qsort(order, n, sizeof(*order), size_key_cmp);
	for (size_t i = 0; i < n; i++) {
		const struct walk_file *f = &w->files[order[i].idx];
		struct eos_import_job *job =
			eos_import_job_new(EOS_IMPORT_JOB_PATH, f->path, &none);

		if (!job)
			return eos_import_no_memory(err);
		job->dev = f->dev;
		job->ino = f->ino;
		job->len = (size_t)f->size;
		if ((r = eos_import_pool_push(pool, job, err)) < 0)
			return r;
	}
	return 0;
}

/* Enter the STAGE phase with the walk's totals: the files staged with content, their sizes. */
static void
stage_totals(const struct walk *w, struct eos_import_progress *progress)
{
	uint64_t files = 0, bytes = 0;

	for (size_t i = 0; i < w->nfiles; i++) {
		if (w->files[i].link_to != SIZE_MAX)
			continue;
		files++;
		bytes += w->files[i].size;
	}
	eos_import_progress_phase(progress, EOS_IMPORT_STAGE, files, bytes);
}

static int
stage_files(const struct walk *w, struct eos_changeset *cs, int root_fd,
	    const struct eos_import_options *o, struct eos_import_progress *progress,
	    struct eos_import_result *ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_import_pool_freep) struct eos_import_pool *pool = NULL;
	int r;

	stage_totals(w, progress);
	r = eos_import_pool_new(cs, root_fd, eos_import_threads(o), EOS_IMPORT_BUDGET, &pool, err);
	if (r < 0)
		return r;
	r = push_files(w, pool, err);
	if (r < 0)
		return r;
	r = eos_import_pool_finish(pool, progress, err);
	if (r < 0)
		return r;
	eos_import_pool_counts(pool, &ret->files, &ret->bytes);
	eos_import_progress_tick(progress, ret->files, ret->bytes, true);
	return 0;
}

static int
stage_links(const struct walk *w, struct eos_changeset *cs, struct eos_error *err)
{
	for (size_t i = 0; i < w->nfiles; i++) {
		const struct walk_file *f = &w->files[i];
		int r;

		if (f->link_to == SIZE_MAX)
			continue;
		r = eos_changeset_link(cs, f->path, w->files[f->link_to].path, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The git indexes, once every file they name is staged. */
static int
stage_git_indexes(const struct walk *w, struct eos_changeset *cs, int root_fd,
		  const struct eos_import_options *o, struct eos_import_result *ret,
		  struct eos_error *err)
{
	for (size_t i = 0; i < w->nfiles; i++) {
		const struct walk_file *f = &w->files[i];
		uint64_t bytes = 0;
		size_t refreshed = 0;
		int r;

		if (!f->git_index)
			continue;
		r = eos_import_git_index(cs, root_fd, f->path, f->dev, f->ino,
					 o && o->keep_git_index, &bytes, &refreshed, err);
		if (r < 0)
			return r;
		ret->files++;
		ret->bytes += bytes;
		ret->git_entries += refreshed;
	}
	return 0;
}

static int
walk_check(const struct walk *w, struct eos_error *err)
{
	if (w->specials.total)
		return eos_import_problems_fail(&w->specials, -EINVAL,
						"file of an unknown type is not supported",
						"files of unknown types are not supported", err);
	if (w->unreadable.total)
		return eos_import_problems_fail(&w->unreadable, -EACCES, "file is unreadable",
						"files are unreadable", err);
	return 0;
}

static int
import_dir_run(struct eos_store *st, const char *src, int root_fd,
	       const struct eos_import_options *o, struct eos_import_result *ret,
	       struct eos_error *err)
{
	EOS_CLEANUP(walk_release) struct walk w = { .ret = ret };
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	cleanup_free char *source = NULL;
	struct eos_import_progress progress;
	struct eos_attr root;
	struct stat sb;
	int fd, r;

	if (fstat(root_fd, &sb) < 0 || (fd = openat(root_fd, ".", DIR_OPEN_FLAGS)) < 0)
		return eos_import_sys_fail(err, "open", src);
	root = eos_import_attr_from_stat(&sb);
	eos_import_progress_init(&progress, o);
	if ((r = walk_dir(&w, fd, "", err)) < 0 || (r = walk_check(&w, err)) < 0)
		return r;
	if (walk_link_groups(&w) < 0 || asprintf(&source, "dir:%s", src) < 0)
		return eos_import_no_memory(err);
	if ((r = eos_import_begin(st, o, source, &root, &cs, err)) < 0 ||
	    (r = stage_tree(&w, cs, root_fd, err)) < 0 ||
	    (r = stage_files(&w, cs, root_fd, o, &progress, ret, err)) < 0 ||
	    (r = stage_links(&w, cs, err)) < 0 ||
	    (r = stage_git_indexes(&w, cs, root_fd, o, ret, err)) < 0)
		return r;
	eos_import_progress_phase(&progress, EOS_IMPORT_COMMIT, 0, 0);
	if ((r = eos_import_commit(cs, ret, err)) < 0)
		return r;
	ret->dirs = w.ndirs;
	ret->symlinks = w.nsyms - w.nnodes;
	ret->specials = w.nnodes;
	ret->hardlinks = w.nlinks;
	return 0;
}

/* --- eos_store_import ------------------------------------------------------------------------- */

/* Fail early (before reading anything) when the requested id is bad or taken. */
static int
check_new_id(struct eos_store *st, const char *id, struct eos_error *err)
{
	struct eos_sandbox_info info;
	int r;

	r = eos_sandbox_id_check(id, err);
	if (r < 0)
		return eos_error_prefix(err, r, "import");
	r = eos_store_sandbox_get(st, id, &info, err);
	if (r == 0)
		return eos_error_set(err, -EEXIST, "import: sandbox '%s' already exists", id);
	if (r != -ENOENT)
		return eos_error_prefix(err, r, "import");
	eos_error_clear(err);
	return 0;
}

/* Open src without following a final symlink; *ret_abs is its absolute path. */
static int
open_source(const char *src, char **ret_abs, int *ret_fd, struct stat *ret_sb,
	    struct eos_error *err)
{
	cleanup_close int fd = -1;
	struct stat sb;

	if (lstat(src, ret_sb) < 0)
		return eos_import_sys_fail(err, "import", src);
	if (S_ISLNK(ret_sb->st_mode))
		return eos_error_set(err, -EINVAL,
				     "import '%s': is a symbolic link (import its target instead)",
				     src);
	if (!S_ISDIR(ret_sb->st_mode) && !S_ISREG(ret_sb->st_mode))
		return eos_error_set(err, -EINVAL, "'%s' is neither a directory nor a tar archive",
				     src);
	fd = open(src, S_ISDIR(ret_sb->st_mode) ? DIR_OPEN_FLAGS : FILE_OPEN_FLAGS);
	if (fd < 0)
		return eos_import_sys_fail(err, "import", src);
	if (fstat(fd, &sb) < 0)
		return eos_import_sys_fail(err, "import", src);
	if (sb.st_dev != ret_sb->st_dev || sb.st_ino != ret_sb->st_ino)
		return eos_error_set(err, -EAGAIN, "import '%s': changed while opening", src);
	*ret_abs = realpath(src, NULL);
	if (!*ret_abs)
		return eos_import_sys_fail(err, "import", src);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int
eos_store_import(struct eos_store *st, const char *src, const struct eos_import_options *opts,
		 struct eos_import_result *ret, struct eos_error *err)
{
	struct eos_import_result res = { 0 };
	cleanup_free char *abs = NULL;
	cleanup_close int fd = -1;
	struct stat sb;
	int r;

	if (!src || !src[0])
		return eos_error_set(err, -EINVAL, "import: empty source path");
	if (opts && opts->sandbox && (r = check_new_id(st, opts->sandbox, err)) < 0)
		return r;
	r = open_source(src, &abs, &fd, &sb, err);
	if (r < 0)
		return r;
	if (S_ISDIR(sb.st_mode)) {
		r = import_dir_run(st, abs, fd, opts, &res, err);
		if (r < 0)
			r = eos_error_prefix(err, r, "import '%s'", abs);
	} else {
		r = eos_import_tar(st, abs, fd, opts, &res, err);
	}
	if (r < 0 || !ret) {
		eos_import_result_release(&res);
		return r < 0 ? r : 0;
	}
	*ret = res;
	return 0;
}
