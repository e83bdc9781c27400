/* SPDX-License-Identifier: MIT */
/*
 * Tests of what a session's namespace isolates (supervisor/holder/): the workspace writable
 * and the host read-only, private /tmp and /dev/shm per holder, masked directories (by any path
 * that leads to them), the network (loopback only when isolated), the hostname; the hardening
 * of every command (the seccomp probe, no_new_privs, capabilities, rlimits); escape attempts;
 * isolation "none"; a refused user namespace explained; setup failures naming their step; the
 * protocol's encoding. Run as root and as an unprivileged user (tests/integration/holder.sh).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/path.h"

#include "supervisor/holder-client.h"
#include "supervisor/holder/holder-proto.h"
#include "tests/unit/holder-util.h"

static struct eosd_holder *
open_plan(const char *view, enum eosd_holder_network net, const char *const *masks, size_t n)
{
	struct eosd_holder_plan p;

	ht_plan_init(&p, view);
	p.network = net;
	p.masks = masks;
	p.n_masks = n;
	return ht_spawn(&p);
}

#define SH_OK(h, cmd) ck_assert_msg(ht_sh(h, cmd) == 0, "'%s': %s", cmd, ht_output())

START_TEST(workspace_writable_host_read_only)
{
	char *view = ht_view();
	char path[512], buf[16] = "";
	struct eosd_holder *h = open_plan(view, EOSD_HOLDER_SHARED, NULL, 0);
	struct stat sb;
	FILE *f;

	SH_OK(h, "echo data > /workspace/f && mkdir /workspace/d && cat f");
	snprintf(path, sizeof(path), "%s/f", view);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_uint_eq(sb.st_uid, getuid()); /* root inside is the daemon's uid */
	f = fopen(path, "re");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	ck_assert_str_eq(buf, "data\n");
	ck_assert_int_eq(ht_sh(h, "touch /usr/eos-probe"), 1);
	ck_assert_msg(strstr(ht_output(), "Read-only file system"), "%s", ht_output());
	ck_assert_int_eq(ht_sh(h, "touch /eos-probe"), 1);
	ck_assert_msg(strstr(ht_output(), "Read-only file system"), "%s", ht_output());
	SH_OK(h, "test -r /etc/passwd && test -x /usr/bin/env");
	/* the kernel's knobs stay out of reach (root inside may be root outside) */
	SH_OK(h, "! test -w /proc/sysrq-trigger && ! test -w /proc/sys/kernel/core_pattern");
	SH_OK(h, "! test -w /sys/kernel && ! test -w /proc/sys/vm/drop_caches");
	SH_OK(h, "test -c /dev/null && test -c /dev/urandom && test -c /dev/ptmx");
	SH_OK(h, "head -c 16 /dev/urandom | wc -c | grep -qx 16 && : > /dev/null");
	eosd_holder_free(h);
}
END_TEST

START_TEST(tmp_is_private_per_holder)
{
	struct eosd_holder *a = open_plan(ht_view(), EOSD_HOLDER_SHARED, NULL, 0);
	struct eosd_holder *b = open_plan(ht_view(), EOSD_HOLDER_SHARED, NULL, 0);
	char name[64], cmd[256];

	snprintf(name, sizeof(name), "eos-private-%d-%ld", (int)getpid(), (long)random());
	snprintf(cmd, sizeof(cmd), "for d in /tmp /dev/shm /run; do echo a > $d/%s; done", name);
	SH_OK(a, cmd);
	snprintf(cmd, sizeof(cmd), "for d in /tmp /dev/shm /run; do test -e $d/%s; done", name);
	SH_OK(a, cmd);
	snprintf(cmd, sizeof(cmd), "for d in /tmp /dev/shm /run; do ! test -e $d/%s; done", name);
	SH_OK(b, cmd);
	snprintf(cmd, sizeof(cmd), "/tmp/%s", name);
	ck_assert_int_eq(access(cmd, F_OK), -1);
	snprintf(cmd, sizeof(cmd), "/dev/shm/%s", name);
	ck_assert_int_eq(access(cmd, F_OK), -1);
	snprintf(cmd, sizeof(cmd), "/run/%s", name);
	ck_assert_int_eq(access(cmd, F_OK), -1);
	eosd_holder_free(a);
	eosd_holder_free(b);
}
END_TEST

static char *
make_masked_dir(void)
{
	char *dir = strdup("/var/tmp/eos-mask.XXXXXX");
	char path[512];
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(chmod(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/secret", dir);
	f = fopen(path, "we");
	ck_assert_ptr_nonnull(f);
	fputs("secret\n", f);
	fclose(f);
	return dir;
}

START_TEST(masked_dirs_are_invisible)
{
	char *state = make_masked_dir(), *run = make_masked_dir();
	char link[512], cmd[2048];
	const char *masks[3];
	struct eosd_holder *h;

	/* one mask named through a symlink, one missing: what counts is where a path leads */
	snprintf(link, sizeof(link), "%s.link", run);
	ck_assert_int_eq(symlink(run, link), 0);
	masks[0] = state;
	masks[1] = link;
	masks[2] = "/var/tmp/eos-missing-mask";
	h = open_plan(ht_view(), EOSD_HOLDER_SHARED, masks, 3);
	for (int i = 0; i < 2; i++) {
		const char *d = i ? run : state;

		snprintf(cmd, sizeof(cmd),
			 "test -d %s && test -z \"$(ls -A %s)\" && ! cat %s/secret && "
			 "! cat %s/secret && ! touch %s/x && ! cat /proc/1/root%s/secret",
			 d, d, d, i ? link : d, d, d);
		SH_OK(h, cmd);
	}
	eosd_holder_free(h);
	eos_rm_rf(state);
	eos_rm_rf(run);
	unlink(link);
}
END_TEST

/* The names in /sys/class/net of the host, sorted, joined by '\n'. */
static void
host_interfaces(char *out, size_t size)
{
	struct dirent **v = NULL;
	int n = scandir("/sys/class/net", &v, NULL, alphasort);
	size_t len = 0;

	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (v[i]->d_name[0] != '.')
			len += (size_t)snprintf(out + len, size - len, "%s\n", v[i]->d_name);
		free(v[i]);
	}
	free(v);
}

START_TEST(network_isolated_and_shared)
{
	struct eosd_holder *iso = open_plan(ht_view(), EOSD_HOLDER_ISOLATED, NULL, 0);
	struct eosd_holder *shared = open_plan(ht_view(), EOSD_HOLDER_SHARED, NULL, 0);
	char host[4096];

	SH_OK(iso, "ls /sys/class/net");
	ck_assert_str_eq(ht_output(), "lo\n");
	SH_OK(iso, "cat /sys/class/net/lo/flags");
	ck_assert_str_eq(ht_output(), "0x9\n"); /* IFF_UP | IFF_LOOPBACK */
	SH_OK(iso, "test $(grep -c : /proc/net/dev) = 1");
	host_interfaces(host, sizeof(host));
	SH_OK(shared, "ls /sys/class/net");
	ck_assert_str_eq(ht_output(), host);
	SH_OK(iso, "cat /proc/sys/kernel/hostname");
	ck_assert_str_eq(ht_output(), "eos-test\n");
	eosd_holder_free(iso);
	eosd_holder_free(shared);
}
END_TEST

START_TEST(every_command_is_hardened)
{
	const char *view = ht_view();
	struct eosd_holder *h = open_plan(view, EOSD_HOLDER_ISOLATED, NULL, 0);
	char cmd[8400];

	/* the probe runs from the workspace: a build tree under /tmp is hidden inside */
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s/seccomp-probe'",
		 ht_built("tests/integration/seccomp-probe"), view);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_msg(ht_sh(h, "/workspace/seccomp-probe") == 0, "%s", ht_output());
	ck_assert_msg(!strstr(ht_output(), "not ok"), "%s", ht_output());
	SH_OK(h, "grep -x 'NoNewPrivs:.1' /proc/self/status && "
		 "grep -x 'Seccomp:.2' /proc/self/status && "
		 "grep -x 'CapBnd:.00000000a00425fb' /proc/self/status && "
		 "test $(ulimit -c) = 0 && test $(ulimit -n) = 4096");
	eosd_holder_free(h);
}
END_TEST

START_TEST(escapes_fail)
{
	char host_file[] = "/var/tmp/eos-host-only.XXXXXX", cmd[512];
	struct eosd_holder *h = open_plan(ht_view(), EOSD_HOLDER_ISOLATED, NULL, 0);
	int fd = mkstemp(host_file);

	ck_assert_int_ge(fd, 0);
	close(fd);
	/* pid 1 is the session's init, out of a command's reach (it keeps capabilities a
	 * command has not: ptrace access is denied); a command sees its own root */
	SH_OK(h, "! ls /proc/1/root/ 2>/dev/null && ! ls /proc/1/cwd/ 2>/dev/null && "
		 "test -d /proc/self/root/workspace && ! ls /proc/$PPID/root/ 2>/dev/null && "
		 "! cat /proc/$PPID/environ 2>/dev/null && test -r /proc/$PPID/stat");
	SH_OK(h, "test $(ls /proc | grep -c '^[0-9]') -lt 8"); /* only the session's processes */
	SH_OK(h, "! mount -t tmpfs none /mnt 2>/dev/null && ! unshare -U true 2>/dev/null && "
		 "! unshare -m true 2>/dev/null && ! nsenter -t 1 -m true 2>/dev/null");
	SH_OK(h, "! umount /workspace 2>/dev/null && test -w /workspace");
	SH_OK(h, "ln -s /etc/passwd /workspace/l && ! sh -c 'echo x >> /workspace/l' 2>/dev/null");
	/* the host's file is visible read-only, never writable, through any path */
	snprintf(cmd, sizeof(cmd), "test -e %s && ! touch %s && ! touch /proc/1/root%s", host_file,
		 host_file, host_file);
	SH_OK(h, cmd);
	eosd_holder_free(h);
	unlink(host_file);
}
END_TEST

START_TEST(isolation_none)
{
	char *view = ht_view();
	char cmd[1024], ns[64] = "";
	struct eosd_holder_plan p;
	struct eosd_holder *h;
	ssize_t n = readlink("/proc/self/ns/user", ns, sizeof(ns) - 1);

	ck_assert_int_gt(n, 0);
	ht_plan_init(&p, view);
	p.isolation = EOSD_HOLDER_NONE;
	h = ht_spawn(&p);
	ck_assert_int_eq(eosd_holder_init_pid(h), 0);
	snprintf(cmd, sizeof(cmd),
		 "test \"$(pwd)\" = %s && test \"$(readlink /proc/self/ns/user)\" = '%s' && "
		 "test $(id -u) = %u && echo x > here && grep -x 'Seccomp:.2' /proc/self/status",
		 view, ns, (unsigned)getuid());
	SH_OK(h, cmd);
	snprintf(cmd, sizeof(cmd), "%s/here", view);
	ck_assert_int_eq(access(cmd, F_OK), 0);
	eosd_holder_free(h);
}
END_TEST

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* In a user namespace of its own (so that the host's limit is left alone), with
 * user.max_user_namespaces set to 0 there: the holder's namespaces are refused, the message
 * names the sysctl and the way out, and isolation "none" works. */
static int
denied_child(const char *view)
{
	struct eosd_holder_plan p;
	struct eos_error err = { 0 };
	struct eosd_holder *h = NULL;
	char line[64];
	uid_t uid = getuid();
	gid_t gid = getgid();
	int r;

	ck_assert_int_eq(unshare(CLONE_NEWUSER), 0);
	snprintf(line, sizeof(line), "0 %u 1", (unsigned)uid);
	write_file("/proc/self/uid_map", line);
	write_file("/proc/self/setgroups", "deny");
	snprintf(line, sizeof(line), "0 %u 1", (unsigned)gid);
	write_file("/proc/self/gid_map", line);
	write_file("/proc/sys/user/max_user_namespaces", "0");
	ht_plan_init(&p, view);
	ck_assert_int_eq(eosd_holder_spawn(ht_built("supervisor/holder/eos-holder"), &p, &h, &err),
			 0);
	r = eosd_holder_wait_ready(h, 60000, &err);
	eosd_holder_free(h);
	ck_assert_int_eq(r, -ENOSPC);
	ck_assert_msg(strstr(err.msg, "create the namespaces (unshare): No space left on device"),
		      "%s", err.msg);
	ck_assert_msg(strstr(err.msg, "sysctl user.max_user_namespaces is 0"), "%s", err.msg);
	ck_assert_msg(strstr(err.msg, "isolation: none"), "%s", err.msg);
	p.isolation = EOSD_HOLDER_NONE;
	h = ht_spawn(&p);
	ck_assert_int_eq(ht_sh(h, "echo ok"), 0);
	eosd_holder_free(h);
	return 0;
}

START_TEST(refused_user_namespace_is_explained)
{
	char *view = ht_view(); /* made here: this process's exit removes it */
	int st;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(denied_child(view));
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed (%d)", st);
}
END_TEST

static char *
fake_sysctls(const char *clone, const char *max, const char *aa)
{
	char *dir = strdup("/tmp/eos-sysctl.XXXXXX");
	char path[512];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/kernel", dir);
	ck_assert_int_eq(eos_mkdir_parents(path, 0755, true), 0);
	snprintf(path, sizeof(path), "%s/user", dir);
	ck_assert_int_eq(eos_mkdir_parents(path, 0755, true), 0);
	snprintf(path, sizeof(path), "%s/kernel/unprivileged_userns_clone", dir);
	if (clone)
		write_file(path, clone);
	snprintf(path, sizeof(path), "%s/user/max_user_namespaces", dir);
	if (max)
		write_file(path, max);
	snprintf(path, sizeof(path), "%s/kernel/apparmor_restrict_unprivileged_userns", dir);
	if (aa)
		write_file(path, aa);
	return dir;
}

static void
expect_explain(const char *clone, const char *max, const char *aa, int error, const char *want)
{
	char *dir = fake_sysctls(clone, max, aa);
	char out[512] = "";

	ck_assert(eosd_holder_userns_explain(dir, error, out, sizeof(out)));
	ck_assert_msg(strstr(out, want), "want '%s' in '%s'", want, out);
	ck_assert_msg(strstr(out, "isolation: none"), "%s", out);
	eos_rm_rf(dir);
	free(dir);
}

START_TEST(userns_explanations)
{
	bool root = geteuid() == 0;
	char out[512];

	expect_explain("1", "0", NULL, ENOSPC, "sysctl user.max_user_namespaces is 0");
	expect_explain(NULL, "5", NULL, ENOSPC, "user.max_user_namespaces is 5");
	/* root is exempt from the Debian and AppArmor switches: they are not blamed then */
	expect_explain("0", "100", NULL, EPERM,
		       root ? "the host refuses" : "sysctl kernel.unprivileged_userns_clone is 0");
	expect_explain(NULL, "100", "1", EPERM,
		       root ? "the host refuses"
			    : "sysctl kernel.apparmor_restrict_unprivileged_userns is 1");
	expect_explain(NULL, NULL, NULL, EPERM, "the host refuses to create user namespaces");
	ck_assert(!eosd_holder_userns_explain("/nonexistent", ENOENT, out, sizeof(out)));
}
END_TEST

START_TEST(setup_failures_name_their_step)
{
	struct eosd_holder_plan p;
	struct eos_error err = { 0 };
	struct eosd_holder *h = NULL;
	const char *path = ht_built("supervisor/holder/eos-holder");
	const char *masks[17];

	ht_plan_init(&p, "/nonexistent-eos-view");
	ck_assert_int_eq(eosd_holder_spawn(path, &p, &h, &err), 0);
	ck_assert_int_eq(eosd_holder_wait_ready(h, 60000, &err), -ENOENT);
	ck_assert_str_eq(err.msg,
			 "eos-holder: bind '/nonexistent-eos-view': No such file or directory");
	eosd_holder_free(h);
	/* isolation none checks the view too */
	p.isolation = EOSD_HOLDER_NONE;
	ck_assert_int_eq(eosd_holder_spawn(path, &p, &h, &err), 0);
	ck_assert_int_eq(eosd_holder_wait_ready(h, 60000, &err), -ENOENT);
	eosd_holder_free(h);
	/* a bad plan never reaches a holder */
	ht_plan_init(&p, "relative/view");
	ck_assert_int_eq(eosd_holder_spawn(path, &p, &h, &err), -EINVAL);
	ht_plan_init(&p, "/tmp");
	p.hostname = "bad host";
	ck_assert_int_eq(eosd_holder_spawn(path, &p, &h, &err), -EINVAL);
	ck_assert_str_eq(err.msg, "eos-holder plan: bad hostname");
	p.hostname = "ok";
	p.seccomp_len = 5;
	ck_assert_int_eq(eosd_holder_spawn(path, &p, &h, &err), -EINVAL);
	ht_plan_init(&p, "/tmp");
	for (int i = 0; i < 17; i++)
		masks[i] = "/var";
	p.masks = masks;
	p.n_masks = 17;
	ck_assert_int_eq(eosd_holder_spawn(path, &p, &h, &err), -EINVAL);
	/* a missing binary */
	ht_plan_init(&p, "/tmp");
	ck_assert_int_eq(eosd_holder_spawn("/nonexistent/eos-holder", &p, &h, &err), -ENOENT);
}
END_TEST

/* Every message type encodes and decodes to itself; every shorter or longer input fails. */
START_TEST(protocol_round_trip)
{
	static const uint8_t bpf[16] = { 6, 0, 0, 0, 0, 0, 0xff, 0x7f };
	const char *masks[] = { "/var/lib/eos", "/run/eos" };
	struct eos_hproto_msg in[6] = {
		{ .type = EOS_HPROTO_PLAN, .seq = 1 },
		{ .type = EOS_HPROTO_EXEC, .seq = 2, .cmd = 3 },
		{ .type = EOS_HPROTO_STARTED, .cmd = 3 },
		{ .type = EOS_HPROTO_PROC, .seq = 4, .cmd = 3 },
		{ .type = EOS_HPROTO_SETUP_FAILED },
		{ .type = EOS_HPROTO_SIGNAL, .seq = 9, .cmd = 3 },
	};
	struct eos_buf b, again;

	in[0].u.plan = (struct eos_hproto_plan){ .version = EOS_HPROTO_VERSION,
						 .isolation = 1,
						 .network = 1,
						 .uid = 1000,
						 .gid = 100,
						 .rlimit_nofile = 1 << 20,
						 .view = "/run/eos/v",
						 .hostname = "h-1.x",
						 .n_masks = 2,
						 .bpf = bpf,
						 .bpf_len = 16 };
	in[0].u.plan.masks[0] = masks[0];
	in[0].u.plan.masks[1] = masks[1];
	in[1].u.exec = (struct eos_hproto_exec){
		.flags = 3, .rows = 24, .cols = 80, .cwd = "a/b", .cmd = "echo 'x'", .n_env = 1
	};
	in[1].u.exec.env[0] = "A=b=c";
	in[2].u.started = (struct eos_hproto_started){ 100, 101, 2, 3, 1 };
	in[3].u.proc = (struct eos_hproto_proc){ 7, 8, 2, 8, 2, 'S', "sleep", "sleep 1000" };
	in[4].u.failure = (struct eos_hproto_failure){ EPERM, EOS_HPROTO_STEP_USERNS, "unshare" };
	in[5].u.signal.signo = 15;
	in[5].u.signal.scope = EOS_HPROTO_SCOPE_TREE;
	eos_buf_init(&b);
	eos_buf_init(&again);
	for (size_t i = 0; i < 6; i++) {
		struct eos_hproto_msg out;

		ck_assert_int_eq(eos_hproto_encode(&in[i], &b), 0);
		ck_assert_int_eq(eos_hproto_decode(b.data, b.len, &out), 0);
		ck_assert_int_eq(eos_hproto_encode(&out, &again), 0);
		ck_assert_uint_eq(again.len, b.len);
		ck_assert_int_eq(memcmp(again.data, b.data, b.len), 0);
		for (size_t n = 0; n < b.len; n++)
			ck_assert_int_lt(eos_hproto_decode(b.data, n, &out), 0);
		eos_buf_append_u8(&b, 0);
		ck_assert_int_eq(eos_hproto_decode(b.data, b.len, &out), -EBADMSG);
	}
	/* checks the decoder applies */
	in[1].u.exec.cwd = "a/../b";
	ck_assert_int_eq(eos_hproto_encode(&in[1], &b), 0);
	ck_assert_int_eq(eos_hproto_decode(b.data, b.len, &in[2]), -EBADMSG);
	in[1].u.exec.cwd = "";
	in[1].u.exec.env[0] = "=x";
	ck_assert_int_eq(eos_hproto_encode(&in[1], &b), 0);
	ck_assert_int_eq(eos_hproto_decode(b.data, b.len, &in[2]), -EBADMSG);
	in[0].u.plan.version = 2;
	ck_assert_int_eq(eos_hproto_encode(&in[0], &b), 0);
	ck_assert_int_eq(eos_hproto_decode(b.data, b.len, &in[2]), -EPROTO);
	eos_buf_release(&b);
	eos_buf_release(&again);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("holder-iso");
	TCase *tc = tcase_create("isolation");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, workspace_writable_host_read_only);
	tcase_add_test(tc, tmp_is_private_per_holder);
	tcase_add_test(tc, masked_dirs_are_invisible);
	tcase_add_test(tc, network_isolated_and_shared);
	tcase_add_test(tc, every_command_is_hardened);
	tcase_add_test(tc, escapes_fail);
	tcase_add_test(tc, isolation_none);
	tcase_add_test(tc, refused_user_namespace_is_explained);
	tcase_add_test(tc, userns_explanations);
	tcase_add_test(tc, setup_failures_name_their_step);
	tcase_add_test(tc, protocol_round_trip);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
