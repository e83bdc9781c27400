/* SPDX-License-Identifier: MIT */
/* supervisor/seccomp: the commands' deny list, built with libseccomp (see seccomp.h). */
#include "supervisor/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

static const char *const denied[] = {
	/* mounts, old and new API */
	"mount",
	"umount",
	"umount2",
	"pivot_root",
	"open_tree",
	"move_mount",
	"fsopen",
	"fsconfig",
	"fsmount",
	"fspick",
	"mount_setattr",
	/* namespaces */
	"unshare",
	"setns",
	/* other processes' memory */
	"ptrace",
	"process_vm_readv",
	"process_vm_writev",
	"pidfd_getfd",
	/* kernel attack surface */
	"bpf",
	"perf_event_open",
	"userfaultfd",
	"io_uring_setup",
	"io_uring_enter",
	"io_uring_register",
	"keyctl",
	"add_key",
	"request_key",
	"open_by_handle_at",
	/* the machine */
	"kexec_load",
	"kexec_file_load",
	"init_module",
	"finit_module",
	"delete_module",
	"reboot",
	"swapon",
	"swapoff",
};

static const uint64_t new_ns_flags[] = {
	CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
	CLONE_NEWUSER, CLONE_NEWPID,	CLONE_NEWNET,
};

EOS_DEFINE_CLEANUP(scmp_filter_ctx, seccomp_release)

/* The syscall number of name on the native architecture, or -1 when it has none there. */
static int
resolve(const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);

	return nr == __NR_SCMP_ERROR || nr < 0 ? -1 : nr;
}

static int
deny_all(scmp_filter_ctx ctx, struct eos_error *err)
{
	for (size_t i = 0; i < EOS_ARRAY_SIZE(denied); i++) {
		int nr = resolve(denied[i]);
		int r;

		if (nr < 0)
			continue;
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
		if (r < 0)
			return eos_error_set(err, r, "seccomp: deny '%s'", denied[i]);
	}
	return 0;
}

/* clone with any CLONE_NEW* flag, mknod(at) of devices; clone3 as if it did not exist. */
static int
deny_args(scmp_filter_ctx ctx, struct eos_error *err)
{
	int r = 0;

	for (size_t i = 0; r == 0 && i < EOS_ARRAY_SIZE(new_ns_flags); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, new_ns_flags[i], new_ns_flags[i]));
	if (r < 0)
		return eos_error_set(err, r, "seccomp: deny clone with CLONE_NEW*");
	for (int t = 0; r == 0 && t < 2; t++) {
		uint64_t kind = t ? S_IFBLK : S_IFCHR;

		if (resolve("mknod") >= 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mknod), 1,
					     SCMP_A1(SCMP_CMP_MASKED_EQ, S_IFMT, kind));
		if (r == 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mknodat), 1,
					     SCMP_A2(SCMP_CMP_MASKED_EQ, S_IFMT, kind));
	}
	if (r < 0)
		return eos_error_set(err, r, "seccomp: deny mknod of devices");
	if (resolve("clone3") >= 0) {
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
		if (r < 0)
			return eos_error_set(err, r, "seccomp: clone3");
	}
	return 0;
}

/* libseccomp 2.5 exports to an fd only: through a memfd. */
static int export(scmp_filter_ctx ctx, uint8_t **ret, size_t *ret_len, struct eos_error *err)
{
	cleanup_close int fd = memfd_create("eos-seccomp", MFD_CLOEXEC);
	cleanup_free uint8_t *buf = NULL;
	struct stat sb;
	int r;

	if (fd < 0)
		return eos_error_set(err, eos_neg_errno(), "seccomp: memfd_create: %m");
	r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return eos_error_set(err, r, "seccomp: export the filter");
	if (fstat(fd, &sb) < 0)
		return eos_error_set(err, eos_neg_errno(), "seccomp: fstat: %m");
	if (sb.st_size <= 0 || sb.st_size % 8 || sb.st_size > 4096 * 8)
		return eos_error_set(err, -EOVERFLOW, "seccomp: filter of %lld bytes",
				     (long long)sb.st_size);
	buf = malloc((size_t)sb.st_size);
	if (!buf)
		return -ENOMEM;
	if (pread(fd, buf, (size_t)sb.st_size, 0) != sb.st_size)
		return eos_error_set(err, -EIO, "seccomp: read the filter back");
	*ret_len = (size_t)sb.st_size;
	*ret = TAKE_PTR(buf);
	return 0;
}

int
eosd_seccomp_build(uint8_t **ret, size_t *ret_len, struct eos_error *err)
{
	EOS_CLEANUP(seccomp_releasep) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r;

	if (!ctx)
		return eos_error_set(err, -ENOMEM, "seccomp: init");
	/* the holder sets no_new_privs itself, right before loading */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (r == 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r < 0)
		return eos_error_set(err, r, "seccomp: attributes");
	r = deny_all(ctx, err);
	if (r == 0)
		r = deny_args(ctx, err);
	if (r == 0)
		r = export(ctx, ret, ret_len, err);
	return r;
}
