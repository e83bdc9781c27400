#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# scripts/check-includes.sh: enforce the include layering of STYLE.md rules 5 and 8.
#
#   common/      includes only common/ (libc-only helpers)
#   store/       includes only common/ and store/
#   fs/          common/, store/store.h and fs/
#   supervisor/  common/, store/store.h, fs/view.h and supervisor/; the holder binary
#                supervisor/holder/ only common/ and supervisor/holder/ (libc only: no store,
#                no view, nothing of eosd)
#   cli/         common/ and cli/ (eosctl talks to eosd only over the wire); the offline tool
#                cli/eos-store* also the public headers store/store.h and fs/view.h
#   bench/       only the public headers store/store.h, fs/view.h and common/*, and bench/
#   tests/       anything of the project
# Every project include is written from the top ("store/kv.h", not "kv.h"). Each foreign library
# is wrapped in one file: <rocksdb/...> only in store/kv.c, <zstd.h> only in store/codec.c,
# <openssl/...> only in common/digest.c, <archive.h> only in store/archive.c, <fuse*.h> only in
# fs/ops-internal.h (shared by fs/ops.c and fs/fuse-mount.c), <git2.h> and <git2/...> only in
# store/git.c, <seccomp.h> only in supervisor/seccomp.c.
# Finally the public headers (store/store.h, fs/view.h, common/*.h) must compile on their own.
#
# Environment: EOS_BUILD_DIR (where config.h is; default: the current directory when it holds
# config.h, else build/), CC (default cc).
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
violations=0

violation() {
	printf 'check-includes: %s\n' "$*"
	violations=$((violations + 1))
}

# The project includes allowed for file $2 in directory $1, as a regular expression on the path.
allowed_for() {
	case $1 in
	common) echo '^common/' ;;
	store) echo '^(common|store)/' ;;
	fs) echo '^(common/|store/store\.h$|fs/)' ;;
	supervisor)
		case $2 in
		supervisor/holder/*) echo '^(common/|supervisor/holder/)' ;;
		*) echo '^(common/|store/store\.h$|fs/view\.h$|supervisor/)' ;;
		esac
		;;
	cli)
		case $2 in
		cli/eos-store*) echo '^(common/|store/store\.h$|fs/view\.h$|cli/)' ;;
		*) echo '^(common|cli)/' ;;
		esac
		;;
	bench) echo '^(common/|store/store\.h$|fs/view\.h$|bench/)' ;;
	*) echo '.' ;;
	esac
}

# The only file that may include foreign header $1 (<...> form), or nothing when unrestricted.
owner_of() {
	case $1 in
	rocksdb/*) echo store/kv.c ;;
	zstd.h | zstd_errors.h | zdict.h) echo store/codec.c ;;
	openssl/*) echo common/digest.c ;;
	git2.h | git2/*) echo store/git.c ;;
	archive.h | archive_entry.h) echo store/archive.c ;;
	fuse_lowlevel.h | fuse.h | fuse_common.h | fuse3/*) echo fs/ops-internal.h ;;
	seccomp.h) echo supervisor/seccomp.c ;;
	esac
}

# Print "line<TAB>form<TAB>header" for each #include of file $1 (form is " or <).
includes_of() {
	local directive='^([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*'
	grep -n -E '^[[:space:]]*#[[:space:]]*include' "$1" |
		sed -E "s/${directive}([<\"])([^>\"]*)[>\"].*/\\1\\t\\2\\t\\3/"
}

check_file() {
	local file=$1 dir=${1%%/*} allowed line form header owner
	allowed=$(allowed_for "$dir" "$file")
	while IFS=$'\t' read -r line form header; do
		if [[ $form == '<' ]]; then
			owner=$(owner_of "$header")
			[[ -z $owner || $owner == "$file" ]] ||
				violation "$file:$line: <$header> may only be included by $owner"
			continue
		fi
		[[ $header == config.h ]] && continue
		if [[ $header != */* ]]; then
			violation "$file:$line: \"$header\": write project includes from the top (\"dir/$header\")"
		elif [[ ! $header =~ $allowed ]]; then
			violation "$file:$line: $dir/ may not include \"$header\""
		fi
	done < <(includes_of "$top/$file")
}

list_sources() {
	if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -C "$top" ls-files -co --exclude-standard -- '*.c' '*.h'
	else
		(cd "$top" && find . \( -path ./.git -o -path './build*' \) -prune -o -type f \
			\( -name '*.c' -o -name '*.h' \) -print | sed 's|^\./||' | sort)
	fi
}

find_build_dir() {
	if [[ -n ${EOS_BUILD_DIR:-} ]]; then
		[[ $EOS_BUILD_DIR == /* ]] && echo "$EOS_BUILD_DIR" || echo "$top/$EOS_BUILD_DIR"
	elif [[ -e config.h ]]; then
		pwd
	else
		echo "$top/build"
	fi
}

# Each public header compiles as the only include of a translation unit.
check_standalone() {
	local build_dir header cc=${CC:-cc} config=()
	build_dir=$(find_build_dir)
	[[ -e $build_dir/config.h ]] && config=(-include "$build_dir/config.h")
	for header in store/store.h fs/view.h common/*.h; do
		[[ -e $top/$header ]] || continue
		printf '#include "%s"\n' "$header" |
			"$cc" -std=gnu11 -fsyntax-only -Wall -Wextra -Werror -I"$top" -I"$build_dir" \
				"${config[@]}" -x c - ||
			violation "$header does not compile on its own"
	done
}

main() {
	local file
	while IFS= read -r file; do
		check_file "$file"
	done < <(list_sources)
	check_standalone
	if ((violations > 0)); then
		printf 'check-includes: %d violation(s)\n' "$violations"
		exit 1
	fi
}

main "$@"
