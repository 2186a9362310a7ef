#!/usr/bin/env python3
"""The checker on hand-made histories and databases: a clean one passes, each kind of broken one is reported."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checker  # noqa: E402


def msg(eid, parent, text):
    return {"type": "message", "id": eid, "parentId": parent, "message": {"role": "user", "content": text}}


def compaction(eid, parent, kept):
    return {"type": "compaction", "id": eid, "parentId": parent, "firstKeptEntryId": kept, "summary": "op=1.0"}


class Log:
    """A database of one session built entry by entry, always as a chain unless told otherwise."""

    def __init__(self, sid="s"):
        self.sid = sid
        self.rows = []

    def add(self, entry, parent=None):
        prev = self.rows[-1]["entry_id"] if self.rows else None
        entry["parentId"] = prev if parent is None else parent
        self.rows.append({"session_id": self.sid, "seq": len(self.rows) + 1, "entry_id": entry["id"],
                          "parent_id": entry["parentId"], "type": entry["type"], "line": json.dumps(entry)})
        return entry["id"]

    def db(self):
        return {"entries": {self.sid: self.rows}, "last_seq": {self.sid: len(self.rows)}}


def op(oid, kind, outcome, start, end, ids=(), count=None, session="s", **extra):
    o = {"id": oid, "kind": kind, "session": session, "node": 0, "start": start, "end": end, "outcome": outcome,
         "status": 201 if outcome == "ok" else None, "transport": None, "ids": list(ids)}
    if count is not None:
        o["count"] = count
    o.update(extra)
    return o


def kinds(ops, db, views=None, rss=None):
    views = views if views is not None else {"n0": {sid: {"leafId": rows[-1]["entry_id"] if rows else None}
                                                    for sid, rows in db["entries"].items()}}
    report = checker.check(ops, db, views, rss or {"n0": 1000}, 2000)
    return [v[0] for v in report.violations]


class CheckerTest(unittest.TestCase):
    def clean(self):
        log = Log()
        log.add(msg("a1", None, "op=1.0 hello"))
        log.add(msg("a2", None, "op=2.0 u"))
        log.add(msg("a3", None, "op=2.1 a"))
        log.add(compaction("c1", None, "a2"))
        ops = [op(1, "append", "ok", 0, 1, ["a1"]), op(2, "batch", "ok", 2, 3, ["a2", "a3"], count=2),
               op(3, "compact", "ok", 4, 5, compaction="c1"), op(4, "append", "unknown", 5, 6),
               op(5, "append", "failed", 6, 7)]
        return log, ops

    def test_a_clean_history_passes(self):
        log, ops = self.clean()
        self.assertEqual(kinds(ops, log.db()), [])

    def test_a_lost_acknowledged_append_is_reported(self):
        log, ops = self.clean()
        ops.append(op(6, "append", "ok", 8, 9, ["a9"]))
        self.assertEqual(kinds(ops, log.db()), ["lost_ack"])

    def test_an_entry_the_client_was_told_failed_is_reported(self):
        log, ops = self.clean()
        log.add(msg("a4", None, "op=5.0 refused"))
        self.assertEqual(kinds(ops, log.db()), ["failed_but_present"])

    def test_a_write_stored_twice_is_reported(self):
        log, ops = self.clean()
        log.add(msg("a5", None, "op=1.0 hello"))
        self.assertEqual(kinds(ops, log.db()), ["duplicate"])

    def test_acknowledgement_order_is_checked(self):
        log = Log()
        log.add(msg("b1", None, "op=2.0 second"))
        log.add(msg("b2", None, "op=1.0 first"))
        ops = [op(1, "append", "ok", 0, 1, ["b2"]), op(2, "append", "ok", 2, 3, ["b1"])]
        self.assertEqual(kinds(ops, log.db()), ["order"])
        ops[1]["start"] = 0.5  # concurrent: either order is right
        self.assertEqual(kinds(ops, log.db()), [])

    def test_a_fork_is_reported(self):
        log, ops = self.clean()
        log.add(msg("a6", None, "op=4.0 maybe"), parent="a1")
        self.assertEqual(kinds(ops, log.db()), ["fork"])

    def test_an_unknown_batch_stored_in_part_is_reported(self):
        log, ops = self.clean()
        ops.append(op(7, "batch", "unknown", 8, 9, count=2))
        log.add(msg("a7", None, "op=7.0 half"))
        self.assertEqual(kinds(ops, log.db()), ["partial_batch"])

    def test_a_compaction_of_the_same_prefix_twice_is_reported(self):
        log, ops = self.clean()
        log.add(compaction("c2", None, "a2"))
        self.assertEqual(kinds(ops, log.db()), ["double_compaction"])

    def test_a_compaction_of_a_prefix_not_in_the_log_is_reported(self):
        log, ops = self.clean()
        log.add(compaction("c3", None, "zz"))
        self.assertEqual(kinds(ops, log.db()), ["bad_prefix"])

    def test_an_acknowledged_compaction_must_be_stored(self):
        log, ops = self.clean()
        ops.append(op(8, "compact", "ok", 8, 9, compaction="c9"))
        self.assertEqual(kinds(ops, log.db()), ["lost_ack"])

    def test_the_same_compaction_id_in_two_sessions_is_two_compactions_not_a_duplicate(self):
        # Entry ids are unique within a session only: two sessions may both hold a "c1".
        log, ops = self.clean()
        other = Log("t")
        other.add(msg("b1", None, "op=9.0 hi"))
        other.add(compaction("c1", None, "b1"))
        db = log.db()
        db["entries"]["t"] = other.rows
        db["last_seq"]["t"] = len(other.rows)
        ops = ops + [op(9, "append", "ok", 8, 9, ["b1"], session="t"),
                     op(10, "compact", "ok", 10, 11, compaction="c1", session="t")]
        self.assertEqual(kinds(ops, db), [])

    def test_a_node_view_behind_the_database_is_reported(self):
        log, ops = self.clean()
        self.assertEqual(kinds(ops, log.db(), views={"n0": {"s": {"leafId": "a3"}}}), ["view_diverged"])

    def test_memory_over_the_bound_is_reported(self):
        log, ops = self.clean()
        self.assertEqual(kinds(ops, log.db(), rss={"n0": 5000}), ["memory"])

    def test_the_first_violation_is_printed_with_its_history(self):
        log, ops = self.clean()
        ops.append(op(6, "append", "ok", 8, 9, ["a9"]))
        report = checker.check(ops, log.db(), {}, {}, 1)
        text = checker.describe(report, ops)
        self.assertIn("first violation: lost_ack in session s: op 6", text)
        self.assertIn("op 6 append node 0", text)


if __name__ == "__main__":
    unittest.main()
