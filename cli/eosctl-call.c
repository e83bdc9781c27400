/* SPDX-License-Identifier: MIT */
/*
 * eosctl-call: one operation over the wire — find eosd (starting it when none answers), send
 * POST /v1/<surface>/<operation> with the surface's token, and turn the reply into output and an
 * exit status. For a long-running operation while stderr is a terminal, progress goes to stderr
 * (eosctl-progress.c): unless --json, eosctl asks for eosd's events (Accept: text/event-stream)
 * and draws them; the "result" or "error" event that ends the stream is then the reply, output
 * exactly as a plain reply would be.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/errkind.h"
#include "common/json.h"

#include "cli/eosctl.h"
#include "cli/http.h"

enum {
	DEFAULT_TIMEOUT_MS = 120000,
	DYING_WAIT_MS = 5000, /* for a killed eosd to finish exiting */
};

struct call {
	const struct eosctl_cmd *cmd;
	char *state;		   /* owned */
	struct eosctl_endpoint ep; /* owned */
	bool from_state;	   /* the endpoint came from eosd.json: autostart may help */
	bool started;		   /* this call started eosd */
	bool json;		   /* errors as JSON */
	bool show_progress;	   /* a long-running operation, stderr a terminal */
	bool events;		   /* ... and not --json: ask for eosd's events */
	struct eosctl_progress progress;
	char *final;	  /* a stream's "result" or "error" event: its data (owned) */
	bool final_error; /* it was "error" */
	bool follow;	  /* events --follow: each "event" is printed as it comes */
	const struct eosctl_call_hooks *hooks; /* a session's call: its events go there */
};

static void
call_release(struct call *c)
{
	free(c->state);
	free(c->final);
	eosctl_endpoint_release(&c->ep);
}

static void
tick(void *arg)
{
	struct call *c = arg;

	eosctl_progress_tick(&c->progress);
}

/* events --follow: one event now, a line of JSON or of text; a note when some were missed. */
static void
follow_event(struct call *c, const char *name, const char *data)
{
	EOS_CLEANUP(json_decrefp) json_t *ev = json_loads(data, 0, NULL);

	if (strcmp(name, "dropped") == 0) {
		fprintf(stderr, "eosctl: eosd dropped events this follower was too slow for: %s\n",
			data);
		return;
	}
	if (!ev)
		return;
	if (eosctl_output_is_text(c->cmd->output))
		eosctl_obs_event_line(stdout, ev);
	else
		eos_json_print_line(stdout, ev);
	fflush(stdout);
}

/* An event of eosd's stream: progress is drawn, the last one is the reply. */
static void
on_event(void *arg, const char *name, const char *data)
{
	struct call *c = arg;

	if (c->hooks && c->hooks->on_event && strcmp(name, "result") != 0 &&
	    strcmp(name, "error") != 0) {
		c->hooks->on_event(c->hooks->arg, name, data);
		return;
	}
	if (strcmp(name, "progress") == 0) {
		eosctl_progress_event(&c->progress, data);
		return;
	}
	if (c->follow && (strcmp(name, "event") == 0 || strcmp(name, "dropped") == 0)) {
		follow_event(c, name, data);
		return;
	}
	if (strcmp(name, "result") != 0 && strcmp(name, "error") != 0)
		return; /* an event of a later eosd: not ours to draw */
	free(c->final);
	c->final = strdup(data);
	c->final_error = name[0] == 'e';
}

static int
fail(const struct call *c, const char *kind, const struct eos_error *err, int r)
{
	return eosctl_output_local_error(stderr, kind, eos_error_message(err, r), c->json);
}

/* --- where eosd is ---------------------------------------------------------------------------- */

/*
 * eosd.json names an eosd that does not answer its health check: when that eosd is exiting (a
 * SIGKILLed one whose socket still accepts until its last thread has gone), wait until it is no
 * live eosd (eosctl_daemon_info_read() then fails) and return true; false if it stays.
 */
static bool
dying(const char *state, struct eosctl_daemon_info *info)
{
	struct timespec step = { 0, 20 * 1000000L };

	if (eosctl_daemon_answers(info))
		return false;
	for (int ms = 0; ms < DYING_WAIT_MS; ms += 20) {
		struct eosctl_daemon_info now = { 0 };
		int r = eosctl_daemon_info_read(state, &now, NULL);

		eosctl_daemon_info_release(&now);
		if (r == -ENOENT || r == -ESRCH)
			return true;
		nanosleep(&step, NULL);
	}
	return false;
}

static int
endpoint_from_state(struct call *c, struct eos_error *err)
{
	struct eosctl_daemon_info info = { 0 };
	int r = eosctl_daemon_info_read(c->state, &info, err);

	if (r == 0 && !c->started && dying(c->state, &info)) {
		eosctl_daemon_info_release(&info);
		r = -ESRCH;
	}
	if ((r == -ENOENT || r == -ESRCH) && !c->started) {
		if ((r = eosctl_daemon_autostart(c->state, err)) < 0)
			return r;
		c->started = true;
		r = eosctl_daemon_info_read(c->state, &info, err);
	}
	if (r < 0)
		return r;
	eosctl_endpoint_release(&c->ep);
	r = eosctl_endpoint_parse(info.socket, &c->ep, err);
	eosctl_daemon_info_release(&info);
	c->from_state = true;
	return r;
}

static int
find_endpoint(struct call *c, struct eos_error *err)
{
	if (c->cmd->url)
		return eosctl_endpoint_parse(c->cmd->url, &c->ep, err);
	return endpoint_from_state(c, err);
}

/* --- the request ------------------------------------------------------------------------------ */

static char *
request_body(const struct eosctl_cmd *cmd)
{
	EOS_CLEANUP(json_decrefp) json_t *body = json_object();

	if (!body ||
	    (cmd->request_id &&
	     eos_json_set(body, "request_id", json_string(cmd->request_id)) < 0) ||
	    (cmd->sandbox && eos_json_set(body, "sandbox_id", json_string(cmd->sandbox)) < 0) ||
	    json_object_set(body, "args", cmd->args) < 0)
		return NULL;
	return json_dumps(body, JSON_COMPACT);
}

static int
send_op(struct call *c, const char *token, const char *body, struct eosctl_http_response *resp,
	struct eos_error *err)
{
	const struct eos_op *op = c->cmd->op;
	char target[256];
	struct eosctl_http_request req = {
		.method = "POST",
		.target = target,
		.token = token,
		.body = body,
		.body_len = strlen(body),
		.timeout_ms = c->cmd->timeout_ms > 0 ? c->cmd->timeout_ms
			      : op->long_running     ? 0
						     : DEFAULT_TIMEOUT_MS,
		.tick = c->show_progress ? tick : NULL,
		.tick_arg = c,
		.cancelled = c->hooks ? c->hooks->cancelled : NULL,
		.cancel_arg = c->hooks ? c->hooks->arg : NULL,
		.on_event = c->events ? on_event : NULL,
		.event_arg = c,
	};
	int r;

	snprintf(target, sizeof(target), "/v1/%s/%s", eos_surface_name(op->surface), op->name);
	eosctl_progress_init(&c->progress, op);
	free(c->final);
	c->final = NULL;
	r = eosctl_http_call(&c->ep, &req, resp, err);
	eosctl_progress_clear(&c->progress);
	return r;
}

/* Send; when nothing listens at eosd.json's socket (eosd was killed), start eosd and retry. */
static int
send_with_autostart(struct call *c, const char *token, const char *body,
		    struct eosctl_http_response *resp, struct eos_error *err)
{
	int r = send_op(c, token, body, resp, err);

	if ((r != -ECONNREFUSED && r != -ENOENT) || !c->from_state || c->started)
		return r;
	if ((r = eosctl_daemon_autostart(c->state, err)) < 0)
		return r;
	c->started = true;
	if ((r = endpoint_from_state(c, err)) < 0)
		return r;
	return send_op(c, token, body, resp, err);
}

/* --- the reply -------------------------------------------------------------------------------- */

/* A reply's body (ok: a success) as output and an exit status; what names it in messages. */
static int
render(const struct call *c, bool ok, const char *body, size_t len, const char *what)
{
	EOS_CLEANUP(json_decrefp) json_t *doc = json_loadb(body, len, JSON_DECODE_ANY, NULL);
	char msg[512];

	if (ok && doc) {
		eosctl_output_result(stdout, c->cmd->op, doc,
				     eosctl_output_is_text(c->cmd->output));
		return fflush(stdout) == 0 ? EOSCTL_EXIT_OK : EOSCTL_EXIT_FAILED;
	}
	if (doc && json_is_object(json_object_get(doc, "error")))
		return eosctl_output_error(stderr, doc, c->json);
	snprintf(msg, sizeof(msg), "eosd at '%s' answered %s with %s: %.200s", c->ep.name, what,
		 doc ? "no error envelope" : "a body that is not JSON", body);
	return eosctl_output_local_error(stderr, "io", msg, c->json);
}

static int
handle_reply(const struct call *c, const struct eosctl_http_response *resp)
{
	char what[64], msg[512];

	if (c->events && resp->status == 200 && resp->content_type &&
	    strncmp(resp->content_type, "text/event-stream", 17) == 0) {
		if (c->follow && !c->final)
			return EOSCTL_EXIT_OK; /* eosd ended the stream: it stopped */
		snprintf(msg, sizeof(msg),
			 "eosd at '%s' ended its event stream without a result or an error",
			 c->ep.name);
		if (!c->final)
			return eosctl_output_local_error(stderr, "io", msg, c->json);
		return render(c, !c->final_error, c->final, strlen(c->final),
			      c->final_error ? "an error event" : "a result event");
	}
	snprintf(what, sizeof(what), "status %d", resp->status);
	return render(c, resp->status == 200, resp->body, resp->body_len, what);
}

static int
run(struct call *c)
{
	cleanup_free char *token = NULL, *body = NULL;
	struct eosctl_http_response resp = { 0 };
	struct eos_error err = { 0 };
	int r;

	if ((r = eosctl_daemon_state_dir(c->cmd, &c->state, &err)) < 0)
		return fail(c, "invalid", &err, r);
	if ((r = find_endpoint(c, &err)) < 0)
		return fail(c, eos_errkind_name(eos_errkind_of(r)), &err, r);
	if ((r = eosctl_daemon_token(c->cmd, c->state, c->cmd->op->surface, &token, &err)) < 0)
		return fail(c, "unauthorized", &err, r);
	if (!(body = request_body(c->cmd)))
		return fail(c, "out_of_memory", NULL, -ENOMEM);
	if ((r = send_with_autostart(c, token, body, &resp, &err)) < 0)
		return fail(c, eos_errkind_name(eos_errkind_of(r)), &err, r);
	r = handle_reply(c, &resp);
	eosctl_http_response_release(&resp);
	return r;
}

int
eosctl_call_run(const struct eosctl_cmd *cmd)
{
	struct call c = { .cmd = cmd, .json = cmd->output == EOSCTL_OUTPUT_JSON };
	int r;

	c.follow = !strcmp(cmd->op->name, "events") &&
		   json_is_true(json_object_get(cmd->args, "follow"));
	/* A front end's stderr holds the error envelope and nothing else. */
	c.show_progress =
		cmd->op->long_running && !c.follow && !cmd->front && isatty(STDERR_FILENO);
	c.events = (c.show_progress && !c.json) || c.follow;
	r = run(&c);

	call_release(&c);
	return r;
}

/* --- several calls on one endpoint (top) -------------------------------------------------------
 */

struct eosctl_session {
	struct call c;
	struct eosctl_cmd cmd; /* a copy whose op is the one called */
	char *token;
};

int
eosctl_session_open(const struct eosctl_cmd *cmd, enum eos_surface surface,
		    struct eosctl_session **ret, struct eos_error *err)
{
	struct eosctl_session *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return eos_error_set(err, -ENOMEM, "out of memory");
	s->cmd = *cmd;
	s->cmd.args = NULL;
	s->c.cmd = &s->cmd;
	r = eosctl_daemon_state_dir(cmd, &s->c.state, err);
	r = r ?: find_endpoint(&s->c, err);
	r = r ?: eosctl_daemon_token(cmd, s->c.state, surface, &s->token, err);
	if (r < 0) {
		eosctl_session_close(s);
		return r;
	}
	*ret = s;
	return 0;
}

/* The document a session's call answered: a stream's last event, or the reply's body. */
static int
session_reply(struct eosctl_session *s, const struct eos_op *op,
	      const struct eosctl_http_response *resp, json_t **ret_doc, struct eos_error *err)
{
	bool stream = s->c.events && resp->status == 200 && resp->content_type &&
		      strncmp(resp->content_type, "text/event-stream", 17) == 0;

	if (stream && !s->c.final)
		return eos_error_set(err, -EIO,
				     "eosd ended the event stream of %s without a result or an "
				     "error",
				     op->name);
	*ret_doc = stream ? json_loads(s->c.final, 0, NULL)
			  : json_loadb(resp->body, resp->body_len, 0, NULL);
	if (!*ret_doc)
		return eos_error_set(err, -EIO, "eosd answered %s with status %d and no JSON",
				     op->name, resp->status);
	return (stream ? !s->c.final_error : resp->status == 200) ? 0 : -EIO;
}

int
eosctl_session_call_hooks(struct eosctl_session *s, const struct eos_op *op, json_t *args,
			  const char *sandbox, const struct eosctl_call_hooks *hooks,
			  json_t **ret_doc, struct eos_error *err)
{
	struct eosctl_http_response resp = { 0 };
	cleanup_free char *body = NULL;
	int r;

	s->cmd.op = op;
	s->cmd.args = args ? args : json_object();
	s->cmd.sandbox = sandbox;
	body = request_body(&s->cmd);
	if (!args)
		json_decref(s->cmd.args);
	s->cmd.args = NULL;
	if (!body)
		return eos_error_set(err, -ENOMEM, "out of memory");
	s->c.events = hooks && hooks->on_event && op->long_running;
	s->c.hooks = hooks;
	r = send_with_autostart(&s->c, s->token, body, &resp, err);
	if (r == 0)
		r = session_reply(s, op, &resp, ret_doc, err);
	s->c.events = false;
	s->c.hooks = NULL;
	eosctl_http_response_release(&resp);
	return r;
}

int
eosctl_session_call(struct eosctl_session *s, const struct eos_op *op, json_t *args,
		    const char *sandbox, json_t **ret_doc, struct eos_error *err)
{
	return eosctl_session_call_hooks(s, op, args, sandbox, NULL, ret_doc, err);
}

void
eosctl_session_close(struct eosctl_session *s)
{
	if (!s)
		return;
	call_release(&s->c);
	free(s->token);
	free(s);
}
