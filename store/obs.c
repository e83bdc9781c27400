/* SPDX-License-Identifier: MIT */
/*
 * store/obs: observations — spans, events and samples — in the obs column family, with bounded
 * retention (store/store.h; doc/store-format.md, "Observations").
 *
 * Keys are 0 · be64 time · be64 seq: store-global (records outlive their sandbox) and in the
 * order they were recorded, so the oldest records are one key range at the front, trimmed with
 * one range delete, and "the last N" or "since T" are one seek. Beside them, the meta record
 * 0·"obs" holds the count, the bytes, the first and last positions and the number trimmed, so
 * that neither an append nor an open has to scan: an append puts its records and the updated
 * record in one batch. The first position lets a trim seek straight to the oldest live key,
 * past the range tombstones of earlier trims.
 *
 * Appends serialise on st->obs_lock, which also guards st->obs (loaded from the meta record at
 * the first use).
 */
#include "store/obs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"

#include "store/kv.h"
#include "store/sandbox.h"
#include "store/space.h"
#include "store/store-internal.h"

enum {
	OBS_KEY_LEN = 24,    /* be64 0 · be64 time · be64 seq */
	OBS_FORMAT = 1,	     /* the record format byte */
	OBS_META_FORMAT = 1, /* the 0·"obs" record's */
	OBS_META_LEN = 1 + 7 * 8,
	OBS_FIXED_LEN = 4 + 8 + 8 + EOS_OBS_TRACE_ID_LEN + 8 + 8,
	OBS_ID_MAX = 256, /* sandbox and session fields */
	OBS_TRIM_SLACK = 16,
};

static const char OBS_META_NAME[] = "obs";

const char *
eos_obs_status_name(enum eos_obs_status s)
{
	switch (s) {
	case EOS_OBS_COMPLETED:
		return "completed";
	case EOS_OBS_ERROR:
		return "error";
	case EOS_OBS_CANCELLED:
		return "cancelled";
	case EOS_OBS_TIMED_OUT:
		return "timed_out";
	case EOS_OBS_STATUS_NONE:
		break;
	}
	return NULL;
}

/* --- keys and positions ----------------------------------------------------------------------- */

static void
obs_key(const struct eos_obs_pos *p, uint8_t out[OBS_KEY_LEN])
{
	eos_put_be64(out, EOS_SANDBOX_GLOBAL);
	eos_put_be64(out + 8, p->time);
	eos_put_be64(out + 16, p->seq);
}

static int
obs_pos_cmp(const struct eos_obs_pos *a, const struct eos_obs_pos *b)
{
	if (a->time != b->time)
		return a->time < b->time ? -1 : 1;
	return (a->seq > b->seq) - (a->seq < b->seq);
}

static bool
obs_pos_zero(const struct eos_obs_pos *p)
{
	return p->time == 0 && p->seq == 0;
}

/* --- the 0·"obs" record ------------------------------------------------------------------------
 */

static int
stats_encode(const struct eos_obs_stats *s, struct eos_buf *b)
{
	int r = eos_buf_append_u8(b, OBS_META_FORMAT);
	const uint64_t v[] = { s->records,   s->bytes,	  s->first.time, s->first.seq,
			       s->last.time, s->last.seq, s->trimmed };

	for (size_t i = 0; r == 0 && i < EOS_ARRAY_SIZE(v); i++)
		r = eos_buf_append_le64(b, v[i]);
	return r;
}

static int
stats_decode(const uint8_t *p, size_t n, struct eos_obs_stats *s)
{
	uint64_t *v[] = { &s->records,	 &s->bytes,    &s->first.time, &s->first.seq,
			  &s->last.time, &s->last.seq, &s->trimmed };

	if (n != OBS_META_LEN || p[0] != OBS_META_FORMAT)
		return -EBADMSG;
	for (size_t i = 0; i < EOS_ARRAY_SIZE(v); i++)
		*v[i] = eos_get_le64(p + 1 + 8 * i);
	return 0;
}

int
eos_obs_stats_read(struct eos_store *st, const struct eos_kv_snapshot *snap,
		   struct eos_obs_stats *ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	int r = eos_meta_key(&key, EOS_SANDBOX_GLOBAL, OBS_META_NAME);

	if (r < 0)
		return eos_error_set(err, r, "observations: out of memory");
	r = eos_kv_get(st->kv, snap, EOS_CF_META, key.data, key.len, &val, err);
	if (r == -ENOENT)
		return r;
	if (r < 0)
		return eos_error_prefix(err, r, "observations: read their record");
	if (stats_decode(val.data, val.len, ret) < 0)
		return eos_error_set(err, -EBADMSG,
				     "observations: their record (meta 0·\"obs\", %zu bytes) is "
				     "corrupt",
				     val.len);
	return 0;
}

/* Load st->obs from the meta record once (st->obs_lock held). */
static int
stats_load(struct eos_store *st, struct eos_error *err)
{
	struct eos_obs_stats s = { 0 };
	int r;

	if (st->obs_loaded)
		return 0;
	r = eos_obs_stats_read(st, NULL, &s, err);
	if (r < 0 && r != -ENOENT)
		return r;
	st->obs = s;
	st->obs_loaded = true;
	return 0;
}

static int
stats_stage(struct eos_kv_batch *b, const struct eos_obs_stats *s)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	int r = eos_meta_key(&key, EOS_SANDBOX_GLOBAL, OBS_META_NAME);

	r = r ?: stats_encode(s, &val);
	if (r == 0)
		eos_kv_batch_put(b, EOS_CF_META, key.data, key.len, val.data, val.len);
	return r;
}

/* --- records ---------------------------------------------------------------------------------- */

static int
field_check(const struct eos_obs_record *r, size_t i, struct eos_error *err)
{
	const char *name = r->name ? r->name : "";

	if (!*name || strlen(name) > EOS_OBS_NAME_MAX)
		return eos_error_set(err, -EINVAL,
				     "observation %zu: name '%.64s' is empty or "
				     "longer than %d bytes",
				     i, name, EOS_OBS_NAME_MAX);
	if ((r->sandbox && strlen(r->sandbox) > OBS_ID_MAX) ||
	    (r->session && strlen(r->session) > OBS_ID_MAX))
		return eos_error_set(err, -EINVAL,
				     "observation %zu ('%s'): sandbox or session "
				     "longer than %d bytes",
				     i, name, OBS_ID_MAX);
	if (r->attrs && strlen(r->attrs) > EOS_OBS_ATTRS_MAX)
		return eos_error_set(err, -EINVAL,
				     "observation %zu ('%s'): attributes longer "
				     "than %d bytes",
				     i, name, EOS_OBS_ATTRS_MAX);
	if (r->type < EOS_OBS_SPAN || r->type > EOS_OBS_SAMPLE)
		return eos_error_set(err, -EINVAL, "observation %zu ('%s'): type %d", i, name,
				     (int)r->type);
	return 0;
}

static int
lp_str(struct eos_buf *b, const char *s)
{
	return eos_buf_append_lp(b, s ? s : "", s ? strlen(s) : 0);
}

/*
 * u8 1 · u8 type · u8 status · u8 0 · le64 start · le64 duration · 16 B trace id · le64 span id ·
 * le64 parent id · lp name · lp sandbox · lp session · lp attributes
 */
static int
record_encode(const struct eos_obs_record *r, struct eos_buf *b)
{
	int rc = eos_buf_append_u8(b, OBS_FORMAT);

	rc = rc ?: eos_buf_append_u8(b, (uint8_t)r->type);
	rc = rc ?: eos_buf_append_u8(b, (uint8_t)r->status);
	rc = rc ?: eos_buf_append_u8(b, 0);
	rc = rc ?: eos_buf_append_le64(b, (uint64_t)r->start_ns);
	rc = rc ?: eos_buf_append_le64(b, (uint64_t)r->duration_ns);
	rc = rc ?: eos_buf_append(b, r->trace_id, EOS_OBS_TRACE_ID_LEN);
	rc = rc ?: eos_buf_append_le64(b, r->span_id);
	rc = rc ?: eos_buf_append_le64(b, r->parent_id);
	rc = rc ?: lp_str(b, r->name);
	rc = rc ?: lp_str(b, r->sandbox);
	rc = rc ?: lp_str(b, r->session);
	return rc ?: lp_str(b, r->attrs);
}

/* A decoded record's strings, NUL-terminated, in one buffer. */
struct obs_strings {
	struct eos_buf b;
	size_t off[4];
};

static int
read_str(struct eos_reader *rd, size_t max, struct obs_strings *s, size_t i)
{
	const uint8_t *p;
	size_t n;
	int r = eos_reader_lp(rd, max, &p, &n);

	if (r < 0 || memchr(p, '\0', n))
		return -EBADMSG;
	s->off[i] = s->b.len;
	r = eos_buf_append(&s->b, p, n);
	return r ?: eos_buf_append_u8(&s->b, 0);
}

static int
record_decode(const uint8_t *v, size_t n, struct obs_strings *s, struct eos_obs_record *ret)
{
	const size_t max[4] = { EOS_OBS_NAME_MAX, OBS_ID_MAX, OBS_ID_MAX, EOS_OBS_ATTRS_MAX };
	const char **str[4] = { &ret->name, &ret->sandbox, &ret->session, &ret->attrs };
	struct eos_reader rd;
	const uint8_t *trace;
	uint64_t start, dur;

	if (n < OBS_FIXED_LEN || v[0] != OBS_FORMAT || v[1] < EOS_OBS_SPAN ||
	    v[1] > EOS_OBS_SAMPLE || v[2] > EOS_OBS_TIMED_OUT)
		return -EBADMSG;
	ret->type = v[1];
	ret->status = v[2];
	eos_reader_init(&rd, v + 4, n - 4);
	if (eos_reader_le64(&rd, &start) < 0 || eos_reader_le64(&rd, &dur) < 0 ||
	    eos_reader_bytes(&rd, EOS_OBS_TRACE_ID_LEN, &trace) < 0 ||
	    eos_reader_le64(&rd, &ret->span_id) < 0 || eos_reader_le64(&rd, &ret->parent_id) < 0)
		return -EBADMSG;
	ret->start_ns = (int64_t)start;
	ret->duration_ns = (int64_t)dur;
	memcpy(ret->trace_id, trace, EOS_OBS_TRACE_ID_LEN);
	eos_buf_truncate(&s->b, 0);
	for (size_t i = 0; i < 4; i++)
		if (read_str(&rd, max[i], s, i) < 0)
			return -EBADMSG;
	if (!eos_reader_done(&rd))
		return -EBADMSG;
	for (size_t i = 0; i < 4; i++)
		*str[i] = (const char *)s->b.data + s->off[i];
	return 0;
}

bool
eos_obs_record_valid(const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	struct obs_strings s = { 0 };
	struct eos_obs_record rec;
	bool ok = klen == OBS_KEY_LEN && eos_get_be64(k) == EOS_SANDBOX_GLOBAL &&
		  record_decode(v, vlen, &s, &rec) == 0;

	eos_buf_release(&s.b);
	return ok;
}

/* --- append and trim -------------------------------------------------------------------------- */

static uint64_t
limit_or(uint64_t v, uint64_t def)
{
	return v ? v : def;
}

/* Stage n records into b, counting them into *s; checks positions and fields. */
static int
stage_records(const struct eos_obs_record *recs, size_t n, struct eos_kv_batch *b,
	      struct eos_obs_stats *s, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	uint8_t key[OBS_KEY_LEN];
	int r;

	for (size_t i = 0; i < n; i++) {
		if ((s->records > 0 || !obs_pos_zero(&s->last)) &&
		    obs_pos_cmp(&recs[i].pos, &s->last) <= 0)
			return eos_error_set(err, -EINVAL,
					     "observation %zu ('%s'): position %llu.%llu does not "
					     "follow the last one (%llu.%llu)",
					     i, recs[i].name ? recs[i].name : "",
					     (unsigned long long)recs[i].pos.time,
					     (unsigned long long)recs[i].pos.seq,
					     (unsigned long long)s->last.time,
					     (unsigned long long)s->last.seq);
		if ((r = field_check(&recs[i], i, err)) < 0)
			return r;
		eos_buf_truncate(&val, 0);
		if (record_encode(&recs[i], &val) < 0)
			return eos_error_set(err, -ENOMEM, "observations: out of memory");
		obs_key(&recs[i].pos, key);
		eos_kv_batch_put(b, EOS_CF_OBS, key, sizeof(key), val.data, val.len);
		if (s->records == 0)
			s->first = recs[i].pos;
		s->records++;
		s->bytes += sizeof(key) + val.len;
		s->last = recs[i].pos;
	}
	return 0;
}

/*
 * Walk from the oldest record until *s is within the targets, counting out what is passed;
 * *ret_end is the first record kept (zero when none is).
 */
static int
trim_walk(struct eos_store *st, struct eos_obs_stats *s, uint64_t max_records, uint64_t max_bytes,
	  struct eos_obs_pos *ret_end, struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	uint8_t key[OBS_KEY_LEN];
	size_t klen, vlen;
	const uint8_t *k;

	if (eos_kv_iter_new(st->kv, EOS_CF_OBS, NULL, NULL, 0, EOS_KV_ITER_NO_CACHE_FILL, &it) < 0)
		return eos_error_set(err, -ENOMEM, "observations: out of memory");
	obs_key(&s->first, key);
	*ret_end = (struct eos_obs_pos){ 0 };
	for (eos_kv_iter_seek(it, key, sizeof(key)); eos_kv_iter_valid(it); eos_kv_iter_next(it)) {
		k = eos_kv_iter_key(it, &klen);
		if (klen == OBS_KEY_LEN && (s->records <= max_records && s->bytes <= max_bytes)) {
			*ret_end =
				(struct eos_obs_pos){ eos_get_be64(k + 8), eos_get_be64(k + 16) };
			break;
		}
		eos_kv_iter_value(it, &vlen);
		s->records -= s->records > 0;
		s->bytes -= EOS_MIN(s->bytes, klen + vlen);
		s->trimmed++;
	}
	return eos_kv_iter_status(it, err);
}

/* Delete the oldest records until both bounds are met with a sixteenth to spare. */
static int
trim(struct eos_store *st, const struct eos_obs_limits *lim, struct eos_error *err)
{
	uint64_t max_records = limit_or(lim ? lim->max_records : 0, EOS_OBS_DEFAULT_RECORDS);
	uint64_t max_bytes = limit_or(lim ? lim->max_bytes : 0, EOS_OBS_DEFAULT_BYTES);
	EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *b = NULL;
	struct eos_obs_stats s = st->obs;
	uint8_t lo[OBS_KEY_LEN] = { 0 }, hi[OBS_KEY_LEN];
	struct eos_obs_pos end;
	int r;

	if (s.records <= max_records && s.bytes <= max_bytes)
		return 0;
	r = trim_walk(st, &s, max_records - max_records / OBS_TRIM_SLACK,
		      max_bytes - max_bytes / OBS_TRIM_SLACK, &end, err);
	if (r < 0)
		return eos_error_prefix(err, r, "observations: trim");
	if (obs_pos_zero(&end)) { /* every record goes: the range ends past the last */
		s = (struct eos_obs_stats){ .last = st->obs.last, .trimmed = s.trimmed };
		obs_key(&st->obs.last, hi);
		eos_put_be64(hi + 16, st->obs.last.seq + 1);
	} else {
		s.first = end;
		obs_key(&end, hi);
	}
	if (eos_kv_batch_new(&b) < 0 || stats_stage(b, &s) < 0)
		return eos_error_set(err, -ENOMEM, "observations: out of memory");
	eos_kv_batch_delete_range(b, EOS_CF_OBS, lo, sizeof(lo), hi, sizeof(hi));
	r = eos_kv_batch_write(st->kv, b, false, err);
	if (r < 0)
		return eos_error_prefix(err, r, "observations: trim");
	st->obs = s;
	return 0;
}

static int
append_locked(struct eos_store *st, const struct eos_obs_record *recs, size_t n,
	      const struct eos_obs_limits *lim, struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *b = NULL;
	struct eos_obs_stats s;
	int r = stats_load(st, err);

	if (r < 0)
		return r;
	s = st->obs;
	if (eos_kv_batch_new(&b) < 0)
		return eos_error_set(err, -ENOMEM, "observations: out of memory");
	r = stage_records(recs, n, b, &s, err);
	if (r == 0 && stats_stage(b, &s) < 0)
		r = eos_error_set(err, -ENOMEM, "observations: out of memory");
	r = r ?: eos_space_check(&st->space, EOS_SPACE_GROW, eos_kv_batch_bytes(b), err);
	r = r ?: eos_kv_batch_write(st->kv, b, false, err);
	if (r < 0)
		return r;
	st->obs = s;
	return trim(st, lim, err);
}

int
eos_store_obs_append(struct eos_store *st, const struct eos_obs_record *recs, size_t n,
		     const struct eos_obs_limits *lim, struct eos_error *err)
{
	int r;

	if (n == 0)
		return 0;
	pthread_mutex_lock(&st->obs_lock);
	r = append_locked(st, recs, n, lim, err);
	pthread_mutex_unlock(&st->obs_lock);
	return r;
}

int
eos_store_obs_stats(struct eos_store *st, struct eos_obs_stats *ret, struct eos_error *err)
{
	int r;

	pthread_mutex_lock(&st->obs_lock);
	r = stats_load(st, err);
	if (r == 0)
		*ret = st->obs;
	pthread_mutex_unlock(&st->obs_lock);
	return r;
}

/* --- scans ------------------------------------------------------------------------------------ */

struct obs_scan {
	const struct eos_obs_query *q;
	eos_obs_fn fn;
	void *ctx;
	struct obs_strings strings;
};

/* One key and value of the scan: decode, filter, call. */
static int
scan_one(struct obs_scan *sc, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen,
	 struct eos_error *err)
{
	struct eos_obs_record rec = { 0 };

	if (klen != OBS_KEY_LEN)
		return eos_error_set(err, -EBADMSG, "observation key of %zu bytes", klen);
	rec.pos = (struct eos_obs_pos){ eos_get_be64(k + 8), eos_get_be64(k + 16) };
	if (record_decode(v, vlen, &sc->strings, &rec) < 0)
		return eos_error_set(err, -EBADMSG, "observation %llu.%llu is corrupt",
				     (unsigned long long)rec.pos.time,
				     (unsigned long long)rec.pos.seq);
	if (sc->q->types && !(sc->q->types & (1u << rec.type)))
		return 0;
	return sc->fn(sc->ctx, &rec);
}

/* Position it at the scan's start; keys below lo are out of range. */
static void
scan_start(struct eos_kv_iter *it, const struct eos_obs_query *q, const uint8_t *lo,
	   const uint8_t *hi)
{
	if (!q->reverse)
		eos_kv_iter_seek(it, lo, OBS_KEY_LEN);
	else if (obs_pos_zero(&q->to))
		eos_kv_iter_seek_last(it);
	else
		eos_kv_iter_seek_for_prev(it, hi, OBS_KEY_LEN);
	/* seek_for_prev lands on hi itself when it exists: the end is exclusive */
	if (q->reverse && eos_kv_iter_valid(it)) {
		size_t klen;
		const uint8_t *k = eos_kv_iter_key(it, &klen);

		if (!obs_pos_zero(&q->to) && klen == OBS_KEY_LEN && !memcmp(k, hi, OBS_KEY_LEN))
			eos_kv_iter_prev(it);
	}
}

static int
scan_run(struct eos_store *st, struct obs_scan *sc, struct eos_error *err)
{
	const struct eos_obs_query *q = sc->q;
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	uint8_t lo[OBS_KEY_LEN], hi[OBS_KEY_LEN];
	int r = 0;

	obs_key(&q->from, lo);
	obs_key(&q->to, hi);
	if (obs_pos_zero(&q->to))
		eos_put_be64(hi, EOS_SANDBOX_GLOBAL + 1); /* past every record */
	if (eos_kv_iter_new(st->kv, EOS_CF_OBS, NULL, hi, sizeof(hi), 0, &it) < 0)
		return eos_error_set(err, -ENOMEM, "observations: out of memory");
	for (scan_start(it, q, lo, hi); r == 0 && eos_kv_iter_valid(it);
	     q->reverse ? eos_kv_iter_prev(it) : eos_kv_iter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = eos_kv_iter_key(it, &klen);
		const uint8_t *v;

		if (memcmp(k, lo, EOS_MIN(klen, (size_t)OBS_KEY_LEN)) < 0)
			break; /* reverse scans stop below from */
		v = eos_kv_iter_value(it, &vlen);
		r = scan_one(sc, k, klen, v, vlen, err);
	}
	if (r == 0)
		r = eos_kv_iter_status(it, err);
	return r;
}

int
eos_store_obs_scan(struct eos_store *st, const struct eos_obs_query *q, eos_obs_fn fn, void *ctx,
		   struct eos_error *err)
{
	static const struct eos_obs_query all = { 0 };
	struct obs_scan sc = { .q = q ? q : &all, .fn = fn, .ctx = ctx };
	int r = scan_run(st, &sc, err);

	eos_buf_release(&sc.strings.b);
	return r < 0 ? eos_error_prefix(err, r, "observations") : r;
}
