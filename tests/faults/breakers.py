"""Deliberately broken stores, for the test that the checker catches them; each edits the database behind the nodes.

Only the campaign's --break option runs these, after the load and before the checker reads.
"""

import json
import re

from checker import MARKER, message_text


def _last_rows(cluster):
    rows = cluster.sql("SELECT row_to_json(e) FROM (SELECT DISTINCT ON (session_id) session_id, seq, entry_id, "
                       "parent_id, line FROM agentctx_entries ORDER BY session_id, seq DESC) e")
    return [json.loads(r) for r in rows]


def _acknowledged_last(cluster, ops):
    """(row, op): a session's last stored entry that an acknowledged single append wrote."""
    acked = {o["id"]: o for o in ops if o["kind"] == "append" and o["outcome"] == "ok"}
    for row in _last_rows(cluster):
        m = MARKER.match(message_text(row["line"]) or "")
        if m and int(m.group(1)) in acked:
            return row, acked[int(m.group(1))]
    raise RuntimeError("no session ends with an acknowledged append to break")


def drop_acknowledged(cluster, ops):
    """A store that loses an acknowledged write: the entry is deleted and the count put back."""
    row, op = _acknowledged_last(cluster, ops)
    cluster.sql("BEGIN; DELETE FROM agentctx_entries WHERE session_id = $q$%s$q$ AND seq = %d; "
                "UPDATE agentctx_sessions SET last_seq = last_seq - 1 WHERE id = $q$%s$q$; COMMIT"
                % (row["session_id"], row["seq"], row["session_id"]))
    return "deleted op %d's acknowledged entry %s of session %s" % (op["id"], row["entry_id"], row["session_id"])


def duplicate_acknowledged(cluster, ops):
    """A store without compare-and-set that applies a retried append twice: a second copy at the end."""
    row, op = _acknowledged_last(cluster, ops)
    # Another first digit than the original's, so the copy never takes the original's id.
    new_id = ("e" if row["entry_id"].startswith("d") else "d") + row["entry_id"][1:]
    line = re.sub(r'"id":"[^"]*"', '"id":"%s"' % new_id, row["line"], count=1)
    line = re.sub(r'"parentId":("[^"]*"|null)', '"parentId":"%s"' % row["entry_id"], line, count=1)
    cluster.sql("BEGIN; INSERT INTO agentctx_entries (session_id, seq, entry_id, parent_id, type, line) VALUES "
                "($q$%s$q$, %d, $q$%s$q$, $q$%s$q$, 'message', $q$%s$q$); "
                "UPDATE agentctx_sessions SET last_seq = last_seq + 1 WHERE id = $q$%s$q$; COMMIT"
                % (row["session_id"], row["seq"] + 1, new_id, row["entry_id"], line, row["session_id"]))
    return "stored op %d's entry a second time as %s in session %s" % (op["id"], new_id, row["session_id"])


BREAKERS = {"drop-ack": drop_acknowledged, "duplicate": duplicate_acknowledged}
