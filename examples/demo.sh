#!/usr/bin/env bash
# The demo behind `./build.sh demo`: inspect a bundled session, plan and run a compaction on a
# copy (offline summarizer: no network, no API key), print the checkpoint it writes, and show the
# context before and after. The sessions come from tests/tools/make_demo_sessions.py.
set -euo pipefail
build=${1:-build/default}
here=$(cd "$(dirname "$0")" && pwd)
cli="$build/examples/agentctx"
bundled="$here/sessions/csv-export-fix.jsonl"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
session="$work/csv-export-fix.jsonl"
cp "$bundled" "$session"
sum_before=$(sha256sum "$bundled" | cut -d' ' -f1)

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "agentctx inspect  (the bundled coding session: a CSV export bug fix)"
"$cli" inspect "$session"

step "agentctx context  (what the next request carries, before)"
"$cli" context "$session" | tail -n 6

step "agentctx plan --keep-recent 3000  (dry run: where the cut goes)"
"$cli" plan "$session" --keep-recent 3000

step "agentctx plan --keep-recent 3000 --compat pi  (what Pi 1.6.0 would decide)"
"$cli" plan "$session" --keep-recent 3000 --compat pi | tail -n 7

step "agentctx compact --keep-recent 3000  (offline summarizer, on a copy; prints the checkpoint it wrote)"
"$cli" compact "$session" --keep-recent 3000 --instructions "keep the build commands"

step "agentctx context  (after: summary + recent suffix)"
"$cli" context "$session" | tail -n 6

step "agentctx inspect  (a Pi 1.6-style session: system messages, a context_edit)"
"$cli" inspect "$here/sessions/pi16-task.jsonl" | head -n 4

step "the bundled file is untouched"
[ "$(sha256sum "$bundled" | cut -d' ' -f1)" = "$sum_before" ] && echo "yes: $bundled"
