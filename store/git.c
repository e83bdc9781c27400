/* SPDX-License-Identifier: MIT */
/*
 * store/git: the only file that includes <git2.h>. See store/git.h.
 *
 * The merge: git_merge_file() (xdiff, "zealous" level, standard style, no whitespace flags) gives
 * the merged bytes and whether the merge is clean. Its output cannot tell the base, head and
 * session line numbers of the conflicts, so those come from the two diffs base -> head and
 * base -> session (libgit2 diffs with 0 lines of context; the same xdiff, the same Myers
 * algorithm and the same compaction as the merge): hunks of both sides that overlap or touch in
 * the base, transitively, form a group; a group with hunks of both sides is a conflict unless both
 * sides turned its base lines into the same text.
 */
#include "config.h"

#include "store/git.h"

#include <assert.h>
#include <git2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/error.h"

static pthread_once_t git_once = PTHREAD_ONCE_INIT;
static int git_init_result;

static void
git_init_once(void)
{
	git_init_result = git_libgit2_init();
}

static int
git_init(struct eos_error *err)
{
	pthread_once(&git_once, git_init_once);
	if (git_init_result < 0)
		return eos_error_set(err, -EIO, "libgit2: initialisation failed");
	return 0;
}

/* Convert libgit2's last error (of the calling thread) into -errno and a message about what. */
static int
git_fail(struct eos_error *err, const char *what)
{
	const git_error *e = git_error_last();

	if (e && e->klass == GIT_ERROR_NOMEMORY)
		return eos_error_set(err, -ENOMEM, "%s: out of memory", what);
	return eos_error_set(err, -EIO, "%s: libgit2: %s", what,
			     e && e->message ? e->message : "unknown error");
}

/* Length of the valid UTF-8 sequence at p (no overlongs, surrogates or code points > U+10FFFF),
 * or 0. */
static size_t
utf8_seq_len(const uint8_t *p, size_t left)
{
	uint32_t cp, min;
	size_t n, i;

	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2, cp = p[0] & 0x1f, min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		n = 3, cp = p[0] & 0x0f, min = 0x800;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4, cp = p[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (left < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

bool
eos_text_is_binary(const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t i = 0, n;

	while (i < len) {
		if (p[i] == 0)
			return true;
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		n = utf8_seq_len(p + i, len - i);
		if (n == 0)
			return true;
		i += n;
	}
	return false;
}

uint32_t
eos_text_lines(const void *data, size_t len)
{
	const uint8_t *p = data, *end = p + len, *nl;
	uint32_t n = 0;

	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		n++;
		p = nl + 1;
	}
	return p < end ? n + 1 : n;
}

/* ---- three-way merge ---- */

/* A text as lines: line i is [off[i], off[i + 1]); off has n + 1 entries. */
struct text_lines {
	const uint8_t *data;
	size_t *off;
	size_t n;
};

static int
text_lines_init(struct text_lines *t, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t i, k = 0;

	t->data = data;
	t->n = eos_text_lines(data, len);
	t->off = malloc((t->n + 1) * sizeof(*t->off));
	if (!t->off)
		return -ENOMEM;
	t->off[0] = 0;
	for (i = 0; i < len; i++)
		if (p[i] == '\n')
			t->off[++k] = i + 1;
	t->off[t->n] = len;
	return 0;
}

static void
text_lines_release(struct text_lines *t)
{
	free(t->off);
	t->off = NULL;
}

/* Whether lines [a, a + na) of x and [b, b + nb) of y are the same bytes. */
static bool
text_lines_equal(const struct text_lines *x, size_t a, size_t na, const struct text_lines *y,
		 size_t b, size_t nb)
{
	size_t lx = x->off[a + na] - x->off[a], ly = y->off[b + nb] - y->off[b];

	return lx == ly && memcmp(x->data + x->off[a], y->data + y->off[b], lx) == 0;
}

/* One hunk of a diff from the base: base lines [start, start + count) (0-based) became count2
 * lines of the side. */
struct hunk {
	size_t start, count, count2;
};

struct hunk_list {
	struct hunk *v;
	size_t n, cap;
	bool oom;
};

static int
hunk_collect_cb(const git_diff_delta *delta, const git_diff_hunk *h, void *payload)
{
	struct hunk_list *l = payload;

	(void)delta;
	if (eos_buf_array_reserve(&l->v, &l->cap, l->n, sizeof(*l->v), 16) < 0) {
		l->oom = true;
		return -1;
	}
	/* xdiff writes the start of an empty range as the line before it (unified diff style). */
	l->v[l->n++] = (struct hunk){
		.start = h->old_lines ? (size_t)h->old_start - 1 : (size_t)h->old_start,
		.count = (size_t)h->old_lines,
		.count2 = (size_t)h->new_lines,
	};
	return 0;
}

/* The hunks of the diff base -> side, with no context lines. */
static int
diff_hunks(const void *base, size_t blen, const void *side, size_t slen, struct hunk_list *ret,
	   struct eos_error *err)
{
	git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
	int r;

	opts.flags = GIT_DIFF_FORCE_TEXT;
	opts.context_lines = 0;
	opts.interhunk_lines = 0;
	r = git_diff_buffers(blen ? base : "", blen, NULL, slen ? side : "", slen, NULL, &opts,
			     NULL, NULL, hunk_collect_cb, NULL, ret);
	if (ret->oom)
		return eos_error_set(err, -ENOMEM, "diff for merge: out of memory");
	if (r < 0)
		return git_fail(err, "diff for merge");
	return 0;
}

/* The merge state while grouping hunks: both sides' hunk lists and texts. */
struct merge_sides {
	struct hunk_list h[2];	   /* 0: head, 1: session */
	struct text_lines text[2]; /* head, session */
	size_t next[2];		   /* the next ungrouped hunk of each side */
	long shift[2];		   /* lines added minus removed by the grouped hunks of each side */
};

struct group {
	size_t start, end; /* base lines [start, end) */
	size_t nhunks[2];
	long shift[2]; /* of the group's hunks */
};

/* Whether the next hunk of side s joins group g (touches its base range), or starts it. */
static bool
group_take(struct merge_sides *ms, struct group *g, int s)
{
	const struct hunk *k;

	if (ms->next[s] >= ms->h[s].n)
		return false;
	k = &ms->h[s].v[ms->next[s]];
	if (g->nhunks[0] + g->nhunks[1] == 0) {
		g->start = k->start;
		g->end = k->start + k->count;
	} else if (k->start > g->end) {
		return false;
	} else if (k->start + k->count > g->end) {
		g->end = k->start + k->count;
	}
	g->nhunks[s]++;
	g->shift[s] += (long)k->count2 - (long)k->count;
	ms->next[s]++;
	return true;
}

/* Group the next hunks: start with the earliest one, then take touching hunks until none. */
static void
group_next(struct merge_sides *ms, struct group *g)
{
	const struct hunk *a, *b;
	int first;

	*g = (struct group){ 0 };
	a = ms->next[0] < ms->h[0].n ? &ms->h[0].v[ms->next[0]] : NULL;
	b = ms->next[1] < ms->h[1].n ? &ms->h[1].v[ms->next[1]] : NULL;
	first = !a || (b && b->start < a->start) ? 1 : 0;
	group_take(ms, g, first);
	while (group_take(ms, g, 0) || group_take(ms, g, 1))
		;
}

static int
regions_add(struct eos_merge3 *m, size_t *cap, const struct eos_conflict_lines *c)
{
	if (eos_buf_array_reserve(&m->regions, cap, m->nregions, sizeof(*m->regions), 8) < 0)
		return -ENOMEM;
	m->regions[m->nregions++] = *c;
	return 0;
}

/* Whether group g (on both sides) is a conflict, filling c with its lines. */
static bool
group_conflict(const struct merge_sides *ms, const struct group *g, struct eos_conflict_lines *c)
{
	size_t len = g->end - g->start;
	size_t hs = (size_t)((long)g->start + ms->shift[0]);
	size_t ss = (size_t)((long)g->start + ms->shift[1]);
	size_t hc = (size_t)((long)len + g->shift[0]), sc = (size_t)((long)len + g->shift[1]);
	bool inside = hs + hc <= ms->text[0].n && ss + sc <= ms->text[1].n;

	if (g->nhunks[0] == 0 || g->nhunks[1] == 0)
		return false;
	/* (inside always holds: libgit2 counts lines as eos_text_lines() does) */
	if (inside && text_lines_equal(&ms->text[0], hs, hc, &ms->text[1], ss, sc))
		return false;
	*c = (struct eos_conflict_lines){
		.base_start = (uint32_t)g->start + 1,
		.base_count = (uint32_t)len,
		.head_start = (uint32_t)hs + 1,
		.head_count = (uint32_t)hc,
		.session_start = (uint32_t)ss + 1,
		.session_count = (uint32_t)sc,
	};
	return true;
}

/* Fill m->regions with every conflicting group of the hunks in ms. */
static int
merge_regions(struct merge_sides *ms, struct eos_merge3 *m)
{
	struct eos_conflict_lines c;
	struct group g;
	size_t cap = 0;

	while (ms->next[0] < ms->h[0].n || ms->next[1] < ms->h[1].n) {
		group_next(ms, &g);
		if (group_conflict(ms, &g, &c) && regions_add(m, &cap, &c) < 0)
			return -ENOMEM;
		ms->shift[0] += g.shift[0];
		ms->shift[1] += g.shift[1];
	}
	return 0;
}

static void
merge_sides_release(struct merge_sides *ms)
{
	for (int s = 0; s < 2; s++) {
		free(ms->h[s].v);
		text_lines_release(&ms->text[s]);
	}
}

/* The conflicting regions of an unclean merge (never none: the whole files if the grouping finds
 * nothing libgit2 found). */
static int
merge_find_regions(const void *base, size_t blen, const void *head, size_t hlen, const void *ours,
		   size_t olen, struct eos_merge3 *m, struct eos_error *err)
{
	EOS_CLEANUP(merge_sides_release) struct merge_sides ms = { 0 };
	int r;

	r = diff_hunks(base, blen, head, hlen, &ms.h[0], err);
	if (r < 0)
		return r;
	r = diff_hunks(base, blen, ours, olen, &ms.h[1], err);
	if (r < 0)
		return r;
	if (text_lines_init(&ms.text[0], head, hlen) < 0 ||
	    text_lines_init(&ms.text[1], ours, olen) < 0)
		return eos_error_set(err, -ENOMEM, "merge: out of memory");
	if (merge_regions(&ms, m) < 0)
		return eos_error_set(err, -ENOMEM, "merge: out of memory");
	if (m->nregions == 0) {
		size_t cap = 0;
		struct eos_conflict_lines all = {
			.base_start = 1,
			.base_count = eos_text_lines(base, blen),
			.head_start = 1,
			.head_count = (uint32_t)ms.text[0].n,
			.session_start = 1,
			.session_count = (uint32_t)ms.text[1].n,
		};
		if (regions_add(m, &cap, &all) < 0)
			return eos_error_set(err, -ENOMEM, "merge: out of memory");
	}
	return 0;
}

static void
merge_result_freep(git_merge_file_result *r)
{
	git_merge_file_result_free(r);
}

/* git_merge_file() of the three texts, head as "ours" and the session as "theirs". */
static int
merge_file(const void *base, size_t blen, const void *head, size_t hlen, const void *ours,
	   size_t olen, git_merge_file_result *ret, struct eos_error *err)
{
	git_merge_file_options opts = GIT_MERGE_FILE_OPTIONS_INIT;
	git_merge_file_input in[3] = { GIT_MERGE_FILE_INPUT_INIT, GIT_MERGE_FILE_INPUT_INIT,
				       GIT_MERGE_FILE_INPUT_INIT };

	in[0].ptr = blen ? base : "", in[0].size = blen;
	in[1].ptr = hlen ? head : "", in[1].size = hlen;
	in[2].ptr = olen ? ours : "", in[2].size = olen;
	/* Standard style, no whitespace or end-of-line flags, default (Myers) diff: bytes kept. */
	opts.favor = GIT_MERGE_FILE_FAVOR_NORMAL;
	opts.flags = GIT_MERGE_FILE_DEFAULT;
	if (git_merge_file(ret, &in[0], &in[1], &in[2], &opts) < 0)
		return git_fail(err, "merge");
	return 0;
}

int
eos_git_merge3(const void *base, size_t blen, const void *head, size_t hlen, const void *ours,
	       size_t olen, struct eos_merge3 *ret, struct eos_error *err)
{
	EOS_CLEANUP(merge_result_freep) git_merge_file_result res = { 0 };
	struct eos_merge3 m = { 0 };
	int r;

	*ret = (struct eos_merge3){ 0 };
	r = git_init(err);
	if (r < 0)
		return r;
	r = merge_file(base, blen, head, hlen, ours, olen, &res, err);
	if (r < 0)
		return r;
	if (res.automergeable) {
		m.clean = true;
		m.len = res.len;
		m.data = malloc(res.len ? res.len : 1);
		if (!m.data)
			return eos_error_set(err, -ENOMEM, "merge: out of memory");
		memcpy(m.data, res.ptr, res.len);
		*ret = m;
		return 0;
	}
	r = merge_find_regions(base, blen, head, hlen, ours, olen, &m, err);
	if (r < 0) {
		eos_merge3_release(&m);
		return r;
	}
	*ret = m;
	return 0;
}

void
eos_merge3_release(struct eos_merge3 *m)
{
	if (!m)
		return;
	free(m->data);
	free(m->regions);
	*m = (struct eos_merge3){ 0 };
}

/* ---- patches ---- */

enum {
	GIT_MODE_FILE = 0100644,
	GIT_MODE_EXEC = 0100755,
	GIT_MODE_LINK = 0120000,
	PATCH_CONTEXT_LINES = 3,
	BINARY_LINE_BYTES = 52, /* bytes per line of a "GIT binary patch" hunk */
};

/* One side of a patch in git's terms; absent (all zero, null id) when path is NULL. */
struct patch_side {
	const char *path;
	uint32_t mode; /* GIT_MODE_* */
	const void *data;
	size_t len;
	git_oid oid;
};

static int EOS_PRINTF(2, 3) buf_printf(struct eos_buf *out, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	assert(n >= 0 && (size_t)n < sizeof(line));
	return eos_buf_append(out, line, (size_t)n);
}

/* A relative path of non-empty components other than "." and "..". */
static bool
path_valid(const char *path)
{
	const char *p = path, *slash;
	size_t n;

	do {
		slash = strchr(p, '/');
		n = slash ? (size_t)(slash - p) : strlen(p);
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n + 1;
	} while (slash);
	return true;
}

static int
patch_side_init(struct patch_side *s, const char *path, uint32_t mode, const void *data, size_t len,
		struct eos_error *err)
{
	*s = (struct patch_side){ .path = path, .data = len ? data : "", .len = len };
	if (!path)
		return 0;
	if (!path_valid(path))
		return eos_error_set(err, -EINVAL, "patch '%s': invalid path", path);
	if (len && !data)
		return eos_error_set(err, -EINVAL, "patch '%s': no data", path);
	if (S_ISLNK(mode))
		s->mode = GIT_MODE_LINK;
	else if (S_ISREG(mode))
		s->mode = mode & 0111 ? GIT_MODE_EXEC : GIT_MODE_FILE;
	else
		return eos_error_set(err, -EINVAL, "patch '%s': unsupported mode %o", path, mode);
	if (git_odb_hash(&s->oid, s->data, len, GIT_OBJECT_BLOB) < 0)
		return git_fail(err, "patch: hash");
	return 0;
}

/* Whether git quotes path (core.quotePath, the default): control characters, '"', '\', DEL and
 * bytes >= 0x80. */
static bool
path_needs_quotes(const char *path)
{
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		if (*p < 0x20 || *p == '"' || *p == '\\' || *p >= 0x7f)
			return true;
	return false;
}

static int
append_quoted_char(struct eos_buf *out, unsigned char c)
{
	static const char cntrl[] = "\a\b\t\n\v\f\r", letter[] = "abtnvfr";
	const char *e = c ? strchr(cntrl, c) : NULL;
	char esc[5] = { '\\', (char)c };

	if (c == '"' || c == '\\')
		return eos_buf_append(out, esc, 2);
	if (e) {
		esc[1] = letter[e - cntrl];
		return eos_buf_append(out, esc, 2);
	}
	if (c < 0x20 || c >= 0x7f) {
		esc[1] = (char)('0' + (c >> 6)), esc[2] = (char)('0' + ((c >> 3) & 7));
		esc[3] = (char)('0' + (c & 7));
		return eos_buf_append(out, esc, 4);
	}
	return eos_buf_append(out, &c, 1);
}

/* Append prefix and path as git writes a file name: C-quoted (prefix inside the quotes) when
 * needed. */
static int
append_path(struct eos_buf *out, const char *prefix, const char *path)
{
	int r = 0;

	if (!path_needs_quotes(path)) {
		r = eos_buf_append_str(out, prefix);
		return r < 0 ? r : eos_buf_append_str(out, path);
	}
	r = eos_buf_append_str(out, "\"");
	if (r >= 0)
		r = eos_buf_append_str(out, prefix);
	for (const char *p = path; *p && r >= 0; p++)
		r = append_quoted_char(out, (unsigned char)*p);
	return r < 0 ? r : eos_buf_append_str(out, "\"");
}

/* Accumulates a diff body from libgit2's callbacks. */
struct patch_body {
	struct eos_buf buf;
	int r;
	uint32_t deleted; /* lines */
};

static int
body_range(struct eos_buf *b, int start, int lines)
{
	return lines == 1 ? buf_printf(b, "%d", start) : buf_printf(b, "%d,%d", start, lines);
}

static int
body_hunk_cb(const git_diff_delta *delta, const git_diff_hunk *h, void *payload)
{
	struct patch_body *pb = payload;
	int r;

	(void)delta;
	r = eos_buf_append_str(&pb->buf, "@@ -");
	if (r >= 0)
		r = body_range(&pb->buf, h->old_start, h->old_lines);
	if (r >= 0)
		r = eos_buf_append_str(&pb->buf, " +");
	if (r >= 0)
		r = body_range(&pb->buf, h->new_start, h->new_lines);
	if (r >= 0)
		r = eos_buf_append_str(&pb->buf, " @@\n");
	pb->r = r;
	return r < 0 ? -1 : 0;
}

static int
body_line_cb(const git_diff_delta *delta, const git_diff_hunk *h, const git_diff_line *l,
	     void *payload)
{
	struct patch_body *pb = payload;
	char origin = l->origin;
	int r = 0;

	(void)delta, (void)h;
	/* The end-of-file-newline pseudo lines: the marker follows the line itself, below. */
	if (origin != GIT_DIFF_LINE_CONTEXT && origin != GIT_DIFF_LINE_ADDITION &&
	    origin != GIT_DIFF_LINE_DELETION)
		return 0;
	if (origin == GIT_DIFF_LINE_DELETION)
		pb->deleted++;
	r = eos_buf_append(&pb->buf, &origin, 1);
	if (r >= 0)
		r = eos_buf_append(&pb->buf, l->content, l->content_len);
	if (r >= 0 && (l->content_len == 0 || l->content[l->content_len - 1] != '\n'))
		r = eos_buf_append_str(&pb->buf, "\n\\ No newline at end of file\n");
	pb->r = r;
	return r < 0 ? -1 : 0;
}

/* git's base85 of n <= BINARY_LINE_BYTES bytes, after a length letter, as one line. */
static int
body_base85_line(struct eos_buf *b, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuv"
				     "wxyz!#$%&()*+-;<=>?@^_`{|}~";
	char line[1 + BINARY_LINE_BYTES / 4 * 5 + 1];
	size_t k = 0;

	line[k++] = (char)(n <= 26 ? 'A' + n - 1 : 'a' + n - 27);
	for (size_t i = 0; i < n; i += 4) {
		uint32_t acc = 0;

		for (size_t j = 0; j < 4; j++)
			acc = acc << 8 | (i + j < n ? p[i + j] : 0);
		for (int d = 4; d >= 0; d--, acc /= 85)
			line[k + (size_t)d] = digits[acc % 85];
		k += 5;
	}
	line[k++] = '\n';
	return eos_buf_append(b, line, k);
}

/* One hunk of a binary patch: "literal N" or "delta N", base85 lines, a blank line. */
static int
body_binary_hunk(struct eos_buf *b, const git_diff_binary_file *f)
{
	const char *type = f->type == GIT_DIFF_BINARY_DELTA ? "delta" : "literal";
	const uint8_t *p = (const uint8_t *)f->data;
	int r;

	r = buf_printf(b, "%s %zu\n", type, f->inflatedlen);
	for (size_t i = 0; r >= 0 && i < f->datalen; i += BINARY_LINE_BYTES)
		r = body_base85_line(b, p + i, EOS_MIN(f->datalen - i, (size_t)BINARY_LINE_BYTES));
	return r < 0 ? r : eos_buf_append_str(b, "\n");
}

static int
body_binary_cb(const git_diff_delta *delta, const git_diff_binary *bin, void *payload)
{
	struct patch_body *pb = payload;
	int r;

	(void)delta;
	if (!bin->contains_data || bin->new_file.type == GIT_DIFF_BINARY_NONE) {
		git_error_set_str(GIT_ERROR_INVALID, "no binary data");
		pb->r = -EIO;
		return -1;
	}
	r = eos_buf_append_str(&pb->buf, "GIT binary patch\n");
	if (r >= 0)
		r = body_binary_hunk(&pb->buf, &bin->new_file);
	if (r >= 0 && bin->old_file.type != GIT_DIFF_BINARY_NONE)
		r = body_binary_hunk(&pb->buf, &bin->old_file);
	pb->r = r;
	return r < 0 ? -1 : 0;
}

static bool
side_is_binary(const struct patch_side *s)
{
	if (!s->path)
		return false;
	if (s->mode == GIT_MODE_LINK)
		return memchr(s->data, 0, s->len) != NULL;
	return eos_text_is_binary(s->data, s->len);
}

/* The hunks (or binary patch) from a to b into pb. */
static int
patch_body_make(const struct patch_side *a, const struct patch_side *b, struct patch_body *pb,
		struct eos_error *err)
{
	git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
	bool binary = side_is_binary(a) || side_is_binary(b);
	int r;

	opts.context_lines = PATCH_CONTEXT_LINES;
	opts.interhunk_lines = 0;
	opts.flags = binary ? GIT_DIFF_FORCE_BINARY | GIT_DIFF_SHOW_BINARY : GIT_DIFF_FORCE_TEXT;
	r = git_diff_buffers(a->path ? a->data : NULL, a->len, NULL, b->path ? b->data : NULL,
			     b->len, NULL, &opts, NULL, binary ? body_binary_cb : NULL,
			     binary ? NULL : body_hunk_cb, binary ? NULL : body_line_cb, pb);
	if (pb->r == -ENOMEM)
		return eos_error_set(err, -ENOMEM, "patch: out of memory");
	if (r < 0)
		return git_fail(err, "patch: diff");
	return 0;
}

/* Similarity of a renamed file for "similarity index": 100 when identical, else the share of
 * kept lines (at most 99). */
static unsigned
patch_similarity(const struct patch_side *a, const struct patch_side *b, uint32_t deleted)
{
	uint32_t na = eos_text_lines(a->data, a->len), nb = eos_text_lines(b->data, b->len);
	uint32_t most = EOS_MAX(na, nb);
	uint64_t kept = na > deleted ? na - deleted : 0;

	if (git_oid_equal(&a->oid, &b->oid))
		return 100;
	if (most == 0)
		return 0;
	return (unsigned)EOS_MIN(kept * 100 / most, 99);
}

/* Appends to a buffer, keeping the first error: check r once at the end. */
struct sink {
	struct eos_buf *buf;
	int r;
};

static void
sink_str(struct sink *s, const char *str)
{
	if (s->r >= 0)
		s->r = eos_buf_append_str(s->buf, str);
}

static void
sink_path(struct sink *s, const char *prefix, const char *path)
{
	if (s->r >= 0)
		s->r = append_path(s->buf, prefix, path);
}

static void
sink_mode(struct sink *s, const char *what, uint32_t mode)
{
	if (s->r >= 0)
		s->r = buf_printf(s->buf, "%s %06o\n", what, (unsigned)mode);
}

/* "--- a/x" or "+++ b/x" (or /dev/null); git ends a name holding a space with a tab. */
static void
sink_file_line(struct sink *s, const char *marker, const char *prefix,
	       const struct patch_side *side)
{
	sink_str(s, marker);
	if (!side->path) {
		sink_str(s, "/dev/null\n");
		return;
	}
	sink_path(s, prefix, side->path);
	sink_str(s, strchr(side->path, ' ') ? "\t\n" : "\n");
}

static void
sink_index(struct sink *s, const struct patch_side *a, const struct patch_side *b)
{
	char ha[GIT_OID_HEXSZ + 1], hb[GIT_OID_HEXSZ + 1];

	git_oid_tostr(ha, sizeof(ha), &a->oid);
	git_oid_tostr(hb, sizeof(hb), &b->oid);
	if (s->r >= 0)
		s->r = buf_printf(s->buf, "index %s..%s", ha, hb);
	if (a->path && b->path && a->mode == b->mode)
		sink_mode(s, "", a->mode);
	else
		sink_str(s, "\n");
}

/* "diff --git" and git's extended headers, in git's order. */
static void
sink_header(struct sink *s, const struct patch_side *a, const struct patch_side *b,
	    unsigned similarity)
{
	sink_str(s, "diff --git ");
	sink_path(s, "a/", a->path ? a->path : b->path);
	sink_str(s, " ");
	sink_path(s, "b/", b->path ? b->path : a->path);
	sink_str(s, "\n");
	if (!a->path) {
		sink_mode(s, "new file mode", b->mode);
	} else if (!b->path) {
		sink_mode(s, "deleted file mode", a->mode);
	} else if (a->mode != b->mode) {
		sink_mode(s, "old mode", a->mode);
		sink_mode(s, "new mode", b->mode);
	}
	if (a->path && b->path && strcmp(a->path, b->path) != 0) {
		if (s->r >= 0)
			s->r = buf_printf(s->buf, "similarity index %u%%\n", similarity);
		sink_str(s, "rename from ");
		sink_path(s, "", a->path);
		sink_str(s, "\nrename to ");
		sink_path(s, "", b->path);
		sink_str(s, "\n");
	}
	if (!git_oid_equal(&a->oid, &b->oid))
		sink_index(s, a, b);
}

static void
patch_body_release(struct patch_body *pb)
{
	eos_buf_release(&pb->buf);
}

/* The section from a to b (either may be absent); nothing when they are the same. */
static int
patch_section(const struct patch_side *a, const struct patch_side *b, struct eos_buf *out,
	      struct eos_error *err)
{
	EOS_CLEANUP(patch_body_release) struct patch_body pb = { 0 };
	struct sink s = { .buf = out };
	bool same_path = a->path && b->path && strcmp(a->path, b->path) == 0;
	int r;

	if (same_path && a->mode == b->mode && git_oid_equal(&a->oid, &b->oid))
		return 0;
	eos_buf_init(&pb.buf);
	if (!git_oid_equal(&a->oid, &b->oid)) {
		r = patch_body_make(a, b, &pb, err);
		if (r < 0)
			return r;
	}
	sink_header(&s, a, b, a->path && b->path ? patch_similarity(a, b, pb.deleted) : 0);
	if (pb.buf.len > 0 && pb.buf.data[0] == '@') {
		sink_file_line(&s, "--- ", "a/", a);
		sink_file_line(&s, "+++ ", "b/", b);
	}
	if (s.r >= 0 && pb.buf.len > 0)
		s.r = eos_buf_append(out, pb.buf.data, pb.buf.len);
	if (s.r < 0)
		return eos_error_set(err, s.r, "patch: out of memory");
	return 0;
}

int
eos_git_patch(const struct eos_patch_file *f, struct eos_buf *out, struct eos_error *err)
{
	struct patch_side a, b, none = { 0 };
	size_t len0 = out->len;
	int r;

	if (!f->old_path && !f->new_path)
		return eos_error_set(err, -EINVAL, "patch: no path");
	r = git_init(err);
	if (r < 0)
		return r;
	r = patch_side_init(&a, f->old_path, f->old_mode, f->old_data, f->old_len, err);
	if (r < 0)
		return r;
	r = patch_side_init(&b, f->new_path, f->new_mode, f->new_data, f->new_len, err);
	if (r < 0)
		return r;
	/* A type change is a deletion and a creation, as git writes it. */
	if (a.path && b.path && (a.mode == GIT_MODE_LINK) != (b.mode == GIT_MODE_LINK)) {
		r = patch_section(&a, &none, out, err);
		if (r >= 0)
			r = patch_section(&none, &b, out, err);
	} else {
		r = patch_section(&a, &b, out, err);
	}
	if (r < 0)
		eos_buf_truncate(out, len0);
	return r;
}
