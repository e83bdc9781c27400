/* SPDX-License-Identifier: MIT */
/*
 * supervisor/gateway: requests to /mcp (supervisor/mcp-http.h), the loop's part. The headers are
 * checked here, in this order, each refusal a JSON-RPC error without an id:
 *
 *	Origin, when sent, a page of this machine's loopback	403
 *	the method POST or DELETE (no stream of eosd's own)	405, Allow: POST, DELETE
 *	eosd not stopping					503
 *	a bearer token eosd knows				401 (WWW-Authenticate: Bearer)
 *	the body at most EOSD_BODY_MAX bytes			413
 *	room in the worker pool's queue				503, Retry-After: 1
 *
 * then the body is moved to a job and eosd_mcp_serve() answers it on a worker. The job goes back
 * to the loop through gateway-reply.c as any request's does (its stream as "message" events,
 * its reply through eosd_gateway_mcp_send()), so the gateway's limits hold for /mcp as well.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errkind.h"
#include "common/mcp.h"

#include "supervisor/gateway-internal.h"

/* --- refusals --------------------------------------------------------------------------------- */

static void
send_json(struct evhttp_request *req, int status, const char *text)
{
	struct evbuffer *buf = text ? evbuffer_new() : NULL;

	if (buf) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
				  "application/json");
		evbuffer_add(buf, text, strlen(text));
	}
	evhttp_send_reply(req, status, NULL, buf);
	if (buf)
		evbuffer_free(buf);
}

static void
refuse(struct evhttp_request *req, int status, int kind, const char *message)
{
	char *text = eosd_mcp_error_text(EOS_MCP_INVALID_REQUEST, kind, message);

	send_json(req, status, text);
	free(text);
}

/* --- the headers ------------------------------------------------------------------------------ */

/* Whether host (of an Origin) names this machine's loopback: localhost, 127.0.0.0/8, [::1]. */
static bool
loopback_host(const char *host, size_t len)
{
	char ip[INET6_ADDRSTRLEN];
	struct in_addr a4;
	struct in6_addr a6;

	if (len == strlen("localhost") && strncasecmp(host, "localhost", len) == 0)
		return true;
	if (len >= sizeof(ip))
		return false;
	if (host[0] == '[' && host[len - 1] == ']') {
		memcpy(ip, host + 1, len - 2);
		ip[len - 2] = '\0';
		return inet_pton(AF_INET6, ip, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
	}
	memcpy(ip, host, len);
	ip[len] = '\0';
	return inet_pton(AF_INET, ip, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

/*
 * The spec: a server MUST check the Origin of every request (a browser page must not reach it
 * through DNS rebinding). Allowed: none (not a browser), or http(s)://HOST[:PORT] with HOST
 * loopback. A name that merely resolves to loopback is not: that is the rebinding attack.
 */
static bool
origin_allowed(const char *origin)
{
	const char *host, *end;

	if (!origin)
		return true;
	if (strncmp(origin, "http://", 7) == 0)
		host = origin + 7;
	else if (strncmp(origin, "https://", 8) == 0)
		host = origin + 8;
	else
		return false;
	end = host[0] == '[' ? strchr(host, ']') : host + strcspn(host, ":/");
	if (!end)
		return false;
	if (host[0] == '[')
		end++;
	if (*end == ':' && end[1] && strspn(end + 1, "0123456789") == strlen(end + 1))
		return loopback_host(host, (size_t)(end - host));
	return *end == '\0' && loopback_host(host, (size_t)(end - host));
}

/* Copy header name of req into out[EOSD_MCP_HEADER_MAX + 1]; whether it was sent. */
static bool
header_copy(struct evhttp_request *req, const char *name, char *out)
{
	const char *v = evhttp_find_header(evhttp_request_get_input_headers(req), name);

	if (v)
		snprintf(out, EOSD_MCP_HEADER_MAX + 1, "%s", v);
	return v != NULL;
}

static bool
accepts_sse(struct evhttp_request *req)
{
	const char *a = evhttp_find_header(evhttp_request_get_input_headers(req), "Accept");

	return a && strcasestr(a, "text/event-stream");
}

/*
 * The method and the token: a request (its scope in *rq) for a worker, or false after
 * refusing it.
 */
static bool
check_request(struct eosd_gateway *gw, struct evhttp_request *req, struct eosd_mcp_request *rq)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	const char *auth =
		evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
	struct eos_error err = { 0 };
	int kind = EOS_ERRKIND_UNAUTHORIZED;

	if (cmd != EVHTTP_REQ_POST && cmd != EVHTTP_REQ_DELETE) {
		evhttp_add_header(out, "Allow", "POST, DELETE");
		refuse(req, 405, EOS_ERRKIND_INVALID_REQUEST,
		       "/mcp takes POST (messages) and DELETE (end a session); eosd offers no "
		       "stream of its own (GET)");
		return false;
	}
	if (gw->d->stopping) {
		refuse(req, 503, EOS_ERRKIND_UNAVAILABLE, "eosd is stopping");
		return false;
	}
	if (eosd_auth_identify_header(gw->d->auth, auth, &rq->scope, &kind, &err) < 0) {
		if (kind == EOS_ERRKIND_UNAUTHORIZED)
			evhttp_add_header(out, "WWW-Authenticate", "Bearer realm=\"eos\"");
		refuse(req, eos_errkind_http_status(kind), kind, err.msg);
		return false;
	}
	if (evbuffer_get_length(evhttp_request_get_input_buffer(req)) > EOSD_BODY_MAX) {
		refuse(req, 413, EOS_ERRKIND_TOO_LARGE,
		       "the body is larger than the gateway's limit");
		return false;
	}
	rq->del = cmd == EVHTTP_REQ_DELETE;
	rq->sse = accepts_sse(req);
	rq->has_session = header_copy(req, "Mcp-Session-Id", rq->session);
	rq->has_version = header_copy(req, "MCP-Protocol-Version", rq->version);
	return true;
}

/* --- the worker ------------------------------------------------------------------------------- */

static void
mcp_job_run(void *arg)
{
	struct eosd_job *j = arg;
	size_t len = evbuffer_get_length(j->in);
	const char *body = len ? (const char *)evbuffer_pullup(j->in, -1) : "";

	if (!body) {
		eosd_gateway_mcp_reply(j, 503,
				       eosd_mcp_error_text(EOS_MCP_INTERNAL_ERROR,
							   EOS_ERRKIND_OUT_OF_MEMORY,
							   "eosd: out of memory"));
		return;
	}
	eosd_mcp_serve(j->gw->mcp, j, j->mcp, body, len);
}

static struct eosd_job *
job_new(struct eosd_gateway *gw, struct evhttp_request *req)
{
	struct eosd_job *j = eosd_gateway_job_new(gw, req);

	if (j && !(j->mcp = calloc(1, sizeof(*j->mcp)))) {
		eosd_gateway_job_free(j);
		return NULL;
	}
	return j;
}

void
eosd_gateway_mcp(struct eosd_gateway *gw, struct evhttp_request *req)
{
	struct eosd_mcp_request rq = { 0 };
	struct eosd_job *j;
	int r;

	if (!origin_allowed(evhttp_find_header(evhttp_request_get_input_headers(req), "Origin"))) {
		refuse(req, 403, EOS_ERRKIND_FORBIDDEN,
		       "Origin is not a page of this machine's loopback (DNS rebinding?)");
		return;
	}
	if (!check_request(gw, req, &rq))
		return;
	if (!(j = job_new(gw, req))) {
		refuse(req, 503, EOS_ERRKIND_OUT_OF_MEMORY, "eosd: out of memory");
		return;
	}
	*j->mcp = rq;
	if ((r = eosd_pool_submit(gw->pool, mcp_job_run, j)) < 0) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "1");
		refuse(req, 503, EOS_ERRKIND_UNAVAILABLE,
		       r == -EBUSY ? "eosd is busy (its queue of requests is full): try again"
				   : "eosd is stopping");
		eosd_gateway_job_free(j);
		return;
	}
	eosd_gateway_track(gw, req);
}

/* --- the answer (any thread, then the loop) --------------------------------------------------- */

void
eosd_gateway_mcp_stream(struct eosd_job *j)
{
	eosd_gateway_job_stream(j);
}

int
eosd_gateway_mcp_event(struct eosd_job *j, const char *json)
{
	return eosd_gateway_job_event(j, "message", json);
}

void
eosd_gateway_mcp_reply(struct eosd_job *j, int status, char *json)
{
	j->status = status;
	j->reply = json;
	eosd_gateway_job_finish(j);
}

void
eosd_gateway_mcp_send(struct eosd_job *j)
{
	if (j->mcp->reply_session[0])
		evhttp_add_header(evhttp_request_get_output_headers(j->req), "Mcp-Session-Id",
				  j->mcp->reply_session);
	send_json(j->req, j->status, j->reply);
}
