/* SPDX-License-Identifier: MIT */
#include "tests/unit/view-util.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"

struct eos_node *
tv_root(struct eos_view *v)
{
	struct eos_node *n = eos_node_get(v, EOS_ROOT_INO);

	ck_assert_ptr_nonnull(n);
	return n;
}

struct eos_node *
tv_lookup(struct eos_view *v, const char *path)
{
	cleanup_free char *copy = strdup(path);
	struct eos_node *n = tv_root(v);
	char *save = NULL;

	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		int r = eos_fs_lookup(v, n, c, &n);

		ck_assert_msg(r == 0, "lookup '%s' ('%s'): %s", path, c, strerror(-r));
	}
	return n;
}

struct eos_ctx
tv_ctx_of(pid_t pid)
{
	return (struct eos_ctx){ .uid = getuid(), .gid = getgid(), .pid = pid };
}

struct eos_node *
tv_make(struct eos_view *v, const char *dir, const char *name, uint32_t mode, const char *target)
{
	struct eos_ctx c = tv_ctx_of(PID_SESSION);
	struct eos_node *n = NULL;
	int r = eos_fs_make(v, &c, dir[0] ? tv_lookup(v, dir) : tv_root(v), name, mode, target, &n);

	ck_assert_msg(r == 0, "make '%s' in '%s': %s", name, dir, strerror(-r));
	return n;
}

void
tv_write_at(struct eos_view *v, const char *path, pid_t pid, uint64_t off, const char *text)
{
	struct eos_ctx c = tv_ctx_of(pid);
	struct eos_handle *h = NULL;
	int r = eos_fs_open(v, &c, tv_lookup(v, path), O_WRONLY, &h);

	ck_assert_msg(r == 0, "open '%s': %s", path, strerror(-r));
	ck_rc(eos_fs_write(v, h, text, strlen(text), off), strlen(text));
	ck_rc(eos_fs_release(v, h), 0);
}

const char *
tv_read_all(struct eos_view *v, const char *path, char *buf, size_t size)
{
	struct eos_ctx c = tv_ctx_of(PID_SESSION);
	struct eos_handle *h = NULL;
	int r = eos_fs_open(v, &c, tv_lookup(v, path), O_RDONLY, &h);
	int fd;
	ssize_t n;

	ck_assert_msg(r == 0, "open '%s': %s", path, strerror(-r));
	fd = eos_fs_read_fd(h);
	n = fd >= 0 ? pread(fd, buf, size - 1, 0) : eos_fs_read(v, h, buf, size - 1, 0);
	ck_assert_msg(n >= 0, "read '%s': %zd", path, n);
	buf[n] = 0;
	ck_rc(eos_fs_release(v, h), 0);
	return buf;
}
