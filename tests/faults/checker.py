"""The campaign's independent checker: the recorded history against the database and every node's view.

It knows the store only through what it reads (the stored rows, the nodes' answers) and what the
clients were told; it shares no code with the server. Each message a client sends carries a
marker `op=<operation id>.<index>` in its text, which is how a stored entry is traced to the
operation that wrote it, also when the client never learnt the outcome.
"""

import json
import re

MARKER = re.compile(r"^op=(\d+)\.(\d+)\b")


def message_text(line):
    """The text of a stored message entry's content (a string or text parts), or None."""
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    if entry.get("type") != "message":
        return None
    content = (entry.get("message") or {}).get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return None


def first_kept(line):
    try:
        return json.loads(line).get("firstKeptEntryId")
    except ValueError:
        return None


class Report:
    def __init__(self):
        self.counts = {}
        self.violations = []  # (kind, session, message, operation ids)

    def count(self, key, n=1):
        self.counts[key] = self.counts.get(key, 0) + n

    def fail(self, kind, session, message, ops=()):
        self.violations.append((kind, session, message, list(ops)))


def _index_markers(db, report):
    """op id -> [(session, seq, index, entry id)] over every stored message entry."""
    found = {}
    for sid, rows in db["entries"].items():
        for row in rows:
            text = message_text(row["line"])
            m = MARKER.match(text or "")
            if m:
                found.setdefault(int(m.group(1)), []).append((sid, row["seq"], int(m.group(2)), row["entry_id"]))
                report.count("entries_traced")
    return found


def check_linear(db, report):
    """One linear log per session: seq 1..n, each entry's parent the one before, ids unique, last_seq = n."""
    for sid, rows in db["entries"].items():
        ids = set()
        prev = None
        for i, row in enumerate(rows):
            if row["seq"] != i + 1:
                report.fail("fork", sid, "seq %d at position %d" % (row["seq"], i + 1))
                break
            if row["parent_id"] != prev:
                report.fail("fork", sid, "entry %s (seq %d) has parent %s, the entry before is %s" %
                            (row["entry_id"], row["seq"], row["parent_id"], prev))
                break
            if row["entry_id"] in ids:
                report.fail("fork", sid, "entry id %s stored twice" % row["entry_id"])
                break
            ids.add(row["entry_id"])
            prev = row["entry_id"]
        if db["last_seq"].get(sid, 0) != len(rows):
            report.fail("fork", sid, "last_seq %s but %d entries" % (db["last_seq"].get(sid), len(rows)))
        report.count("entries", len(rows))


def _expected_count(op):
    return op.get("count", 1) if op["kind"] == "batch" else 1


def check_writes(ops, db, report):
    """Acknowledged writes present once, as told; failed ones absent; unknown ones all or none, at most once.

    Returns op id -> first seq of every acknowledged write (for the order check)."""
    found = _index_markers(db, report)
    positions = {}
    for op in ops:
        if op["kind"] not in ("append", "batch"):
            continue
        report.count("%s_%s" % (op["kind"], op["outcome"]))
        hits = found.get(op["id"], [])
        n = _expected_count(op)
        by_index = {}
        for h in hits:
            by_index.setdefault(h[2], []).append(h)
        if any(h[0] != op["session"] for h in hits):
            report.fail("wrong_session", op["session"], "op %d found in another session" % op["id"], [op["id"]])
        if any(len(v) > 1 for v in by_index.values()):
            report.fail("duplicate", op["session"], "op %d stored %d times" % (op["id"], len(hits)), [op["id"]])
            continue
        if op["outcome"] == "failed" and hits:
            report.fail("failed_but_present", op["session"], "op %d was told %s (%s) but is stored at seq %d" %
                        (op["id"], op.get("status"), op.get("error") or op.get("transport"), hits[0][1]), [op["id"]])
            continue
        if op["outcome"] == "unknown":
            if hits and len(by_index) != n:
                report.fail("partial_batch", op["session"], "op %d: %d of %d entries stored" %
                            (op["id"], len(by_index), n), [op["id"]])
            report.count("unknown_committed" if hits else "unknown_absent")
            continue
        if op["outcome"] != "ok":
            continue
        if len(by_index) != n:
            report.fail("lost_ack", op["session"], "op %d acknowledged %d entries, %d stored" %
                        (op["id"], n, len(by_index)), [op["id"]])
            continue
        seqs = [by_index[k][0][1] for k in range(n)]
        if seqs != list(range(seqs[0], seqs[0] + n)):
            report.fail("batch_split", op["session"], "op %d stored at seqs %s" % (op["id"], seqs), [op["id"]])
        told = op.get("ids") or []
        stored = [by_index[k][0][3] for k in range(n)]
        if told and told != stored:
            report.fail("wrong_id", op["session"], "op %d told ids %s, stored %s" % (op["id"], told, stored),
                        [op["id"]])
        positions[op["id"]] = seqs[0]
    return positions


def check_order(ops, positions, report):
    """Acknowledgement order: an acknowledged write that ended before another started is stored before it."""
    by_session = {}
    for op in ops:
        if op["id"] in positions:
            by_session.setdefault(op["session"], []).append(op)
    for sid, group in by_session.items():
        ended = sorted(group, key=lambda o: o["end"])
        started = sorted(group, key=lambda o: o["start"])
        best = None  # the op with the highest position among those that ended so far
        j = 0
        for op in started:
            while j < len(ended) and ended[j]["end"] < op["start"]:
                if best is None or positions[ended[j]["id"]] > positions[best["id"]]:
                    best = ended[j]
                j += 1
            if best is not None and positions[best["id"]] > positions[op["id"]]:
                report.fail("order", sid, "op %d (acknowledged before op %d started) is stored after it: seq %d > %d"
                            % (best["id"], op["id"], positions[best["id"]], positions[op["id"]]),
                            [best["id"], op["id"]])
                break


def check_compactions(ops, db, report):
    """Every compaction covers a prefix that was in the log; no two commit for the same prefix; acks stored."""
    stored_ids = {}
    for sid, rows in db["entries"].items():
        seq_of = {}
        last_kept = None
        messages_since = True
        for row in rows:
            if row["type"] == "compaction":
                report.count("compactions_stored")
                kept = first_kept(row["line"])
                # Entry ids are unique within a session only (8 hex digits): count per session.
                stored_ids[(sid, row["entry_id"])] = stored_ids.get((sid, row["entry_id"]), 0) + 1
                if kept is not None and kept not in seq_of:
                    report.fail("bad_prefix", sid, "compaction %s keeps from %s, not an earlier entry" %
                                (row["entry_id"], kept))
                if kept is not None and kept == last_kept and not messages_since:
                    report.fail("double_compaction", sid, "compaction %s repeats the prefix up to %s" %
                                (row["entry_id"], kept))
                last_kept = kept
                messages_since = False
            elif row["type"] == "message":
                messages_since = True
            seq_of[row["entry_id"]] = row["seq"]
    for op in ops:
        if op["kind"] in ("compact", "turn_end"):
            report.count("%s_%s" % (op["kind"], op["outcome"]))
        cid = op.get("compaction")
        if op["outcome"] == "ok" and cid:
            report.count("compactions_acknowledged")
            stored = stored_ids.get((op["session"], cid), 0)
            if stored != 1:
                report.fail("lost_ack", op["session"], "compaction %s acknowledged, stored %d times" %
                            (cid, stored), [op["id"]])


def check_views(db, views, report):
    """Every node's context of every session ends at the stored leaf and shows only stored entries."""
    for node, per_session in views.items():
        for sid, view in per_session.items():
            rows = db["entries"].get(sid, [])
            leaf = rows[-1]["entry_id"] if rows else None
            if view is None:
                report.fail("view_diverged", sid, "node %s could not serve the context" % node)
                continue
            if view.get("leafId") != leaf:
                report.fail("view_diverged", sid, "node %s has leaf %s, the database %s" %
                            (node, view.get("leafId"), leaf))
            known = {r["entry_id"] for r in rows}
            missing = [e for e in view.get("entryIds", []) if e not in known]
            if missing:
                report.fail("view_diverged", sid, "node %s shows entries %s the database does not hold" %
                            (node, missing[:3]))
            report.count("views_checked")


def check_memory(peak_rss_kb, limit_kb, report):
    for node, kb in peak_rss_kb.items():
        if kb > limit_kb:
            report.fail("memory", None, "node %s reached %d KiB, over the bound %d KiB" % (node, kb, limit_kb))


def check(ops, db, views, peak_rss_kb, rss_limit_kb):
    report = Report()
    check_linear(db, report)
    positions = check_writes(ops, db, report)
    check_order(ops, positions, report)
    check_compactions(ops, db, report)
    check_views(db, views, report)
    check_memory(peak_rss_kb, rss_limit_kb, report)
    return report


def describe(report, ops, limit_ops=12):
    """The counts, then the first violation with the operation history of its session."""
    lines = ["checker: " + ", ".join("%s %d" % kv for kv in sorted(report.counts.items()))]
    lines.append("checker: %d violation(s)" % len(report.violations))
    if report.violations:
        kind, sid, message, op_ids = report.violations[0]
        lines.append("first violation: %s in session %s: %s" % (kind, sid, message))
        history = [o for o in ops if o["session"] == sid] if sid else []
        history.sort(key=lambda o: o["start"])
        if op_ids:
            last = max(i for i, o in enumerate(history) if o["id"] in op_ids) if any(
                o["id"] in op_ids for o in history) else len(history) - 1
            history = history[max(0, last - limit_ops + 1):last + 3]
        else:
            history = history[-limit_ops:]
        t0 = min((o["start"] for o in ops), default=0)
        for o in history:
            lines.append("  op %d %s node %d [%.3f, %.3f] -> %s %s %s ids=%s" %
                         (o["id"], o["kind"], o["node"], o["start"] - t0, o["end"] - t0, o["outcome"],
                          o.get("status"), o.get("error") or o.get("transport") or "", o.get("ids")))
    return "\n".join(lines)


def read_db(cluster):
    """The stored sessions and entries, in seq order, read over the cluster's own socket."""
    db = {"entries": {}, "last_seq": {}}
    for line in cluster.sql("SELECT id, last_seq FROM agentctx_sessions"):
        sid, last = line.split("\t")
        db["last_seq"][sid] = int(last)
        db["entries"].setdefault(sid, [])
    rows = cluster.sql("SELECT row_to_json(e) FROM (SELECT session_id, seq, entry_id, parent_id, type, line "
                       "FROM agentctx_entries ORDER BY session_id, seq) e")
    for line in rows:
        r = json.loads(line)
        db["entries"].setdefault(r["session_id"], []).append(r)
    return db
