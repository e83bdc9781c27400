#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The namespace holder (supervisor/holder/, doc/holder.md), as the caller and, as root, again as
# the unprivileged user:
#  - the Check tests test-holder (commands, signals, cancel, the subreaper, the kill chain,
#    shutdown, the protocol) and test-holder-iso (isolation, masks, network, hardening,
#    escapes, isolation none, refused user namespaces), over plain directories;
#  - the seccomp filter loaded by seccomp-probe on the host: as root, where the kernel alone
#    answers every probed call otherwise, each answer is the filter's;
#  - a real session view (an eosfs FUSE mount) as the workspace: reads, writes seen through
#    the mount, a tty, an isolated network.
# User namespaces must work here (as on CI's Debian 12): when they do not, this test fails.

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=fs-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

HOLDER_RUN=$top_builddir/tests/integration/holder-run
PROBE=$top_builddir/tests/integration/seccomp-probe

require_eos_store
tap_tmpdir
fs_require
for bin in "$HOLDER_RUN" "$PROBE" "$top_builddir/supervisor/holder/eos-holder" \
	"$top_builddir/tests/unit/test-holder" "$top_builddir/tests/unit/test-holder-iso"; do
	[[ -x $bin ]] || bail_out "'$bin' is missing (make check builds it)"
done
unshare -U true 2>/dev/null ||
	bail_out "user namespaces are not available to uid $EUID: the holder cannot run here"

unit() {
	local name=$1
	run env top_builddir="$top_builddir" "$top_builddir/tests/unit/$name"
	if ((rc == 0)); then
		ok "$name passes as $(id -un)"
	else
		not_ok "$name passes as $(id -un)"
		show_run
	fi
}

test_probe_on_host() {
	run "$PROBE" --load
	expect_rc 0 "the filter loaded on the host answers every denied call as documented"
	if ((EUID == 0)); then
		run "$PROBE"
		if [[ $(grep -c '^ok' <<<"$out") == 2 ]]; then
			ok "without the filter root gets other answers (the probe tells them apart)"
		else
			not_ok "without the filter root gets other answers (the probe tells them apart)"
			show_run
		fi
	fi
}

test_fuse_view() {
	local mnt=$T/view
	mkdir -p "$T/base/src"
	printf 'base line\n' >"$T/base/src/a.txt"
	fs_import "$T/store" sb "$T/base" || bail_out "import failed"
	fs_mount "$mnt" "$T/store" sb s1 || bail_out "eosfs mount failed"
	run "$HOLDER_RUN" --view "$mnt" -- \
		'cat src/a.txt && echo new >src/new.txt && mkdir -p d/e && echo x >d/e/f && ls'
	expect_rc 0 "a command reads and writes the eosfs view at /workspace"
	check "it read the base content" grep -qx 'base line' <<<"$out"
	check "its file shows in the view's mount" grep -qx new "$mnt/src/new.txt"
	check "its directories too" test -f "$mnt/d/e/f"
	echo host-edit >"$mnt/src/host.txt"
	run "$HOLDER_RUN" --tty --isolated --view "$mnt" -- 'cat src/host.txt; tty; ls /sys/class/net'
	expect_rc 0 "a tty command in an isolated network over the view"
	check "it sees an edit made through the mount" grep -q host-edit <<<"$out"
	check "it has a pty of the session's own devpts" grep -q '^/dev/pts/0' <<<"$out"
	run "$HOLDER_RUN" --view "$mnt" -- 'rm src/a.txt && ! test -e src/a.txt'
	expect_rc 0 "a command removes a base file in the view"
	check "the removal shows in the mount" not test -e "$mnt/src/a.txt"
	fs_umount "$mnt" || not_ok "eosfs unmounts"
}

unit test-holder
unit test-holder-iso
test_probe_on_host
test_fuse_view
rerun_as_test_user "${BASH_SOURCE[0]}"
tap_done
