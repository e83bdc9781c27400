/* SPDX-License-Identifier: MIT */
/*
 * cli/http-reply: reading an HTTP/1.1 reply — status line, headers, and a body framed by
 * Content-Length, chunked transfer coding or the end of the connection (RFC 9112 §6.3).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "common/buf.h"
#include "common/cleanup.h"

#include "cli/http-internal.h"

enum {
	READ_STEP = 64 << 10,
	CHUNK_LINE_MAX = 1024,
};

struct head {
	int status;
	bool chunked;
	bool has_length;
	size_t length;
	char *content_type; /* owned */
	size_t bytes;	    /* of the status line and headers read so far */
};

static int
malformed(const struct eosctl_http_conn *c, const char *what, struct eos_error *err)
{
	return eos_error_set(err, -EPROTO, "eosd at '%s' sent a malformed reply: %s", c->ep->name,
			     what);
}

static int
cut_short(const struct eosctl_http_conn *c, struct eos_error *err)
{
	if (c->in.len == 0)
		return eos_error_set(err, -EPROTO,
				     "eosd at '%s' closed the connection without answering",
				     c->ep->name);
	return eos_error_set(err, -EPROTO,
			     "eosd at '%s' closed the connection before the end of its reply",
			     c->ep->name);
}

/* Read more bytes into c->in: 1 when some came, 0 at the end of the connection. */
static int
fill(struct eosctl_http_conn *c, struct eos_error *err)
{
	while (!c->eof) {
		ssize_t n;
		int r;

		if (eos_buf_reserve(&c->in, READ_STEP) < 0)
			return eos_error_set(err, -ENOMEM, "eosd at '%s': out of memory",
					     c->ep->name);
		n = recv(c->fd, c->in.data + c->in.len, READ_STEP, 0);
		if (n > 0) {
			c->in.len += (size_t)n;
			c->in.data[c->in.len] = '\0';
			return 1;
		}
		if (n == 0 || errno == ECONNRESET) {
			c->eof = true;
			break;
		}
		if (errno != EAGAIN && errno != EINTR)
			return eos_error_set(err, eos_neg_errno(), "eosd at '%s': recv: %s",
					     c->ep->name, strerror(errno));
		if ((r = eosctl_http_wait(c, POLLIN, err)) < 0)
			return r;
	}
	return 0;
}

/* Make n unread bytes available from c->pos on; -EPROTO when the peer closes first. */
static int
need(struct eosctl_http_conn *c, size_t n, struct eos_error *err)
{
	while (c->in.len - c->pos < n) {
		int r = fill(c, err);

		if (r < 0)
			return r;
		if (r == 0)
			return cut_short(c, err);
	}
	return 0;
}

/*
 * The next line (without its CRLF or bare LF), NUL-terminated in place, at most max bytes;
 * consumed from c->pos.
 */
static int
read_line(struct eosctl_http_conn *c, size_t max, char **ret, struct eos_error *err)
{
	size_t scanned = 0;

	for (;;) {
		char *start = (char *)c->in.data + c->pos;
		char *nl = c->in.len > c->pos
				   ? memchr(start + scanned, '\n', c->in.len - c->pos - scanned)
				   : NULL;
		int r;

		if (nl) {
			size_t len = (size_t)(nl - start);

			c->pos += len + 1;
			if (len > 0 && start[len - 1] == '\r')
				len--;
			start[len] = '\0';
			*ret = start;
			return 0;
		}
		scanned = c->in.len - c->pos;
		if (scanned > max)
			return eos_error_set(err, -EMSGSIZE,
					     "eosd at '%s' sent a reply line above %zu bytes",
					     c->ep->name, max);
		if ((r = fill(c, err)) < 0)
			return r;
		if (r == 0)
			return cut_short(c, err);
	}
}

/* --- the head --------------------------------------------------------------------------------- */

static int
parse_status(struct eosctl_http_conn *c, const char *line, struct head *h, struct eos_error *err)
{
	if (strncmp(line, "HTTP/1.", 7) != 0 || (line[7] != '0' && line[7] != '1') ||
	    line[8] != ' ' || line[9] < '1' || line[9] > '5' || line[10] < '0' || line[10] > '9' ||
	    line[11] < '0' || line[11] > '9' || (line[12] != ' ' && line[12] != '\0'))
		return malformed(c, "not an HTTP/1.x status line", err);
	h->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
	return 0;
}

static int
parse_length(struct eosctl_http_conn *c, const char *v, struct head *h, struct eos_error *err)
{
	char *end;
	unsigned long long n;

	if (*v < '0' || *v > '9')
		return malformed(c, "Content-Length is not a number", err);
	errno = 0;
	n = strtoull(v, &end, 10);
	end += strspn(end, " \t");
	if (errno || *end)
		return malformed(c, "Content-Length is not a number", err);
	if (h->has_length && h->length != n)
		return malformed(c, "two different Content-Length headers", err);
	if (n > EOSCTL_HTTP_BODY_MAX)
		return eos_error_set(err, -EMSGSIZE, "eosd at '%s' sent a body above %d bytes",
				     c->ep->name, EOSCTL_HTTP_BODY_MAX);
	h->has_length = true;
	h->length = (size_t)n;
	return 0;
}

static int
parse_header(struct eosctl_http_conn *c, char *line, struct head *h, struct eos_error *err)
{
	char *colon = strchr(line, ':');
	char *v;

	if (!colon || colon == line || strcspn(line, " \t") < (size_t)(colon - line))
		return malformed(c, "a header line without a name", err);
	*colon = '\0';
	v = colon + 1 + strspn(colon + 1, " \t");
	if (strcasecmp(line, "Content-Length") == 0)
		return parse_length(c, v, h, err);
	if (strcasecmp(line, "Transfer-Encoding") == 0) {
		const char *last = strrchr(v, ',');

		last = last ? last + 1 + strspn(last + 1, " \t") : v;
		h->chunked = strncasecmp(last, "chunked", 7) == 0;
		if (!h->chunked)
			return malformed(c, "a transfer coding other than chunked", err);
	} else if (strcasecmp(line, "Content-Type") == 0 && !h->content_type) {
		if (!(h->content_type = strdup(v)))
			return eos_error_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

static int
read_head(struct eosctl_http_conn *c, struct head *h, struct eos_error *err)
{
	char *line;
	int r;

	if ((r = read_line(c, EOSCTL_HTTP_HEADER_MAX, &line, err)) < 0)
		return r;
	if ((r = parse_status(c, line, h, err)) < 0)
		return r;
	h->bytes = strlen(line);
	for (;;) {
		if ((r = read_line(c, EOSCTL_HTTP_HEADER_MAX, &line, err)) < 0)
			return r;
		if (line[0] == '\0')
			return 0;
		h->bytes += strlen(line) + 2;
		if (h->bytes > EOSCTL_HTTP_HEADER_MAX)
			return eos_error_set(err, -EMSGSIZE,
					     "eosd at '%s' sent headers above %d bytes",
					     c->ep->name, EOSCTL_HTTP_HEADER_MAX);
		if ((r = parse_header(c, line, h, err)) < 0)
			return r;
	}
}

/* --- the body --------------------------------------------------------------------------------- */

/* Events: n bytes of the stream go to the parser as they come. */
static int
take_events(struct eosctl_http_conn *c, size_t n, struct eos_error *err)
{
	int r = eosctl_sse_feed(c->sse, c->in.data + c->pos, n);

	c->pos += n;
	if (r == -EMSGSIZE)
		return eos_error_set(err, r, "eosd at '%s' sent an event above %d bytes",
				     c->ep->name, EOSCTL_HTTP_BODY_MAX);
	return r < 0 ? eos_error_set(err, r, "eosd at '%s': out of memory", c->ep->name) : 0;
}

static int
take(struct eosctl_http_conn *c, size_t n, struct eos_buf *body, struct eos_error *err)
{
	int r = need(c, n, err);

	if (r < 0)
		return r;
	if (c->sse)
		return take_events(c, n, err);
	if (body->len + n > EOSCTL_HTTP_BODY_MAX)
		return eos_error_set(err, -EMSGSIZE, "eosd at '%s' sent a body above %d bytes",
				     c->ep->name, EOSCTL_HTTP_BODY_MAX);
	if (eos_buf_append(body, c->in.data + c->pos, n) < 0)
		return eos_error_set(err, -ENOMEM, "eosd at '%s': out of memory", c->ep->name);
	c->pos += n;
	return 0;
}

/* One chunk: 1 for a chunk of data, 0 for the last one (its trailers read). */
static int
read_chunk(struct eosctl_http_conn *c, struct eos_buf *body, struct eos_error *err)
{
	char *line, *end;
	unsigned long long n;
	int r;

	if ((r = read_line(c, CHUNK_LINE_MAX, &line, err)) < 0)
		return r;
	errno = 0;
	n = strtoull(line, &end, 16);
	if (errno || end == line || (*end && *end != ';' && *end != ' ' && *end != '\t'))
		return malformed(c, "a chunk size is not hexadecimal", err);
	if (n > EOSCTL_HTTP_BODY_MAX)
		return eos_error_set(err, -EMSGSIZE, "eosd at '%s' sent a body above %d bytes",
				     c->ep->name, EOSCTL_HTTP_BODY_MAX);
	if (n == 0) {
		do {
			if ((r = read_line(c, EOSCTL_HTTP_HEADER_MAX, &line, err)) < 0)
				return r;
		} while (line[0] != '\0');
		return 0;
	}
	if ((r = take(c, (size_t)n, body, err)) < 0)
		return r;
	if ((r = read_line(c, CHUNK_LINE_MAX, &line, err)) < 0)
		return r;
	return line[0] == '\0' ? 1 : malformed(c, "a chunk is longer than its size", err);
}

static int
read_to_end(struct eosctl_http_conn *c, struct eos_buf *body, struct eos_error *err)
{
	int r;

	for (;;) {
		size_t have = c->in.len - c->pos;

		if (have > 0 && (r = take(c, have, body, err)) < 0)
			return r;
		if ((r = fill(c, err)) <= 0)
			return r;
	}
}

static int
read_body(struct eosctl_http_conn *c, const struct head *h, struct eos_buf *body,
	  struct eos_error *err)
{
	int r;

	if (h->status == 204 || h->status == 304)
		return 0;
	if (h->chunked) {
		while ((r = read_chunk(c, body, err)) > 0)
			;
		return r;
	}
	if (h->has_length)
		return h->length ? take(c, h->length, body, err) : 0;
	return read_to_end(c, body, err);
}

/* Whether a Content-Type is text/event-stream (parameters aside). */
static bool
is_event_stream(const char *type)
{
	return type && strncasecmp(type, "text/event-stream", 17) == 0 &&
	       (type[17] == '\0' || type[17] == ';' || type[17] == ' ');
}

int
eosctl_http_read_reply(struct eosctl_http_conn *c, struct eosctl_http_response *resp,
		       struct eos_error *err)
{
	struct eosctl_sse sse = { .fn = c->on_event, .arg = c->event_arg };
	struct head h = { 0 };
	struct eos_buf body;
	int r;

	do { /* skip interim 1xx replies */
		free(h.content_type);
		h = (struct head){ 0 };
		if ((r = read_head(c, &h, err)) < 0) {
			free(h.content_type);
			return r;
		}
	} while (h.status < 200);
	eos_buf_init(&body);
	if (c->on_event && is_event_stream(h.content_type))
		c->sse = &sse;
	r = read_body(c, &h, &body, err);
	c->sse = NULL;
	eosctl_sse_release(&sse);
	if (r < 0 || eos_buf_reserve(&body, 1) < 0) {
		eos_buf_release(&body);
		free(h.content_type);
		return r < 0 ? r : eos_error_set(err, -ENOMEM, "out of memory");
	}
	body.data[body.len] = '\0';
	resp->status = h.status;
	resp->content_type = h.content_type;
	resp->body = (char *)eos_buf_steal(&body, &resp->body_len);
	return 0;
}
