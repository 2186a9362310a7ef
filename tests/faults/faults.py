"""The fault schedule: one fault at a time, picked and timed by a seeded generator, each healed before the next."""

import random
import time

from fault_proxy import BLACKHOLE, DELAY, DROP, PASS, RESET

PROXY_KINDS = [("db", DELAY), ("db", DROP), ("db", RESET), ("db", BLACKHOLE),
               ("client", DELAY), ("client", DROP), ("client", RESET), ("client", BLACKHOLE)]
OTHER_KINDS = ["node_kill9", "pg_restart_fast", "pg_restart_smart", "listen_cut"]


class Injector:
    def __init__(self, cluster, nodes, db_proxies, client_proxies, seed, log, only=None):
        self.cluster = cluster
        self.nodes = nodes
        self.db_proxies = db_proxies
        self.client_proxies = client_proxies
        self.rng = random.Random(seed)
        self.log = log
        self.events = []  # {"kind", "node", "start", "end", "note"?}
        self.only = only  # fault kinds to pick from (all when empty)

    def kinds(self):
        every = ["%s_%s" % k for k in PROXY_KINDS] + OTHER_KINDS
        return [k for k in every if k in self.only] if self.only else every

    def run(self, until):
        """Injects faults until the monotonic time `until`, then leaves everything healed."""
        while time.monotonic() < until - 1.0:
            kind = self.rng.choice(self.kinds())
            node = self.rng.randrange(len(self.nodes))
            hold = self.rng.uniform(0.5, 4.0)
            start = time.monotonic()
            note = self._inject(kind, node, hold, until)
            end = time.monotonic()
            self.events.append({"kind": kind, "node": node, "start": start, "end": end, "note": note})
            self.log("fault %-22s node %d  %.2f s %s" % (kind, node, end - start, note or ""))
            time.sleep(self.rng.uniform(0.3, 2.0))

    def _inject(self, kind, node, hold, until):
        hold = max(0.2, min(hold, until - time.monotonic()))
        side, _, mode = kind.partition("_")
        if side in ("db", "client") and mode in (DELAY, DROP, RESET, BLACKHOLE):
            proxy = (self.db_proxies if side == "db" else self.client_proxies)[node]
            delay = self.rng.randrange(20, 400) if mode == DELAY else 0
            proxy.set_mode(mode, delay)
            time.sleep(hold)
            proxy.set_mode(PASS)
            return "delay %d ms" % delay if delay else None
        if kind == "node_kill9":
            self.nodes[node].kill9()
            time.sleep(hold)
            ok = self.nodes[node].start_until_ready()
            return None if ok else "did not restart within 60 s"
        if kind == "pg_restart_fast":
            self.cluster.stop("fast")
            time.sleep(min(hold, 1.0))
            self.cluster.start()
            return None
        if kind == "pg_restart_smart":
            return self._smart_restart(hold)
        if kind == "listen_cut":
            return self.cut_listen(node)
        raise ValueError(kind)

    def _smart_restart(self, hold):
        """A smart shutdown waits for every client to leave: the nodes' connections are reset until it is down."""
        self.cluster.stop_nowait("smart")
        for p in self.db_proxies:
            p.set_mode(RESET)
        end = time.monotonic() + 20
        while self.cluster.running() and time.monotonic() < end:
            time.sleep(0.05)
        note = None
        if self.cluster.running():
            self.cluster.stop("fast")
            note = "escalated to fast after 20 s"
        for p in self.db_proxies:
            p.set_mode(PASS)
        time.sleep(min(hold, 1.0))
        self.cluster.start()
        return note

    def cut_listen(self, node):
        pid = self.nodes[node].pid()
        if pid is None:
            return "node not running"
        try:
            rows = self.cluster.sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                    "WHERE application_name = 'agentctx-listen-%d'" % pid)
        except RuntimeError as e:
            return "not cut: %s" % e
        return "terminated %s" % (rows[0] if rows else 0)

    def heal(self):
        for p in self.db_proxies + self.client_proxies:
            p.set_mode(PASS)
        if not self.cluster.running():
            self.cluster.start()
        for n in self.nodes:
            n.start_until_ready()
