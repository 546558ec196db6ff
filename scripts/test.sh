#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: first the normal build, then the whole suite again
# built with AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

scripts/build.sh build
(cd build && ctest --output-on-failure)
scripts/check-loaders  # llama.cpp generates from mounted GGUFs as from the files (docs/loaders.md), ~20 s

scripts/build.sh build-asan -DTENSORFS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure)
scripts/fuzz.sh 28  # every libFuzzer target (8) for 28 s with ASan + UBSan (clang); fails on any finding
