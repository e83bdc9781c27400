/* SPDX-License-Identifier: MIT */
/*
 * supervisor/obs: the recorder — its queue, the flush jobs that write it to the store, spans
 * and events (supervisor/obs.h; doc/observability.md). Followers are in obs-follow.c.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/endian.h"
#include "common/failpoint.h"
#include "common/log.h"

#include "supervisor/obs-internal.h"
#include "supervisor/pool.h"

/* The calling thread's current span (eosd_span_begin). */
static _Thread_local struct eosd_span *current;

/* --- ids ----------------------------------------------------------------------------------------
 */

/* A random non-zero 64-bit number: splitmix64 of a per-thread state seeded from getrandom. */
static uint64_t
random_u64(void)
{
	static _Thread_local uint64_t state;
	uint64_t z;

	if (state == 0 && getrandom(&state, sizeof(state), GRND_NONBLOCK) != sizeof(state))
		state = (uint64_t)eos_mono_ns() ^ ((uint64_t)(uintptr_t)&state << 16);
	do {
		z = (state += 0x9e3779b97f4a7c15ULL);
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		z ^= z >> 31;
	} while (z == 0);
	return z;
}

/* A new trace id: its start (ns since the epoch, big-endian), then 8 random bytes. */
static void
new_trace(uint8_t id[EOS_OBS_TRACE_ID_LEN], int64_t wall)
{
	eos_put_be64(id, (uint64_t)wall);
	eos_put_be64(id + 8, random_u64());
}

static bool
trace_zero(const uint8_t id[EOS_OBS_TRACE_ID_LEN])
{
	for (size_t i = 0; i < EOS_OBS_TRACE_ID_LEN; i++)
		if (id[i])
			return false;
	return true;
}

/* --- the recorder -------------------------------------------------------------------------------
 */

int
eosd_obs_new(struct eos_store *st, const struct eosd_obs_options *o, struct eosd_obs **ret,
	     struct eos_error *err)
{
	struct eos_obs_stats stats;
	struct eosd_obs *obs;
	int r = eos_store_obs_stats(st, &stats, err);

	if (r < 0)
		return eos_error_prefix(err, r, "telemetry");
	obs = calloc(1, sizeof(*obs));
	if (!obs)
		return eos_error_set(err, -ENOMEM, "telemetry: out of memory");
	obs->st = st;
	if (o)
		obs->limits = o->limits;
	obs->queue_max = o && o->queue_max ? o->queue_max : EOSD_OBS_QUEUE_DEFAULT;
	obs->tail = &obs->head;
	obs->last = stats.last;
	pthread_mutex_init(&obs->lock, NULL);
	pthread_mutex_init(&obs->flush_lock, NULL);
	*ret = obs;
	return 0;
}

struct eos_store *
eosd_obs_store(const struct eosd_obs *obs)
{
	return obs ? obs->st : NULL;
}

void
eosd_obs_counters(struct eosd_obs *obs, struct eosd_obs_counters *ret)
{
	*ret = (struct eosd_obs_counters){ 0 };
	if (!obs)
		return;
	pthread_mutex_lock(&obs->lock);
	*ret = obs->c;
	pthread_mutex_unlock(&obs->lock);
}

static void
item_free(struct eosd_obs_item *it)
{
	if (!it)
		return;
	json_decref(it->attrs);
	free(it);
}

static void
items_free(struct eosd_obs_item *it)
{
	while (it) {
		struct eosd_obs_item *next = it->next;

		item_free(it);
		it = next;
	}
}

/* The next position: never before the last one, even when the clock goes back. */
static struct eos_obs_pos
next_pos(struct eosd_obs *obs)
{
	uint64_t now = (uint64_t)eos_wall_ns();

	obs->last.time = EOS_MAX(now, obs->last.time);
	obs->last.seq++;
	return obs->last;
}

/* --- writing ------------------------------------------------------------------------------------
 */

/* Take up to EOSD_OBS_FLUSH_BATCH queued items (obs->lock held). */
static struct eosd_obs_item *
take_batch(struct eosd_obs *obs, size_t *ret_n)
{
	struct eosd_obs_item *first = obs->head, **end = &obs->head;
	size_t n = 0;

	while (*end && n < EOSD_OBS_FLUSH_BATCH) {
		end = &(*end)->next;
		n++;
	}
	obs->head = *end;
	if (!obs->head)
		obs->tail = &obs->head;
	*end = NULL;
	obs->c.queued -= n;
	*ret_n = n;
	return first;
}

/* Write items (n of them) to the store: attributes dumped now, off the recording path. */
static int
write_items(struct eosd_obs *obs, struct eosd_obs_item *items, size_t n, struct eos_error *err)
{
	cleanup_free struct eos_obs_record *recs = calloc(n, sizeof(*recs));
	cleanup_free char **texts = calloc(n, sizeof(*texts));
	struct eosd_obs_item *it = items;
	int r;

	if (!recs || !texts)
		return eos_error_set(err, -ENOMEM, "telemetry: out of memory");
	for (size_t i = 0; i < n; i++, it = it->next) {
		recs[i] = it->rec;
		texts[i] = it->attrs ? json_dumps(it->attrs, JSON_COMPACT) : NULL;
		recs[i].attrs = texts[i] ? texts[i] : "";
	}
	/* tests: hold the writer (wait:PATH) to show that recording never waits for it */
	r = EOS_FAILPOINT("obs.flush");
	if (r < 0)
		eos_error_set(err, r, "telemetry: failpoint 'obs.flush'");
	else
		r = eos_store_obs_append(obs->st, recs, n, &obs->limits, err);
	for (size_t i = 0; i < n; i++)
		free(texts[i]);
	return r;
}

/* Count the outcome of one write (obs->lock held); log the first failure of a streak. */
static void
count_write(struct eosd_obs *obs, size_t n, int r, const struct eos_error *err)
{
	if (r < 0) {
		obs->c.failed += n;
		if (!obs->write_failing)
			eos_log_warn(
				"telemetry: %zu records not written: %s (more failures are not "
				"logged until a write succeeds)",
				n, eos_error_message(err, r));
		obs->write_failing = true;
		return;
	}
	obs->c.written += n;
	obs->c.flushes++;
	obs->write_failing = false;
}

/* Write one batch of what is queued: 1 when something was taken, 0 when the queue was empty. */
static int
flush_one(struct eosd_obs *obs, int *ret_r, struct eos_error *err)
{
	struct eosd_obs_item *items;
	size_t n;
	int r;

	pthread_mutex_lock(&obs->lock);
	items = take_batch(obs, &n);
	pthread_mutex_unlock(&obs->lock);
	if (n == 0)
		return 0;
	r = write_items(obs, items, n, err);
	pthread_mutex_lock(&obs->lock);
	count_write(obs, n, r, err);
	pthread_mutex_unlock(&obs->lock);
	items_free(items);
	if (r < 0 && *ret_r == 0)
		*ret_r = r;
	return 1;
}

int
eosd_obs_sync(struct eosd_obs *obs, struct eos_error *err)
{
	int r = 0;

	if (!obs)
		return 0;
	pthread_mutex_lock(&obs->flush_lock);
	while (flush_one(obs, &r, err) > 0)
		;
	pthread_mutex_unlock(&obs->flush_lock);
	return r;
}

/* The flush job: write batches until the queue is empty, then end (nothing runs while idle). */
static void
flush_job(void *arg)
{
	struct eosd_obs *obs = arg;
	struct eos_error err = { 0 };
	int r = 0;

	pthread_mutex_lock(&obs->flush_lock);
	for (;;) {
		if (flush_one(obs, &r, &err) > 0)
			continue;
		pthread_mutex_lock(&obs->lock);
		if (!obs->head) { /* checked under the lock a recorder schedules under */
			obs->scheduled = false;
			pthread_mutex_unlock(&obs->lock);
			break;
		}
		pthread_mutex_unlock(&obs->lock);
	}
	pthread_mutex_unlock(&obs->flush_lock);
}

/* A flush job unless one is scheduled (obs->lock held). A full pool queue: the next record tries.
 */
static void
schedule_locked(struct eosd_obs *obs)
{
	if (obs->scheduled || !obs->pool || !obs->head)
		return;
	obs->scheduled = eosd_pool_submit(obs->pool, flush_job, obs) == 0;
}

void
eosd_obs_attach(struct eosd_obs *obs, struct eosd_pool *pool)
{
	if (!obs)
		return;
	pthread_mutex_lock(&obs->lock);
	obs->pool = pool;
	schedule_locked(obs);
	pthread_mutex_unlock(&obs->lock);
}

void
eosd_obs_free(struct eosd_obs *obs)
{
	if (!obs)
		return;
	eosd_obs_attach(obs, NULL);
	(void)eosd_obs_sync(obs, NULL);
	eosd_obs_followers_release(obs);
	items_free(obs->head);
	pthread_mutex_destroy(&obs->lock);
	pthread_mutex_destroy(&obs->flush_lock);
	free(obs);
}

/* --- recording ----------------------------------------------------------------------------------
 */

static size_t
str_size(const char *s)
{
	return s ? strlen(s) + 1 : 1;
}

/* A queue item holding copies of r's strings; attrs is stolen (also on failure). */
static struct eosd_obs_item *
item_new(const struct eos_obs_record *r, json_t *attrs)
{
	size_t nn = str_size(r->name), ns = str_size(r->sandbox), nw = str_size(r->session);
	struct eosd_obs_item *it = malloc(sizeof(*it) + nn + ns + nw);
	char *p;

	if (!it) {
		json_decref(attrs);
		return NULL;
	}
	it->next = NULL;
	it->rec = *r;
	it->attrs = attrs;
	p = it->text;
	it->rec.name = memcpy(p, r->name ? r->name : "", nn);
	p[nn - 1] = '\0';
	it->rec.sandbox = memcpy(p += nn, r->sandbox ? r->sandbox : "", ns);
	p[ns - 1] = '\0';
	it->rec.session = memcpy(p += ns, r->session ? r->session : "", nw);
	p[nw - 1] = '\0';
	it->rec.attrs = NULL;
	return it;
}

/*
 * Queue it (or drop it when the queue is full) and make sure a flush job will write it. An event
 * with json (its text for the followers, stolen) is kept for them under the same lock that gives
 * it its position, so that a follower's start (eosd_obs_follow) splits the events exactly.
 */
static void
enqueue(struct eosd_obs *obs, struct eosd_obs_item *it, char *json)
{
	bool wake = json != NULL;

	pthread_mutex_lock(&obs->lock);
	if (json)
		eosd_obs_ring_push(obs, it->rec.name, it->rec.sandbox, json);
	if (obs->c.queued >= obs->queue_max) {
		obs->c.dropped++;
		pthread_mutex_unlock(&obs->lock);
		item_free(it);
	} else {
		it->rec.pos = next_pos(obs);
		*obs->tail = it;
		obs->tail = &it->next;
		obs->c.queued++;
		obs->c.recorded++;
		schedule_locked(obs);
		pthread_mutex_unlock(&obs->lock);
	}
	if (wake && obs->notify)
		obs->notify(obs->notify_ctx);
}

static void
record(struct eosd_obs *obs, const struct eos_obs_record *r, json_t *attrs, char *json)
{
	struct eosd_obs_item *it = item_new(r, attrs);

	if (!it) {
		free(json);
		pthread_mutex_lock(&obs->lock);
		obs->c.dropped++;
		pthread_mutex_unlock(&obs->lock);
		return;
	}
	enqueue(obs, it, json);
}

/* --- spans --------------------------------------------------------------------------------------
 */

static void
span_init(struct eosd_obs *obs, struct eosd_span *sp, const char *name,
	  const struct eosd_trace_ctx *parent, int64_t wall, int64_t mono)
{
	*sp = (struct eosd_span){ .obs = obs, .name = name };
	if (!obs)
		return; /* telemetry off: a placeholder that only nests */
	sp->start_wall = wall ? wall : eos_wall_ns();
	sp->start_mono = mono ? mono : eos_mono_ns();
	if (parent && !trace_zero(parent->trace_id)) {
		memcpy(sp->ctx.trace_id, parent->trace_id, EOS_OBS_TRACE_ID_LEN);
		sp->parent = parent->span_id;
	} else {
		new_trace(sp->ctx.trace_id, sp->start_wall);
	}
	sp->ctx.span_id = random_u64();
}

static void
make_current(struct eosd_span *sp)
{
	sp->prev = current;
	sp->current = true;
	current = sp;
}

void
eosd_span_begin(struct eosd_obs *obs, struct eosd_span *sp, const char *name, const char *sandbox)
{
	span_init(obs, sp, name, current ? &current->ctx : NULL, 0, 0);
	eosd_span_set_sandbox(sp, sandbox);
	make_current(sp);
}

void
eosd_span_begin_in(struct eosd_obs *obs, struct eosd_span *sp, const char *name,
		   const struct eosd_trace_ctx *parent, const char *sandbox)
{
	span_init(obs, sp, name, parent, 0, 0);
	eosd_span_set_sandbox(sp, sandbox);
	make_current(sp);
}

void
eosd_span_begin_root(struct eosd_obs *obs, struct eosd_span *sp, const char *name, int64_t wall,
		     int64_t mono)
{
	span_init(obs, sp, name, NULL, wall, mono);
	/* a root starts the thread afresh: a span some earlier work failed to end is forgotten */
	current = NULL;
	make_current(sp);
}

void
eosd_span_start(struct eosd_obs *obs, struct eosd_span *sp, const char *name,
		const struct eosd_trace_ctx *parent, const char *sandbox)
{
	span_init(obs, sp, name, parent, 0, 0);
	eosd_span_set_sandbox(sp, sandbox);
}

void
eosd_span_set_sandbox(struct eosd_span *sp, const char *sandbox)
{
	if (sandbox)
		snprintf(sp->sandbox, sizeof(sp->sandbox), "%s", sandbox);
}

void
eosd_span_set_session(struct eosd_span *sp, const char *session)
{
	if (session)
		snprintf(sp->session, sizeof(sp->session), "%s", session);
}

void
eosd_span_attr(struct eosd_span *sp, const char *key, json_t *value)
{
	if (!value)
		return;
	if (!sp->obs || sp->ended || (!sp->attrs && !(sp->attrs = json_object()))) {
		json_decref(value);
		return;
	}
	json_object_set_new(sp->attrs, key, value);
}

void
eosd_span_attr_str(struct eosd_span *sp, const char *key, const char *value)
{
	if (sp->obs && value)
		eosd_span_attr(sp, key, json_string(value));
}

void
eosd_span_attr_int(struct eosd_span *sp, const char *key, int64_t value)
{
	if (sp->obs)
		eosd_span_attr(sp, key, json_integer(value));
}

static enum eos_obs_status
status_of(int r)
{
	if (r >= 0)
		return EOS_OBS_COMPLETED;
	if (r == -ECANCELED)
		return EOS_OBS_CANCELLED;
	if (r == -ETIMEDOUT)
		return EOS_OBS_TIMED_OUT;
	return EOS_OBS_ERROR;
}

void
eosd_span_end_status(struct eosd_span *sp, enum eos_obs_status status)
{
	struct eos_obs_record r;

	if (sp->ended)
		return;
	sp->ended = true;
	if (sp->current) { /* spans of a thread end in the reverse order of their begin */
		current = sp->prev;
		sp->current = false;
	}
	if (!sp->obs)
		return;
	r = (struct eos_obs_record){
		.type = EOS_OBS_SPAN,
		.status = status,
		.start_ns = sp->start_wall,
		.duration_ns = EOS_MAX(0, eos_mono_ns() - sp->start_mono),
		.span_id = sp->ctx.span_id,
		.parent_id = sp->parent,
		.name = sp->name,
		.sandbox = sp->sandbox,
		.session = sp->session,
	};
	memcpy(r.trace_id, sp->ctx.trace_id, EOS_OBS_TRACE_ID_LEN);
	record(sp->obs, &r, TAKE_PTR(sp->attrs), NULL);
}

void
eosd_span_end(struct eosd_span *sp, int r, const struct eos_error *err)
{
	if (r < 0 && sp->obs && !sp->ended)
		eosd_span_attr_str(sp, "error", eos_error_message(err, r));
	eosd_span_end_status(sp, status_of(r));
}

struct eosd_trace_ctx
eosd_span_context(const struct eosd_span *sp)
{
	return sp->ctx;
}

struct eosd_trace_ctx
eosd_obs_context(void)
{
	return current ? current->ctx : (struct eosd_trace_ctx){ 0 };
}

bool
eosd_obs_trace_hex(char *out)
{
	out[0] = '\0';
	if (!current || !current->obs)
		return false;
	eosd_obs_trace_id_hex(current->ctx.trace_id, out);
	return true;
}

struct eosd_trace_ctx
eosd_span_record(struct eosd_obs *obs, const struct eosd_trace_ctx *parent, const char *name,
		 int64_t start_mono, int64_t end_mono, enum eos_obs_status status, json_t *attrs)
{
	int64_t now_mono = eos_mono_ns();
	struct eosd_span sp;

	if (!obs || start_mono <= 0 || end_mono < start_mono) {
		json_decref(attrs);
		return (struct eosd_trace_ctx){ 0 };
	}
	/* the wall-clock start: now on the wall clock, less how long ago it was */
	span_init(obs, &sp, name, parent ? parent : (current ? &current->ctx : NULL),
		  eos_wall_ns() - (now_mono - start_mono), start_mono);
	if (current) {
		memcpy(sp.sandbox, current->sandbox, sizeof(sp.sandbox));
		memcpy(sp.session, current->session, sizeof(sp.session));
	}
	sp.attrs = attrs;
	sp.ended = true;
	{
		struct eos_obs_record r = {
			.type = EOS_OBS_SPAN,
			.status = status,
			.start_ns = sp.start_wall,
			.duration_ns = end_mono - start_mono,
			.span_id = sp.ctx.span_id,
			.parent_id = sp.parent,
			.name = name,
			.sandbox = sp.sandbox,
			.session = sp.session,
		};

		memcpy(r.trace_id, sp.ctx.trace_id, EOS_OBS_TRACE_ID_LEN);
		record(obs, &r, TAKE_PTR(sp.attrs), NULL);
	}
	return sp.ctx;
}

/* --- events -------------------------------------------------------------------------------------
 */

/* The event's JSON text for the followers, when there are any (else NULL). */
static char *
follower_text(struct eosd_obs *obs, const struct eos_obs_record *r, const json_t *attrs)
{
	cleanup_free char *text = NULL;
	struct eos_obs_record copy = *r;
	json_t *ev;
	char *json;

	if (atomic_load(&obs->nfollowers) == 0)
		return NULL;
	text = attrs ? json_dumps(attrs, JSON_COMPACT) : NULL;
	copy.attrs = text ? text : "";
	ev = eosd_obs_event_json(&copy);
	json = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
	json_decref(ev);
	return json;
}

static void
event(struct eosd_obs *obs, const struct eosd_trace_ctx *ctx, enum eos_obs_type type,
      const char *name, const char *sandbox, const char *session, json_t *attrs)
{
	struct eos_obs_record r = {
		.type = type,
		.start_ns = eos_wall_ns(),
		.name = name,
		.sandbox = sandbox,
		.session = session,
	};

	if (!obs) {
		json_decref(attrs);
		return;
	}
	if (ctx) {
		memcpy(r.trace_id, ctx->trace_id, EOS_OBS_TRACE_ID_LEN);
		r.span_id = ctx->span_id;
	}
	record(obs, &r, attrs, type == EOS_OBS_EVENT ? follower_text(obs, &r, attrs) : NULL);
}

void
eosd_obs_event(struct eosd_obs *obs, const char *name, const char *sandbox, const char *session,
	       json_t *attrs)
{
	struct eosd_trace_ctx ctx = eosd_obs_context();

	event(obs, &ctx, EOS_OBS_EVENT, name, sandbox, session, attrs);
}

void
eosd_obs_event_in(struct eosd_obs *obs, const struct eosd_trace_ctx *ctx, const char *name,
		  const char *sandbox, const char *session, json_t *attrs)
{
	event(obs, ctx, EOS_OBS_EVENT, name, sandbox, session, attrs);
}

void
eosd_obs_sample(struct eosd_obs *obs, const char *sandbox, const char *session, json_t *attrs)
{
	event(obs, NULL, EOS_OBS_SAMPLE, "cgroup.sample", sandbox, session, attrs);
}
