/* SPDX-License-Identifier: MIT */
/*
 * cli/http-events: server-sent events (the WHATWG "event stream" format) as they arrive: lines
 * ending in LF, CRLF or CR; "event: NAME", "data: TEXT" (several data lines join with "\n"),
 * comments (":…") and other fields ignored; an empty line ends an event, which is passed on
 * only when it had data.
 */
#include <errno.h>
#include <string.h>

#include "common/buf.h"

#include "cli/http-internal.h"

static void
dispatch(struct eosctl_sse *p)
{
	if (p->has_data) {
		if (p->data.len > 0)
			eos_buf_truncate(&p->data, p->data.len - 1); /* the last "\n" */
		p->fn(p->arg, p->name.len ? (const char *)p->name.data : "message",
		      p->data.data ? (const char *)p->data.data : "");
	}
	eos_buf_truncate(&p->name, 0);
	eos_buf_truncate(&p->data, 0);
	p->has_data = false;
}

/* One line (NUL-terminated, without its end). */
static int
line(struct eosctl_sse *p, const char *s)
{
	const char *colon = strchr(s, ':');
	size_t flen = colon ? (size_t)(colon - s) : strlen(s);
	const char *v = colon ? colon + 1 + (colon[1] == ' ') : "";

	if (s[0] == '\0') {
		dispatch(p);
		return 0;
	}
	if (flen == 5 && strncmp(s, "event", 5) == 0) {
		eos_buf_truncate(&p->name, 0);
		return eos_buf_append_str(&p->name, v);
	}
	if (flen == 4 && strncmp(s, "data", 4) == 0) {
		p->has_data = true;
		if (eos_buf_append_str(&p->data, v) < 0 || eos_buf_append_str(&p->data, "\n") < 0)
			return -ENOMEM;
	}
	return 0; /* a comment, or a field eosctl does not use (id, retry) */
}

int
eosctl_sse_feed(struct eosctl_sse *p, const void *bytes, size_t n)
{
	const char *b = bytes, *end = b + n;

	while (b < end) {
		size_t run = 0;
		int r;

		if (p->after_cr && *b == '\n') { /* the LF of a CRLF */
			p->after_cr = false;
			b++;
			continue;
		}
		p->after_cr = false;
		while (b + run < end && b[run] != '\n' && b[run] != '\r')
			run++;
		if (p->line.len + run > EOSCTL_HTTP_BODY_MAX || p->data.len > EOSCTL_HTTP_BODY_MAX)
			return -EMSGSIZE;
		if (eos_buf_append(&p->line, b, run) < 0)
			return -ENOMEM;
		b += run;
		if (b == end)
			break;
		p->after_cr = *b++ == '\r';
		r = line(p, p->line.data ? (const char *)p->line.data : "");
		eos_buf_truncate(&p->line, 0);
		if (r < 0)
			return r;
	}
	return 0;
}

void
eosctl_sse_release(struct eosctl_sse *p)
{
	eos_buf_release(&p->line);
	eos_buf_release(&p->name);
	eos_buf_release(&p->data);
}
