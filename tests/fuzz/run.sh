#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS each on a scratch copy of its seed corpus (the repo's
# corpus never grows), fails on a crash, a disagreement or a leak, and prints the executions and
# the coverage (libFuzzer's `cov:` edges and `ft:` features) per target.
#   tests/fuzz/run.sh BUILD_DIR [SECONDS] [TARGET...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:?usage: run.sh BUILD_DIR [SECONDS] [TARGET...]}
seconds=${2:-30}
shift $(( $# >= 2 ? 2 : 1 ))
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(json_scanner entry_decode session_load sse response settings checkpoint)

work=$(mktemp -d "${TMPDIR:-/tmp}/agentctx-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
artifacts="$bin/artifacts"
mkdir -p "$artifacts"

failed=()
rows=()
for t in "${targets[@]}"; do
    exe="$bin/fuzz_$t"
    [ -x "$exe" ] || { echo "missing $exe" >&2; exit 1; }
    mkdir -p "$work/$t"
    cp "$here/corpus/$t/"* "$work/$t/"
    echo "== fuzz_$t for ${seconds}s"
    log="$work/$t.log"
    rc=0
    "$exe" "$work/$t" -dict="$here/json.dict" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
        -rss_limit_mb=2048 -artifact_prefix="$artifacts/$t-" >"$log" 2>&1 || rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
    cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
    if [ "$rc" -ne 0 ]; then
        failed+=("$t")
        grep -E -A25 'fuzz check failed|ERROR: |runtime error' "$log" | head -60 >&2 || tail -40 "$log" >&2
        echo "fuzz_$t FAILED (exit $rc); reproducer in $artifacts/" >&2
    fi
    rows+=("$(printf '| fuzz_%s | %s | %s | %s | %s | %s |' "$t" "$seconds" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}")")
done

echo
echo "| target | seconds | executions | cov (edges) | ft (features) | corpus |"
echo "| --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
if [ ${#failed[@]} -ne 0 ]; then
    echo "FAILED: ${failed[*]}" >&2
    exit 1
fi
