#!/usr/bin/env python3
"""A fault campaign: three agent_server nodes on one PostgreSQL 15 behind fault proxies, clients under faults, then the checker.

Exit status: 0 when the checker found no violation (or, with --expect-violation KIND, when it
found one of that kind), 1 otherwise, 2 when the campaign could not be set up, 77 when PostgreSQL
15 is not installed (a skip).
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import breakers  # noqa: E402
import checker  # noqa: E402
import figures  # noqa: E402
from fault_proxy import ProxyHost  # noqa: E402
from faults import Injector  # noqa: E402
from processes import PG_BIN, Cluster, Node, write_settings  # noqa: E402
from workload import History, Workload, create_session  # noqa: E402

T0 = time.monotonic()


def log(text):
    print("[%7.2f] %s" % (time.monotonic() - T0, text), flush=True)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--server", required=True, help="the agent_server binary")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seconds", type=float, default=60, help="load time, faults included")
    p.add_argument("--calm", type=float, default=0.2, help="share of the load time without faults (first)")
    p.add_argument("--sessions", type=int, default=240)
    p.add_argument("--hot", type=int, default=12, help="sessions every node serves at once")
    p.add_argument("--clients", type=int, default=24)
    p.add_argument("--timeout", type=float, default=5.0, help="a client's request timeout (then: unknown)")
    p.add_argument("--heal-bound", type=float, default=30.0, help="seconds every node has to converge")
    p.add_argument("--rss-limit-mb", type=int, default=1024)
    p.add_argument("--offline-delay-ms", type=int, default=30)
    p.add_argument("--require-writes", action="store_true",
                   help="a session that takes no write on some node after healing is a violation")
    p.add_argument("--faults", default=None, help="comma-separated fault kinds to pick from (default: all)")
    p.add_argument("--no-faults", action="store_true", help="the same load with no fault at all")
    p.add_argument("--break", dest="breaker", choices=sorted(breakers.BREAKERS), default=None,
                   help="make the store misbehave on purpose (tests the checker)")
    p.add_argument("--expect-violation", default=None, help="succeed only if the checker reports this kind")
    p.add_argument("--out", default=None, help="directory for history.json, report.json and node logs")
    return p.parse_args()


class RssSampler(threading.Thread):
    def __init__(self, nodes):
        super().__init__(daemon=True)
        self.nodes = nodes
        self.peak = {n.name: 0 for n in nodes}
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(0.5):
            for n in self.nodes:
                kb = n.rss_kb() or 0
                self.peak[n.name] = max(self.peak[n.name], kb)


def read_view(port, sid):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/v1/sessions/%s/context" % (port, sid), timeout=10) as r:
            body = json.loads(r.read())
        return {"leafId": body.get("leafId"),
                "entryIds": [m.get("entryId") for m in body.get("messages", []) if m.get("entryId")]}
    except (OSError, ValueError):
        return None


def read_views(nodes, session_ids):
    """Every node's context of every session, straight from the node (no proxy)."""
    with ThreadPoolExecutor(8) as pool:
        return {n.name: dict(zip(session_ids, pool.map(lambda sid, p=n.port: read_view(p, sid), session_ids)))
                for n in nodes}


def converge(cluster, nodes, session_ids, bound_s):
    """Polls until every node's view of every session equals the database; (seconds or None, db, views)."""
    start = time.monotonic()
    while True:
        db = checker.read_db(cluster)
        views = read_views(nodes, session_ids)
        r = checker.Report()
        checker.check_views(db, views, r)
        elapsed = time.monotonic() - start
        if not r.violations:
            return elapsed, db, views
        if elapsed > bound_s:
            return None, db, views
        time.sleep(0.2)


class Rig:
    """What the campaign started; `close` stops whatever of it is running."""

    def __init__(self):
        self.cluster = None
        self.host = None
        self.db_proxies, self.nodes, self.client_proxies = [], [], []

    def close(self):
        for n in self.nodes:
            n.stop()
        if self.host:
            self.host.stop()
        if self.cluster:
            self.cluster.destroy()


def dump_state(cluster, nodes, workdir):
    """What the database's backends and the nodes' counters say, when a node did not converge."""
    path = os.path.join(workdir, "stuck.txt")
    with open(path, "w") as f:
        for row in cluster.sql("SELECT pid, application_name, client_port, state, wait_event_type, wait_event, "
                               "xact_start, left(query, 120) FROM pg_stat_activity WHERE backend_type = 'client backend'"):
            f.write(row + "\n")
        for row in cluster.sql("SELECT locktype, relation::regclass, mode, granted, pid FROM pg_locks WHERE NOT granted"):
            f.write("waiting lock: " + row + "\n")
        for n in nodes:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % n.port, timeout=5) as r:
                    text = r.read().decode()
                f.write("%s pid %s:\n%s\n" % (n.name, n.pid(), "\n".join(
                    l for l in text.split("\n") if l.startswith("agentctx_pg") or l.startswith("agentctx_active"))))
            except OSError as e:
                f.write("%s: metrics unavailable: %s\n" % (n.name, e))
        for n in nodes:
            if n.pid():
                r = subprocess.run(["ss", "-tanpH"], capture_output=True, text=True)
                f.write("%s sockets (state Recv-Q Send-Q local peer):\n%s\n" % (n.name, "\n".join(
                    l for l in r.stdout.split("\n") if "pid=%d," % n.pid() in l)))
    log("state of the database and the nodes written to " + path)


def probe_writes(work, sessions, nodes):
    """After healing, one append to every session through every node: a write that hangs is a stuck session."""
    rng = random.Random(0)
    jobs = [(sid, i) for sid, _ in sessions for i in range(len(nodes))]
    with ThreadPoolExecutor(8) as pool:
        done = list(pool.map(lambda j: work.run_op("append", j[0], j[1], rng, probe=True), jobs))
    return [o for o in done if o["outcome"] != "ok" and o.get("error") != "stale_leaf"]


def setup(args, workdir, rig):
    rig.cluster = Cluster()
    rig.cluster.start()
    rig.host = ProxyHost()
    settings = os.path.join(workdir, "settings.json")
    write_settings(settings)
    for i in range(3):
        rig.db_proxies.append(rig.host.add("db%d" % i, rig.cluster.port))
        rig.nodes.append(Node("node%d" % i, args.server, rig.cluster.url(rig.db_proxies[-1].port), settings, workdir,
                              args.offline_delay_ms))
    for n in rig.nodes:
        if not n.start_until_ready():
            raise RuntimeError("%s did not start; see %s" % (n.name, n.log_path))
    for n in rig.nodes:
        rig.client_proxies.append(rig.host.add("client-" + n.name, n.port))


def create_sessions(args, client_proxies):
    sessions = []
    for i in range(args.sessions):
        node = i % len(client_proxies)
        sid = None
        for _ in range(20):
            sid = create_session(client_proxies[node].port)
            if sid:
                break
        if not sid:
            raise RuntimeError("could not create session %d" % i)
        sessions.append((sid, node))
    rng = random.Random(args.seed)
    hot = [sid for sid, _ in rng.sample(sessions, min(args.hot, len(sessions)))]
    return sessions, hot


def run(args, workdir):
    rig = Rig()
    try:
        setup(args, workdir, rig)
        cluster, db_proxies, nodes, client_proxies = rig.cluster, rig.db_proxies, rig.nodes, rig.client_proxies
        sessions, hot = create_sessions(args, client_proxies)
        log("%d sessions (%d hot), 3 nodes, %d clients, seed %d" % (len(sessions), len(hot), args.clients, args.seed))
        history = History()
        sampler = RssSampler(nodes)
        sampler.start()
        work = Workload(history, sessions, hot, [p.port for p in client_proxies], args.seed, args.timeout)
        injector = Injector(cluster, nodes, db_proxies, client_proxies, args.seed, log,
                            args.faults.split(",") if args.faults else None)
        load_start = time.monotonic()
        work.start(args.clients)
        calm_end = load_start + args.seconds * (args.calm if not args.no_faults else 1.0)
        load_end = load_start + args.seconds
        time.sleep(max(0.0, calm_end - time.monotonic()))
        log("calm phase over: %d operations" % len(history.ops))
        if not args.no_faults:
            injector.run(load_end)
        time.sleep(max(0.0, load_end - time.monotonic()))
        work.join()
        log("load over: %d operations; healing" % len(history.ops))
        injector.heal()
        heal_done = time.monotonic()
        if args.breaker:
            log("breaking the store on purpose: " + breakers.BREAKERS[args.breaker](cluster, history.ops))
        convergence, db, views = converge(cluster, nodes, [s for s, _ in sessions], args.heal_bound)
        log("converged in %s after healing took %.2f s" % (
            "%.2f s" % convergence if convergence is not None else "NOT", heal_done - load_end))
        if convergence is None:
            dump_state(cluster, nodes, workdir)
        stuck = probe_writes(work, sessions, nodes)
        log("write probes after healing: %d of %d sessions x nodes did not take a write" % (
            len(stuck), len(sessions) * len(nodes)))
        if stuck:
            dump_state(cluster, nodes, workdir)
        # The probes wrote: the views are compared with the database again (the same bound).
        again, db, views = converge(cluster, nodes, [s for s, _ in sessions], args.heal_bound)
        log("converged again after the probes in %s" % ("%.2f s" % again if again is not None else "NOT"))
        sampler.stop.set()
        report = checker.check(history.ops, db, views, sampler.peak, args.rss_limit_mb * 1024)
        for o in stuck[:1] if args.require_writes else []:
            report.fail("stuck_session", o["session"], "node %d did not take a write after healing (%s)" % (
                o["node"], o.get("error") or o.get("transport")), [o["id"]])
        fig = figures.compute([o for o in history.ops if not o["probe"]], injector.events, (load_start, calm_end), (calm_end, load_end),
                              load_end, convergence)
        fig["violations"] = len(report.violations)
        fig["stuck_after_healing"] = len(stuck)
        fig["peak_rss_kb"] = sampler.peak
        fig["node_starts"] = {n.name: n.starts for n in nodes}
        print(checker.describe(report, history.ops))
        print(figures.describe(fig))
        print("figures: %d of %d write probes after healing failed" % (len(stuck), len(sessions) * len(nodes)))
        print("figures: peak RSS " + ", ".join("%s %d MiB" % (k, v // 1024) for k, v in sorted(sampler.peak.items())))
        with open(os.path.join(workdir, "history.json"), "w") as f:
            json.dump({"ops": history.ops, "faults": injector.events,
                       "phases": {"load_start": load_start, "calm_end": calm_end, "load_end": load_end}}, f)
        with open(os.path.join(workdir, "report.json"), "w") as f:
            json.dump({"seed": args.seed, "seconds": args.seconds, "figures": fig, "counts": report.counts,
                       "violations": report.violations[:100]}, f, indent=1)
        return report
    finally:
        rig.close()


def main():
    args = parse_args()
    if not os.path.exists(os.path.join(PG_BIN, "initdb")):
        print("SKIP: PostgreSQL 15 is not installed (%s/initdb)" % PG_BIN)
        return 77
    if os.getuid() == 0 and subprocess.run(["id", "postgres"], capture_output=True).returncode != 0:
        print("SKIP: running as root and there is no 'postgres' user to run the server as")
        return 77
    workdir = args.out or tempfile.mkdtemp(prefix="agentctx-faults.")
    os.makedirs(workdir, exist_ok=True)
    log("work directory " + workdir)
    try:
        report = run(args, workdir)
    except (RuntimeError, OSError) as e:
        print("campaign could not run: %s" % e)
        return 2
    kinds = {v[0] for v in report.violations}
    if args.expect_violation:
        ok = args.expect_violation in kinds
        print("expected a %s violation: %s" % (args.expect_violation, "reported" if ok else "NOT reported"))
        return 0 if ok else 1
    return 0 if not report.violations else 1


if __name__ == "__main__":
    sys.exit(main())
