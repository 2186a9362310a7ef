#!/usr/bin/env bash
# One entry point for people and CI: installs missing Debian packages, configures, builds, runs.
#   ./build.sh demo    build the agentctx CLI and run the demo on the bundled sessions
#   ./build.sh test    build and run the whole test suite (ctest); non-zero exit on any failure
#   ./build.sh build   configure and build only        ./build.sh bench   run the benchmarks
#   PRESET=asan ./build.sh test   use another CMake preset (default, asan, tsan, release)
#   ./build.sh fuzz [SECONDS]      build the libFuzzer targets (clang-14) and run each for SECONDS (30)
#   ./build.sh npm                 install the pinned npm packages of tests/npm/packages.txt
#   ./build.sh format [fix]        check every C++ file against .clang-format (clang-format 14); `fix` rewrites
set -euo pipefail
cd "$(dirname "$0")"

PRESET=${PRESET:-default}
PACKAGES=(g++ cmake make libboost1.81-dev libboost-json1.81-dev libcurl4-openssl-dev libspdlog-dev
          libgtest-dev libgmock-dev libbenchmark-dev libre2-dev libssl-dev pkg-config zlib1g-dev ccache
          libpq-dev postgresql-15  # the PostgreSQL store; its tests start a throwaway cluster
          dpkg-dev)                # cpack -G DEB (the package test)
# Only `./build.sh fuzz` needs these: a normal build stays on g++.
FUZZ_PACKAGES=(clang-14 libfuzzer-14-dev)
# Only `./build.sh format` needs this one.
FORMAT_PACKAGES=(clang-format-14)

ensure_packages() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    # Never libboost-dev / libboost-all-dev: they replace the 1.81 headers with 1.74.
    local cmd="apt-get install -y --no-install-recommends ${missing[*]}"
    if [ "$(id -u)" -ne 0 ]; then
        echo "Missing packages. Run as root:" >&2
        echo "  apt-get update && $cmd" >&2
        exit 1
    fi
    echo "Installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    $cmd
}

# The pinned npm packages of tests/npm/packages.txt (Node 22, Pi, the TypeScript frameworks),
# installed once into a cache folder. Never fails the build: where npm or the registry is
# missing, the tests that need a package skip and say why.
NPM_CACHE=${AGENTCTX_NPM_CACHE:-$HOME/.cache/agentctx-npm}
export AGENTCTX_NPM_CACHE=$NPM_CACHE
ensure_npm_packages() {
    local wanted
    wanted=$(grep -v '^#' tests/npm/packages.txt | xargs)
    [ -z "$wanted" ] && return 0
    [ "$(cat "$NPM_CACHE/.installed" 2>/dev/null)" = "$wanted" ] && return 0
    if ! command -v npm >/dev/null; then
        echo "npm not found: the tests labelled npm will skip" >&2
        return 0
    fi
    mkdir -p "$NPM_CACHE"
    [ -f "$NPM_CACHE/package.json" ] || echo '{"private": true}' >"$NPM_CACHE/package.json"
    # shellcheck disable=SC2086 # one word per package
    if (cd "$NPM_CACHE" && npm install --no-audit --no-fund --save-exact $wanted >/dev/null); then
        echo "$wanted" >"$NPM_CACHE/.installed"
    else
        echo "npm install into $NPM_CACHE failed: the tests labelled npm will skip" >&2
    fi
}

# build [TARGET...]: configure, then build the named targets (all when none are named).
build() {
    ensure_packages
    cmake --preset "$PRESET" >/dev/null
    local targets=()
    [ $# -gt 0 ] && targets=(--target "$@")
    cmake --build --preset "$PRESET" -j "$(nproc)" "${targets[@]}"
}

case "${1:-}" in
    build) build ;;
    test)
        build
        ensure_npm_packages
        ctest --preset "$PRESET" -j "$(nproc)"
        ;;
    demo)
        build agentctx  # only what the demo runs: a fresh machine shows it in minutes
        exec bash examples/demo.sh "build/$PRESET"
        ;;
    fuzz)
        PRESET=fuzz
        PACKAGES+=("${FUZZ_PACKAGES[@]}")
        build
        exec bash tests/fuzz/run.sh build/fuzz/tests/fuzz "${2:-30}" "${@:3}"
        ;;
    format)
        PACKAGES=("${FORMAT_PACKAGES[@]}")
        ensure_packages
        files=$(git ls-files '*.cpp' '*.hpp' '*.h' '*.cpp.in')
        if [ "${2:-}" = fix ]; then
            echo "$files" | xargs clang-format-14 -i --style=file
        else
            echo "$files" | xargs clang-format-14 --dry-run -Werror --style=file
        fi
        ;;
    npm) ensure_npm_packages ;;
    bench)
        build
        for b in build/"$PRESET"/tests/bench_*; do "$b" "${@:2}"; done
        ;;
    *)
        echo "usage: ./build.sh demo|test|build|bench|npm|fuzz [SECONDS]|format [fix]" >&2
        exit 2
        ;;
esac
