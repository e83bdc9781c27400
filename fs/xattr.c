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
	for (size_t i = 0; i < n->nxattrs; i++) {
		free(n->xattrs[i].name);
		free(n->xattrs[i].value);
	}
	free(n->xattrs);
	n->xattrs = NULL;
	n->nxattrs = 0;
}

static int
xattr_append(struct eos_node *n, const char *name, const void *value, size_t len)
{
	struct eos_xattr *v = realloc(n->xattrs, (n->nxattrs + 1) * sizeof(*v));
	struct eos_xattr x = { .name = strdup(name), .value = malloc(len ? len : 1), .len = len };

	if (v)
		n->xattrs = v;
	if (!v || !x.name || !x.value) {
		free(x.name);
		free(x.value);
		return -ENOMEM;
	}
	memcpy(x.value, value, len);
	n->xattrs[n->nxattrs++] = x;
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
	if (n->lower && n->lst && n->lst->nxattrs > 0)
		r = eos_tree_xattrs(v->tree, n->lower, load_one, n, NULL);
	if (r < 0) {
		eos_xattrs_free(n);
		return r;
	}
	n->flags |= EOS_NODE_XATTRS;
	return 0;
}

static struct eos_xattr *
xattr_find(struct eos_node *n, const char *name)
{
	for (size_t i = 0; i < n->nxattrs; i++)
		if (strcmp(n->xattrs[i].name, name) == 0)
			return &n->xattrs[i];
	return NULL;
}

ssize_t
eos_xattr_get(struct eos_view *v, struct eos_node *n, const char *name, void *buf, size_t size)
{
	struct eos_xattr *x;
	ssize_t r;

	pthread_mutex_lock(&n->lock);
	r = eos_xattr_load(v, n);
	x = r < 0 ? NULL : xattr_find(n, name);
	if (r == 0)
		r = !x		    ? -ENODATA
		    : size == 0	    ? (ssize_t)x->len
		    : size < x->len ? -ERANGE
				    : (ssize_t)x->len;
	if (r > 0 && size > 0)
		memcpy(buf, x->value, x->len);
	pthread_mutex_unlock(&n->lock);
	return r;
}

ssize_t
eos_xattr_list(struct eos_view *v, struct eos_node *n, char *buf, size_t size)
{
	size_t need = 0;
	ssize_t r;

	pthread_mutex_lock(&n->lock);
	r = eos_xattr_load(v, n);
	for (size_t i = 0; r == 0 && i < n->nxattrs; i++)
		need += strlen(n->xattrs[i].name) + 1;
	if (r == 0)
		r = size == 0 ? (ssize_t)need : size < need ? -ERANGE : (ssize_t)need;
	for (size_t i = 0, off = 0; r > 0 && size > 0 && i < n->nxattrs; i++) {
		size_t len = strlen(n->xattrs[i].name) + 1;

		memcpy(buf + off, n->xattrs[i].name, len);
		off += len;
	}
	pthread_mutex_unlock(&n->lock);
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
		*x = n->xattrs[--n->nxattrs];
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
	pthread_mutex_lock(&n->lock);
	r = eos_xattr_load(v, n);
	r = r ?: xattr_change(v, n, name, value, len, flags);
	if (r == 0) {
		n->flags |= EOS_NODE_META_CHANGED;
		eos_node_touch(n, false);
		r = eos_delta_flush_node(v, n, false);
	}
	pthread_mutex_unlock(&n->lock);
	return r;
}
