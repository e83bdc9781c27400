/* SPDX-License-Identifier: MIT */
/* store/publish-parents: staging a whole file's place at the head (eos_publish_stage_parents). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

#include "store/publish.h"
#include "store/store.h"

int
eos_publish_stage_parents(struct eos_publish *p, const char *path, struct eos_attr *attr,
			  struct eos_error *err)
{
	cleanup_free char *dir = strdup(path);
	struct eos_attr dattr = {
		.mode = 0755, .uid = attr->uid, .gid = attr->gid, .mtime_ns = attr->mtime_ns
	};
	struct eos_stat st;
	int r = 0;

	if (!dir)
		return eos_error_set(err, -ENOMEM, "out of memory");
	if (eos_store_stat(p->st, p->sandbox, 0, path, &st, NULL) == 0) {
		if (st.kind != EOS_KIND_FILE)
			return eos_error_set(err, -EISDIR, "path '%s': a %s, not a regular file",
					     path, eos_kind_name(st.kind));
		attr->mode = st.attr.mode;
		attr->uid = st.attr.uid;
		attr->gid = st.attr.gid;
		return 0;
	}
	for (char *s = strchr(dir, '/'); s && r == 0; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (eos_store_stat(p->st, p->sandbox, 0, dir, &st, NULL) < 0)
			r = eos_publish_mkdir(p, dir, &dattr, false, err);
		*s = '/';
	}
	return r;
}
