#!/usr/bin/env bash
# bench_pg_append beside pgbench's single-row INSERT on one throwaway cluster, in one run, with the
# same number of connections (the store's pool). Usage: pg_bench_side_by_side.sh BUILD_DIR [SECONDS]
# Prints pgbench's rate with 1 client and with POOL clients (AGENTCTX_PG_POOL, default 8), before
# and after bench_pg_append, then the ratios the store's figures are judged by.
set -euo pipefail

build=${1:?usage: pg_bench_side_by_side.sh BUILD_DIR [SECONDS]}
seconds=${2:-10}
pool=${AGENTCTX_PG_POOL:-8}
here=$(cd "$(dirname "$0")" && pwd)
BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
state=$(mktemp -d /tmp/agentctx-side-by-side.XXXXXX)
trap '"$here/pg_cluster.sh" stop "$state"; rm -rf "$state"' EXIT

"$here/pg_cluster.sh" start "$state" >/dev/null
[ -f "$state/url" ] || { echo "no cluster: $(cat "$state/unavailable")" >&2; exit 1; }
url=$(cat "$state/url")
sock=$(cat "$state/cluster")/sock

# The row an append stores: a session id and a 400-byte line, one INSERT per transaction.
script="$state/insert.sql"
cat >"$script" <<'EOF'
\set s random(1, 1000)
INSERT INTO bench_rows (session_id, line) VALUES ('session-' || :s, repeat('x', 400));
EOF
chmod -R a+rX "$state"
"$BIN/psql" -qAt -h "$sock" -U agentctx -d postgres -c \
    "CREATE TABLE bench_rows (id bigserial PRIMARY KEY, session_id text NOT NULL, line text NOT NULL)"

pgbench() {  # clients -> "tps latency_ms"
    "$BIN/pgbench" -h "$sock" -U agentctx -n -M prepared -c "$1" -j "$1" -T "$seconds" -f "$script" postgres 2>/dev/null |
        awk '/^latency average/ {lat=$4} /^tps/ {tps=$3} END {printf "%.0f %.2f", tps, lat}'
}

read -r one_a one_lat_a <<<"$(pgbench 1)"
read -r many_a many_lat_a <<<"$(pgbench "$pool")"
out=$(AGENTCTX_PG_URL="$url" AGENTCTX_PG_POOL="$pool" "$build/tests/bench_pg_append")
read -r many_b many_lat_b <<<"$(pgbench "$pool")"
read -r one_b one_lat_b <<<"$(pgbench 1)"

echo "$out"
echo "pgbench, one INSERT of a 400-byte row per transaction (synchronous_commit on), before / after:"
echo "  1 client      : $one_a / $one_b tps, latency $one_lat_a / $one_lat_b ms"
echo "  $pool clients     : $many_a / $many_b tps, latency $many_lat_a / $many_lat_b ms"
rate64=$(echo "$out" | awk -F: '/64 in flight/ {split($2, f, " "); print f[1]}')
p50one=$(echo "$out" | awk '/one session/ {for (i = 1; i <= NF; ++i) if ($i == "p50") print $(i + 1)}')
awk -v n="$pool" -v r="$rate64" -v a="$many_a" -v b="$many_b" -v p="$p50one" -v la="$one_lat_a" -v lb="$one_lat_b" 'BEGIN {
    printf "ratios: 64 in flight / pgbench %s clients = %.2f; one session p50 / one pgbench transaction = %.2f\n",
           n, r / ((a + b) / 2), p / ((la + lb) / 2) }'
