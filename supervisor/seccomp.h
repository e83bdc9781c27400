/* SPDX-License-Identifier: MIT */
/*
 * supervisor/seccomp: the deny list every command of a session runs under, built by eosd with
 * libseccomp (the only file that includes <seccomp.h>) and exported as BPF for eos-holder,
 * which loads it in each command after no_new_privs (supervisor/holder/harden.c).
 *
 * Default: allow. Denied with EPERM:
 *	mounts		mount, umount2, pivot_root, open_tree, move_mount, fsopen, fsconfig,
 *			fsmount, fspick, mount_setattr
 *	namespaces	unshare, setns; clone with any CLONE_NEW* flag
 *	tracing		ptrace, process_vm_readv, process_vm_writev, pidfd_getfd (all of them:
 *			with isolation "none" the processes a command could name include eosd)
 *	kernel		bpf, perf_event_open, userfaultfd, io_uring_setup, io_uring_enter,
 *			io_uring_register, keyctl, add_key, request_key, kexec_load,
 *			kexec_file_load, init_module, finit_module, delete_module, reboot,
 *			swapon, swapoff, open_by_handle_at
 *	devices		mknod and mknodat of a character or block device (fifos, sockets and
 *			regular files stay allowed)
 * clone3 fails with ENOSYS: its flags sit in memory a filter cannot read, so libc falls back
 * to clone, whose flags are checked. A system call of another ABI than the native one (i386
 * through int 0x80, x32 on x86_64) kills the process.
 *
 * Thread-safe (no shared state). The filter depends only on the architecture eosd runs on, so
 * eosd may build it once and reuse the bytes for every session.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/*
 * Build the filter: *ret (caller frees) receives struct sock_filter[] in host byte order,
 * *ret_len its size in bytes (a multiple of 8). 0 or -errno with err filled.
 */
int eosd_seccomp_build(uint8_t **ret, size_t *ret_len, struct eos_error *err);
