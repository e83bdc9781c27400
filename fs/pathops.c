/* SPDX-License-Identifier: MIT */
/*
 * fs/pathops: the view's path-level API for a host process (fs/view.h, "Path operations"):
 * paths resolved component by component inside the view, reads and listings through the
 * view's own operations, whole-file writes as a new node renamed over the old one, so no thread
 * of the host ever waits in a syscall on a mount of the view.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "common/path.h"

#include "fs/view-internal.h"

enum {
	LINKS_MAX = 40,	       /* symlinks followed in one path, as the kernel's limit */
	WRITE_BLOCK = 1 << 20, /* bytes of one write into a new node */
	DIR_MODE = 0755,       /* directories a write creates */
	FILE_MODE = 0644,      /* files a write creates */
};

/* A path being resolved: the directories entered so far (chain[0], the root, holds no
 * reference; every other node one), and what is left of the path. */
struct walk {
	struct eos_view *v;
	struct eos_node **chain;
	size_t n, cap;
	char *rest;
	size_t pos;
	unsigned links;
	bool parents;	      /* create missing directories */
	struct eos_ctx ctx;   /* ids of created nodes */
	struct eos_inval *iv; /* created entries, for the kernel */
};

static int
inval_add_ino(struct eos_inval *iv, uint64_t ino)
{
	int r = eos_buf_array_reserve(&iv->inos, &iv->cap, iv->n + 1, sizeof(*iv->inos), 8);

	if (r == 0)
		iv->inos[iv->n++] = ino;
	return r;
}

static int
inval_add_entry(struct eos_inval *iv, uint64_t parent, const char *name)
{
	char *copy = strdup(name);
	int r = copy ? eos_buf_array_reserve(&iv->entries, &iv->entries_cap, iv->nentries + 1,
					     sizeof(*iv->entries), 8)
		     : -ENOMEM;

	if (r < 0) {
		free(copy);
		return r;
	}
	iv->entries[iv->nentries++] = (struct eos_inval_entry){ .parent = parent, .name = copy };
	return 0;
}

/* Not absolute, no ".." component, not too long: "" is the root. */
static int
path_check(const char *path, struct eos_error *err)
{
	if (!path)
		return eos_error_set(err, -EINVAL, "path: missing");
	if (path[0] == '/')
		return eos_error_set(err, -EINVAL,
				     "path '%s': absolute (paths are relative to the "
				     "view's root)",
				     path);
	if (strlen(path) > EOS_PATH_MAX)
		return eos_error_set(err, -ENAMETOOLONG, "path '%s': longer than %d bytes", path,
				     EOS_PATH_MAX);
	for (const char *p = path; *p; p += strcspn(p, "/"), p += *p == '/')
		if (!strncmp(p, "..", 2) && (p[2] == '/' || p[2] == '\0'))
			return eos_error_set(err, -EINVAL, "path '%s': '..' leads out of the view",
					     path);
	return 0;
}

static int
walk_init(struct walk *w, struct eos_view *v, const char *path)
{
	struct eos_node *root = eos_node_get(v, EOS_ROOT_INO);

	*w = (struct walk){ .v = v };
	w->rest = strdup(path);
	if (!root || !w->rest ||
	    eos_buf_array_reserve(&w->chain, &w->cap, 1, sizeof(*w->chain), 8) < 0)
		return -ENOMEM;
	w->chain[w->n++] = root;
	eos_node_lock(root);
	w->ctx = (struct eos_ctx){ .uid = root->uid, .gid = root->gid };
	eos_node_unlock(root);
	return 0;
}

static void
walk_release(struct walk *w)
{
	for (size_t i = 1; i < w->n; i++)
		eos_node_forget(w->v, w->chain[i]->ino, 1);
	free(w->chain);
	free(w->rest);
	*w = (struct walk){ 0 };
}

static struct eos_node *
walk_top(const struct walk *w)
{
	return w->chain[w->n - 1];
}

/* Push c, which holds a reference for the walk. */
static int
walk_push(struct walk *w, struct eos_node *c)
{
	int r = eos_buf_array_reserve(&w->chain, &w->cap, w->n + 1, sizeof(*w->chain), 8);

	if (r < 0) {
		eos_node_forget(w->v, c->ino, 1);
		return r;
	}
	w->chain[w->n++] = c;
	return 0;
}

/* "..": above the root is outside the view. */
static int
walk_pop(struct walk *w)
{
	if (w->n == 1)
		return -EXDEV;
	eos_node_forget(w->v, w->chain[--w->n]->ino, 1);
	return 0;
}

/* The next component into name: 1 when none is left. *last: it is the path's last. */
static int
walk_next(struct walk *w, char name[static EOS_NAME_MAX + 1], bool *last)
{
	const char *p = w->rest + w->pos;
	size_t len;

	p += strspn(p, "/");
	if (!*p)
		return 1;
	len = strcspn(p, "/");
	if (len > EOS_NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(name, p, len);
	name[len] = '\0';
	p += len;
	w->pos = (size_t)(p - w->rest);
	*last = p[strspn(p, "/")] == '\0';
	return 0;
}

/* Symlink n (the walk's reference dropped here): what is left is its target, then the rest. */
static int
walk_follow(struct walk *w, struct eos_node *n)
{
	cleanup_free char *target = NULL;
	char *next = NULL;
	int r = eos_fs_readlink(w->v, n, &target);

	eos_node_forget(w->v, n->ino, 1);
	if (r < 0)
		return r;
	if (target[0] == '/')
		return -EXDEV;
	if (++w->links > LINKS_MAX)
		return -ELOOP;
	if (asprintf(&next, "%s/%s", target, w->rest + w->pos) < 0)
		return -ENOMEM;
	free(w->rest);
	w->rest = next;
	w->pos = 0;
	return 0;
}

/* Enter directory component name of top (created when missing and w->parents). */
static int
walk_enter(struct walk *w, const char *name)
{
	struct eos_node *p = walk_top(w), *c;
	int r = eos_fs_lookup(w->v, p, name, &c);

	if (r == -ENOENT && w->parents) {
		r = eos_fs_make(w->v, &w->ctx, p, name, S_IFDIR | DIR_MODE, NULL, &c);
		if (r == -EEXIST)
			r = eos_fs_lookup(w->v, p, name, &c);
		else if (r == 0 && w->iv &&
			 (inval_add_entry(w->iv, p->ino, name) < 0 ||
			  inval_add_ino(w->iv, p->ino) < 0)) {
			eos_node_forget(w->v, c->ino, 1);
			return -ENOMEM;
		}
	}
	if (r < 0)
		return r;
	if (S_ISLNK(c->mode))
		return walk_follow(w, c);
	return walk_push(w, c);
}

/* Walk every component but the last: the walk's top is its directory, name the last ("" when
 * the path names the top itself). */
static int
walk_dirs(struct walk *w, char name[static EOS_NAME_MAX + 1])
{
	for (;;) {
		bool last = false;
		int r = walk_next(w, name, &last);

		if (r == 1) {
			name[0] = '\0';
			return 0;
		}
		if (r == 0 && !strcmp(name, ".."))
			r = walk_pop(w);
		if (r < 0)
			return r;
		if (!strcmp(name, ".") || !strcmp(name, "..")) {
			if (last)
				name[0] = '\0';
			if (last)
				return 0;
			continue;
		}
		if (last)
			return 0;
		r = walk_enter(w, name);
		if (r < 0)
			return r;
	}
}

/* Resolve the whole path, following symlinks: the walk's top is its node. */
static int
walk_all(struct walk *w)
{
	char name[EOS_NAME_MAX + 1];

	for (;;) {
		struct eos_node *c;
		int r = walk_dirs(w, name);

		if (r < 0 || !name[0])
			return r;
		r = eos_fs_lookup(w->v, walk_top(w), name, &c);
		if (r < 0)
			return r;
		if (!S_ISLNK(c->mode))
			return walk_push(w, c);
		r = walk_follow(w, c);
		if (r < 0)
			return r;
	}
}

/* "path 'x': why", for the errors the walk and the operations give. */
static int
path_error(const char *path, int r, struct eos_error *err)
{
	switch (r) {
	case -EXDEV:
		return eos_error_set(err, r,
				     "path '%s': leads out of the view (a symlink pointing "
				     "outside it)",
				     path);
	case -ELOOP:
		return eos_error_set(err, r, "path '%s': more than %d symlinks", path, LINKS_MAX);
	case -ENOENT:
		return eos_error_set(err, r, "path '%s': no such file or directory", path);
	case -EIO:
		return eos_error_set(err, r,
				     "path '%s': the view is broken (a live publish "
				     "committed but the view could not follow): reopen it",
				     path);
	default:
		return eos_error_set(err, r, "path '%s': %s", path, strerror(-r));
	}
}

/* --- reads -------------------------------------------------------------------------------------
 */

static int
stat_gated(struct eos_view *v, const char *path, struct stat *st)
{
	struct walk w;
	int r = walk_init(&w, v, path);

	r = r ?: walk_all(&w);
	r = r ?: eos_fs_getattr(v, walk_top(&w), st);
	walk_release(&w);
	return r;
}

int
eos_view_path_stat(struct eos_view *v, const char *path, struct stat *st, struct eos_error *err)
{
	int r = path_check(path, err);

	if (r < 0)
		return r;
	eos_gate_read_enter(v);
	r = stat_gated(v, path, st);
	eos_gate_read_leave(v);
	return r < 0 ? path_error(path, r, err) : 0;
}

static ssize_t
read_node(struct eos_view *v, struct eos_node *n, uint64_t off, void *buf, size_t size)
{
	struct eos_ctx ctx = { 0 };
	struct eos_handle *h = NULL;
	size_t done = 0;
	ssize_t r;

	if (eos_node_is_dir(n))
		return -EISDIR;
	if (!S_ISREG(n->mode))
		return -EINVAL;
	r = eos_fs_open(v, &ctx, n, O_RDONLY, &h);
	while (r >= 0 && done < size) {
		r = eos_fs_read(v, h, (char *)buf + done, size - done, off + done);
		if (r == 0)
			break;
		done += r > 0 ? (size_t)r : 0;
	}
	if (h)
		eos_fs_release(v, h);
	return r < 0 ? r : (ssize_t)done;
}

ssize_t
eos_view_path_read(struct eos_view *v, const char *path, uint64_t off, void *buf, size_t size,
		   struct eos_error *err)
{
	struct walk w;
	ssize_t r = path_check(path, err);

	if (r < 0)
		return r;
	eos_gate_read_enter(v);
	r = walk_init(&w, v, path);
	r = r ?: walk_all(&w);
	r = r ?: read_node(v, walk_top(&w), off, buf, size);
	walk_release(&w);
	eos_gate_read_leave(v);
	if (r == -EINVAL)
		return eos_error_set(err, -EINVAL, "path '%s': not a regular file", path);
	return r < 0 ? path_error(path, (int)r, err) : r;
}

/* --- listing -----------------------------------------------------------------------------------
 */

void
eos_view_path_list_release(struct eos_view_path_list *l)
{
	for (size_t i = 0; l && i < l->n; i++)
		free(l->v[i].name);
	if (l)
		free(l->v);
	if (l)
		*l = (struct eos_view_path_list){ 0 };
}

static int
list_add(struct eos_view *v, struct eos_node *p, const char *name, struct eos_view_path_list *l,
	 size_t *cap)
{
	struct eos_node *c;
	struct stat st;
	int r = eos_fs_lookup(v, p, name, &c);

	if (r == -ENOENT)
		return 0; /* removed meanwhile */
	if (r < 0)
		return r;
	r = eos_fs_getattr(v, c, &st);
	eos_node_forget(v, c->ino, 1);
	r = r ?: eos_buf_array_reserve(&l->v, cap, l->n + 1, sizeof(*l->v), 16);
	if (r < 0)
		return r;
	l->v[l->n] = (struct eos_view_path_entry){ .name = strdup(name),
						   .mode = st.st_mode,
						   .size = (uint64_t)st.st_size };
	return l->v[l->n++].name ? 0 : -ENOMEM;
}

static int
list_node(struct eos_view *v, struct eos_node *p, struct eos_view_path_list *l)
{
	struct eos_dir_snapshot s = { 0 };
	size_t cap = 0;
	int r;

	if (!eos_node_is_dir(p))
		return -ENOTDIR;
	eos_node_lock(p);
	r = eos_dir_snapshot(v, p, &s);
	eos_node_unlock(p);
	for (size_t i = 0; r == 0 && i < s.n; i++)
		if (strcmp(s.v[i].name, ".") && strcmp(s.v[i].name, ".."))
			r = list_add(v, p, s.v[i].name, l, &cap);
	eos_dir_snapshot_release(&s);
	return r; /* in name order, as the snapshot is */
}

int
eos_view_path_list(struct eos_view *v, const char *path, struct eos_view_path_list *ret,
		   struct eos_error *err)
{
	struct walk w;
	int r = path_check(path, err);

	*ret = (struct eos_view_path_list){ 0 };
	if (r < 0)
		return r;
	eos_gate_read_enter(v);
	r = walk_init(&w, v, path);
	r = r ?: walk_all(&w);
	r = r ?: list_node(v, walk_top(&w), ret);
	walk_release(&w);
	eos_gate_read_leave(v);
	if (r < 0)
		eos_view_path_list_release(ret);
	return r < 0 ? path_error(path, r, err) : 0;
}

/* --- writes ------------------------------------------------------------------------------------
 */

/* The write log index of owner (NULL: the session's own), its record written when new. */
static int
owner_op(struct eos_view *v, const char *owner, uint32_t *ret)
{
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;
	bool fresh = false;
	int r;

	if (!owner) {
		*ret = v->self_op;
		return 0;
	}
	r = eos_opstable_intern(&v->ops, owner, ret, &fresh);
	if (r < 0 || !fresh)
		return r;
	r = eos_delta_batch(v, &b);
	r = r ?: eos_delta_put_op(*ret, owner, b);
	return r ?: eos_delta_commit(v, b, EOS_COMMIT_JOURNAL);
}

/* Write data into n, a new empty file no one else has opened, owned by op. */
static int
fill_node(struct eos_view *v, struct eos_node *n, const void *data, size_t len, uint32_t op)
{
	struct eos_ctx ctx = { 0 };
	struct eos_handle *h = NULL;
	size_t off = 0;
	int r = eos_fs_open(v, &ctx, n, O_WRONLY, &h);

	if (r < 0)
		return r;
	eos_node_lock(n);
	h->op = op; /* the owner is given, not resolved from a process */
	h->op_resolved = true;
	if (h->writer)
		n->x->writer_op = op;
	eos_node_unlock(n);
	while (r == 0 && off < len) {
		size_t chunk = EOS_MIN(len - off, (size_t)WRITE_BLOCK);
		ssize_t got = eos_fs_write(v, h, (const char *)data + off, chunk, off);

		r = got < 0 ? (int)got : got == 0 ? -EIO : 0;
		off += got > 0 ? (size_t)got : 0;
	}
	eos_fs_release(v, h);
	return r;
}

static const char TEMP_PREFIX[] = ".eos-write.";

/* A name for the new node, unique in the view's life. A crash may leave it; the next open of the
 * view removes it (eos_view_path_discard_temps). */
static void
temp_name(char out[static EOS_NAME_MAX + 1])
{
	static _Atomic uint64_t seq;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(out, EOS_NAME_MAX + 1, "%s%d.%llx.%llx", TEMP_PREFIX, (int)getpid(),
		 (unsigned long long)ts.tv_sec, (unsigned long long)atomic_fetch_add(&seq, 1));
}

/* name is one temp_name() makes: the prefix, then three dot-separated hexadecimal fields. */
static bool
is_temp_name(const char *name, size_t len)
{
	size_t fields = 1, digits = 0;

	if (len <= sizeof(TEMP_PREFIX) - 1 || memcmp(name, TEMP_PREFIX, sizeof(TEMP_PREFIX) - 1))
		return false;
	for (size_t i = sizeof(TEMP_PREFIX) - 1; i < len; i++) {
		if (name[i] == '.' && digits > 0) {
			fields++;
			digits = 0;
		} else if (isxdigit((unsigned char)name[i])) {
			digits++;
		} else {
			return false;
		}
	}
	return fields == 3 && digits > 0;
}

/* The temporaries of directory d (an upper node, locked): their names into *ret. */
static int
temps_of(struct eos_node *d, char ***ret, size_t *ret_n, size_t *cap)
{
	struct eos_hashmap_iter it = { 0 };

	while (eos_hashmap_next(&d->x->dirents, &it)) {
		char *name;

		if (it.value->u64 == EOS_DIRENT_ABSENT || it.value->u64 == EOS_DIRENT_WHITEOUT ||
		    !is_temp_name(it.key, it.klen))
			continue;
		if (eos_buf_array_reserve(ret, cap, *ret_n, sizeof(**ret), 4) < 0 ||
		    !(name = strndup(it.key, it.klen)))
			return -ENOMEM;
		(*ret)[(*ret_n)++] = name;
	}
	return 0;
}

/* Remove the temporaries of directory ino (a node of the table). */
static void
discard_temps_in(struct eos_view *v, uint64_t ino)
{
	struct eos_node *d = eos_node_get_ref(v, ino);
	char **names = NULL;
	size_t n = 0, cap = 0;

	if (!d)
		return;
	eos_node_lock(d);
	if (eos_node_is_dir(d) && d->flags & EOS_NODE_UPPER && temps_of(d, &names, &n, &cap) < 0)
		eos_log_warn("session '%s': no memory to look for write temporaries, ignoring",
			     v->session);
	eos_node_unlock(d);
	for (size_t i = 0; i < n; i++) {
		if (eos_fs_unlink(v, d, names[i], false) < 0)
			eos_log_warn("session '%s': cannot remove the temporary '%s', ignoring",
				     v->session, names[i]);
		free(names[i]);
	}
	free(names);
	eos_node_forget(v, ino, 1);
}

void
eos_view_path_discard_temps(struct eos_view *v)
{
	cleanup_free uint64_t *inos = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < EOS_TABLE_SHARDS; i++) {
		struct eos_node_iter it = { 0 };
		struct eos_node *node;

		pthread_mutex_lock(&v->shards[i].lock);
		while ((node = eos_table_next(&v->shards[i], &it)))
			if (S_ISDIR(node->mode) && node->flags & EOS_NODE_UPPER &&
			    eos_buf_array_reserve(&inos, &cap, n, sizeof(*inos), 16) == 0)
				inos[n++] = node->ino;
		pthread_mutex_unlock(&v->shards[i].lock);
	}
	for (size_t i = 0; i < n; i++) /* not while iterating: unlinking may change the table */
		discard_temps_in(v, inos[i]);
}

struct replace {
	struct eos_view *v;
	struct eos_node *p, *old; /* old: the file replaced, or NULL */
	const char *name;
	const void *data;
	size_t len;
	uint32_t op;
	struct eos_ctx ctx;
	struct eos_inval *iv;
};

/* The new node takes old's permission bits (without set-ID, as a write by a caller lacking
 * CAP_FSETID) and owners; a new file the defaults. */
static uint32_t
replace_mode(struct replace *rp)
{
	uint32_t mode = FILE_MODE;

	if (!rp->old)
		return mode;
	eos_node_lock(rp->old);
	mode = rp->old->mode & 0777;
	rp->ctx.uid = rp->old->uid;
	rp->ctx.gid = rp->old->gid;
	eos_node_unlock(rp->old);
	return mode;
}

/* Give n every extended attribute of old (a file_write keeps what it does not rewrite). */
static int
copy_xattrs(struct eos_view *v, struct eos_node *old, struct eos_node *n)
{
	cleanup_free char *names = NULL;
	ssize_t size = eos_xattr_list(v, old, NULL, 0);

	if (size <= 0)
		return (int)size;
	names = malloc((size_t)size);
	if (!names)
		return -ENOMEM;
	size = eos_xattr_list(v, old, names, (size_t)size);
	for (char *name = names; size > 0 && name < names + size; name += strlen(name) + 1) {
		cleanup_free void *value = NULL;
		ssize_t len = eos_xattr_get(v, old, name, NULL, 0);
		int r = 0;

		if (len >= 0 && !(value = malloc(len ? (size_t)len : 1)))
			return -ENOMEM;
		len = len >= 0 ? eos_xattr_get(v, old, name, value, (size_t)len) : len;
		if (len >= 0)
			r = eos_xattr_set(v, n, name, value, (size_t)len, 0);
		if (r < 0 || (len < 0 && len != -ENODATA))
			return r < 0 ? r : (int)len;
	}
	return size < 0 ? (int)size : 0;
}

/* Write a new node beside name, then rename it over name: a failure leaves the old content. */
static int
replace_file(struct replace *rp)
{
	char tmp[EOS_NAME_MAX + 1];
	struct eos_node *n = NULL;
	uint32_t mode = replace_mode(rp);
	int r;

	temp_name(tmp);
	r = eos_fs_make(rp->v, &rp->ctx, rp->p, tmp, S_IFREG | mode, NULL, &n);
	if (r < 0)
		return r;
	r = fill_node(rp->v, n, rp->data, rp->len, rp->op);
	r = r ?: (rp->old ? copy_xattrs(rp->v, rp->old, n) : 0);
	r = r ?: eos_fs_rename(rp->v, rp->p, tmp, rp->p, rp->name, 0);
	if (r < 0)
		eos_fs_unlink(rp->v, rp->p, tmp, false);
	if (r == 0)
		r = inval_add_entry(rp->iv, rp->p->ino, rp->name) ?: inval_add_ino(rp->iv, rp->p->ino)
			?: inval_add_ino(rp->iv, n->ino)
			?: (rp->old ? inval_add_ino(rp->iv, rp->old->ino) : 0);
	eos_node_forget(rp->v, n->ino, 1);
	return r == -ENOMEM ? 0 : r; /* written: only the kernel's caches may stay stale */
}

/* Resolve the file path names (its parent entered), following a symlink at its end. */
static int
write_resolve(struct walk *w, struct replace *rp, char name[static EOS_NAME_MAX + 1])
{
	for (;;) {
		struct eos_node *c = NULL;
		int r = walk_dirs(w, name);

		if (r == 0 && !name[0])
			r = -EISDIR;
		if (r < 0)
			return r;
		r = eos_fs_lookup(w->v, walk_top(w), name, &c);
		if (r == -ENOENT)
			return 0; /* a new file */
		if (r < 0)
			return r;
		if (!S_ISLNK(c->mode)) {
			rp->old = c;
			return 0;
		}
		r = walk_follow(w, c);
		if (r < 0)
			return r;
	}
}

static int
write_gated(struct eos_view *v, const char *path, struct replace *rp, unsigned flags)
{
	char name[EOS_NAME_MAX + 1];
	struct walk w;
	int r = walk_init(&w, v, path);

	w.parents = flags & EOS_VIEW_WRITE_PARENTS;
	w.iv = rp->iv;
	r = r ?: write_resolve(&w, rp, name);
	if (r == 0 && rp->old && eos_node_is_dir(rp->old))
		r = -EISDIR;
	else if (r == 0 && rp->old && !S_ISREG(rp->old->mode))
		r = -EINVAL;
	rp->v = v;
	rp->p = r == 0 ? walk_top(&w) : NULL;
	rp->name = name;
	rp->ctx = w.ctx;
	r = r ?: replace_file(rp);
	if (rp->old)
		eos_node_forget(v, rp->old->ino, 1);
	walk_release(&w);
	return r;
}

int
eos_view_path_write(struct eos_view *v, const char *path, const void *data, size_t len,
		    const char *owner, unsigned flags, struct eos_error *err)
{
	struct eos_inval iv = { 0 };
	struct replace rp = { .data = data, .len = len, .iv = &iv };
	int r = path_check(path, err);

	if (r == 0 && !path[0])
		return eos_error_set(err, -EISDIR, "path '': the root is a directory");
	if (r == 0 && owner && (!owner[0] || strlen(owner) > EOS_OPERATION_MAX))
		return eos_error_set(err, -EINVAL, "owner '%s': empty or longer than %d bytes",
				     owner, EOS_OPERATION_MAX);
	if (r == 0 && !v->session)
		return eos_error_set(err, -EROFS, "path '%s': the view is read-only", path);
	if (r < 0)
		return r;
	r = eos_gate_write_enter(v) ? 0 : -EIO;
	r = r ?: owner_op(v, owner, &rp.op);
	r = r ?: write_gated(v, path, &rp, flags);
	eos_gate_write_leave(v);
	eos_view_invalidate(v, &iv); /* the gate open: see struct eos_inval */
	eos_inval_release(&iv);
	if (r == -EINVAL)
		return eos_error_set(err, r, "path '%s': not a regular file", path);
	return r < 0 ? path_error(path, r, err) : 0;
}
