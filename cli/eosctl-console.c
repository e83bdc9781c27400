/* SPDX-License-Identifier: MIT */
/*
 * eosctl console: the URL of eosd's web console with a one-time login link (doc/console.md).
 * eosd mints the link (POST /console/link with a bearer token: the management token, or
 * --token-file's); it logs in once, within two minutes, with that token's reach. eosd serves the
 * console on its TCP listener only: when no eosd runs, eosctl starts one listening on
 * 127.0.0.1 (a port the kernel picks); a running eosd without a TCP listener is reported with
 * how to restart it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/errkind.h"
#include "common/json.h"

#include "cli/eosctl.h"
#include "cli/http.h"

enum {
	LINK_TIMEOUT_MS = 10000,
};

static const char console_listen[] = "tcp:127.0.0.1:0";

static int
fail(const struct eosctl_cmd *cmd, int r, const struct eos_error *err)
{
	return eosctl_output_local_error(stderr, eos_errkind_name(eos_errkind_of(r)),
					 eos_error_message(err, r),
					 cmd->output == EOSCTL_OUTPUT_JSON);
}

/* The running eosd of state (started, listening on TCP, when none runs): its socket. */
static int
find_eosd(const char *state, char **ret_socket, struct eos_error *err)
{
	struct eosctl_daemon_info info = { 0 };
	int r = eosctl_daemon_info_read(state, &info, NULL);

	if (r < 0 || !eosctl_daemon_answers(&info)) {
		eosctl_daemon_info_release(&info);
		r = eosctl_daemon_autostart_listen(state, console_listen, err);
		r = r ?: eosctl_daemon_info_read(state, &info, err);
		if (r < 0)
			return r;
	}
	if (!info.tcp)
		r = eos_error_set(
			err, -ECONNREFUSED,
			"eosd (pid %ld) of '%s' listens on no TCP port, so it serves no "
			"console: stop it ('eosctl daemon stop') and run 'eosctl console' "
			"again, or start it with --listen %s",
			info.pid, state, console_listen);
	else if (!(*ret_socket = strdup(info.socket)))
		r = -ENOMEM;
	eosctl_daemon_info_release(&info);
	return r;
}

/* POST /console/link to ep with token: the reply document. */
static int
ask_link(const struct eosctl_endpoint *ep, const char *token, json_t **ret, struct eos_error *err)
{
	struct eosctl_http_request req = {
		.method = "POST",
		.target = "/console/link",
		.token = token,
		.body = "{}",
		.body_len = 2,
		.timeout_ms = LINK_TIMEOUT_MS,
	};
	struct eosctl_http_response resp = { 0 };
	json_t *doc, *e;
	int r = eosctl_http_call(ep, &req, &resp, err);

	if (r < 0)
		return r;
	doc = json_loadb(resp.body, resp.body_len, 0, NULL);
	e = json_object_get(json_object_get(doc, "error"), "message");
	if (resp.status != 200 || !json_is_string(json_object_get(doc, "url")))
		r = eos_error_set(err, resp.status == 401 ? -EACCES : -EIO,
				  "eosd at '%s' gave no console link (status %d): %s", ep->name,
				  resp.status,
				  json_is_string(e) ? json_string_value(e) : resp.body);
	eosctl_http_response_release(&resp);
	if (r < 0) {
		json_decref(doc);
		return r;
	}
	*ret = doc;
	return 0;
}

int
eosctl_console_run(const struct eosctl_cmd *cmd)
{
	cleanup_free char *state = NULL, *socket = NULL, *token = NULL;
	EOS_CLEANUP(json_decrefp) json_t *doc = NULL;
	struct eosctl_endpoint ep = { 0 };
	struct eos_error err = { 0 };
	int r;

	r = eosctl_daemon_state_dir(cmd, &state, &err);
	if (r == 0 && !cmd->url)
		r = find_eosd(state, &socket, &err);
	r = r ?: eosctl_endpoint_parse(cmd->url ? cmd->url : socket, &ep, &err);
	r = r ?: eosctl_daemon_token(cmd, state, EOS_SURFACE_MANAGEMENT, &token, &err);
	r = r ?: ask_link(&ep, token, &doc, &err);
	eosctl_endpoint_release(&ep);
	if (r < 0)
		return fail(cmd, r, &err);
	if (!eosctl_output_is_text(cmd->output)) {
		eosctl_output_result(stdout, NULL, doc, false);
		return EOSCTL_EXIT_OK;
	}
	printf("%s\n", json_string_value(json_object_get(doc, "url")));
	if (isatty(fileno(stderr)))
		fprintf(stderr, "eosctl: the link logs in once, within 2 minutes; after that the "
				"console asks for a token\n");
	return EOSCTL_EXIT_OK;
}
