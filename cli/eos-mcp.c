/* SPDX-License-Identifier: MIT */
/*
 * eos-mcp: the MCP server over stdio (doc/mcp.md). Newline-delimited JSON-RPC on stdin and
 * stdout, messages of its own on stderr only. The protocol is common/mcp.h; the calls go to eosd
 * over its gateway (eos-mcp-run.c), which is started when none answers.
 */

#include "cli/eos-mcp.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "common/catalog.h"
#include "common/cleanup.h"
#include "common/mcp-run.h"
#include "common/mcp.h"

#include "cli/eosctl.h"

enum {
	LINE_MAX_BYTES = 96 << 20, /* a message: a 64 MiB argument, JSON-escaped, and more */
};

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: eos-mcp [--set management|runtime|observability|all] [--sandbox-id ID]\n"
		"               [--state-dir DIR] [--url URL] [--token-file FILE]\n"
		"  MCP server (revision %s) on stdin and stdout: the operations of one\n"
		"  surface of eosd (all: every one) as tools; see doc/mcp.md\n",
		EOS_MCP_PROTOCOL_VERSION);
}

struct options {
	unsigned surfaces;
	const char *sandbox_id;
};

/* Parse argv into *o and host->cmd; exits 2 on a usage error (nothing started). */
static void
parse_args(int argc, char **argv, struct options *o, struct eosctl_cmd *cmd)
{
	static const struct option longs[] = {
		{ "set", required_argument, NULL, 's' },
		{ "sandbox-id", required_argument, NULL, 'i' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "url", required_argument, NULL, 'u' },
		{ "token-file", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int c, s;

	o->surfaces = 1u << EOS_SURFACE_MANAGEMENT;
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		switch (c) {
		case 's':
			s = strcmp(optarg, "all") == 0 ? EOS_SURFACE_COUNT
						       : eos_surface_parse(optarg);
			if (s < 0) {
				fprintf(stderr, "eos-mcp: unknown set '%s'\n", optarg);
				exit(EOSCTL_EXIT_USAGE);
			}
			o->surfaces =
				s == EOS_SURFACE_COUNT ? (1u << EOS_SURFACE_COUNT) - 1 : 1u << s;
			break;
		case 'i':
			o->sandbox_id = optarg;
			break;
		case 'd':
			cmd->state_dir = optarg;
			break;
		case 'u':
			cmd->url = optarg;
			break;
		case 't':
			cmd->token_file = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("eos-mcp %s\n", PACKAGE_VERSION);
			exit(0);
		default:
			usage(stderr);
			exit(EOSCTL_EXIT_USAGE);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "eos-mcp: unexpected argument '%s'\n", argv[optind]);
		exit(EOSCTL_EXIT_USAGE);
	}
	if (cmd->token_file && (o->surfaces & (o->surfaces - 1))) {
		fprintf(stderr, "eos-mcp: --token-file opens one surface: use it with a --set of "
				"one\n");
		exit(EOSCTL_EXIT_USAGE);
	}
}

/*
 * The sandbox the token of --token-file reaches, asked of eosd (ping says what the caller's
 * token reaches): *ret is the sandbox of a token limited to one, NULL for a surface token.
 */
static int
token_sandbox(const struct eosctl_cmd *cmd, unsigned surfaces, char **ret, struct eos_error *err)
{
	const struct eos_op *ping = eos_catalog_find("ping");
	struct eosctl_session *s = NULL;
	EOS_CLEANUP(json_decrefp) json_t *doc = NULL;
	const char *sb, *refusal;
	int r;

	*ret = NULL;
	if (!ping)
		return eos_error_set(err, -ENOSYS, "the catalog has no ping");
	r = eosctl_session_open(cmd, (enum eos_surface)(ffs((int)surfaces) - 1), &s, err);
	r = r ?: eosctl_session_call(s, ping, NULL, NULL, &doc, err);
	eosctl_session_close(s);
	refusal = json_string_value(json_object_get(json_object_get(doc, "error"), "message"));
	if (r < 0)
		return refusal ? eos_error_set(err, r, "%s", refusal) : r;
	sb = json_string_value(json_object_get(json_object_get(doc, "token"), "sandbox_id"));
	return !sb || (*ret = strdup(sb)) ? 0 : eos_error_set(err, -ENOMEM, "out of memory");
}

/* One message to the client: one line of compact JSON (under host->lock). */
static void
send_line(void *arg, const json_t *msg)
{
	struct eos_mcp_host *host = arg;
	cleanup_free char *text = json_dumps(msg, JSON_COMPACT);

	if (!text || host->gone)
		return;
	if (fputs(text, host->out) < 0 || fputc('\n', host->out) < 0 || fflush(host->out) != 0)
		host->gone = true; /* the client has gone */
}

/* Read stdin line by line until its end, each line one message. */
static void
serve(struct eos_mcp_host *host)
{
	cleanup_free char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	while ((n = getline(&line, &cap, stdin)) >= 0) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0)
			continue;
		pthread_mutex_lock(&host->lock);
		if ((size_t)n > LINE_MAX_BYTES)
			eos_mcp_handle_text(host->mcp, "[", 1); /* answered as a parse error */
		else
			eos_mcp_handle_text(host->mcp, line, (size_t)n);
		pthread_mutex_unlock(&host->lock);
		if (cap > (1 << 20)) { /* give a huge message's memory back */
			free(line);
			line = NULL;
			cap = 0;
		}
	}
	pthread_mutex_lock(&host->lock);
	host->closing = true;
	while (eos_mcp_in_flight(host->mcp) > 0)
		pthread_cond_wait(&host->idle, &host->lock);
	pthread_mutex_unlock(&host->lock);
}

int
main(int argc, char **argv)
{
	struct eos_mcp_host host = { .lock = PTHREAD_MUTEX_INITIALIZER,
				     .idle = PTHREAD_COND_INITIALIZER,
				     .open_lock = PTHREAD_MUTEX_INITIALIZER,
				     .out = stdout };
	struct options o = { 0 };
	cleanup_free char *token_sb = NULL;
	struct eos_mcp_config cfg;
	struct eos_error err = { 0 };
	int r;

	parse_args(argc, argv, &o, &host.cmd);
	signal(SIGPIPE, SIG_IGN);
	/* a token limited to one sandbox fixes the sandbox as --sandbox-id would */
	if (host.cmd.token_file && !o.sandbox_id &&
	    (r = token_sandbox(&host.cmd, o.surfaces, &token_sb, &err)) < 0) {
		fprintf(stderr, "eos-mcp: cannot ask eosd what the token of '%s' reaches: %s\n",
			host.cmd.token_file, eos_error_message(&err, r));
		return EOSCTL_EXIT_FAILED;
	}
	if (token_sb)
		o.sandbox_id = token_sb;
	cfg = (struct eos_mcp_config){ .name = "eos",
				       .version = PACKAGE_VERSION,
				       .instructions = eos_mcp_instructions,
				       .surfaces = o.surfaces,
				       .sandbox_id = o.sandbox_id,
				       .send = send_line,
				       .send_arg = &host,
				       .start = eos_mcp_host_start,
				       .start_arg = &host };
	if ((r = eos_mcp_new(&cfg, &host.mcp, &err)) < 0) {
		fprintf(stderr, "eos-mcp: %s\n", eos_error_message(&err, r));
		return r == -EINVAL ? EOSCTL_EXIT_USAGE : EOSCTL_EXIT_FAILED;
	}
	serve(&host);
	eos_mcp_free(host.mcp);
	return 0;
}
