/* SPDX-License-Identifier: MIT */
/*
 * Line alignment for blame. Steps:
 *  1. trim the common prefix and suffix lines by comparing bytes (a small edit of a big file
 *     leaves a tiny middle);
 *  2. give every distinct line of the middle an id (one hash table over both sides);
 *  3. drop the lines that occur on one side only (they can never be kept);
 *  4. Myers' O(ND) linear-space divide and conquer on the ids (the split search of xdiff), with
 *     two bounds: a split whose edit cost passes `mxcost` takes the furthest-reaching diagonal
 *     as an approximate split point, and once the total work passes a budget the boxes left are
 *     treated as replaced. Small inputs never reach either bound, so their alignment is a
 *     longest common subsequence.
 */
#include "store/linediff.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/error.h"

enum {
	LINE_MAX_COUNT = INT32_MAX / 4, /* diagonals must fit int32_t */
	MXCOST_MIN = 256,		/* edit cost searched exactly before approximating */
	WORK_BASE = 64 << 20,		/* diagonal steps allowed, plus WORK_PER_LINE per line */
	WORK_PER_LINE = 64,
};

uint32_t
eos_line_count(const void *p, size_t n)
{
	const char *s = p, *end = s + n;
	uint64_t count = 0;

	if (n == 0)
		return 0;
	for (const char *q = s; (q = memchr(q, '\n', (size_t)(end - q))); q++)
		count++;
	if (s[n - 1] != '\n')
		count++;
	return count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
}

/* Length of the UTF-8 sequence starting at s (n > 0 bytes left), or 0 when invalid. */
static size_t
utf8_seq(const unsigned char *s, size_t n)
{
	size_t len;
	unsigned lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return s[0] ? 1 : 0;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, lo = s[0] == 0xe0 ? 0xa0 : 0x80, hi = s[0] == 0xed ? 0x9f : 0xbf;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, lo = s[0] == 0xf0 ? 0x90 : 0x80, hi = s[0] == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

bool
eos_line_is_text(const void *p, size_t n)
{
	const unsigned char *s = p;
	size_t i = 0;

	while (i < n) {
		size_t len;

		if (s[i] >= 0x01 && s[i] < 0x80) {
			i++;
			continue;
		}
		len = utf8_seq(s + i, n - i);
		if (len == 0)
			return false;
		i += len;
	}
	return true;
}

/* --- lines of the middle ---------------------------------------------------------------------- */

struct lines {
	const char *base;
	size_t *start; /* n + 1 offsets: line i is [start[i], start[i + 1]) */
	uint32_t n;
};

static void
lines_release(struct lines *l)
{
	free(l->start);
}

/* Split p[0..len) into lines. */
static int
lines_split(struct lines *l, const char *p, size_t len)
{
	uint32_t n = eos_line_count(p, len), i = 0;
	const char *q = p, *end = p + len;

	if (n > LINE_MAX_COUNT)
		return -EFBIG;
	l->base = p;
	l->n = n;
	l->start = malloc(((size_t)n + 1) * sizeof(*l->start));
	if (!l->start)
		return -ENOMEM;
	l->start[0] = 0;
	while (i < n) {
		const char *nl = memchr(q, '\n', (size_t)(end - q));

		q = nl ? nl + 1 : end;
		l->start[++i] = (size_t)(q - p);
	}
	return 0;
}

static uint64_t
line_hash(const unsigned char *p, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h ^ (h >> 29);
}

/* --- line ids -----------------------------------------------------------------------------------
 */

struct line_class {
	uint64_t hash;
	const char *p;
	size_t len;
	uint32_t count[2]; /* occurrences in old, new */
};

struct classes {
	struct line_class *v;
	uint32_t n;
	uint32_t *slot; /* cap entries: class index + 1, 0 = empty */
	size_t mask;
};

static void
classes_release(struct classes *c)
{
	free(c->v);
	free(c->slot);
}

static int
classes_init(struct classes *c, size_t lines)
{
	size_t cap = 16;

	while (cap < 2 * lines)
		cap *= 2;
	c->mask = cap - 1;
	c->slot = calloc(cap, sizeof(*c->slot));
	c->v = malloc((lines ? lines : 1) * sizeof(*c->v));
	return c->slot && c->v ? 0 : -ENOMEM;
}

/* The class id of line p[0..len) of side (0 old, 1 new). */
static uint32_t
classes_add(struct classes *c, const char *p, size_t len, int side)
{
	uint64_t h = line_hash((const unsigned char *)p, len);
	size_t i = (size_t)h & c->mask;
	struct line_class *k;

	for (; c->slot[i]; i = (i + 1) & c->mask) {
		k = &c->v[c->slot[i] - 1];
		if (k->hash == h && k->len == len && memcmp(k->p, p, len) == 0) {
			k->count[side]++;
			return c->slot[i] - 1;
		}
	}
	k = &c->v[c->n];
	*k = (struct line_class){ .hash = h, .p = p, .len = len };
	k->count[side] = 1;
	c->slot[i] = ++c->n;
	return c->n - 1;
}

/* --- Myers on ids --------------------------------------------------------------------------------
 */

struct myers {
	const uint32_t *a, *b; /* ids of the kept-able lines of old and new */
	const uint32_t *aidx, *bidx;
	int32_t *kvdf, *kvdb; /* indexed by diagonal i1 - i2, offset by nb + 1 */
	int64_t mxcost;
	int64_t work; /* budget left */
	uint32_t *map;
};

struct box {
	int32_t off1, lim1, off2, lim2;
};

struct split {
	int32_t i1, i2;
};

/* Trim the box's common prefix and suffix, recording them as kept. */
static void
box_trim(struct myers *m, struct box *x)
{
	while (x->off1 < x->lim1 && x->off2 < x->lim2 && m->a[x->off1] == m->b[x->off2]) {
		m->map[m->bidx[x->off2]] = m->aidx[x->off1] + 1;
		x->off1++, x->off2++;
	}
	while (x->off1 < x->lim1 && x->off2 < x->lim2 && m->a[x->lim1 - 1] == m->b[x->lim2 - 1]) {
		m->map[m->bidx[x->lim2 - 1]] = m->aidx[x->lim1 - 1] + 1;
		x->lim1--, x->lim2--;
	}
}

/* The furthest point of the forward (fwd) or backward frontier, as a split (xdiff's heuristic). */
static struct split
frontier_best(const struct myers *m, const struct box *x, int32_t dlo, int32_t dhi, bool fwd,
	      int64_t *ret_progress)
{
	struct split s = { 0 };
	int64_t best = -1;

	for (int32_t d = dhi; d >= dlo; d -= 2) {
		int32_t i1, i2;
		int64_t progress;

		if (fwd) {
			i1 = EOS_MIN(m->kvdf[d], x->lim1);
			i2 = i1 - d;
			if (i2 > x->lim2)
				i1 = x->lim2 + d, i2 = x->lim2;
			progress = (int64_t)i1 + i2 - x->off1 - x->off2;
		} else {
			i1 = EOS_MAX(m->kvdb[d], x->off1);
			i2 = i1 - d;
			if (i2 < x->off2)
				i1 = x->off2 + d, i2 = x->off2;
			progress = (int64_t)x->lim1 + x->lim2 - i1 - i2;
		}
		if (progress > best)
			best = progress, s.i1 = i1, s.i2 = i2;
	}
	*ret_progress = best;
	return s;
}

/* Advance the forward frontier by one edit; true (and *ret) when it meets the backward one. */
static bool
forward_pass(struct myers *m, const struct box *x, int32_t fmin, int32_t fmax, bool odd,
	     int32_t bmin, int32_t bmax, struct split *ret)
{
	for (int32_t d = fmax; d >= fmin; d -= 2) {
		int32_t i1, i2, s;

		if (m->kvdf[d - 1] >= m->kvdf[d + 1])
			i1 = m->kvdf[d - 1] + 1;
		else
			i1 = m->kvdf[d + 1];
		s = i1;
		i2 = i1 - d;
		while (i1 < x->lim1 && i2 < x->lim2 && m->a[i1] == m->b[i2])
			i1++, i2++;
		m->work -= 1 + (i1 - s);
		m->kvdf[d] = i1;
		if (odd && bmin <= d && d <= bmax && m->kvdb[d] <= i1) {
			*ret = (struct split){ i1, i2 };
			return true;
		}
	}
	return false;
}

/* Advance the backward frontier by one edit; true (and *ret) when it meets the forward one. */
static bool
backward_pass(struct myers *m, const struct box *x, int32_t bmin, int32_t bmax, bool odd,
	      int32_t fmin, int32_t fmax, struct split *ret)
{
	for (int32_t d = bmax; d >= bmin; d -= 2) {
		int32_t i1, i2, s;

		if (m->kvdb[d - 1] < m->kvdb[d + 1])
			i1 = m->kvdb[d - 1];
		else
			i1 = m->kvdb[d + 1] - 1;
		s = i1;
		i2 = i1 - d;
		while (i1 > x->off1 && i2 > x->off2 && m->a[i1 - 1] == m->b[i2 - 1])
			i1--, i2--;
		m->work -= 1 + (s - i1);
		m->kvdb[d] = i1;
		if (!odd && fmin <= d && d <= fmax && i1 <= m->kvdf[d]) {
			*ret = (struct split){ i1, i2 };
			return true;
		}
	}
	return false;
}

/* Widen a frontier's diagonal range [*lo, *hi] by one within [dmin, dmax], seeding sentinels. */
static void
widen(int32_t *kv, int32_t *lo, int32_t *hi, int32_t dmin, int32_t dmax, int32_t sentinel)
{
	if (*lo > dmin)
		kv[--*lo - 1] = sentinel;
	else
		++*lo;
	if (*hi < dmax)
		kv[++*hi + 1] = sentinel;
	else
		--*hi;
}

/*
 * Split box x (trimmed, both sides non-empty) at a point of a shortest edit path (xdiff's
 * xdl_split), or approximately once the cost passes mxcost. -E2BIG when the work budget ran out.
 */
static int
myers_split(struct myers *m, const struct box *x, struct split *ret)
{
	int32_t dmin = x->off1 - x->lim2, dmax = x->lim1 - x->off2;
	int32_t fmid = x->off1 - x->off2, bmid = x->lim1 - x->lim2;
	int32_t fmin = fmid, fmax = fmid, bmin = bmid, bmax = bmid;
	bool odd = (fmid - bmid) & 1;
	int64_t fprog, bprog;
	struct split fs, bs;

	m->kvdf[fmid] = x->off1;
	m->kvdb[bmid] = x->lim1;
	for (int64_t ec = 1;; ec++) {
		widen(m->kvdf, &fmin, &fmax, dmin, dmax, -1);
		if (forward_pass(m, x, fmin, fmax, odd, bmin, bmax, ret))
			return 0;
		widen(m->kvdb, &bmin, &bmax, dmin, dmax, INT32_MAX);
		if (backward_pass(m, x, bmin, bmax, odd, fmin, fmax, ret))
			return 0;
		if (m->work <= 0)
			return -E2BIG;
		if (ec < m->mxcost)
			continue;
		fs = frontier_best(m, x, fmin, fmax, true, &fprog);
		bs = frontier_best(m, x, bmin, bmax, false, &bprog);
		*ret = fprog > bprog ? fs : bs;
		return 0;
	}
}

static bool
split_inside(const struct box *x, const struct split *s)
{
	if (s->i1 < x->off1 || s->i1 > x->lim1 || s->i2 < x->off2 || s->i2 > x->lim2)
		return false;
	if (s->i1 == x->off1 && s->i2 == x->off2)
		return false;
	return !(s->i1 == x->lim1 && s->i2 == x->lim2);
}

/* Align a[0..na) with b[0..nb) into m->map. Boxes the budget cannot afford stay replaced. */
static int
myers_run(struct myers *m, int32_t na, int32_t nb)
{
	cleanup_free struct box *stack = NULL;
	size_t n = 0, cap = 0;

	if (eos_buf_array_reserve(&stack, &cap, n, sizeof(*stack), 64) < 0)
		return -ENOMEM;
	stack[n++] = (struct box){ 0, na, 0, nb };
	while (n > 0) {
		struct box x = stack[--n];
		struct split s;

		box_trim(m, &x);
		if (x.off1 == x.lim1 || x.off2 == x.lim2 || m->work <= 0)
			continue;
		if (myers_split(m, &x, &s) < 0 || !split_inside(&x, &s))
			continue;
		if (eos_buf_array_reserve(&stack, &cap, n + 1, sizeof(*stack), 64) < 0)
			return -ENOMEM;
		stack[n++] = (struct box){ s.i1, x.lim1, s.i2, x.lim2 };
		stack[n++] = (struct box){ x.off1, s.i1, x.off2, s.i2 };
	}
	return 0;
}

static int64_t
isqrt(int64_t v)
{
	int64_t r = 1;

	while (r * r < v)
		r++;
	return r;
}

/* The two middles, their line classes and the sequences of lines that occur on both sides. */
struct middle {
	struct lines old, new;
	uint32_t old_first, new_first; /* absolute index of their first line */
	struct classes cls;
	uint32_t *ids[2], *idx[2];
	int32_t n[2];
};

static void
middle_release(struct middle *md)
{
	lines_release(&md->old);
	lines_release(&md->new);
	classes_release(&md->cls);
	for (int s = 0; s < 2; s++) {
		free(md->ids[s]);
		free(md->idx[s]);
	}
}

/* Class every line, then keep those whose class occurs on the other side too. */
static int
middle_classify(struct middle *md)
{
	const struct lines *side[2] = { &md->old, &md->new };
	const uint32_t first[2] = { md->old_first, md->new_first };
	int r = classes_init(&md->cls, (size_t)md->old.n + md->new.n);

	for (int s = 0; r == 0 && s < 2; s++) {
		md->ids[s] = malloc(((size_t)side[s]->n + 1) * sizeof(uint32_t));
		md->idx[s] = malloc(((size_t)side[s]->n + 1) * sizeof(uint32_t));
		if (!md->ids[s] || !md->idx[s])
			r = -ENOMEM;
		for (uint32_t i = 0; r == 0 && i < side[s]->n; i++) {
			const struct lines *l = side[s];

			md->ids[s][i] = classes_add(&md->cls, l->base + l->start[i],
						    l->start[i + 1] - l->start[i], s);
		}
	}
	for (int s = 0; r == 0 && s < 2; s++) {
		int32_t k = 0;

		for (uint32_t i = 0; i < side[s]->n; i++) {
			if (md->cls.v[md->ids[s][i]].count[!s] == 0)
				continue;
			md->ids[s][k] = md->ids[s][i];
			md->idx[s][k++] = first[s] + i;
		}
		md->n[s] = k;
	}
	return r;
}

static int
middle_align(struct middle *md, uint32_t *map)
{
	cleanup_free int32_t *kvdf = NULL, *kvdb = NULL;
	size_t nd = (size_t)md->n[0] + (size_t)md->n[1] + 3;
	struct myers m = {
		.a = md->ids[0],
		.b = md->ids[1],
		.aidx = md->idx[0],
		.bidx = md->idx[1],
		.mxcost = EOS_MAX(MXCOST_MIN, isqrt((int64_t)nd)),
		.work = WORK_BASE + (int64_t)WORK_PER_LINE * (int64_t)nd,
		.map = map,
	};

	if (md->n[0] == 0 || md->n[1] == 0)
		return 0;
	kvdf = malloc(nd * sizeof(*kvdf));
	kvdb = malloc(nd * sizeof(*kvdb));
	if (!kvdf || !kvdb)
		return -ENOMEM;
	m.kvdf = kvdf + md->n[1] + 1;
	m.kvdb = kvdb + md->n[1] + 1;
	return myers_run(&m, md->n[0], md->n[1]);
}

/* --- trimming by bytes ---------------------------------------------------------------------- */

struct trim {
	size_t pre_bytes, suf_obytes, suf_nbytes; /* suffix bytes equal, kept apart for clarity */
	uint32_t pre_lines, suf_lines;
	bool identical;
};

static uint32_t
count_nl(const char *p, size_t n)
{
	uint32_t c = 0;

	if (n == 0)
		return 0;
	for (const char *q = p, *end = p + n; (q = memchr(q, '\n', (size_t)(end - q))); q++)
		c++;
	return c;
}

static bool
line_start(const char *p, size_t at, size_t floor)
{
	return at == floor || p[at - 1] == '\n';
}

/* The common prefix and suffix lines of o and n. */
static struct trim
trim_bytes(const char *o, size_t olen, const char *n, size_t nlen)
{
	struct trim t = { 0 };
	size_t lim = EOS_MIN(olen, nlen), p = 0, s = 0, first;
	const char *nl;

	while (p < lim && o[p] == n[p])
		p++;
	if (p == olen && p == nlen) {
		t.identical = true;
		return t;
	}
	nl = p ? memrchr(o, '\n', p) : NULL;
	t.pre_bytes = nl ? (size_t)(nl - o) + 1 : 0;
	t.pre_lines = count_nl(o, t.pre_bytes);
	while (s < lim - t.pre_bytes && o[olen - 1 - s] == n[nlen - 1 - s])
		s++;
	if (s == 0)
		return t;
	/* the first line start of the common suffix that is a line start on both sides */
	first = olen - s;
	if (!line_start(o, first, t.pre_bytes) || !line_start(n, nlen - s, t.pre_bytes)) {
		nl = memchr(o + first, '\n', s);
		first = nl ? (size_t)(nl - o) + 1 : olen;
	}
	t.suf_obytes = olen - first;
	t.suf_nbytes = t.suf_obytes;
	t.suf_lines = eos_line_count(o + first, olen - first);
	return t;
}

static int
map_middle(const char *o, size_t olen, const char *n, size_t nlen, const struct trim *t,
	   uint32_t *map)
{
	EOS_CLEANUP(middle_release) struct middle md = { 0 };
	int r;

	md.old_first = t->pre_lines;
	md.new_first = t->pre_lines;
	r = lines_split(&md.old, o + t->pre_bytes, olen - t->pre_bytes - t->suf_obytes);
	if (r == 0)
		r = lines_split(&md.new, n + t->pre_bytes, nlen - t->pre_bytes - t->suf_nbytes);
	if (r == 0 && (md.old.n == 0 || md.new.n == 0))
		return 0;
	r = r ?: middle_classify(&md);
	return r ?: middle_align(&md, map);
}

int
eos_line_map(const void *old, size_t olen, const void *new, size_t nlen, uint32_t **ret_map,
	     uint32_t *ret_n, struct eos_error *err)
{
	cleanup_free uint32_t *map = NULL;
	uint32_t on = eos_line_count(old, olen), nn = eos_line_count(new, nlen);
	struct trim t;
	int r;

	/* NULL only when empty: keep pointer arithmetic off NULL */
	old = old ? old : "";
	new = new ? new : "";
	if (on > LINE_MAX_COUNT || nn > LINE_MAX_COUNT)
		return eos_error_set(err, -EFBIG, "line diff: more than %d lines", LINE_MAX_COUNT);
	if (nn > 0) {
		map = calloc(nn, sizeof(*map));
		if (!map)
			return eos_error_set(err, -ENOMEM, "line diff: out of memory");
	}
	t = trim_bytes(old, olen, new, nlen);
	if (t.identical)
		t.pre_lines = nn;
	for (uint32_t i = 0; i < t.pre_lines; i++)
		map[i] = i + 1;
	for (uint32_t i = nn - t.suf_lines; i < nn; i++)
		map[i] = on - (nn - i) + 1;
	r = t.identical ? 0 : map_middle(old, olen, new, nlen, &t, map);
	if (r < 0)
		return eos_error_set(err, r, "line diff: %s",
				     r == -EFBIG ? "too many lines" : "out of memory");
	*ret_map = TAKE_PTR(map);
	*ret_n = nn;
	return 0;
}
