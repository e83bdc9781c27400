#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The writers, the model and the checks of tests/integration/crash-view.sh.

Every writer works in its own subtree wN of a mounted session view and applies each operation
that returned to a model directory (a plain directory beside the view, same names, modes,
bytes, symlinks and hard links), then appends one line to its ack log. The one operation a
writer had in flight when eosfs was killed is recorded, with the model as it would be had it
taken effect (the "alt" tree). After a remount, each subtree of the view must equal the model,
or the alt tree, or, for an in-flight write, the model with every byte of the write old or new
and the size old or new; the model then takes the outcome seen.

Subcommands (the shell script runs them and turns PASS/FAIL/DIAG lines into TAP):
  setup          write the base tree (import source) and the model
  round R        start the writers, SIGKILL eosfs after a random delay, wait for the writers
  verify R       compare the remounted view with the model
  tidy           remove empty files (a never-written file does not publish yet: issue 9 item 2)
  final          compare the published head (export dir) with the model, hard links, blame
  writer W R     one writer (started by round, with EOS_OPERATION=W)
"""
import argparse
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from crash_view_tree import (LINE, WRITERS, Lines, Paths, base_line, compare,  # noqa: E402
                             cp_tree, link_groups, load_json, save_json, scan, split_lines)
from crash_view_writers import cmd_writer  # noqa: E402

BIG_LINES = 3 * 1024 * 1024 // LINE
MAX_DIAGS = 12


def out(kind, text):
    print(f"{kind} {text}", flush=True)


# --- setup, round -------------------------------------------------------------------------------


def write_file(path, data, mode=0o644):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def cmd_setup(a, p):
    """The base tree: small files of fixed-width lines, one 3 MB file, a few directories."""
    rng = random.Random(f"{a.seed}/setup")
    fid = 0

    def lines_file(rel, n):
        nonlocal fid
        fid += 1
        path = os.path.join(p.base, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_file(path, b"".join(base_line(fid, i) for i in range(n)))

    for d in ["w1", "w2", "w3/sub", "w5/d0/sub", "w5/d1/deep/er", "w5/d2"]:
        os.makedirs(os.path.join(p.base, d))
    for i in range(8):
        lines_file(f"w3/f{i:02d}.txt", rng.randint(4, 64))
    for i in range(3):
        lines_file(f"w3/sub/s{i:02d}.txt", rng.randint(4, 64))
    lines_file("w3/grow.txt", 8)
    lines_file("w4/big.txt", BIG_LINES)
    for rel in ["w5/top.txt", "w5/d0/a.txt", "w5/d0/b.txt", "w5/d0/sub/x.txt", "w5/d1/c.txt",
                "w5/d1/deep/er/y.txt", "w5/d1/deep/z.txt"]:
        lines_file(rel, rng.randint(2, 20))
    os.symlink("d0/a.txt", os.path.join(p.base, "w5/link"))
    for d in ["", "w1", "w2", "w3", "w3/sub", "w4", "w5", "w5/d0", "w5/d0/sub", "w5/d1",
              "w5/d1/deep", "w5/d1/deep/er", "w5/d2"]:
        os.chmod(os.path.join(p.base, d), 0o755)
    cp_tree(p.base, p.model)
    os.makedirs(p.state_dir)
    return 0


def wait_gone(pid, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.01)
    return False


def start_writers(a, p):
    procs = {}
    for wid in WRITERS:
        env = dict(os.environ, EOS_OPERATION=wid)
        cmd = [sys.executable, "-S", os.path.abspath(__file__), "--work", a.work, "--mnt", a.mnt,
               "--seed", str(a.seed), "writer", wid, str(a.round)]
        with open(p.errs(a.round, wid), "wb") as err:
            procs[wid] = subprocess.Popen(cmd, env=env, cwd=a.work, stdout=subprocess.PIPE,
                                          stderr=err)
    return procs


def stop_writers(procs):
    for proc in procs.values():
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def cmd_round(a, p):
    """Start the writers, SIGKILL eosfs after a random delay, wait until the writers stop."""
    delay = random.Random(f"{a.seed}/{a.round}/delay").uniform(0.1, 1.5)
    procs = start_writers(a, p)
    deadline = time.monotonic() + 30
    for wid, proc in procs.items():
        ready = select.select([proc.stdout], [], [], max(0, deadline - time.monotonic()))[0]
        if not ready or proc.stdout.readline() != b"ready\n":
            stop_writers(procs)
            out("FAIL", f"round {a.round}: writer {wid} did not start within 30 s")
            with open(p.errs(a.round, wid), "rb") as f:
                out("DIAG", f.read().decode(errors="replace"))
            return 1
    time.sleep(delay)
    with open(a.mnt + ".pid") as f:
        pid = int(f.read())
    kill_time = time.monotonic()
    try:
        os.kill(pid, getattr(signal, "SIG" + a.signal))
    except ProcessLookupError:
        out("FAIL", f"round {a.round}: eosfs (pid {pid}) had died before the kill")
    save_json(p.state("kill"), {"round": a.round, "time": kill_time, "delay": delay,
                                "signal": a.signal})
    if not wait_gone(pid, 10):
        out("FAIL", f"round {a.round}: eosfs (pid {pid}) is still alive 10 s after SIG{a.signal}")
    return report_writers(a, p, procs, kill_time, delay)


def report_writers(a, p, procs, kill_time, delay):
    bad, acked, errors = [], [], set()
    for wid, proc in procs.items():
        try:
            rc = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            stop_writers(procs)
            rc = "killed: still running 30 s after the kill"
        st = load_json(p.state(wid), {})
        inflight = st.get("inflight")
        with open(p.errs(a.round, wid), "rb") as f:
            err = f.read().decode(errors="replace")
        if rc != 0 or not inflight:
            bad.append(f"writer {wid} exited ({rc}) without a failed operation: {err}")
        elif inflight["time"] < kill_time:
            bad.append(f"writer {wid}: '{inflight['desc']}' failed {inflight['error']} "
                       f"{kill_time - inflight['time']:.3f} s before the kill")
        else:
            acked.append(f"{wid} {st['acked']}")
            errors.add(inflight["error"].split()[0])
    text = f"round {a.round}: eosfs got SIG{a.signal} after {delay:.3f} s while 5 writers ran"
    if bad:
        out("FAIL", text)
        for line in bad:
            out("DIAG", line)
        return 0
    out("PASS", f"{text} (acknowledged: {', '.join(acked)}); each stopped on its next call "
                f"({', '.join(sorted(errors))})")
    return 0


# --- verify -------------------------------------------------------------------------------------


def mixture(view, model, alt, rel, write, lines):
    """The view equals the model but for in-flight write [path, off, len] to rel (the path
    relative to the writer's subtree): each byte of the range old or new (beyond the old end:
    zero or new), the size old, new or in between (a SIGKILL inside eosfs's own write of the
    request may leave a prefix of it, as on any filesystem)."""
    _, off, length = write
    if [d for d in compare(view, model, lines) if d[0] != rel]:
        return False
    g, o, n = view.get(rel), model.get(rel), alt.get(rel)
    if not (g and o and n) or g.kind != "file" or o.kind != "file" or g.mode != o.mode:
        return False
    got = g.data
    if not len(o.data) <= len(got) <= len(n.data):
        return False
    old = o.data[:len(got)].ljust(len(got), b"\0")
    end = min(off + length, len(got))
    if got[:off] != old[:off] or got[end:] != old[end:]:
        return False
    return all(got[i] in (old[i], n.data[i]) for i in range(off, end))


def last_ack(p, rnd, wid, path):
    best = None
    try:
        with open(p.acks(rnd, wid)) as f:
            for line in f:
                t, _, desc = line.rstrip("\n").split(" ", 2)
                if path in desc.split()[1:]:
                    best = (float(t), desc)
    except FileNotFoundError:
        pass
    return best


def report_diffs(p, rnd, wid, diffs, kill):
    for path, msg in diffs[:MAX_DIAGS]:
        ack = last_ack(p, rnd, wid, f"{wid}/{path}")
        when = ""
        if ack:
            dt = kill["time"] - ack[0]
            when = (f"; last acknowledged: '{ack[1]}', " +
                    (f"{dt:.3f} s before the kill" if dt >= 0 else
                     f"{-dt:.3f} s after SIG{kill['signal']} was sent (before eosfs died)"))
        out("DIAG", f"{wid}/{path}: {msg}{when}")
    if len(diffs) > MAX_DIAGS:
        out("DIAG", f"... and {len(diffs) - MAX_DIAGS} more differences in {wid}")


def mark_uncertain(uncertain, wid, write, all_lines_of=None):
    """Lines whose bytes an in-flight write changed: their write-log range may be lost, so
    blame may give them to the session."""
    if all_lines_of is not None:
        for rel, n in all_lines_of.items():
            if n.kind == "file":
                uncertain[f"{wid}/{rel}"] = "all"
        return
    rel, off, length = write
    have = uncertain.get(rel, [])
    if have != "all":
        uncertain[rel] = sorted(set(have) | set(range(off // LINE, (off + length + LINE - 1)
                                                      // LINE)))


def verify_writer(a, p, wid, kill, uncertain, lines):
    st = load_json(p.state(wid), {})
    inflight = st.get("inflight") or {}
    vroot, mroot, aroot = (os.path.join(r, wid) for r in (p.mnt, p.model, p.alt))
    view, model = scan(vroot), scan(mroot)
    diffs = compare(view, model, lines)
    outcome = "no effect"
    write = inflight.get("write")
    if diffs and inflight:
        alt = scan(aroot)
        if not compare(view, alt, lines):
            outcome, diffs = "took effect", []
            shutil.rmtree(mroot)
            os.rename(aroot, mroot)
        elif write and mixture(view, model, alt, write[0][len(wid) + 1:], write, lines):
            outcome, diffs = "took effect in part", []
            got = view[write[0][len(wid) + 1:]]
            write_file(os.path.join(p.model, write[0]), got.data, got.mode)
        if not diffs and write:
            mark_uncertain(uncertain, wid, write)
    what = (f"round {a.round}: {wid} ({WRITERS[wid]}): the view holds all "
            f"{st.get('acked', 0)} acknowledged operations")
    if inflight:
        outcome = outcome if not diffs else "the view matches neither outcome"
        what += f" (in flight: '{inflight['desc']}', {outcome})"
    if not diffs:
        out("PASS", what)
        return
    out("FAIL", what)
    report_diffs(p, a.round, wid, diffs, kill)
    cp_tree(vroot, mroot)  # go on from what the view holds, to see the next rounds too
    mark_uncertain(uncertain, wid, None, scan(mroot, data=False))
    out("DIAG", f"{wid}: the model now takes what the view holds")


def cmd_verify(a, p):
    kill = load_json(p.state("kill"), {})
    uncertain = load_json(p.state("uncertain"), {})
    lines = Lines(p.base)
    for wid in WRITERS:
        verify_writer(a, p, wid, kill, uncertain, lines)
    save_json(p.state("uncertain"), uncertain)
    shutil.rmtree(p.alt, ignore_errors=True)
    for wid in WRITERS:  # keep the last two rounds' ack logs
        for old in (p.acks(a.round - 2, wid), p.errs(a.round - 2, wid)):
            if os.path.exists(old):
                os.unlink(old)
    return 0


def cmd_tidy(a, p):
    removed = []
    for wid in WRITERS:
        for rel, n in scan(os.path.join(p.model, wid)).items():
            if n.kind == "file" and not n.data:
                os.unlink(os.path.join(p.mnt, wid, rel))
                os.unlink(os.path.join(p.model, wid, rel))
                removed.append(f"{wid}/{rel}")
    out("PASS", f"tidy: {len(removed)} empty files removed before the publish "
                f"(an empty new file does not publish yet, issue 9 item 2)")
    return 0


# --- final: the published head ------------------------------------------------------------------


def tool(a, *args):
    r = subprocess.run([a.eos_store, "--store", a.store, "--json", *args],
                       capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def check_head_tree(a, p, lines):
    head = os.path.join(p.work, "head")
    cp_tree(p.base, head)
    rc, o, e = tool(a, "export", "--sandbox", a.sandbox, "--format", "dir", "--dest", head)
    if rc != 0:
        out("FAIL", "export the published head onto a copy of the base")
        out("DIAG", f"exit status {rc}: {o} {e}")
        return
    for wid in WRITERS:
        diffs = compare(scan(os.path.join(head, wid)), scan(os.path.join(p.model, wid)), lines,
                        links=False)
        text = (f"published head: {wid} equals the model byte for byte and mode for mode "
                f"(eos-store export --format dir)")
        out("FAIL" if diffs else "PASS", text)
        for path, msg in diffs[:MAX_DIAGS]:
            out("DIAG", f"{wid}/{path}: {msg}")


def check_head_links(a, p):
    model = scan(p.model, data=False)
    groups = link_groups(model)
    bad, seen = [], {}
    for g in groups:
        ids = []
        for rel in g:
            rc, o, e = tool(a, "stat", "--sandbox", a.sandbox, rel)
            ids.append(json.loads(o).get("link_group") if rc == 0 else f"error: {e.strip()}")
        if len(set(map(str, ids))) != 1 or not isinstance(ids[0], int) or ids[0] == 0:
            bad.append(f"{g}: link groups {ids}")
        elif ids[0] in seen:
            bad.append(f"{g} and {seen[ids[0]]} share link group {ids[0]}")
        else:
            seen[ids[0]] = g
    out("FAIL" if bad else "PASS", f"published head: the {len(groups)} hard-link groups of the "
                                   f"model are link groups")
    for line in bad[:MAX_DIAGS]:
        out("DIAG", line)


def expected_owners(a, wid, rel, data, uncertain, lines):
    """Per line, the owners blame may give: imported lines are original, others wid's."""
    unsure = uncertain.get(rel, [])
    session = f"workspace_session:{a.session}"
    want = []
    for i, line in enumerate(split_lines(data)):
        if lines.is_base(line):
            want.append({"original"})
        elif unsure == "all" or i in unsure:
            want.append({f"operation:{wid}", session})
        else:
            want.append({f"operation:{wid}"})
    return want


def blame_problems(a, wid, rel, data, uncertain, lines):
    rc, o, e = tool(a, "blame", "--sandbox", a.sandbox, rel)
    if rc != 0:
        return [f"{rel}: blame failed: {e.strip()}"]
    ranges = json.loads(o)["ranges"]
    if b"\0" in data:  # binary (a truncate extended it): one range, see doc/publish.md
        owners = {r["owner"] for r in ranges}
        allowed = {"original", f"operation:{wid}", f"workspace_session:{a.session}"}
        ok = len(ranges) == 1 and owners <= allowed
        return [] if ok else [f"{rel} (binary): ranges {ranges}"]
    got = []
    for r in ranges:
        got += [r["owner"]] * r["line_count"]
    want = expected_owners(a, wid, rel, data, uncertain, lines)
    if len(got) != len(want):
        return [f"{rel}: blame covers {len(got)} lines, the file has {len(want)}"]
    bad = [i for i in range(len(want)) if got[i] not in want[i]]
    if not bad:
        return []
    return [f"{rel}: {len(bad)} of {len(want)} lines have the wrong owner, first line "
            f"{bad[0] + 1}: '{got[bad[0]]}', expected {sorted(want[bad[0]])}"]


def check_blame(a, p, lines):
    uncertain = load_json(p.state("uncertain"), {})
    for wid in WRITERS:
        problems, inodes = [], set()
        for rel, n in scan(os.path.join(p.model, wid)).items():
            if n.kind == "file" and n.ino not in inodes:  # one name per hard-link group
                inodes.add(n.ino)
                problems += blame_problems(a, wid, f"{wid}/{rel}", n.data, uncertain, lines)
        out("FAIL" if problems else "PASS",
            f"blame: every line of {wid}'s {len(inodes)} file{'s' * (len(inodes) != 1)} "
            f"belongs to operation:{wid}, or to original where it is imported")
        for line in problems[:MAX_DIAGS]:
            out("DIAG", line)


def cmd_final(a, p):
    lines = Lines(p.base)
    check_head_tree(a, p, lines)
    check_head_links(a, p)
    check_blame(a, p, lines)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--mnt", required=True)
    ap.add_argument("--seed", required=True)
    ap.add_argument("--store")
    ap.add_argument("--sandbox", default="sb")
    ap.add_argument("--session", default="s")
    ap.add_argument("--eos-store")
    ap.add_argument("--signal", default="KILL", choices=["KILL", "TERM"])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ["setup", "tidy", "final"]:
        sub.add_parser(name)
    for name in ["round", "verify"]:
        sub.add_parser(name).add_argument("round", type=int)
    w = sub.add_parser("writer")
    w.add_argument("wid", choices=list(WRITERS))
    w.add_argument("round", type=int)
    a = ap.parse_args()
    cmds = {"setup": cmd_setup, "round": cmd_round, "verify": cmd_verify, "tidy": cmd_tidy,
            "final": cmd_final, "writer": cmd_writer}
    return cmds[a.cmd](a, Paths(a))


if __name__ == "__main__":
    sys.exit(main())
