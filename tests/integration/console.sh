#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# eosd's web console (doc/console.md). First over curl: the page and its files on the TCP
# listener only, the login (cookie HttpOnly SameSite=Strict, a one-time link used once), the
# refusals of a wrong Host, a wrong or missing Origin, a missing CSRF token, a cookie after
# logout. Then in a real browser: tests/console/console.test.mjs drives Debian's chromium
# headless with npm playwright-core (installed from tests/console/package-lock.json into
# $top_builddir/tests/console by npm ci; no browser download) through every page — import with
# its progress, a session, a command's live output, stdin, Ctrl-C, publish, the timeline, blame
# colours, a rejected publish's conflicts, diff, events, trace, resources, downloads, squash,
# destroy, a login limited to one sandbox — and saves screenshots of each page (1280×800, narrow,
# light and dark) under $top_builddir/tests/console/screenshots/<user>/. A JavaScript error on
# any page fails it. Without node, npm or chromium this fails, it does not skip. As root, the
# same again as the unprivileged user.
# shellcheck disable=SC2317 # helpers called through the EXIT trap
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

EOSCTL=$top_builddir/cli/eosctl
CHROMIUM=/usr/bin/chromium
[[ -x $EOSCTL ]] || bail_out "'$EOSCTL' is missing (build it; set top_builddir)"
[[ -x $top_builddir/supervisor/eosd ]] || bail_out "eosd is missing (build it)"
command -v node >/dev/null || bail_out "node is needed (apt-get install nodejs npm)"
command -v npm >/dev/null || bail_out "npm is needed (apt-get install nodejs npm)"
[[ -x $CHROMIUM ]] || bail_out "$CHROMIUM is needed (apt-get install chromium; scripts/setup does)"
command -v curl >/dev/null || bail_out "curl is needed"
tap_tmpdir

export EOS_STATE_DIR=$T/state EOS_RUNTIME_DIR=$T/run
unset EOS_NO_AUTOSTART XDG_DATA_HOME XDG_RUNTIME_DIR EOS_STORE
trap eosd_cleanup EXIT
user=$(id -un)
shots=$top_builddir/tests/console/screenshots/$user

# playwright-core in $top_builddir/tests/console, installed once from the lock file (again when
# it changes), the test script beside it so that its import resolves there.
install_playwright() {
	local src=$top_srcdir/tests/console dir=$top_builddir/tests/console
	if [[ ! $src -ef $dir ]]; then
		mkdir -p "$dir" && cp "$src/package.json" "$src/package-lock.json" \
			"$src/console.test.mjs" "$dir/" 2>/dev/null ||
			cmp -s "$src/console.test.mjs" "$dir/console.test.mjs" || return 1
	fi
	if [[ -d $dir/node_modules/playwright-core ]] &&
		cmp -s "$src/package-lock.json" "$dir/node_modules/.eos-lock"; then
		return 0
	fi
	(cd "$dir" && { npm ci --offline --no-audit --no-fund || npm ci --no-audit --no-fund; }) >&2 ||
		return 1
	cp "$src/package-lock.json" "$dir/node_modules/.eos-lock"
}

eosctl() {
	"$EOSCTL" --json "$@"
}

# --- the daemon and the data -----------------------------------------------------------------

mkdir -p "$T/src/lib" "$T/other" "$T/doomed" "$T/limited"
printf 'one\ntwo\nthree\n' >"$T/src/a.txt"
for ((i = 0; i < 3000; i++)); do
	printf 'file %d\n' "$i" >"$T/src/lib/f$i.txt"
done
echo other >"$T/other/o.txt"
echo doomed >"$T/doomed/d.txt"
echo limited >"$T/limited/l.txt"

run eosctl console
expect_rc 0 "eosctl console starts eosd listening on loopback TCP and prints a login link"
link=$(json_get 'd["url"]' <<<"$out")
base=${link%%/#*}
check "the link is http://127.0.0.1:PORT/#login=CODE" \
	test -n "$(grep -E '^http://127\.0\.0\.1:[0-9]+/#login=[0-9a-f]{64}$' <<<"$link")"

for sb in other doomed limited; do
	eosctl sandbox create "$T/$sb" --id "$sb" >/dev/null || bail_out "cannot import '$sb'"
done
run eosctl token issue --sandbox limited --surface runtime
limited_rt=$(json_get 'd["token"]' <<<"$out")
run eosctl token issue --sandbox limited --surface observability
limited_obs=$(json_get 'd["token"]' <<<"$out")
[[ -n $limited_rt && -n $limited_obs ]] || bail_out "cannot issue the limited tokens"
mgmt=$(<"$EOS_STATE_DIR/tokens/management")
socket=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["socket"])' \
	"$EOS_STATE_DIR/eosd.json")

# --- over curl -------------------------------------------------------------------------------

# curl -s with the reply's headers in $T/h; the status in $out.
http() {
	run curl -s -o "$T/body" -D "$T/h" -w '%{http_code}' "$@"
}

http "$base/"
check "GET / serves the page (text/html with a Content-Security-Policy)" \
	grep -qi '^content-security-policy: default-src' "$T/h"
http "$base/console/app.js"
check "its modules are served from eosd itself (text/javascript)" \
	grep -qi '^content-type: text/javascript' "$T/h"
http --unix-socket "$socket" http://eosd/
check "the Unix socket serves no console ($out)" test "$out" = 404
http -H "Host: evil.example:80" "$base/"
check "a Host that is not the listener's is refused ($out): a DNS name pointed at 127.0.0.1" \
	test "$out" = 403

login() { # ORIGIN BODY
	http -H "Origin: $1" -H 'Content-Type: application/json' -d "$2" "$base/console/login"
}
login "http://evil.example" "{\"tokens\":[\"$mgmt\"]}"
check "a login from another Origin is refused ($out)" test "$out" = 403
http -H 'Content-Type: application/json' -d "{\"tokens\":[\"$mgmt\"]}" "$base/console/login"
check "a login without an Origin is refused ($out)" test "$out" = 403
login "$base" "{\"tokens\":[\"$(printf '0%.0s' {1..64})\"]}"
check "a login with an unknown token is refused ($out)" test "$out" = 401
login "$base" "{\"tokens\":[\"$mgmt\"]}"
check "a login with the management token succeeds ($out)" test "$out" = 200
cookie=$(sed -n 's/^[Ss]et-[Cc]ookie: *\(eos_console=[0-9a-f]*\);.*/\1/p' "$T/h" | tr -d '\r')
check "its cookie is HttpOnly and SameSite=Strict" \
	grep -Eqi '^set-cookie: eos_console=[0-9a-f]{64}; Path=/; HttpOnly; SameSite=Strict' "$T/h"
csrf=$(json_get 'd["csrf"]' <"$T/body")

v1() { # ORIGIN CSRF
	http -b "$cookie" -H "Origin: $1" ${2:+-H "X-EOS-CSRF: $2"} -d '{}' \
		"$base/v1/management/list_sandboxes"
}
v1 "$base" "$csrf"
check "the cookie, the page's Origin and the CSRF token run an operation ($out)" test "$out" = 200
v1 "http://evil.example" "$csrf"
check "a wrong Origin is refused ($out)" test "$out" = 403
check "... saying so" grep -q 'cross-site request refused' "$T/body"
v1 "$base" ""
check "a missing CSRF token is refused ($out)" test "$out" = 403
v1 "$base" "$(printf 'f%.0s' {1..64})"
check "a wrong CSRF token is refused ($out)" test "$out" = 403
http -b "$cookie" -H "Origin: $base" -H "X-EOS-CSRF: $csrf" -X OPTIONS "$base/v1/management/list_sandboxes"
check "no CORS preflight succeeds ($out)" test "$out" != 200
http -b "$cookie" -H "Origin: $base" -H "X-EOS-CSRF: $csrf" -d '{}' "$base/console/logout"
check "logout ($out)" test "$out" = 200
v1 "$base" "$csrf"
check "the cookie is worth nothing after logout ($out)" test "$out" = 401

run eosctl console
link2=$(json_get 'd["url"]' <<<"$out")
code=${link2##*#login=}
login "$base" "{\"code\":\"$code\"}"
check "a one-time code logs in ($out)" test "$out" = 200
login "$base" "{\"code\":\"$code\"}"
check "... once only ($out)" test "$out" = 401

# --- in the browser --------------------------------------------------------------------------

if install_playwright; then
	ok "playwright-core is installed from tests/console/package-lock.json (no browser download)"
else
	bail_out "npm ci of tests/console failed"
fi
rm -f "$shots"/*.png
mkdir -p "$shots" || bail_out "cannot make '$shots'"

run_browser() {
	local line status=''
	while IFS= read -r line; do
		case $line in
		'ok - '*) ok "${line#ok - }" ;;
		'not ok - '*) not_ok "${line#not ok - }" ;;
		'status '*) status=${line#status } ;;
		*) diag "$line" ;;
		esac
	done < <(CONSOLE_LINK=$link CONSOLE_SRC=$T/src CONSOLE_MANAGEMENT_TOKEN=$mgmt \
		CONSOLE_LIMITED_TOKENS="$limited_rt $limited_obs" CONSOLE_OTHER=other SHOTS=$shots \
		PLAYWRIGHT_BROWSERS_PATH=0 NODE_PATH=$top_builddir/tests/console/node_modules \
		HOME=$T timeout 900 node "$top_builddir/tests/console/console.test.mjs" 2>&1
		echo "status $?")
	if [[ $status == 0 ]]; then
		ok "the browser test ran to its end, exit status 0"
	else
		not_ok "the browser test ran to its end (exit status ${status:-none})"
	fi
}
run_browser
check "screenshots of the pages are kept in $shots" \
	test "$(find "$shots" -name '*.png' | wc -l)" -ge 30

# --- what the console added to the operations ------------------------------------------------

# L000002 is ws-b's base (the squash kept it), the head L000003 has ws-a's line 3
run eosctl file read a.txt --sandbox web --version L000002
check "file_read reads a published version older than the head" \
	test "$(json_get 'd["content"]' <<<"$out")" = $'one\nTWO by a command\nthree'
run eosctl file read a.txt --sandbox web --version L000002 --session ws-b
expect_rc_match 1 err "reads a published version" "... but not with a session"
http --unix-socket "$socket" -H "Authorization: Bearer $mgmt" -d '{"sandbox_id":"web","args":{"format":"tar"}}' \
	http://eosd/v1/management/export_changes
check "export_changes of a tar without dest is refused, naming dest ($out)" \
	grep -q "argument 'dest'" "$T/body"
http --unix-socket "$socket" -H "Authorization: Bearer $mgmt" -H 'Accept: application/octet-stream' \
	-d '{"sandbox_id":"web","args":{"format":"tar-zst"}}' http://eosd/v1/management/export_changes
check "... and answered as the body with Accept: application/octet-stream ($out)" \
	grep -qi '^content-disposition: attachment; filename="web-L[0-9]*-L[0-9]*.tar.zst"' "$T/h"
check "... a tar.zst, its result in X-EOS-Result" \
	sh -c "grep -qi '^x-eos-result: {\"sandbox_id\":\"web\"' '$T/h' && zstd -dc '$T/body' | tar t >/dev/null"

run eosctl daemon stop
expect_rc 0 "the test's eosd stops (its sessions unmounted)"
if ((EUID == 0)) && id -u "$EOS_TEST_USER" >/dev/null 2>&1; then
	mkdir -p "$top_builddir/tests/console/screenshots/$EOS_TEST_USER" &&
		chown "$EOS_TEST_USER" "$top_builddir/tests/console/screenshots/$EOS_TEST_USER"
fi
rerun_as_test_user "$0"
tap_done
