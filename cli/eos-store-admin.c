/* SPDX-License-Identifier: MIT */
/*
 * eos-store commands that write or check the store: import, lease, unlease, squash, gc,
 * destroy, fsck, recover, stats (see cli/eos-store.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/json.h"

#include "cli/eos-store.h"
#include "fs/view.h"

enum {
	THREADS_MAX = 1024,
	PROGRESS_INTERVAL_NS = 100 * 1000 * 1000,
};

/* --- import ----------------------------------------------------------------------------------- */

struct progress {
	int64_t last_ns;
	bool shown;
};

/* eos_import_options.progress: one status line on the terminal, at most ten times a second. */
static void
import_progress(void *ctx, const struct eos_import_status *s)
{
	struct progress *p = ctx;
	int64_t now = eos_mono_ns();

	if (now - p->last_ns < PROGRESS_INTERVAL_NS && s->phase == EOS_IMPORT_STAGE)
		return;
	p->last_ns = now;
	p->shown = true;
	if (s->phase == EOS_IMPORT_SCAN)
		fputs("\rimporting: scanning the source\033[K", stderr);
	else
		fprintf(stderr, "\rimporting: %llu of %llu files, %.1f of %.1f MB%s\033[K",
			(unsigned long long)s->files, (unsigned long long)s->total_files,
			(double)s->bytes / 1e6, (double)s->total_bytes / 1e6,
			s->phase == EOS_IMPORT_COMMIT ? ", committing" : "");
}

static int
parse_threads(struct tool *t, const char *s, unsigned *ret)
{
	unsigned long n;
	char *end = NULL;

	*ret = 0;
	if (!s)
		return TOOL_OK;
	errno = 0;
	n = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || n > THREADS_MAX)
		return tool_failf(t, -EINVAL, "bad thread count '%s' (0..%d, 0 = all cores)", s,
				  THREADS_MAX);
	*ret = (unsigned)n;
	return TOOL_OK;
}

static json_t *
import_doc(const struct eos_import_result *res, double seconds)
{
	double secs = seconds > 1e-9 ? seconds : 1e-9;

	return json_pack("{s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:o,s:I,s:I,s:f,s:f,s:f}", "sandbox",
			 tool_json_str(res->sandbox), "version", tool_json_layer(res->version),
			 "files", (json_int_t)res->files, "dirs", (json_int_t)res->dirs, "symlinks",
			 (json_int_t)res->symlinks, "hardlinks", (json_int_t)res->hardlinks,
			 "specials", (json_int_t)res->specials, "skipped",
			 tool_json_skipped(res->skipped, res->nskipped), "git_index_entries",
			 (json_int_t)res->git_entries, "bytes", (json_int_t)res->bytes, "seconds",
			 seconds, "mb_per_s", (double)res->bytes / 1e6 / secs, "files_per_s",
			 (double)res->files / secs);
}

int
tool_cmd_import(struct tool *t, const struct tool_args *a)
{
	struct eos_import_options opts = { .sandbox = a->sandbox,
					   .keep_git_index = a->keep_git_index };
	struct eos_import_result res = { 0 };
	struct eos_error err = { 0 };
	struct progress prog = { 0 };
	int64_t start;
	int r;

	r = parse_threads(t, a->threads, &opts.threads);
	if (r == TOOL_OK)
		r = tool_open(t, true);
	if (r != TOOL_OK)
		return r;
	if (isatty(STDERR_FILENO)) {
		opts.progress = import_progress;
		opts.progress_ctx = &prog;
	}
	start = eos_mono_ns();
	r = eos_store_import(t->st, a->pos[0], &opts, &res, &err);
	if (prog.shown)
		fputs("\r\033[K", stderr);
	if (r < 0)
		return tool_fail(t, r, &err);
	r = tool_output(t, import_doc(&res, (double)(eos_mono_ns() - start) / 1e9),
			TOOL_RENDER_ALL);
	eos_import_result_release(&res);
	return r;
}

/* --- leases ----------------------------------------------------------------------------------- */

int
tool_cmd_lease(struct tool *t, const struct tool_args *a)
{
	struct eos_error err = { 0 };
	struct eos_sandbox_info sb;
	uint64_t v, pinned = 0;
	int r;

	r = tool_sandbox_version(t, a, &sb, &v);
	if (r != TOOL_OK)
		return r;
	r = eos_store_lease_acquire(t->st, sb.id, a->pos[0], a->version ? v : 0, &pinned, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	return tool_output(t,
			   json_pack("{s:o,s:o,s:o}", "sandbox", tool_json_str(sb.id), "lease",
				     tool_json_str(a->pos[0]), "version", tool_json_layer(pinned)),
			   TOOL_RENDER_ALL);
}

int
tool_cmd_unlease(struct tool *t, const struct tool_args *a)
{
	struct eos_error err = { 0 };
	struct eos_sandbox_info sb;
	int r;

	r = tool_sandbox(t, a->sandbox, &sb);
	if (r != TOOL_OK)
		return r;
	r = eos_store_lease_release(t->st, sb.id, a->pos[0], &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	return tool_output(t,
			   json_pack("{s:o,s:o,s:b}", "sandbox", tool_json_str(sb.id), "lease",
				     tool_json_str(a->pos[0]), "released", 1),
			   TOOL_RENDER_ALL);
}

/* --- squash, gc, destroy ---------------------------------------------------------------------- */

int
tool_cmd_squash(struct tool *t, const struct tool_args *a)
{
	struct eos_squash_result res = { 0 };
	struct eos_error err = { 0 };
	struct eos_sandbox_info sb;
	int r;

	r = tool_sandbox(t, a->sandbox, &sb);
	if (r != TOOL_OK)
		return r;
	r = eos_store_squash(t->st, sb.id, &res, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	return tool_output(t,
			   json_pack("{s:o,s:I,s:I,s:I,s:I}", "sandbox", tool_json_str(sb.id),
				     "layers_removed", (json_int_t)res.layers_removed,
				     "entries_removed", (json_int_t)res.entries_removed,
				     "chunks_freed", (json_int_t)res.chunks_freed, "bytes_freed",
				     (json_int_t)res.bytes_freed),
			   TOOL_RENDER_ALL);
}

int
tool_cmd_gc(struct tool *t, const struct tool_args *a)
{
	struct eos_error err = { 0 };
	uint64_t freed = 0;
	int r;

	(void)a;
	r = tool_open(t, false);
	if (r != TOOL_OK)
		return r;
	r = eos_store_gc(t->st, &freed, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	return tool_output(t, json_pack("{s:I}", "chunks_freed", (json_int_t)freed),
			   TOOL_RENDER_ALL);
}

int
tool_cmd_destroy(struct tool *t, const struct tool_args *a)
{
	struct eos_error err = { 0 };
	struct eos_sandbox_info sb;
	int r;

	r = tool_sandbox(t, a->sandbox, &sb);
	if (r != TOOL_OK)
		return r;
	r = eos_store_sandbox_destroy(t->st, sb.id, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	return tool_output(t,
			   json_pack("{s:o,s:b}", "sandbox", tool_json_str(sb.id), "destroyed", 1),
			   TOOL_RENDER_ALL);
}

/* --- fsck ------------------------------------------------------------------------------------- */

/* eos_fsck_fn: collect one violation (kept even when the array cannot grow). */
static void
fsck_violation(void *ctx, const char *kind, const char *message)
{
	eos_json_push(ctx, json_pack("{s:o,s:o}", "kind", tool_json_str(kind), "message",
				     tool_json_str(message)));
}

static json_t *
fsck_doc(const struct eos_fsck_result *res, bool verified, uint64_t sessions, json_t *problems)
{
	return json_pack(
		"{s:b,s:I,s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:O}", "clean",
		res->violations == 0, "violations", (json_int_t)res->violations, "chunks_verified",
		verified, "entries", (json_int_t)res->entries, "blame_records",
		(json_int_t)res->blame, "chunks", (json_int_t)res->chunks, "manifests",
		(json_int_t)res->manifests, "sandboxes", (json_int_t)res->sandboxes, "sessions",
		(json_int_t)sessions, "garbage_chunks", (json_int_t)res->garbage_chunks, "damaged",
		(json_int_t)res->damaged, "damaged_records", (json_int_t)res->damaged_records,
		"damaged_paths", (json_int_t)res->damaged_paths, "damaged_sandboxes",
		(json_int_t)res->damaged_sandboxes, "problems", problems);
}

/* What to do about the damage fsck found (after its report, on stderr). */
static void
fsck_advice(const struct eos_fsck_result *res)
{
	if (res->damaged == 0)
		return;
	fprintf(stderr,
		"eos-store: the store is damaged: %llu paths with damaged content, %llu damaged "
		"sandboxes (the 'damaged-*' problems name them)\n",
		(unsigned long long)res->damaged_paths, (unsigned long long)res->damaged_sandboxes);
	fputs("eos-store: reading a damaged path fails; the other paths read as before\n", stderr);
	if (res->damaged_records)
		fputs("eos-store: records of the store itself are unreadable (the 'damaged-keys' and "
		      "'damaged-record' problems): what needs them fails naming the table file, "
		      "destroy of a sandbox whose entries are unreadable included; restore the store "
		      "from a backup, or import the sources of its sandboxes again into a new store\n",
		      stderr);
	if (res->damaged > res->damaged_records)
		fputs("eos-store: to get paths with damaged content back, restore the store from a "
		      "backup, or destroy every sandbox listed (destroy and gc go on past damaged "
		      "chunks, and chunks no other sandbox uses go with it) and import its source "
		      "again: while a damaged chunk is still referenced, an import of the same "
		      "content reuses it\n",
		      stderr);
}

/* Check one session's delta against its data files (fs/check.c). */
static int
fsck_session(struct tool *t, const char *sandbox, const char *session, json_t *problems,
	     struct eos_error *err)
{
	struct eos_view_options o = {
		.store = t->st, .sandbox = sandbox, .session = session, .inspect = true
	};
	EOS_CLEANUP(eos_view_closep) struct eos_view *v = NULL;
	int r = eos_view_open(&o, &v, err);

	if (r == -EBADMSG) { /* a damaged session is a finding, not the end of the check */
		fsck_violation(problems, "session-record", err->msg);
		eos_error_clear(err);
		return 1;
	}
	return r < 0 ? r : eos_view_check(v, fsck_violation, problems, err);
}

/* Every session of every sandbox: violations are added to res, sessions counted. */
static int
fsck_sessions(struct tool *t, json_t *problems, struct eos_fsck_result *res, uint64_t *ret_n,
	      struct eos_error *err)
{
	cleanup_free struct eos_sandbox_info *sbs = NULL;
	size_t nsbs = 0;
	int r = eos_store_sandbox_list(t->st, &sbs, &nsbs, err);

	for (size_t i = 0; r >= 0 && i < nsbs; i++) {
		cleanup_free struct eos_session_info *ss = NULL;
		size_t nss = 0;

		r = eos_store_session_list(t->st, sbs[i].id, &ss, &nss, err);
		for (size_t j = 0; r >= 0 && j < nss; j++) {
			r = fsck_session(t, sbs[i].id, ss[j].name, problems, err);
			if (r >= 0)
				res->violations += (uint64_t)r;
			(*ret_n)++;
		}
	}
	return r < 0 ? r : 0;
}

int
tool_cmd_fsck(struct tool *t, const struct tool_args *a)
{
	enum eos_fsck_flags flags = a->quick ? 0 : EOS_FSCK_VERIFY_CHUNKS;
	EOS_CLEANUP(json_decrefp) json_t *problems = json_array();
	struct eos_fsck_result res = { 0 };
	struct eos_error err = { 0 };
	uint64_t sessions = 0;
	int r;

	r = tool_open(t, false);
	if (r != TOOL_OK)
		return r;
	if (!problems)
		return tool_failf(t, -ENOMEM, "out of memory");
	r = eos_store_fsck(t->st, flags, fsck_violation, problems, &res, &err);
	r = r < 0 ? r : fsck_sessions(t, problems, &res, &sessions, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	r = tool_output(t, fsck_doc(&res, !a->quick, sessions, problems), TOOL_RENDER_ALL);
	if (r != TOOL_OK || res.violations == 0)
		return r;
	fprintf(stderr, "eos-store: fsck found %llu violations\n",
		(unsigned long long)res.violations);
	fsck_advice(&res);
	return TOOL_FAILED;
}

/* --- recover ---------------------------------------------------------------------------------- */

static json_t *
recover_doc(const struct eos_store_recovery *rec)
{
	if (!rec->dropped)
		return json_pack("{s:b}", "dropped", 0);
	return json_pack("{s:b,s:o,s:o,s:I,s:I,s:I,s:o}", "dropped", 1, "log",
			 tool_json_str(rec->log), "problem", tool_json_str(rec->problem), "offset",
			 (json_int_t)rec->offset, "bytes", (json_int_t)rec->bytes, "logs",
			 (json_int_t)rec->files, "saved", tool_json_str(rec->saved));
}

int
tool_cmd_recover(struct tool *t, const struct tool_args *a)
{
	struct eos_store_recovery rec;
	struct eos_error err = { 0 };
	int r;

	(void)a;
	r = eos_store_recover(t->store_dir, &rec, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	/* Prove that it opens now (or say why not). */
	r = tool_open(t, false);
	if (r != TOOL_OK)
		return r;
	r = tool_output(t, recover_doc(&rec), TOOL_RENDER_ALL);
	if (r == TOOL_OK && rec.dropped)
		fprintf(stderr,
			"eos-store: dropped the %llu bytes of writes from byte %llu of 'db/%s' on "
			"(copies in '%s/%s'); what they created or changed is missing or older: run "
			"'eos-store fsck', then import or publish that again\n",
			(unsigned long long)rec.bytes, (unsigned long long)rec.offset, rec.log,
			t->store_dir, rec.saved);
	return r;
}

/* --- stats ------------------------------------------------------------------------------------ */

/* Summary row of one sandbox: retained layers, their bytes, leases. */
static json_t *
sandbox_summary(struct eos_store *st, const struct eos_sandbox_info *sb, struct eos_error *err)
{
	cleanup_free struct eos_layer_info *layers = NULL;
	cleanup_free struct eos_lease_info *leases = NULL;
	size_t nlayers = 0, nleases = 0;
	uint64_t bytes = 0;

	if (eos_store_layer_list(st, sb->id, &layers, &nlayers, err) < 0 ||
	    eos_store_lease_list(st, sb->id, &leases, &nleases, err) < 0)
		return NULL;
	for (size_t i = 0; i < nlayers; i++)
		bytes += layers[i].bytes;
	return json_pack("{s:o,s:o,s:I,s:I,s:I,s:o}", "id", tool_json_str(sb->id), "head",
			 tool_json_layer(sb->head), "layers", (json_int_t)nlayers, "bytes",
			 (json_int_t)bytes, "leases", (json_int_t)nleases, "source",
			 tool_json_str(sb->source));
}

static int
stats_per_sandbox(struct eos_store *st, json_t *rows, struct eos_error *err)
{
	cleanup_free struct eos_sandbox_info *sbs = NULL;
	size_t n = 0;
	int r;

	r = eos_store_sandbox_list(st, &sbs, &n, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		json_t *row = sandbox_summary(st, &sbs[i], err);

		if (!row)
			return err && err->code ? err->code : -ENOMEM;
		if (eos_json_push(rows, row) < 0)
			return -ENOMEM;
	}
	return 0;
}

static json_t *
stats_doc(const struct eos_store_stats *s, const struct eos_store_space *sp, json_t *rows)
{
	double ratio = s->chunk_raw_bytes
			       ? (double)s->chunk_stored_bytes / (double)s->chunk_raw_bytes
			       : 0.0;

	return json_pack("{s:I,s:I,s:I,s:I,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:O}",
			 "sandboxes", (json_int_t)s->sandboxes, "chunks", (json_int_t)s->chunks,
			 "chunk_raw_bytes", (json_int_t)s->chunk_raw_bytes, "chunk_stored_bytes",
			 (json_int_t)s->chunk_stored_bytes, "stored_ratio", ratio, "manifests",
			 (json_int_t)s->manifests, "entries", (json_int_t)s->entries, "disk_bytes",
			 (json_int_t)s->disk_bytes, "fs_bytes", (json_int_t)sp->fs_bytes,
			 "free_bytes", (json_int_t)sp->free_bytes, "soft_reserve_bytes",
			 (json_int_t)sp->soft_reserve, "hard_reserve_bytes",
			 (json_int_t)sp->hard_reserve, "cache_hits", (json_int_t)s->cache_hits,
			 "cache_misses", (json_int_t)s->cache_misses, "per_sandbox", rows);
}

int
tool_cmd_stats(struct tool *t, const struct tool_args *a)
{
	EOS_CLEANUP(json_decrefp) json_t *rows = json_array();
	struct eos_store_stats s = { 0 };
	struct eos_store_space sp = { 0 };
	struct eos_error err = { 0 };
	int r;

	(void)a;
	r = tool_open(t, false);
	if (r != TOOL_OK)
		return r;
	if (!rows)
		return tool_failf(t, -ENOMEM, "out of memory");
	r = eos_store_stats(t->st, &s, &err);
	if (r >= 0)
		r = eos_store_space(t->st, &sp, &err);
	if (r >= 0)
		r = stats_per_sandbox(t->st, rows, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	return tool_output(t, stats_doc(&s, &sp, rows), TOOL_RENDER_ALL);
}
