#!/usr/bin/env python3
"""Regenerates the `agentctx simulate` tables of README.md and docs/cost.md.

Generates the long sessions (gen_session, seeds 1-3, 2,500 entries), writes the settings files
the tables name, runs `agentctx simulate --json` and prints each table as Markdown. Usage:

    tests/tools/simulate_tables.py [--build build/default] [--work DIR] [--only NAME]...

NAME is one of: bundled, generated, sweep, clearing. The sessions and settings files stay in DIR
(default: a fresh temporary directory), so the printed commands can be run again by hand.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SETTINGS = {
    "no-clearing": {"clearToolResults": {"enabled": False}},
    "foreground": {"background": {"enabled": False}},
    "no-budget": {"workingBudget": 0},
    "standalone": {"summaryRequest": "standalone"},
    "keep-3000": {"keepRecentTokens": 3000},
    "trigger-0.7": {"clearToolResults": {"trigger": 0.7}},
    "keep-5": {"clearToolResults": {"keep": 5}},
    "clear-10000": {"clearToolResults": {"clearAtLeast": 10000}},
    "wb0-t0.25-c10000": {"workingBudget": 0, "clearToolResults": {"trigger": 0.25, "clearAtLeast": 10000}},
    "wb0-t0.35-c10000": {"workingBudget": 0, "clearToolResults": {"trigger": 0.35, "clearAtLeast": 10000}},
    "wb0-t0.25-c20000": {"workingBudget": 0, "clearToolResults": {"trigger": 0.25, "clearAtLeast": 20000}},
}

BUNDLED = ["coding-task.jsonl", "csv-export-fix.jsonl", "pi16-task.jsonl"]


def write_settings(work):
    for name, compaction in SETTINGS.items():
        with open(os.path.join(work, name + ".json"), "w") as f:
            json.dump({"compaction": compaction}, f)


def generate(build, work, seeds, entries):
    files = []
    for seed in seeds:
        path = os.path.join(work, "s%d.jsonl" % seed)
        if not os.path.exists(path):
            subprocess.run([os.path.join(build, "tests", "gen_session"), "--seed", str(seed), "--entries", str(entries),
                            "-o", path], check=True)
        files.append(path)
    return files


def simulate(build, work, files, args):
    cmd = [os.path.join(build, "examples", "agentctx"), "simulate"] + files + args + ["--json"]
    shown = ["agentctx simulate"] + [os.path.relpath(f, work) if f.startswith(work) else os.path.relpath(f, ROOT)
                                     for f in files]
    shown += [os.path.basename(a) if a.endswith(".json") else a for a in args]
    print("\n```sh\n" + " ".join(shown) + "\n```\n")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=work).stdout
    return json.loads(out)


def settings_args(names):
    return [a for n in names for a in ("--settings", n + ".json")]


def n(x):
    return "{:,}".format(int(round(x)))


def money(x):
    return "{:,.2f}".format(x) if x >= 10 else "{:.4f}".format(x)


def seconds(x):
    return "{:,.1f}".format(x)


def ratio(x, base):
    return "%.2f×" % (x / base) if base else "-"


def policy_table(result, rows):
    """rows: (label, policy name) pairs."""
    p = result["policies"]
    none = p.get("none", {}).get("input", {}).get("billed")
    pi = p.get("pi", {}).get("input", {}).get("billed")
    print("| policy | requests | billed input | vs none | vs pi | cost $ | compactions | summary calls | stall s | stall p95 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, name in rows:
        c = p[name]
        billed = c["input"]["billed"]
        print("| %s | %s | %s | %s | %s | %s | %d | %d | %s | %s |" % (
            label, n(c["requests"]), n(billed), ratio(billed, none), ratio(billed, pi), money(c["cost"]),
            c["compactions"], c["summaryRequests"], seconds(c["stall"]["totalSeconds"]), seconds(c["stall"]["p95"])))


def per_session(result, name):
    parts = []
    for s in result["sessions"]:
        c, pi = s["policies"][name]["input"]["billed"], s["policies"]["pi"]["input"]["billed"]
        parts.append("%s %s of %s (%s)" % (os.path.basename(s["file"]), n(c), n(pi), ratio(c, pi)))
    print("\nPer session, `%s` against `pi`: %s." % (name, "; ".join(parts)))


def bundled(build, work, _):
    files = [os.path.join(ROOT, "examples", "sessions", f) for f in BUNDLED]
    names = ["no-clearing", "foreground", "keep-3000"]
    r = simulate(build, work, files, ["--context-window", "24000", "--policy", "none", "--policy", "pi"] +
                 settings_args(names[:1]) + ["--policy", "agentctx"] + settings_args(names[1:]))
    policy_table(r, [("none", "none"), ("pi (Pi 1.6)", "pi"), ("agentctx without clearing", "no-clearing"),
                     ("agentctx defaults", "agentctx"), ("agentctx, foreground compactions", "foreground"),
                     ("agentctx, keepRecentTokens 3,000", "keep-3000")])


def generated(build, work, files):
    r = simulate(build, work, files, ["--policy", "none", "--policy", "pi"] + settings_args(["no-clearing"]) +
                 ["--policy", "agentctx"] + settings_args(["foreground", "no-budget", "standalone"]))
    policy_table(r, [("none", "none"), ("pi (Pi 1.6)", "pi"), ("agentctx without clearing", "no-clearing"),
                     ("agentctx defaults", "agentctx"), ("agentctx, foreground compactions", "foreground"),
                     ("agentctx without a working budget", "no-budget"),
                     ("agentctx, standalone summary requests", "standalone")])
    per_session(r, "agentctx")


def sweep(build, work, files):
    for spec in ("workingBudget=40000..160000/20000", "workingBudget=50000..70000/10000"):
        r = simulate(build, work, files, ["--policy", "pi", "--sweep", spec])
        pi = r["policies"]["pi"]["input"]["billed"]
        print("| workingBudget | billed input | vs pi | cost $ | compactions | summary calls | tokens sent to summarizers | stall s |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for name, c in r["policies"].items():
            if not name.startswith("workingBudget="):
                continue
            billed = c["input"]["billed"]
            print("| %s | %s | %s | %s | %d | %d | %s | %s |" % (
                n(int(name.split("=")[1])), n(billed), ratio(billed, pi), money(c["cost"]), c["compactions"],
                c["summaryRequests"], n(c["summarizerInputTokens"]), seconds(c["stall"]["totalSeconds"])))


def clearing(build, work, files):
    names = ["trigger-0.7", "keep-5", "clear-10000", "no-budget", "wb0-t0.25-c10000", "wb0-t0.35-c10000",
             "wb0-t0.25-c20000"]
    r = simulate(build, work, files, ["--policy", "pi", "--policy", "agentctx"] + settings_args(names))
    policy_table(r, [("pi", "pi"), ("agentctx defaults", "agentctx")] + [("`%s`" % x, x) for x in names])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "default"))
    ap.add_argument("--work")
    ap.add_argument("--entries", type=int, default=2500)
    ap.add_argument("--only", action="append", choices=["bundled", "generated", "sweep", "clearing"])
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    work = os.path.abspath(a.work) if a.work else tempfile.mkdtemp(prefix="agentctx-simulate-")
    os.makedirs(work, exist_ok=True)
    write_settings(work)
    files = generate(build, work, [1, 2, 3], a.entries)
    print("sessions and settings in %s" % work, file=sys.stderr)
    for name in a.only or ["bundled", "generated", "sweep", "clearing"]:
        print("\n## %s" % name)
        globals()[name](build, work, files)


if __name__ == "__main__":
    main()
