#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Corruption (TAP): real stores damaged on disk, one kind of file at a time, 16 bytes flipped:
#   - the write-ahead log holding a completed import: every open fails naming the log and saying
#     what to do (eos-store recover); recover keeps the writes before the damage, the store opens
#     and fscks clean again; a torn tail (a crash while writing) still opens;
#   - a data block of the entries table, of the chunks table, of the refs table: the store opens,
#     fsck goes on past the damage (it still counts chunks and manifests), exits 1 and reports
#     the column family, the key range and the sandboxes it covers, and every path (sandbox,
#     version, path) whose content is unreadable: exactly the paths whose `cat` fails;
#   - a blob value: the same, for the file whose chunk it holds, in both sandboxes sharing it; gc
#     and destroy still work;
#   - the properties block of a table (RocksDB cannot open that file): the store still opens
#     (with a warning naming the file), what does not need the file reads as before, fsck
#     reports what the file holds;
#   - the MANIFEST: the open fails naming it and saying what to do.
# Tables and their column families come from each table's properties block (tables() below).

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_eos_store
tap_tmpdir

# src1: inline and small files (one chunk each, values kept in the chunks table), a 20 KB file
# (one chunk in a blob file), a 1.5 MB file (a manifest of chunks in blob files); src2: other
# files and a copy of the big one.
make_sources() {
	local i
	mkdir -p "$T/src1/small" "$T/src1/d" "$T/src2"
	for i in $(seq 0 7); do
		head -c $((300 + i * 500)) /dev/urandom >"$T/src1/small/f$i"
	done
	echo tiny >"$T/src1/d/tiny"
	head -c 20000 /dev/urandom >"$T/src1/mid"
	head -c 1500000 /dev/urandom >"$T/src1/big"
	head -c 5000 /dev/urandom >"$T/src2/other"
	cp "$T/src1/big" "$T/src2/big"
}

# $T/base: sandbox one imported, then two (whose import is still in the write-ahead log only);
# $T/base-flushed: the same opened once more (two's log is tables now).
make_base() {
	make_sources
	if ! eos_store --store "$T/base" import "$T/src1" --sandbox one >/dev/null ||
		! eos_store --store "$T/base" import "$T/src2" --sandbox two >/dev/null ||
		! cp -a "$T/base" "$T/base-flushed" ||
		! eos_store --store "$T/base-flushed" ls >/dev/null; then
		bail_out "cannot build the store"
	fi
}

# A fresh copy of the base store (with "flushed": of base-flushed) as $S.
fresh() {
	S=$T/s-$1
	rm -rf "$S"
	cp -a "$T/base${2:+-$2}" "$S" || bail_out "cannot copy the store"
}

# Python helpers: py flip|flip-middle|flip-table|damaged-paths|unreadable-paths|kinds|get ...
cat >"$T/helper.py" <<'EOF'
import glob, json, os, re, subprocess, sys

def flip(path, off, n=16):
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(n)
        f.seek(off)
        f.write(bytes(x ^ 0xff for x in b))

def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << shift
        if c < 0x80:
            return v, i
        shift += 7

def block(data, handle):
    """The contents of the block of data that handle (varint offset, varint size) names. Meta
    blocks are written uncompressed (trailer type 0)."""
    off, i = varint(handle, 0)
    size, i = varint(handle, i)
    if data[off + size] != 0:
        raise ValueError("a compressed meta block")
    return data[off:off + size]

def entries(b):
    """Key/value pairs of a block (prefix-compressed entries, then the restart array)."""
    restarts = int.from_bytes(b[-4:], "little")
    end, i, key = len(b) - 4 * (restarts + 1), 0, b""
    while i < end:
        shared, i = varint(b, i)
        own, i = varint(b, i)
        vlen, i = varint(b, i)
        key = key[:shared] + b[i:i + own]
        i += own
        yield key, b[i:i + vlen]
        i += vlen

def properties(path):
    """The table properties of the block-based table at path: the footer (53 bytes: checksum
    type, metaindex handle, index handle, padding, version, magic) names the metaindex, which
    names the properties block."""
    data = open(path, "rb").read()
    meta = block(data, data[len(data) - 52:])
    return dict(entries(block(data, dict(entries(meta))[b"rocksdb.properties"])))

def tables(store, cf):
    """Table files of column family cf, largest first: (path, data_size, file_size). The column
    family and the size of the data blocks come from each table's own properties (the info LOG,
    which once had them, gets only what DB::Open() writes)."""
    found = []
    for path in glob.glob(os.path.join(store, "db", "*.sst")):
        props = properties(path)
        if props.get(b"rocksdb.column.family.name") == cf.encode():
            data_size, _ = varint(props[b"rocksdb.data.size"], 0)
            found.append((path, data_size, os.path.getsize(path)))
    return sorted(found, key=lambda t: -t[2])

def run(tool, store, *args):
    return subprocess.run([tool, "--store", store, "--json", *args], capture_output=True)

def files(tool, store, sandbox, path=""):
    out = run(tool, store, "ls", "--sandbox", sandbox, path)
    for e in json.loads(out.stdout)["entries"]:
        p = (path + "/" if path else "") + e["name"]
        if e["kind"] == "file":
            yield p
        elif e["kind"] == "dir":
            yield from files(tool, store, sandbox, p)

cmd, args = sys.argv[1], sys.argv[2:]
if cmd == "flip":
    flip(args[0], int(args[1]))
elif cmd == "flip-middle":
    flip(args[0], os.path.getsize(args[0]) // 2)
elif cmd == "flip-content":
    # flip-content STORE SRC: flip where a blob file of STORE holds the middle of SRC's bytes
    # (random data is stored raw, so a chunk of it is found as is)
    data = open(args[1], "rb").read()
    needle = data[len(data) // 2:len(data) // 2 + 64]
    for path in glob.glob(os.path.join(args[0], "db", "*.blob")):
        at = open(path, "rb").read().find(needle)
        if at >= 0:
            flip(path, at)
            print(os.path.basename(path))
            break
    else:
        sys.exit("the bytes of '%s' are in no blob file" % args[1])
elif cmd == "flip-table":
    # flip-table STORE CF data|meta: in the middle of the data blocks of the largest table of CF,
    # or of what follows them (index, filter, properties: RocksDB reads those when it opens it)
    store, cf, where = args
    path, data, size = tables(store, cf)[0]
    flip(path, data // 2 if where == "data" else data + (size - 53 - data) // 2)
    print(os.path.basename(path))
elif cmd == "damaged-paths":
    # the damaged-path problems of the fsck document on stdin, as "sandbox:path" lines
    for p in json.load(sys.stdin).get("problems", []):
        m = re.match(r"sandbox '([^']*)' version L\d+: '([^']*)' is damaged", p["message"])
        if p["kind"] == "damaged-path" and m:
            print("%s:%s" % m.groups())
elif cmd == "unreadable-paths":
    # the files of sandboxes args[2:] that `cat` cannot read, as "sandbox:path" lines
    tool, store = args[0], args[1]
    for sandbox in args[2:]:
        for p in files(tool, store, sandbox):
            if run(tool, store, "cat", "--sandbox", sandbox, p).returncode != 0:
                print("%s:%s" % (sandbox, p))
elif cmd == "kinds":
    # the kinds of the problems of the fsck document on stdin, one per line
    for p in json.load(sys.stdin).get("problems", []):
        print(p["kind"], p["message"])
elif cmd == "get":
    d = json.load(sys.stdin)
    print(json.dumps(eval(args[0])))
EOF

py() {
	python3 "$T/helper.py" "$@"
}

# The fsck document of the last run has a problem of kind $1 whose message contains $2.
# shellcheck disable=SC2317 # called through check
has_problem() {
	py kinds <<<"$out" | grep -F -- "$1 " | grep -qF -- "$2"
}

# fsck exits 1, goes on past the damage (chunks and manifests counted), says what to do.
expect_fsck_damaged() {
	run eos_store --store "$S" --json fsck
	expect_rc_match 1 err "restore the store from a backup" "$1: fsck exits 1 and says what to do"
	check "$1: fsck goes on past the damage" \
		test "$(py get 'd["chunks"] > 0 and d["manifests"] > 0' <<<"$out")" = true
}

# The damaged-path reports are exactly the files `cat` cannot read (and there is at least one).
expect_paths_exact() {
	local reported unreadable
	reported=$(py damaged-paths <<<"$out" | sort)
	unreadable=$(py unreadable-paths "$EOS_STORE_BIN" "$S" one two | sort)
	if [[ -n $reported && $reported == "$unreadable" ]]; then
		ok "$1: fsck names every damaged path (sandbox, version, path)"
	else
		not_ok "$1: fsck names every damaged path (sandbox, version, path)"
		diag "reported:" "$reported" "unreadable:" "$unreadable"
	fi
}

make_base

# --- write-ahead log --------------------------------------------------------------------------

fresh wal
log=$(cd "$S/db" && ls ./*.log)
log=${log#./}
py flip-middle "$S/db/$log"
run eos_store --store "$S" ls
expect_rc_match 1 err "write-ahead log '$S/db/$log' is damaged" "wal: open fails naming the log"
expect_rc_match 1 err "run 'eos-store recover'" "wal: the open error says what to do"
run eos_store --store "$S" fsck
expect_rc_match 1 err "write-ahead log '$S/db/$log' is damaged" "wal: fsck fails naming the log"
run eos_store --store "$S" --json recover
expect_rc_match 0 out '"dropped": true' "wal: recover drops the damaged writes"
saved=$(py get 'd["saved"]' <<<"$out")
saved=${saved//\"/}
check "wal: recover kept a copy of the log" test -s "$S/$saved/$log"
run eos_store --store "$S" --json ls
check "wal: after recover the store opens with the import before the damage" json_has_sandbox one <<<"$out"
run eos_store --store "$S" fsck
expect_rc 0 "wal: after recover fsck is clean"

fresh torn
log=$(cd "$S/db" && ls ./*.log)
truncate -s -100 "$S/db/${log#./}"
run eos_store --store "$S" --json ls
check "wal: a torn tail (a crash while writing) still opens" json_has_sandbox one <<<"$out"
run eos_store --store "$S" fsck
expect_rc 0 "wal: fsck is clean after a torn tail"

# --- tables: data blocks ----------------------------------------------------------------------

fresh entries flushed
file=$(py flip-table "$S" entries data)
run eos_store --store "$S" --json ls
check "entries table: the store opens" json_has_sandbox one <<<"$out"
expect_fsck_damaged "entries table"
check "entries table: fsck reports the key range naming the file" \
	has_problem damaged-keys "'entries' keys"
check "entries table: ... and the file" has_problem damaged-keys "$file"
check "entries table: fsck names the damaged sandboxes" has_problem damaged-sandbox "sandbox '"

fresh chunks flushed
file=$(py flip-table "$S" chunks data)
expect_fsck_damaged "chunks table"
check "chunks table: fsck names the damaged chunks and the file" has_problem damaged-chunk "$file"
expect_paths_exact "chunks table"

fresh refs flushed
file=$(py flip-table "$S" refs data)
expect_fsck_damaged "refs table"
check "refs table: fsck reports the unreadable reference counts" \
	has_problem damaged-keys "'refs' keys"
check "refs table: ... naming the file" has_problem damaged-keys "$file"

# --- blob files -------------------------------------------------------------------------------

# A chunk of big (both sandboxes hold it) and the chunk of two's other.
fresh blob flushed
if ! py flip-content "$S" "$T/src1/big" >/dev/null || ! py flip-content "$S" "$T/src2/other" >/dev/null; then
	bail_out "cannot damage the blob file"
fi
expect_fsck_damaged "blob"
check "blob: fsck names the damaged chunk" has_problem damaged-chunk "Blob"
expect_paths_exact "blob"
check "blob: both sandboxes sharing the file are named" \
	test "$(py damaged-paths <<<"$out" | grep -c ':big$')" = 2
run eos_store --store "$S" gc
expect_rc 0 "blob: gc still works"
run eos_store --store "$S" destroy --sandbox two
expect_rc 0 "blob: destroy still works (it frees a damaged chunk)"
run eos_store --store "$S" --json fsck
check "blob: fsck still names the damaged path of the other sandbox" \
	test "$(py damaged-paths <<<"$out")" = "one:big"

# --- a table RocksDB cannot open --------------------------------------------------------------

fresh unopenable flushed
file=$(py flip-table "$S" refs meta)
run eos_store --store "$S" --json ls
check "unopenable table: the store still opens" json_has_sandbox two <<<"$out"
expect_rc_match 0 err "warning: store '$S' is damaged" "unopenable table: ... with a warning"
expect_rc_match 0 err "$file" "unopenable table: the warning names the file"
run eos_store --store "$S" cat --sandbox one d/tiny
expect_rc_match 0 out tiny "unopenable table: what does not need the file reads as before"
expect_fsck_damaged "unopenable table"
check "unopenable table: fsck reports the reference counts it holds" \
	has_problem damaged-keys "'refs' keys"
check "unopenable table: ... naming the file" has_problem damaged-keys "$file"

# --- MANIFEST ---------------------------------------------------------------------------------

fresh manifest flushed
manifest=$(cd "$S/db" && ls ./MANIFEST-*)
py flip-middle "$S/db/${manifest#./}"
run eos_store --store "$S" ls
expect_rc_match 1 err "${manifest#./}" "manifest: open fails naming the file"
expect_rc_match 1 err "restore it from a backup" "manifest: the error says what to do"
run eos_store --store "$S" fsck
expect_rc_match 1 err "${manifest#./}" "manifest: fsck fails naming the file"

tap_done
