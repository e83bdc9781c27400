#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/runtime.py: the figures of commands in sessions (issue 11).

Run by bench/runtime, which builds the tree: this program starts an eosd of the build tree on a
fresh state directory (bench/daemon.py's Eosd), imports generated bases, runs commands in
sessions with exec_command (doc/commands.md) over the Unix socket with keep-alive clients, runs
the same commands on the host tree with subprocess, and prints name<TAB>value<TAB>unit lines (or
a table without --tsv). Every figure is taken in this one run. A section the daemon fails is
reported on stderr with its request and reply, the run goes on, and the exit status is 1.
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no bench/__pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Eosd, UnixHTTP, make_tree, ms  # noqa: E402

YIELD_MS = 30000
PROJECT_FILES = 200
PARALLEL = 8
NEEDLE = "needle"
BUILD = "make -s -j2"  # the project's clean build, in a session and on the host


class ExecFailed(RuntimeError):
    pass


def call(d, op, sb, conn=None, **args):
    """d.call on the runtime surface; a failure names the request as well as the reply."""
    try:
        return d.call("runtime", op, sb, conn=conn, **args)
    except RuntimeError as e:
        raise RuntimeError("request %s %s: reply %s" % (op, json.dumps(args), e)) from None


def run_in(d, sb, session, cmd, conn=None, cwd="", yield_ms=YIELD_MS):
    """cmd in session through exec_command, polled with write_command_stdin "" while it runs:
    (seconds from the request to the final result, the final result)."""
    t = time.perf_counter()
    res = call(d, "exec_command", sb, conn, cmd=cmd, workspace_session_id=session, cwd=cwd,
               yield_time_ms=yield_ms)
    out = res.get("output", "")
    while res.get("status") == "running":
        res = call(d, "write_command_stdin", sb, conn,
                   command_session_id=res["command_session_id"], chars="",
                   yield_time_ms=yield_ms)
        out += res.get("output", "")
    secs = time.perf_counter() - t
    if res.get("status") != "completed":
        raise ExecFailed("exec_command %r: status %s, exit code %s, signal %s, output %r" %
                         (cmd, res.get("status"), res.get("exit_code"), res.get("signal"),
                          out[-2000:]))
    return secs, res


def started(res):
    """A result's started (UTC, milliseconds) in seconds since the epoch."""
    t = datetime.datetime.strptime(res["started"], "%Y-%m-%dT%H:%M:%S.%fZ")
    return t.replace(tzinfo=datetime.timezone.utc).timestamp()


def host_env(home):
    """The environment doc/commands.md gives a command, for the host runs."""
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "HOME": home, "USER": "root", "LOGNAME": "root", "SHELL": "/bin/bash",
           "TERM": "dumb"}
    env.update({k: os.environ[k] for k in ("LANG", "LC_ALL", "TZ") if k in os.environ})
    return env


def run_host(cmd, cwd, env):
    t = time.perf_counter()
    p = subprocess.run(["bash", "--noprofile", "--norc", "-c", cmd], cwd=cwd, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    secs = time.perf_counter() - t
    if p.returncode != 0:
        raise ExecFailed("host %r: exit code %d, output %r" % (cmd, p.returncode,
                                                              p.stdout[-2000:]))
    return secs


def make_project(root, files):
    """A C project of files .c files (one is main.c) and a Makefile, committed as a git repo.
    Every tenth file holds the word NEEDLE."""
    os.makedirs(os.path.join(root, "src"))
    os.makedirs(os.path.join(root, "include"))
    with open(os.path.join(root, "include", "proj.h"), "w") as f:
        f.write("#pragma once\n#include <stddef.h>\n")
        f.write("".join("long f%03d_%d(long x);\n" % (i, k)
                        for i in range(1, files) for k in range(4)))
    for i in range(1, files):
        with open(os.path.join(root, "src", "f%03d.c" % i), "w") as f:
            f.write("#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
                    "#include \"proj.h\"\n\n")
            if i % 10 == 0:
                f.write("/* the word the benchmark greps for: %s */\n" % NEEDLE)
            for k in range(4):
                f.write("long\nf%03d_%d(long x)\n{\n\tchar buf[64];\n\tlong s = x;\n"
                        "\tfor (int j = 0; j < %d; j++)\n\t\ts = s * 31 + (j ^ %d);\n"
                        "\tsnprintf(buf, sizeof(buf), \"%%ld\", s);\n"
                        "\treturn s + (long)strlen(buf);\n}\n\n" % (i, k, 10 + k, i))
    with open(os.path.join(root, "src", "main.c"), "w") as f:
        f.write("#include <stdio.h>\n#include \"proj.h\"\n\nint\nmain(void)\n{\n\tlong s = 0;\n")
        f.write("".join("\ts += f%03d_%d(s);\n" % (i, k) for i in range(1, files)
                        for k in range(4)))
        f.write("\tprintf(\"%ld\\n\", s);\n\treturn 0;\n}\n")
    with open(os.path.join(root, "Makefile"), "w") as f:
        f.write("CFLAGS = -O1 -Wall -Iinclude\nSRCS = $(wildcard src/*.c)\n"
                "OBJS = $(SRCS:.c=.o)\n\nprog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n\n"
                "src/%.o: src/%.c include/proj.h\n\t$(CC) $(CFLAGS) -c -o $@ $<\n\n"
                "clean:\n\trm -f $(OBJS) prog\n\n.PHONY: clean\n")
    with open(os.path.join(root, ".gitignore"), "w") as f:
        f.write("*.o\n/prog\n")
    git = ["git", "-C", root, "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "the generated project"], check=True)


def new_session(d, sb, conn=None):
    return call(d, "create_workspace_session", sb, conn)["workspace_session_id"]


def destroy(d, sb, session):
    call(d, "destroy_workspace_session", sb, workspace_session_id=session)


def bench_exec_true(d, sb, rounds):
    s = new_session(d, sb)
    try:
        run_in(d, sb, s, "true")  # the session's first command, not counted
        return ms([run_in(d, sb, s, "true")[0] for _ in range(rounds)])
    finally:
        destroy(d, sb, s)


def bench_create(d, sb, rounds):
    """create_workspace_session (it answers once the holder is ready), each session destroyed
    before the next is created: (create median, p95), (destroy median, p95)."""
    created, destroyed = [], []
    for _ in range(rounds):
        t, doc = d.timed("runtime", "create_workspace_session", sb)
        created.append(t)
        t, _ = d.timed("runtime", "destroy_workspace_session", sb,
                       workspace_session_id=doc["workspace_session_id"])
        destroyed.append(t)
    return ms(created), ms(destroyed)


def bench_parallel(d, sb, sessions, yield_ms):
    """BUILD in every session at once, a thread and a connection each: the wall time until the
    last one ends, each build's time and each command's start delay (from the request to its
    result's started), in seconds."""
    times, delays, errors = [None] * len(sessions), [None] * len(sessions), []

    def run(i):
        try:
            sent = time.time()
            times[i], res = run_in(d, sb, sessions[i], BUILD, conn=UnixHTTP(d.sock),
                                   yield_ms=yield_ms)
            delays[i] = started(res) - sent
        except Exception as e:  # reported by the caller
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(sessions))]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t
    if errors:
        raise errors[0]
    return wall, times, delays


def bench_builds(d, sb, host_dir, env):
    """8 builds in 8 fresh sessions one after another, each after a build on the host (so that
    the machine's load moves both alike), then 8 in 8 more fresh sessions at once polled with
    YIELD_MS, then 8 more at once polled every second: (host median, sequential times,
    {yield: bench_parallel's answer})."""
    sessions = [new_session(d, sb) for _ in range(3 * PARALLEL)]
    try:
        host, seq = [], []
        for s in sessions[:PARALLEL]:
            run_host("make -s clean", host_dir, env)
            host.append(run_host(BUILD, host_dir, env))
            seq.append(run_in(d, sb, s, BUILD)[0])
        run_host("make -s clean", host_dir, env)
        par = {y: bench_parallel(d, sb, sessions[k * PARALLEL:(k + 1) * PARALLEL], y)
               for k, y in ((1, YIELD_MS), (2, 1000))}
        return ms(host)[0] / 1e3, seq, par
    finally:
        for s in sessions:
            destroy(d, sb, s)


def compare(d, sb, session, host_dir, env, cmd, rounds, warm=True, before=None):
    """cmd in session (in /workspace) and on host_dir, alternately, rounds times each after one
    untimed run of each (warm): the median seconds of each. before runs untimed ahead of every
    round on both sides (make clean)."""
    if warm:
        run_in(d, sb, session, cmd)
        run_host(cmd, host_dir, env)
    ses, host = [], []
    for _ in range(rounds):
        if before:
            run_in(d, sb, session, before)
        ses.append(run_in(d, sb, session, cmd)[0])
        if before:
            run_host(before, host_dir, env)
        host.append(run_host(cmd, host_dir, env))
    return ms(ses)[0] / 1e3, ms(host)[0] / 1e3


class Runner:
    """Runs the sections, reporting each figure, and goes on after a section fails."""

    def __init__(self, tsv):
        self.tsv, self.failed = tsv, []

    def report(self, name, value, unit):
        print("%s\t%.3f\t%s" % (name, value, unit) if self.tsv else
              "%-52s %12.3f %s" % (name, value, unit), flush=True)

    def section(self, name, fn):
        try:
            fn()
        except Exception as e:
            self.failed.append(name)
            print("runtime: %s failed: %s" % (name, e), file=sys.stderr, flush=True)


def sections(o, r, d, top):
    env = host_env(os.path.join(top, "home"))
    proj, large = os.path.join(top, "proj"), os.path.join(top, "src-large")

    def exec_true():
        med, p95 = bench_exec_true(d, "small", o.rounds)
        r.report("exec_true.median", med, "ms")
        r.report("exec_true.p95", p95, "ms")
        home = os.path.join(top, "home")
        host = ms([run_host("true", home, env) for _ in range(o.rounds)])
        r.report("exec_true.host(subprocess of bash -c true).median", host[0], "ms")

    def create():
        meds = {}
        for name, n in (("small", o.small), ("large", o.large)):
            (med, p95), (dmed, dp95) = bench_create(d, name, o.rounds)
            meds[name] = med
            r.report("session_create_ready.%d.median" % n, med, "ms")
            r.report("session_create_ready.%d.p95" % n, p95, "ms")
            r.report("session_destroy.%d.median" % n, dmed, "ms")
        r.report("session_create_ready.large_over_small", meds["large"] / meds["small"], "x")

    def builds():
        host, seq, par = bench_builds(d, "proj", proj, env)
        seq_total, seq_med = sum(seq), ms(seq)[0] / 1e3
        r.report("build.host(median of 8)", host, "s")
        r.report("build.sequential(8 sessions).total", seq_total, "s")
        r.report("build.sequential(8 sessions).median_per_build", seq_med, "s")
        r.report("build.per_build_session_over_host", seq_med / host, "x")
        for y, (wall, each, delays) in par.items():
            name = "build.parallel(8 sessions, yield %d ms)" % y
            r.report(name + ".wall", wall, "s")
            r.report(name + ".fastest_build", min(each), "s")
            r.report(name + ".slowest_build", max(each), "s")
            r.report(name + ".latest_start", max(delays), "s")
            r.report(name + ".over_sequential", wall / seq_total, "x")
            r.report(name + ".over_8_host_builds", wall / (PARALLEL * host), "x")

    def commands():
        s = new_session(d, "proj")
        try:
            cmds = (("make", BUILD, proj, 3, False, "make -s clean"),
                    ("git_status", "git status --porcelain", proj, 5, True, None),
                    ("grep_r.project", "grep -rw %s ." % NEEDLE, proj, 5, True, None))
            for name, cmd, host_dir, rounds, warm, before in cmds:
                ses, host = compare(d, "proj", s, host_dir, env, cmd, rounds, warm, before)
                r.report("cmd.%s.session" % name, ses * 1e3, "ms")
                r.report("cmd.%s.host" % name, host * 1e3, "ms")
                r.report("cmd.%s.session_over_host" % name, ses / host, "x")
        finally:
            destroy(d, "proj", s)
        s = new_session(d, "large")
        try:
            word = str(o.large * 3 // 4)  # in one file of the base: "line k of file N"
            ses, host = compare(d, "large", s, large, env, "grep -rw %s ." % word, 2)
            r.report("cmd.grep_r.%d_files.session" % o.large, ses * 1e3, "ms")
            r.report("cmd.grep_r.%d_files.host" % o.large, host * 1e3, "ms")
            r.report("cmd.grep_r.%d_files.session_over_host" % o.large, ses / host, "x")
        finally:
            destroy(d, "large", s)

    r.section("exec_command true", exec_true)
    r.section("session create", create)
    r.section("8 builds", builds)
    r.section("session against host", commands)


def run(o, top):
    r = Runner(o.tsv)
    r.report("load_average_1min.before", os.getloadavg()[0], "load")
    os.makedirs(os.path.join(top, "home"))
    for name, n in (("small", o.small), ("large", o.large)):
        make_tree(os.path.join(top, "src-" + name), n)
    make_project(os.path.join(top, "proj"), PROJECT_FILES)
    d = Eosd(o.build, top)
    try:
        for name in ("small", "large", "proj"):
            src = "proj" if name == "proj" else "src-" + name
            d.call("management", "create_sandbox", source=os.path.join(top, src), id=name)
        sections(o, r, d, top)
    finally:
        d.stop()
    r.report("load_average_1min.after", os.getloadavg()[0], "load")
    r.report("cores", os.cpu_count(), "cores")
    return 1 if r.failed else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--small", type=int, default=1000)
    ap.add_argument("--large", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--tsv", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    o = ap.parse_args()
    top = tempfile.mkdtemp(prefix="eos-bench-runtime.")
    try:
        return run(o, top)
    finally:
        if o.keep:
            print("runtime: kept %s" % top, file=sys.stderr)
        else:
            shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
