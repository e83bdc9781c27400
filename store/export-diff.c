/* SPDX-License-Identifier: MIT */
/*
 * What changed between two versions of a sandbox.
 *
 * One scan of the sandbox's entry keys collects the candidates: the (parent, name) pairs with a
 * record whose version lies in (from, to]. A path can only look different at the two versions
 * when it, or one of its ancestors, is a candidate. The two trees are then walked together from
 * the root, visiting only what may differ:
 *   - a directory present at both versions with the same floor: only its candidate children and
 *     its children that contain candidates are looked up (one seek per version each);
 *   - a directory whose floor moved (replaced in between: its old children are hidden): both
 *     listings are merged in full;
 *   - a directory present at one version only: everything below it is created or deleted.
 * Each visited path compares what a reader sees (kind, attributes, content digest, symlink target,
 * extended attributes) at both versions.
 */
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/path.h"

#include "store/entry.h"
#include "store/export.h"
#include "store/kv.h"
#include "store/store-internal.h"

static const struct eos_entry none; /* kind EOS_KIND_NONE: absent */

static void
entry_releasep(struct eos_entry *e)
{
	eos_entry_release(e);
}

struct strings {
	char **v;
	size_t n, cap;
};

static void
strings_release(struct strings *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	*s = (struct strings){ 0 };
}

/* Append s (taken, freed on failure). */
static int
strings_take(struct strings *s, char *str)
{
	if (!str || eos_buf_array_reserve(&s->v, &s->cap, s->n, sizeof(*s->v), 64) < 0) {
		free(str);
		return -ENOMEM;
	}
	s->v[s->n++] = str;
	return 0;
}

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sort bytewise and drop duplicates. */
static void
strings_sort(struct strings *s)
{
	size_t out = 0;

	if (s->n == 0)
		return;
	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), str_cmp);
	for (size_t i = 1; i < s->n; i++) {
		if (strcmp(s->v[out], s->v[i]) == 0)
			free(s->v[i]);
		else
			s->v[++out] = s->v[i];
	}
	s->n = out + 1;
}

/* Index of the first string >= key. */
static size_t
strings_lower_bound(const struct strings *s, const char *key)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(s->v[mid], key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* --- the result ------------------------------------------------------------------------------- */

void
eos_export_diff_release(struct eos_export_diff *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->v[i].path);
		eos_entry_release(&d->v[i].old);
		eos_entry_release(&d->v[i].new);
	}
	free(d->v);
	*d = (struct eos_export_diff){ 0 };
}

struct differ {
	struct eos_export *x;
	bool full;
	struct strings cands; /* candidate paths, sorted */
	struct eos_export_diff *out;
	struct eos_error *err;
};

static int
push(struct differ *d, const char *path, const struct eos_entry *a, const struct eos_entry *b,
     unsigned flags)
{
	struct eos_export_diff *o = d->out;
	struct eos_export_change *c;
	int r;

	if (eos_buf_array_reserve(&o->v, &o->cap, o->n, sizeof(*o->v), 64) < 0)
		return -ENOMEM;
	c = &o->v[o->n];
	*c = (struct eos_export_change){ .flags = flags };
	c->path = strdup(path);
	r = c->path ? eos_entry_copy(&c->old, a) : -ENOMEM;
	r = r ?: eos_entry_copy(&c->new, b);
	if (r < 0) {
		free(c->path);
		eos_entry_release(&c->old);
		return r;
	}
	o->n++;
	return 0;
}

/* --- candidates ------------------------------------------------------------------------------- */

static int
bad_name(struct differ *d, const struct eos_entry_key_parts *kp)
{
	char id[EOS_LAYER_ID_LEN];

	eos_layer_id_format(kp->version, id);
	return eos_error_set(d->err, -EBADMSG,
			     "entry '%.*s' in directory '%.*s' of %s has an invalid name",
			     (int)kp->nlen, kp->name, (int)kp->plen, kp->parent, id);
}

static int
cand_check(struct differ *d, const struct eos_entry_key_parts *kp)
{
	cleanup_free char *parent = strndup(kp->parent, kp->plen);

	if (!parent)
		return -ENOMEM;
	if (eos_name_check(kp->name, kp->nlen, NULL) < 0 || eos_path_check(parent, NULL) < 0)
		return bad_name(d, kp);
	return 0;
}

/* eos_kv_scan_fn: keep the path of every record in (from, to]. */
static int
cand_add(void *ctx, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	struct differ *d = ctx;
	struct eos_entry_key_parts kp;
	char *path = NULL;
	int r;

	(void)v;
	(void)vlen;
	if (eos_entry_key_decode(k, klen, &kp) < 0)
		return eos_error_set(d->err, -EBADMSG, "corrupt entry key in sandbox '%s'",
				     d->x->sandbox);
	if (kp.version <= d->x->from || kp.version > d->x->to || (kp.plen == 0 && kp.nlen == 0))
		return 0;
	if ((r = cand_check(d, &kp)) < 0)
		return r;
	if (asprintf(&path, "%.*s%s%.*s", (int)kp.plen, kp.parent, kp.plen ? "/" : "", (int)kp.nlen,
		     kp.name) < 0)
		return -ENOMEM;
	return strings_take(&d->cands, path);
}

static int
cand_scan(struct differ *d)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf lo = { 0 }, hi = { 0 };
	struct eos_kv_scan s = {
		.cf = EOS_CF_ENTRIES,
		.snap = d->x->snap,
		.flags = EOS_KV_ITER_NO_CACHE_FILL,
		.fn = cand_add,
		.ctx = d,
	};
	int r;

	if (eos_entry_sandbox_prefix(&lo, d->x->sbx) < 0 ||
	    eos_entry_sandbox_prefix(&hi, d->x->sbx + 1) < 0)
		return -ENOMEM;
	s.lo = lo.data;
	s.llen = lo.len;
	s.hi = hi.data;
	s.hlen = hi.len;
	r = eos_kv_scan(d->x->st->kv, &s, d->err);
	if (r < 0)
		return r;
	strings_sort(&d->cands);
	return 0;
}

/* The names of dir's children that are candidates or have candidates below them, sorted. */
static int
cand_children(const struct differ *d, const char *dir, struct strings *ret)
{
	cleanup_free char *prefix = NULL;
	size_t plen;

	if (asprintf(&prefix, "%s%s", dir, dir[0] ? "/" : "") < 0)
		return -ENOMEM;
	plen = strlen(prefix);
	for (size_t i = strings_lower_bound(&d->cands, prefix); i < d->cands.n; i++) {
		const char *rest = d->cands.v[i] + plen, *slash;

		if (strncmp(d->cands.v[i], prefix, plen) != 0)
			break;
		slash = strchr(rest, '/');
		if (strings_take(ret,
				 strndup(rest, slash ? (size_t)(slash - rest) : strlen(rest))) < 0)
			return -ENOMEM;
	}
	strings_sort(ret);
	return 0;
}

/* --- listings --------------------------------------------------------------------------------- */

struct kid {
	char *name;
	struct eos_entry e;
};

struct kids {
	struct kid *v;
	size_t n, cap;
	struct differ *d;
	const char *dir;
	uint64_t version;
};

static void
kids_release(struct kids *k)
{
	for (size_t i = 0; i < k->n; i++) {
		free(k->v[i].name);
		eos_entry_release(&k->v[i].e);
	}
	free(k->v);
}

/* eos_entry_list_fn: collect one visible child (no store reads inside the scan). */
static int
kid_add(void *ctx, const char *name, size_t nlen, const struct eos_entry *e)
{
	struct kids *k = ctx;
	struct kid *kid;
	int r;

	if (eos_name_check(name, nlen, NULL) < 0) {
		struct eos_entry_key_parts kp = { .parent = k->dir,
						  .plen = strlen(k->dir),
						  .name = name,
						  .nlen = nlen,
						  .version = e->st.version };

		return bad_name(k->d, &kp);
	}
	if (eos_buf_array_reserve(&k->v, &k->cap, k->n, sizeof(*k->v), 16) < 0)
		return -ENOMEM;
	kid = &k->v[k->n];
	kid->name = strndup(name, nlen);
	if (!kid->name)
		return -ENOMEM;
	r = eos_entry_copy(&kid->e, e);
	if (r < 0) {
		free(kid->name);
		return r;
	}
	k->n++;
	return 0;
}

/* The visible children of directory dir (entry e) at version v. */
static int
kids_list(struct differ *d, const char *dir, const struct eos_entry *e, uint64_t v,
	  struct kids *ret)
{
	const struct eos_export *x = d->x;

	ret->d = d;
	ret->dir = dir;
	ret->version = v;
	return eos_entry_list(x->st, x->snap, x->sbx, v, dir, strlen(dir), e->st.floor, NULL, 0,
			      kid_add, ret, d->err);
}

/* --- comparison ------------------------------------------------------------------------------- */

static bool
xattrs_differ(const struct eos_entry *a, const struct eos_entry *b)
{
	if (a->nxattrs != b->nxattrs)
		return true;
	for (uint32_t i = 0; i < a->nxattrs; i++) {
		const struct eos_xattr *x = &a->xattrs[i], *y = &b->xattrs[i];

		if (strcmp(x->name, y->name) != 0 || x->len != y->len ||
		    (x->len && memcmp(x->value, y->value, x->len) != 0))
			return true;
	}
	return false;
}

static bool
entry_differs(const struct eos_entry *a, const struct eos_entry *b)
{
	const struct eos_attr *x = &a->st.attr, *y = &b->st.attr;

	if (a->st.kind != b->st.kind || x->mode != y->mode || x->uid != y->uid ||
	    x->gid != y->gid || x->mtime_ns != y->mtime_ns)
		return true;
	switch (a->st.kind) {
	case EOS_KIND_FILE:
		if (a->st.content.size != b->st.content.size ||
		    !eos_digest_eq(&a->st.content.digest, &b->st.content.digest))
			return true;
		break;
	case EOS_KIND_SYMLINK:
		if (!a->target || !b->target || strcmp(a->target, b->target) != 0)
			return true;
		break;
	case EOS_KIND_CHR:
	case EOS_KIND_BLK:
		if (a->st.rdev != b->st.rdev)
			return true;
		break;
	case EOS_KIND_NONE:
	case EOS_KIND_DIR:
	case EOS_KIND_WHITEOUT:
	case EOS_KIND_FIFO:
		break;
	}
	return xattrs_differ(a, b);
}

/* --- the walk --------------------------------------------------------------------------------- */

static int diff_node(struct differ *d, const char *path, const struct eos_entry *a,
		     const struct eos_entry *b, bool below_opaque);

/* Everything below directory e at v: created (create) or deleted. */
static int
subtree(struct differ *d, const char *path, const struct eos_entry *e, uint64_t v, bool create)
{
	EOS_CLEANUP(kids_release) struct kids k = { 0 };
	int r = kids_list(d, path, e, v, &k);

	for (size_t i = 0; r == 0 && i < k.n; i++) {
		cleanup_free char *child = NULL;
		const struct eos_entry *ke = &k.v[i].e;

		if (eos_path_join(path, k.v[i].name, &child) < 0)
			return -ENOMEM;
		if (create)
			r = push(d, child, &none, ke, 0);
		else
			r = push(d, child, ke, &none, EOS_EXPORT_BELOW_REMOVED);
		if (r == 0 && ke->st.kind == EOS_KIND_DIR)
			r = subtree(d, child, ke, v, create);
	}
	return r;
}

/* Merge the full listings of directory path at both versions. */
static int
merge_full(struct differ *d, const char *path, const struct eos_entry *a, const struct eos_entry *b,
	   bool below_opaque)
{
	EOS_CLEANUP(kids_release) struct kids ka = { 0 }, kb = { 0 };
	size_t i = 0, j = 0;
	int r = kids_list(d, path, a, d->x->from, &ka);

	r = r ?: kids_list(d, path, b, d->x->to, &kb);
	while (r == 0 && (i < ka.n || j < kb.n)) {
		int c = i == ka.n ? 1 : j == kb.n ? -1 : strcmp(ka.v[i].name, kb.v[j].name);
		const char *name = c <= 0 ? ka.v[i].name : kb.v[j].name;
		cleanup_free char *child = NULL;

		if (eos_path_join(path, name, &child) < 0)
			return -ENOMEM;
		r = diff_node(d, child, c <= 0 ? &ka.v[i].e : &none, c >= 0 ? &kb.v[j].e : &none,
			      below_opaque);
		i += c <= 0;
		j += c >= 0;
	}
	return r;
}

/* The visible child name of directory path (entry dir) at v into *ret (none when absent). */
static int
lookup(struct differ *d, const char *path, const struct eos_entry *dir, uint64_t v,
       const char *name, struct eos_entry *ret)
{
	const struct eos_export *x = d->x;
	int r = eos_entry_lookup(x->st, x->snap, x->sbx, v, path, strlen(path), dir->st.floor, name,
				 strlen(name), ret, d->err);

	if (r == -ENOENT) {
		eos_error_clear(d->err);
		return 0;
	}
	return r;
}

/* Visit only the children of directory path that are candidates or hold candidates. */
static int
merge_candidates(struct differ *d, const char *path, const struct eos_entry *a,
		 const struct eos_entry *b, bool below_opaque)
{
	EOS_CLEANUP(strings_release) struct strings names = { 0 };
	int r = cand_children(d, path, &names);

	for (size_t i = 0; r == 0 && i < names.n; i++) {
		EOS_CLEANUP(entry_releasep) struct eos_entry ka = { 0 }, kb = { 0 };
		cleanup_free char *child = NULL;

		if (eos_path_join(path, names.v[i], &child) < 0)
			return -ENOMEM;
		r = lookup(d, path, a, d->x->from, names.v[i], &ka);
		r = r ?: lookup(d, path, b, d->x->to, names.v[i], &kb);
		r = r ?: diff_node(d, child, &ka, &kb, below_opaque);
	}
	return r;
}

static int
diff_below(struct differ *d, const char *path, const struct eos_entry *a, const struct eos_entry *b,
	   bool below_opaque, unsigned flags)
{
	bool adir = a->st.kind == EOS_KIND_DIR, bdir = b->st.kind == EOS_KIND_DIR;

	if (adir && !bdir)
		return subtree(d, path, a, d->x->from, false);
	if (bdir && !adir)
		return subtree(d, path, b, d->x->to, true);
	if (!adir)
		return 0;
	if ((flags & EOS_EXPORT_OPAQUE) || (below_opaque && d->full))
		return merge_full(d, path, a, b, below_opaque || (flags & EOS_EXPORT_OPAQUE));
	return merge_candidates(d, path, a, b, below_opaque);
}

static int
diff_node(struct differ *d, const char *path, const struct eos_entry *a, const struct eos_entry *b,
	  bool below_opaque)
{
	unsigned flags = 0;
	int r = 0;

	if (a->st.kind == EOS_KIND_NONE && b->st.kind == EOS_KIND_NONE)
		return 0;
	if (a->st.kind == EOS_KIND_DIR && b->st.kind == EOS_KIND_DIR && a->st.floor != b->st.floor)
		flags |= EOS_EXPORT_OPAQUE;
	if (below_opaque && b->st.kind == EOS_KIND_NONE)
		flags |= EOS_EXPORT_BELOW_OPAQUE;
	if ((flags & EOS_EXPORT_OPAQUE) || entry_differs(a, b))
		r = push(d, path, a, b, flags);
	else if (below_opaque && d->full)
		r = push(d, path, a, b, flags | EOS_EXPORT_SAME);
	return r ?: diff_below(d, path, a, b, below_opaque, flags);
}

int
eos_export_diff(struct eos_export *x, bool full, struct eos_export_diff *ret, struct eos_error *err)
{
	EOS_CLEANUP(entry_releasep) struct eos_entry a = { 0 }, b = { 0 };
	EOS_CLEANUP(strings_release) struct strings cands = { 0 };
	struct differ d = { .x = x, .full = full, .out = ret, .err = err };
	int r;

	r = cand_scan(&d);
	cands = d.cands; /* released on every path from here */
	if (r < 0)
		return r;
	r = eos_entry_resolve(x->st, x->snap, x->sbx, x->from, "", &a, err);
	r = r ?: eos_entry_resolve(x->st, x->snap, x->sbx, x->to, "", &b, err);
	r = r ?: diff_node(&d, "", &a, &b, false);
	if (r < 0)
		eos_export_diff_release(ret);
	return r;
}
