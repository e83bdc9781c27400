/* SPDX-License-Identifier: MIT */
/*
 * eos-store export (see cli/eos-store.h): the changes between two versions of a sandbox as a
 * directory update, a tar layer or a git patch.
 *
 * Where the summary goes: with --dest it is the command's output on stdout (JSON with --json);
 * without --dest the archive or patch is stdout, so the summary goes to stderr (JSON with
 * --json), keeping stdout exactly the archive.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/json.h"

#include "cli/eos-store.h"

static const char *
format_name(enum eos_export_format f)
{
	switch (f) {
	case EOS_EXPORT_DIR:
		return "dir";
	case EOS_EXPORT_TAR:
		return "tar";
	case EOS_EXPORT_TAR_ZST:
		return "tar-zst";
	case EOS_EXPORT_PATCH:
		return "patch";
	}
	return "unknown";
}

static json_t *
summary(const char *sandbox, const struct eos_export_options *o,
	const struct eos_export_result *res)
{
	return json_pack("{s:o,s:s,s:o,s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "sandbox",
			 tool_json_str(sandbox), "format", format_name(o->format), "from",
			 tool_json_layer(res->from), "to", tool_json_layer(res->to), "dest",
			 o->dest ? tool_json_str(o->dest) : json_string("-"), "files",
			 (json_int_t)res->files, "dirs", (json_int_t)res->dirs, "symlinks",
			 (json_int_t)res->symlinks, "specials", (json_int_t)res->specials,
			 "deleted", (json_int_t)res->deleted, "renamed", (json_int_t)res->renamed,
			 "bytes", (json_int_t)res->bytes);
}

/* The summary on stderr, when stdout carries the archive or patch. */
static int
summary_stderr(struct tool *t, json_t *doc_in, const struct eos_export_result *res)
{
	EOS_CLEANUP(json_decrefp) json_t *doc = doc_in;
	char a[EOS_LAYER_ID_LEN], b[EOS_LAYER_ID_LEN];

	if (!doc)
		return tool_failf(t, -ENOMEM, "out of memory");
	if (t->json) {
		eos_json_print_pretty(stderr, doc);
		return TOOL_OK;
	}
	eos_layer_id_format(res->from, a);
	eos_layer_id_format(res->to, b);
	fprintf(stderr,
		"exported %s..%s: %llu files, %llu dirs, %llu symlinks, %llu specials, %llu deleted, "
		"%llu renamed, %llu bytes\n",
		a, b, (unsigned long long)res->files, (unsigned long long)res->dirs,
		(unsigned long long)res->symlinks, (unsigned long long)res->specials,
		(unsigned long long)res->deleted, (unsigned long long)res->renamed,
		(unsigned long long)res->bytes);
	return TOOL_OK;
}

static int
export_options(struct tool *t, const struct tool_args *a, struct eos_export_options *o)
{
	struct eos_error err = { 0 };
	int r;

	if (eos_export_format_parse(a->format, &o->format, &err) < 0)
		return tool_usage(t, "%s", err.msg);
	r = tool_version(t, a->from, &o->from);
	r = r == TOOL_OK ? tool_version(t, a->to, &o->to) : r;
	if (r != TOOL_OK)
		return r;
	o->sandbox = a->sandbox;
	o->dest = a->dest;
	o->fd = -1;
	if (o->format == EOS_EXPORT_DIR && !o->dest)
		return tool_usage(t, "export --format dir needs --dest");
	if (o->dest)
		return TOOL_OK;
	o->fd = STDOUT_FILENO;
	if (o->format != EOS_EXPORT_PATCH && isatty(STDOUT_FILENO))
		return tool_failf(t, -EINVAL,
				  "refusing to write an archive to a terminal: pass --dest or "
				  "redirect stdout");
	return TOOL_OK;
}

int
tool_cmd_export(struct tool *t, const struct tool_args *a)
{
	struct eos_export_options o = { 0 };
	struct eos_export_result res = { 0 };
	struct eos_error err = { 0 };
	struct eos_sandbox_info sb;
	int r;

	r = export_options(t, a, &o);
	r = r == TOOL_OK ? tool_sandbox(t, a->sandbox, &sb) : r;
	if (r != TOOL_OK)
		return r;
	r = eos_store_export(t->st, &o, &res, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	if (!o.dest)
		return summary_stderr(t, summary(sb.id, &o, &res), &res);
	return tool_output(t, summary(sb.id, &o, &res), TOOL_RENDER_ALL);
}
