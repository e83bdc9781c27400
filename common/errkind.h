/* SPDX-License-Identifier: MIT */
/*
 * Error kinds: the stable, machine-readable names of what went wrong, shared by every interface
 * (eos-store --json, the gateway's {"error":{"kind",…}} envelope, eosctl and the MCP server).
 * A failure inside eos is a negative errno (common/error.h); eos_errkind_of() names its kind.
 * Interfaces may also raise the request-level kinds (invalid_request, unauthorized, forbidden,
 * too_large, timeout, publish_rejected, holder_exited) directly. doc/error-handling.md lists them
 * all.
 */
#pragma once

enum eos_errkind {
	EOS_ERRKIND_INVALID_REQUEST, /* an argument is missing, unknown, mistyped or out of range */
	EOS_ERRKIND_UNAUTHORIZED,    /* no token, or a token that is wrong or expired */
	EOS_ERRKIND_FORBIDDEN,	     /* a valid token that does not reach this operation/sandbox */
	EOS_ERRKIND_NOT_FOUND,	     /* ENOENT */
	EOS_ERRKIND_EXISTS,	     /* EEXIST, ENOTEMPTY */
	EOS_ERRKIND_INVALID,	     /* EINVAL, ENOTDIR, EISDIR, ELOOP, ENAMETOOLONG */
	EOS_ERRKIND_PERMISSION,	     /* EACCES, EPERM */
	EOS_ERRKIND_BUSY,	     /* EBUSY, EAGAIN */
	EOS_ERRKIND_STALE,	     /* ESTALE: a version or session that moved on */
	EOS_ERRKIND_CORRUPT,	     /* EBADMSG: the store holds damaged data */
	EOS_ERRKIND_NO_SPACE,	     /* ENOSPC, EDQUOT */
	EOS_ERRKIND_UNSUPPORTED,     /* EPROTONOSUPPORT: a format eos does not read */
	EOS_ERRKIND_OUT_OF_MEMORY,   /* ENOMEM */
	EOS_ERRKIND_TOO_LARGE,	     /* EFBIG, E2BIG, EMSGSIZE: a body or value above its limit */
	EOS_ERRKIND_TIMEOUT,	     /* ETIMEDOUT */
	EOS_ERRKIND_PUBLISH_REJECTED, /* the gate found conflicts (not an errno) */
	EOS_ERRKIND_UNAVAILABLE,   /* ESHUTDOWN, ECONNREFUSED: the daemon is stopping or absent */
	EOS_ERRKIND_IO,		   /* anything else */
	EOS_ERRKIND_HOLDER_EXITED, /* a session's namespace holder has died (not an errno) */
	EOS_ERRKIND_COUNT
};

/* The kind of a negative errno (any other value: EOS_ERRKIND_IO). */
enum eos_errkind eos_errkind_of(int code);

/* The kind's name ("not_found"); "io" for a value out of range. Static storage. */
const char *eos_errkind_name(enum eos_errkind kind);

/* The HTTP status the gateway answers the kind with (400, 401, 403, 404, 409, 413, 500, …). */
int eos_errkind_http_status(enum eos_errkind kind);

/* The kind named name, or -EINVAL. */
int eos_errkind_parse(const char *name);
