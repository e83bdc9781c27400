/* SPDX-License-Identifier: MIT */
/* eos-store: publishing commands (publish a session, write one file without a session). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/path.h"
#include "common/quote.h"

#include "cli/eos-store.h"
#include "fs/view.h"

enum {
	WRITE_MAX = 1 << 30, /* bytes `write` accepts on stdin */
	TOOL_REJECTED = 3,   /* exit status of a rejected publish */
};

static json_t *
ms(int64_t ns)
{
	return json_real((double)ns / 1e6);
}

static json_t *
conflict_row(const void *item)
{
	return eos_conflict_json(item);
}

static json_t *
result_json(const char *sandbox, const char *session, const struct eos_publish_result *r)
{
	json_t *doc = json_pack(
		"{s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "status",
		eos_publish_status_name(r->status), "sandbox", tool_json_str(sandbox), "session",
		session ? tool_json_str(session) : json_null(), "owner", tool_json_str(r->owner),
		"base", tool_json_layer(r->base), "head", tool_json_layer(r->head), "version",
		tool_json_layer(r->version), "created", eos_json_u64(r->created), "modified",
		eos_json_u64(r->modified), "deleted", eos_json_u64(r->deleted), "merged",
		eos_json_u64(r->merged), "bytes", eos_json_u64(r->bytes), "staged",
		eos_json_u64(r->staged), "prepare_ms", ms(r->prepare_ns), "lock_ms", ms(r->lock_ns),
		"total_ms", ms(r->total_ns));

	if (doc)
		eos_json_set(doc, "skipped", tool_json_skipped(r->skipped, r->nskipped));
	if (doc && r->status == EOS_PUBLISH_REJECTED)
		eos_json_set(doc, "conflicts",
			     tool_json_rows(r->conflicts, r->nconflicts, sizeof(*r->conflicts),
					    conflict_row));
	return doc;
}

static void
print_conflict(const struct eos_conflict *k)
{
	cleanup_free char *q = NULL;
	/* a message quotes its path itself ('%s'): escape it; a bare path gets quoted */
	const char *text = k->message ? eos_quote_cstr(k->message, true, &q)
				      : eos_quote_cstr(k->path, false, &q);

	fprintf(stderr, "  %s: %s\n", eos_conflict_kind_name(k->kind), text);
	for (size_t i = 0; i < k->nlines; i++)
		fprintf(stderr, "    lines: base %u+%u, head %u+%u, session %u+%u\n",
			k->lines[i].base_start, k->lines[i].base_count, k->lines[i].head_start,
			k->lines[i].head_count, k->lines[i].session_start,
			k->lines[i].session_count);
}

/* A rejection: the conflicts on stderr, the error envelope (details = the result) with --json. */
static int
report_rejected(struct tool *t, json_t *doc, const struct eos_publish_result *r)
{
	struct eos_error err = { .code = -EBUSY };
	EOS_CLEANUP(json_decrefp) json_t *env = NULL;

	snprintf(err.msg, sizeof(err.msg), "publish rejected: %zu conflicting path%s",
		 r->nconflicts, r->nconflicts == 1 ? "" : "s");
	fprintf(stderr, "eos-store: %s\n", err.msg);
	for (size_t i = 0; i < r->nconflicts; i++)
		print_conflict(&r->conflicts[i]);
	if (t->json) {
		env = json_pack("{s:{s:s,s:s,s:O}}", "error", "kind", "conflict", "message",
				err.msg, "details", doc);
		if (env)
			eos_json_print_pretty(stdout, env);
		fflush(stdout);
	}
	json_decref(doc);
	return TOOL_REJECTED;
}

static int
report(struct tool *t, const char *sandbox, const char *session, struct eos_publish_result *r)
{
	json_t *doc = result_json(sandbox, session, r);
	int status;

	if (!doc)
		status = tool_failf(t, -ENOMEM, "out of memory");
	else if (r->status == EOS_PUBLISH_REJECTED)
		status = report_rejected(t, doc, r);
	else
		status = tool_output(t, doc, TOOL_RENDER_ALL);
	eos_publish_result_release(r);
	return status;
}

int
tool_cmd_publish(struct tool *t, const struct tool_args *a)
{
	struct eos_publish_result res = { 0 };
	struct eos_error err = { 0 };
	struct eos_sandbox_info sb;
	int r = tool_sandbox(t, a->sandbox, &sb);

	if (r != TOOL_OK)
		return r;
	r = eos_view_publish(t->st, sb.id, a->session, NULL, &res, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	return report(t, sb.id, a->session, &res);
}

/* --- write ------------------------------------------------------------------------------------ */

static int
read_stdin(struct eos_buf *out, struct eos_error *err)
{
	char block[65536];
	ssize_t n;

	while ((n = read(STDIN_FILENO, block, sizeof(block))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return eos_error_set(err, eos_neg_errno(), "read standard input: %m");
		if (out->len + (size_t)n > WRITE_MAX)
			return eos_error_set(err, -EFBIG, "standard input is larger than %d MiB",
					     WRITE_MAX >> 20);
		if (eos_buf_append(out, block, (size_t)n) < 0)
			return eos_error_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

int
tool_cmd_write(struct tool *t, const struct tool_args *a)
{
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	EOS_CLEANUP(eos_buf_release) struct eos_buf data = { 0 };
	cleanup_free char *owner = NULL, *path = NULL;
	struct eos_publish_result res = { 0 };
	struct eos_publish_file f = { .attr = { .mode = 0644,
						.uid = getuid(),
						.gid = getgid(),
						.mtime_ns = eos_wall_ns() } };
	struct eos_write_range range = { 0 };
	struct eos_error err = { 0 };
	struct eos_sandbox_info sb;
	int r = tool_sandbox(t, a->sandbox, &sb);

	if (r != TOOL_OK)
		return r;
	r = tool_path(t, a->path, &path);
	if (r != TOOL_OK)
		return r;
	if (asprintf(&owner, "operation:%s", a->operation ? a->operation : "eos-store-write") < 0)
		return tool_failf(t, -ENOMEM, "out of memory");
	r = read_stdin(&data, &err);
	if (r >= 0) {
		struct eos_publish_options o = { .sandbox = sb.id, .owner = owner };

		r = eos_publish_begin(t->st, &o, &p, &err);
	}
	r = r ?: eos_publish_stage_parents(p, path, &f.attr, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	range = (struct eos_write_range){ .start = 0, .end = data.len, .owner = owner };
	f.data = data.data ? (const void *)data.data : "";
	f.len = data.len;
	f.ranges = &range;
	f.nranges = data.len ? 1 : 0;
	r = eos_publish_put_file(p, path, &f, &err);
	r = r ?: eos_publish_commit(p, &res, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	return report(t, sb.id, NULL, &res);
}
