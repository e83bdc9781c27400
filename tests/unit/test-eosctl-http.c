/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of eosctl's HTTP client (cli/http.c) against a real peer: a python3 server on a Unix
 * socket and on a loopback TCP port, whose answer each target chooses — Content-Length, chunked
 * with extensions and trailers, one byte per write, a body cut short, a close-delimited body, an
 * interim 100, garbage, oversize headers, a server that answers before reading the body and
 * closes, one that answers late and one that never answers.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/json.h"

#include "cli/http.h"

static const char peer_py[] =
	"import json, os, socket, sys, threading, time\n"
	"def send(c, data, step=0):\n"
	"    if not step:\n"
	"        c.sendall(data); return\n"
	"    for i in range(0, len(data), step):\n"
	"        c.sendall(data[i:i + step]); time.sleep(0.001)\n"
	"def reply(c, status, body, extra=b''):\n"
	"    send(c, b'HTTP/1.1 %d X\\r\\nContent-Length: %d\\r\\n' % (status, len(body)) + extra\n"
	"         + b'\\r\\n' + body)\n"
	"def read_request(c):\n"
	"    data = b''\n"
	"    while b'\\r\\n\\r\\n' not in data:\n"
	"        d = c.recv(65536)\n"
	"        if not d: return None\n"
	"        data += d\n"
	"    head, rest = data.split(b'\\r\\n\\r\\n', 1)\n"
	"    lines = head.decode().split('\\r\\n')\n"
	"    method, target, _ = lines[0].split(' ')\n"
	"    h = {}\n"
	"    for l in lines[1:]:\n"
	"        k, v = l.split(':', 1); h[k.strip().lower()] = v.strip()\n"
	"    return method, target, h, rest\n"
	"def read_body(c, h, rest):\n"
	"    n = int(h.get('content-length', '0'))\n"
	"    while len(rest) < n:\n"
	"        d = c.recv(65536)\n"
	"        if not d: break\n"
	"        rest += d\n"
	"    return rest[:n]\n"
	"def handle(c):\n"
	"    req = read_request(c)\n"
	"    if not req: return\n"
	"    method, t, h, rest = req\n"
	"    if t == '/refuse-body':\n"
	"        reply(c, 413, b'{\"error\":{\"kind\":\"too_large\",\"message\":\"body\"}}')\n"
	"        c.shutdown(socket.SHUT_WR); time.sleep(0.2); return\n"
	"    body = read_body(c, h, rest)\n"
	"    if t == '/echo':\n"
	"        reply(c, 200, json.dumps({'method': method, 'auth': h.get('authorization'),\n"
	"              'type': h.get('content-type'), 'length': len(body),\n"
	"              'head': body[:16].decode(), 'tail': body[-16:].decode(),\n"
	"              'connection': h.get('connection')}).encode())\n"
	"    elif t == '/chunked':\n"
	"        send(c, b'HTTP/1.1 200 OK\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n'\n"
	"             b'4\\r\\n{\"a\"\\r\\n6;ext=1\\r\\n:\"chun\\r\\nA\\r\\nked\"}     \\r\\n'\n"
	"             b'0\\r\\nX-Trailer: 1\\r\\n\\r\\n', step=3)\n"
	"    elif t == '/slow':\n"
	"        send(c, b'HTTP/1.1 200 OK\\r\\nContent-Length: 12\\r\\n\\r\\n{\"a\":\"slow\"}', "
	"step=1)\n"
	"    elif t == '/short':\n"
	"        send(c, b'HTTP/1.1 200 OK\\r\\nContent-Length: 100\\r\\n\\r\\n{\"short\"')\n"
	"    elif t == '/short-chunk':\n"
	"        send(c, b'HTTP/1.1 200 OK\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n10\\r\\nabc')\n"
	"    elif t == '/to-close':\n"
	"        send(c, b'HTTP/1.0 200 OK\\r\\nContent-Type: application/json\\r\\n\\r\\n'\n"
	"             + b'[' + b'1,' * 50000 + b'1]')\n"
	"    elif t == '/interim':\n"
	"        send(c, b'HTTP/1.1 100 Continue\\r\\n\\r\\n')\n"
	"        reply(c, 201, b'{}')\n"
	"    elif t == '/silent':\n"
	"        pass\n"
	"    elif t == '/garbage':\n"
	"        send(c, b'SSH-2.0-OpenSSH\\r\\n\\r\\n')\n"
	"    elif t == '/big-header':\n"
	"        send(c, b'HTTP/1.1 200 OK\\r\\nX-Big: ' + b'x' * 70000 + b'\\r\\n\\r\\n')\n"
	"    elif t == '/two-lengths':\n"
	"        send(c, b'HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nContent-Length: 3\\r\\n\\r\\n{}')\n"
	"    elif t == '/events':\n"
	"        ev = (b': a comment\\r\\nevent: progress\\r\\ndata: {\"n\":1}\\r\\n\\r\\n'\n"
	"              b'event: progress\\ndata: line one\\ndata:line two\\n\\n'\n"
	"              b'data: nameless\\r\\r'\n"
	"              b'event: empty\\n\\nretry: 5\\nevent: result\\ndata: {\"done\":true}\\n\\n'\n"
	"              b'event: cut\\ndata: never ended')\n"
	"        pieces = [ev[i:i + 5] for i in range(0, len(ev), 5)]\n"
	"        kind = b'text/event-stream' if 'text/event-stream' in h.get('accept', '') \\\n"
	"            else b'text/plain'\n"
	"        send(c, b'HTTP/1.1 200 OK\\r\\nContent-Type: ' + kind + b'; charset=utf-8\\r\\n'\n"
	"             b'Transfer-Encoding: chunked\\r\\n\\r\\n'\n"
	"             + b''.join(b'%x\\r\\n%s\\r\\n' % (len(p), p) for p in pieces)\n"
	"             + b'0\\r\\n\\r\\n', step=3)\n"
	"    elif t == '/late':\n"
	"        time.sleep(0.5); reply(c, 200, b'{\"late\":true}')\n"
	"    elif t == '/never':\n"
	"        time.sleep(30)\n"
	"    else:\n"
	"        reply(c, 404, b'{\"error\":{\"kind\":\"not_found\",\"message\":\"no\"}}')\n"
	"def serve(s):\n"
	"    while True:\n"
	"        c, _ = s.accept()\n"
	"        def run(c=c):\n"
	"            try: handle(c)\n"
	"            except OSError: pass\n"
	"            finally: c.close()\n"
	"        threading.Thread(target=run, daemon=True).start()\n"
	"u = socket.socket(socket.AF_UNIX); u.bind(sys.argv[1]); u.listen(64)\n"
	"t = socket.socket(); t.bind(('127.0.0.1', 0)); t.listen(64)\n"
	"threading.Thread(target=serve, args=(u,), daemon=True).start()\n"
	"print(t.getsockname()[1], flush=True)\n"
	"serve(t)\n";

static char dir[] = "/tmp/eosctl-http.XXXXXX";
static char sock_path[128];
static char tcp_url[64];
static pid_t peer = -1;

static void
peer_start(void)
{
	int out[2];
	char line[32] = "";
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sock_path, sizeof(sock_path), "%s/peer.sock", dir);
	ck_assert_int_eq(pipe(out), 0);
	peer = fork();
	ck_assert_int_ge(peer, 0);
	if (peer == 0) {
		dup2(out[1], 1);
		execlp("python3", "python3", "-c", peer_py, sock_path, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	f = fdopen(out[0], "r");
	ck_assert_msg(f && fgets(line, sizeof(line), f), "the python3 peer did not start");
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	snprintf(tcp_url, sizeof(tcp_url), "http://127.0.0.1:%s", line);
}

static void
peer_stop(void)
{
	char cmd[160];

	if (peer > 0) {
		kill(peer, SIGKILL);
		waitpid(peer, NULL, 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

/* Call target on url with body (or none); returns the result, reply in *resp. */
static int
call(const char *url, const char *target, const char *body, size_t len, int timeout_ms,
     struct eosctl_http_response *resp, struct eos_error *err)
{
	struct eosctl_endpoint ep = { 0 };
	struct eosctl_http_request req = { .method = body ? "POST" : "GET",
					   .target = target,
					   .token = "t0k3n",
					   .body = body,
					   .body_len = len,
					   .timeout_ms = timeout_ms };
	int r;

	ck_assert_int_eq(eosctl_endpoint_parse(url, &ep, NULL), 0);
	*resp = (struct eosctl_http_response){ 0 };
	r = eosctl_http_call(&ep, &req, resp, err);
	eosctl_endpoint_release(&ep);
	return r;
}

/* The reply to GET target on the Unix socket and on TCP has status and body want. */
static void
answers(const char *target, int status, const char *want)
{
	const char *urls[] = { sock_path, tcp_url };

	for (size_t i = 0; i < 2; i++) {
		struct eosctl_http_response resp;
		struct eos_error err = { 0 };

		ck_assert_msg(call(urls[i], target, NULL, 0, 10000, &resp, &err) == 0, "%s %s: %s",
			      urls[i], target, err.msg);
		ck_assert_int_eq(resp.status, status);
		ck_assert_str_eq(resp.body, want);
		ck_assert_uint_eq(resp.body_len, strlen(want));
		eosctl_http_response_release(&resp);
	}
}

/* GET target fails with code and a message holding want, on both transports. */
static void
fails(const char *target, int code, const char *want)
{
	const char *urls[] = { sock_path, tcp_url };

	for (size_t i = 0; i < 2; i++) {
		struct eosctl_http_response resp;
		struct eos_error err = { 0 };

		ck_assert_int_eq(call(urls[i], target, NULL, 0, 10000, &resp, &err), code);
		ck_assert_msg(strstr(err.msg, want), "%s: '%s' lacks '%s'", target, err.msg, want);
		ck_assert_ptr_null(resp.body);
	}
}

START_TEST(bodies_by_each_framing)
{
	answers("/chunked", 200, "{\"a\":\"chunked\"}     ");
	answers("/slow", 200, "{\"a\":\"slow\"}");
	answers("/interim", 201, "{}");
	answers("/nothing-here", 404, "{\"error\":{\"kind\":\"not_found\",\"message\":\"no\"}}");
}
END_TEST

struct events_seen {
	char text[1024]; /* "name=data|" for each event */
};

static void
on_event(void *arg, const char *name, const char *data)
{
	struct events_seen *e = arg;
	size_t len = strlen(e->text);

	snprintf(e->text + len, sizeof(e->text) - len, "%s=%s|", name, data);
}

/* Server-sent events, cut anywhere by chunks and writes: CRLF, LF and CR line ends, comments,
 * several data lines, an event without a name, one without data, one never ended. */
START_TEST(server_sent_events)
{
	const char *urls[] = { sock_path, tcp_url };

	for (size_t i = 0; i < 2; i++) {
		struct eosctl_endpoint ep = { 0 };
		struct events_seen seen = { "" };
		struct eosctl_http_request req = { .method = "POST",
						   .target = "/events",
						   .body = "{}",
						   .body_len = 2,
						   .timeout_ms = 10000,
						   .on_event = on_event,
						   .event_arg = &seen };
		struct eosctl_http_response resp = { 0 };
		struct eos_error err = { 0 };

		ck_assert_int_eq(eosctl_endpoint_parse(urls[i], &ep, NULL), 0);
		ck_assert_msg(eosctl_http_call(&ep, &req, &resp, &err) == 0, "%s", err.msg);
		ck_assert_str_eq(seen.text, "progress={\"n\":1}|progress=line one\nline two|"
					    "message=nameless|result={\"done\":true}|");
		ck_assert_str_eq(resp.content_type, "text/event-stream; charset=utf-8");
		ck_assert_uint_eq(resp.body_len, 0);
		eosctl_http_response_release(&resp);
		eosctl_endpoint_release(&ep);
	}
}
END_TEST

/* Without on_event nothing asks for events: the peer's other type is read as a body. */
START_TEST(events_only_when_asked)
{
	struct eosctl_http_response resp;

	ck_assert_int_eq(call(sock_path, "/events", "{}", 2, 10000, &resp, NULL), 0);
	ck_assert_str_eq(resp.content_type, "text/plain; charset=utf-8");
	ck_assert_ptr_nonnull(strstr(resp.body, "event: result"));
	eosctl_http_response_release(&resp);
}
END_TEST

START_TEST(body_to_the_end_of_the_connection)
{
	struct eosctl_http_response resp;
	EOS_CLEANUP(json_decrefp) json_t *j = NULL;

	ck_assert_int_eq(call(sock_path, "/to-close", NULL, 0, 10000, &resp, NULL), 0);
	ck_assert_str_eq(resp.content_type, "application/json");
	j = json_loadb(resp.body, resp.body_len, 0, NULL);
	ck_assert_uint_eq(json_array_size(j), 50001);
	eosctl_http_response_release(&resp);
}
END_TEST

START_TEST(request_is_framed_and_authorized)
{
	size_t n = 8 << 20;
	cleanup_free char *body = malloc(n);
	struct eosctl_http_response resp;
	EOS_CLEANUP(json_decrefp) json_t *j = NULL;

	memset(body, 'x', n);
	memcpy(body, "{\"first\":\"bytes\"", 16);
	memcpy(body + n - 16, "the last bytes!}", 16);
	ck_assert_int_eq(call(sock_path, "/echo", body, n, 30000, &resp, NULL), 0);
	j = json_loadb(resp.body, resp.body_len, 0, NULL);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(json_string_value(json_object_get(j, "method")), "POST");
	ck_assert_str_eq(json_string_value(json_object_get(j, "auth")), "Bearer t0k3n");
	ck_assert_str_eq(json_string_value(json_object_get(j, "type")), "application/json");
	ck_assert_str_eq(json_string_value(json_object_get(j, "connection")), "close");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "length")), (json_int_t)n);
	ck_assert_str_eq(json_string_value(json_object_get(j, "head")), "{\"first\":\"bytes\"");
	ck_assert_str_eq(json_string_value(json_object_get(j, "tail")), "the last bytes!}");
	eosctl_http_response_release(&resp);
}
END_TEST

START_TEST(reply_of_a_server_that_stops_reading)
{
	size_t n = 32 << 20;
	cleanup_free char *body = calloc(1, n);
	struct eosctl_http_response resp;
	struct eos_error err = { 0 };

	ck_assert_msg(call(sock_path, "/refuse-body", body, n, 30000, &resp, &err) == 0, "%s",
		      err.msg);
	ck_assert_int_eq(resp.status, 413);
	ck_assert_ptr_nonnull(strstr(resp.body, "too_large"));
	eosctl_http_response_release(&resp);
}
END_TEST

START_TEST(broken_replies_are_errors)
{
	fails("/short", -EPROTO, "closed the connection before the end of its reply");
	fails("/short-chunk", -EPROTO, "closed the connection before the end of its reply");
	fails("/silent", -EPROTO, "closed the connection without answering");
	fails("/garbage", -EPROTO, "not an HTTP/1.x status line");
	fails("/big-header", -EMSGSIZE, "above");
	fails("/two-lengths", -EPROTO, "two different Content-Length");
}
END_TEST

static void
count_tick(void *arg)
{
	(*(int *)arg)++;
}

START_TEST(waits_tick_and_time_out)
{
	struct eosctl_endpoint ep = { 0 };
	struct eosctl_http_response resp = { 0 };
	struct eos_error err = { 0 };
	int ticks = 0;
	struct eosctl_http_request req = {
		.method = "GET", .target = "/late", .tick = count_tick, .tick_arg = &ticks
	};

	ck_assert_int_eq(eosctl_endpoint_parse(sock_path, &ep, NULL), 0);
	ck_assert_int_eq(eosctl_http_call(&ep, &req, &resp, &err), 0);
	ck_assert_str_eq(resp.body, "{\"late\":true}");
	ck_assert_int_gt(ticks, 0); /* the reply came after 0.5 s: some 100 ms waits ended empty */
	eosctl_http_response_release(&resp);
	req.target = "/never";
	req.timeout_ms = 300;
	ck_assert_int_eq(eosctl_http_call(&ep, &req, &resp, &err), -ETIMEDOUT);
	ck_assert_ptr_nonnull(strstr(err.msg, "did not answer within 300 ms"));
	eosctl_endpoint_release(&ep);
}
END_TEST

START_TEST(nobody_listening)
{
	struct eosctl_http_response resp;
	struct eos_error err = { 0 };
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char path[160], want[256];
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(path, sizeof(path), "%s/missing.sock", dir);
	ck_assert_int_eq(call(path, "/", NULL, 0, 1000, &resp, &err), -ENOENT);
	snprintf(want, sizeof(want), "eosd at '%s' does not answer: No such file or directory",
		 path);
	ck_assert_str_eq(err.msg, want);
	/* bound but not listening: refused */
	snprintf(path, sizeof(path), "%s/deaf.sock", dir);
	memcpy(sun.sun_path, path, strlen(path) + 1);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	ck_assert_int_eq(call(path, "/", NULL, 0, 1000, &resp, &err), -ECONNREFUSED);
	snprintf(want, sizeof(want), "eosd at '%s' does not answer: Connection refused", path);
	ck_assert_str_eq(err.msg, want);
	close(fd);
}
END_TEST

START_TEST(endpoints_parse)
{
	struct eosctl_endpoint ep = { 0 };
	struct eos_error err = { 0 };
	const char *bad[] = { "http://127.0.0.1", "http://127.0.0.1:",	  "ftp://x:1",
			      "unix:rel.sock",	  "http://127.0.0.1:12x", "http://127.0.0.1:1/path",
			      "relative" };

	ck_assert_int_eq(eosctl_endpoint_parse("unix:/run/eos/eosd.sock", &ep, NULL), 0);
	ck_assert_int_eq(ep.kind, EOSCTL_ENDPOINT_UNIX);
	ck_assert_str_eq(ep.path, "/run/eos/eosd.sock");
	eosctl_endpoint_release(&ep);
	ck_assert_int_eq(eosctl_endpoint_parse("http://127.0.0.1:8080/", &ep, NULL), 0);
	ck_assert_int_eq(ep.kind, EOSCTL_ENDPOINT_TCP);
	ck_assert_str_eq(ep.host, "127.0.0.1");
	ck_assert_str_eq(ep.port, "8080");
	ck_assert_str_eq(ep.name, "127.0.0.1:8080");
	eosctl_endpoint_release(&ep);
	ck_assert_int_eq(eosctl_endpoint_parse("http://[::1]:80", &ep, NULL), 0);
	ck_assert_str_eq(ep.host, "::1");
	eosctl_endpoint_release(&ep);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(eosctl_endpoint_parse(bad[i], &ep, &err) == -EINVAL, "%s", bad[i]);
		ck_assert_msg(strstr(err.msg, bad[i]), "'%s' lacks '%s'", err.msg, bad[i]);
	}
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("eosctl-http");
	TCase *tc = tcase_create("eosctl-http");
	SRunner *sr;
	int failed;

	signal(SIGPIPE, SIG_IGN);
	tcase_add_unchecked_fixture(tc, peer_start, peer_stop);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, bodies_by_each_framing);
	tcase_add_test(tc, server_sent_events);
	tcase_add_test(tc, events_only_when_asked);
	tcase_add_test(tc, body_to_the_end_of_the_connection);
	tcase_add_test(tc, request_is_framed_and_authorized);
	tcase_add_test(tc, reply_of_a_server_that_stops_reading);
	tcase_add_test(tc, broken_replies_are_errors);
	tcase_add_test(tc, waits_tick_and_time_out);
	tcase_add_test(tc, nobody_listening);
	tcase_add_test(tc, endpoints_parse);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
