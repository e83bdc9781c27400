/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of eosd's sessions (supervisor/session.h): the handlers called as the gateway
 * calls them, over a real store and real FUSE mounts under a temp runtime dir.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "tests/unit/test-eosd-session-util.h"
#include "tests/unit/testutil.h"

static struct es_fixture fx;

static void
setup(void)
{
	es_open(&fx);
}

static void
teardown(void)
{
	es_close(&fx, false);
}

static json_int_t
num(const json_t *o, const char *key)
{
	ck_assert_msg(json_is_integer(json_object_get(o, key)), "no integer '%s'", key);
	return json_integer_value(json_object_get(o, key));
}

START_TEST(create_list_inspect_destroy)
{
	json_t *o = es_ok(&fx, "create_workspace_session", NULL, "{}");
	cleanup_free char *id = strdup(es_str(o, "workspace_session_id"));
	cleanup_free char *a = NULL, *args = NULL, *got = NULL;

	ck_assert(strncmp(id, "ws-", 3) == 0);
	ck_assert_str_eq(es_str(o, "sandbox_id"), "sb");
	ck_assert_str_eq(es_str(o, "base_version"), "L000001");
	ck_assert(asprintf(&a, "%s/sessions/sb/%s", fx.d.runtime_dir, id) > 0);
	ck_assert_str_eq(es_str(o, "mount_path"), a);
	json_decref(o);
	free(a);
	ck_assert(asprintf(&a, "%s/sessions/sb/%s/a.txt", fx.d.runtime_dir, id) > 0);
	got = es_slurp(a);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, "one\ntwo\nthree\n");

	o = es_ok(&fx, "list_workspace_sessions", NULL, "{}");
	ck_assert_uint_eq(json_array_size(json_object_get(o, "sessions")), 1);
	ck_assert_str_eq(es_str(json_array_get(json_object_get(o, "sessions"), 0), "state"),
			 "live");
	json_decref(o);

	ck_assert(asprintf(&args, "{\"workspace_session_id\":\"%s\"}", id) > 0);
	o = es_ok(&fx, "inspect_workspace_session", NULL, args);
	ck_assert_str_eq(es_str(o, "state"), "live");
	ck_assert_int_eq(num(json_object_get(o, "delta"), "paths"), 0);
	json_decref(o);

	o = es_ok(&fx, "destroy_workspace_session", NULL, args);
	json_decref(o);
	es_fails(&fx, "inspect_workspace_session", args, -ENOENT, "does not exist");
	ck_assert_int_eq(
		eos_store_session_get(fx.d.store, "sb", id, &(struct eos_session_info){ 0 }, NULL),
		-ENOENT);
	ck_assert_uint_eq(eosd_sessions_count(&fx.d, "sb"), 0);
}
END_TEST

START_TEST(create_refusals)
{
	es_create(&fx, "w1");
	es_fails(&fx, "create_workspace_session", "{\"workspace_session_id\":\"w1\"}", -EEXIST,
		 "w1");
	es_fails(&fx, "create_workspace_session", "{\"version\":\"L9\"}", -ENOENT, "");
	es_fails(&fx, "inspect_workspace_session", "{\"workspace_session_id\":\"nope\"}", -ENOENT,
		 "'nope'");
	es_fails(&fx, "file_read", "{\"path\":\"a.txt\",\"workspace_session_id\":\"nope\"}",
		 -ENOENT, "'nope'");
}
END_TEST

START_TEST(file_ops_in_session)
{
	cleanup_free char *host = NULL, *got = NULL;
	json_t *o;

	es_create(&fx, "w1");
	o = es_ok(&fx, "file_write", "req-1",
		  "{\"workspace_session_id\":\"w1\",\"path\":\"new/deep/c.txt\","
		  "\"content\":\"x\\ny\\nz\\n\"}");
	ck_assert_str_eq(es_str(o, "owner"), "operation:req-1");
	json_decref(o);
	host = es_mpath(&fx, "w1", "new/deep/c.txt");
	got = es_slurp(host);
	ck_assert_str_eq(got, "x\ny\nz\n");

	o = es_ok(&fx, "file_read", NULL,
		  "{\"workspace_session_id\":\"w1\",\"path\":\"a.txt\",\"offset\":2,\"limit\":1}");
	ck_assert_str_eq(es_str(o, "content"), "two\n");
	ck_assert_int_eq(num(o, "lines"), 1);
	ck_assert_int_eq(num(o, "total_lines"), 3);
	ck_assert(json_is_true(json_object_get(o, "truncated")));
	json_decref(o);

	o = es_ok(&fx, "file_edit", NULL,
		  "{\"workspace_session_id\":\"w1\",\"path\":\"a.txt\",\"edits\":["
		  "{\"old_string\":\"two\",\"new_string\":\"TWO\"},"
		  "{\"old_string\":\"e\",\"new_string\":\"E\",\"replace_all\":true}]}");
	ck_assert_int_eq(num(o, "replacements"), 4);
	ck_assert_str_eq(es_str(o, "owner"), "workspace_session:w1");
	json_decref(o);
	o = es_ok(&fx, "file_read", NULL, "{\"workspace_session_id\":\"w1\",\"path\":\"a.txt\"}");
	ck_assert_str_eq(es_str(o, "content"), "onE\nTWO\nthrEE\n");
	ck_assert(json_is_false(json_object_get(o, "truncated")));
	json_decref(o);

	o = es_ok(&fx, "file_list", NULL, "{\"workspace_session_id\":\"w1\"}");
	ck_assert_uint_eq(json_array_size(json_object_get(o, "entries")), 3);
	ck_assert_str_eq(es_str(json_array_get(json_object_get(o, "entries"), 0), "name"), "a.txt");
	ck_assert_str_eq(es_str(json_array_get(json_object_get(o, "entries"), 1), "kind"),
			 "directory");
	ck_assert_str_eq(es_str(json_array_get(json_object_get(o, "entries"), 0), "mode"), "0644");
	json_decref(o);

	/* the head did not change */
	o = es_ok(&fx, "file_read", NULL, "{\"path\":\"a.txt\"}");
	ck_assert_str_eq(es_str(o, "content"), "one\ntwo\nthree\n");
	json_decref(o);

	o = es_ok(&fx, "inspect_workspace_session", NULL, "{\"workspace_session_id\":\"w1\"}");
	ck_assert_int_ge(num(json_object_get(o, "delta"), "paths"), 4); /* a, new, deep, c */
	ck_assert_int_eq(num(json_object_get(o, "delta"), "bytes"), 14 + 6);
	json_decref(o);
}
END_TEST

START_TEST(edit_refusals_change_nothing)
{
	cleanup_free char *host = NULL, *got = NULL;

	es_create(&fx, "w1");
	es_fails(&fx, "file_edit",
		 "{\"workspace_session_id\":\"w1\",\"path\":\"a.txt\",\"edits\":["
		 "{\"old_string\":\"one\",\"new_string\":\"1\"},"
		 "{\"old_string\":\"t\",\"new_string\":\"T\"}]}",
		 -EINVAL, "edit 1: old_string matches 2 times in 'a.txt'");
	es_fails(&fx, "file_edit",
		 "{\"workspace_session_id\":\"w1\",\"path\":\"a.txt\",\"edits\":["
		 "{\"old_string\":\"four\",\"new_string\":\"4\"}]}",
		 -EINVAL, "edit 0: old_string not found in 'a.txt'");
	es_fails(&fx, "file_edit",
		 "{\"path\":\"a.txt\",\"edits\":[{\"old_string\":\"four\",\"new_string\":\"4\"}]}",
		 -EINVAL, "edit 0: old_string not found in 'a.txt'");
	host = es_mpath(&fx, "w1", "a.txt");
	got = es_slurp(host);
	ck_assert_str_eq(got, "one\ntwo\nthree\n");
}
END_TEST

START_TEST(path_refusals)
{
	cleanup_free char *link = NULL;
	json_t *o;

	es_create(&fx, "w1");
	link = es_mpath(&fx, "w1", "out");
	ck_assert_int_eq(symlink("/etc", link), 0);
	free(link);
	link = es_mpath(&fx, "w1", "in");
	ck_assert_int_eq(symlink("dir", link), 0); /* a symlink inside the tree is followed */
	o = es_ok(&fx, "file_read", NULL,
		  "{\"workspace_session_id\":\"w1\",\"path\":\"in/b.txt\"}");
	ck_assert_str_eq(es_str(o, "content"), "bee\n");
	json_decref(o);
	es_fails(&fx, "file_read", "{\"workspace_session_id\":\"w1\",\"path\":\"out/passwd\"}",
		 -EINVAL, "path 'out/passwd': leads out of the sandbox");
	es_fails(&fx, "file_write",
		 "{\"workspace_session_id\":\"w1\",\"path\":\"out/x\",\"content\":\"\"}", -EINVAL,
		 "path 'out/x'");
	es_fails(&fx, "file_list", "{\"workspace_session_id\":\"w1\",\"path\":\"out\"}", -EINVAL,
		 "path 'out'");
	es_fails(&fx, "file_read", "{\"workspace_session_id\":\"w1\",\"path\":\"../x\"}", -EINVAL,
		 "path");
	es_fails(&fx, "file_read", "{\"path\":\"dir/../../x\"}", -EINVAL, "path");
	es_fails(&fx, "file_read", "{\"path\":\"/etc/passwd\"}", -EINVAL, "path");
	es_fails(&fx, "file_write", "{\"path\":\"/etc/x\",\"content\":\"\"}", -EINVAL, "path");
	es_fails(&fx, "file_read", "{\"path\":\"dir\"}", -EISDIR, "path 'dir'");
	es_fails(&fx, "file_read", "{\"path\":\"nope\"}", -ENOENT, "nope");
}
END_TEST

START_TEST(head_write_blame)
{
	json_t *o =
		es_ok(&fx, "file_write", "req-7", "{\"path\":\"n/h.txt\",\"content\":\"h\\n\"}");
	json_t *r;

	ck_assert_str_eq(es_str(o, "status"), "published");
	ck_assert_str_eq(es_str(o, "version"), "L000002");
	ck_assert_str_eq(es_str(o, "request_id"), "req-7");
	json_decref(o);
	o = es_ok(&fx, "file_write", NULL, "{\"path\":\"g.txt\",\"content\":\"g\\n\"}");
	ck_assert(strncmp(es_str(o, "request_id"), "req-", 4) == 0);
	ck_assert(strncmp(es_str(o, "owner"), "operation:req-", 14) == 0);
	json_decref(o);
	o = es_ok(&fx, "file_edit", "req-8",
		  "{\"path\":\"a.txt\",\"edits\":[{\"old_string\":\"two\",\"new_string\":\"2\"}]}");
	json_decref(o);
	o = es_ok(&fx, "file_read", NULL, "{\"path\":\"a.txt\"}");
	ck_assert_str_eq(es_str(o, "content"), "one\n2\nthree\n");
	json_decref(o);

	o = es_ok(&fx, "file_blame", NULL, "{\"path\":\"a.txt\"}");
	r = json_object_get(o, "ranges");
	ck_assert_uint_eq(json_array_size(r), 3);
	ck_assert_str_eq(es_str(json_array_get(r, 0), "owner"), "original");
	ck_assert_str_eq(es_str(json_array_get(r, 1), "owner"), "operation:req-8");
	json_decref(o);
	o = es_ok(&fx, "file_blame", NULL, "{\"path\":\"n/h.txt\",\"version\":\"L2\"}");
	ck_assert_str_eq(es_str(json_array_get(json_object_get(o, "ranges"), 0), "owner"),
			 "operation:req-7");
	json_decref(o);
	o = es_ok(&fx, "file_list", NULL, "{\"path\":\"n\"}");
	ck_assert_str_eq(es_str(json_array_get(json_object_get(o, "entries"), 0), "name"), "h.txt");
	json_decref(o);
}
END_TEST

static int
owner_of(void *ctx, const struct eos_delta_entry *e)
{
	json_t *map = ctx;

	if (e->nranges > 0)
		json_object_set_new(map, e->path, json_string(e->ranges[0].owner));
	return 0;
}

/* Writes through eosd's mount are attributed by the resolver: the request's operation, else
 * the session. */
START_TEST(write_attribution)
{
	EOS_CLEANUP(json_decrefp) json_t *owners = json_object();
	struct eosd_session *s = NULL;

	es_create(&fx, "w1");
	for (int i = 0; i < 3; i++) {
		json_decref(es_ok(
			&fx, "file_write", "op-a",
			"{\"workspace_session_id\":\"w1\",\"path\":\"x\",\"content\":\"a\"}"));
		json_decref(es_ok(
			&fx, "file_write", NULL,
			"{\"workspace_session_id\":\"w1\",\"path\":\"y\",\"content\":\"b\"}"));
		json_decref(es_ok(
			&fx, "file_write", "op-c",
			"{\"workspace_session_id\":\"w1\",\"path\":\"z\",\"content\":\"c\"}"));
	}
	ck_assert_int_eq(eosd_session_get(&fx.d, "sb", "w1", &s, NULL), 0);
	ck_assert_int_eq(eos_view_delta(s->view, owner_of, owners, NULL), 0);
	eosd_session_put(&fx.d, s);
	ck_assert_str_eq(es_str(owners, "x"), "operation:op-a");
	ck_assert_str_eq(es_str(owners, "y"), "workspace_session:w1");
	ck_assert_str_eq(es_str(owners, "z"), "operation:op-c");
}
END_TEST

START_TEST(second_mount)
{
	cleanup_free char *dir = NULL, *full = NULL, *p = NULL, *got = NULL;
	json_t *o;

	es_create(&fx, "w1");
	ck_assert(asprintf(&dir, "%s/mnt", fx.dir) > 0);
	ck_assert(asprintf(&full, "%s/full", fx.dir) > 0);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	ck_assert_int_eq(mkdir(full, 0755), 0);
	free(p);
	ck_assert(asprintf(&p, "%s/junk", full) > 0);
	eos_test_write_file(p, "j", 1, 0644);
	json_decref(
		es_ok(&fx, "file_write", NULL,
		      "{\"workspace_session_id\":\"w1\",\"path\":\"m.txt\",\"content\":\"m\"}"));
	free(p);
	ck_assert(asprintf(&p, "{\"workspace_session_id\":\"w1\",\"path\":\"%s\"}", full) > 0);
	es_fails(&fx, "mount_workspace_session", p, -ENOTEMPTY, full);
	free(p);
	ck_assert(asprintf(&p, "{\"workspace_session_id\":\"w1\",\"path\":\"%s/none\"}", fx.dir) >
		  0);
	es_fails(&fx, "mount_workspace_session", p, -ENOENT, "none");
	free(p);
	ck_assert(asprintf(&p, "{\"workspace_session_id\":\"w1\",\"path\":\"%s/sessions/sb\"}",
			   fx.d.runtime_dir) > 0);
	es_fails(&fx, "mount_workspace_session", p, -EINVAL, "inside eosd's runtime directory");
	free(p);
	ck_assert(asprintf(&p, "{\"workspace_session_id\":\"w1\",\"path\":\"%s\"}", dir) > 0);
	o = es_ok(&fx, "mount_workspace_session", NULL, p);
	json_decref(o);
	es_fails(&fx, "mount_workspace_session", p, -EEXIST, "already shows");
	free(p);
	ck_assert(asprintf(&p, "{\"workspace_session_id\":\"w1\",\"path\":\"%s/\"}", dir) > 0);
	es_fails(&fx, "mount_workspace_session", p, -EEXIST, "already shows");
	o = es_ok(&fx, "inspect_workspace_session", NULL, "{\"workspace_session_id\":\"w1\"}");
	ck_assert_uint_eq(json_array_size(json_object_get(o, "mounts")), 1);
	json_decref(o);
	free(p);
	ck_assert(asprintf(&p, "%s/m.txt", dir) > 0);
	got = es_slurp(p);
	ck_assert_str_eq(got, "m");
	free(p);
	ck_assert(asprintf(&p, "%s/written-here", dir) > 0);
	eos_test_write_file(p, "w\n", 2, 0644);
	o = es_ok(&fx, "file_read", NULL,
		  "{\"workspace_session_id\":\"w1\",\"path\":\"written-here\"}");
	ck_assert_str_eq(es_str(o, "content"), "w\n");
	json_decref(o);
	/* a file eosd's own mount has cached, changed through the other mount */
	json_decref(es_ok(&fx, "file_read", NULL,
			  "{\"workspace_session_id\":\"w1\",\"path\":\"a.txt\"}"));
	free(p);
	ck_assert(asprintf(&p, "%s/a.txt", dir) > 0);
	eos_test_write_file(p, "ONE\ntwo\nthree\n", 14, 0644);
	o = es_ok(&fx, "file_read", NULL, "{\"workspace_session_id\":\"w1\",\"path\":\"a.txt\"}");
	ck_assert_str_eq(es_str(o, "content"), "ONE\ntwo\nthree\n");
	json_decref(o);
	o = es_ok(&fx, "unmount_workspace_session", NULL, "{\"workspace_session_id\":\"w1\"}");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(o, "unmounted"), 0)),
			 dir);
	json_decref(o);
	free(p);
	ck_assert(asprintf(&p, "%s/m.txt", dir) > 0);
	ck_assert_int_eq(access(p, F_OK), -1);
}
END_TEST

/* The threads of this process (the test and eosd's parts it runs). */
static size_t
thread_count(void)
{
	DIR *d = opendir("/proc/self/task");
	size_t n = 0;

	ck_assert(d);
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

START_TEST(sixteen_sessions)
{
	char id[32], args[160];
	size_t threads = thread_count();

	for (int i = 0; i < 16; i++) {
		snprintf(id, sizeof(id), "s%02d", i);
		es_create(&fx, id);
		snprintf(args, sizeof(args),
			 "{\"workspace_session_id\":\"%s\",\"path\":\"own\",\"content\":\"%s\"}",
			 id, id);
		json_decref(es_ok(&fx, "file_write", NULL, args));
	}
	ck_assert_uint_eq(eosd_sessions_served(&fx.d), 16);
	/* the FUSE workers and the views' flusher serve them all: no thread per session */
	ck_assert_uint_eq(thread_count(), threads);
	for (int i = 0; i < 16; i++) {
		cleanup_free char *p = NULL, *got = NULL;

		snprintf(id, sizeof(id), "s%02d", i);
		p = es_mpath(&fx, id, "own");
		got = es_slurp(p);
		ck_assert_str_eq(got, id);
	}
}
END_TEST

START_TEST(restart_serves_every_session)
{
	cleanup_free char *dir = NULL, *p = NULL, *got = NULL;
	json_t *o;

	es_create(&fx, "w1");
	es_create(&fx, "w2");
	json_decref(
		es_ok(&fx, "file_write", NULL,
		      "{\"workspace_session_id\":\"w1\",\"path\":\"k/one\",\"content\":\"1\"}"));
	json_decref(es_ok(&fx, "file_edit", NULL,
			  "{\"workspace_session_id\":\"w2\",\"path\":\"a.txt\",\"edits\":"
			  "[{\"old_string\":\"one\",\"new_string\":\"uno\"}]}"));
	ck_assert(asprintf(&dir, "%s/mnt", fx.dir) > 0);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	ck_assert(asprintf(&p, "{\"workspace_session_id\":\"w2\",\"path\":\"%s\"}", dir) > 0);
	json_decref(es_ok(&fx, "mount_workspace_session", NULL, p));
	es_close(&fx, true);
	es_reopen(&fx);
	ck_assert_uint_eq(eosd_sessions_served(&fx.d), 2);
	o = es_ok(&fx, "file_read", NULL, "{\"workspace_session_id\":\"w1\",\"path\":\"k/one\"}");
	ck_assert_str_eq(es_str(o, "content"), "1");
	json_decref(o);
	free(p);
	ck_assert(asprintf(&p, "%s/a.txt", dir) > 0);
	got = es_slurp(p);
	ck_assert_str_eq(got, "uno\ntwo\nthree\n");
	o = es_ok(&fx, "inspect_workspace_session", NULL, "{\"workspace_session_id\":\"w2\"}");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(o, "mounts"), 0)), dir);
	json_decref(o);
}
END_TEST

/* fusermount3 -u of an extra mount: eosd notices, and a restart does not mount it again */
START_TEST(outside_unmount)
{
	cleanup_free char *dir = NULL, *p = NULL, *cmd = NULL, *list = NULL;
	json_t *o;

	es_create(&fx, "w1");
	ck_assert(asprintf(&dir, "%s/mnt", fx.dir) > 0);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	ck_assert(asprintf(&p, "{\"workspace_session_id\":\"w1\",\"path\":\"%s\"}", dir) > 0);
	json_decref(es_ok(&fx, "mount_workspace_session", NULL, p));
	ck_assert(asprintf(&list, "%s/sessions/sb/w1.mounts", fx.d.runtime_dir) > 0);
	ck_assert_int_eq(access(list, F_OK), 0);
	ck_assert(asprintf(&cmd, "fusermount3 -u '%s'", dir) > 0);
	ck_assert_int_eq(system(cmd), 0);
	for (int i = 0; i < 600; i++) { /* the serving thread sees the unmount */
		o = es_ok(&fx, "inspect_workspace_session", NULL,
			  "{\"workspace_session_id\":\"w1\"}");
		if (json_array_size(json_object_get(o, "mounts")) == 0) {
			json_decref(o);
			break;
		}
		json_decref(o);
		usleep(50000);
	}
	ck_assert_int_eq(access(list, F_OK), -1);
	es_close(&fx, true);
	es_reopen(&fx);
	o = es_ok(&fx, "inspect_workspace_session", NULL, "{\"workspace_session_id\":\"w1\"}");
	ck_assert_uint_eq(json_array_size(json_object_get(o, "mounts")), 0);
	json_decref(o);
}
END_TEST

START_TEST(destroy_all_of_sandbox)
{
	struct eos_session_info *v = NULL;
	struct eos_error err = { 0 };
	size_t n = 9;

	es_create(&fx, "w1");
	es_create(&fx, "w2");
	ck_assert_uint_eq(eosd_sessions_count(&fx.d, "sb"), 2);
	ck_assert_uint_eq(eosd_sessions_count(&fx.d, "other"), 0);
	ck_assert_msg(eosd_sessions_destroy_all(&fx.d, "sb", &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(eosd_sessions_count(&fx.d, "sb"), 0);
	ck_assert_int_eq(eos_store_session_list(fx.d.store, "sb", &v, &n, NULL), 0);
	ck_assert_uint_eq(n, 0);
	free(v);
}
END_TEST

struct writer {
	int session, thread;
};

/* Writes of many requests at once, in several sessions: each keeps its own operation. */
static void *
write_many(void *arg)
{
	const struct writer *w = arg;
	char args[256], rid[32];

	for (int i = 0; i < 10; i++) {
		snprintf(rid, sizeof(rid), "op-%d-%d-%d", w->session, w->thread, i);
		snprintf(
			args, sizeof(args),
			"{\"workspace_session_id\":\"c%d\",\"path\":\"t%d/f%d\",\"content\":\"%s\"}",
			w->session, w->thread, i, rid);
		json_decref(es_ok(&fx, "file_write", rid, args));
	}
	return NULL;
}

static int
owner_matches(void *ctx, const struct eos_delta_entry *e)
{
	cleanup_free char *want = NULL;
	const char *name = strrchr(e->path, '/');
	int *n = ctx, s, t, i;

	if (e->nranges == 0 || !name || sscanf(e->path, "t%d/f%d", &t, &i) != 2)
		return 0;
	ck_assert_int_eq(sscanf(e->ranges[0].owner, "operation:op-%d-%d-%d", &s, &t, &i), 3);
	ck_assert(asprintf(&want, "t%d/f%d", t, i) > 0);
	ck_assert_str_eq(e->path, want);
	(*n)++;
	return 0;
}

START_TEST(concurrent_writes_keep_their_owners)
{
	struct writer w[8];
	pthread_t t[8];

	for (int i = 0; i < 4; i++) {
		char id[8];

		snprintf(id, sizeof(id), "c%d", i);
		es_create(&fx, id);
	}
	for (int i = 0; i < 8; i++) {
		w[i] = (struct writer){ .session = i % 4, .thread = i };
		ck_assert_int_eq(pthread_create(&t[i], NULL, write_many, &w[i]), 0);
	}
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 4; i++) {
		struct eosd_session *s = NULL;
		char id[8];
		int n = 0;

		snprintf(id, sizeof(id), "c%d", i);
		ck_assert_int_eq(eosd_session_get(&fx.d, "sb", id, &s, NULL), 0);
		ck_assert_int_eq(eos_view_delta(s->view, owner_matches, &n, NULL), 0);
		eosd_session_put(&fx.d, s);
		ck_assert_int_eq(n, 20);
	}
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("eosd-session");
	TCase *tc = tcase_create("sessions");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_unchecked_fixture(tc, NULL, es_cleanup_leftovers);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, create_list_inspect_destroy);
	tcase_add_test(tc, create_refusals);
	tcase_add_test(tc, file_ops_in_session);
	tcase_add_test(tc, edit_refusals_change_nothing);
	tcase_add_test(tc, path_refusals);
	tcase_add_test(tc, head_write_blame);
	tcase_add_test(tc, write_attribution);
	tcase_add_test(tc, second_mount);
	tcase_add_test(tc, outside_unmount);
	tcase_add_test(tc, destroy_all_of_sandbox);
	tcase_add_test(tc, concurrent_writes_keep_their_owners);
	tcase_add_test(tc, sixteen_sessions);
	tcase_add_test(tc, restart_serves_every_session);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	es_init();
	return eos_test_run(suite());
}
