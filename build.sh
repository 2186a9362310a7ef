#!/usr/bin/env bash
# One entry point for people and CI: installs missing Debian packages, configures, builds, runs.
#   ./build.sh demo    build the agentctx CLI and run the demo on the bundled sessions
#   ./build.sh test    build and run the whole test suite (ctest); non-zero exit on any failure
#   ./build.sh build   configure and build only        ./build.sh bench   run the benchmarks
#   PRESET=asan ./build.sh test   use another CMake preset (default, asan, tsan, release)
#   ./build.sh fuzz [SECONDS]      build the libFuzzer targets (clang-14) and run each for SECONDS (30)
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
    bench)
        build
        for b in build/"$PRESET"/tests/bench_*; do "$b" "${@:2}"; done
        ;;
    *)
        echo "usage: ./build.sh demo|test|build|bench|fuzz [SECONDS]|format [fix]" >&2
        exit 2
        ;;
esac
