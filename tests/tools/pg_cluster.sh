#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster for the tests. `start STATE` initdb's a cluster in a fresh temp
# dir (Unix socket only, trust auth) and writes STATE/url (the conninfo) and STATE/cluster; when
# the server cannot be started it writes STATE/unavailable (why) and exits 0, so the PostgreSQL
# tests skip with that message. `stop STATE` shuts it down and removes it. As root, the cluster
# runs as the unprivileged `postgres` user (initdb refuses root).
set -uo pipefail

BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
cmd=${1:-}
state=${2:-}
[ -n "$cmd" ] && [ -n "$state" ] || { echo "usage: pg_cluster.sh start|stop STATE_DIR" >&2; exit 2; }

as_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

unavailable() {
    echo "$1" >"$state/unavailable"
    echo "pg_cluster: PostgreSQL unavailable, its tests will be skipped: $1" >&2
    exit 0
}

case "$cmd" in
    start)
        mkdir -p "$state"
        rm -f "$state/url" "$state/cluster" "$state/unavailable"
        [ -x "$BIN/initdb" ] || unavailable "$BIN/initdb not found (install postgresql-15)"
        if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
            unavailable "running as root and there is no 'postgres' user to run the server as"
        fi
        dir=$(mktemp -d /tmp/agentctx-pg.XXXXXX)
        echo "$dir" >"$state/cluster"
        mkdir -p "$dir/data" "$dir/sock"
        [ "$(id -u)" -eq 0 ] && chown -R postgres "$dir"
        as_owner "$BIN/initdb" -D "$dir/data" -U agentctx --auth=trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 ||
            unavailable "initdb failed: $(tail -3 "$dir/initdb.log" | tr '\n' ' ')"
        # A Unix socket only: no TCP port to collide with other builds on this machine.
        as_owner "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
            -o "-c listen_addresses='' -c unix_socket_directories='$dir/sock' -c max_connections=300" \
            start >/dev/null 2>&1 || unavailable "the server did not start: $(tail -3 "$dir/server.log" | tr '\n' ' ')"
        echo "postgresql:///postgres?host=$dir/sock&user=agentctx" >"$state/url"
        echo "pg_cluster: PostgreSQL 15 running at $dir/sock"
        ;;
    stop)
        dir=$(cat "$state/cluster" 2>/dev/null || true)
        if [ -n "$dir" ] && [ -f "$dir/data/postmaster.pid" ]; then
            as_owner "$BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
        fi
        [ -n "$dir" ] && rm -rf "$dir"
        rm -f "$state/url" "$state/cluster" "$state/unavailable"
        ;;
    *)
        echo "usage: pg_cluster.sh start|stop STATE_DIR" >&2
        exit 2
        ;;
esac
