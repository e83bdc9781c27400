/* SPDX-License-Identifier: MIT */
/* supervisor/gateway: sockets, the connection cap, signals and the loop (see gateway.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"

#include "supervisor/cgroup.h"
#include "supervisor/console.h"
#include "supervisor/gateway-internal.h"
#include "supervisor/obs.h"

enum {
	LISTEN_BACKLOG = 128,
	SWEEP_S = 1,
};

/* --- sockets ---------------------------------------------------------------------------------- */

/* Whether something accepts connections on the socket at sa (another eosd's state dir). */
static bool
unix_answers(const struct sockaddr_un *sa)
{
	cleanup_close int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	return fd >= 0 && connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
}

/* Remove a stale socket at path; refuse a live one, or anything else. */
static int
unix_clear(const struct sockaddr_un *sa, struct eos_error *err)
{
	const char *path = sa->sun_path;
	struct stat sb;

	if (lstat(path, &sb) < 0)
		return errno == ENOENT ? 0 : eos_error_set(err, eos_neg_errno(), "'%s': %m", path);
	if (!S_ISSOCK(sb.st_mode))
		return eos_error_set(err, -EEXIST, "listen 'unix:%s': exists and is not a socket",
				     path);
	if (unix_answers(sa))
		return eos_error_set(err, -EADDRINUSE,
				     "listen 'unix:%s': another process serves it (an eosd of "
				     "another state directory?): pass --listen unix:PATH",
				     path);
	if (unlink(path) < 0)
		return eos_error_set(err, eos_neg_errno(), "remove old socket '%s': %m", path);
	return 0;
}

static int
unix_listen(const char *path, int *ret_fd, struct eos_error *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	cleanup_close int fd = -1;
	mode_t old;
	int r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return eos_error_set(err, -ENAMETOOLONG,
				     "listen 'unix:%s': path too long (%zu max)", path,
				     sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	r = unix_clear(&sa, err);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return eos_error_set(err, eos_neg_errno(), "socket: %m");
	old = umask(0177);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || chmod(path, 0600) < 0 || listen(fd, LISTEN_BACKLOG) < 0)
		return eos_error_set(err, eos_neg_errno(), "listen 'unix:%s': %m", path);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* The port of "HOST:PORT" at colon. */
static int
tcp_port(const char *spec, const char *colon, uint16_t *ret, struct eos_error *err)
{
	char *end = NULL;
	long port;

	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port < 0 || port > 65535)
		return eos_error_set(err, -EINVAL, "listen 'tcp:%s': port is not 0 to 65535", spec);
	*ret = (uint16_t)port;
	return 0;
}

/* The host of spec in host[n]: "127.0.0.1" of "127.0.0.1:80", "::1" of "[::1]:80". */
static int
tcp_host(const char *spec, char *host, size_t n, const char **ret_colon, struct eos_error *err)
{
	const char *start = spec[0] == '[' ? spec + 1 : spec;
	const char *end = spec[0] == '[' ? strchr(spec, ']') : strrchr(spec, ':');

	if (!end || (spec[0] == '[' && end[1] != ':') || (size_t)(end - start) >= n)
		return eos_error_set(err, -EINVAL,
				     "listen 'tcp:%s': not HOST:PORT (an IPv6 HOST in brackets: "
				     "[::1]:PORT)",
				     spec);
	memcpy(host, start, (size_t)(end - start));
	host[end - start] = '\0';
	*ret_colon = spec[0] == '[' ? end + 1 : end;
	return 0;
}

/* An IPv6 loopback address: ::1, or an IPv4 loopback address mapped (::ffff:127.x.y.z). */
static bool
loopback6(const struct in6_addr *a)
{
	return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

/*
 * "HOST:PORT", HOST an IPv4 address or a bracketed IPv6 one ("[::1]:8080"): loopback only
 * (127.0.0.0/8, ::1) unless any.
 */
static int
tcp_parse(const char *spec, bool any, struct sockaddr_storage *ss, socklen_t *ret_len,
	  struct eos_error *err)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	const char *colon = NULL;
	char host[64];
	uint16_t port;
	bool loopback;
	int r = tcp_host(spec, host, sizeof(host), &colon, err);

	if (r < 0 || (r = tcp_port(spec, colon, &port, err)) < 0)
		return r;
	memset(ss, 0, sizeof(*ss));
	if (spec[0] == '[') {
		*sin6 = (struct sockaddr_in6){ .sin6_family = AF_INET6, .sin6_port = htons(port) };
		*ret_len = sizeof(*sin6);
		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			return eos_error_set(err, -EINVAL,
					     "listen 'tcp:%s': '%s' is not an IPv6 address", spec,
					     host);
		loopback = loopback6(&sin6->sin6_addr);
	} else {
		*sin = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(port) };
		*ret_len = sizeof(*sin);
		if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
			return eos_error_set(err, -EINVAL,
					     "listen 'tcp:%s': '%s' is not an IPv4 address (an "
					     "IPv6 one goes in brackets: [::1]:PORT)",
					     spec, host);
		loopback = (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
	}
	if (!any && !loopback)
		return eos_error_set(
			err, -EPERM,
			"listen 'tcp:%s': '%s' is not a loopback address (--listen-any "
			"allows it)",
			spec, host);
	return 0;
}

/* The address bound, as "127.0.0.1:PORT" or "[::1]:PORT", in ret[n]. */
static void
tcp_name(const struct sockaddr_storage *ss, char *ret, size_t n)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		snprintf(ret, n, "[%s]:%u", host, (unsigned)ntohs(a->sin6_port));
	} else {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		snprintf(ret, n, "%s:%u", host, (unsigned)ntohs(a->sin_port));
	}
}

static int
tcp_listen(const char *spec, bool any, int *ret_fd, char *ret_addr, size_t n, struct eos_error *err)
{
	struct sockaddr_storage ss;
	socklen_t len = 0;
	cleanup_close int fd = -1;
	int r = tcp_parse(spec, any, &ss, &len, err), one = 1;

	if (r < 0)
		return r;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return eos_error_set(err, eos_neg_errno(), "listen 'tcp:%s': socket: %m", spec);
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, LISTEN_BACKLOG) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return eos_error_set(err, eos_neg_errno(), "listen 'tcp:%s': %m", spec);
	tcp_name(&ss, ret_addr, n);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

static int
bind_fd(struct eosd_gateway *gw, int fd, struct eos_error *err)
{
	struct evhttp_bound_socket *b = evhttp_accept_socket_with_handle(gw->http, fd);

	if (!b) {
		close(fd);
		return eos_error_set(err, -ENOMEM, "gateway: cannot accept on a socket");
	}
	gw->bound[gw->nbound++] = b;
	return 0;
}

/* --- the connection cap ----------------------------------------------------------------------- */

/*
 * libevent 2.1's evhttp cannot cap its connections, so the gateway makes each connection's
 * bufferevent itself (evhttp_set_bevcb) and keeps one reference to it: once evhttp has freed a
 * connection (its callbacks are then cleared, its fd shut down for writing: the client sees
 * the end), the sweep (at the next connection, or within SWEEP_S) drops that reference and the
 * fd is closed. At the cap the listeners stop accepting; the kernel's backlog holds the next
 * clients.
 */
static void
set_accepting(struct eosd_gateway *gw, bool on)
{
	if (gw->accepting == on)
		return;
	for (size_t i = 0; i < gw->nbound; i++) {
		struct evconnlistener *l = evhttp_bound_socket_get_listener(gw->bound[i]);

		if (on)
			evconnlistener_enable(l);
		else
			evconnlistener_disable(l);
	}
	gw->accepting = on;
}

/*
 * A request still arriving after EOSD_REQUEST_TIMEOUT_S (a client trickling bytes): shut the
 * socket down, and evhttp drops the connection as it does a client that left. Its clock starts
 * when the sweep first sees bytes waiting and stops when the whole request has been read.
 */
static void
deadline(struct eosd_conn *c, int64_t now)
{
	int fd;

	if (c->reading_since == 0) {
		if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)
			c->reading_since = now;
		return;
	}
	if (now - c->reading_since < (int64_t)EOSD_REQUEST_TIMEOUT_S * 1000000000)
		return;
	fd = (int)bufferevent_getfd(c->bev);
	if (fd >= 0)
		(void)shutdown(fd, SHUT_RDWR);
}

static void
sweep(struct eosd_gateway *gw)
{
	int64_t now = eos_mono_ns();
	size_t kept = 0;

	for (size_t i = 0; i < gw->nconns; i++) {
		struct eosd_conn *c = &gw->conns[i];
		bufferevent_data_cb rd = NULL;

		bufferevent_getcb(c->bev, &rd, NULL, NULL, NULL);
		if (!rd) {
			bufferevent_decref(c->bev);
			continue;
		}
		deadline(c, now);
		gw->conns[kept++] = *c;
	}
	gw->nconns = kept;
	set_accepting(gw, gw->nconns < EOSD_CONNECTIONS_MAX);
}

void
eosd_gateway_conn_read(struct eosd_gateway *gw, struct bufferevent *bev)
{
	for (size_t i = 0; i < gw->nconns; i++)
		if (gw->conns[i].bev == bev)
			gw->conns[i].reading_since = 0;
}

static void
sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	sweep(arg);
}

static struct bufferevent *
new_conn_cb(struct event_base *base, void *arg)
{
	struct eosd_gateway *gw = arg;
	struct bufferevent *bev;

	sweep(gw);
	bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (!bev || gw->nconns >= EOSD_CONNECTIONS_MAX)
		return bev; /* accepted before the listeners stopped: served, not counted */
	bufferevent_incref(bev);
	gw->conns[gw->nconns++] = (struct eosd_conn){ .bev = bev };
	set_accepting(gw, gw->nconns < EOSD_CONNECTIONS_MAX);
	return bev;
}

/* --- signals and the drain -------------------------------------------------------------------- */

static void
drain_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct eosd_gateway *gw = arg;

	(void)fd, (void)what;
	eos_log_warn("stopping: %zu requests still running after %d s, not waiting for their "
		     "replies",
		     gw->in_flight, EOSD_DRAIN_S);
	event_base_loopexit(gw->base, NULL);
}

static void
signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct eosd_gateway *gw = arg;
	const struct timeval tv = { .tv_sec = EOSD_DRAIN_S };

	(void)what;
	if (gw->d->stopping)
		return;
	eos_log_info("%s: stopping (%zu requests in flight)", strsignal((int)sig), gw->in_flight);
	gw->d->stopping = true;
	eosd_gateway_kept_end_all(gw); /* followers: their streams end now, not at the drain */
	if (gw->in_flight == 0)
		event_base_loopexit(gw->base, NULL);
	else
		event_add(gw->drain_ev, &tv);
}

/* --- telemetry and samples ------------------------------------------------------------------- */

/* A follower has news (supervisor/obs.h notify): wake the loop for the kept streams. */
static void
wake_streams(void *d)
{
	eosd_stream_wake(d);
}

static void
sample_job(void *cg)
{
	eosd_cgroups_sample(cg);
}

/* The sampler's tick (loop): the round runs on a worker, never on the loop. */
static void
sample_cb(evutil_socket_t fd, short what, void *arg)
{
	struct eosd_gateway *gw = arg;

	(void)fd, (void)what;
	(void)eosd_pool_submit(gw->pool, sample_job, gw->d->cgroups);
}

/* eosd_cgroups_set_timer(): from any thread (libevent is thread-safe here). */
static void
sample_timer(void *ctx, unsigned interval_ms)
{
	struct eosd_gateway *gw = ctx;
	struct timeval tv = { .tv_sec = interval_ms / 1000,
			      .tv_usec = (suseconds_t)(interval_ms % 1000) * 1000 };

	if (interval_ms)
		event_add(gw->sample_ev, &tv);
	else
		event_del(gw->sample_ev);
}

/* --- setup ------------------------------------------------------------------------------------ */

static int
loop_new(struct eosd_gateway *gw, struct eos_error *err)
{
	gw->base = event_base_new();
	gw->http = gw->base ? evhttp_new(gw->base) : NULL;
	if (!gw->http)
		return eos_error_set(err, -ENOMEM, "gateway: cannot make the event loop");
	evhttp_set_max_body_size(gw->http, EOSD_BODY_MAX + EOSD_BODY_SLACK);
	evhttp_set_max_headers_size(gw->http, EOSD_HEADERS_MAX);
	evhttp_set_timeout(gw->http, EOSD_IDLE_TIMEOUT_S);
	evhttp_set_allowed_methods(gw->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE);
	evhttp_set_gencb(gw->http, eosd_gateway_request_cb, gw);
	evhttp_set_bevcb(gw->http, new_conn_cb, gw);
	gw->done_ev = event_new(gw->base, -1, EV_PERSIST, eosd_gateway_done_cb, gw);
	gw->kept_ev = event_new(gw->base, -1, EV_PERSIST, eosd_gateway_kept_cb, gw);
	gw->sample_ev = event_new(gw->base, -1, EV_PERSIST, sample_cb, gw);
	gw->sig_term = evsignal_new(gw->base, SIGTERM, signal_cb, gw);
	gw->sig_int = evsignal_new(gw->base, SIGINT, signal_cb, gw);
	gw->drain_ev = evtimer_new(gw->base, drain_timeout_cb, gw);
	gw->sweep_ev = event_new(gw->base, -1, EV_PERSIST, sweep_cb, gw);
	if (!gw->done_ev || !gw->kept_ev || !gw->sample_ev || !gw->sig_term || !gw->sig_int ||
	    !gw->drain_ev || !gw->sweep_ev || event_add(gw->done_ev, NULL) < 0 ||
	    event_add(gw->kept_ev, NULL) < 0 || event_add(gw->sig_term, NULL) < 0 ||
	    event_add(gw->sig_int, NULL) < 0 ||
	    event_add(gw->sweep_ev, &(struct timeval){ .tv_sec = SWEEP_S }) < 0)
		return eos_error_set(err, -ENOMEM, "gateway: cannot set up the loop's events");
	return 0;
}

static int
listen_all(struct eosd_gateway *gw, const struct eosd_gateway_options *o, struct eos_error *err)
{
	int fd = -1, r;

	r = unix_listen(o->unix_path, &fd, err);
	if (r < 0)
		return r;
	gw->unix_path = strdup(o->unix_path); /* ours from now on: removed at the end */
	if (!gw->unix_path) {
		close(fd);
		return -ENOMEM;
	}
	r = bind_fd(gw, fd, err);
	if (r >= 0 && o->tcp) {
		r = tcp_listen(o->tcp, o->listen_any, &fd, gw->tcp, sizeof(gw->tcp), err);
		if (r >= 0)
			r = bind_fd(gw, fd, err);
	}
	gw->accepting = true;
	return r;
}

/*
 * The worker pool: cores + 2 threads and EOSD_POOL_QUEUE_MAX jobs, or, for tests only,
 * EOSD_TEST_POOL="THREADS:QUEUE" (a pool small enough for a test to fill; doc/eosd.md).
 */
static int
pool_new(struct eosd_gateway *gw, struct eos_error *err)
{
	const char *env = getenv("EOSD_TEST_POOL");
	unsigned threads = eosd_pool_default_threads(), queue = EOSD_POOL_QUEUE_MAX;
	int n = 0;

	if (env && env[0] &&
	    (sscanf(env, "%u:%u%n", &threads, &queue, &n) != 2 || env[n] != '\0' || threads < 1 ||
	     threads > EOSD_POOL_THREADS_MAX || queue < 1 || queue > EOSD_POOL_QUEUE_MAX))
		return eos_error_set(
			err, -EINVAL,
			"EOSD_TEST_POOL='%s': expected THREADS:QUEUE (1 to %d, 1 to %d)", env,
			EOSD_POOL_THREADS_MAX, EOSD_POOL_QUEUE_MAX);
	return eosd_pool_new(threads, queue, &gw->pool, err);
}

int
eosd_gateway_new(struct eosd *d, const struct eosd_gateway_options *opts, struct eosd_gateway **ret,
		 struct eos_error *err)
{
	EOS_CLEANUP(eosd_gateway_freep) struct eosd_gateway *gw = NULL;
	int r;

	if (evthread_use_pthreads() < 0)
		return eos_error_set(err, -ENOMEM, "gateway: libevent has no thread support");
	gw = calloc(1, sizeof(*gw));
	if (!gw)
		return -ENOMEM;
	gw->d = d;
	pthread_mutex_init(&gw->done_lock, NULL);
	r = loop_new(gw, err);
	if (r >= 0 && eosd_console_new(d->auth, &gw->console) < 0)
		r = -ENOMEM;
	if (r >= 0)
		r = pool_new(gw, err);
	if (r >= 0)
		r = eosd_mcp_new(d, &gw->mcp, err);
	if (r >= 0)
		r = listen_all(gw, opts, err);
	if (r < 0)
		return r;
	/* telemetry is written by jobs on the pool; its followers wake the loop */
	d->gateway = gw;
	d->pool = gw->pool;
	eosd_obs_attach(d->obs, gw->pool);
	eosd_obs_set_notify(d->obs, wake_streams, d);
	eosd_cgroups_set_timer(d->cgroups, sample_timer, gw);
	*ret = TAKE_PTR(gw);
	return 0;
}

const char *
eosd_gateway_tcp(const struct eosd_gateway *gw)
{
	return gw->tcp[0] ? gw->tcp : NULL;
}

int
eosd_gateway_run(struct eosd_gateway *gw, struct eos_error *err)
{
	if (event_base_dispatch(gw->base) < 0)
		return eos_error_set(err, -EIO, "gateway: the event loop failed");
	return 0;
}

static void
event_freep(struct event **ev)
{
	if (*ev)
		event_free(*ev);
	*ev = NULL;
}

void
eosd_gateway_free(struct eosd_gateway *gw)
{
	if (!gw)
		return;
	eosd_cgroups_set_timer(gw->d->cgroups, NULL, NULL);
	eosd_obs_set_notify(gw->d->obs, NULL, NULL);
	eosd_obs_attach(gw->d->obs,
			NULL); /* queued flush jobs still run: the pool runs its queue */
	gw->d->pool = NULL;
	eosd_pool_free(gw->pool); /* waits for the running handlers */
	eosd_mcp_free(gw->mcp);	  /* ends the calls that follow events */
	gw->d->gateway = NULL;
	eosd_gateway_flush_done(gw);
	eosd_gateway_kept_drop_all(gw);
	if (gw->http)
		evhttp_free(gw->http);
	for (size_t i = 0; i < gw->nconns; i++)
		bufferevent_decref(gw->conns[i].bev);
	event_freep(&gw->done_ev);
	event_freep(&gw->kept_ev);
	event_freep(&gw->sample_ev);
	event_freep(&gw->sig_term);
	event_freep(&gw->sig_int);
	event_freep(&gw->drain_ev);
	event_freep(&gw->sweep_ev);
	if (gw->base)
		event_base_free(gw->base);
	eosd_console_free(gw->console);
	if (gw->unix_path)
		(void)unlink(gw->unix_path);
	free(gw->unix_path);
	pthread_mutex_destroy(&gw->done_lock);
	free(gw);
}
