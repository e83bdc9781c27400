/* SPDX-License-Identifier: MIT */
/*
 * eos-store: the developer tool over the public store API (store/store.h). Private to
 * cli/eos-store*.c.
 *
 * main() (eos-store.c) parses the global options, picks a command from the table, parses that
 * command's options into a struct tool_args and calls the command. A command builds one JSON
 * document and hands it to tool_output(), which prints it as JSON (--json) or as text, so both
 * forms always carry the same data. Commands return an enum tool_status: runtime failures go
 * through tool_fail() (message on stderr, error envelope on stdout with --json).
 *
 * Commands: eos-store-read.c (ls, cat, stat, log, leases), eos-store-admin.c (import, lease,
 * unlease, squash, gc, destroy, fsck, recover, stats), eos-store-session.c (sessions, delta,
 * rm-session).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

#include "store/store.h"

/* Process exit statuses. */
enum tool_status {
	TOOL_OK = 0,
	TOOL_FAILED = 1, /* runtime error (or fsck violations) */
	TOOL_USAGE = 2,	 /* bad command line */
};

/* Options a command accepts beyond the common --store, --json and --help. */
enum tool_opt {
	TOOL_OPT_SANDBOX = 1 << 0,	   /* --sandbox ID */
	TOOL_OPT_VERSION = 1 << 1,	   /* --version L */
	TOOL_OPT_THREADS = 1 << 2,	   /* --threads N */
	TOOL_OPT_QUICK = 1 << 3,	   /* --quick */
	TOOL_OPT_SESSION = 1 << 4,	   /* --session NAME */
	TOOL_OPT_PATH = 1 << 5,		   /* --path P */
	TOOL_OPT_OPERATION = 1 << 6,	   /* --operation ID */
	TOOL_OPT_FROM = 1 << 7,		   /* --from L */
	TOOL_OPT_TO = 1 << 8,		   /* --to L */
	TOOL_OPT_FORMAT = 1 << 9,	   /* --format F */
	TOOL_OPT_DEST = 1 << 10,	   /* --dest PATH */
	TOOL_OPT_KEEP_GIT_INDEX = 1 << 11, /* --keep-git-index */
};

/* How tool_output() renders a document as text. */
enum tool_render {
	TOOL_RENDER_ALL,    /* scalars as "key  value" lines, then every array as a table */
	TOOL_RENDER_TABLES, /* arrays only (listings) */
};

struct tool_command;

/* The state of one run. */
struct tool {
	char *store_dir;		/* owned */
	bool json;			/* --json */
	struct eos_store *st;		/* owned; opened by tool_open() */
	const struct tool_command *cmd; /* borrowed from the command table */
};

/* One command's parsed arguments. Strings borrow from argv. */
struct tool_args {
	const char *sandbox;
	const char *version; /* as given; tool_version() parses it */
	const char *threads;
	bool quick;
	bool keep_git_index;
	const char *session;
	const char *path;
	const char *operation;
	const char *from, *to; /* as given; tool_version() parses them */
	const char *format;
	const char *dest;
	char **pos; /* positional arguments */
	int npos;
};

struct tool_command {
	const char *name;
	int (*fn)(struct tool *t, const struct tool_args *a);
	unsigned opts; /* enum tool_opt accepted */
	unsigned need; /* enum tool_opt required */
	int min_pos;
	int max_pos;
	const char *usage;   /* "import SRC [--sandbox ID] [--threads N]" */
	const char *summary; /* one line */
};

/* --- helpers (eos-store.c) -------------------------------------------------------------------- */

/* Report a runtime failure: "eos-store: msg" on stderr, the envelope on stdout with --json. */
int tool_fail(struct tool *t, int code, const struct eos_error *err);
int tool_failf(struct tool *t, int code, const char *fmt, ...) EOS_PRINTF(3, 4);
/* Report a usage error of the current command (message and usage on stderr); TOOL_USAGE. */
int tool_usage(struct tool *t, const char *fmt, ...) EOS_PRINTF(2, 3);
/* Open t->store_dir (creating it when create). Returns a tool status. */
int tool_open(struct tool *t, bool create);
/* Open the store and look sandbox id up. Returns a tool status. */
int tool_sandbox(struct tool *t, const char *id, struct eos_sandbox_info *ret);
/*
 * Open the store, look a->sandbox up and resolve a->version (absent: the head) into *ret_v,
 * failing when the version is beyond the head. Returns a tool status.
 */
int tool_sandbox_version(struct tool *t, const struct tool_args *a, struct eos_sandbox_info *ret,
			 uint64_t *ret_v);
/* tool_sandbox_version, then the command's PATH argument (the root when it has none). */
int tool_sandbox_path(struct tool *t, const struct tool_args *a, struct eos_sandbox_info *ret,
		      uint64_t *ret_version, char **ret_path);
/* Parse a version ("L000003", "L3", "3"); NULL gives 0 (the head). Returns a tool status. */
int tool_version(struct tool *t, const char *s, uint64_t *ret);
/* Normalise a user path (NULL = the root). Caller owns *ret. Returns a tool status. */
int tool_path(struct tool *t, const char *in, char **ret);
/* Print doc (stealing the reference; NULL means out of memory). Returns a tool status. */
int tool_output(struct tool *t, json_t *doc, enum tool_render render);

/* JSON values; NULL on OOM. */
json_t *tool_json_time(int64_t ns);    /* "2024-05-01T12:00:00Z" */
json_t *tool_json_layer(uint64_t v);   /* "L000003"; 0 gives null */
json_t *tool_json_str(const char *s);  /* any bytes, made valid UTF-8 */
json_t *tool_json_mode(uint32_t mode); /* "0755" */
/* Builds the JSON row of one array item (its typed pointer, passed as const void *). */
typedef json_t *(*tool_row_fn)(const void *item);
/* A JSON array of row(item) for the n items of size bytes at items; NULL when out of memory. */
json_t *tool_json_rows(const void *items, size_t n, size_t size, tool_row_fn row);
/* Rows {"path", "kind": "socket"} of the n paths an import or publish skipped (NULL: OOM). */
json_t *tool_json_skipped(char *const *paths, size_t n);
json_t *tool_json_rdev(uint64_t rdev); /* "major:minor" */
const char *tool_kind_name(enum eos_kind k);
const char *tool_content_kind_name(enum eos_content_kind k);

/* --- commands --------------------------------------------------------------------------------- */

int tool_cmd_import(struct tool *t, const struct tool_args *a);
int tool_cmd_publish(struct tool *t, const struct tool_args *a);
int tool_cmd_write(struct tool *t, const struct tool_args *a);
int tool_cmd_ls(struct tool *t, const struct tool_args *a);
int tool_cmd_cat(struct tool *t, const struct tool_args *a);
int tool_cmd_stat(struct tool *t, const struct tool_args *a);
int tool_cmd_blame(struct tool *t, const struct tool_args *a);
int tool_cmd_log(struct tool *t, const struct tool_args *a);
int tool_cmd_lease(struct tool *t, const struct tool_args *a);
int tool_cmd_unlease(struct tool *t, const struct tool_args *a);
int tool_cmd_leases(struct tool *t, const struct tool_args *a);
int tool_cmd_squash(struct tool *t, const struct tool_args *a);
int tool_cmd_gc(struct tool *t, const struct tool_args *a);
int tool_cmd_destroy(struct tool *t, const struct tool_args *a);
int tool_cmd_fsck(struct tool *t, const struct tool_args *a);
int tool_cmd_recover(struct tool *t, const struct tool_args *a);
int tool_cmd_stats(struct tool *t, const struct tool_args *a);
int tool_cmd_sessions(struct tool *t, const struct tool_args *a);
int tool_cmd_delta(struct tool *t, const struct tool_args *a);
int tool_cmd_rm_session(struct tool *t, const struct tool_args *a);
int tool_cmd_export(struct tool *t, const struct tool_args *a);
