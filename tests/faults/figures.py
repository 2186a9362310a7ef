"""The campaign's figures from the history and the fault log: throughput, faults, unavailability."""


def _unavailable(op):
    """A request the node could not serve (not a refusal such as stale_leaf or nothing to compact)."""
    return op["transport"] is not None or (op["status"] or 0) >= 500


def _entries(op):
    return op.get("count", 1) if op["kind"] == "batch" else 1


def unavailability_windows(ops, load_end):
    """Per session: from the start of the first request it could not serve to the end of the next one served.

    (session, opened, closed, recovered): a window still open when the load ended closes then, unrecovered."""
    by_session = {}
    for op in ops:
        by_session.setdefault(op["session"], []).append(op)
    windows = []
    for sid, group in by_session.items():
        group.sort(key=lambda o: o["start"])
        opened = None
        for op in group:
            if _unavailable(op):
                opened = op["start"] if opened is None else opened
            elif op["outcome"] == "ok" and opened is not None and op["end"] > opened:
                windows.append((sid, opened, op["end"], True))
                opened = None
        if opened is not None:
            windows.append((sid, opened, load_end, False))
    return windows


def cause(events, at, grace_s=1.0):
    """The fault a window that opened at `at` is charged to: the one active then, or that ended just before."""
    for e in events:
        if e["start"] <= at <= e["end"] + grace_s:
            return e["kind"]
    return "none"


def compute(ops, events, calm, faulty, load_end, convergence_s):
    """calm and faulty are (start, end) monotonic intervals of the two load phases."""
    acked = [o for o in ops if o["outcome"] == "ok"]

    def rate(interval):
        n = sum(_entries(o) for o in acked if o["kind"] in ("append", "batch") and interval[0] <= o["end"] < interval[1])
        return n / max(1e-9, interval[1] - interval[0])

    windows = unavailability_windows(ops, load_end)
    per_session = {}
    for sid, a, b, _ in windows:
        per_session[sid] = max(per_session.get(sid, 0.0), b - a)
    per_kind = {}
    for sid, a, b, _ in windows:
        kind = cause(events, a)
        per_kind[kind] = max(per_kind.get(kind, 0.0), b - a)
    maxima = sorted(per_session.values())
    faults = {}
    for e in events:
        faults[e["kind"]] = faults.get(e["kind"], 0) + 1
    return {
        "ops": len(ops),
        "acknowledged": {
            "appends": sum(1 for o in acked if o["kind"] == "append"),
            "batches": sum(1 for o in acked if o["kind"] == "batch"),
            "entries": sum(_entries(o) for o in acked if o["kind"] in ("append", "batch")),
            "turn_ends": sum(1 for o in acked if o["kind"] == "turn_end"),
            "compactions": sum(1 for o in acked if o.get("compaction")),
        },
        "unknown": sum(1 for o in ops if o["outcome"] == "unknown"),
        "failed": sum(1 for o in ops if o["outcome"] == "failed"),
        "faults": faults,
        "longest_unavailability_s": {
            "any_session": maxima[-1] if maxima else 0.0,
            "median_of_session_maxima": maxima[len(maxima) // 2] if maxima else 0.0,
            "sessions_affected": len(maxima),
            "recovered_max": max([b - a for _, a, b, closed in windows if closed] or [0.0]),
            "open_at_load_end": sum(1 for w in windows if not w[3]),
            "per_fault_kind": per_kind,
        },
        "convergence_s": convergence_s,
        "entries_per_s": {"calm": rate(calm), "faults": rate(faulty)},
    }


def describe(fig):
    a = fig["acknowledged"]
    u = fig["longest_unavailability_s"]
    lines = [
        "figures: %d operations; acknowledged %d appends, %d batches (%d entries in all), %d turn ends, %d compactions;"
        " %d unknown, %d refused" % (fig["ops"], a["appends"], a["batches"], a["entries"], a["turn_ends"],
                                     a["compactions"], fig["unknown"], fig["failed"]),
        "figures: faults " + ", ".join("%s %d" % kv for kv in sorted(fig["faults"].items())),
        "figures: longest unavailability %.2f s (median of per-session maxima %.2f s, %d sessions affected); "
        "longest that ended before the load did %.2f s; %d sessions still unavailable when the load ended" % (
            u["any_session"], u["median_of_session_maxima"], u["sessions_affected"], u["recovered_max"],
            u["open_at_load_end"]),
        "figures: longest unavailability by the fault it opened under: " + ", ".join(
            "%s %.2f s" % kv for kv in sorted(u["per_fault_kind"].items())),
        "figures: convergence after healing %s" % (
            "%.2f s" % fig["convergence_s"] if fig["convergence_s"] is not None else "NOT reached"),
        "figures: acknowledged entries/s without faults %.1f, under faults %.1f" % (
            fig["entries_per_s"]["calm"], fig["entries_per_s"]["faults"]),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    # Recomputes the figures of a finished campaign: figures.py WORKDIR/history.json
    import json
    import sys

    h = json.load(open(sys.argv[1]))
    ops = [o for o in h["ops"] if not o.get("probe")]
    ph = h.get("phases") or {"load_start": min(o["start"] for o in ops), "load_end": max(o["end"] for o in ops),
                             "calm_end": min([e["start"] for e in h["faults"]] or [max(o["end"] for o in ops)])}
    fig = compute(ops, h["faults"], (ph["load_start"], ph["calm_end"]), (ph["calm_end"], ph["load_end"]),
                  ph["load_end"], None)
    print(describe(fig))
