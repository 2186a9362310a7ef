#!/usr/bin/env bash
# Side by side, interleaved: CPU per request of bench_provider --url and of Node's fetch against
# the same loopback Node server, for ROUNDS rounds; medians and like-for-like ratios. For figures
# only. Two ways to send the same 40 KB JSON body:
#   - the caller keeps one body: agentctx's shared body; Node's one string (fetch encodes it on
#     every request) and one Uint8Array (sent as it is);
#   - the caller builds a new body for every request: agentctx's --copy-body 1, Node's --fresh-body 1;
#     agentctx's --copy-body 2 builds it but sends the one body, which parts the caller's cost of
#     building it from the transport's of sending it.
#   tests/bench/transport_vs_node.sh ROUNDS BENCH_PROVIDER NODE [REQUESTS]
set -euo pipefail
rounds=$1 bench=$2 node=$3 requests=${4:-5000}
here=$(cd "$(dirname "$0")" && pwd)
port=8097
"$node" "$here/node_fetch_bench.mjs" server --port $port > /dev/null &
server=$!
trap 'kill $server' EXIT
sleep 1
url=http://127.0.0.1:$port/v1/chat
args=(--url $url --requests "$requests" --concurrency 1000 --body-bytes 40000)
cpu() { grep -o 'cpu_us_per_request=[0-9.]*' | cut -d= -f2; }
for _ in $(seq "$rounds"); do
    echo "$("$bench" "${args[@]}" | cpu) $("$bench" "${args[@]}" --copy-body 1 | cpu)" \
         "$("$node" "$here/node_fetch_bench.mjs" client "${args[@]}" | cpu)" \
         "$("$node" "$here/node_fetch_bench.mjs" client "${args[@]}" --buffer-body 1 | cpu)" \
         "$("$node" "$here/node_fetch_bench.mjs" client "${args[@]}" --fresh-body 1 | cpu)" \
         "$("$bench" "${args[@]}" --copy-body 2 | cpu)"
done | python3 -c '
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
names = ["agentctx, one body (shared)", "agentctx, a new body per request", "Node fetch, one string body",
         "Node fetch, one Uint8Array body", "Node fetch, a new string per request",
         "agentctx, a new body built per request, the one body sent"]
med = []
for i, name in enumerate(names):
    v = sorted(r[i] for r in rows)
    med.append(statistics.median(v))
    print(f"{name}: median {med[-1]:.0f} us ({v[0]:.0f}-{v[-1]:.0f})")
print(f"one body: {min(med[2], med[3]) / med[0]:.1f}x less CPU than the better of the two Node ways")
print(f"a new body per request: {med[4] / med[1]:.1f}x less CPU")
print(f"building the new body costs the caller {med[5] - med[0]:.0f} us, sending it the transport {med[1] - med[5]:.0f} us more")
'
