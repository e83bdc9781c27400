/* SPDX-License-Identifier: MIT */
/*
 * supervisor/commands-ops: the handlers of exec_command, write_command_stdin and
 * read_command_lines (doc/commands.md), over the command engine (supervisor/commands.h).
 */
#include <errno.h>
#include <string.h>

#include "common/errkind.h"
#include "common/json.h"

#include "supervisor/commands.h"
#include "supervisor/obs.h"
#include "supervisor/ops.h"
#include "supervisor/session.h"

static const char *
arg_str(const struct eosd_call *c, const char *name)
{
	return json_string_value(json_object_get(c->args, name));
}

static int64_t
arg_int(const struct eosd_call *c, const char *name, int64_t def)
{
	json_t *v = json_object_get(c->args, name);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

static int
no_engine(struct eos_error *err)
{
	return eos_error_set(err, -ENOTSUP, "this eosd runs no commands");
}

/* The options of an implicit session from the arguments; -EINVAL when given with a session. */
static int
ns_opts(const struct eosd_call *c, bool implicit, struct eosd_ns_opts *o, struct eos_error *err)
{
	const char *net = arg_str(c, "network"), *iso = arg_str(c, "isolation");

	if (!implicit && (net || iso))
		return eos_error_set(err, -EINVAL,
				     "argument '%s': only for an implicit session (the session "
				     "'%s' has its own)",
				     net ? "network" : "isolation",
				     arg_str(c, "workspace_session_id"));
	*o = (struct eosd_ns_opts){ .implicit = implicit };
	o->network = net && !strcmp(net, "isolated") ? EOSD_HOLDER_ISOLATED : EOSD_HOLDER_SHARED;
	o->isolation = iso && !strcmp(iso, "none") ? EOSD_HOLDER_NONE : EOSD_HOLDER_NAMESPACES;
	return 0;
}

/* Traced as command.exec (→ workspace_session.create for an implicit session). */
int
eosd_op_exec_command(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	char name[EOS_SESSION_NAME_MAX + 1] = "";
	const char *session = arg_str(c, "workspace_session_id");
	struct eosd_exec_req q = { 0 };
	struct eosd_ns_opts o;
	struct eosd_span sp;
	int kind = -1, r;

	if (!d->commands)
		return no_engine(err);
	r = ns_opts(c, !session, &o, err);
	eosd_span_begin(d->obs, &sp, "command.exec", c->sandbox_id);
	if (r == 0 && !session) {
		r = eosd_session_create(d, c->sandbox_id, NULL, 0, &o, name, NULL, err);
		session = name;
	}
	eosd_span_set_session(&sp, session);
	q = (struct eosd_exec_req){ .sandbox = c->sandbox_id,
				    .session = session,
				    .cmd = arg_str(c, "cmd"),
				    .cwd = arg_str(c, "cwd"),
				    .env = json_object_get(c->args, "env"),
				    .tty = json_is_true(json_object_get(c->args, "tty")),
				    .yield_ms = (int)arg_int(c, "yield_time_ms", 1000),
				    .timeout_ms = arg_int(c, "timeout_ms", 0),
				    .max_output = (size_t)arg_int(c, "max_output_bytes", 65536),
				    .implicit = o.implicit };
	eosd_span_attr_str(&sp, "cmd", q.cmd);
	r = r ?: eosd_commands_exec(d->commands, &q, c, out, &kind, err);
	if (r < 0 && o.implicit && name[0]) /* it never ran: its session goes too */
		(void)eosd_session_destroy(d, c->sandbox_id, name, NULL);
	if (r == 0) {
		eosd_span_attr(&sp, "command_session_id",
			       json_incref(json_object_get(*out, "command_session_id")));
		eosd_span_attr(&sp, "status", json_incref(json_object_get(*out, "status")));
	}
	eosd_span_end(&sp, r, err);
	c->kind = kind;
	return r;
}

/* The command named by the call, if it belongs to the call's sandbox. */
static int
command_of(struct eosd *d, struct eosd_call *c, const char **ret, struct eos_error *err)
{
	struct eosd_command_place at;
	const char *id = arg_str(c, "command_session_id");

	*ret = id;
	if (eosd_commands_where(d->commands, id, &at) == 0 &&
	    strcmp(at.sandbox, c->sandbox_id) != 0)
		return eos_error_set(err, -ENOENT, "command '%s' does not exist in sandbox '%s'",
				     id, c->sandbox_id);
	return 0;
}

int
eosd_op_write_command_stdin(struct eosd *d, struct eosd_call *c, json_t **out,
			    struct eos_error *err)
{
	json_t *chars = json_object_get(c->args, "chars");
	struct eosd_stdin_req q = { 0 };
	int r;

	if (!d->commands)
		return no_engine(err);
	r = command_of(d, c, &q.id, err);
	q.chars = json_string_value(chars) ?: "";
	q.len = json_string_length(chars);
	q.close = json_is_true(json_object_get(c->args, "close_stdin"));
	q.yield_ms = (int)arg_int(c, "yield_time_ms", 1000);
	q.max_output = (size_t)arg_int(c, "max_output_bytes", 65536);
	return r ?: eosd_commands_stdin(d->commands, &q, c, out, err);
}

int
eosd_op_read_command_lines(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	const char *id;
	int r;

	if (!d->commands)
		return no_engine(err);
	r = command_of(d, c, &id, err);
	return r
		       ?: eosd_commands_lines(d->commands, id, arg_int(c, "offset", 1),
					      arg_int(c, "limit", 200), out, err);
}
