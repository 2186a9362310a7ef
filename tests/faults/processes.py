"""The campaign's processes: a throwaway PostgreSQL 15 cluster on a loopback port and agent_server nodes."""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

PG_BIN = os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_owner(cmd):
    return (["runuser", "-u", "postgres", "--"] + cmd) if os.getuid() == 0 else cmd


class Cluster:
    """initdb in a temp dir; the server listens on 127.0.0.1:port (trust auth) and a private socket."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="agentctx-faults-pg.")
        self.data = os.path.join(self.dir, "data")
        self.sock = os.path.join(self.dir, "sock")
        self.port = free_port()
        os.makedirs(self.sock)
        if os.getuid() == 0:
            shutil.chown(self.dir, "postgres")
            shutil.chown(self.sock, "postgres")
        self._run([os.path.join(PG_BIN, "initdb"), "-D", self.data, "-U", "agentctx", "--auth=trust", "-E",
                   "UTF8", "--no-locale"])

    def url(self, port=None):
        return "postgresql://agentctx@127.0.0.1:%d/postgres" % (port or self.port)

    def _run(self, cmd, check=True, timeout=120):
        log = open(os.path.join(self.dir, "ctl.log"), "a")
        r = subprocess.run(_as_owner(cmd), stdout=log, stderr=subprocess.STDOUT, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError("%s failed; see %s/ctl.log and server.log" % (cmd[0], self.dir))
        return r.returncode

    def start(self):
        opts = "-c listen_addresses='127.0.0.1' -p %d -c unix_socket_directories='%s' -c max_connections=300" % (
            self.port, self.sock)
        self._run([os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-l", os.path.join(self.dir, "server.log"),
                   "-w", "-t", "60", "-o", opts, "start"])

    def stop(self, mode, wait_s=60):
        """pg_ctl stop -m mode; True when the server was down within wait_s."""
        return self._run([os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-m", mode, "-w", "-t", str(wait_s),
                          "stop"], check=False, timeout=wait_s + 30) == 0

    def stop_nowait(self, mode):
        self._run([os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-m", mode, "-W", "stop"], check=False)

    def running(self):
        return os.path.exists(os.path.join(self.data, "postmaster.pid"))

    def sql(self, statement):
        """Rows of one statement (psql -At, tab-separated), on the private socket."""
        r = subprocess.run(["psql", "-X", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-h", self.sock, "-p",
                            str(self.port), "-U", "agentctx", "-d", "postgres", "-c", statement],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError("psql: " + r.stderr.strip())
        return [line for line in r.stdout.split("\n") if line]

    def destroy(self):
        if self.running():
            self.stop("immediate", 30)
        shutil.rmtree(self.dir, ignore_errors=True)


class Node:
    """One agent_server process on a fixed port; kill -9 and restart keep the port."""

    def __init__(self, name, binary, db_url, settings, workdir, offline_delay_ms):
        self.name = name
        self.binary = binary
        self.db_url = db_url
        self.settings = settings
        self.port = free_port()
        self.log_path = os.path.join(workdir, name + ".log")
        self.offline_delay_ms = offline_delay_ms
        self.proc = None
        self.starts = 0

    def spawn(self):
        env = dict(os.environ, AGENTCTX_OFFLINE_DELAY_MS=str(self.offline_delay_ms))
        for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AGENTCTX_PROVIDER"):
            env.pop(key, None)
        log = open(self.log_path, "a")
        log.write("--- start %d at %.3f\n" % (self.starts, time.time()))
        log.flush()
        self.proc = subprocess.Popen([self.binary, "--no-auth", "--port", str(self.port), "--threads", "2",
                                      "--store", self.db_url, "--settings", self.settings],
                                     stdout=log, stderr=subprocess.STDOUT, env=env)
        self.starts += 1

    def ready(self, timeout_s=0.5):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port, timeout=timeout_s) as r:
                return r.status == 200
        except OSError:
            return False

    def start_until_ready(self, deadline_s=60):
        """Spawns until the node serves (it exits when the database cannot be reached at start)."""
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            if self.proc is None or self.proc.poll() is not None:
                self.spawn()
            if self.ready():
                return True
            time.sleep(0.1)
        return False

    def kill9(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def rss_kb(self):
        if not self.proc or self.proc.poll() is not None:
            return None
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None

    def pid(self):
        return self.proc.pid if self.proc and self.proc.poll() is None else None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill9()


def write_settings(path):
    # A small keepRecentTokens so that manual and turn-end compactions find something to summarize.
    with open(path, "w") as f:
        json.dump({"compaction": {"keepRecentTokens": 200, "reserveTokens": 1000}}, f)
