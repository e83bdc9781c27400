/* SPDX-License-Identifier: MIT */
/*
 * eos_blame_compute: the owners of a new version of a file, from the owners of the version it
 * replaces and the write log of the session that wrote it (see store/blame.h).
 *
 * Write ranges are clipped to the session's content, sorted by start and made disjoint (a range
 * overlapping an earlier-starting one keeps only its part after it): the write log hands them out
 * disjoint already, this only keeps bad input harmless.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/hashmap.h"

#include "store/blame.h"
#include "store/linediff.h"

enum {
	NO_OWNER = UINT32_MAX,
};

/* A disjoint write range; owner indexes struct compute's range owners. */
struct segment {
	uint64_t start, end;
	uint32_t owner;
};

struct compute {
	const struct eos_blame_input *in;
	struct eos_blame out;
	struct eos_hashmap index; /* owner string -> index in out.owners + 1 */
	size_t owners_cap, runs_cap;
	/* range owners: distinct strings, their out index (NO_OWNER until used), byte tallies */
	struct eos_hashmap range_index;
	const char **rowners;
	uint32_t *rout;
	uint64_t *tally;
	uint32_t nrowners;
	struct segment *seg;
	size_t nseg;
	uint32_t writer; /* out index of the writer, NO_OWNER until used */
};

static void
compute_release(struct compute *c)
{
	eos_blame_release(&c->out);
	eos_hashmap_release(&c->index);
	eos_hashmap_release(&c->range_index);
	free(c->rowners);
	free(c->rout);
	free(c->tally);
	free(c->seg);
}

/* The index of owner in c->out.owners, adding it when new. */
static int
intern(struct compute *c, const char *owner, uint32_t *ret)
{
	union eos_hashmap_value *v;
	struct eos_blame *b = &c->out;
	int r = eos_hashmap_get_or_insert(&c->index, owner, strlen(owner), &v);

	if (r == 0) {
		*ret = (uint32_t)(v->u64 - 1);
		return 0;
	}
	if (r < 0 || eos_buf_array_reserve(&b->owners, &c->owners_cap, b->nowners,
					   sizeof(*b->owners), 8) < 0)
		return -ENOMEM;
	b->owners[b->nowners] = strdup(owner);
	if (!b->owners[b->nowners])
		return -ENOMEM;
	v->u64 = ++b->nowners;
	*ret = (uint32_t)(b->nowners - 1);
	return 0;
}

/* Append count lines owned by out index owner, coalescing with the last run. */
static int
append(struct compute *c, uint32_t count, uint32_t owner)
{
	struct eos_blame *b = &c->out;

	if (count == 0)
		return 0;
	b->lines += count;
	if (b->nruns > 0 && b->runs[b->nruns - 1].owner == owner) {
		b->runs[b->nruns - 1].count += count;
		return 0;
	}
	if (eos_buf_array_reserve(&b->runs, &c->runs_cap, b->nruns, sizeof(*b->runs), 16) < 0)
		return -ENOMEM;
	b->runs[b->nruns++] = (struct eos_blame_run){ .count = count, .owner = owner };
	return 0;
}

static int
writer_owner(struct compute *c, uint32_t *ret)
{
	int r = 0;

	if (c->writer == NO_OWNER)
		r = intern(c, c->in->writer ? c->in->writer : EOS_OWNER_UNKNOWN, &c->writer);
	*ret = c->writer;
	return r;
}

/* The out index of range owner ro. */
static int
range_owner(struct compute *c, uint32_t ro, uint32_t *ret)
{
	int r = 0;

	if (c->rout[ro] == NO_OWNER)
		r = intern(c, c->rowners[ro], &c->rout[ro]);
	*ret = c->rout[ro];
	return r;
}

/* --- write ranges -------------------------------------------------------------------------------
 */

static int
segment_cmp(const void *a, const void *b)
{
	const struct segment *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? 1 : x->end > y->end ? -1 : 0;
}

/* Number the distinct range owners and build the disjoint segments within [0, size). */
static int
segments_build(struct compute *c, uint64_t size)
{
	const struct eos_blame_input *in = c->in;
	size_t n = in->nranges ? in->nranges : 1, k = 0;

	c->seg = malloc(n * sizeof(*c->seg));
	c->rowners = malloc(n * sizeof(*c->rowners));
	c->rout = malloc(n * sizeof(*c->rout));
	c->tally = calloc(n, sizeof(*c->tally));
	if (!c->seg || !c->rowners || !c->rout || !c->tally)
		return -ENOMEM;
	for (size_t i = 0; i < in->nranges; i++) {
		const struct eos_write_range *w = &in->ranges[i];
		union eos_hashmap_value *v;
		const char *o = w->owner ? w->owner : EOS_OWNER_UNKNOWN;
		int r;

		if (w->start >= w->end || w->start >= size)
			continue;
		r = eos_hashmap_get_or_insert(&c->range_index, o, strlen(o), &v);
		if (r < 0)
			return r;
		if (r == 1) {
			c->rowners[c->nrowners] = o;
			c->rout[c->nrowners] = NO_OWNER;
			v->u64 = ++c->nrowners;
		}
		c->seg[k++] =
			(struct segment){ w->start, EOS_MIN(w->end, size), (uint32_t)(v->u64 - 1) };
	}
	if (k > 1)
		qsort(c->seg, k, sizeof(*c->seg), segment_cmp);
	c->nseg = 0;
	for (size_t i = 0; i < k; i++) {
		struct segment s = c->seg[i];

		if (c->nseg > 0 && s.start < c->seg[c->nseg - 1].end)
			s.start = c->seg[c->nseg - 1].end;
		if (s.start < s.end)
			c->seg[c->nseg++] = s;
	}
	return 0;
}

/*
 * The range owner covering most bytes of [start, end) (ties: the first to reach the maximum),
 * or NO_OWNER. *cursor: the first segment that may still overlap, for ascending calls.
 */
static uint32_t
segments_owner(struct compute *c, uint64_t start, uint64_t end, size_t *cursor)
{
	uint32_t best = NO_OWNER;
	uint64_t most = 0;
	size_t k;

	while (*cursor < c->nseg && c->seg[*cursor].end <= start)
		(*cursor)++;
	for (k = *cursor; k < c->nseg && c->seg[k].start < end; k++) {
		const struct segment *s = &c->seg[k];
		uint64_t bytes = EOS_MIN(s->end, end) - EOS_MAX(s->start, start);

		c->tally[s->owner] += bytes;
		if (c->tally[s->owner] > most)
			most = c->tally[s->owner], best = s->owner;
	}
	for (k = *cursor; k < c->nseg && c->seg[k].start < end; k++)
		c->tally[c->seg[k].owner] = 0;
	return best;
}

/* The out index owning new bytes [start, end) of ours. */
static int
bytes_owner(struct compute *c, uint64_t start, uint64_t end, size_t *cursor, uint32_t *ret)
{
	uint32_t ro = segments_owner(c, start, end, cursor);

	return ro == NO_OWNER ? writer_owner(c, ret) : range_owner(c, ro, ret);
}

/* --- owners of the previous version -------------------------------------------------------------
 */

/* Ascending lookups of prev_blame's owners; kept lines of a malformed prev_blame are unknown. */
struct prev_cursor {
	const struct eos_blame *b; /* NULL when unusable */
	size_t run;
	uint64_t run_end; /* first line after runs[run] */
	uint32_t *out;	  /* prev owner -> out index, NO_OWNER until used */
};

static bool
prev_usable(const struct eos_blame *b, uint32_t lines)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < b->nruns; i++) {
		if (b->runs[i].owner >= b->nowners || !b->owners[b->runs[i].owner])
			return false;
		sum += b->runs[i].count;
	}
	return sum == b->lines && b->lines == lines;
}

static int
prev_cursor_init(struct prev_cursor *pc, const struct eos_blame_input *in)
{
	const struct eos_blame *b = in->prev_blame;

	*pc = (struct prev_cursor){ 0 };
	if (!prev_usable(b, eos_line_count(in->prev, in->prev_len)))
		return 0;
	pc->out = malloc((b->nowners ? b->nowners : 1) * sizeof(*pc->out));
	if (!pc->out)
		return -ENOMEM;
	for (size_t i = 0; i < b->nowners; i++)
		pc->out[i] = NO_OWNER;
	pc->b = b;
	pc->run_end = b->nruns ? b->runs[0].count : 0;
	return 0;
}

/* The out index of the owner of line (0-based) of prev. */
static int
prev_owner(struct compute *c, struct prev_cursor *pc, uint32_t line, uint32_t *ret)
{
	uint32_t o;

	if (!pc->b)
		return intern(c, EOS_OWNER_UNKNOWN, ret);
	while (line >= pc->run_end && pc->run + 1 < pc->b->nruns)
		pc->run_end += pc->b->runs[++pc->run].count;
	o = pc->b->runs[pc->run].owner;
	if (pc->out[o] == NO_OWNER) {
		int r = intern(c, pc->b->owners[o], &pc->out[o]);

		if (r < 0)
			return r;
	}
	*ret = pc->out[o];
	return 0;
}

/* --- text ---------------------------------------------------------------------------------------
 */

/* The count + 1 line start offsets of p[0..len) (count = eos_line_count). */
static size_t *
line_starts(const char *p, size_t len, uint32_t count)
{
	size_t *v = malloc(((size_t)count + 1) * sizeof(*v));
	const char *q = p, *end = p + len;

	if (!v)
		return NULL;
	v[0] = 0;
	for (uint32_t i = 1; i <= count; i++) {
		const char *nl = memchr(q, '\n', (size_t)(end - q));

		q = nl ? nl + 1 : end;
		v[i] = (size_t)(q - p);
	}
	return v;
}

/* The line maps of data against prev (when there was a file) and ours (when merged). */
static int
text_maps(const struct eos_blame_input *in, uint32_t **ret_pmap, uint32_t **ret_omap,
	  struct eos_error *err)
{
	uint32_t n;
	int r = 0;

	if (in->prev_blame)
		r = eos_line_map(in->prev, in->prev_len, in->data, in->len, ret_pmap, &n, err);
	if (r == 0 && in->ours)
		r = eos_line_map(in->ours, in->ours_len, in->data, in->len, ret_omap, &n, err);
	return r;
}

static int
compute_text(struct compute *c, uint32_t lines, struct eos_error *err)
{
	const struct eos_blame_input *in = c->in;
	const char *ours = in->ours ? in->ours : in->data;
	size_t ours_len = in->ours ? in->ours_len : in->len, cursor = 0;
	cleanup_free uint32_t *pmap = NULL, *omap = NULL;
	cleanup_free size_t *ostart = NULL;
	struct prev_cursor pc = { 0 };
	int r;

	r = text_maps(in, &pmap, &omap, err);
	if (r < 0)
		return r;
	ostart = line_starts(ours, ours_len, eos_line_count(ours, ours_len));
	r = ostart ? segments_build(c, ours_len) : -ENOMEM;
	r = r ?: (in->prev_blame ? prev_cursor_init(&pc, in) : 0);
	for (uint32_t i = 0; r == 0 && i < lines; i++) {
		uint32_t o, oi = omap ? omap[i] : i + 1;

		if (pmap && pmap[i])
			r = prev_owner(c, &pc, pmap[i] - 1, &o);
		else if (oi)
			r = bytes_owner(c, ostart[oi - 1], ostart[oi], &cursor, &o);
		else
			r = writer_owner(c, &o);
		r = r ?: append(c, 1, o);
	}
	free(pc.out);
	return r;
}

/* --- binary and large content -------------------------------------------------------------------
 */

static int
copy_prev(struct compute *c, const struct eos_blame *b)
{
	int r = 0;

	for (size_t i = 0; r == 0 && i < b->nruns; i++) {
		uint32_t o;

		r = intern(c, b->owners[b->runs[i].owner], &o);
		r = r ?: append(c, b->runs[i].count, o);
	}
	return r;
}

static int
compute_binary(struct compute *c, uint32_t lines)
{
	const struct eos_blame_input *in = c->in;
	uint64_t size = in->ours ? in->ours_len : in->len;
	size_t cursor = 0;
	uint32_t o;
	int r;

	if (in->prev_blame && in->prev_len == in->len &&
	    (in->len == 0 || memcmp(in->prev, in->data, in->len) == 0) &&
	    prev_usable(in->prev_blame, lines))
		return copy_prev(c, in->prev_blame);
	r = segments_build(c, size);
	r = r ?: bytes_owner(c, 0, size, &cursor, &o);
	return r ?: append(c, lines, o);
}

int
eos_blame_compute(const struct eos_blame_input *in, struct eos_blame *ret, struct eos_error *err)
{
	EOS_CLEANUP(compute_release) struct compute c = { .in = in, .writer = NO_OWNER };
	uint32_t lines = eos_line_count(in->data, in->len);
	bool text = in->len <= EOS_MERGE_TEXT_MAX && eos_line_is_text(in->data, in->len);
	int r;

	if (lines == UINT32_MAX)
		return eos_error_set(err, -EFBIG, "blame: more than %u lines", UINT32_MAX - 1);
	r = text ? compute_text(&c, lines, err) : compute_binary(&c, lines);
	if (r < 0)
		return r == -ENOMEM ? eos_error_set(err, r, "blame: out of memory") : r;
	eos_blame_release(ret);
	*ret = c.out;
	eos_blame_init(&c.out);
	return 0;
}
