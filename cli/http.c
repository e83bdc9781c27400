/* SPDX-License-Identifier: MIT */
/* cli/http: endpoints, connecting, sending a request (cli/http.h); replies in http-reply.c. */
#include "cli/http.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/clock.h"

#include "cli/http-internal.h"

enum {
	CONNECT_TIMEOUT_MS = 10000,
	TICK_MS = 100,
};

/* --- endpoints -------------------------------------------------------------------------------- */

static int
parse_unix(const char *path, struct eosctl_endpoint *ep, struct eos_error *err)
{
	if (path[0] != '/' || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return eos_error_set(
			err, -EINVAL,
			"url 'unix:%s': the socket must be an absolute path of at most "
			"107 bytes",
			path);
	*ep = (struct eosctl_endpoint){ .kind = EOSCTL_ENDPOINT_UNIX };
	ep->path = strdup(path);
	ep->name = strdup(path);
	if (!ep->path || !ep->name) {
		eosctl_endpoint_release(ep);
		return eos_error_set(err, -ENOMEM, "url '%s': out of memory", path);
	}
	return 0;
}

/* Split "HOST:PORT" or "[V6]:PORT" (with an optional trailing '/') into host and port. */
static int
split_host_port(const char *hp, char **ret_host, char **ret_port)
{
	const char *colon = hp[0] == '[' ? strstr(hp, "]:") : strrchr(hp, ':');
	const char *host = hp[0] == '[' ? hp + 1 : hp;
	const char *port;
	size_t plen;

	if (!colon || colon == hp)
		return -EINVAL;
	port = colon + (hp[0] == '[' ? 2 : 1);
	plen = strcspn(port, "/");
	if (plen == 0 || plen > 5 || strspn(port, "0123456789") != plen ||
	    (port[plen] == '/' && port[plen + 1] != '\0'))
		return -EINVAL;
	*ret_host = strndup(host, (size_t)(colon - host));
	*ret_port = strndup(port, plen);
	return (*ret_host && *ret_port) ? 0 : -ENOMEM;
}

static int
parse_tcp(const char *url, const char *hp, struct eosctl_endpoint *ep, struct eos_error *err)
{
	struct eosctl_endpoint e = { .kind = EOSCTL_ENDPOINT_TCP };
	int r = split_host_port(hp, &e.host, &e.port);

	if (r == 0 && asprintf(&e.name, "%s", hp) < 0) {
		e.name = NULL;
		r = -ENOMEM;
	}
	if (r < 0) {
		eosctl_endpoint_release(&e);
		return eos_error_set(err, r, "url '%s': %s", url,
				     r == -ENOMEM
					     ? "out of memory"
					     : "expected http://HOST:PORT (a loopback address)");
	}
	e.name[strcspn(e.name, "/")] = '\0';
	*ep = e;
	return 0;
}

int
eosctl_endpoint_parse(const char *url, struct eosctl_endpoint *ep, struct eos_error *err)
{
	if (strncmp(url, "unix:", 5) == 0)
		return parse_unix(url + 5, ep, err);
	if (url[0] == '/')
		return parse_unix(url, ep, err);
	if (strncmp(url, "http://", 7) == 0)
		return parse_tcp(url, url + 7, ep, err);
	return eos_error_set(err, -EINVAL,
			     "url '%s': expected unix:PATH, an absolute socket path, or "
			     "http://HOST:PORT",
			     url);
}

void
eosctl_endpoint_release(struct eosctl_endpoint *ep)
{
	if (!ep)
		return;
	free(ep->path);
	free(ep->host);
	free(ep->port);
	free(ep->name);
	*ep = (struct eosctl_endpoint){ 0 };
}

/* --- waiting ---------------------------------------------------------------------------------- */

int
eosctl_http_wait(struct eosctl_http_conn *c, short events, struct eos_error *err)
{
	struct pollfd p = { .fd = c->fd, .events = events };

	for (;;) {
		int64_t left_ms = TICK_MS;
		int r;

		if (c->cancelled && c->cancelled(c->cancel_arg))
			return eos_error_set(err, -ECANCELED,
					     "the call to eosd at '%s' was abandoned", c->ep->name);
		if (c->deadline_ns > 0) {
			int64_t left = c->deadline_ns - eos_mono_ns();

			if (left <= 0)
				return eos_error_set(err, -ETIMEDOUT,
						     "eosd at '%s' did not answer within %d ms",
						     c->ep->name, c->timeout_ms);
			left_ms = EOS_MIN(left_ms, left / 1000000 + 1);
		}
		r = poll(&p, 1, (int)left_ms);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return eos_error_set(err, eos_neg_errno(), "eosd at '%s': poll: %s",
					     c->ep->name, strerror(errno));
		if (r == 0 && c->tick)
			c->tick(c->tick_arg);
	}
}

/* --- connecting ------------------------------------------------------------------------------- */

static int
refused(const struct eosctl_endpoint *ep, int code, struct eos_error *err)
{
	return eos_error_set(err, code, "eosd at '%s' does not answer: %s", ep->name,
			     strerror(-code));
}

/* Finish a non-blocking connect on c->fd within CONNECT_TIMEOUT_MS (or the call's deadline). */
static int
finish_connect(struct eosctl_http_conn *c, struct eos_error *err)
{
	int64_t saved = c->deadline_ns, limit = eos_mono_ns() + CONNECT_TIMEOUT_MS * 1000000LL;
	int soerr = 0, r;
	socklen_t len = sizeof(soerr);

	if (saved <= 0 || saved > limit)
		c->deadline_ns = limit;
	r = eosctl_http_wait(c, POLLOUT, err);
	c->deadline_ns = saved;
	if (r < 0)
		return r;
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		soerr = errno;
	return soerr ? refused(c->ep, -soerr, err) : 0;
}

static int
connect_addr(struct eosctl_http_conn *c, const struct sockaddr *sa, socklen_t len,
	     struct eos_error *err)
{
	cleanup_close int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int r;

	if (fd < 0)
		return eos_error_set(err, eos_neg_errno(), "eosd at '%s': socket: %s", c->ep->name,
				     strerror(errno));
	c->fd = fd;
	if (connect(fd, sa, len) < 0) {
		if (errno != EINPROGRESS && errno != EAGAIN) {
			c->fd = -1;
			return refused(c->ep, eos_neg_errno(), err);
		}
		if ((r = finish_connect(c, err)) < 0) {
			c->fd = -1;
			return r;
		}
	}
	c->fd = TAKE_FD(fd);
	return 0;
}

static int
connect_unix(struct eosctl_http_conn *c, struct eos_error *err)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	memcpy(sun.sun_path, c->ep->path, strlen(c->ep->path) + 1);
	return connect_addr(c, (const struct sockaddr *)&sun, sizeof(sun), err);
}

static int
connect_tcp(struct eosctl_http_conn *c, struct eos_error *err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	int r = getaddrinfo(c->ep->host, c->ep->port, &hints, &ai);

	if (r != 0)
		return eos_error_set(err, -EINVAL, "eosd at '%s': %s", c->ep->name,
				     gai_strerror(r));
	r = connect_addr(c, ai->ai_addr, ai->ai_addrlen, err);
	freeaddrinfo(ai);
	return r;
}

/* --- sending ---------------------------------------------------------------------------------- */

static int
format_head(const struct eosctl_endpoint *ep, const struct eosctl_http_request *req,
	    struct eos_buf *out)
{
	cleanup_free char *head = NULL;
	int n;

	n = asprintf(&head,
		     "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: eosctl\r\nConnection: close\r\n"
		     "Accept: %sapplication/json\r\n%s%s%s",
		     req->method, req->target, ep->kind == EOSCTL_ENDPOINT_TCP ? ep->name : "eosd",
		     req->on_event ? "text/event-stream, " : "",
		     req->token ? "Authorization: Bearer " : "", req->token ? req->token : "",
		     req->token ? "\r\n" : "");
	if (n < 0) {
		head = NULL;
		return -ENOMEM;
	}
	if (eos_buf_append(out, head, (size_t)n) < 0)
		return -ENOMEM;
	if (req->body) {
		char cl[96];

		n = snprintf(cl, sizeof(cl),
			     "Content-Type: application/json\r\nContent-Length: %zu\r\n",
			     req->body_len);
		if (eos_buf_append(out, cl, (size_t)n) < 0)
			return -ENOMEM;
	}
	if (eos_buf_append_str(out, "\r\n") < 0 ||
	    (req->body && eos_buf_append(out, req->body, req->body_len) < 0))
		return -ENOMEM;
	return 0;
}

/* Write all of p; 1 when the peer closed its reading side (EPIPE, ECONNRESET). */
static int
send_all(struct eosctl_http_conn *c, const uint8_t *p, size_t n, struct eos_error *err)
{
	while (n > 0) {
		ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
		int r;

		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
			return 1;
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return eos_error_set(err, eos_neg_errno(), "eosd at '%s': send: %s",
					     c->ep->name, strerror(errno));
		if ((r = eosctl_http_wait(c, POLLOUT, err)) < 0)
			return r;
	}
	return 0;
}

static int
send_request(struct eosctl_http_conn *c, const struct eosctl_http_request *req,
	     struct eos_error *err)
{
	struct eos_buf out;
	int r;

	eos_buf_init(&out);
	if (format_head(c->ep, req, &out) < 0) {
		eos_buf_release(&out);
		return eos_error_set(err, -ENOMEM, "eosd at '%s': out of memory", c->ep->name);
	}
	r = send_all(c, out.data, out.len, err);
	eos_buf_release(&out);
	return r;
}

/* --- a call ----------------------------------------------------------------------------------- */

int
eosctl_http_call(const struct eosctl_endpoint *ep, const struct eosctl_http_request *req,
		 struct eosctl_http_response *resp, struct eos_error *err)
{
	struct eosctl_http_conn c = { .fd = -1,
				      .ep = ep,
				      .timeout_ms = req->timeout_ms,
				      .tick = req->tick,
				      .tick_arg = req->tick_arg,
				      .cancelled = req->cancelled,
				      .cancel_arg = req->cancel_arg,
				      .on_event = req->on_event,
				      .event_arg = req->event_arg };
	int r;

	if (req->timeout_ms > 0)
		c.deadline_ns = eos_mono_ns() + req->timeout_ms * 1000000LL;
	eos_buf_init(&c.in);
	r = ep->kind == EOSCTL_ENDPOINT_UNIX ? connect_unix(&c, err) : connect_tcp(&c, err);
	if (r >= 0)
		r = send_request(&c, req, err);
	if (r >= 0)
		r = eosctl_http_read_reply(&c, resp, err);
	if (c.fd >= 0)
		close(c.fd);
	eos_buf_release(&c.in);
	return r < 0 ? r : 0;
}

void
eosctl_http_response_release(struct eosctl_http_response *resp)
{
	if (!resp)
		return;
	free(resp->body);
	free(resp->content_type);
	*resp = (struct eosctl_http_response){ 0 };
}
