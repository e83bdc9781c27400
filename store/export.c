/* SPDX-License-Identifier: MIT */
/*
 * eos_store_export(): options, versions, destination checks and output files; the formats live
 * in export-dir.c, export-tar.c and export-patch.c, the diff in export-diff.c (see
 * store/export.h).
 */
#include "store/export.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/path.h"
#include "common/statedir.h"

#include "store/kv.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

enum {
	EXPORT_PIECE = 1 << 20, /* bytes per read of file content */
	TMP_NAME_MAX = 100,	/* bytes of the destination name kept in a temporary name */
};

int
eos_export_format_parse(const char *s, enum eos_export_format *ret, struct eos_error *err)
{
	static const struct {
		const char *name;
		enum eos_export_format format;
	} formats[] = {
		{ "dir", EOS_EXPORT_DIR },
		{ "tar", EOS_EXPORT_TAR },
		{ "tar-zst", EOS_EXPORT_TAR_ZST },
		{ "patch", EOS_EXPORT_PATCH },
	};

	for (size_t i = 0; s && i < EOS_ARRAY_SIZE(formats); i++)
		if (strcmp(s, formats[i].name) == 0) {
			*ret = formats[i].format;
			return 0;
		}
	return eos_error_set(err, -EINVAL,
			     "unknown export format '%s' (expected dir, tar, tar-zst or patch)",
			     s ? s : "");
}

/* --- helpers shared by the formats ------------------------------------------------------------ */

int
eos_export_write_all(int fd, const void *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return eos_neg_errno();
		if (n == 0)
			return -EIO;
		p = (const uint8_t *)p + n;
		len -= (size_t)n;
	}
	return 0;
}

static int
content_pieces(struct eos_file *f, const char *path, uint64_t size, eos_export_sink_fn fn,
	       void *ctx, struct eos_error *err)
{
	size_t cap = (size_t)EOS_MIN(size, (uint64_t)EXPORT_PIECE);
	cleanup_free uint8_t *buf = malloc(cap ? cap : 1);
	uint64_t off = 0;

	if (!buf)
		return -ENOMEM;
	while (off < size) {
		ssize_t n = eos_file_pread(f, buf, cap, off, err);
		int r;

		if (n < 0)
			return eos_error_prefix(err, (int)n, "read '%s'", path);
		if (n == 0)
			return eos_error_set(err, -EBADMSG,
					     "read '%s': content ends at %llu of %llu", path,
					     (unsigned long long)off, (unsigned long long)size);
		if ((r = fn(ctx, buf, (size_t)n, err)) < 0)
			return r;
		off += (uint64_t)n;
	}
	return 0;
}

int
eos_export_content(struct eos_export *x, const struct eos_entry *e, const char *path,
		   eos_export_sink_fn fn, void *ctx, struct eos_error *err)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	const struct eos_content *c = &e->st.content;
	int r;

	if (c->kind == EOS_CONTENT_INLINE)
		return c->inline_len ? fn(ctx, c->inline_data, c->inline_len, err) : 0;
	r = eos_store_file_open_content(x->st, c, &f, err);
	if (r < 0)
		return eos_error_prefix(err, r, "open '%s'", path);
	return content_pieces(f, path, c->size, fn, ctx, err);
}

/* --- destination checks ----------------------------------------------------------------------- */

/* True when path equals dir or lies below it (both absolute and canonical). */
static bool
host_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* Whether real lies inside the eos state directory (when there is one on this host). */
static bool
in_state_dir(const char *real, char **ret_state)
{
	cleanup_free char *dir = NULL;

	if (eos_default_state_dir(&dir) < 0 || !(*ret_state = realpath(dir, NULL)))
		return false;
	return host_below(real, *ret_state);
}

/*
 * Refuse "/", the home directory, anything inside the eos state directory, and anything sharing
 * a tree with the store directory.
 */
static int
dest_refuse(struct eos_store *st, const char *dest, const char *real, bool is_dir,
	    struct eos_error *err)
{
	cleanup_free char *home = NULL, *state = NULL, *store = realpath(st->dir, NULL);
	const char *h = getenv("HOME");

	if (strcmp(real, "/") == 0)
		return eos_error_set(err, -EINVAL,
				     "export to '%s': destination is the root directory", dest);
	if (h && h[0] && (home = realpath(h, NULL)) && strcmp(home, real) == 0)
		return eos_error_set(err, -EINVAL,
				     "export to '%s': destination is the home directory", dest);
	if (in_state_dir(real, &state))
		return eos_error_set(
			err, -EINVAL,
			"export to '%s': destination is inside the eos state directory '%s'", dest,
			state);
	if (!store)
		return eos_error_set(err, eos_neg_errno(), "resolve the store directory '%s': %s",
				     st->dir, strerror(errno));
	if (host_below(real, store))
		return eos_error_set(
			err, -EINVAL,
			"export to '%s': destination is inside the store directory '%s'", dest,
			store);
	if (is_dir && host_below(store, real))
		return eos_error_set(
			err, -EINVAL,
			"export to '%s': destination contains the store directory '%s'", dest,
			store);
	return 0;
}

/* The canonical path of an existing destination directory. Caller owns *ret. */
static int
dest_dir(struct eos_store *st, const char *dest, char **ret, struct eos_error *err)
{
	cleanup_free char *real = realpath(dest, NULL);
	struct stat sb;
	int r;

	if (!real || stat(real, &sb) < 0)
		return eos_error_set(err, eos_neg_errno(), "export to '%s': %s", dest,
				     strerror(errno));
	if (!S_ISDIR(sb.st_mode))
		return eos_error_set(err, -ENOTDIR,
				     "export to '%s': destination is not a directory", dest);
	if ((r = dest_refuse(st, dest, real, true, err)) < 0)
		return r;
	*ret = TAKE_PTR(real);
	return 0;
}

/* An output file: the canonical directory it goes into, and its name there. */
struct out_file {
	char *dir;
	const char *name; /* borrowed from the caller's path */
	int dir_fd;
	char tmp[TMP_NAME_MAX + 64];
	int fd;
};

static void
out_file_release(struct out_file *o)
{
	if (o->fd >= 0) {
		close(o->fd);
		unlinkat(o->dir_fd, o->tmp, 0);
	}
	if (o->dir_fd >= 0)
		close(o->dir_fd);
	free(o->dir);
}

static int
out_split(struct eos_store *st, const char *dest, struct out_file *o, struct eos_error *err)
{
	const char *slash = strrchr(dest, '/');
	cleanup_free char *parent = NULL, *path = NULL;

	o->name = slash ? slash + 1 : dest;
	if (eos_name_check(o->name, strlen(o->name), NULL) < 0)
		return eos_error_set(err, -EINVAL, "export to '%s': not a file name", dest);
	parent = slash ? strndup(dest, (size_t)(slash - dest)) : strdup(".");
	if (!parent)
		return -ENOMEM;
	o->dir = realpath(parent[0] ? parent : "/", NULL);
	if (!o->dir)
		return eos_error_set(err, eos_neg_errno(), "export to '%s': %s", dest,
				     strerror(errno));
	if (asprintf(&path, "%s%s%s", o->dir, strcmp(o->dir, "/") ? "/" : "", o->name) < 0)
		return -ENOMEM;
	return dest_refuse(st, dest, path, false, err);
}

/* Create a temporary file beside the destination (renamed over it by out_commit()). */
static int
out_open(struct eos_store *st, const char *dest, struct out_file *o, struct eos_error *err)
{
	struct stat sb;
	int r = out_split(st, dest, o, err);

	if (r < 0)
		return r;
	o->dir_fd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (o->dir_fd < 0)
		return eos_error_set(err, eos_neg_errno(), "export to '%s': open '%s': %s", dest,
				     o->dir, strerror(errno));
	if (fstatat(o->dir_fd, o->name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode))
		return eos_error_set(err, -EISDIR, "export to '%s': destination is a directory",
				     dest);
	for (unsigned i = 0; i < 100; i++) {
		static unsigned counter;

		snprintf(o->tmp, sizeof(o->tmp), ".%.*s.eos-export-%ld-%u", TMP_NAME_MAX, o->name,
			 (long)getpid(), __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
		o->fd = openat(o->dir_fd, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (o->fd >= 0 || errno != EEXIST)
			break;
	}
	if (o->fd < 0)
		return eos_error_set(err, eos_neg_errno(), "export to '%s': create '%s': %s", dest,
				     o->tmp, strerror(errno));
	return 0;
}

static int
out_commit(struct out_file *o, const char *dest, struct eos_error *err)
{
	if (fsync(o->fd) < 0 || renameat(o->dir_fd, o->tmp, o->dir_fd, o->name) < 0)
		return eos_error_set(err, eos_neg_errno(), "export to '%s': %s", dest,
				     strerror(errno));
	close(o->fd);
	o->fd = -1;
	(void)fsync(o->dir_fd);
	return 0;
}

/* --- the export ------------------------------------------------------------------------------- */

enum {
	PROGRESS_NS = 100 * 1000 * 1000,
};

void
eos_export_progress(struct eos_export *x, uint64_t paths, uint64_t total, bool force)
{
	struct eos_export_status s = {
		.paths = paths, .total_paths = total, .files = x->res->files, .bytes = x->res->bytes
	};
	int64_t now;

	if (!x->opts || !x->opts->progress)
		return;
	now = eos_mono_ns();
	if (!force && now < x->next_progress_ns)
		return;
	x->next_progress_ns = now + PROGRESS_NS;
	x->opts->progress(x->opts->progress_ctx, &s);
}

static int
stream_format(struct eos_export *x, const struct eos_export_diff *d, enum eos_export_format f,
	      int fd, struct eos_error *err)
{
	switch (f) {
	case EOS_EXPORT_TAR:
		return eos_export_tar(x, d, fd, false, err);
	case EOS_EXPORT_TAR_ZST:
		return eos_export_tar(x, d, fd, true, err);
	case EOS_EXPORT_PATCH:
		return eos_export_patch(x, d, fd, err);
	case EOS_EXPORT_DIR:
		break;
	}
	return -EINVAL;
}

/* Write an archive or patch to opts->dest (through a temporary file) or to opts->fd. */
static int
export_stream(struct eos_export *x, const struct eos_export_diff *d,
	      const struct eos_export_options *opts, struct eos_error *err)
{
	EOS_CLEANUP(out_file_release) struct out_file o = { .dir_fd = -1, .fd = -1 };
	int r;

	if (!opts->dest)
		return stream_format(x, d, opts->format, opts->fd, err);
	if ((r = out_open(x->st, opts->dest, &o, err)) < 0)
		return r;
	r = stream_format(x, d, opts->format, o.fd, err);
	return r ?: out_commit(&o, opts->dest, err);
}

static int
export_run(struct eos_export *x, const struct eos_export_options *opts, const char *dir,
	   struct eos_error *err)
{
	EOS_CLEANUP(eos_export_diff_release) struct eos_export_diff d = { 0 };
	bool full = opts->format == EOS_EXPORT_TAR || opts->format == EOS_EXPORT_TAR_ZST;
	int r;

	x->snap = eos_kv_snapshot_new(x->st->kv);
	if (!x->snap)
		return -ENOMEM;
	r = eos_export_diff(x, full, &d, err);
	if (r == 0 && opts->format == EOS_EXPORT_DIR)
		r = eos_export_dir(x, &d, dir, err);
	else if (r == 0)
		r = export_stream(x, &d, opts, err);
	eos_kv_snapshot_free(x->st->kv, x->snap);
	x->snap = NULL;
	return r;
}

/* Resolve from and to (0: the base and the head) to retained versions. */
static int
export_versions(struct eos_export *x, const struct eos_export_options *opts, struct eos_error *err)
{
	struct eos_sandbox_info info;
	struct eos_layer_info layer;
	char a[EOS_LAYER_ID_LEN], b[EOS_LAYER_ID_LEN];
	int r = eos_store_sandbox_get(x->st, opts->sandbox, &info, err);

	r = r ?: eos_sandbox_resolve(x->st, opts->sandbox, &x->sbx, err);
	if (r < 0)
		return r;
	x->from = opts->from ? opts->from : info.base;
	x->to = opts->to ? opts->to : info.head;
	r = eos_store_layer_get(x->st, opts->sandbox, x->from, &layer, err);
	r = r ?: eos_store_layer_get(x->st, opts->sandbox, x->to, &layer, err);
	if (r < 0)
		return r;
	x->to_created_ns = layer.created_ns;
	if (x->from > x->to) {
		eos_layer_id_format(x->from, a);
		eos_layer_id_format(x->to, b);
		return eos_error_set(err, -EINVAL, "from %s is newer than to %s", a, b);
	}
	return 0;
}

static int
export_check(const struct eos_export_options *opts, struct eos_error *err)
{
	if (!opts || !opts->sandbox)
		return eos_error_set(err, -EINVAL, "export: no sandbox given");
	switch (opts->format) {
	case EOS_EXPORT_DIR:
		if (!opts->dest)
			return eos_error_set(err, -EINVAL,
					     "export: a dir export needs a destination");
		return 0;
	case EOS_EXPORT_TAR:
	case EOS_EXPORT_TAR_ZST:
	case EOS_EXPORT_PATCH:
		if (!opts->dest && opts->fd < 0)
			return eos_error_set(
				err, -EINVAL,
				"export: neither a destination nor a descriptor given");
		return 0;
	}
	return eos_error_set(err, -EINVAL, "export: unknown format %d", (int)opts->format);
}

int
eos_store_export(struct eos_store *st, const struct eos_export_options *opts,
		 struct eos_export_result *ret, struct eos_error *err)
{
	struct eos_export_result res = { 0 };
	struct eos_export x = {
		.st = st, .sandbox = opts ? opts->sandbox : NULL, .res = &res, .opts = opts
	};
	cleanup_free char *dir = NULL;
	int r = export_check(opts, err);

	if (r < 0)
		return r;
	if (opts->format == EOS_EXPORT_DIR && (r = dest_dir(st, opts->dest, &dir, err)) < 0)
		return r;
	/* Squash and gc wait until the export has read every content it names. */
	eos_store_pin(st);
	r = export_versions(&x, opts, err);
	r = r ?: export_run(&x, opts, dir, err);
	eos_store_unpin(st);
	if (r < 0)
		return eos_error_prefix(err, r, "export of sandbox '%s'", opts->sandbox);
	res.from = x.from;
	res.to = x.to;
	if (ret)
		*ret = res;
	return 0;
}
