#!/usr/bin/env bash
# PostgreSQL's own cost of each way of appending, without the store: pgbench runs the store's
# statements (and a plain INSERT for reference) on a throwaway cluster.
# Usage: pg_append_costs.sh [SECONDS] [CLIENTS]   (10 s, 8 clients)
set -euo pipefail

seconds=${1:-10}
clients=${2:-8}
here=$(cd "$(dirname "$0")" && pwd)
BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
state=$(mktemp -d /tmp/agentctx-append-costs.XXXXXX)
trap '"$here/pg_cluster.sh" stop "$state"; rm -rf "$state"' EXIT

"$here/pg_cluster.sh" start "$state" >/dev/null
[ -f "$state/url" ] || { echo "no cluster: $(cat "$state/unavailable")" >&2; exit 1; }
sock=$(cat "$state/cluster")/sock
psql() { "$BIN/psql" -qAt -h "$sock" -U agentctx -d postgres "$@"; }

# The store's tables (as its first migration creates them) and 1,000 sessions.
psql <<'EOF'
CREATE TABLE agentctx_sessions (id text PRIMARY KEY, header text NOT NULL, created timestamptz NOT NULL DEFAULT now(),
                                last_seq bigint NOT NULL DEFAULT 0);
CREATE TABLE agentctx_entries (session_id text NOT NULL REFERENCES agentctx_sessions(id) ON DELETE CASCADE,
                               seq bigint NOT NULL, entry_id text NOT NULL, parent_id text, type text NOT NULL,
                               line text NOT NULL, PRIMARY KEY (session_id, seq), UNIQUE (session_id, entry_id));
INSERT INTO agentctx_sessions (id, header) SELECT 's-' || g, '{}' FROM generate_series(1, 1000) g;
CREATE TABLE bench_rows (id bigserial PRIMARY KEY, session_id text NOT NULL, line text NOT NULL);
EOF

cas="WITH s AS (UPDATE agentctx_sessions SET last_seq = last_seq + 1 WHERE id = 's-' || :s RETURNING last_seq)
INSERT INTO agentctx_entries (session_id, seq, entry_id, parent_id, type, line)
SELECT 's-' || :s, s.last_seq, md5(random()::text), NULL, 'message', repeat('x', 400) FROM s RETURNING seq"
declare -A scripts=(
    [1-insert]="INSERT INTO bench_rows (session_id, line) VALUES ('s-' || :s, repeat('x', 400));"
    [2-cas-with-notify-inside]="$cas, pg_notify('agentctx_sessions', seq || ' s-' || :s);"
    [3-cas]="$cas;"
    [4-cas-then-notify]="$cas;
SELECT pg_notify('agentctx_sessions', '1 s-' || :s);"
    [5-notify-alone]="SELECT pg_notify('agentctx_sessions', '1 s-' || :s);"
)
chmod a+rx "$state"
for name in $(printf '%s\n' "${!scripts[@]}" | sort); do
    f="$state/$name.sql"
    printf '\\set s random(1, 1000)\n%s\n' "${scripts[$name]}" >"$f"
    chmod a+r "$f"
    tps=$("$BIN/pgbench" -h "$sock" -U agentctx -n -M prepared -c "$clients" -j "$clients" -T "$seconds" -f "$f" postgres 2>/dev/null |
        awk '/^tps/ {printf "%.0f", $3}')
    printf '%-28s %8s transactions/s (%s clients)\n' "${name#*-}" "$tps" "$clients"
done
