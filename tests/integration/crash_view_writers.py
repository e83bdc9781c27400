# SPDX-License-Identifier: MIT
"""The writers of tests/integration/crash-view.py. Each runs in its own subtree wN of the view,
with EOS_OPERATION=wN, until a call fails (eosfs was killed). Writer.do runs one call on the
view; once it returned, applies the same operation to the model and logs it. The call that
failed is recorded with the model as it would be had it taken effect (alt/wN)."""
import errno
import os
import random
import time

from crash_view_tree import LINE, cp_tree, load_json, save_json, scan, writer_lines

HELD_CAP = 512 * 1024
BIG_CAP = 3584 * 1024
NEW_FILES_CAP = 10
NAMESPACE_CAP = 80


class Stop(Exception):
    """The writer's operation failed: eosfs is gone (or something is wrong); stop."""


def model_pwrite(path, data, off):
    fd = os.open(path, os.O_WRONLY)
    try:
        done = 0
        while done < len(data):
            done += os.pwrite(fd, data[done:], off + done)
    finally:
        os.close(fd)


class Writer:
    def __init__(self, a, paths):
        self.wid, self.round, self.p = a.wid, a.round, paths
        self.rng = random.Random(f"{a.seed}/{a.round}/{a.wid}")
        self.state = load_json(paths.state(a.wid), {"next": 0})
        self.state.pop("inflight", None)
        self.state["acked"] = 0
        self.seq = 0
        self.log = os.open(paths.acks(a.round, a.wid),
                           os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)

    def v(self, rel):
        return os.path.join(self.p.mnt, rel)

    def m(self, rel):
        return os.path.join(self.p.model, rel)

    def do(self, desc, call, apply=None, write=None):
        """Run call on the view; once it returned, apply(root, its result) to the model and log
        the ack. write: [path, offset, length] of a write."""
        self.seq += 1
        try:
            ret = call()
        except OSError as e:
            self.stop(desc, apply, write, e)
        if apply:
            apply(self.p.model, ret)
        self.state["acked"] += 1
        if write:
            desc += f" = {ret}"
        os.write(self.log, b"%.6f %d %s\n" % (time.monotonic(), self.seq, desc.encode()))
        return ret

    def stop(self, desc, apply, write, e):
        t = time.monotonic()
        alt = os.path.join(self.p.alt, self.wid)
        os.makedirs(self.p.alt, exist_ok=True)
        cp_tree(self.m(self.wid), alt)
        if apply:
            try:
                apply(self.p.alt, None)
            except OSError:
                pass  # the operation fails on the model too: its only outcome is no change
        self.state["inflight"] = {"desc": desc, "write": write, "time": t, "seq": self.seq,
                                  "error": f"{errno.errorcode.get(e.errno, e.errno)} "
                                           f"({e.strerror})"}
        save_json(self.p.state(self.wid), self.state)
        raise Stop()

    def pwrite(self, fd, rel, off, data):
        """Write data at off: each call that returns acknowledges the bytes it counts (a write
        can come back short: the kernel ends a request at a partial page it did not have)."""
        done = 0
        while done < len(data):
            at, chunk = off + done, data[done:]
            done += self.do(f"write {rel} {at}+{len(chunk)}", lambda: os.pwrite(fd, chunk, at),
                            lambda root, n: model_pwrite(os.path.join(root, rel),
                                                         chunk if n is None else chunk[:n], at),
                            write=[rel, at, len(chunk)])

    def lines(self, n):
        return writer_lines(self.wid, self.round, self.seq + 1, n)

    def open(self, rel, flags, mode=0o644):
        def create(root, _):
            if flags & os.O_CREAT and not os.path.lexists(os.path.join(root, rel)):
                os.close(os.open(os.path.join(root, rel), flags, mode))

        return self.do(f"open {rel} {flags:o} {mode:o}",
                       lambda: os.open(self.v(rel), flags, mode), create)

    def close(self, fd, rel):
        self.do(f"close {rel}", lambda: os.close(fd))

    def unlink(self, rel):
        self.do(f"unlink {rel}", lambda: os.unlink(self.v(rel)),
                lambda root, _: os.unlink(os.path.join(root, rel)))

    def rename(self, src, dst):
        self.do(f"rename {src} {dst}", lambda: os.rename(self.v(src), self.v(dst)),
                lambda root, _: os.rename(os.path.join(root, src), os.path.join(root, dst)))

    def truncate(self, rel, size):
        self.do(f"truncate {rel} {size}", lambda: os.truncate(self.v(rel), size),
                lambda root, _: os.truncate(os.path.join(root, rel), size))

    def size(self, rel):
        return os.lstat(self.m(rel)).st_size


def entries(root, top):
    """(dirs, files, symlinks) below root/top, as paths relative to root (top included)."""
    dirs, files, links = [top], [], []
    for rel, n in scan(os.path.join(root, top), data=False).items():
        path = f"{top}/{rel}"
        {"dir": dirs, "file": files, "symlink": links}.get(n.kind, []).append(path)
    return dirs, files, links


def run_new_files(w):
    """w1: create, write in several calls, maybe fsync, close; some saved editor-style."""
    _, files, _ = entries(w.p.model, "w1")
    for rel in files:
        if os.path.basename(rel).startswith(".tmp") or w.size(rel) == 0:
            w.unlink(rel)
    print("ready", flush=True)
    while True:
        k = w.state["next"]
        w.state["next"] = k + 1
        _, files, _ = entries(w.p.model, "w1")
        big = w.rng.random() < 0.12
        nlines = w.rng.randint(16400, 25000) if big else w.rng.randint(1, 64)
        final = f"w1/f{k:05d}"
        if files and w.rng.random() < 0.3:
            final = w.rng.choice(files)
        editor = final != f"w1/f{k:05d}" or w.rng.random() < 0.2
        rel = f"w1/.tmp{k:05d}" if editor else final
        fd = w.open(rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                    w.rng.choice([0o644, 0o600, 0o640, 0o664]))
        off = 0
        while off < nlines * LINE:
            n = min(nlines - off // LINE, w.rng.randint(1, 4096 if big else 32))
            w.pwrite(fd, rel, off, w.lines(n))
            off += n * LINE
        if w.rng.random() < 0.25:
            w.do(f"fsync {rel}", lambda: os.fsync(fd))
        w.close(fd, rel)
        if editor:
            w.rename(rel, final)
        if len(files) >= NEW_FILES_CAP:
            w.unlink(min(f for f in files if f != final))


def run_held(w):
    """w2: one file open for the whole round, appended to and overwritten, never closed."""
    rel = "w2/held.txt"
    fd = w.open(rel, os.O_RDWR | os.O_CREAT)
    print("ready", flush=True)
    while True:
        size = w.size(rel) // LINE * LINE
        n = w.rng.randint(1, 256)
        if size == 0 or (size < HELD_CAP and w.rng.random() < 0.4):
            off = size
        else:
            off = w.rng.randrange(size // LINE) * LINE
        w.pwrite(fd, rel, off, w.lines(n))


def run_small(w):
    """w3: imported small files opened r+, whole lines overwritten, closed; truncated."""
    print("ready", flush=True)
    while True:
        _, files, _ = entries(w.p.model, "w3")
        rel = w.rng.choice(files)
        lines = w.size(rel) // LINE
        if rel == "w3/grow.txt" and w.rng.random() < 0.3:
            w.truncate(rel, w.rng.randint(1, 40) * LINE)  # shrinks or extends with zeros
            continue
        if lines > 128 or (lines > 1 and w.rng.random() < 0.08):
            w.truncate(rel, w.rng.randint(1, lines - 1) * LINE)
            continue
        fd = w.open(rel, os.O_RDWR)
        for _ in range(w.rng.randint(1, 4)):
            lines = w.size(rel) // LINE
            if lines == 0 or w.rng.random() < 0.15:
                at, n = lines, w.rng.randint(1, 4)
            else:
                at = w.rng.randrange(lines)
                n = w.rng.randint(1, min(8, lines - at))
            w.pwrite(fd, rel, at * LINE, w.lines(n))
        w.close(fd, rel)


def run_big(w):
    """w4: the 3 MB imported file held open, written in the middle and at the end."""
    rel = "w4/big.txt"
    fd = w.open(rel, os.O_RDWR | os.O_CREAT)
    print("ready", flush=True)
    while True:
        lines = w.size(rel) // LINE
        if lines and w.rng.random() < 0.7:
            at = w.rng.randrange(lines)
            n = min(lines - at, w.rng.randint(1, 512))
        elif lines * LINE < BIG_CAP:
            at, n = lines, w.rng.randint(1, 64)
        else:
            n = w.rng.randint(1, 64)
            at = max(0, lines - n)
        w.pwrite(fd, rel, at * LINE, w.lines(n))


def w5_new(w, dirs, prefix):
    return f"{w.rng.choice(dirs)}/{prefix}{w.round:03d}-{w.seq:05d}"


def spare(w, files, rel):
    """Whether rel may lose its name: it has another, or more than 4 files are left."""
    st = os.lstat(w.m(rel))
    return st.st_nlink > 1 or len({os.lstat(w.m(f)).st_ino for f in files}) > 4


def w5_op(w):
    dirs, files, links = entries(w.p.model, "w5")
    full = len(dirs) + len(files) + len(links) > NAMESPACE_CAP
    choices = ["rename", "rename_dir", "chmod", "truncate", "unlink", "rmdir"]
    if not full:
        choices += ["mkdir", "mkdir", "symlink", "link", "link"]
    op = w.rng.choice(choices)
    inner = dirs[1:]
    if op == "mkdir":
        rel, mode = w5_new(w, dirs, "d"), w.rng.choice([0o755, 0o750, 0o700])
        w.do(f"mkdir {rel} {mode:o}", lambda: os.mkdir(w.v(rel), mode),
             lambda root, _: os.mkdir(os.path.join(root, rel), mode))
    elif op == "rmdir":
        empty = [d for d in inner if not os.listdir(w.m(d))]
        if empty:
            rel = w.rng.choice(empty)
            w.do(f"rmdir {rel}", lambda: os.rmdir(w.v(rel)),
                 lambda root, _: os.rmdir(os.path.join(root, rel)))
    elif op == "rename" and files + links:
        src = w.rng.choice(files + links)
        over = [f for f in files if f != src and spare(w, files, f)]
        dst = w.rng.choice(over) if over and w.rng.random() < 0.3 else w5_new(w, dirs, "r")
        w.rename(src, dst)
    elif op == "rename_dir" and inner:
        src = w.rng.choice(inner)
        into = [d for d in dirs if d != src and not d.startswith(src + "/")]
        w.rename(src, w5_new(w, into, "m"))
    elif op == "unlink" and len(files) + len(links) > 6:
        pool = links + [f for f in files if spare(w, files, f)]
        if pool:
            w.unlink(w.rng.choice(pool))
    elif op == "chmod":
        rel = w.rng.choice(files + inner) if files + inner else "w5"
        isdir = rel in dirs
        mode = w.rng.choice([0o755, 0o750, 0o700, 0o775] if isdir else
                            [0o644, 0o600, 0o640, 0o664, 0o755, 0o700])
        w.do(f"chmod {rel} {mode:o}", lambda: os.chmod(w.v(rel), mode),
             lambda root, _: os.chmod(os.path.join(root, rel), mode))
    elif op == "symlink":
        rel = w5_new(w, dirs, "s")
        target = w.rng.choice(["../top.txt", "nowhere/at/all", "a.txt", "../../w5/d1"])
        w.do(f"symlink {rel} {target}", lambda: os.symlink(target, w.v(rel)),
             lambda root, _: os.symlink(target, os.path.join(root, rel)))
    elif op == "link" and files:
        src, rel = w.rng.choice(files), w5_new(w, dirs, "h")
        w.do(f"link {src} {rel}", lambda: os.link(w.v(src), w.v(rel)),
             lambda root, _: os.link(os.path.join(root, src), os.path.join(root, rel)))
    elif op == "truncate" and files:
        rel = w.rng.choice(files)
        w.truncate(rel, w.rng.randint(1, w.size(rel) // LINE + 2) * LINE)


def run_namespace(w):
    """w5: mkdir, rmdir, rename (files, directories, lower directories), unlink, chmod,
    symlink, link, truncate."""
    print("ready", flush=True)
    while True:
        w5_op(w)


WRITER_RUN = {"w1": run_new_files, "w2": run_held, "w3": run_small, "w4": run_big,
              "w5": run_namespace}


def cmd_writer(a, p):
    os.umask(0)
    w = Writer(a, p)
    try:
        WRITER_RUN[a.wid](w)
    except Stop:
        return 0
    finally:
        os.close(w.log)
    return 0
