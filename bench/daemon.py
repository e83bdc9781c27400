#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/daemon.py: eosd's session, publish, fork and gateway figures (issue 10).

Run by bench/daemon, which builds the trees and starts nothing itself: this program starts an
eosd of the build tree on a fresh state directory, drives it over its Unix socket with HTTP
requests (the gateway protocol of doc/eosd.md) and prints name<TAB>value<TAB>unit lines (or a
table without --tsv). Every figure is taken in this one run.
"""
import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


IDLE_REUSE_S = 20  # below eosd's EOSD_IDLE_TIMEOUT_S (supervisor/gateway.h)


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=600)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


class Eosd:
    """An eosd of the build tree on its own state and runtime directories."""

    def __init__(self, build, top, state="state", args=()):
        self.top = top
        self.state = os.path.join(top, state)
        env = dict(os.environ, EOS_RUNTIME_DIR=os.path.join(top, "run"))
        with socket.socket() as s:  # a free loopback port for clients that speak TCP only
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        subprocess.run([os.path.join(build, "supervisor", "eosd"), "--state-dir", self.state,
                        "--listen", "tcp:127.0.0.1:%d" % self.port] + list(args),
                       env=env, check=True)
        info = json.load(open(os.path.join(self.state, "eosd.json")))
        self.pid, self.sock = info["pid"], info["socket"]
        self.tokens = {s: open(os.path.join(self.state, "tokens", s)).read().strip()
                       for s in ("management", "runtime", "observability")}
        self.conn = UnixHTTP(self.sock)

    def call(self, surface, op, sandbox=None, conn=None, **args):
        body = json.dumps({"sandbox_id": sandbox, "args": args} if sandbox else {"args": args})
        c = conn or self.conn
        if time.monotonic() - getattr(c, "used", 0) > IDLE_REUSE_S:
            c.close()  # eosd closes a connection idle for 30 s: open a new one, as browsers do
        try:
            c.request("POST", "/v1/%s/%s" % (surface, op), body,
                      {"Authorization": "Bearer " + self.tokens[surface],
                       "Content-Type": "application/json"})
            r = c.getresponse()
            doc = json.loads(r.read() or b"{}")
        except Exception:
            c.close()  # a later call starts on a fresh connection, not on a half-sent request
            raise
        c.used = time.monotonic()
        if r.status != 200:
            raise RuntimeError("%s: %d %s" % (op, r.status, doc))
        return doc

    def timed(self, surface, op, sandbox=None, **args):
        return self.timed_on(None, surface, op, sandbox, **args)

    def timed_on(self, conn, surface, op, sandbox=None, **args):
        t = time.perf_counter()
        doc = self.call(surface, op, sandbox, conn=conn, **args)
        return time.perf_counter() - t, doc

    def proc(self, field):
        for line in open("/proc/%d/status" % self.pid):
            if line.startswith(field + ":"):
                return int(line.split()[1])
        return -1

    def cpu_seconds(self):
        """eosd's user and system CPU time so far (/proc/PID/stat, in clock ticks)."""
        fields = open("/proc/%d/stat" % self.pid).read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        os.kill(self.pid, 15)
        for _ in range(600):
            if not os.path.exists("/proc/%d" % self.pid):
                return
            time.sleep(0.05)


def make_tree(root, files):
    """files small text files of 20 lines in directories of 100."""
    for i in range(files):
        d = os.path.join(root, "d%04d" % (i // 100))
        if i % 100 == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "f%03d.txt" % (i % 100)), "w") as f:
            f.write("".join("line %d of file %d\n" % (k, i) for k in range(20)))


def ms(xs):
    return statistics.median(xs) * 1e3, sorted(xs)[max(0, int(len(xs) * 0.95) - 1)] * 1e3


def bench_create(d, sb, n):
    times, ids = [], []
    for _ in range(n):
        t, doc = d.timed("runtime", "create_workspace_session", sb)
        times.append(t)
        ids.append(doc["workspace_session_id"])
    for s in ids:
        d.call("runtime", "destroy_workspace_session", sb, workspace_session_id=s)
    return ms(times)


def change_files(mount, n, tag, files):
    """Append a line to n of the tree's files, spread over all its directories."""
    for i in range(n):
        k = i * (files // n)
        p = os.path.join(mount, "d%04d" % (k // 100), "f%03d.txt" % (k % 100))
        with open(p, "a") as f:
            f.write("%s %d\n" % (tag, i))


def bench_publish(d, sb, files, rounds):
    doc = d.call("runtime", "create_workspace_session", sb)
    s, mount = doc["workspace_session_id"], doc["mount_path"]
    times = []
    for r in range(rounds):
        change_files(mount, 10, "round%d" % r, files)
        t, res = d.timed("runtime", "publish_workspace_session", sb, workspace_session_id=s)
        if res.get("status") != "published":
            raise RuntimeError("publish: %s" % res)
        times.append(t)
    d.call("runtime", "destroy_workspace_session", sb, workspace_session_id=s)
    return ms(times)


def bench_fork(d, sb, files, rounds):
    doc = d.call("runtime", "create_workspace_session", sb)
    s, mount = doc["workspace_session_id"], doc["mount_path"]
    change_files(mount, 100, "fork", files)
    times, forks = [], []
    for _ in range(rounds):
        t, res = d.timed("runtime", "fork_workspace_session", sb, workspace_session_id=s)
        times.append(t)
        forks.append(res["workspace_session_id"])
    for f in forks + [s]:
        d.call("runtime", "destroy_workspace_session", sb, workspace_session_id=f)
    return ms(times)


def bench_roundtrip(d, n):
    times = []
    for _ in range(n):
        t, _ = d.timed("management", "list_sandboxes")
        times.append(t)
    return ms(times)


def make_big_tree(root, mib):
    """mib MiB of incompressible bytes in files of 16 MiB."""
    os.makedirs(root, exist_ok=True)
    for i in range(max(1, mib // 16)):
        with open(os.path.join(root, "blob%03d.bin" % i), "wb") as f:
            for _ in range(16):
                f.write(os.urandom(1 << 20))


def bench_list_during_import(d, src):
    """list_sandboxes round trips on one connection while another imports src."""
    done, result = threading.Event(), {}

    def run():
        try:
            result["t"], _ = d.timed_on(UnixHTTP(d.sock), "management", "create_sandbox",
                                        source=src, id="big")
        finally:
            done.set()

    worker = threading.Thread(target=run)
    worker.start()
    times = []
    while not done.is_set():
        t, _ = d.timed("management", "list_sandboxes")
        times.append(t)
    worker.join()
    times.sort()
    return (statistics.median(times) * 1e3, times[max(0, int(len(times) * 0.99) - 1)] * 1e3,
            len(times), result.get("t", 0))


def bench_throughput(d, clients, seconds):
    """clients threads, each with its own keep-alive connection, for seconds: requests/s.
    The client threads share one Python interpreter: the figure is a lower bound."""
    stop, counts = time.perf_counter() + seconds, [0] * clients

    def run(i):
        c = UnixHTTP(d.sock)
        while time.perf_counter() < stop:
            d.call("observability", "ping", conn=c)
            counts[i] += 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / seconds


def bench_wrk(d, connections, seconds):
    """wrk (Debian's package, a C client) with connections keep-alive connections over TCP for
    seconds: requests/s, or None when wrk is not installed."""
    if not shutil.which("wrk"):
        return None
    script = os.path.join(d.top, "ping.lua")
    with open(script, "w") as f:
        f.write('wrk.method = "POST"\nwrk.body = "{}"\n'
                'wrk.headers["Content-Type"] = "application/json"\n'
                'wrk.headers["Authorization"] = "Bearer %s"\n' % d.tokens["observability"])
    out = subprocess.run(["wrk", "-t2", "-c%d" % connections, "-d%ds" % seconds, "-s", script,
                          "http://127.0.0.1:%d/v1/observability/ping" % d.port],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if line.startswith("Requests/sec:"):
            return float(line.split()[1])
    raise RuntimeError("wrk printed no rate: %s" % out)


def bench_idle(d, sb, counts):
    rows, made = [], []
    for n in counts:
        while len(made) < n:
            made.append(d.call("runtime", "create_workspace_session", sb)["workspace_session_id"])
        time.sleep(1)
        rows.append((n, d.proc("Threads"), d.proc("VmRSS") / 1024.0))
    for s in made:
        d.call("runtime", "destroy_workspace_session", sb, workspace_session_id=s)
    return rows


def telemetry_stored(d):
    """The bytes of telemetry the store keeps (events syncs what is queued first)."""
    d.call("observability", "events", last_n=1)
    return d.call("observability", "snapshot")["daemon"]["telemetry"]["stored_bytes"]


def interleaved(on, off, rounds):
    """(round, daemon) for rounds rounds of both daemons, alternating which goes first so that
    the machine's load moves both alike."""
    for r in range(rounds):
        for d in ((on, off) if r % 2 == 0 else (off, on)):
            yield r, d


def report_on_off(report, name, on, off):
    """Seconds with telemetry on and off, one per paired round: medians, p95s, their ratio and
    the median of the paired ratios."""
    ratios = sorted(a / b for a, b in zip(on, off))
    med_on, p95_on = ms(on)
    med_off, p95_off = ms(off)
    report(name + ".on.median", med_on, "ms")
    report(name + ".off.median", med_off, "ms")
    report(name + ".on.p95", p95_on, "ms")
    report(name + ".off.p95", p95_off, "ms")
    report(name + ".on_over_off(median)", med_on / med_off, "x")
    report(name + ".on_over_off(median of paired rounds)", ratios[len(ratios) // 2], "x")


def exec_true(d, session):
    """exec_command true in session, to its end: seconds."""
    t, res = d.timed("runtime", "exec_command", "sb", cmd="true", workspace_session_id=session,
                     yield_time_ms=30000)
    if res.get("status") != "completed" or res.get("exit_code") != 0:
        raise RuntimeError("exec_command true: %s" % res)
    return t


def telemetry_exec(on, off, sess, rounds, report):
    """exec_command true with telemetry on and off (rounds interleaved), and the telemetry
    bytes kept per 1 000 commands."""
    times = {on: [], off: []}
    for d in (on, off):
        exec_true(d, sess[d][0])  # the holder's first exec warms bash's pages
    for _, d in interleaved(on, off, rounds):
        times[d].append(exec_true(d, sess[d][0]))
    report_on_off(report, "telemetry.exec_true", times[on], times[off])
    before = telemetry_stored(on)
    for _ in range(1000):
        exec_true(on, sess[on][0])
    report("telemetry.bytes_per_1000_commands(exec_command true)",
           telemetry_stored(on) - before, "B")


def bench_telemetry(o, report):
    """A 10-file live publish with telemetry on and off (two eosd, rounds interleaved so that
    the machine's load moves both alike), and the telemetry bytes kept per 1 000 operations."""
    with tempfile.TemporaryDirectory(prefix="eos-bench-telemetry.") as top:
        make_tree(os.path.join(top, "src"), o.small)
        on = Eosd(o.build, top, "state-on")
        off = Eosd(o.build, top, "state-off", ["--no-obs"])
        try:
            sess = {}
            for d in (on, off):
                d.call("management", "create_sandbox", source=os.path.join(top, "src"), id="sb")
                doc = d.call("runtime", "create_workspace_session", "sb")
                sess[d] = (doc["workspace_session_id"], doc["mount_path"])
            times = {on: [], off: []}
            before = telemetry_stored(on)
            cpu0 = {d: d.cpu_seconds() for d in (on, off)}
            for r, d in interleaved(on, off, o.rounds):
                s, mount = sess[d]
                change_files(mount, 10, "round%d" % r, o.small)
                t, res = d.timed("runtime", "publish_workspace_session", "sb",
                                 workspace_session_id=s)
                if res.get("status") != "published":
                    raise RuntimeError("publish: %s" % res)
                times[d].append(t)
            cpu = {d: d.cpu_seconds() - cpu0[d] for d in (on, off)}
            publish_bytes = telemetry_stored(on) - before
            report_on_off(report, "telemetry.publish_10_files", times[on], times[off])
            report("telemetry.eosd_cpu_per_publish.on", cpu[on] * 1e3 / o.rounds, "ms")
            report("telemetry.eosd_cpu_per_publish.off", cpu[off] * 1e3 / o.rounds, "ms")
            report("telemetry.bytes_per_1000_publishes", publish_bytes * 1000.0 / o.rounds, "B")
            before = telemetry_stored(on)
            for _ in range(1000):
                on.call("observability", "ping")
            report("telemetry.bytes_per_1000_pings", telemetry_stored(on) - before, "B")
            before = telemetry_stored(on)
            for i in range(500):
                doc = on.call("runtime", "create_workspace_session", "sb")
                on.call("runtime", "destroy_workspace_session", "sb",
                        workspace_session_id=doc["workspace_session_id"])
            report("telemetry.bytes_per_1000_session_ops(500 creates, 500 destroys)",
                   telemetry_stored(on) - before, "B")
            telemetry_exec(on, off, sess, o.rounds * 5, report)
            report("telemetry.records_kept", on.call("observability", "snapshot")["daemon"]
                   ["telemetry"]["stored_records"], "records")
        finally:
            on.stop()
            off.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--small", type=int, default=1000)
    ap.add_argument("--large", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--import-mib", type=int, default=1024)
    ap.add_argument("--tsv", action="store_true")
    ap.add_argument("--telemetry", action="store_true",
                    help="only the cost of telemetry (publish and exec on/off, bytes kept)")
    o = ap.parse_args()
    out = []

    def report(name, value, unit):
        out.append((name, value, unit))
        print("%s\t%.3f\t%s" % (name, value, unit) if o.tsv else
              "%-44s %12.3f %s" % (name, value, unit), flush=True)

    if o.telemetry:
        bench_telemetry(o, report)
        report("cores", os.cpu_count(), "cores")
        return 0

    with tempfile.TemporaryDirectory(prefix="eos-bench-daemon.") as top:
        for name, n in (("small", o.small), ("large", o.large)):
            make_tree(os.path.join(top, "src-" + name), n)
        t0 = time.perf_counter()
        d = Eosd(o.build, top)
        report("eosd.start_ms(empty store)", (time.perf_counter() - t0) * 1e3, "ms")
        try:
            for name, n in (("small", o.small), ("large", o.large)):
                d.call("management", "create_sandbox", source=os.path.join(top, "src-" + name),
                       id=name)
            d.stop()
            t0 = time.perf_counter()
            d = Eosd(o.build, top)
            report("eosd.start_ms(first after importing %d files)" % o.large,
                   (time.perf_counter() - t0) * 1e3, "ms")
            create = {}
            for name, n in (("small", o.small), ("large", o.large)):
                create[name] = bench_create(d, name, o.rounds)
                report("session_create.%d.median" % n, create[name][0], "ms")
                report("session_create.%d.p95" % n, create[name][1], "ms")
            report("session_create.large_over_small", create["large"][0] / create["small"][0], "x")
            med, p95 = bench_publish(d, "large", o.large, o.rounds)
            report("live_publish_10_files.%d.median" % o.large, med, "ms")
            report("live_publish_10_files.%d.p95" % o.large, p95, "ms")
            fork = {}
            for name, n in (("small", o.small), ("large", o.large)):
                fork[name] = bench_fork(d, name, n, o.rounds)
                report("fork_100_files.%d.median" % n, fork[name][0], "ms")
            report("fork.large_over_small", fork["large"][0] / fork["small"][0], "x")
            med, p95 = bench_roundtrip(d, 2000)
            report("gateway.list_sandboxes.median", med, "ms")
            report("gateway.list_sandboxes.p95", p95, "ms")
            report("gateway.ping_per_s(64 clients, python)", bench_throughput(d, 64, 5), "req/s")
            rate = bench_wrk(d, 64, 5)
            if rate is not None:
                report("gateway.ping_per_s(64 connections, wrk)", rate, "req/s")
            make_big_tree(os.path.join(top, "src-big"), o.import_mib)
            med, p99, n, secs = bench_list_during_import(d, os.path.join(top, "src-big"))
            report("import_%dMiB.seconds" % o.import_mib, secs, "s")
            report("list_sandboxes_during_import.median", med, "ms")
            report("list_sandboxes_during_import.p99", p99, "ms")
            report("list_sandboxes_during_import.count", n, "requests")
            # a fresh daemon: its start once the store's logs are replayed, and its idle figures
            # without the import's caches
            d.stop()
            t0 = time.perf_counter()
            d = Eosd(o.build, top)
            report("eosd.start_ms(restart, 100000-file and big sandboxes)",
                   (time.perf_counter() - t0) * 1e3, "ms")
            for n, threads, rss in bench_idle(d, "large", (0, 16, 64)):
                report("eosd.threads(%d idle sessions)" % n, threads, "threads")
                report("eosd.rss(%d idle sessions)" % n, rss, "MiB")
        finally:
            d.stop()
    report("cores", os.cpu_count(), "cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
