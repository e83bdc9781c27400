/* SPDX-License-Identifier: MIT */
/* Helpers of the unit tests of eosd's sessions (test-eosd-session-util.h). */
#include "tests/unit/test-eosd-session-util.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "supervisor/ops.h"
#include "tests/unit/testutil.h"

static int last_kind = -1;
static pid_t runner; /* the process running the suite (each test forks from it) */
static json_t *last_details;

static void
open_store(struct es_fixture *f)
{
	struct eos_store_options o = { .create = true };
	struct eos_error err = { 0 };

	ck_assert_msg(eos_store_open(f->d.store_dir, &o, &f->d.store, &err) == 0, "%s", err.msg);
	ck_assert_msg(eosd_sessions_start(&f->d, &err) == 0, "%s", err.msg);
}

void
es_open(struct es_fixture *f)
{
	struct eos_import_options io = { .sandbox = "sb" };
	struct eos_import_result res = { 0 };
	struct eos_error err = { 0 };
	cleanup_free char *p = NULL;

	char tag[64];

	*f = (struct es_fixture){ 0 };
	snprintf(tag, sizeof(tag), "eosd-session-%d", (int)(runner ? runner : getpid()));
	f->dir = eos_test_tmpdir(tag);
	ck_assert(asprintf(&f->src, "%s/src", f->dir) > 0);
	ck_assert(asprintf(&f->d.state_dir, "%s/state", f->dir) > 0);
	ck_assert(asprintf(&f->d.store_dir, "%s/state/store", f->dir) > 0);
	ck_assert(asprintf(&f->d.runtime_dir, "%s/run", f->dir) > 0);
	ck_assert_int_eq(mkdir(f->d.state_dir, 0700), 0);
	ck_assert_int_eq(mkdir(f->d.runtime_dir, 0700), 0);
	ck_assert(asprintf(&p, "%s/a.txt", f->src) > 0);
	eos_test_write_file(p, "one\ntwo\nthree\n", 14, 0644);
	free(p);
	ck_assert(asprintf(&p, "%s/dir/b.txt", f->src) > 0);
	eos_test_write_file(p, "bee\n", 4, 0644);
	open_store(f);
	ck_assert_msg(eos_store_import(f->d.store, f->src, &io, &res, &err) == 0, "%s", err.msg);
	eos_import_result_release(&res);
	snprintf(f->sandbox, sizeof(f->sandbox), "sb");
}

void
es_close(struct es_fixture *f, bool keep)
{
	eosd_sessions_stop(&f->d);
	eos_store_close(f->d.store);
	f->d.store = NULL;
	if (keep)
		return;
	eos_test_rm_rf(f->dir);
	free(f->dir);
	free(f->src);
	free(f->d.state_dir);
	free(f->d.store_dir);
	free(f->d.runtime_dir);
	json_decref(last_details);
	last_details = NULL;
}

void
es_reopen(struct es_fixture *f)
{
	open_store(f);
}

int
es_call(struct es_fixture *f, const char *name, const char *rid, const char *args, json_t **out,
	struct eos_error *err)
{
	const struct eos_op *op = eos_catalog_find(name);
	struct eosd_caller caller = { .surface = EOS_SURFACE_RUNTIME };
	json_t *a = json_loads(args ? args : "{}", 0, NULL), *o = NULL;
	struct eosd_call c = {
		.op = op, .request_id = rid, .args = a, .caller = &caller, .kind = -1
	};
	int r;

	ck_assert_ptr_nonnull(op);
	ck_assert_msg(a, "bad JSON '%s'", args);
	c.sandbox_id = op->needs_sandbox ? f->sandbox : NULL;
	r = eos_catalog_validate(op, a, err);
	if (r == 0)
		r = eosd_ops_handler(op)(&f->d, &c, &o, err);
	json_decref(a);
	json_decref(last_details);
	last_kind = c.kind;
	last_details = c.details;
	if (out)
		*out = o;
	else
		json_decref(o);
	return r;
}

json_t *
es_ok(struct es_fixture *f, const char *name, const char *rid, const char *args)
{
	struct eos_error err = { 0 };
	json_t *out = NULL;
	int r = es_call(f, name, rid, args, &out, &err);

	ck_assert_msg(r == 0, "%s %s: %d %s", name, args, r, err.msg);
	ck_assert_ptr_nonnull(out);
	return out;
}

void
es_fails(struct es_fixture *f, const char *name, const char *args, int code, const char *want)
{
	struct eos_error err = { 0 };
	int r = es_call(f, name, NULL, args, NULL, &err);

	ck_assert_msg(r == code, "%s %s: got %d (%s), want %d", name, args, r, err.msg, code);
	ck_assert_msg(strstr(err.msg, want), "%s %s: '%s' lacks '%s'", name, args, err.msg, want);
}

int
es_last_kind(void)
{
	return last_kind;
}

json_t *
es_last_details(void)
{
	return last_details;
}

char *
es_slurp(const char *path)
{
	cleanup_fclose FILE *fp = fopen(path, "re");
	char *buf = NULL;
	size_t n;

	if (!fp)
		return NULL;
	buf = calloc(1, 1 << 20);
	ck_assert_ptr_nonnull(buf);
	n = fread(buf, 1, (1 << 20) - 1, fp);
	buf[n] = 0;
	return buf;
}

char *
es_mpath(struct es_fixture *f, const char *name, const char *rel)
{
	char *p = NULL;

	ck_assert(asprintf(&p, "%s/sessions/sb/%s/%s", f->d.runtime_dir, name, rel) > 0);
	return p;
}

void
es_init(void)
{
	runner = getpid();
}

static void
detach(const char *path)
{
	char *argv[] = { (char *)"fusermount3", (char *)"-u", (char *)"-z",
			 (char *)"-q",		(char *)path, NULL };
	pid_t pid;

	if (geteuid() == 0 && umount2(path, MNT_DETACH) == 0)
		return;
	pid = fork();
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

void
es_cleanup_leftovers(void)
{
	cleanup_fclose FILE *m = fopen("/proc/self/mounts", "re");
	cleanup_free char *pat = NULL, *line = NULL;
	const char *base = getenv("TMPDIR");
	char dev[4096], mnt[4096];
	size_t cap = 0;
	glob_t g;

	ck_assert(asprintf(&pat, "/eos-test-eosd-session-%d-", (int)runner) > 0);
	while (m && getline(&line, &cap, m) > 0)
		if (sscanf(line, "%4095s %4095s", dev, mnt) == 2 && strstr(mnt, pat))
			detach(mnt);
	free(pat);
	ck_assert(asprintf(&pat, "%s/eos-test-eosd-session-%d-*", base && *base ? base : "/tmp",
			   (int)runner) > 0);
	if (glob(pat, 0, NULL, &g) == 0)
		for (size_t i = 0; i < g.gl_pathc; i++)
			eos_test_rm_rf(g.gl_pathv[i]);
	globfree(&g);
}

const char *
es_str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	ck_assert_msg(s, "no string '%s'", key);
	return s;
}

void
es_create(struct es_fixture *f, const char *id)
{
	char args[128];

	snprintf(args, sizeof(args), "{\"workspace_session_id\":\"%s\"}", id);
	json_decref(es_ok(f, "create_workspace_session", NULL, args));
}
