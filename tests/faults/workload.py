"""The campaign's clients: appends, provider-format batches, turn ends and compactions, each recorded in the history."""

import http.client
import json
import random
import threading
import time

OK, FAILED, UNKNOWN = "ok", "failed", "unknown"


class History:
    """Every client operation: start, end (monotonic seconds), and what the client was told."""

    def __init__(self):
        self.ops = []
        self._lock = threading.Lock()
        self._next = 0

    def new_id(self):
        with self._lock:
            self._next += 1
            return self._next

    def add(self, op):
        with self._lock:
            self.ops.append(op)


def _ask(port, method, path, body, timeout_s):
    """(status, parsed body or None, transport error or None); connection refused is a transport error."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
    try:
        data = json.dumps(body).encode() if body is not None else b""
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        raw = r.read()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        return r.status, parsed, None
    except ConnectionRefusedError as e:
        return None, None, "refused: %s" % e
    except (OSError, http.client.HTTPException) as e:
        return None, None, "%s: %s" % (type(e).__name__, e)
    finally:
        conn.close()


def outcome_of(status, body, transport):
    """What the client may conclude: ok, failed (nothing written) or unknown (may have committed).

    A refused connection sent nothing; a 4xx refused the request before writing; 503 for a full
    session table or connection table wrote nothing. Any other error (a timeout, a reset after the
    request was sent, database_error) may have committed, as docs/postgresql.md says.
    """
    if transport is not None:
        return FAILED if transport.startswith("refused") else UNKNOWN
    if 200 <= status < 300:
        return OK
    code = ((body or {}).get("error") or {}).get("code", "") if isinstance(body, dict) else ""
    if 400 <= status < 500 or code in ("too_many_open_sessions", "too_many_connections"):
        return FAILED
    return UNKNOWN


def _user(text):
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": int(time.time() * 1000)}}


class Workload:
    """Client threads over the sessions; hot sessions go to every node, the others to their home node."""

    def __init__(self, history, sessions, hot, client_ports, seed, timeout_s=5.0):
        self.history = history
        self.sessions = sessions  # [(session id, home node index)]
        self.hot = hot  # session ids served by every node
        self.client_ports = client_ports  # node index -> the port clients use (a proxy)
        self.seed = seed
        self.timeout_s = timeout_s
        self.stop = threading.Event()
        self.threads = []

    def start(self, clients):
        for c in range(clients):
            t = threading.Thread(target=self._client, args=(c,), daemon=True)
            t.start()
            self.threads.append(t)

    def join(self):
        self.stop.set()
        for t in self.threads:
            t.join(self.timeout_s + 30)

    def _client(self, c):
        rng = random.Random(self.seed * 1000 + c)
        while not self.stop.is_set():
            if self.hot and rng.random() < 0.3:
                sid = rng.choice(self.hot)
                node = rng.randrange(len(self.client_ports))
            else:
                sid, node = rng.choice(self.sessions)
            r = rng.random()
            kind = "append" if r < 0.5 else "batch" if r < 0.8 else "turn_end" if r < 0.93 else "compact"
            self.run_op(kind, sid, node, rng)

    def run_op(self, kind, sid, node, rng, probe=False):
        oid = self.history.new_id()
        port = self.client_ports[node]
        base = "/v1/sessions/" + sid
        if kind == "append":
            req = ("POST", base + "/entries", _user("op=%d.0 %s" % (oid, "x" * rng.randrange(10, 400))))
        elif kind == "batch":
            n = rng.randrange(1, 4)
            msgs = []
            for i in range(n):
                role = "user" if i % 2 == 0 else "assistant"
                msgs.append({"role": role, "content": "op=%d.%d %s" % (oid, i, "y" * rng.randrange(10, 300))})
            if msgs[-1]["role"] != "assistant":
                msgs.append({"role": "assistant", "content": "op=%d.%d done" % (oid, n)})
            req = ("POST", base + "/messages?format=openai",
                   {"messages": msgs, "usage": {"prompt_tokens": rng.randrange(100, 2000), "completion_tokens": 20}})
        elif kind == "turn_end":
            # Now and then a usage over any threshold, so that the turn end compacts.
            prompt = 10_000_000 if rng.random() < 0.2 else rng.randrange(100, 2000)
            req = ("POST", base + "/turn-end",
                   {"format": "openai", "usage": {"prompt_tokens": prompt, "completion_tokens": 10}})
        else:
            req = ("POST", base + "/compact", None)
        start = time.monotonic()
        status, body, transport = _ask(port, req[0], req[1], req[2], self.timeout_s)
        end = time.monotonic()
        told = outcome_of(status, body, transport)
        op = {"id": oid, "kind": kind, "session": sid, "node": node, "start": start, "end": end,
              "outcome": told, "status": status, "transport": transport, "probe": probe}
        if isinstance(body, dict):
            if "error" in body:
                op["error"] = (body.get("error") or {}).get("code")
            op["ids"] = body.get("ids") or ([body["id"]] if "id" in body else [])
            if kind == "batch":
                op["count"] = len(req[2]["messages"])
            if body.get("entryId") and (kind == "compact" or body.get("compacted")):
                op["compaction"] = body["entryId"]
        if kind == "batch" and "count" not in op:
            op["count"] = len(req[2]["messages"])
        self.history.add(op)
        return op


def create_session(port, timeout_s=10.0):
    status, body, _ = _ask(port, "POST", "/v1/sessions", None, timeout_s)
    return body["id"] if status == 201 and isinstance(body, dict) else None
