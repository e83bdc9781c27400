# SPDX-License-Identifier: MIT
"""Trees for tests/integration/crash-view.py: where its files live, the 16-byte lines its files
are made of, a tree read into path -> Node, and the differences of two trees."""
import json
import os
import shutil
import stat
import subprocess

LINE = 16
WRITERS = {
    "w1": "new files",
    "w2": "a file held open",
    "w3": "imported small files",
    "w4": "the 3 MB imported file",
    "w5": "namespace operations",
}


def base_line(fid, i):
    return b"b%04dl%06d---\n" % (fid, i)


def writer_lines(wid, rnd, seq, n):
    head = b"%s%03d%05d" % (wid.encode(), rnd % 1000, seq % 100000)
    return b"".join(head + b"%05d\n" % (i % 100000) for i in range(n))


def load_json(path, default):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return default


def save_json(path, value):
    with open(path + ".tmp", "w") as f:
        json.dump(value, f)
    os.rename(path + ".tmp", path)


def cp_tree(src, dst):
    shutil.rmtree(dst, ignore_errors=True)
    subprocess.run(["cp", "-a", src, dst], check=True)


class Paths:
    def __init__(self, a):
        self.a = a
        self.work = a.work
        self.mnt = a.mnt
        self.base = os.path.join(a.work, "base")
        self.model = os.path.join(a.work, "model")
        self.alt = os.path.join(a.work, "alt")
        self.state_dir = os.path.join(a.work, "state")

    def state(self, name):
        return os.path.join(self.state_dir, name + ".json")

    def acks(self, rnd, wid):
        return os.path.join(self.state_dir, f"r{rnd:04d}-{wid}.acks")

    def errs(self, rnd, wid):
        return os.path.join(self.state_dir, f"r{rnd:04d}-{wid}.err")


class Node:
    __slots__ = ("kind", "mode", "data", "target", "ino", "nlink")

    def __init__(self, kind, mode=0, data=b"", target="", ino=0, nlink=1):
        self.kind, self.mode, self.data = kind, mode, data
        self.target, self.ino, self.nlink = target, ino, nlink

    def describe(self):
        if self.kind == "file":
            return f"file {self.mode:04o} of {len(self.data)} bytes"
        if self.kind == "symlink":
            return f"symlink to '{self.target}'"
        return f"{self.kind} {self.mode:04o}" if self.kind == "dir" else self.kind


def read_node(path, data=True):
    try:
        st = os.lstat(path)
    except OSError as e:
        return Node(f"unreadable ({e.strerror})")
    mode = stat.S_IMODE(st.st_mode)
    try:
        if stat.S_ISDIR(st.st_mode):
            return Node("dir", mode)
        if stat.S_ISLNK(st.st_mode):
            return Node("symlink", target=os.readlink(path))
        if stat.S_ISREG(st.st_mode) and not data:
            return Node("file", mode, ino=st.st_ino, nlink=st.st_nlink)
        if stat.S_ISREG(st.st_mode):
            with open(path, "rb") as f:
                return Node("file", mode, f.read(), ino=st.st_ino, nlink=st.st_nlink)
    except OSError as e:
        return Node(f"unreadable ({e.strerror})")
    return Node(f"other (mode {st.st_mode:o})")


def scan(root, data=True):
    """Every path below root (relative, '/'-separated) -> Node (without the bytes of files
    unless data)."""
    tree = {}

    def walk(rel):
        try:
            names = sorted(os.listdir(os.path.join(root, rel)))
        except OSError as e:
            tree[rel + "/*"] = Node(f"unlistable ({e.strerror})")
            return
        for name in names:
            r = f"{rel}/{name}" if rel else name
            node = read_node(os.path.join(root, r), data)
            tree[r] = node
            if node.kind == "dir":
                walk(r)

    if os.path.isdir(root):
        walk("")
    return tree


def link_groups(tree):
    groups = {}
    for p, n in tree.items():
        if n.kind == "file":
            groups.setdefault(n.ino, []).append(p)
    return sorted(sorted(g) for g in groups.values() if len(g) > 1)


class Lines:
    """The base tree's lines, to say what a view holds where it differs ('imported bytes')."""

    def __init__(self, base):
        self.base, self.set = base, None

    def is_base(self, line):
        if self.set is None:
            self.set = set()
            for n in scan(self.base).values():
                if n.kind == "file":
                    self.set.update(split_lines(n.data))
        return line in self.set


def split_lines(data):
    return [data[i:i + LINE] for i in range(0, len(data), LINE)]


def content_diff(got, want, lines):
    msg = []
    if len(got) != len(want):
        msg.append(f"size {len(got)}, expected {len(want)}")
    common = min(len(got), len(want))
    bad = [i for b in range(0, common, 4096) if got[b:b + 4096] != want[b:b + 4096]
           for i in range(b, min(b + 4096, common), LINE) if got[i:i + LINE] != want[i:i + LINE]]
    if bad:
        kinds = {"imported": 0, "zero": 0, "other": 0}
        for i in bad:
            line = got[i:i + LINE]
            if line == b"\0" * len(line):
                kinds["zero"] += 1
            elif lines.is_base(line):
                kinds["imported"] += 1
            else:
                kinds["other"] += 1
        held = ", ".join(f"{v} {k}" for k, v in kinds.items() if v)
        msg.append(f"{len(bad)} of {(common + LINE - 1) // LINE} 16-byte lines differ (first at "
                   f"byte {bad[0]}); the view holds {held} lines there")
    return "; ".join(msg)


def compare(got, want, lines, links=True):
    """Differences of tree got from tree want: [(path, message)]."""
    diffs = []
    for p in sorted(set(got) | set(want)):
        g, w = got.get(p), want.get(p)
        if g is None:
            diffs.append((p, f"missing (expected {w.describe()})"))
        elif w is None:
            diffs.append((p, f"unexpected {g.describe()}"))
        elif g.kind != w.kind:
            diffs.append((p, f"{g.describe()}, expected {w.describe()}"))
        else:
            if g.kind in ("file", "dir") and g.mode != w.mode:
                diffs.append((p, f"mode {g.mode:04o}, expected {w.mode:04o}"))
            if g.kind == "file" and g.data != w.data:
                diffs.append((p, content_diff(g.data, w.data, lines)))
            if g.kind == "symlink" and g.target != w.target:
                diffs.append((p, f"symlink to '{g.target}', expected '{w.target}'"))
            if links and g.kind == "file" and g.nlink != w.nlink:
                diffs.append((p, f"{g.nlink} links, expected {w.nlink}"))
    if links and link_groups(got) != link_groups(want):
        diffs.append(("(hard links)", f"groups {link_groups(got)}, expected {link_groups(want)}"))
    return diffs
