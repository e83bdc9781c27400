/* SPDX-License-Identifier: MIT */
/* fs/xattr: user.* extended attributes of view nodes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

#include "fs/view-internal.h"

static const char USER_PREFIX[] = "user.";

void
eos_xattrs_free(struct eos_node *n)
{
	for (size_t i = 0; i < n->x->nxattrs; i++) {
		free(n->x->xattrs[i].name);
		free(n->x->xattrs[i].value);
	}
	free(n->x->xattrs);
	n->x->xattrs = NULL;
	n->x->nxattrs = 0;
}

static int
xattr_append(struct eos_node *n, const char *name, const void *value, size_t len)
{
	struct eos_xattr *v = realloc(n->x->xattrs, (n->x->nxattrs + 1) * sizeof(*v));
	struct eos_xattr x = { .name = strdup(name), .value = malloc(len ? len : 1), .len = len };

	if (v)
		n->x->xattrs = v;
	if (!v || !x.name || !x.value) {
		free(x.name);
		free(x.value);
		return -ENOMEM;
	}
	memcpy(x.value, value, len);
	n->x->xattrs[n->x->nxattrs++] = x;
	return 0;
}

static int
load_one(void *ctx, const char *name, const void *value, size_t len)
{
	return xattr_append(ctx, name, value, len);
}

int
eos_xattr_load(struct eos_view *v, struct eos_node *n)
{
	int r = 0;

	if (n->flags & EOS_NODE_XATTRS)
		return 0;
	r = eos_node_extend(v, n);
	if (r < 0)
		return r;
	if (eos_node_has_lower(n) && n->x->lst && n->x->lst->nxattrs > 0) {
		char buf[EOS_LOWER_BUF];

		r = eos_tree_xattrs(v->tree, eos_node_lower(n, buf), load_one, n, NULL);
	}
	if (r < 0) {
		eos_xattrs_free(n);
		return r;
	}
	n->flags |= EOS_NODE_XATTRS;
	return 0;
}

/* Whether n (locked) has no attributes: not loaded, and its lower entry has none. */
static bool
none_below(const struct eos_node *n)
{
	return (n->flags & (EOS_NODE_XATTRS | EOS_NODE_NO_XATTRS)) == EOS_NODE_NO_XATTRS;
}

static struct eos_xattr *
xattr_find(struct eos_node *n, const char *name)
{
	for (size_t i = 0; i < n->x->nxattrs; i++)
		if (strcmp(n->x->xattrs[i].name, name) == 0)
			return &n->x->xattrs[i];
	return NULL;
}

ssize_t
eos_xattr_get(struct eos_view *v, struct eos_node *n, const char *name, void *buf, size_t size)
{
	struct eos_xattr *x;
	ssize_t r;

	eos_node_lock(n);
	/* the kernel's security.capability and ACL questions about a lower file without any:
	 * no extension, no store read */
	r = none_below(n) ? -ENODATA : eos_xattr_load(v, n);
	x = r < 0 ? NULL : xattr_find(n, name);
	if (r == 0)
		r = !x		    ? -ENODATA
		    : size == 0	    ? (ssize_t)x->len
		    : size < x->len ? -ERANGE
				    : (ssize_t)x->len;
	if (r > 0 && size > 0)
		memcpy(buf, x->value, x->len);
	eos_node_unlock(n);
	return r;
}

ssize_t
eos_xattr_list(struct eos_view *v, struct eos_node *n, char *buf, size_t size)
{
	size_t need = 0;
	ssize_t r;

	eos_node_lock(n);
	r = none_below(n) ? 0 : eos_xattr_load(v, n);
	for (size_t i = 0; r == 0 && i < n->x->nxattrs; i++)
		need += strlen(n->x->xattrs[i].name) + 1;
	if (r == 0)
		r = size == 0 ? (ssize_t)need : size < need ? -ERANGE : (ssize_t)need;
	for (size_t i = 0, off = 0; r > 0 && size > 0 && i < n->x->nxattrs; i++) {
		size_t len = strlen(n->x->xattrs[i].name) + 1;

		memcpy(buf + off, n->x->xattrs[i].name, len);
		off += len;
	}
	eos_node_unlock(n);
	return r;
}

static int
xattr_change(struct eos_view *v, struct eos_node *n, const char *name, const void *value,
	     size_t len, int flags)
{
	struct eos_xattr *x = xattr_find(n, name);
	void *copy;

	if (!value) {
		if (!x)
			return -ENODATA;
		free(x->name);
		free(x->value);
		*x = n->x->xattrs[--n->x->nxattrs];
		return 0;
	}
	if ((flags & XATTR_CREATE_FLAG) && x)
		return -EEXIST;
	if ((flags & XATTR_REPLACE_FLAG) && !x)
		return -ENODATA;
	if (!x)
		return xattr_append(n, name, value, len);
	copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, value, len);
	free(x->value);
	x->value = copy;
	x->len = len;
	(void)v;
	return 0;
}

/* Set (value != NULL) or remove an attribute. Only user.* names are supported. */
int
eos_xattr_set(struct eos_view *v, struct eos_node *n, const char *name, const void *value,
	      size_t len, int flags)
{
	int r;

	if (strncmp(name, USER_PREFIX, sizeof(USER_PREFIX) - 1) != 0)
		return value ? -ENOTSUP : -ENODATA;
	if (len > EOS_XATTR_VALUE_MAX)
		return -E2BIG;
	r = eos_copyup_meta(v, n);
	if (r < 0)
		return r;
	eos_node_lock(n);
	r = eos_xattr_load(v, n);
	r = r ?: xattr_change(v, n, name, value, len, flags);
	if (r == 0) {
		n->flags |= EOS_NODE_META_CHANGED;
		eos_node_touch(n, false);
		r = eos_delta_flush_node(v, n, EOS_COMMIT_JOURNAL);
	}
	eos_node_unlock(n);
	return r;
}
