/* SPDX-License-Identifier: MIT */
/*
 * fs/owners: how a mount shows the owners the store recorded, what it records for the ids of
 * requests, and the set-ID bits an open(O_TRUNC) clears (doc/fs.md "Owners"). fs/ops.c calls
 * these at the FUSE boundary only, so the rest of the view, the delta walk and the publish gate
 * see recorded ids.
 */
#include <linux/capability.h>
#include <stdio.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "fs/view-internal.h"

void
eos_owners_init(struct eos_view *v, enum eos_view_owners mode, struct eos_owners *ret)
{
	struct eos_node *root = eos_node_get(v, EOS_ROOT_INO);

	if (mode == EOS_VIEW_OWNERS_AUTO)
		mode = geteuid() == 0 ? EOS_VIEW_OWNERS_IDENTITY : EOS_VIEW_OWNERS_SQUASH;
	*ret = (struct eos_owners){ .squash = mode == EOS_VIEW_OWNERS_SQUASH,
				    .uid = (uint32_t)geteuid(),
				    .gid = (uint32_t)getegid() };
	if (!ret->squash || !root)
		return;
	eos_node_lock(root);
	ret->sandbox_uid = root->uid;
	ret->sandbox_gid = root->gid;
	eos_node_unlock(root);
}

void
eos_owners_show(const struct eos_owners *o, struct stat *st)
{
	if (!o->squash)
		return;
	st->st_uid = o->uid;
	st->st_gid = o->gid;
}

void
eos_owners_creator(const struct eos_owners *o, struct eos_ctx *ctx)
{
	if (!o->squash)
		return;
	if (ctx->uid == o->uid)
		ctx->uid = o->sandbox_uid;
	if (ctx->gid == o->gid)
		ctx->gid = o->sandbox_gid;
}

unsigned
eos_owners_setattr(const struct eos_owners *o, const struct stat *attr, unsigned valid)
{
	if (!o->squash)
		return valid;
	/* every recorded id is shown as the user's: giving a file to them changes nothing */
	if (valid & EOS_SET_UID && attr->st_uid == o->uid)
		valid &= ~(unsigned)EOS_SET_UID;
	if (valid & EOS_SET_GID && attr->st_gid == o->gid)
		valid &= ~(unsigned)EOS_SET_GID;
	return valid;
}

/* Whether process pid has CAP_FSETID in its effective set (from /proc; false when unknown). */
static bool
has_fsetid(pid_t pid)
{
	char path[64], line[256];
	cleanup_fclose FILE *f = NULL;
	unsigned long long caps;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = pid > 0 ? fopen(path, "re") : NULL;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			return caps & (1ULL << CAP_FSETID);
	return false;
}

int
eos_owners_truncated(struct eos_view *v, struct eos_node *n, pid_t pid)
{
	struct stat st;
	int r = eos_fs_getattr(v, n, &st);

	if (r < 0 || !S_ISREG(st.st_mode) || eos_owners_killed_mode(st.st_mode) == st.st_mode ||
	    has_fsetid(pid))
		return r;
	r = eos_owners_kill_setid(v, n);
	return r < 0 ? r : 0;
}

uint32_t
eos_owners_killed_mode(uint32_t mode)
{
	if (S_ISDIR(mode))
		return mode;
	mode &= ~(uint32_t)S_ISUID;
	/* without group execute, set-group-ID marks mandatory locking: no privilege */
	if (mode & S_IXGRP)
		mode &= ~(uint32_t)S_ISGID;
	return mode;
}

int
eos_owners_kill_setid(struct eos_view *v, struct eos_node *n)
{
	struct stat st, out;
	int r = eos_fs_getattr(v, n, &st);

	if (r < 0 || eos_owners_killed_mode(st.st_mode) == st.st_mode)
		return r;
	st.st_mode = eos_owners_killed_mode(st.st_mode);
	r = eos_fs_setattr(v, n, &st, EOS_SET_MODE, &out);
	return r < 0 ? r : 1;
}
