/* SPDX-License-Identifier: MIT */
/* eosctl-input: argument values read from a file or standard input (--content-file FILE|-). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/json.h"

#include "cli/eosctl.h"

/* Read all of fd into b, at most max bytes; -EFBIG above. */
static int
read_all(int fd, struct eos_buf *b, size_t max)
{
	for (;;) {
		ssize_t n;

		if (eos_buf_reserve(b, 64 << 10) < 0)
			return -ENOMEM;
		n = read(fd, b->data + b->len, 64 << 10);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return eos_neg_errno();
		if (n == 0)
			return 0;
		b->len += (size_t)n;
		if (b->len > max)
			return -EFBIG;
	}
}

static int
load(const struct eos_arg *a, const char *path, struct eos_buf *b, struct eos_error *err)
{
	size_t max =
		a->kind == EOS_ARG_STRING && a->max > 0 ? (size_t)a->max : EOS_CATALOG_STRING_MAX;
	cleanup_close int fd = -1;
	int r;

	if (strcmp(path, "-") != 0 && (fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0)
		return eos_error_set(err, eos_neg_errno(), "'%s': %s", path, strerror(errno));
	r = read_all(fd >= 0 ? fd : STDIN_FILENO, b, max);
	if (r == -EFBIG)
		return eos_error_set(err, r, "'%s' is larger than %zu bytes", path, max);
	if (r < 0)
		return eos_error_set(err, r, "read '%s': %s", path, strerror(-r));
	if (eos_buf_reserve(b, 1) < 0)
		return eos_error_set(err, -ENOMEM, "out of memory");
	b->data[b->len] = '\0';
	return 0;
}

/* The value of a in the bytes of b (read from path). */
static int
value_of(const struct eos_arg *a, const char *path, const struct eos_buf *b, json_t **ret,
	 struct eos_error *err)
{
	const char *text = b->len ? (const char *)b->data : "";
	json_t *v;
	int r;

	if (a->kind == EOS_ARG_EDITS)
		return eos_catalog_parse_word(a, text, ret, err);
	if (!(v = json_stringn(text, b->len)))
		return eos_error_set(err, -EINVAL, "'%s' is not UTF-8 text", path);
	if ((r = eos_catalog_check_value(a, v, err)) < 0) {
		json_decref(v);
		return r;
	}
	*ret = v;
	return 0;
}

int
eosctl_args_read_file(const struct eos_arg *a, const char *path, json_t **ret,
		      struct eos_error *err)
{
	struct eos_buf b;
	int r;

	eos_buf_init(&b);
	r = load(a, path, &b, err);
	if (r >= 0)
		r = value_of(a, path, &b, ret, err);
	eos_buf_release(&b);
	return r;
}
