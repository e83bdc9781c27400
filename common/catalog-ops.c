/* SPDX-License-Identifier: MIT */
/*
 * common/catalog-ops: the table of operations (common/catalog.h). Upstream names; the ones eos
 * adds are marked ★ in their help. Adding an operation here adds it to the gateway (which refuses
 * it until eosd has a handler), to eosctl and to the MCP tools.
 */
#include <stddef.h>

#include "common/catalog.h"

#define ARGS(a) a, sizeof(a) / sizeof((a)[0])
#define NO_ARGS NULL, 0

static const char *const export_formats[] = { "dir", "tar", "tar-zst", "patch", NULL };
static const char *const token_surfaces[] = { "runtime", "observability", NULL };

/* --- management ------------------------------------------------------------------------------- */

static const struct eos_arg create_sandbox_args[] = {
	{ "source", EOS_ARG_HOST_PATH, true, NULL, 0, 0, NULL, 1,
	  "the directory or tar / tar.gz / tar.zst archive to import" },
	{ "id", EOS_ARG_ID, false, NULL, 0, 0, NULL, 0,
	  "the new sandbox's id (default: eos-<hex>)" },
	{ "keep_git_index", EOS_ARG_BOOL, false, "false", 0, 0, NULL, 0,
	  "import .git/index files byte for byte (default: refreshed for the views)" },
};

static const struct eos_arg destroy_sandbox_args[] = {
	{ "force", EOS_ARG_BOOL, false, "false", 0, 0, NULL, 0,
	  "destroy its workspace sessions too (refused while any exists otherwise)" },
};

static const struct eos_arg export_args[] = {
	{ "format", EOS_ARG_ENUM, true, NULL, 0, 0, export_formats, 0,
	  "dir, tar, tar-zst, or patch (a unified diff git apply accepts)" },
	{ "from", EOS_ARG_VERSION, false, NULL, 0, 0, NULL, 0,
	  "the first version (default: base)" },
	{ "to", EOS_ARG_VERSION, false, NULL, 0, 0, NULL, 0, "the last version (default: head)" },
	{ "dest", EOS_ARG_HOST_PATH, false, NULL, 0, 0, NULL, 0,
	  "where to write it (required for dir; a patch without one is returned inline)" },
};

static const struct eos_arg issue_token_args[] = {
	{ "surface", EOS_ARG_ENUM, true, NULL, 0, 0, token_surfaces, 0,
	  "the surface the token opens: runtime or observability" },
	{ "ttl_seconds", EOS_ARG_INT, false, NULL, 1, 10LL * 366 * 86400, NULL, 0,
	  "seconds until it expires (default: never)" },
};

static const struct eos_arg revoke_token_args[] = {
	{ "token_id", EOS_ARG_ID, true, NULL, 0, 0, NULL, 1, "the id issue_token returned" },
};

/* --- runtime ---------------------------------------------------------------------------------- */

#define SESSION_ARG(req)                                                                \
	{                                                                               \
		"workspace_session_id", EOS_ARG_ID, req, NULL, 0, 0, NULL, req ? 1 : 0, \
			req ? "the workspace session"                                   \
			    : "the workspace session (default: none, the head)"         \
	}

static const char *const networks[] = { "shared", "isolated", NULL };
static const char *const isolations[] = { "namespaces", "none", NULL };

#define NETWORK_ARG(what)                                                                          \
	{                                                                                          \
		"network", EOS_ARG_ENUM, false, NULL, 0, 0, networks, 0,                           \
			what                                                                       \
			"'s network: shared (the host's, the default) or isolated (loopback only)" \
	}
#define ISOLATION_ARG(what)                                                                            \
	{                                                                                              \
		"isolation", EOS_ARG_ENUM, false, NULL, 0, 0, isolations, 0,                           \
			what                                                                           \
			"'s commands run in their own namespaces (the default), or with none: in the " \
			"view's host directory, for hosts that forbid user namespaces"                 \
	}

static const struct eos_arg create_session_args[] = {
	{ "workspace_session_id", EOS_ARG_ID, false, NULL, 0, 0, NULL, 0,
	  "the new session's id (default: ws-<hex>)" },
	{ "version", EOS_ARG_VERSION, false, NULL, 0, 0, NULL, 0, "its base (default: the head)" },
	NETWORK_ARG("the session"),
	ISOLATION_ARG("the session"),
};

static const struct eos_arg session_args[] = { SESSION_ARG(true) };

static const struct eos_arg publish_args[] = {
	SESSION_ARG(true),
	{ "destroy_after", EOS_ARG_BOOL, false, "false", 0, 0, NULL, 0,
	  "destroy the session once published (kept when rejected)" },
};

static const struct eos_arg mount_args[] = {
	SESSION_ARG(true),
	{ "path", EOS_ARG_HOST_PATH, true, NULL, 0, 0, NULL, 2,
	  "an empty directory where the live view appears" },
};

static const struct eos_arg fork_args[] = {
	SESSION_ARG(true),
	{ "new_workspace_session_id", EOS_ARG_ID, false, NULL, 0, 0, NULL, 0,
	  "the fork's id (default: ws-<hex>)" },
};

enum {
	CMD_MAX = (128 << 10) - 1, /* bytes of a command line: execve's limit for one argument */
	YIELD_MAX_MS = 30000,	   /* the longest a reply waits for a command */
	OUTPUT_MAX = 16 << 20,	   /* bytes of output in one reply */
	TIMEOUT_MAX_MS = 7 * 24 * 3600 * 1000, /* a week */
};

#define YIELD_ARG                                                                                         \
	{                                                                                                 \
		"yield_time_ms", EOS_ARG_INT, false, "1000", 0, YIELD_MAX_MS, NULL, 0,                    \
			"answer after this long at the latest, with status running if the command still " \
			"runs"                                                                            \
	}
#define MAX_OUTPUT_ARG                                                                            \
	{                                                                                         \
		"max_output_bytes", EOS_ARG_INT, false, "65536", 0, OUTPUT_MAX, NULL, 0,          \
			"bytes of output in this reply at most (the transcript keeps all of it: " \
			"read_command_lines)"                                                     \
	}
#define COMMAND_ARG                                                          \
	{                                                                    \
		"command_session_id", EOS_ARG_ID, true, NULL, 0, 0, NULL, 1, \
			"the command, as exec_command answered"              \
	}

static const struct eos_arg exec_args[] = {
	{ "cmd", EOS_ARG_STRING, true, NULL, 0, CMD_MAX, NULL, 1,
	  "the command line, run by bash --noprofile --norc -c in the session's namespace" },
	{ "workspace_session_id", EOS_ARG_ID, false, NULL, 0, 0, NULL, 0,
	  "the session (default: a new implicit one, published and destroyed when its last "
	  "command ends)" },
	{ "cwd", EOS_ARG_PATH, false, "\"\"", 0, 0, NULL, 0,
	  "the working directory, relative to /workspace" },
	{ "env", EOS_ARG_ENV, false, NULL, 0, 0, NULL, 0,
	  "variables added to the command's cleared environment (NAME=value or a JSON object)" },
	{ "tty", EOS_ARG_BOOL, false, "false", 0, 0, NULL, 0,
	  "run it on a terminal (a pty); else on pipes" },
	YIELD_ARG,
	{ "timeout_ms", EOS_ARG_INT, false, NULL, 1, TIMEOUT_MAX_MS, NULL, 0,
	  "kill the command and everything it started after this long (exit code 124)" },
	MAX_OUTPUT_ARG,
	NETWORK_ARG("an implicit session"),
	ISOLATION_ARG("an implicit session"),
};

static const struct eos_arg stdin_args[] = {
	COMMAND_ARG,
	{ "chars", EOS_ARG_STRING, false, "\"\"", 0, 1 << 20, NULL, 2,
	  "bytes for the command's input; \\u0003 (Ctrl-C) or \\u0004 (Ctrl-D) on a pipe "
	  "cancels it" },
	{ "close_stdin", EOS_ARG_BOOL, false, "false", 0, 0, NULL, 0,
	  "then end its input (cat, wc -l see their end): on pipes its stdin is closed, on a tty "
	  "the terminal's EOF character (Ctrl-D) is sent without cancelling it" },
	YIELD_ARG,
	MAX_OUTPUT_ARG,
};

static const struct eos_arg lines_args[] = {
	COMMAND_ARG,
	{ "offset", EOS_ARG_INT, false, "1", 1, INT32_MAX, NULL, 0,
	  "the first line of the transcript (1-based)" },
	{ "limit", EOS_ARG_INT, false, "200", 1, 10000, NULL, 0, "lines at most" },
};

static const struct eos_arg file_read_args[] = {
	{ "path", EOS_ARG_PATH, true, NULL, 0, 0, NULL, 1,
	  "the file, relative to the sandbox root" },
	SESSION_ARG(false),
	{ "offset", EOS_ARG_INT, false, "1", 1, INT32_MAX, NULL, 0, "the first line (1-based)" },
	{ "limit", EOS_ARG_INT, false, "2000", 1, 1000000, NULL, 0, "lines at most" },
	{ "version", EOS_ARG_VERSION, false, NULL, 0, 0, NULL, 0,
	  "a published version to read, without a session (default: the head)" },
};

static const struct eos_arg file_write_args[] = {
	{ "path", EOS_ARG_PATH, true, NULL, 0, 0, NULL, 1,
	  "the file, relative to the sandbox root" },
	{ "content", EOS_ARG_STRING, true, NULL, 0, 0, NULL, 0, "the file's new bytes (UTF-8)" },
	SESSION_ARG(false),
};

static const struct eos_arg file_edit_args[] = {
	{ "path", EOS_ARG_PATH, true, NULL, 0, 0, NULL, 1,
	  "the file, relative to the sandbox root" },
	{ "edits", EOS_ARG_EDITS, true, NULL, 0, EOS_CATALOG_EDITS_MAX, NULL, 0,
	  "[{old_string, new_string, replace_all}]: all apply or none" },
	SESSION_ARG(false),
};

static const struct eos_arg file_list_args[] = {
	{ "path", EOS_ARG_PATH, false, "\"\"", 0, 0, NULL, 1, "the directory (default: the root)" },
	SESSION_ARG(false),
};

static const struct eos_arg file_blame_args[] = {
	{ "path", EOS_ARG_PATH, true, NULL, 0, 0, NULL, 1,
	  "the file, relative to the sandbox root" },
	{ "version", EOS_ARG_VERSION, false, NULL, 0, 0, NULL, 0,
	  "the version (default: the head)" },
};

/* --- observability ---------------------------------------------------------------------------- */

static const char *const cgroup_scopes[] = { "sandbox", "session", NULL };

static const struct eos_arg trace_args[] = {
	{ "trace_id", EOS_ARG_STRING, false, NULL, 0, 32, NULL, 1,
	  "the trace: the trace_id an operation answered with (32 hex digits)" },
	{ "last", EOS_ARG_BOOL, false, "false", 0, 0, NULL, 0,
	  "the newest trace of a management or runtime operation" },
};

static const struct eos_arg events_args[] = {
	{ "name", EOS_ARG_STRING, false, NULL, 0, 128, NULL, 0,
	  "one event name, or a prefix ending in '.' (workspace_session.)" },
	{ "since", EOS_ARG_STRING, false, NULL, 0, 64, NULL, 0,
	  "from this time on: 2026-12-01T22:31:34Z, nanoseconds since the epoch, or an age (90s, "
	  "10m, 2h, 1d)" },
	{ "last_n", EOS_ARG_INT, false, "100", 1, 10000, NULL, 0, "at most this many, the newest" },
	{ "follow", EOS_ARG_BOOL, false, "false", 0, 0, NULL, 0,
	  "then stream each new event as it happens (server-sent events) until the client leaves" },
};

static const struct eos_arg cgroup_args[] = {
	{ "scope", EOS_ARG_ENUM, true, NULL, 0, 0, cgroup_scopes, 1,
	  "what to sample: a sandbox or a workspace session" },
	{ "id", EOS_ARG_ID, true, NULL, 0, 0, NULL, 2, "the sandbox's or the session's id" },
	{ "window", EOS_ARG_INT, false, "60", 1, 86400, NULL, 0,
	  "seconds of samples, back from now" },
};

static const struct eos_arg layerstack_args[] = {
	{ "workspace_session_id", EOS_ARG_ID, false, NULL, 0, 0, NULL, 0,
	  "a session: its base, its delta and what it shares with the others" },
};

/* --- the table -------------------------------------------------------------------------------- */

#define M EOS_SURFACE_MANAGEMENT
#define R EOS_SURFACE_RUNTIME
#define O EOS_SURFACE_OBSERVABILITY

/* name, surface, needs_sandbox, group, verb, help, args, read_only, destructive, idempotent,
 * long_running, sandbox_optional */
static const struct eos_op ops[] = {
	{ "create_sandbox", M, false, "sandbox", "create", "import a directory or tar as a sandbox",
	  ARGS(create_sandbox_args), false, false, false, true },
	{ "list_sandboxes", M, false, "sandbox", "ls", "list the sandboxes", NO_ARGS, true, false,
	  true, false },
	{ "inspect_sandbox", M, true, "sandbox", "inspect",
	  "a sandbox's head, layers, bytes, leases and sessions", NO_ARGS, true, false, true,
	  false },
	{ "destroy_sandbox", M, true, "sandbox", "destroy", "delete a sandbox and its history",
	  ARGS(destroy_sandbox_args), false, true, true, true },
	{ "squash_layerstacks", M, true, "sandbox", "squash",
	  "fold the layers no lease and not the head needs", NO_ARGS, false, false, true, true },
	{ "export_changes", M, true, "sandbox", "export",
	  "export a range of versions as a directory, a tar or a patch", ARGS(export_args), true,
	  false, true, true },
	{ "issue_token", M, true, "token", "issue",
	  "mint a runtime or observability token limited to one sandbox", ARGS(issue_token_args),
	  false, false, false, false },
	{ "revoke_token", M, false, "token", "revoke", "★ revoke a token issue_token minted",
	  ARGS(revoke_token_args), false, true, true, false },

	{ "create_workspace_session", R, true, "session", "create",
	  "lease a version and start a live workspace session over it", ARGS(create_session_args),
	  false, false, false, false },
	{ "list_workspace_sessions", R, true, "session", "ls", "★ list a sandbox's sessions",
	  NO_ARGS, true, false, true, false },
	{ "inspect_workspace_session", R, true, "session", "inspect",
	  "★ a session's state, base, delta and mounts", ARGS(session_args), true, false, true,
	  false },
	{ "publish_workspace_session", R, true, "session", "publish",
	  "publish a live session's changes as one layer (merged with the head, or rejected)",
	  ARGS(publish_args), false, false, false, true },
	{ "destroy_workspace_session", R, true, "session", "destroy",
	  "delete a session and its changes", ARGS(session_args), false, true, true, false },
	{ "mount_workspace_session", R, true, "session", "mount",
	  "show a session's live view at a directory too", ARGS(mount_args), false, false, true,
	  false },
	{ "unmount_workspace_session", R, true, "session", "unmount",
	  "★ take back the views mount_workspace_session added", ARGS(session_args), false, false,
	  true, false },
	{ "fork_workspace_session", R, true, "session", "fork",
	  "★ a new session starting from another's current state", ARGS(fork_args), false, false,
	  false, false },
	{ "exec_command", R, true, "exec", "",
	  "run a command in a session's namespace; answers when it ends or at the yield",
	  ARGS(exec_args), false, false, false, true },
	{ "write_command_stdin", R, true, "stdin", "",
	  "send input to a running command (Ctrl-C cancels it) and read what it printed since",
	  ARGS(stdin_args), false, false, false, true },
	{ "read_command_lines", R, true, "lines", "", "page through a command's whole transcript",
	  ARGS(lines_args), true, false, true, false },
	{ "file_read", R, true, "file", "read", "read lines of a file", ARGS(file_read_args), true,
	  false, true, false },
	{ "file_write", R, true, "file", "write", "write a whole file", ARGS(file_write_args),
	  false, false, true, false },
	{ "file_edit", R, true, "file", "edit", "replace exact strings in a file",
	  ARGS(file_edit_args), false, false, false, false },
	{ "file_list", R, true, "file", "ls", "★ list a directory", ARGS(file_list_args), true,
	  false, true, false },
	{ "file_blame", R, true, "file", "blame", "who wrote each line of a published file",
	  ARGS(file_blame_args), true, false, true, false },

	{ "ping", O, false, "daemon", "ping", "check that eosd answers", NO_ARGS, true, false, true,
	  false },
	{ "version", O, false, "daemon", "version", "eosd's version", NO_ARGS, true, false, true,
	  false },
	{ "snapshot", O, false, "snapshot", "",
	  "every sandbox's (or one's) head, layers, leases and sessions, and the daemon's state",
	  NO_ARGS, true, false, true, false, true },
	{ "trace", O, false, "trace", "",
	  "an operation's spans as a tree, with its events (by trace id, or the last)",
	  ARGS(trace_args), true, false, true, false, true },
	{ "events", O, false, "events", "",
	  "domain events, newest last; with follow, new ones as they happen", ARGS(events_args),
	  true, false, true, true, true },
	{ "cgroup", O, false, "cgroup", "",
	  "cpu, memory, pids and io samples of a sandbox's or a session's commands",
	  ARGS(cgroup_args), true, false, true, false, true },
	{ "layerstack", O, true, "layers", "",
	  "a sandbox's layers: bytes, paths, leases, squashed ranges; a session's share",
	  ARGS(layerstack_args), true, false, true, false, false },
};

const struct eos_op *
eos_catalog_ops(size_t *n)
{
	*n = sizeof(ops) / sizeof(ops[0]);
	return ops;
}
