#!/usr/bin/env bash
# The long fault campaign: `tests/faults/run_campaign.sh SEED [SECONDS] [BUILD_DIR]` (default 600 s,
# build/default). Runs the same load without faults first (the throughput reference), then the
# campaign, and keeps both runs' history.json, report.json and node logs under
# BUILD_DIR/faults/seed-SEED. Exit status: the campaign's (0: no violation).
set -euo pipefail

seed=${1:?usage: run_campaign.sh SEED [SECONDS] [BUILD_DIR]}
seconds=${2:-600}
build=${3:-build/default}
here=$(cd "$(dirname "$0")" && pwd)
server="$build/examples/agent_server"
[ -x "$server" ] || { echo "run_campaign: $server not built (cmake --build --preset default --target agent_server)" >&2; exit 2; }
out="$build/faults/seed-$seed"
rm -rf "$out"
mkdir -p "$out"

calm_seconds=$(( seconds / 10 > 30 ? seconds / 10 : 30 ))
echo "== reference: $calm_seconds s, no faults, seed $seed"
python3 "$here/campaign.py" --server "$server" --seed "$seed" --seconds "$calm_seconds" --no-faults \
    --out "$out/no-faults" | grep -E '^(checker|figures|first)' || true
echo "== campaign: $seconds s, seed $seed"
set +e
python3 "$here/campaign.py" --server "$server" --seed "$seed" --seconds "$seconds" --calm 0.05 --require-writes --out "$out/faults" \
    | tee "$out/campaign.log" | grep -vE '^\[ *[0-9.]+\] fault '
exit "${PIPESTATUS[0]}"
