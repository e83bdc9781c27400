/* SPDX-License-Identifier: MIT */
/*
 * eos_kv_scan: one range scan over the kv iterator API, and how it goes on past keys it cannot
 * read.
 *
 * RocksDB's C API (7.8) has no VerifyChecksum() and no way to step over a bad block: an iterator
 * that reaches a damaged block, table file or blob stops with an error. A seek to key X reads, in
 * every level, the block holding the first key at or after X (and the blob of the first key it
 * returns), so "a seek to X fails" holds for the X inside a damaged stretch and stops holding past
 * its end. The scan bisects the key space between the last key it read and the end for the first
 * X a fresh iterator seeks to without error, reports the keys in between as possibly unreadable,
 * and goes on from X. Keys are compared as fixed-length big-endian numbers for the bisection; the
 * precision (SCAN_PROBE_BYTES, SCAN_PROBE_STEPS) only decides how many readable keys next to the
 * damage may be reported with it, never whether damage is reported.
 */
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/error.h"

#include "store/kv.h"

enum {
	SCAN_PROBE_BYTES = 64,	     /* at least this much key is bisected */
	SCAN_PROBE_BYTES_MAX = 4608, /* and at most this (the longest entry key, rounded up) */
	SCAN_PROBE_STEPS = 1024,     /* seeks per damaged stretch */
};

struct scan {
	struct eos_kv *kv;
	const struct eos_kv_scan *s;
	struct eos_kv_iter *it;
	struct eos_buf last; /* the last key passed to fn (when a damage callback is set) */
	bool have_last;
	bool read_since_resume; /* a key was read since the last repositioning */
	bool oom;		/* keeping the last key failed */
};

static void
scan_release(struct scan *sc)
{
	eos_kv_iter_free(sc->it);
	eos_buf_release(&sc->last);
}

/* Position a fresh iterator of the scan at key (NULL: the scan's start). */
static int
scan_open(struct scan *sc, const void *key, size_t klen, struct eos_kv_iter **ret)
{
	const struct eos_kv_scan *s = sc->s;
	int r = eos_kv_iter_new(sc->kv, s->cf, s->snap, s->hi, s->hlen, s->flags, ret);

	if (r < 0)
		return r;
	if (key)
		eos_kv_iter_seek(*ret, key, klen);
	else
		eos_kv_iter_seek_first(*ret);
	return 0;
}

/* Pass every key from the iterator's position on to fn; stops at the end or an error. */
static int
scan_keys(struct scan *sc)
{
	const struct eos_kv_scan *s = sc->s;
	int r;

	for (; eos_kv_iter_valid(sc->it); eos_kv_iter_next(sc->it)) {
		size_t klen, vlen = 0;
		const uint8_t *k = eos_kv_iter_key(sc->it, &klen);
		const uint8_t *v = s->values ? eos_kv_iter_value(sc->it, &vlen) : NULL;

		r = s->fn(s->ctx, k, klen, v, vlen);
		if (r < 0)
			return r;
		if (!s->damage)
			continue;
		eos_buf_truncate(&sc->last, 0);
		if (eos_buf_append(&sc->last, k, klen) < 0) {
			sc->oom = true;
			return -ENOMEM;
		}
		sc->have_last = true;
		sc->read_since_resume = true;
	}
	return 0;
}

/* 0 when a fresh iterator seeks to key without error. */
static int
scan_probe(struct scan *sc, const uint8_t *key, size_t klen)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	int r = scan_open(sc, key, klen, &it);

	return r < 0 ? r : eos_kv_iter_status(it, NULL);
}

static int
key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int c = memcmp(a, b, EOS_MIN(alen, blen));

	return c ? c : (alen > blen) - (alen < blen);
}

/* mid = (a + b) / 2 over n-byte big-endian numbers; false when no number lies between a and b. */
static bool
key_mid(const uint8_t *a, const uint8_t *b, uint8_t *mid, size_t n)
{
	unsigned carry = 0;

	for (size_t i = n; i-- > 0;) {
		unsigned sum = (unsigned)a[i] + b[i] + carry;

		mid[i] = (uint8_t)sum;
		carry = sum >> 8;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned v = carry << 8 | mid[i];

		mid[i] = (uint8_t)(v >> 1);
		carry = v & 1;
	}
	return memcmp(mid, a, n) != 0;
}

/*
 * Bisect between bad (seeking there fails) and the end of the key space for the first n-byte key
 * a seek succeeds at: into good, true when found (false: the damage may reach the end).
 */
static int
scan_bisect(struct scan *sc, uint8_t *bad, uint8_t *good, size_t n, bool *found)
{
	cleanup_free uint8_t *mid = malloc(n);
	int r;

	if (!mid)
		return -ENOMEM;
	memset(good, 0xff, n);
	*found = false;
	for (unsigned step = 0; step < SCAN_PROBE_STEPS && key_mid(bad, good, mid, n); step++) {
		r = scan_probe(sc, mid, n);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			memcpy(bad, mid, n);
		} else {
			memcpy(good, mid, n);
			*found = true;
		}
	}
	return 0;
}

/*
 * Where to go on after a failure: the first key after the last one read (or the scan's start)
 * when a seek there works, else the end of the damaged stretch. resume is emptied and *end set
 * when the damage may reach the end of the scan.
 */
static int
scan_resume(struct scan *sc, struct eos_buf *resume, bool *end)
{
	const struct eos_kv_scan *s = sc->s;
	size_t start = sc->have_last ? sc->last.len + 1 : (s->lo ? s->llen : 0);
	size_t n =
		EOS_MIN(EOS_MAX(start + 1, (size_t)SCAN_PROBE_BYTES), (size_t)SCAN_PROBE_BYTES_MAX);
	cleanup_free uint8_t *bad = calloc(1, EOS_MAX(n, start));
	cleanup_free uint8_t *good = malloc(n);
	bool found;
	int r;

	if (!bad || !good)
		return -ENOMEM;
	/* bad = the successor of the last key read (last · 0x00 · zeros), or the scan's start */
	if (sc->have_last)
		memcpy(bad, sc->last.data, sc->last.len);
	else if (s->lo)
		memcpy(bad, s->lo, s->llen);
	*end = true;
	eos_buf_truncate(resume, 0);
	/*
	 * Seeking past the last stretch worked for a probe but failed right after for the scan, or
	 * the key is longer than the bisection: give up the rest rather than go round in circles.
	 */
	if (!sc->read_since_resume || start > n)
		return 0;
	if (scan_probe(sc, bad, n) == 0) {
		memcpy(good, bad, n);
		found = true;
	} else {
		r = scan_bisect(sc, bad, good, n, &found);
		if (r < 0)
			return r;
	}
	if (!found || (s->hi && key_cmp(good, n, s->hi, s->hlen) >= 0))
		return 0;
	*end = false;
	return eos_buf_append(resume, good, n);
}

/* RocksDB's message without eos_kv_iter_status's context. */
static const char *
scan_message(const struct eos_error *e)
{
	static const char ctx[] = "iterate: ";

	return strncmp(e->msg, ctx, sizeof(ctx) - 1) == 0 ? e->msg + sizeof(ctx) - 1 : e->msg;
}

/* The iterator stopped on error e: report the damaged stretch and reposition past it. */
static int
scan_skip(struct scan *sc, const struct eos_error *e, bool *done)
{
	const struct eos_kv_scan *s = sc->s;
	EOS_CLEANUP(eos_buf_release) struct eos_buf resume = { 0 };
	bool end;
	int r;

	r = scan_resume(sc, &resume, &end);
	if (r < 0)
		return r;
	r = s->damage(s->ctx, sc->have_last ? sc->last.data : NULL,
		      sc->have_last ? sc->last.len : 0, end ? NULL : resume.data,
		      end ? 0 : resume.len, scan_message(e));
	*done = end;
	if (r < 0 || end)
		return r;
	eos_kv_iter_free(sc->it);
	sc->it = NULL;
	sc->read_since_resume = false;
	return scan_open(sc, resume.data, resume.len, &sc->it);
}

int
eos_kv_scan(struct eos_kv *kv, const struct eos_kv_scan *s, struct eos_error *err)
{
	EOS_CLEANUP(scan_release) struct scan sc = { .kv = kv, .s = s, .read_since_resume = true };
	bool done = false;
	int r;

	r = scan_open(&sc, s->lo, s->llen, &sc.it);
	if (r < 0)
		return eos_error_set(err, r, "iterate '%s'", eos_kv_cf_name(s->cf));
	while (!done) {
		struct eos_error e = { 0 };

		r = scan_keys(&sc);
		if (r < 0 && sc.oom)
			return eos_error_set(err, r, "iterate '%s': out of memory",
					     eos_kv_cf_name(s->cf));
		if (r < 0)
			return r;
		r = eos_kv_iter_status(sc.it, &e);
		if (r == 0)
			return 0;
		if (!s->damage) {
			if (err)
				*err = e;
			return eos_error_prefix(err, r, "iterate '%s'", eos_kv_cf_name(s->cf));
		}
		r = scan_skip(&sc, &e, &done);
		if (r == -ENOMEM)
			return eos_error_set(err, r, "iterate '%s': out of memory",
					     eos_kv_cf_name(s->cf));
		if (r < 0)
			return r;
	}
	return 0;
}
