/* SPDX-License-Identifier: MIT */
#include "common/path.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"

int
eos_name_check(const char *name, size_t n, struct eos_error *err)
{
	if (n == 0)
		return eos_error_set(err, -EINVAL, "empty file name");
	if (n > EOS_NAME_MAX)
		return eos_error_set(err, -ENAMETOOLONG,
				     "name '%.40s…' is %zu bytes, the limit is %d", name, n,
				     EOS_NAME_MAX);
	if ((n == 1 && name[0] == '.') || (n == 2 && name[0] == '.' && name[1] == '.'))
		return eos_error_set(err, -EINVAL, "name '%.*s' is not allowed", (int)n, name);
	if (memchr(name, '\0', n))
		return eos_error_set(err, -EINVAL, "name '%s' contains a NUL byte", name);
	if (memchr(name, '/', n))
		return eos_error_set(err, -EINVAL, "name '%.*s' contains '/'", (int)n, name);
	return 0;
}

int
eos_path_check(const char *path, struct eos_error *err)
{
	size_t len = strlen(path);
	const char *p = path;

	if (len == 0)
		return 0;
	if (len > EOS_PATH_MAX)
		return eos_error_set(err, -ENAMETOOLONG,
				     "path '%.40s…' is %zu bytes, the limit is %d", path, len,
				     EOS_PATH_MAX);
	if (path[0] == '/')
		return eos_error_set(err, -EINVAL, "path '%s' is absolute", path);
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		int r = eos_name_check(p, n, err);

		if (r < 0)
			return eos_error_prefix(err, r, "path '%s'", path);
		if (!slash)
			return 0;
		p = slash + 1;
	}
}

static int
normalize_component(struct eos_buf *out, const char *p, size_t n, const char *in,
		    struct eos_error *err)
{
	int r;

	if (n == 0 || (n == 1 && p[0] == '.'))
		return 0;
	r = eos_name_check(p, n, err);
	if (r < 0)
		return eos_error_prefix(err, r, "path '%s'", in);
	if (out->len && (r = eos_buf_append_u8(out, '/')) < 0)
		return r;
	return eos_buf_append(out, p, n);
}

int
eos_path_normalize(const char *in, char **ret, struct eos_error *err)
{
	struct eos_buf out;
	const char *p = in;
	int r = 0;

	eos_buf_init(&out);
	if (strlen(in) > EOS_PATH_MAX)
		return eos_error_set(err, -ENAMETOOLONG, "path '%.40s…' is longer than %d bytes",
				     in, EOS_PATH_MAX);
	while (r >= 0) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);

		r = normalize_component(&out, p, n, in, err);
		if (!slash)
			break;
		p = slash + 1;
	}
	if (r >= 0)
		r = eos_buf_append(&out, "", 0); /* ensure allocated even for the root */
	if (r < 0) {
		eos_buf_release(&out);
		return r == -ENOMEM ? eos_error_set(err, r, "out of memory") : r;
	}
	*ret = (char *)eos_buf_steal(&out, NULL);
	return 0;
}

void
eos_path_split(const char *path, size_t *ret_parent_len, const char **ret_name)
{
	const char *slash = strrchr(path, '/');

	if (!slash) {
		*ret_parent_len = 0;
		*ret_name = path;
		return;
	}
	*ret_parent_len = (size_t)(slash - path);
	*ret_name = slash + 1;
}

int
eos_path_join(const char *parent, const char *name, char **ret)
{
	char *s;
	int n;

	if (!parent[0])
		n = asprintf(&s, "%s", name);
	else if (!name[0])
		n = asprintf(&s, "%s", parent);
	else
		n = asprintf(&s, "%s/%s", parent, name);
	if (n < 0)
		return -ENOMEM;
	*ret = s;
	return 0;
}

bool
eos_path_is_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 0)
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int
eos_mkdir_parents(const char *path, unsigned mode, bool self)
{
	cleanup_free char *p = strdup(path);

	if (!p)
		return -ENOMEM;
	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return eos_neg_errno();
		*s = '/';
	}
	if (self && mkdir(p, mode) < 0 && errno != EEXIST)
		return eos_neg_errno();
	return 0;
}

static int
rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

int
eos_rm_rf(const char *path)
{
	if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
		return eos_neg_errno();
	return 0;
}

int
eos_pread_all(int fd, void *buf, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA;
		done += (size_t)n;
	}
	return 0;
}
