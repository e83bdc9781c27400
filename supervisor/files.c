/* SPDX-License-Identifier: MIT */
/*
 * supervisor/files: the file operations (supervisor/files.h). In a session they are plain
 * syscalls on eosd's own mount of the session's live view (<runtime>/sessions/<sb>/<id>),
 * resolved beneath the mount's root (openat2 RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), so they
 * see and make exactly what a process in the view would. Writes run on a thread of their own
 * whose id the views' resolver maps to the request's operation: FUSE reports the id of the
 * writing thread, and the view caches an id's operation for a second, so a fresh thread per
 * write keeps two requests from sharing an attribution.
 */
#include "supervisor/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/json.h"

#include "supervisor/session-internal.h"

static const char *
arg_str(const struct eosd_call *c, const char *name)
{
	return json_string_value(json_object_get(c->args, name));
}

static int
path_error(const char *path, int r, struct eos_error *err)
{
	switch (r) {
	case -EXDEV:
	case -ELOOP:
		return eos_error_set(err, -EINVAL,
				     "path '%s': leads out of the sandbox (a symlink pointing "
				     "outside it)",
				     path);
	case -ENOENT:
		return eos_error_set(err, r, "path '%s': no such file or directory", path);
	default:
		return eos_error_set(err, r, "path '%s': %s", path, strerror(-r));
	}
}

#if HAVE_DECL_SYS_OPENAT2
static int
open_beneath(int root, const char *path, int flags, mode_t mode, struct eos_error *err)
{
	struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC),
				.mode = (flags & O_CREAT) ? mode : 0,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
	long fd = syscall(SYS_openat2, root, path[0] ? path : ".", &how, sizeof(how));

	return fd >= 0 ? (int)fd : path_error(path, eos_neg_errno(), err);
}
#else
/* Without openat2, no symlink is followed at all (the catalog refuses ".." already). */
static int
open_beneath(int root, const char *path, int flags, mode_t mode, struct eos_error *err)
{
	int fd = openat(root, path[0] ? path : ".", flags | O_CLOEXEC | O_NOFOLLOW, mode);

	return fd >= 0 ? fd : path_error(path, eos_neg_errno(), err);
}
#endif

/* The session's runtime mount root (O_PATH), the gate held until eosd_session_put(). */
static int
session_root(struct eosd *d, struct eosd_call *c, struct eosd_session **ret, struct eos_error *err)
{
	struct eosd_session *s = NULL;
	int r = eosd_session_get(d, c->sandbox_id, arg_str(c, "workspace_session_id"), &s, err);
	int fd;

	r = r ?: eosd_session_runtime_mount(d, s, err);
	if (r < 0) {
		eosd_session_put(d, s);
		return r;
	}
	fd = open(s->mounts[0].path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		r = eos_error_set(err, eos_neg_errno(), "mount '%s': %m", s->mounts[0].path);
		eosd_session_put(d, s);
		return r;
	}
	*ret = s;
	return fd;
}

static int
open_regular(int root, const char *path, struct eos_error *err)
{
	cleanup_close int fd = open_beneath(root, path, O_RDONLY, 0, err);
	struct stat st;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return path_error(path, eos_neg_errno(), err);
	if (!S_ISREG(st.st_mode))
		return eos_error_set(err, S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL,
				     "path '%s': not a regular file", path);
	return TAKE_FD(fd);
}

/* Read fd to its end into l (file_read) or buf (file_edit, at most EOSD_EDIT_MAX bytes). */
static int
read_all(int fd, const char *path, struct eosd_lines *l, struct eos_buf *buf, struct eos_error *err)
{
	char block[EOSD_BLOCK];
	ssize_t n;

	while ((n = read(fd, block, sizeof(block))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return path_error(path, eos_neg_errno(), err);
		if (buf && buf->len + (size_t)n > EOSD_EDIT_MAX)
			return eos_error_set(err, -EFBIG,
					     "path '%s': above the %d MiB file_edit "
					     "takes",
					     path, EOSD_EDIT_MAX >> 20);
		if (l ? eosd_lines_feed(l, block, (size_t)n)
		      : eos_buf_append(buf, block, (size_t)n))
			return eos_error_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

static int
session_read(struct eosd *d, struct eosd_call *c, const char *path, json_t **out,
	     struct eos_error *err)
{
	struct eosd_session *s = NULL;
	cleanup_close int root = session_root(d, c, &s, err);
	cleanup_close int fd = -1;
	struct eosd_lines l;
	int r = root < 0 ? root : 0;

	if (r < 0)
		return r;
	eosd_lines_init(&l, (uint64_t)json_integer_value(json_object_get(c->args, "offset")),
			(uint64_t)json_integer_value(json_object_get(c->args, "limit")));
	fd = open_regular(root, path, err);
	r = fd < 0 ? fd : read_all(fd, path, &l, NULL, err);
	if (r == 0 && !(*out = eosd_lines_json(&l, path)))
		r = eos_error_set(err, -ENOMEM, "out of memory");
	eos_buf_release(&l.out);
	eosd_session_put(d, s);
	return r;
}

/* --- writes ------------------------------------------------------------------------------------
 */

struct write_job {
	struct eosd *d;
	int root;
	const char *path;
	const struct eos_buf *text;
	const char *owner; /* operation:<id>, or NULL: the session's own */
	int r;
	struct eos_error err;
};

/* mkdir -p of the directories above path, beneath root. */
static int
make_parents(int root, const char *path, struct eos_error *err)
{
	cleanup_free char *dir = strdup(path);
	int r = dir ? 0 : -ENOMEM;

	for (char *s = dir ? strchr(dir, '/') : NULL; s && r == 0; s = strchr(s + 1, '/')) {
		char *name;
		int fd;

		*s = '\0';
		name = strrchr(dir, '/');
		if (name)
			*name = '\0';
		fd = open_beneath(root, name ? dir : "", O_PATH | O_DIRECTORY, 0, err);
		if (name)
			*name = '/';
		if (fd >= 0 && mkdirat(fd, name ? name + 1 : dir, 0755) < 0 && errno != EEXIST)
			r = path_error(dir, eos_neg_errno(), err);
		r = fd < 0 ? fd : r;
		if (fd >= 0)
			close(fd);
		*s = '/';
	}
	return r == -ENOMEM ? eos_error_set(err, r, "out of memory") : r;
}

static int
write_file(struct write_job *j)
{
	cleanup_close int fd = -1;
	size_t off = 0;
	int r = make_parents(j->root, j->path, &j->err);

	fd = r < 0 ? r
		   : open_beneath(j->root, j->path, O_WRONLY | O_CREAT | O_TRUNC, 0644, &j->err);
	if (fd < 0)
		return fd;
	while (off < j->text->len) {
		ssize_t n = write(fd, j->text->data + off, j->text->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return path_error(j->path, eos_neg_errno(), &j->err);
		off += (size_t)n;
	}
	if (close(TAKE_FD(fd)) < 0)
		return path_error(j->path, eos_neg_errno(), &j->err);
	return 0;
}

static void *
write_thread(void *arg)
{
	struct write_job *j = arg;
	pid_t tid = gettid();

	if (j->owner && eosd_resolve_set(j->d, tid, j->owner) < 0) {
		j->r = eos_error_set(&j->err, -EBUSY, "too many file writes at once");
		return NULL;
	}
	j->r = write_file(j);
	if (j->owner)
		eosd_resolve_clear(j->d, tid);
	return NULL;
}

static int
session_write_text(struct eosd *d, struct eosd_call *c, struct eosd_session *s, int root,
		   const char *path, const struct eos_buf *text, json_t **out,
		   struct eos_error *err)
{
	char owner[EOS_OWNER_MAX + 1];
	struct write_job j = { .d = d, .root = root, .path = path, .text = text };
	pthread_t t;

	if (c->request_id) {
		snprintf(owner, sizeof(owner), "operation:%s", c->request_id);
		j.owner = owner;
	} else {
		snprintf(owner, sizeof(owner), "workspace_session:%s", s->name);
	}
	if (pthread_create(&t, NULL, write_thread, &j) != 0)
		return eos_error_set(err, -EAGAIN, "path '%s': cannot start a writing thread",
				     path);
	pthread_join(t, NULL);
	if (j.r < 0) {
		if (err)
			*err = j.err;
		return j.r;
	}
	*out = json_pack("{s:s,s:s,s:s,s:o}", "path", path, "workspace_session_id", s->name,
			 "owner", owner, "bytes", eos_json_u64(text->len));
	return *out ? 0 : eos_error_set(err, -ENOMEM, "out of memory");
}

static int
session_write(struct eosd *d, struct eosd_call *c, const char *path, const struct eos_buf *text,
	      json_t **out, struct eos_error *err)
{
	struct eosd_session *s = NULL;
	cleanup_close int root = session_root(d, c, &s, err);
	int r;

	if (root < 0)
		return root;
	r = session_write_text(d, c, s, root, path, text, out, err);
	eosd_session_put(d, s);
	return r;
}

static int
session_edit(struct eosd *d, struct eosd_call *c, const char *path, json_t **out,
	     struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf text = { 0 };
	struct eosd_session *s = NULL;
	cleanup_close int root = session_root(d, c, &s, err);
	cleanup_close int fd = -1;
	size_t replaced = 0;
	int r = root < 0 ? root : 0;

	if (r < 0)
		return r;
	fd = open_regular(root, path, err);
	r = fd < 0 ? fd : read_all(fd, path, NULL, &text, err);
	r = r ?: eosd_edits_apply(path, json_object_get(c->args, "edits"), &text, &replaced, err);
	r = r ?: session_write_text(d, c, s, root, path, &text, out, err);
	if (r == 0)
		eos_json_set(*out, "replacements", eos_json_u64(replaced));
	eosd_session_put(d, s);
	return r;
}

/* --- listing -----------------------------------------------------------------------------------
 */

static const char *
kind_of(mode_t mode)
{
	enum eos_kind k = eos_kind_of_mode(mode);

	return k == EOS_KIND_NONE ? (S_ISSOCK(mode) ? "socket" : "unknown") : eos_kind_name(k);
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "name")),
		      json_string_value(json_object_get(*(json_t *const *)b, "name")));
}

static int
list_dir(DIR *dir, json_t *rows)
{
	cleanup_free json_t **v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	struct stat st;
	int r = 0;

	while (r == 0 && (e = readdir(dir))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* removed meanwhile */
		r = eos_buf_array_reserve(&v, &cap, n + 1, sizeof(*v), 16);
		if (r == 0 && !(v[n++] = json_pack("{s:s,s:s,s:o,s:o}", "name", e->d_name, "kind",
						   kind_of(st.st_mode), "size",
						   eos_json_u64((uint64_t)st.st_size), "mode",
						   json_sprintf("%04o", st.st_mode & 07777))))
			r = -ENOMEM;
	}
	if (r == 0 && n > 0)
		qsort(v, n, sizeof(*v), by_name);
	for (size_t i = 0; i < n; i++)
		if (eos_json_push(rows, v[i]) < 0)
			r = -ENOMEM;
	return r;
}

static int
session_list(struct eosd *d, struct eosd_call *c, const char *path, json_t **out,
	     struct eos_error *err)
{
	EOS_CLEANUP(json_decrefp) json_t *rows = json_array();
	struct eosd_session *s = NULL;
	cleanup_close int root = session_root(d, c, &s, err);
	cleanup_closedir DIR *dir = NULL;
	int fd, r = root < 0 ? root : 0;

	if (r < 0)
		return r;
	fd = open_beneath(root, path, O_RDONLY | O_DIRECTORY, 0, err);
	if (fd >= 0 && !(dir = fdopendir(fd))) {
		close(fd);
		fd = path_error(path, eos_neg_errno(), err);
	}
	r = fd < 0 ? fd : rows ? list_dir(dir, rows) : -ENOMEM;
	if (r == 0 && !(*out = json_pack("{s:s,s:s,s:O}", "path", path, "workspace_session_id",
					 s->name, "entries", rows)))
		r = -ENOMEM;
	eosd_session_put(d, s);
	return r == -ENOMEM ? eos_error_set(err, r, "out of memory") : r;
}

/* --- the handlers ------------------------------------------------------------------------------
 */

int
eosd_op_file_read(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	const char *path = arg_str(c, "path");
	int r = eosd_path_check(path, err);

	if (r < 0)
		return r;
	return arg_str(c, "workspace_session_id") ? session_read(d, c, path, out, err)
						  : eosd_head_read(d, c, path, out, err);
}

int
eosd_op_file_write(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	const json_t *content = json_object_get(c->args, "content");
	const char *path = arg_str(c, "path");
	struct eos_buf text = { .data = (uint8_t *)json_string_value(content),
				.len = json_string_length(content) };
	int r = eosd_path_check(path, err);

	if (r == 0 && !path[0])
		r = eos_error_set(err, -EISDIR, "argument 'path': the root is a directory");
	if (r < 0)
		return r;
	return arg_str(c, "workspace_session_id") ? session_write(d, c, path, &text, out, err)
						  : eosd_head_write(d, c, path, &text, 0, out, err);
}

static int
head_edit(struct eosd *d, struct eosd_call *c, const char *path, json_t **out,
	  struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf text = { 0 };
	size_t replaced = 0;
	uint64_t base = 0;
	uint32_t mode = 0;
	int r = eosd_head_load(d, c->sandbox_id, path, &text, &base, &mode, err);

	r = r ?: eosd_edits_apply(path, json_object_get(c->args, "edits"), &text, &replaced, err);
	r = r ?: eosd_head_write(d, c, path, &text, base, out, err);
	if (r == 0)
		eos_json_set(*out, "replacements", eos_json_u64(replaced));
	return r;
}

int
eosd_op_file_edit(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	const char *path = arg_str(c, "path");
	int r = eosd_path_check(path, err);

	if (r < 0)
		return r;
	return arg_str(c, "workspace_session_id") ? session_edit(d, c, path, out, err)
						  : head_edit(d, c, path, out, err);
}

int
eosd_op_file_list(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	const char *path = arg_str(c, "path");
	int r = eosd_path_check(path ? path : "", err);

	if (r < 0)
		return r;
	return arg_str(c, "workspace_session_id")
		       ? session_list(d, c, path ? path : "", out, err)
		       : eosd_head_list(d, c, path ? path : "", out, err);
}
