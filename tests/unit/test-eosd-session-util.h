/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the unit tests of eosd's sessions: a struct eosd built by hand over a real store
 * in a temp dir (runtime dir beside it), one imported sandbox, and calls of the handlers with
 * JSON arguments validated by the catalog, as the gateway would make them.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "supervisor/session-internal.h"

struct es_fixture {
	char *dir;
	char *src;
	struct eosd d;
	char sandbox[EOS_SANDBOX_ID_MAX + 1];
};

/* Call in main() before running the suite. */
void es_init(void);
/*
 * An unchecked teardown (in the runner, after each test): detach the mounts and remove the
 * directories a failed test left behind (a failing check exits the test's process at once).
 */
void es_cleanup_leftovers(void);

/* Store in <tmp>/store with sandbox "sb" imported from a small tree, runtime in <tmp>/run;
 * eosd_sessions_start() called. */
void es_open(struct es_fixture *f);
/* eosd_sessions_stop(), close the store (keep the files when keep). */
void es_close(struct es_fixture *f, bool keep);
/* Open the store again and eosd_sessions_start(). */
void es_reopen(struct es_fixture *f);

/*
 * Call operation name with args (JSON text), request id rid (may be NULL): validate, run the
 * handler. Returns its result; *out (may be NULL: dropped) the payload, err the message, and
 * *ret_kind (may be NULL) the call's kind.
 */
int es_call(struct es_fixture *f, const char *name, const char *rid, const char *args, json_t **out,
	    struct eos_error *err);
/* As es_call, and the call must succeed; returns the payload (caller decrefs). */
json_t *es_ok(struct es_fixture *f, const char *name, const char *rid, const char *args);
/* The call must fail with code and a message holding want. */
void es_fails(struct es_fixture *f, const char *name, const char *args, int code, const char *want);
/* The kind the last es_call set (-1: none) and its details (borrowed until the next call). */
int es_last_kind(void);
json_t *es_last_details(void);

/* The string key of o (the test fails when there is none). */
const char *es_str(const json_t *o, const char *key);
/* Create session id (create_workspace_session). */
void es_create(struct es_fixture *f, const char *id);

/* The content of host file path, NUL-terminated (caller frees), or NULL. */
char *es_slurp(const char *path);
/* <runtime>/sessions/sb/<name>/<rel>. Caller frees. */
char *es_mpath(struct es_fixture *f, const char *name, const char *rel);
