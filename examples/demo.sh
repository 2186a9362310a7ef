#!/usr/bin/env bash
# The demo behind `./build.sh demo`: runs the agentctx CLI on the bundled sessions.
set -euo pipefail
build=${1:-build/default}
here=$(cd "$(dirname "$0")" && pwd)
cli="$build/examples/agentctx"
session="$here/sessions/coding-task.jsonl"

echo "== agentctx context $(basename "$session")"
"$cli" context "$session"
echo
echo "== agentctx context --json (first 400 characters)"
"$cli" context "$session" --json | head -c 400
echo
