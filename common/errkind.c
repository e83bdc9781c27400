/* SPDX-License-Identifier: MIT */
/* common/errkind: names and HTTP statuses of the error kinds (common/errkind.h). */
#include "common/errkind.h"

#include <errno.h>
#include <string.h>

static const struct {
	const char *name;
	int status;
} kinds[EOS_ERRKIND_COUNT] = {
	[EOS_ERRKIND_INVALID_REQUEST] = { "invalid_request", 400 },
	[EOS_ERRKIND_UNAUTHORIZED] = { "unauthorized", 401 },
	[EOS_ERRKIND_FORBIDDEN] = { "forbidden", 403 },
	[EOS_ERRKIND_NOT_FOUND] = { "not_found", 404 },
	[EOS_ERRKIND_EXISTS] = { "exists", 409 },
	[EOS_ERRKIND_INVALID] = { "invalid", 400 },
	[EOS_ERRKIND_PERMISSION] = { "permission", 403 },
	[EOS_ERRKIND_BUSY] = { "busy", 409 },
	[EOS_ERRKIND_STALE] = { "stale", 409 },
	[EOS_ERRKIND_CORRUPT] = { "corrupt", 500 },
	[EOS_ERRKIND_NO_SPACE] = { "no_space", 507 },
	[EOS_ERRKIND_UNSUPPORTED] = { "unsupported_format", 415 },
	[EOS_ERRKIND_OUT_OF_MEMORY] = { "out_of_memory", 503 },
	[EOS_ERRKIND_TOO_LARGE] = { "too_large", 413 },
	[EOS_ERRKIND_TIMEOUT] = { "timeout", 504 },
	[EOS_ERRKIND_PUBLISH_REJECTED] = { "publish_rejected", 409 },
	[EOS_ERRKIND_UNAVAILABLE] = { "unavailable", 503 },
	[EOS_ERRKIND_IO] = { "io", 500 },
	[EOS_ERRKIND_HOLDER_EXITED] = { "holder_exited", 409 },
};

enum eos_errkind
eos_errkind_of(int code)
{
	switch (-code) {
	case ENOENT:
		return EOS_ERRKIND_NOT_FOUND;
	case EEXIST:
	case ENOTEMPTY:
		return EOS_ERRKIND_EXISTS;
	case EINVAL:
	case ENOTDIR:
	case EISDIR:
	case ELOOP:
	case ENAMETOOLONG:
		return EOS_ERRKIND_INVALID;
	case EACCES:
	case EPERM:
		return EOS_ERRKIND_PERMISSION;
	case EBUSY:
	case EAGAIN:
		return EOS_ERRKIND_BUSY;
	case ESTALE:
		return EOS_ERRKIND_STALE;
	case EBADMSG:
		return EOS_ERRKIND_CORRUPT;
	case ENOSPC:
	case EDQUOT:
		return EOS_ERRKIND_NO_SPACE;
	case EPROTONOSUPPORT:
		return EOS_ERRKIND_UNSUPPORTED;
	case ENOMEM:
		return EOS_ERRKIND_OUT_OF_MEMORY;
	case EFBIG:
	case E2BIG:
	case EMSGSIZE:
		return EOS_ERRKIND_TOO_LARGE;
	case ETIMEDOUT:
		return EOS_ERRKIND_TIMEOUT;
	case ESHUTDOWN:
	case ECONNREFUSED:
		return EOS_ERRKIND_UNAVAILABLE;
	default:
		return EOS_ERRKIND_IO;
	}
}

const char *
eos_errkind_name(enum eos_errkind kind)
{
	return (unsigned)kind < EOS_ERRKIND_COUNT ? kinds[kind].name : "io";
}

int
eos_errkind_http_status(enum eos_errkind kind)
{
	return (unsigned)kind < EOS_ERRKIND_COUNT ? kinds[kind].status : 500;
}

int
eos_errkind_parse(const char *name)
{
	for (int k = 0; k < EOS_ERRKIND_COUNT; k++)
		if (strcmp(kinds[k].name, name) == 0)
			return k;
	return -EINVAL;
}
