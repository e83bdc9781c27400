/* SPDX-License-Identifier: MIT */
#include "common/statedir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *
env_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && v[0] ? v : NULL;
}

int
eos_default_store_dir(char **ret)
{
	const char *v;
	int r;

	if ((v = env_nonempty("EOS_STORE")))
		r = asprintf(ret, "%s", v);
	else if ((v = env_nonempty("EOS_STATE_DIR")))
		r = asprintf(ret, "%s/store", v);
	else if (geteuid() == 0 && !env_nonempty("XDG_DATA_HOME"))
		r = asprintf(ret, "/var/lib/eos/store");
	else if ((v = env_nonempty("XDG_DATA_HOME")))
		r = asprintf(ret, "%s/eos/store", v);
	else if ((v = env_nonempty("HOME")))
		r = asprintf(ret, "%s/.local/share/eos/store", v);
	else
		return -ENOENT;
	return r < 0 ? -ENOMEM : 0;
}

int
eos_default_state_dir(char **ret)
{
	const char *v;
	int r;

	if ((v = env_nonempty("EOS_STATE_DIR")))
		r = asprintf(ret, "%s", v);
	else if (geteuid() == 0 && !env_nonempty("XDG_DATA_HOME"))
		r = asprintf(ret, "/var/lib/eos");
	else if ((v = env_nonempty("XDG_DATA_HOME")))
		r = asprintf(ret, "%s/eos", v);
	else if ((v = env_nonempty("HOME")))
		r = asprintf(ret, "%s/.local/share/eos", v);
	else
		return -ENOENT;
	return r < 0 ? -ENOMEM : 0;
}

int
eos_default_runtime_dir(char **ret)
{
	const char *v;
	int r;

	if ((v = env_nonempty("EOS_RUNTIME_DIR")))
		r = asprintf(ret, "%s", v);
	else if (geteuid() == 0 && !env_nonempty("XDG_RUNTIME_DIR"))
		r = asprintf(ret, "/run/eos");
	else if ((v = env_nonempty("XDG_RUNTIME_DIR")))
		r = asprintf(ret, "%s/eos", v);
	else
		r = asprintf(ret, "/tmp/eos-%u", (unsigned)geteuid());
	return r < 0 ? -ENOMEM : 0;
}
