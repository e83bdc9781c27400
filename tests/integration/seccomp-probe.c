/* SPDX-License-Identifier: MIT */
/*
 * seccomp-probe: call every system call the commands' filter denies (supervisor/seccomp.h)
 * and check the documented answer: EPERM, ENOSYS for clone3, death by SIGSYS for a foreign
 * ABI; and that what stays allowed works (fork, a fifo).
 *
 *	seccomp-probe		run under the filter already (as a command inside a session)
 *	seccomp-probe --load	build the filter (eosd_seccomp_build()), load it, then probe
 *
 * Arguments are chosen so that without the filter the kernel answers something else when the
 * caller is root on the host (a missing path, a bad fd or flag: ENOENT, EBADF, EINVAL…) and
 * nothing happens: run as root with --load, every "ok" is the filter's work. Calls whose
 * success would change the caller (unshare, clone, ptrace) run in a child. Prints one line per
 * call; exits 0 when all are as documented.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervisor/seccomp.h"

#define NOPATH "/nonexistent-eos-probe/x"

static int failures;

static void
expect(const char *name, long rc, int err, int want)
{
	if (rc == -1 && err == want) {
		printf("ok %s: %s\n", name, strerror(want));
		return;
	}
	printf("not ok %s: returned %ld (%s), want %s\n", name, rc, rc == -1 ? strerror(err) : "-",
	       strerror(want));
	failures++;
}

#define PROBE(name, want, call)                 \
	do {                                    \
		errno = 0;                      \
		long rc_ = (long)(call);        \
		expect(name, rc_, errno, want); \
	} while (0)

/* Run fn in a child: its exit status is the errno it saw (0 for success), or 128 + signal. */
static int
in_child(long (*fn)(void))
{
	int st = 0;
	pid_t pid = fork();

	if (pid == 0) {
		errno = 0;
		_exit(fn() == -1 ? errno : 0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

static long
do_unshare(void)
{
	return unshare(CLONE_NEWUSER);
}

static long
do_clone_newuser(void)
{
	long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, NULL, NULL, 0);

	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);
	return pid > 0 ? 0 : -1;
}

static long
do_ptrace(void)
{
	return ptrace(PTRACE_TRACEME, 0, NULL, NULL);
}

static long
do_x32(void)
{
	return syscall(0x40000000 | SYS_getpid);
}

static long
do_int80(void)
{
#if defined(__x86_64__)
	long rc = 20; /* getpid in the i386 table */

	__asm__ volatile("int $0x80" : "+a"(rc) : : "memory");
	return rc;
#else
	return -1;
#endif
}

static void
child_probe(const char *name, long (*fn)(void), int want)
{
	int got = in_child(fn);

	if (got == want) {
		printf("ok %s: %s\n", name, want >= 128 ? strsignal(want - 128) : strerror(want));
		return;
	}
	printf("not ok %s: child ended with %d, want %d\n", name, got, want);
	failures++;
}

/*
 * The i386 ABI: the filter kills its callers (SIGSYS). A kernel whose i386 emulation is off
 * (CONFIG_IA32_EMULATION=n, ia32_emulation=false, some VM kernels) raises SIGSEGV at the int
 * 0x80 before any filter sees it: the call does not run either, but that answer is the
 * kernel's, said as such so that a run without the filter (holder.sh) does not count it.
 */
static void
probe_int80(void)
{
	int got = in_child(do_int80);

	if (got == 128 + SIGSEGV) {
		printf("kernel int 0x80 getpid: refused by the kernel itself, which has no i386 ABI "
		       "(%s)\n",
		       strsignal(SIGSEGV));
		return;
	}
	if (got == 128 + SIGSYS) {
		printf("ok int 0x80 getpid: %s\n", strsignal(SIGSYS));
		return;
	}
	printf("not ok int 0x80 getpid: child ended with %d, want %d\n", got, 128 + SIGSYS);
	failures++;
}

static void
probe_mounts(void)
{
	PROBE("mount", EPERM, mount("none", NOPATH, "tmpfs", 0, NULL));
	PROBE("umount2", EPERM, umount2(NOPATH, 0));
	PROBE("pivot_root", EPERM, syscall(SYS_pivot_root, NOPATH, NOPATH));
	PROBE("open_tree", EPERM, syscall(SYS_open_tree, AT_FDCWD, NOPATH, 0));
	PROBE("move_mount", EPERM, syscall(SYS_move_mount, -1, "", -1, "", 0));
	PROBE("fsopen", EPERM, syscall(SYS_fsopen, "nonexistent-eos-fs", 0));
	PROBE("fsconfig", EPERM, syscall(SYS_fsconfig, -1, 0, NULL, NULL, 0));
	PROBE("fsmount", EPERM, syscall(SYS_fsmount, -1, 0, 0));
	PROBE("fspick", EPERM, syscall(SYS_fspick, AT_FDCWD, NOPATH, 0));
	PROBE("mount_setattr", EPERM, syscall(SYS_mount_setattr, -1, "", 0, NULL, 0));
}

static void
probe_kernel(void)
{
	PROBE("setns", EPERM, setns(-1, 0));
	PROBE("process_vm_readv", EPERM, process_vm_readv(getpid(), NULL, 0, NULL, 0, 0));
	PROBE("process_vm_writev", EPERM, process_vm_writev(getpid(), NULL, 0, NULL, 0, 0));
	PROBE("pidfd_getfd", EPERM, syscall(SYS_pidfd_getfd, -1, 0, 0));
	PROBE("bpf", EPERM, syscall(SYS_bpf, -1, NULL, 0));
	PROBE("perf_event_open", EPERM, syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
	PROBE("userfaultfd", EPERM, syscall(SYS_userfaultfd, 0xffff));
	PROBE("io_uring_setup", EPERM, syscall(SYS_io_uring_setup, 0, NULL));
	PROBE("io_uring_enter", EPERM, syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0));
	PROBE("io_uring_register", EPERM, syscall(SYS_io_uring_register, -1, 0, NULL, 0));
	PROBE("keyctl", EPERM, syscall(SYS_keyctl, -1, 0, 0, 0, 0));
	PROBE("add_key", EPERM, syscall(SYS_add_key, NULL, NULL, NULL, 0, 0));
	PROBE("request_key", EPERM, syscall(SYS_request_key, NULL, NULL, NULL, 0));
	PROBE("kexec_load", EPERM, syscall(SYS_kexec_load, 0, 0, NULL, 0xffffffffUL));
	PROBE("kexec_file_load", EPERM,
	      syscall(SYS_kexec_file_load, -1, -1, 0, NULL, 0xffffffffUL));
	PROBE("init_module", EPERM, syscall(SYS_init_module, NULL, 0, NULL));
	PROBE("finit_module", EPERM, syscall(SYS_finit_module, -1, "", 0));
	PROBE("delete_module", EPERM, syscall(SYS_delete_module, "nonexistent_eos", O_NONBLOCK));
	PROBE("reboot", EPERM, syscall(SYS_reboot, 0, 0, 0, NULL));
	PROBE("swapon", EPERM, syscall(SYS_swapon, NOPATH, 0));
	PROBE("swapoff", EPERM, syscall(SYS_swapoff, NOPATH));
	PROBE("open_by_handle_at", EPERM, syscall(SYS_open_by_handle_at, -1, NULL, 0));
	PROBE("mknod char", EPERM, mknod(NOPATH, S_IFCHR | 0600, makedev(1, 3)));
	PROBE("mknod block", EPERM, mknod(NOPATH, S_IFBLK | 0600, makedev(7, 0)));
	PROBE("mknodat char", EPERM, mknodat(AT_FDCWD, NOPATH, S_IFCHR | 0600, makedev(1, 3)));
	PROBE("clone3", ENOSYS, syscall(SYS_clone3, NULL, 0));
}

static long
fork_nothing(void)
{
	return 0;
}

/* What stays allowed: a fifo (mknod of another type) and fork (clone without CLONE_NEW*). */
static void
probe_allowed(void)
{
	char dir[] = "/tmp/eos-probe.XXXXXX", path[64];

	if (!mkdtemp(dir)) {
		printf("not ok mkdtemp: %s\n", strerror(errno));
		failures++;
		return;
	}
	snprintf(path, sizeof(path), "%s/fifo", dir);
	if (mknod(path, S_IFIFO | 0600, 0) == 0)
		printf("ok mknod fifo: allowed\n");
	else {
		printf("not ok mknod fifo: %s\n", strerror(errno));
		failures++;
	}
	unlink(path);
	rmdir(dir);
	if (in_child(fork_nothing) == 0)
		printf("ok fork: allowed\n");
	else {
		printf("not ok fork\n");
		failures++;
	}
}

static int
load(void)
{
	struct eos_error err = { 0 };
	uint8_t *bpf = NULL;
	size_t len = 0;
	struct sock_fprog_local {
		unsigned short len;
		void *filter;
	} prog;

	if (eosd_seccomp_build(&bpf, &len, &err) < 0) {
		fprintf(stderr, "seccomp-probe: %s\n", err.msg);
		return -1;
	}
	prog.len = (unsigned short)(len / 8);
	prog.filter = bpf;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, 2 /* SECCOMP_MODE_FILTER */, &prog) < 0) {
		perror("seccomp-probe: load");
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--load") == 0 && load() < 0)
		return 2;
	probe_mounts();
	probe_kernel();
	child_probe("unshare(CLONE_NEWUSER)", do_unshare, EPERM);
	child_probe("clone(CLONE_NEWUSER)", do_clone_newuser, EPERM);
	child_probe("ptrace(PTRACE_TRACEME)", do_ptrace, EPERM);
	child_probe("x32 getpid", do_x32, 128 + SIGSYS);
	probe_int80();
	probe_allowed();
	printf("%d failure(s)\n", failures);
	return failures ? 1 : 0;
}
