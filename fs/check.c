/* SPDX-License-Identifier: MIT */
/*
 * fs/check: a session's delta checked against its data files (eos_view_check, used by
 * `eos-store fsck`). A file whose content lives in the session must have its data file, of the
 * file's size; a dirent must name a node. The view was opened with `inspect`: its journal is
 * replayed in memory, so the check sees what the next mount would serve.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"

#include "fs/view-internal.h"

struct check {
	struct eos_view *v;
	eos_view_check_fn fn;
	void *ctx;
	int violations;
};

/* n's primary path ("inode N" when its chain of parents breaks), into out. */
static void
node_path(struct eos_view *v, const struct eos_node *n, char *out, size_t size)
{
	const char *parts[64];
	size_t depth = 0, len = 0;

	for (const struct eos_node *c = n; c && c->ino != EOS_ROOT_INO && depth < 64;
	     c = eos_node_get(v, eos_node_parent(c)))
		parts[depth++] = eos_node_name(c) ? eos_node_name(c) : "?";
	out[0] = 0;
	while (depth > 0 && len + 1 < size)
		len += (size_t)snprintf(out + len, size - len, "%s%s", len ? "/" : "",
					parts[--depth]);
	if (!out[0])
		snprintf(out, size, "inode %" PRIu64, n->ino);
}

static void
violation(struct check *c, const char *kind, const struct eos_node *n, const char *what)
{
	char path[1024], msg[2048];

	node_path(c->v, n, path, sizeof(path));
	snprintf(msg, sizeof(msg), "session '%s' of sandbox '%s': '%s' (inode %" PRIu64 "): %s",
		 c->v->session, c->v->sandbox, path, n->ino, what);
	c->fn(c->ctx, kind, msg);
	c->violations++;
}

static void
check_data(struct check *c, const struct eos_node *n)
{
	char name[32], what[256];
	struct stat st;

	eos_data_path(n, name, sizeof(name));
	if (fstatat(c->v->data_dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		snprintf(what, sizeof(what), "its content is in data file '%s', which is missing",
			 name);
	else if (!S_ISREG(st.st_mode))
		snprintf(what, sizeof(what), "data file '%s' is not a regular file", name);
	else if ((uint64_t)st.st_size < n->size)
		snprintf(what, sizeof(what),
			 "data file '%s' has %" PRIu64 " bytes, the file %" PRIu64, name,
			 (uint64_t)st.st_size, n->size);
	else
		return;
	violation(c, "session-data", n, what);
}

static void
check_dirents(struct check *c, struct eos_node *p)
{
	struct eos_hashmap_iter it = { 0 };

	while (eos_hashmap_next(&p->x->dirents, &it)) {
		uint64_t d = it.value->u64;
		char what[512];

		if (d == EOS_DIRENT_ABSENT || d == EOS_DIRENT_WHITEOUT || eos_node_get(c->v, d))
			continue;
		snprintf(what, sizeof(what),
			 "entry '%.*s' names inode %" PRIu64 ", which has no record",
			 (int)EOS_MIN(it.klen, 255), (const char *)it.key, d);
		violation(c, "session-dirent", p, what);
	}
}

int
eos_view_check(struct eos_view *v, eos_view_check_fn fn, void *ctx, struct eos_error *err)
{
	struct check c = { .v = v, .fn = fn, .ctx = ctx };

	if (!v->inspect)
		return eos_error_set(err, -EINVAL, "check of session '%s': open it to inspect",
				     v->session ? v->session : "?");
	for (size_t i = 0; i < EOS_TABLE_SHARDS; i++) {
		struct eos_node_iter it = { 0 };
		struct eos_node *n;

		while ((n = eos_table_next(&v->shards[i], &it))) {
			if (!(n->flags & EOS_NODE_UPPER) || n->nlink == 0)
				continue;
			if (n->flags & EOS_NODE_DATA)
				check_data(&c, n);
			if (eos_node_is_dir(n))
				check_dirents(&c, n);
		}
	}
	return c.violations;
}
