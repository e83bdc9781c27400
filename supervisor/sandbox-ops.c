/* SPDX-License-Identifier: MIT */
/*
 * supervisor/sandbox-ops: the management operations on sandboxes, over the public store API
 * only (each one as cli/eos-store-*.c makes the same store call).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/json.h"

#include "supervisor/obs.h"
#include "supervisor/ops.h"
#include "supervisor/session.h"
#include "supervisor/stream.h"

enum {
	INLINE_PATCH_MAX = 64 << 20, /* a bigger patch needs dest */
	EXPORT_BODY_MAX = 256 << 20, /* an export sent as the reply's body (built in memory) */
	SESSION_NAMES_MAX = 10,	     /* named in a refusal */
};

static const char *
arg_string(const struct eosd_call *c, const char *name)
{
	return json_string_value(json_object_get(c->args, name));
}

static json_t *
skipped_json(char **paths, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (eos_json_push(a, json_string(paths[i])) < 0)
			return NULL;
	return a;
}

/* --- create ----------------------------------------------------------------------------------- */

static json_t *
import_json(const struct eos_import_result *res, double seconds)
{
	return json_pack("{s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:f}", "sandbox_id",
			 res->sandbox, "version", eosd_json_version(res->version), "files",
			 (json_int_t)res->files, "dirs", (json_int_t)res->dirs, "symlinks",
			 (json_int_t)res->symlinks, "hardlinks", (json_int_t)res->hardlinks,
			 "specials", (json_int_t)res->specials, "bytes", (json_int_t)res->bytes,
			 "git_index_entries", (json_int_t)res->git_entries, "skipped",
			 skipped_json(res->skipped, res->nskipped), "seconds", seconds);
}

struct import_progress {
	struct eosd_stream *stream;
	enum eos_import_phase phase; /* of the last event */
};

/*
 * eos_import_options.progress → "progress" events: {"phase": "scan"|"import"|"commit", "files",
 * "bytes"} and, from "import" on, "total_files" and "total_bytes". A new phase is always sent.
 */
static void
import_progress(void *ctx, const struct eos_import_status *s)
{
	struct import_progress *p = ctx;
	bool force = s->phase != p->phase;
	const char *phase = s->phase == EOS_IMPORT_SCAN	   ? "scan"
			    : s->phase == EOS_IMPORT_STAGE ? "import"
							   : "commit";
	json_t *ev = json_pack("{s:s, s:I, s:I}", "phase", phase, "files", (json_int_t)s->files,
			       "bytes", (json_int_t)s->bytes);

	p->phase = s->phase;
	if (ev && s->phase != EOS_IMPORT_SCAN &&
	    (eos_json_set(ev, "total_files", json_integer((json_int_t)s->total_files)) < 0 ||
	     eos_json_set(ev, "total_bytes", json_integer((json_int_t)s->total_bytes)) < 0)) {
		json_decref(ev);
		return; /* out of memory: the event is skipped, the import goes on */
	}
	(void)eosd_stream_progress(p->stream, ev, force);
}

int
eosd_op_create_sandbox(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	struct import_progress progress = { .stream = c->stream };
	struct eos_import_options opts = {
		.sandbox = arg_string(c, "id"),
		.keep_git_index = json_is_true(json_object_get(c->args, "keep_git_index")),
	};
	struct eos_import_result res = { 0 };
	const char *src = arg_string(c, "source");
	int64_t start = eos_mono_ns();
	int r;

	struct eosd_span sp;

	if (eosd_stream_wanted(c->stream)) {
		opts.progress = import_progress;
		opts.progress_ctx = &progress;
	}
	eosd_span_begin(d->obs, &sp, "layerstack.import", opts.sandbox);
	eosd_span_attr_str(&sp, "source", src);
	r = eos_store_import(d->store, src, &opts, &res, err);
	if (r == 0) {
		eosd_span_set_sandbox(&sp, res.sandbox);
		eosd_span_attr_int(&sp, "files", (int64_t)res.files);
		eosd_span_attr_int(&sp, "bytes", (int64_t)res.bytes);
	}
	eosd_span_end(&sp, r, err);
	if (r < 0)
		return r;
	eosd_obs_event(d->obs, "sandbox.created", res.sandbox, NULL,
		       json_pack("{s:s, s:o, s:I, s:I}", "source", src, "version",
				 eosd_json_version(res.version), "files", (json_int_t)res.files,
				 "bytes", (json_int_t)res.bytes));
	*out = import_json(&res, (double)(eos_mono_ns() - start) / 1e9);
	eos_import_result_release(&res);
	return *out ? 0 : -ENOMEM;
}

/* --- list and inspect ------------------------------------------------------------------------- */

static json_t *
sandbox_json(const struct eos_sandbox_info *sb)
{
	return json_pack("{s:s, s:s, s:o, s:o, s:I, s:I}", "sandbox_id", sb->id, "source",
			 sb->source, "head", eosd_json_version(sb->head), "base",
			 eosd_json_version(sb->base), "layers", (json_int_t)sb->layers,
			 "created_ns", (json_int_t)sb->created_ns);
}

int
eosd_op_list_sandboxes(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	cleanup_free struct eos_sandbox_info *sbs = NULL;
	EOS_CLEANUP(json_decrefp) json_t *list = json_array();
	size_t n = 0;
	int r;

	(void)c;
	r = eos_store_sandbox_list(d->store, &sbs, &n, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if (!list || eos_json_push(list, sandbox_json(&sbs[i])) < 0)
			return -ENOMEM;
	*out = json_pack("{s:O}", "sandboxes", list);
	return *out ? 0 : -ENOMEM;
}

static json_t *
layer_json(const struct eos_layer_info *l)
{
	return json_pack("{s:o, s:o, s:s, s:I, s:I, s:I, s:I, s:I}", "version",
			 eosd_json_version(l->version), "parent",
			 l->parent ? eosd_json_version(l->parent) : json_null(), "owner", l->owner,
			 "created", (json_int_t)l->created, "modified", (json_int_t)l->modified,
			 "deleted", (json_int_t)l->deleted, "bytes", (json_int_t)l->bytes,
			 "created_ns", (json_int_t)l->created_ns);
}

/* "layers": [...] and "bytes" into doc. */
static int
inspect_layers(struct eosd *d, const char *id, json_t *doc, struct eos_error *err)
{
	cleanup_free struct eos_layer_info *ls = NULL;
	json_t *list = json_array();
	uint64_t bytes = 0;
	size_t n = 0;
	int r;

	if (!list || eos_json_set(doc, "layer_list", list) < 0)
		return -ENOMEM;
	r = eos_store_layer_list(d->store, id, &ls, &n, err);
	for (size_t i = 0; r >= 0 && i < n; i++) {
		bytes += ls[i].bytes;
		if (eos_json_push(list, layer_json(&ls[i])) < 0)
			return -ENOMEM;
	}
	if (r < 0)
		return r;
	return eos_json_set(doc, "bytes", json_integer((json_int_t)bytes));
}

static int
inspect_leases(struct eosd *d, const char *id, json_t *doc, struct eos_error *err)
{
	cleanup_free struct eos_lease_info *ls = NULL;
	json_t *list = json_array();
	size_t n = 0;
	int r;

	if (!list || eos_json_set(doc, "leases", list) < 0)
		return -ENOMEM;
	r = eos_store_lease_list(d->store, id, &ls, &n, err);
	for (size_t i = 0; r >= 0 && i < n; i++)
		if (eos_json_push(list, json_pack("{s:s, s:o}", "name", ls[i].name, "version",
						  eosd_json_version(ls[i].version))) < 0)
			return -ENOMEM;
	return r < 0 ? r : 0;
}

static int
inspect_sessions(struct eosd *d, const char *id, json_t *doc, struct eos_error *err)
{
	cleanup_free struct eos_session_info *ss = NULL;
	json_t *list = json_array();
	size_t n = 0;
	int r;

	if (!list || eos_json_set(doc, "sessions", list) < 0)
		return -ENOMEM;
	r = eos_store_session_list(d->store, id, &ss, &n, err);
	for (size_t i = 0; r >= 0 && i < n; i++)
		if (eos_json_push(list, json_pack("{s:s, s:o}", "workspace_session_id", ss[i].name,
						  "version", eosd_json_version(ss[i].version))) < 0)
			return -ENOMEM;
	if (r < 0)
		return r;
	return eos_json_set(doc, "sessions_served",
			    json_integer((json_int_t)eosd_sessions_count(d, id)));
}

int
eosd_op_inspect_sandbox(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	EOS_CLEANUP(json_decrefp) json_t *doc = NULL;
	struct eos_sandbox_info sb;
	int r;

	r = eos_store_sandbox_get(d->store, c->sandbox_id, &sb, err);
	if (r < 0)
		return r;
	doc = sandbox_json(&sb);
	if (!doc)
		return -ENOMEM;
	r = inspect_layers(d, sb.id, doc, err);
	r = r < 0 ? r : inspect_leases(d, sb.id, doc, err);
	r = r < 0 ? r : inspect_sessions(d, sb.id, doc, err);
	if (r < 0)
		return r;
	*out = TAKE_PTR(doc);
	return 0;
}

/* --- destroy and squash ----------------------------------------------------------------------- */

/* Refuse while the sandbox has sessions: -EBUSY naming them (the first SESSION_NAMES_MAX). */
static int
refuse_busy(struct eosd *d, const char *id, struct eosd_call *c, struct eos_error *err)
{
	cleanup_free struct eos_session_info *ss = NULL;
	char names[512] = "";
	size_t n = 0, served = eosd_sessions_count(d, id), len = 0;
	json_t *list = json_array();
	int r = eos_store_session_list(d->store, id, &ss, &n, err);

	if (r < 0) {
		json_decref(list);
		return r;
	}
	if (n == 0 && served == 0) {
		json_decref(list);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (i < SESSION_NAMES_MAX && len < sizeof(names))
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s'%s'",
						i ? ", " : "", ss[i].name);
		(void)eos_json_push(list, json_string(ss[i].name));
	}
	c->details = json_pack("{s:o}", "sessions", list);
	return eos_error_set(err, -EBUSY,
			     "sandbox '%s' has %zu workspace sessions (%s%s): destroy them, or "
			     "pass force",
			     id, EOS_MAX(n, served), names, n > SESSION_NAMES_MAX ? ", …" : "");
}

int
eosd_op_destroy_sandbox(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	bool force = json_is_true(json_object_get(c->args, "force"));
	struct eos_sandbox_info sb;
	int r;

	r = eos_store_sandbox_get(d->store, c->sandbox_id, &sb, err);
	if (r < 0)
		return r;
	(void)eosd_stream_progress(c->stream, json_pack("{s:s}", "phase", "destroy"), true);
	r = force ? eosd_sessions_destroy_all(d, sb.id, err) : refuse_busy(d, sb.id, c, err);
	if (r < 0)
		return r;
	{
		struct eosd_span sp;

		eosd_span_begin(d->obs, &sp, "layerstack.destroy", sb.id);
		r = eos_store_sandbox_destroy(d->store, sb.id, err);
		eosd_span_end(&sp, r, err);
	}
	if (r < 0)
		return r;
	eosd_obs_event(
		d->obs, "sandbox.destroyed", sb.id, NULL,
		json_pack("{s:o, s:b}", "head", eosd_json_version(sb.head), "forced", force));
	*out = json_pack("{s:s, s:b}", "sandbox_id", sb.id, "destroyed", 1);
	return *out ? 0 : -ENOMEM;
}

int
eosd_op_squash_layerstacks(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	struct eos_squash_result res = { 0 };
	struct eos_sandbox_info sb;
	int r;

	struct eosd_span sp;

	r = eos_store_sandbox_get(d->store, c->sandbox_id, &sb, err);
	if (r >= 0)
		(void)eosd_stream_progress(c->stream, json_pack("{s:s}", "phase", "squash"), true);
	eosd_span_begin(d->obs, &sp, "layerstack.squash", c->sandbox_id);
	r = r < 0 ? r : eos_store_squash(d->store, sb.id, &res, err);
	if (r == 0)
		eosd_obs_squash(d->obs, sb.id, &res);
	eosd_span_end(&sp, r, err);
	if (r < 0)
		return r;
	*out = json_pack("{s:s, s:I, s:I, s:I, s:I}", "sandbox_id", sb.id, "layers_removed",
			 (json_int_t)res.layers_removed, "entries_removed",
			 (json_int_t)res.entries_removed, "chunks_freed",
			 (json_int_t)res.chunks_freed, "bytes_freed", (json_int_t)res.bytes_freed);
	return *out ? 0 : -ENOMEM;
}

/* --- export ----------------------------------------------------------------------------------- */

static int
version_arg(const struct eosd_call *c, const char *name, uint64_t *ret, struct eos_error *err)
{
	const char *s = arg_string(c, name);

	*ret = 0;
	if (s && eos_layer_id_parse(s, ret) < 0)
		return eos_error_set(err, -EINVAL, "%s: argument '%s': '%s' is not a version",
				     c->op->name, name, s);
	return 0;
}

static int
export_options(const struct eosd_call *c, struct eos_export_options *o, struct eos_error *err)
{
	const char *format = arg_string(c, "format");
	int r;

	*o = (struct eos_export_options){ .sandbox = c->sandbox_id, .fd = -1 };
	r = eos_export_format_parse(format ? format : "", &o->format, err);
	r = r < 0 ? r : version_arg(c, "from", &o->from, err);
	r = r < 0 ? r : version_arg(c, "to", &o->to, err);
	if (r < 0)
		return r;
	o->dest = arg_string(c, "dest");
	if (!o->dest &&
	    (o->format == EOS_EXPORT_DIR || (o->format != EOS_EXPORT_PATCH && !c->body_wanted)))
		return eos_error_set(err, -EINVAL,
				     "export_changes: argument 'dest': required for format '%s' "
				     "(only a patch comes back inline; a tar as the reply's body "
				     "with Accept: application/octet-stream)",
				     format);
	return 0;
}

/*
 * The export in fd as the reply's body (eosd_call.body_fd, doc/eosd.md "Downloads"): its type
 * and a file name of the sandbox and the versions. fd is taken.
 */
static int
export_body(struct eosd_call *c, const struct eos_export_options *o,
	    const struct eos_export_result *res, int fd, struct eos_error *err)
{
	static const char *const types[][2] = {
		[EOS_EXPORT_TAR] = { "application/x-tar", "tar" },
		[EOS_EXPORT_TAR_ZST] = { "application/zstd", "tar.zst" },
		[EOS_EXPORT_PATCH] = { "text/x-diff; charset=utf-8", "patch" },
	};
	struct stat sb;

	if (fstat(fd, &sb) < 0 || sb.st_size > EXPORT_BODY_MAX) {
		close(fd);
		return eos_error_set(err, -EFBIG,
				     "export_changes: the export is %lld bytes, more than %d to "
				     "send as a body: pass dest",
				     (long long)sb.st_size, EXPORT_BODY_MAX);
	}
	c->body_fd = fd;
	snprintf(c->body_type, sizeof(c->body_type), "%s", types[o->format][0]);
	snprintf(c->body_name, sizeof(c->body_name), "%s-L%06" PRIu64 "-L%06" PRIu64 ".%s",
		 o->sandbox, res->from, res->to, types[o->format][1]);
	return 0;
}

/* eos_export_options.progress → {"phase": "export", "paths", "total_paths", "files", "bytes"}. */
static void
export_progress(void *ctx, const struct eos_export_status *s)
{
	struct eosd_stream *stream = ctx;

	(void)eosd_stream_progress(stream,
				   json_pack("{s:s, s:I, s:I, s:I, s:I}", "phase", "export",
					     "paths", (json_int_t)s->paths, "total_paths",
					     (json_int_t)s->total_paths, "files",
					     (json_int_t)s->files, "bytes", (json_int_t)s->bytes),
				   s->paths == 0 || s->paths == s->total_paths);
}

/* Read the whole patch written to fd. */
static int
read_patch(int fd, json_t **ret, struct eos_error *err)
{
	struct stat sb;
	cleanup_free char *text = NULL;

	if (fstat(fd, &sb) < 0)
		return eos_error_set(err, eos_neg_errno(), "export_changes: %m");
	if (sb.st_size > INLINE_PATCH_MAX)
		return eos_error_set(
			err, -EFBIG,
			"export_changes: the patch is %lld bytes, more than %d inline: "
			"pass dest",
			(long long)sb.st_size, INLINE_PATCH_MAX);
	text = malloc((size_t)sb.st_size + 1);
	if (!text)
		return -ENOMEM;
	if (pread(fd, text, (size_t)sb.st_size, 0) != sb.st_size)
		return eos_error_set(err, eos_neg_errno(), "export_changes: read the patch: %m");
	*ret = eos_json_bytes(text, (size_t)sb.st_size);
	return *ret ? 0 : -ENOMEM;
}

static json_t *
export_json(const struct eos_export_options *o, const struct eos_export_result *res)
{
	return json_pack("{s:s, s:s, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
			 "sandbox_id", o->sandbox, "format",
			 o->format == EOS_EXPORT_DIR	   ? "dir"
			 : o->format == EOS_EXPORT_TAR	   ? "tar"
			 : o->format == EOS_EXPORT_TAR_ZST ? "tar-zst"
							   : "patch",
			 "from", eosd_json_version(res->from), "to", eosd_json_version(res->to),
			 "files", (json_int_t)res->files, "dirs", (json_int_t)res->dirs, "symlinks",
			 (json_int_t)res->symlinks, "deleted", (json_int_t)res->deleted, "renamed",
			 (json_int_t)res->renamed, "specials", (json_int_t)res->specials, "bytes",
			 (json_int_t)res->bytes, "dest",
			 o->dest ? json_string(o->dest) : json_null());
}

int
eosd_op_export_changes(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	struct eos_export_options o;
	struct eos_export_result res = { 0 };
	cleanup_close int fd = -1;
	json_t *patch = NULL;
	int r;

	r = export_options(c, &o, err);
	if (r < 0)
		return r;
	if (!o.dest) {
		fd = memfd_create("eosd-export", MFD_CLOEXEC);
		if (fd < 0)
			return eos_error_set(err, eos_neg_errno(), "export_changes: memfd: %m");
		o.fd = fd;
	}
	if (eosd_stream_wanted(c->stream)) {
		(void)eosd_stream_progress(c->stream, json_pack("{s:s}", "phase", "diff"), true);
		o.progress = export_progress;
		o.progress_ctx = c->stream;
	}
	struct eosd_span sp;

	eosd_span_begin(d->obs, &sp, "layerstack.export", c->sandbox_id);
	eosd_span_attr_str(&sp, "format", arg_string(c, "format"));
	r = eos_store_export(d->store, &o, &res, err);
	if (r >= 0 && fd >= 0 && c->body_wanted)
		r = export_body(c, &o, &res, TAKE_FD(fd), err);
	else if (r >= 0 && fd >= 0)
		r = read_patch(fd, &patch, err);
	if (r >= 0) {
		eosd_span_attr(&sp, "from", eosd_json_version(res.from));
		eosd_span_attr(&sp, "to", eosd_json_version(res.to));
		eosd_span_attr_int(&sp, "files", (int64_t)res.files);
		eosd_span_attr_int(&sp, "bytes", (int64_t)res.bytes);
	}
	eosd_span_end(&sp, r, err);
	if (r < 0)
		return r;
	*out = export_json(&o, &res);
	if (!*out || (patch && eos_json_set(*out, "patch", patch) < 0))
		return -ENOMEM;
	return 0;
}
