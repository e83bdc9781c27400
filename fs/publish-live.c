/* SPDX-License-Identifier: MIT */
/* fs/publish-live: publishing a mounted session in place, and forking a session (fs/view.h). */
#include <errno.h>

#include "fs/view.h"

int
eos_view_publish_live(struct eos_view *v, struct eos_view_mount *m, const char *owner,
		      struct eos_publish_result *ret, struct eos_error *err)
{
	(void)v, (void)m, (void)owner, (void)ret;
	return eos_error_set(err, -ENOSYS, "publishing a live session is not built yet");
}

int
eos_view_fork(struct eos_view *v, const char *new_session, struct eos_error *err)
{
	(void)v, (void)new_session;
	return eos_error_set(err, -ENOSYS, "forking a session is not built yet");
}
