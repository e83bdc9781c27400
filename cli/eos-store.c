/* SPDX-License-Identifier: MIT */
/*
 * eos-store: inspect and maintain an eos store (developer tool; see cli/eos-store.h).
 * This file: command table, command-line parsing, store location, errors and output.
 */
#include "cli/eos-store.h"

#include <ctype.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/errkind.h"
#include "common/json.h"
#include "common/log.h"
#include "common/path.h"
#include "common/quote.h"
#include "common/statedir.h"

static const struct tool_command commands[] = {
	{ "import", tool_cmd_import, TOOL_OPT_SANDBOX | TOOL_OPT_THREADS | TOOL_OPT_KEEP_GIT_INDEX,
	  0, 1, 1, "import SRC [--sandbox ID] [--threads N] [--keep-git-index]",
	  "import a directory or a tar archive as a new sandbox" },
	{ "ls", tool_cmd_ls, TOOL_OPT_SANDBOX | TOOL_OPT_VERSION, 0, 0, 1,
	  "ls [--sandbox ID [--version L]] [PATH]", "list sandboxes, or a directory of a sandbox" },
	{ "cat", tool_cmd_cat, TOOL_OPT_SANDBOX | TOOL_OPT_VERSION, TOOL_OPT_SANDBOX, 1, 1,
	  "cat --sandbox ID [--version L] PATH", "write a file's bytes to stdout" },
	{ "stat", tool_cmd_stat, TOOL_OPT_SANDBOX | TOOL_OPT_VERSION, TOOL_OPT_SANDBOX, 1, 1,
	  "stat --sandbox ID [--version L] PATH", "show everything the store knows about a path" },
	{ "log", tool_cmd_log, TOOL_OPT_SANDBOX, TOOL_OPT_SANDBOX, 0, 0, "log --sandbox ID",
	  "list the retained layers of a sandbox" },
	{ "lease", tool_cmd_lease, TOOL_OPT_SANDBOX | TOOL_OPT_VERSION, TOOL_OPT_SANDBOX, 1, 1,
	  "lease --sandbox ID NAME [--version L]", "pin a version (default: the head) under NAME" },
	{ "unlease", tool_cmd_unlease, TOOL_OPT_SANDBOX, TOOL_OPT_SANDBOX, 1, 1,
	  "unlease --sandbox ID NAME", "drop the lease NAME" },
	{ "leases", tool_cmd_leases, TOOL_OPT_SANDBOX, TOOL_OPT_SANDBOX, 0, 0,
	  "leases --sandbox ID", "list the leases of a sandbox" },
	{ "sessions", tool_cmd_sessions, TOOL_OPT_SANDBOX, TOOL_OPT_SANDBOX, 0, 0,
	  "sessions --sandbox ID", "list the workspace sessions of a sandbox" },
	{ "delta", tool_cmd_delta, TOOL_OPT_SANDBOX, TOOL_OPT_SANDBOX, 1, 1,
	  "delta --sandbox ID SESSION", "list a session's changes and who wrote them" },
	{ "rm-session", tool_cmd_rm_session, TOOL_OPT_SANDBOX, TOOL_OPT_SANDBOX, 1, 1,
	  "rm-session --sandbox ID SESSION", "delete a session and its changes" },
	{ "publish", tool_cmd_publish, TOOL_OPT_SANDBOX | TOOL_OPT_SESSION,
	  TOOL_OPT_SANDBOX | TOOL_OPT_SESSION, 0, 0, "publish --sandbox ID --session NAME",
	  "publish a session's changes as one layer (merged with the head, or rejected)" },
	{ "write", tool_cmd_write, TOOL_OPT_SANDBOX | TOOL_OPT_PATH | TOOL_OPT_OPERATION,
	  TOOL_OPT_SANDBOX | TOOL_OPT_PATH, 0, 0,
	  "write --sandbox ID --path P [--operation ID] < CONTENT",
	  "publish standard input as file P in one layer owned by operation ID" },
	{ "blame", tool_cmd_blame, TOOL_OPT_SANDBOX | TOOL_OPT_VERSION, TOOL_OPT_SANDBOX, 1, 1,
	  "blame --sandbox ID [--version L] PATH", "show who wrote each line of a file" },
	{ "squash", tool_cmd_squash, TOOL_OPT_SANDBOX, TOOL_OPT_SANDBOX, 0, 0,
	  "squash --sandbox ID", "fold the layers no lease and not the head needs" },
	{ "gc", tool_cmd_gc, 0, 0, 0, 0, "gc", "delete unreferenced chunks" },
	{ "destroy", tool_cmd_destroy, TOOL_OPT_SANDBOX, TOOL_OPT_SANDBOX, 0, 0,
	  "destroy --sandbox ID", "delete a sandbox and its history" },
	{ "fsck", tool_cmd_fsck, TOOL_OPT_QUICK, 0, 0, 0, "fsck [--quick]",
	  "check every invariant; exit 1 on violations" },
	{ "recover", tool_cmd_recover, 0, 0, 0, 0, "recover",
	  "drop the writes a damaged write-ahead log holds from its damage on (keeping a copy)" },
	{ "stats", tool_cmd_stats, 0, 0, 0, 0, "stats",
	  "store statistics and a per-sandbox summary" },
	{ "export", tool_cmd_export,
	  TOOL_OPT_SANDBOX | TOOL_OPT_FROM | TOOL_OPT_TO | TOOL_OPT_FORMAT | TOOL_OPT_DEST,
	  TOOL_OPT_SANDBOX | TOOL_OPT_FORMAT, 0, 0,
	  "export --sandbox ID --format dir|tar|tar-zst|patch [--from L] [--to L] [--dest PATH]",
	  "export from..to (default base..head); without --dest: to stdout, summary on stderr" },
};

enum {
	OPT_STORE = 0x100,
	OPT_JSON,
	OPT_HELP,
	OPT_SANDBOX,
	OPT_VERSION,
	OPT_THREADS,
	OPT_QUICK,
	OPT_KEEP_GIT_INDEX,
	OPT_SESSION,
	OPT_PATH,
	OPT_OPERATION,
	OPT_FROM,
	OPT_TO,
	OPT_FORMAT,
	OPT_DEST,
};

/* Every long option; a command gets the common ones plus those its mask allows. */
static const struct {
	struct option opt;
	unsigned mask; /* enum tool_opt; 0 = common */
} option_table[] = {
	{ { "store", required_argument, NULL, OPT_STORE }, 0 },
	{ { "json", no_argument, NULL, OPT_JSON }, 0 },
	{ { "help", no_argument, NULL, OPT_HELP }, 0 },
	{ { "sandbox", required_argument, NULL, OPT_SANDBOX }, TOOL_OPT_SANDBOX },
	{ { "version", required_argument, NULL, OPT_VERSION }, TOOL_OPT_VERSION },
	{ { "threads", required_argument, NULL, OPT_THREADS }, TOOL_OPT_THREADS },
	{ { "quick", no_argument, NULL, OPT_QUICK }, TOOL_OPT_QUICK },
	{ { "keep-git-index", no_argument, NULL, OPT_KEEP_GIT_INDEX }, TOOL_OPT_KEEP_GIT_INDEX },
	{ { "session", required_argument, NULL, OPT_SESSION }, TOOL_OPT_SESSION },
	{ { "path", required_argument, NULL, OPT_PATH }, TOOL_OPT_PATH },
	{ { "operation", required_argument, NULL, OPT_OPERATION }, TOOL_OPT_OPERATION },
	{ { "from", required_argument, NULL, OPT_FROM }, TOOL_OPT_FROM },
	{ { "to", required_argument, NULL, OPT_TO }, TOOL_OPT_TO },
	{ { "format", required_argument, NULL, OPT_FORMAT }, TOOL_OPT_FORMAT },
	{ { "dest", required_argument, NULL, OPT_DEST }, TOOL_OPT_DEST },
};

/* Where each string option with an argument is kept in struct tool_args. */
static const struct {
	int opt;
	unsigned mask;
	size_t offset;
} string_options[] = {
	{ OPT_SANDBOX, TOOL_OPT_SANDBOX, offsetof(struct tool_args, sandbox) },
	{ OPT_VERSION, TOOL_OPT_VERSION, offsetof(struct tool_args, version) },
	{ OPT_THREADS, TOOL_OPT_THREADS, offsetof(struct tool_args, threads) },
	{ OPT_SESSION, TOOL_OPT_SESSION, offsetof(struct tool_args, session) },
	{ OPT_PATH, TOOL_OPT_PATH, offsetof(struct tool_args, path) },
	{ OPT_OPERATION, TOOL_OPT_OPERATION, offsetof(struct tool_args, operation) },
	{ OPT_FROM, TOOL_OPT_FROM, offsetof(struct tool_args, from) },
	{ OPT_TO, TOOL_OPT_TO, offsetof(struct tool_args, to) },
	{ OPT_FORMAT, TOOL_OPT_FORMAT, offsetof(struct tool_args, format) },
	{ OPT_DEST, TOOL_OPT_DEST, offsetof(struct tool_args, dest) },
};

/* --- errors ----------------------------------------------------------------------------------- */

int
tool_fail(struct tool *t, int code, const struct eos_error *err)
{
	EOS_CLEANUP(json_decrefp) json_t *doc = NULL;
	cleanup_free char *q = NULL;

	fprintf(stderr, "eos-store: %s\n", eos_quote_cstr(eos_error_message(err, code), true, &q));
	if (t->json) {
		doc = eos_json_error(eos_errkind_name(eos_errkind_of(code)), code, err);
		if (doc)
			eos_json_print_pretty(stdout, doc);
		fflush(stdout);
	}
	return TOOL_FAILED;
}

int
tool_failf(struct tool *t, int code, const char *fmt, ...)
{
	struct eos_error err = { .code = code };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err.msg, sizeof(err.msg), fmt, ap);
	va_end(ap);
	return tool_fail(t, code, &err);
}

/* --- usage ------------------------------------------------------------------------------------ */

static void
print_main_usage(FILE *f)
{
	fputs("usage: eos-store [--store DIR] [--json] [--help] COMMAND [ARGS]\n\n"
	      "Inspect and maintain an eos store (developer tool).\n\ncommands:\n",
	      f);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-40s %s\n", commands[i].usage, commands[i].summary);
	fputs("\nDIR defaults to $EOS_STORE, else $EOS_STATE_DIR/store, else\n"
	      "${XDG_DATA_HOME:-$HOME/.local/share}/eos/store. Versions are written L000003, L3 or 3.\n"
	      "Every command accepts --store, --json and --help. Exit status: 0 success, 1 failure,\n"
	      "2 bad usage, 3 publish rejected. With $EOS_SQUASH_THRESHOLD=N, a publish or write\n"
	      "that leaves more than N layers no lease needs squashes them before the command ends.\n"
	      "A store owned by a process that is shutting down (an eosfs just unmounted) is waited\n"
	      "for, up to $EOS_STORE_WAIT seconds (default 5; 0: fail at once).\n",
	      f);
}

static void
print_command_usage(FILE *f, const struct tool_command *cmd)
{
	fprintf(f, "usage: eos-store [--store DIR] [--json] %s\n\n%s\n", cmd->usage, cmd->summary);
}

static int usage_errorv(const struct tool_command *cmd, const char *fmt, va_list ap)
	EOS_PRINTF(2, 0);

static int
usage_errorv(const struct tool_command *cmd, const char *fmt, va_list ap)
{
	fputs("eos-store: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs("\n", stderr);
	if (cmd)
		print_command_usage(stderr, cmd);
	else
		print_main_usage(stderr);
	return TOOL_USAGE;
}

static int usage_error(const struct tool_command *cmd, const char *fmt, ...) EOS_PRINTF(2, 3);

static int
usage_error(const struct tool_command *cmd, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = usage_errorv(cmd, fmt, ap);
	va_end(ap);
	return r;
}

int
tool_usage(struct tool *t, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = usage_errorv(t->cmd, fmt, ap);
	va_end(ap);
	return r;
}

/* --- store location --------------------------------------------------------------------------- */

/* An open waits for an owner that is shutting down: say so, as that may take seconds. */
static void
say_waiting(void *ctx, const char *message)
{
	cleanup_free char *q = NULL;

	(void)ctx;
	fprintf(stderr, "eos-store: %s\n", eos_quote_cstr(message, true, &q));
}

int
tool_open(struct tool *t, bool create)
{
	struct eos_store_options opts = { .create = create, .on_wait = say_waiting };
	const char *threshold = getenv("EOS_SQUASH_THRESHOLD");
	struct eos_error err = { 0 };
	int r;

	if (threshold && *threshold) {
		char *end;
		unsigned long n = strtoul(threshold, &end, 10);

		if (*end || n > UINT32_MAX)
			return tool_failf(t, -EINVAL,
					  "EOS_SQUASH_THRESHOLD '%s' is not a number of layers",
					  threshold);
		opts.squash_threshold = (unsigned)n;
	}
	if (eos_store_wait_from_env(&opts.wait_ms, &err) < 0)
		return tool_fail(t, err.code, &err);
	if (create && (r = eos_mkdir_parents(t->store_dir, 0755, false)) < 0)
		return tool_failf(t, r, "create '%s': %s", t->store_dir, strerror(-r));
	r = eos_store_open(t->store_dir, &opts, &t->st, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	if (eos_store_damage(t->st))
		fprintf(stderr,
			"eos-store: warning: store '%s' is damaged: %s; 'eos-store fsck' lists what "
			"it affects\n",
			t->store_dir, eos_store_damage(t->st));
	return TOOL_OK;
}

int
tool_sandbox(struct tool *t, const char *id, struct eos_sandbox_info *ret)
{
	struct eos_error err = { 0 };
	int r;

	r = tool_open(t, false);
	if (r != TOOL_OK)
		return r;
	r = eos_store_sandbox_get(t->st, id, ret, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	return TOOL_OK;
}

int
tool_sandbox_version(struct tool *t, const struct tool_args *a, struct eos_sandbox_info *ret,
		     uint64_t *ret_v)
{
	char id[EOS_LAYER_ID_LEN], head[EOS_LAYER_ID_LEN];
	uint64_t v = 0;
	int r;

	r = tool_version(t, a->version, &v);
	if (r == TOOL_OK)
		r = tool_sandbox(t, a->sandbox, ret);
	if (r != TOOL_OK)
		return r;
	if (v > ret->head) {
		eos_layer_id_format(v, id);
		eos_layer_id_format(ret->head, head);
		return tool_failf(t, -ENOENT, "sandbox '%s' has no version '%s' (head is %s)",
				  ret->id, id, head);
	}
	*ret_v = v ? v : ret->head;
	return TOOL_OK;
}

/* --- argument helpers ------------------------------------------------------------------------- */

int
tool_sandbox_path(struct tool *t, const struct tool_args *a, struct eos_sandbox_info *ret,
		  uint64_t *ret_version, char **ret_path)
{
	int r = tool_sandbox_version(t, a, ret, ret_version);

	return r != TOOL_OK ? r : tool_path(t, a->npos ? a->pos[0] : NULL, ret_path);
}

int
tool_version(struct tool *t, const char *s, uint64_t *ret)
{
	uint64_t v = 0;

	if (s && eos_layer_id_parse(s, &v) < 0)
		return tool_failf(t, -EINVAL, "bad version '%s' (expected L000003, L3 or 3)", s);
	*ret = v;
	return TOOL_OK;
}

int
tool_path(struct tool *t, const char *in, char **ret)
{
	struct eos_error err = { 0 };
	int r;

	r = eos_path_normalize(in ? in : "", ret, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	return TOOL_OK;
}

/* --- JSON values ------------------------------------------------------------------------------ */

json_t *
tool_json_time(int64_t ns)
{
	time_t s = (time_t)(ns / 1000000000);
	char buf[64];
	struct tm tm;

	if (ns % 1000000000 < 0)
		s--;
	if (!gmtime_r(&s, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		return json_string("invalid");
	return json_string(buf);
}

json_t *
tool_json_layer(uint64_t v)
{
	char id[EOS_LAYER_ID_LEN];

	if (v == 0)
		return json_null();
	eos_layer_id_format(v, id);
	return json_string(id);
}

json_t *
tool_json_str(const char *s)
{
	return eos_json_bytes(s, strlen(s));
}

json_t *
tool_json_mode(uint32_t mode)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%04o", mode & 07777);
	return json_string(buf);
}

const char *
tool_kind_name(enum eos_kind k)
{
	switch (k) {
	case EOS_KIND_NONE:
		return "none";
	case EOS_KIND_DIR:
		return "dir";
	case EOS_KIND_FILE:
		return "file";
	case EOS_KIND_SYMLINK:
		return "symlink";
	case EOS_KIND_WHITEOUT:
		return "whiteout";
	case EOS_KIND_FIFO:
		return "fifo";
	case EOS_KIND_CHR:
		return "chr";
	case EOS_KIND_BLK:
		return "blk";
	}
	return "unknown";
}

const char *
tool_content_kind_name(enum eos_content_kind k)
{
	switch (k) {
	case EOS_CONTENT_NONE:
		return "none";
	case EOS_CONTENT_INLINE:
		return "inline";
	case EOS_CONTENT_CHUNK:
		return "chunk";
	case EOS_CONTENT_MANIFEST:
		return "manifest";
	}
	return "unknown";
}

/* --- text output ------------------------------------------------------------------------------ */

enum {
	TABLE_COLS_MAX = 24,
};

/*
 * Text of a scalar: borrowed from v, or formatted into buf; strings quoted as git quotes paths
 * (common/quote.h), so a name never forges a line. Caller frees *owned (nested).
 */
static const char *
cell_text(const json_t *v, char *buf, size_t n, char **owned)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		return eos_quote_cstr(json_string_value(v), false, owned);
	case JSON_INTEGER:
		snprintf(buf, n, "%lld", (long long)json_integer_value(v));
		return buf;
	case JSON_REAL:
		snprintf(buf, n, "%.2f", json_real_value(v));
		return buf;
	case JSON_TRUE:
		return "yes";
	case JSON_FALSE:
		return "no";
	case JSON_NULL:
		return "-";
	case JSON_OBJECT:
	case JSON_ARRAY:
		*owned = json_dumps(v, JSON_COMPACT);
		return *owned ? *owned : "?";
	}
	return "?";
}

static bool
is_number(const json_t *v)
{
	return json_is_integer(v) || json_is_real(v);
}

struct table {
	const char *cols[TABLE_COLS_MAX];
	size_t width[TABLE_COLS_MAX];
	bool numeric[TABLE_COLS_MAX];
	size_t ncols;
};

/* Index of column key, adding it when new; -1 when the table is full. */
static int
table_col(struct table *tb, const char *key)
{
	for (size_t i = 0; i < tb->ncols; i++)
		if (strcmp(tb->cols[i], key) == 0)
			return (int)i;
	if (tb->ncols == TABLE_COLS_MAX)
		return -1;
	tb->cols[tb->ncols] = key;
	tb->width[tb->ncols] = strlen(key);
	tb->numeric[tb->ncols] = true;
	return (int)tb->ncols++;
}

static void
table_measure(struct table *tb, const json_t *rows)
{
	for (size_t i = 0; i < json_array_size(rows); i++) {
		json_t *row = json_array_get(rows, i);

		for (void *it = json_object_iter(row); it; it = json_object_iter_next(row, it)) {
			const json_t *v = json_object_iter_value(it);
			int c = table_col(tb, json_object_iter_key(it));
			cleanup_free char *owned = NULL;
			char buf[64];
			size_t len;

			if (c < 0)
				continue;
			/* not inside EOS_MAX, which evaluates its arguments twice */
			len = strlen(cell_text(v, buf, sizeof(buf), &owned));
			tb->width[c] = EOS_MAX(tb->width[c], len);
			tb->numeric[c] = tb->numeric[c] && (is_number(v) || json_is_null(v));
		}
	}
}

/* Print one row of tb->ncols cells, numbers right-aligned, without trailing blanks. */
static void
table_print_row(FILE *f, const struct table *tb, const char *const *cells)
{
	size_t end = tb->ncols;

	while (end > 0 && cells[end - 1][0] == '\0')
		end--;
	for (size_t c = 0; c < end; c++) {
		int width = c + 1 == end && !tb->numeric[c] ? 0 : (int)tb->width[c];

		fprintf(f, tb->numeric[c] ? "%*s" : "%-*s", width, cells[c]);
		fputs(c + 1 < end ? "  " : "", f);
	}
	fputc('\n', f);
}

static void
table_print_data(FILE *f, const struct table *tb, const json_t *row)
{
	char bufs[TABLE_COLS_MAX][64];
	char *owned[TABLE_COLS_MAX] = { NULL };
	const char *cells[TABLE_COLS_MAX];

	for (size_t c = 0; c < tb->ncols; c++) {
		const json_t *v = json_object_get(row, tb->cols[c]);

		cells[c] = v ? cell_text(v, bufs[c], sizeof(bufs[c]), &owned[c]) : "";
	}
	table_print_row(f, tb, cells);
	for (size_t c = 0; c < tb->ncols; c++)
		free(owned[c]);
}

static void
table_print(FILE *f, const json_t *rows)
{
	char head[TABLE_COLS_MAX][64];
	const char *cells[TABLE_COLS_MAX];
	struct table tb = { 0 };

	table_measure(&tb, rows);
	for (size_t c = 0; c < tb.ncols; c++) {
		size_t k;

		for (k = 0; tb.cols[c][k] && k + 1 < sizeof(head[c]); k++)
			head[c][k] = (char)toupper((unsigned char)tb.cols[c][k]);
		head[c][k] = '\0';
		cells[c] = head[c];
	}
	table_print_row(f, &tb, cells);
	for (size_t i = 0; i < json_array_size(rows); i++)
		table_print_data(f, &tb, json_array_get(rows, i));
}

static void
print_scalars(FILE *f, json_t *doc)
{
	size_t width = 0;

	for (void *it = json_object_iter(doc); it; it = json_object_iter_next(doc, it))
		if (!json_is_array(json_object_iter_value(it)))
			width = EOS_MAX(width, strlen(json_object_iter_key(it)));
	for (void *it = json_object_iter(doc); it; it = json_object_iter_next(doc, it)) {
		const json_t *v = json_object_iter_value(it);
		cleanup_free char *owned = NULL;
		char buf[64];

		if (!json_is_array(v))
			fprintf(f, "%-*s  %s\n", (int)width, json_object_iter_key(it),
				cell_text(v, buf, sizeof(buf), &owned));
	}
}

static void
print_text(FILE *f, json_t *doc, enum tool_render render)
{
	if (render == TOOL_RENDER_ALL)
		print_scalars(f, doc);
	for (void *it = json_object_iter(doc); it; it = json_object_iter_next(doc, it)) {
		const json_t *v = json_object_iter_value(it);

		if (!json_is_array(v) || json_array_size(v) == 0)
			continue;
		if (render == TOOL_RENDER_ALL)
			fprintf(f, "\n%s:\n", json_object_iter_key(it));
		table_print(f, v);
	}
}

int
tool_output(struct tool *t, json_t *doc_in, enum tool_render render)
{
	EOS_CLEANUP(json_decrefp) json_t *doc = doc_in;

	if (!doc)
		return tool_failf(t, -ENOMEM, "out of memory");
	if (t->json)
		eos_json_print_pretty(stdout, doc);
	else
		print_text(stdout, doc, render);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (errno == EPIPE)
			return TOOL_OK;
		return tool_failf(t, eos_neg_errno(), "write to stdout: %s", strerror(errno));
	}
	return TOOL_OK;
}

/* --- command line ----------------------------------------------------------------------------- */

struct parse {
	struct tool *t;
	const struct tool_command *cmd; /* NULL while parsing the global options */
	char **argv;
	bool help;
};

/* Returns true when c was a common option; a *status other than TOOL_OK stops parsing. */
static bool
common_option(struct parse *p, int c, int *status)
{
	const char *arg = p->argv[optind - 1];

	*status = TOOL_OK;
	switch (c) {
	case OPT_STORE:
		free(p->t->store_dir);
		p->t->store_dir = strdup(optarg);
		if (!p->t->store_dir)
			*status = tool_failf(p->t, -ENOMEM, "out of memory");
		return true;
	case OPT_JSON:
		p->t->json = true;
		return true;
	case OPT_HELP:
	case 'h':
		p->help = true;
		return true;
	case '?':
		*status = optopt && optopt < 0x100
				  ? usage_error(p->cmd, "unknown option '-%c'", optopt)
				  : usage_error(p->cmd, "unknown option '%s'", arg);
		return true;
	case ':':
		*status = usage_error(p->cmd, "option '%s' needs an argument", arg);
		return true;
	default:
		return false;
	}
}

static int
command_option(struct tool_args *a, int c, unsigned *given)
{
	if (c == OPT_QUICK) {
		a->quick = true;
		*given |= TOOL_OPT_QUICK;
		return TOOL_OK;
	}
	if (c == OPT_KEEP_GIT_INDEX) {
		a->keep_git_index = true;
		*given |= TOOL_OPT_KEEP_GIT_INDEX;
		return TOOL_OK;
	}
	for (size_t i = 0; i < EOS_ARRAY_SIZE(string_options); i++) {
		if (string_options[i].opt != c)
			continue;
		*(const char **)((char *)a + string_options[i].offset) = optarg;
		*given |= string_options[i].mask;
		return TOOL_OK;
	}
	return TOOL_USAGE;
}

/* Fill out with the long options for mask (the common ones always), NULL-terminated. */
static void
build_longopts(unsigned mask, struct option *out)
{
	size_t n = 0;

	for (size_t i = 0; i < EOS_ARRAY_SIZE(option_table); i++)
		if (option_table[i].mask == 0 || (option_table[i].mask & mask))
			out[n++] = option_table[i].opt;
	out[n] = (struct option){ 0 };
}

static int
check_args(const struct parse *p, const struct tool_args *a, unsigned given)
{
	const struct tool_command *cmd = p->cmd;

	for (size_t i = 0; i < EOS_ARRAY_SIZE(option_table); i++) {
		unsigned m = option_table[i].mask;

		if ((cmd->need & m) && !(given & m))
			return usage_error(cmd, "%s needs --%s", cmd->name,
					   option_table[i].opt.name);
	}
	if (a->npos < cmd->min_pos)
		return usage_error(cmd, "%s: missing argument", cmd->name);
	if (a->npos > cmd->max_pos)
		return usage_error(cmd, "%s: unexpected argument '%s'", cmd->name,
				   a->pos[cmd->max_pos]);
	return TOOL_OK;
}

/* Parse argv (argv[0] is the command name) into a. */
static int
parse_command(struct parse *p, int argc, char **argv, struct tool_args *a)
{
	struct option longopts[EOS_ARRAY_SIZE(option_table) + 1];
	unsigned given = 0;
	int c, status;

	build_longopts(p->cmd->opts, longopts);
	p->argv = argv;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (common_option(p, c, &status)) {
			if (status != TOOL_OK)
				return status;
		} else if (command_option(a, c, &given) != TOOL_OK) {
			return usage_error(p->cmd, "unexpected option '%s'", argv[optind - 1]);
		}
	}
	a->pos = argv + optind;
	a->npos = argc - optind;
	return p->help ? TOOL_OK : check_args(p, a, given);
}

/* Parse the global options; *ret_next receives the index of the command name. */
static int
parse_global(struct parse *p, int argc, char **argv, int *ret_next)
{
	struct option longopts[EOS_ARRAY_SIZE(option_table) + 1];
	int c, status;

	build_longopts(0, longopts);
	p->argv = argv;
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		if (!common_option(p, c, &status))
			return usage_error(NULL, "unexpected option '%s'", argv[optind - 1]);
		if (status != TOOL_OK)
			return status;
	}
	*ret_next = optind;
	return TOOL_OK;
}

static const struct tool_command *
find_command(const char *name)
{
	for (size_t i = 0; i < EOS_ARRAY_SIZE(commands); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static int
run(struct tool *t, int argc, char **argv)
{
	struct parse p = { .t = t };
	struct tool_args a = { 0 };
	int next = 0, status;

	status = parse_global(&p, argc, argv, &next);
	if (status != TOOL_OK || p.help) {
		if (status == TOOL_OK)
			print_main_usage(stdout);
		return status;
	}
	if (next >= argc)
		return usage_error(NULL, "missing command");
	p.cmd = find_command(argv[next]);
	if (!p.cmd)
		return usage_error(NULL, "unknown command '%s'", argv[next]);
	t->cmd = p.cmd;
	status = parse_command(&p, argc - next, argv + next, &a);
	if (status != TOOL_OK || p.help) {
		if (status == TOOL_OK)
			print_command_usage(stdout, p.cmd);
		return status;
	}
	if (!t->store_dir && eos_default_store_dir(&t->store_dir) < 0)
		return tool_failf(t, -ENOENT,
				  "no store: pass --store DIR or set $EOS_STORE or $HOME");
	return p.cmd->fn(t, &a);
}

int
main(int argc, char **argv)
{
	struct tool t = { 0 };
	int status;

	/* Writes to a closed pipe fail with EPIPE instead of killing the process. */
	signal(SIGPIPE, SIG_IGN);
	eos_log_set_program("eos-store");
	eos_log_init_from_env();
	status = run(&t, argc, argv);
	if (t.st)
		eos_store_autosquash_wait(t.st); /* let an automatic squash finish, not cancel it */
	eos_store_close(t.st);
	free(t.store_dir);
	return status;
}
