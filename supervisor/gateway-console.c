/* SPDX-License-Identifier: MIT */
/*
 * supervisor/gateway: the web console's routes (doc/console.md), on the loop thread. The page
 * and its files (GET / and /console/<file>, built into eosd: supervisor/console-assets.c), the
 * login endpoints, and the check of a console's POST /v1/... (its cookie, CSRF token and Origin)
 * in place of a bearer token. Everything else the console does is an ordinary operation.
 *
 * Served on the TCP listener only (on the Unix socket only POST /console/link answers, for
 * eosctl console). Every console request must name the listener in Host (a page of another
 * site that a DNS name points at 127.0.0.1 is refused), and every POST must come from the
 * console's own page: Origin "http://<Host>", plus the session's CSRF token for everything
 * after the login. evhttp answers methods other than GET and POST itself (no CORS preflight
 * ever succeeds). Nothing here waits: bodies are at most CONSOLE_BODY_MAX bytes.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/errkind.h"
#include "common/json.h"

#include "supervisor/console.h"
#include "supervisor/gateway-internal.h"

enum {
	CONSOLE_BODY_MAX = 4096, /* a login's body */
};

#define COOKIE_NAME "eos_console"
#define CSRF_HEADER "X-EOS-CSRF"

static const char page_csp[] =
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

static const char *
header(struct evhttp_request *req, const char *name)
{
	return evhttp_find_header(evhttp_request_get_input_headers(req), name);
}

static void
add_header(struct evhttp_request *req, const char *name, const char *value)
{
	evhttp_add_header(evhttp_request_get_output_headers(req), name, value);
}

/* Whether req came over a TCP listener (not the Unix socket). */
static bool
over_tcp(struct evhttp_request *req)
{
	struct evhttp_connection *c = evhttp_request_get_connection(req);
	struct bufferevent *bev = c ? evhttp_connection_get_bufferevent(c) : NULL;
	int fd = bev ? (int)bufferevent_getfd(bev) : -1;
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);

	return fd >= 0 && getsockname(fd, (struct sockaddr *)&sa, &len) == 0 &&
	       (sa.ss_family == AF_INET || sa.ss_family == AF_INET6);
}

/* The listener's address with a wildcard host made 127.0.0.1 (for links), in buf[n]. */
static void
listen_name(const struct eosd_gateway *gw, char *buf, size_t n)
{
	const char *port = strrchr(gw->tcp, ':');

	if (strncmp(gw->tcp, "0.0.0.0:", 8) == 0 || strncmp(gw->tcp, "[::]:", 5) == 0)
		snprintf(buf, n, "127.0.0.1%s", port);
	else
		snprintf(buf, n, "%s", gw->tcp);
}

/*
 * Host names the listener: its address as bound, or localhost with its port; any host when it
 * is bound to a wildcard address (--listen-any: eosd cannot know its names).
 */
static bool
host_allowed(const struct eosd_gateway *gw, const char *host)
{
	const char *port = strrchr(gw->tcp, ':');
	char local[80];

	if (!host || !port || !gw->tcp[0])
		return false;
	if (strncmp(gw->tcp, "0.0.0.0:", 8) == 0 || strncmp(gw->tcp, "[::]:", 5) == 0)
		return true;
	snprintf(local, sizeof(local), "localhost%s", port);
	return strcmp(host, gw->tcp) == 0 || strcmp(host, local) == 0;
}

/* A POST of the console's own page: Origin is "http://" and the Host it was sent to. */
static bool
origin_allowed(struct evhttp_request *req)
{
	const char *origin = header(req, "Origin"), *host = header(req, "Host");

	return origin && host && strncmp(origin, "http://", 7) == 0 &&
	       strcmp(origin + 7, host) == 0;
}

/* The value of the console's cookie in req's Cookie header, into out[n]; false: none. */
static bool
cookie_sid(struct evhttp_request *req, char *out, size_t n)
{
	const char *p = header(req, "Cookie");
	size_t name = strlen(COOKIE_NAME), len;

	while (p && *p) {
		p += strspn(p, " ;");
		len = strcspn(p, ";");
		if (len > name && strncmp(p, COOKIE_NAME "=", name + 1) == 0 &&
		    len - name - 1 < n) {
			memcpy(out, p + name + 1, len - name - 1);
			out[len - name - 1] = '\0';
			return true;
		}
		p += len;
	}
	return false;
}

/* --- replies ---------------------------------------------------------------------------------- */

static void
no_store(struct evhttp_request *req)
{
	add_header(req, "Cache-Control", "no-store");
	add_header(req, "X-Content-Type-Options", "nosniff");
}

static void
send_json(struct evhttp_request *req, json_t *doc)
{
	cleanup_free char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;

	json_decref(doc);
	no_store(req);
	if (!text) {
		eosd_gateway_send_error(req, EOS_ERRKIND_OUT_OF_MEMORY, "eosd: out of memory");
		return;
	}
	eosd_gateway_send_text(req, 200, text);
}

static void
refuse(struct evhttp_request *req, int kind, const struct eos_error *err)
{
	no_store(req);
	eosd_gateway_send_error(req, kind, err->msg);
}

static void
serve_asset(struct evhttp_request *req, const struct eosd_console_asset *a)
{
	struct evbuffer *buf = evbuffer_new();

	add_header(req, "Content-Type", a->type);
	add_header(req, "Cache-Control", "no-cache");
	add_header(req, "X-Content-Type-Options", "nosniff");
	add_header(req, "Referrer-Policy", "no-referrer");
	add_header(req, "X-Frame-Options", "DENY");
	add_header(req, "Content-Security-Policy", page_csp);
	if (buf)
		evbuffer_add_reference(buf, a->data, a->len, NULL, NULL);
	evhttp_send_reply(req, buf ? 200 : 503, NULL, buf);
	if (buf)
		evbuffer_free(buf);
}

/* Set the cookie of login l and answer with its session. */
static void
logged_in(struct eosd_gateway *gw, struct evhttp_request *req, const struct eosd_console_login *l)
{
	struct eos_error err = { 0 };
	int kind = EOS_ERRKIND_IO;
	json_t *doc = eosd_console_session_json(gw->console, l->sid, &kind, &err);
	char cookie[256];

	if (!doc) {
		refuse(req, kind, &err);
		return;
	}
	snprintf(cookie, sizeof(cookie),
		 COOKIE_NAME "=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%d", l->sid,
		 EOSD_CONSOLE_LIFE_S);
	add_header(req, "Set-Cookie", cookie);
	send_json(req, doc);
}

/* --- the endpoints ---------------------------------------------------------------------------- */

/* The body of a login, {"tokens": [...]} or {"code": "..."}, or NULL after refusing. */
static json_t *
login_body(struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);
	const char *type = header(req, "Content-Type");
	json_t *body;

	if (!type || strncmp(type, "application/json", 16) != 0) {
		eosd_gateway_send_error(req, EOS_ERRKIND_INVALID_REQUEST,
					"a login is application/json");
		return NULL;
	}
	body = len <= CONSOLE_BODY_MAX
		       ? json_loadb((const char *)evbuffer_pullup(in, -1), len, 0, NULL)
		       : NULL;
	if (!json_is_object(body)) {
		json_decref(body);
		eosd_gateway_send_errorf(req, EOS_ERRKIND_INVALID_REQUEST,
					 "a login is {\"tokens\": [TOKEN...]} or {\"code\": CODE} "
					 "(at most %d bytes)",
					 CONSOLE_BODY_MAX);
	}
	return json_is_object(body) ? body : NULL;
}

static int
login_tokens(struct eosd_gateway *gw, json_t *list, struct eosd_console_login *l, int *kind,
	     struct eos_error *err)
{
	const char *tokens[EOSD_CONSOLE_TOKENS_MAX];
	size_t n = json_array_size(list);

	if (n < 1 || n > EOSD_CONSOLE_TOKENS_MAX) {
		*kind = EOS_ERRKIND_INVALID_REQUEST;
		return eos_error_set(err, -EINVAL, "'tokens': 1 to %d tokens",
				     EOSD_CONSOLE_TOKENS_MAX);
	}
	for (size_t i = 0; i < n; i++)
		tokens[i] = json_string_value(json_array_get(list, i)) ?: "";
	return eosd_console_login(gw->console, tokens, n, l, kind, err);
}

static void
login(struct eosd_gateway *gw, struct evhttp_request *req)
{
	EOS_CLEANUP(json_decrefp) json_t *body = login_body(req);
	struct eosd_console_login l;
	struct eos_error err = { 0 };
	int kind = EOS_ERRKIND_INVALID_REQUEST, r;
	const char *code;

	if (!body)
		return;
	code = json_string_value(json_object_get(body, "code"));
	if (code)
		r = eosd_console_login_code(gw->console, code, &l, &kind, &err);
	else
		r = login_tokens(gw, json_object_get(body, "tokens"), &l, &kind, &err);
	if (r < 0)
		refuse(req, kind, &err);
	else
		logged_in(gw, req, &l);
	explicit_bzero(&l, sizeof(l));
}

static void
logout(struct eosd_gateway *gw, struct evhttp_request *req, const char *sid)
{
	struct eos_error err = { 0 };
	struct eosd_auth_scope scope;
	int kind = EOS_ERRKIND_FORBIDDEN;

	/* ping: an operation every session may call, so only the CSRF token decides */
	if (eosd_console_check(gw->console, sid, header(req, CSRF_HEADER), eos_catalog_find("ping"),
			       &scope, &kind, &err) < 0) {
		refuse(req, kind, &err);
		return;
	}
	eosd_console_logout(gw->console, sid);
	add_header(req, "Set-Cookie",
		   COOKIE_NAME "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
	send_json(req, json_pack("{s:b}", "logged_out", 1));
}

static void
session(struct eosd_gateway *gw, struct evhttp_request *req, const char *sid)
{
	struct eos_error err = { 0 };
	int kind = EOS_ERRKIND_UNAUTHORIZED;
	json_t *doc = eosd_console_session_json(gw->console, sid, &kind, &err);

	/* not logged in is an answer, not an error: the page asks before it knows */
	if (!doc && kind == EOS_ERRKIND_UNAUTHORIZED)
		send_json(req, json_pack("{s:b, s:s}", "logged_in", 0, "message", err.msg));
	else if (!doc)
		refuse(req, kind, &err);
	else
		send_json(req, doc);
}

/* POST /console/link (eosctl console): a one-time login link for the bearer's token. */
static void
make_link(struct eosd_gateway *gw, struct evhttp_request *req)
{
	char code[EOSD_CONSOLE_SECRET_LEN + 1], where[80];
	const struct eos_op *ping = eos_catalog_find("ping");
	const char *auth = header(req, "Authorization");
	struct eosd_auth_scope scope;
	struct eos_error err = { 0 };
	struct eos_digest d;
	int kind = EOS_ERRKIND_UNAUTHORIZED;
	int64_t expires;

	if (!auth || strncasecmp(auth, "Bearer ", 7) != 0 ||
	    eosd_auth_digest(auth + 7, &d, &kind, &err) < 0 ||
	    eosd_auth_check_digest(gw->d->auth, &d, ping, NULL, false, &scope, &kind, &err) < 0) {
		if (!err.msg[0])
			eos_error_set(&err, -EACCES,
				      "no token: send 'Authorization: Bearer <token>'");
		refuse(req, kind, &err);
		return;
	}
	if (!gw->tcp[0]) {
		eosd_gateway_send_error(req, EOS_ERRKIND_UNAVAILABLE,
					"eosd listens on no TCP port, so it serves no console: "
					"start it with --listen tcp:127.0.0.1:0");
		return;
	}
	if (eosd_console_code_new(gw->console, &d, code, &expires, &err) < 0) {
		refuse(req, EOS_ERRKIND_IO, &err);
		return;
	}
	listen_name(gw, where, sizeof(where));
	send_json(req, json_pack("{s:s+++, s:I}", "url", "http://", where, "/#login=", code,
				 "expires_at", (json_int_t)expires));
	explicit_bzero(code, sizeof(code));
}

/* --- routing ---------------------------------------------------------------------------------- */

static bool
is_console_path(const char *path)
{
	return strcmp(path, "/") == 0 || strcmp(path, "/console") == 0 ||
	       strncmp(path, "/console/", 9) == 0;
}

/* A POST of the page (login, logout) must come from the page: its Origin. */
static bool
post_allowed(struct evhttp_request *req)
{
	if (origin_allowed(req))
		return true;
	no_store(req);
	eosd_gateway_send_errorf(req, EOS_ERRKIND_FORBIDDEN,
				 "cross-site request refused: Origin '%.100s' is not the console's "
				 "('http://%.100s')",
				 header(req, "Origin") ?: "(none)", header(req, "Host") ?: "");
	return false;
}

static void
route_post(struct eosd_gateway *gw, struct evhttp_request *req, const char *path)
{
	char sid[EOSD_CONSOLE_SECRET_LEN + 1] = "";

	if (strcmp(path, "/console/login") == 0 && post_allowed(req))
		login(gw, req);
	else if (strcmp(path, "/console/logout") == 0 && post_allowed(req))
		logout(gw, req, cookie_sid(req, sid, sizeof(sid)) ? sid : "");
	else if (strcmp(path, "/console/login") != 0 && strcmp(path, "/console/logout") != 0)
		eosd_gateway_send_errorf(req, EOS_ERRKIND_INVALID_REQUEST, "use GET for '%.200s'",
					 path);
}

bool
eosd_gateway_console_route(struct eosd_gateway *gw, struct evhttp_request *req, const char *path)
{
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	const struct eosd_console_asset *a;
	char sid[EOSD_CONSOLE_SECRET_LEN + 1] = "";

	if (!is_console_path(path))
		return false;
	if (strcmp(path, "/console/link") == 0 && cmd == EVHTTP_REQ_POST)
		make_link(gw, req);
	else if (!over_tcp(req))
		eosd_gateway_send_error(req, EOS_ERRKIND_NOT_FOUND,
					"the console is served on eosd's TCP listener only");
	else if (!host_allowed(gw, header(req, "Host")))
		eosd_gateway_send_errorf(req, EOS_ERRKIND_FORBIDDEN,
					 "Host '%.100s' is not this console's ('%s')",
					 header(req, "Host") ?: "(none)", gw->tcp);
	else if (cmd == EVHTTP_REQ_POST)
		route_post(gw, req, path);
	else if (strcmp(path, "/console/session") == 0)
		session(gw, req, cookie_sid(req, sid, sizeof(sid)) ? sid : "");
	else if ((a = eosd_console_asset_find(strcmp(path, "/console") == 0 ? "/" : path)))
		serve_asset(req, a);
	else
		eosd_gateway_send_errorf(req, EOS_ERRKIND_NOT_FOUND, "the console has no '%.200s'",
					 path);
	return true;
}

bool
eosd_gateway_console_request(struct evhttp_request *req)
{
	char sid[EOSD_CONSOLE_SECRET_LEN + 1];

	return !header(req, "Authorization") && cookie_sid(req, sid, sizeof(sid));
}

int
eosd_gateway_console_auth(struct eosd_gateway *gw, struct evhttp_request *req,
			  const struct eos_op *op, struct eosd_auth_scope *ret, int *ret_kind,
			  struct eos_error *err)
{
	char sid[EOSD_CONSOLE_SECRET_LEN + 1] = "";

	*ret_kind = EOS_ERRKIND_FORBIDDEN;
	if (!over_tcp(req) || !host_allowed(gw, header(req, "Host")))
		return eos_error_set(err, -EPERM,
				     "a console session is good on eosd's TCP listener only, at "
				     "'%s'",
				     gw->tcp[0] ? gw->tcp : "(none)");
	if (!origin_allowed(req))
		return eos_error_set(err, -EPERM,
				     "cross-site request refused: Origin '%.100s' is not the "
				     "console's ('http://%.100s')",
				     header(req, "Origin") ?: "(none)", header(req, "Host") ?: "");
	cookie_sid(req, sid, sizeof(sid));
	return eosd_console_check(gw->console, sid, header(req, CSRF_HEADER), op, ret, ret_kind,
				  err);
}
