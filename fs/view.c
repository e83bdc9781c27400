/* SPDX-License-Identifier: MIT */
/* fs/view: opening, persisting and closing a view. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/log.h"

#include "fs/view-internal.h"

uint64_t
eos_view_version(const struct eos_view *v)
{
	return v->version;
}

bool
eos_view_read_only(const struct eos_view *v)
{
	return !v->session;
}

static struct eos_view *
view_alloc(void)
{
	struct eos_view *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->data_dirfd = -1;
	for (size_t i = 0; i < EOS_TABLE_SHARDS; i++) {
		pthread_mutex_init(&v->shards[i].lock, NULL);
		pthread_mutex_init(&v->idshards[i].lock, NULL);
	}
	eos_opstable_init(&v->ops);
	eos_journal_init(&v->journal);
	eos_pending_init(&v->pending);
	pthread_mutex_init(&v->links_lock, NULL);
	pthread_mutex_init(&v->opcache_lock, NULL);
	pthread_mutex_init(&v->mounts_lock, NULL);
	pthread_mutex_init(&v->handles_lock, NULL);
	eos_gate_init(&v->gate);
	atomic_store(&v->next_ino, EOS_ROOT_INO + 1);
	return v;
}

/* The root node from the store's root directory. */
static int
root_from_lower(struct eos_view *v, struct eos_error *err)
{
	struct eos_node *n = eos_node_new(EOS_ROOT_INO);
	struct eos_stat st;
	int r = n ? 0 : -ENOMEM;

	r = r ?: eos_tree_stat(v->tree, "", &st, err);
	if (r == 0) {
		eos_node_fill_lower(n, &st);
		n->x->lst = eos_lower_new(&st);
		n->x->lower = strdup("");
		eos_node_set_name(n, strdup(""));
		eos_node_set_parent(n, EOS_ROOT_INO);
		n->nlookup = 1;
		r = n->x->lst && n->x->lower && n->x->name ? 0 : -ENOMEM;
	}
	if (r == 0) {
		r = eos_node_insert(v, n);
	}
	if (r < 0)
		eos_node_free(n);
	return r;
}

/* A new session's root becomes upper at once: every copy-up ends there. */
int
eos_view_root_upper(struct eos_view *v)
{
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;
	struct eos_node *root = eos_node_get(v, EOS_ROOT_INO);
	int r = eos_xattr_load(v, root);

	r = r ?: eos_delta_batch(v, &b);
	if (r < 0)
		return r;
	root->flags |= EOS_NODE_UPPER | EOS_NODE_XATTRS;
	r = eos_delta_put_node(v, root, b);
	return r ?: eos_delta_commit(v, b, EOS_COMMIT_SYNC);
}

static int
session_prepare(struct eos_view *v, const struct eos_view_options *o, struct eos_error *err)
{
	struct eos_session_info info;
	int r = eos_store_session_get(v->store, o->sandbox, o->session, &info, err);

	if (r == -ENOENT && o->create && !o->inspect)
		r = eos_store_session_create(v->store, o->sandbox, o->session, 0, &info, err);
	if (r < 0)
		return r;
	v->version = info.version;
	r = eos_store_session_dir(v->store, o->sandbox, o->session, &v->data_dir, err);
	if (r < 0)
		return r;
	v->data_dirfd = open(v->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (v->data_dirfd < 0)
		return eos_error_set(err, eos_neg_errno(), "open session directory '%s': %m",
				     v->data_dir);
	if (asprintf(&v->self_owner, "workspace_session:%s", o->session) < 0)
		return eos_error_set(err, -ENOMEM, "out of memory");
	return 0;
}

/* Nodes left unlinked by a previous mount (open when it ended) are discarded. */
static int
discard_orphans(struct eos_view *v)
{
	cleanup_free uint64_t *inos = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < EOS_TABLE_SHARDS; i++) {
		struct eos_node_iter it = { 0 };
		struct eos_node *node;

		while ((node = eos_table_next(&v->shards[i], &it))) {
			if (node->nlink > 0)
				continue;
			if (eos_buf_array_reserve(&inos, &cap, n + 1, sizeof(*inos), 16) < 0)
				return -ENOMEM;
			inos[n++] = node->ino;
		}
	}
	/* not while iterating: forgetting may compact the table */
	for (size_t i = 0; i < n; i++) {
		eos_node_get_ref(v, inos[i]); /* forget discards the record (and data file) */
		eos_node_forget(v, inos[i], 1);
	}
	return 0;
}

/*
 * Data files no node owns (an unlinked file open when the view stopped, a copy-up a crash cut
 * short) are deleted. The others are cut to their node's size: a write the process was killed
 * in may have extended a data file without being acknowledged (nor journaled).
 */
static void
fix_length(struct eos_view *v, const char *name, uint64_t size)
{
	cleanup_close int fd = openat(v->data_dirfd, name, O_WRONLY | O_CLOEXEC);

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
		eos_log_error("session '%s': cannot cut data file '%s' to %llu bytes: %m",
			      v->session, name, (unsigned long long)size);
}

static void
discard_stray_data(struct eos_view *v)
{
	int fd = dup(v->data_dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	struct stat st;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		char *end;
		uint64_t ino = strtoull(e->d_name, &end, 16);
		struct eos_node *n;

		if (e->d_name[0] == '.' || *end)
			continue;
		n = eos_node_get(v, ino);
		if (!n || !(n->flags & EOS_NODE_DATA))
			unlinkat(v->data_dirfd, e->d_name, 0);
		else if (fstatat(v->data_dirfd, e->d_name, &st, 0) == 0 &&
			 (uint64_t)st.st_size != n->size)
			fix_length(v, e->d_name, n->size);
	}
	closedir(d);
}

/* The session's records with what its journal holds over them; the journal opened (inspected:
 * replayed in memory only). */
static int
load_journaled(struct eos_view *v, struct eos_error *err)
{
	EOS_CLEANUP(eos_jreplay_freep) struct eos_jreplay *jr = NULL;
	const struct eos_recent *over;
	size_t nover;
	int r = eos_delta_load_nonce(v, err);

	r = r ?: eos_journal_read(v, !v->inspect, &jr, err);
	if (r < 0)
		return r;
	over = eos_jreplay_images(jr, &nover);
	r = eos_delta_load(v, over, nover, err);
	if (r < 0)
		return r;
	return v->inspect ? eos_journal_replay(v, jr, err) : eos_journal_open(v, jr, err);
}

static int
view_load(struct eos_view *v, const struct eos_view_options *o, struct eos_error *err)
{
	int r;

	if (!o->session) {
		r = eos_store_tree_open(v->store, o->sandbox, v->version, &v->tree, err);
		return r ?: root_from_lower(v, err);
	}
	r = session_prepare(v, o, err);
	r = r ?: eos_store_tree_open(v->store, o->sandbox, v->version, &v->tree, err);
	r = r ?: load_journaled(v, err);
	if (r < 0 || v->inspect)
		return r || eos_node_get(v, EOS_ROOT_INO) ? r : root_from_lower(v, err);
	v->self_op = eos_fs_operation(v, 0); /* pid 0: no resolver claims it */
	r = discard_orphans(v);
	if (r < 0)
		return eos_error_set(err, r, "session '%s': out of memory", v->session);
	discard_stray_data(v);
	eos_view_path_discard_temps(v);
	if (!eos_node_get(v, EOS_ROOT_INO)) {
		r = root_from_lower(v, err);
		r = r ?: eos_view_root_upper(v);
	}
	if (r == 0 && eos_flusher_start(v, o->flusher) < 0)
		r = eos_error_set(err, -EAGAIN, "session '%s': cannot start the flusher",
				  v->session);
	return r;
}

int
eos_view_open(const struct eos_view_options *o, struct eos_view **ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_view_closep) struct eos_view *v = view_alloc();
	struct eos_sandbox_info info;
	int r;

	if (!v)
		return eos_error_set(err, -ENOMEM, "out of memory");
	v->store = o->store;
	v->sandbox = strdup(o->sandbox);
	v->session = o->session ? strdup(o->session) : NULL;
	v->resolve = o->resolve;
	v->resolve_ctx = o->resolve_ctx;
	v->writeback = o->writeback && o->session;
	v->inspect = o->inspect && o->session;
	if (!v->sandbox || (o->session && !v->session))
		return eos_error_set(err, -ENOMEM, "out of memory");
	r = eos_store_sandbox_get(o->store, o->sandbox, &info, err);
	if (r < 0)
		return r;
	v->version = o->version ? o->version : info.head;
	r = view_load(v, o, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(v);
	return 0;
}

int
eos_view_persist(struct eos_view *v, bool sync, struct eos_error *err)
{
	int r = 0;

	if (!v->session)
		return 0;
	for (size_t i = 0; i < EOS_TABLE_SHARDS; i++) {
		struct eos_node_iter it = { 0 };
		struct eos_node *n;

		pthread_mutex_lock(&v->shards[i].lock);
		while ((n = eos_table_next(&v->shards[i], &it))) {
			if (!eos_mutex_trylock(&n->lock)) {
				r = -EAGAIN; /* busy: written by its own operation's end */
				continue;
			}
			r = eos_delta_flush_node(v, n, EOS_COMMIT_CHECKPOINT) ?: r;
			eos_node_unlock(n);
			r = eos_pending_commit_due(v) ?: r;
		}
		pthread_mutex_unlock(&v->shards[i].lock);
	}
	if (r == 0 && v->pending.active) {
		/* every pending record, the ones staged above with them */
		r = eos_pending_commit(v, sync);
	} else if (r == 0 && sync) {
		struct eos_node *root = eos_node_get(v, EOS_ROOT_INO);

		eos_node_lock(root);
		r = eos_delta_flush_node(v, root, EOS_COMMIT_SYNC);
		eos_node_unlock(root);
	}
	return r < 0 ? eos_error_set(err, r, "session '%s': cannot write the delta", v->session)
		     : 0;
}

void
eos_view_close(struct eos_view *v)
{
	bool persisted = false;

	if (!v)
		return;
	eos_flusher_stop(v);
	if (v->session && !v->inspect && !atomic_load(&v->broken) && eos_node_get(v, EOS_ROOT_INO))
		persisted = eos_view_persist(v, true, NULL) == 0;
	/* every record written: the journal is not needed any more (else the next mount replays) */
	eos_journal_release(v, persisted);
	v->pending.active = false; /* what closing writes now goes to the store as it comes */
	while (v->handles)
		eos_fs_release(v, v->handles);
	pthread_mutex_destroy(&v->handles_lock);
	for (size_t i = 0; i < EOS_TABLE_SHARDS; i++) {
		struct eos_node_iter it = { 0 };
		struct eos_node *n;

		while ((n = eos_table_next(&v->shards[i], &it)))
			eos_node_free(n);
		eos_table_release(&v->shards[i]);
		eos_hashmap_release(&v->idshards[i].ids);
		pthread_mutex_destroy(&v->shards[i].lock);
		pthread_mutex_destroy(&v->idshards[i].lock);
	}
	eos_opstable_release(&v->ops);
	eos_pending_release(&v->pending);
	eos_hashmap_release(&v->links);
	pthread_mutex_destroy(&v->links_lock);
	pthread_mutex_destroy(&v->opcache_lock);
	pthread_mutex_destroy(&v->mounts_lock);
	eos_gate_destroy(&v->gate);
	free(v->mounts);
	if (v->data_dirfd >= 0)
		close(v->data_dirfd);
	free(v->data_dir);
	free(v->self_owner);
	eos_tree_free(v->tree);
	free(v->sandbox);
	free(v->session);
	free(v);
}

/*
 * After a storm of deletes the freed nodes' memory sits in malloc's free lists: give it back to
 * the system, so that a long-lived session's resident size follows its live nodes.
 */
void
eos_view_tidy(struct eos_view *v)
{
	if (atomic_load(&v->freed) < EOS_TIDY_AFTER)
		return;
	atomic_store(&v->freed, 0);
	malloc_trim(0);
}

int
eos_view_resolve_environ(void *ctx, pid_t pid, char *out, size_t size)
{
	static const char KEY[] = "EOS_OPERATION=";
	char path[64], buf[65536];
	cleanup_close int fd = -1;
	ssize_t n;

	(void)ctx;
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -ENOENT;
	buf[n] = 0;
	for (char *p = buf; p < buf + n; p += strlen(p) + 1) {
		if (strncmp(p, KEY, sizeof(KEY) - 1) != 0 || !p[sizeof(KEY) - 1])
			continue;
		return snprintf(out, size, "operation:%s", p + sizeof(KEY) - 1) < (int)size
			       ? 0
			       : -ENOENT;
	}
	return -ENOENT;
}
