/* SPDX-License-Identifier: MIT */
/*
 * supervisor/holder/harden: what the shell's process does to itself just before exec.
 *
 *	rlimits		core 0; nofile and nproc from the plan (never above the hard limit)
 *	capabilities	the bounding set cut to keep_caps (roughly Docker's default set, without
 *			CAP_MKNOD); ambient set cleared. Root inside the namespace execs with
 *			exactly those; an unprivileged process has none to drop.
 *	no_new_privs	set: no setuid, setgid or file capabilities through exec
 *	seccomp		the filter eosd built (supervisor/seccomp.c), loaded last
 */
#include <errno.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "supervisor/holder/holder.h"

static const int keep_caps[] = {
	CAP_CHOWN,	CAP_DAC_OVERRIDE, CAP_FOWNER,  CAP_FSETID,	     CAP_KILL,
	CAP_SETGID,	CAP_SETUID,	  CAP_SETPCAP, CAP_NET_BIND_SERVICE, CAP_NET_RAW,
	CAP_SYS_CHROOT, CAP_AUDIT_WRITE,  CAP_SETFCAP,
};

static bool
kept(int cap)
{
	for (size_t i = 0; i < sizeof(keep_caps) / sizeof(keep_caps[0]); i++)
		if (keep_caps[i] == cap)
			return true;
	return false;
}

static int
cap_limit(int resource, uint64_t want)
{
	struct rlimit rl;

	if (getrlimit(resource, &rl) < 0)
		return -errno;
	if (want < rl.rlim_max || rl.rlim_max == RLIM_INFINITY)
		rl.rlim_max = (rlim_t)want;
	rl.rlim_cur = rl.rlim_max;
	return setrlimit(resource, &rl) < 0 ? -errno : 0;
}

static int
set_rlimits(const struct eos_hproto_plan *plan, struct holder_failure *f)
{
	struct rlimit zero = { 0, 0 };
	int r;

	if (setrlimit(RLIMIT_CORE, &zero) < 0)
		return holder_fail(f, errno, 0, "set RLIMIT_CORE");
	if (plan->rlimit_nofile && (r = cap_limit(RLIMIT_NOFILE, plan->rlimit_nofile)) < 0)
		return holder_fail(f, -r, 0, "set RLIMIT_NOFILE");
	if (plan->rlimit_nproc && (r = cap_limit(RLIMIT_NPROC, plan->rlimit_nproc)) < 0)
		return holder_fail(f, -r, 0, "set RLIMIT_NPROC");
	return 0;
}

static int
drop_caps(struct holder_failure *f)
{
	for (int cap = 0; cap < 64; cap++) {
		if (kept(cap))
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0)
			continue;
		if (errno == EINVAL)
			break; /* past the kernel's last capability */
		/* without CAP_SETPCAP there is nothing to drop: no_new_privs keeps it so */
		if (errno == EPERM && geteuid() != 0)
			break;
		return holder_fail(f, errno, 0, "drop capability %d", cap);
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return holder_fail(f, errno, 0, "clear the ambient capabilities");
	return 0;
}

static int
load_seccomp(const struct eos_hproto_plan *plan, struct holder_failure *f)
{
	static struct sock_filter insns[EOS_HPROTO_BPF_MAX / sizeof(struct sock_filter)];
	struct sock_fprog prog = { .len = (unsigned short)(plan->bpf_len / sizeof(insns[0])),
				   .filter = insns };

	/* the plan's bytes sit unaligned in the message */
	memcpy(insns, plan->bpf, plan->bpf_len);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return holder_fail(f, errno, 0, "load the seccomp filter");
	return 0;
}

int
holder_harden(const struct eos_hproto_plan *plan, struct holder_failure *f)
{
	int r = set_rlimits(plan, f);

	if (r == 0)
		r = drop_caps(f);
	if (r == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		r = holder_fail(f, errno, 0, "set no_new_privs");
	if (r == 0)
		r = load_seccomp(plan, f);
	return r;
}
