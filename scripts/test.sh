#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: first the normal build (with Debian's flags, as
# packaged), then the Debian package made from it (checked by lintian, installed, smoke-tested with the installed
# binary, removed) and the Python wheel beside it (installed with pip in fresh venvs), then the whole suite again
# built with AddressSanitizer and UndefinedBehaviorSanitizer, then the fuzzers. docs/ci.md says where the time goes.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

# The tests are independent (docs/ci.md) and spend much of their time waiting on the processes they start: one
# more test than cores keeps the cores busy (the sanitized suite on 2 cores: 690 s with 2 at a time, 625 s with 3).
test_jobs=$(( $(nproc) + 1 ))

# The tested build is the packaged one: build/ gets Debian's flags from package.sh, which compiles and packages
# the binary, then the tests and benchmarks are built beside it (one compile of the core instead of two).
deb=$(scripts/package.sh build -DBUILD_TESTING=ON)
scripts/build.sh build
(cd build && ctest --output-on-failure -j"$test_jobs")
# llama.cpp generates from mounted GGUFs as from the files (docs/loaders.md), ~20 s; fetched anew each run
loaders_scratch=$(mktemp -d)
TENSORFS_LOADERS_SCRATCH=$loaders_scratch scripts/check-loaders
rm -rf "$loaders_scratch"

lintian --fail-on error,warning "$deb"
scripts/package-smoke.sh "$deb"  # removes the package again: the tests below run the build folders' binaries
# The Python wheel package.sh made beside the .deb, installed with pip in fresh venvs of Debian's Python, with and
# without its numpy and torch (tests/packaging/test_install.py): once per run, outside ctest. pip building the
# source for a second Python is scripts/check-pip-source, outside CI (one more compile: docs/ci.md).
TENSORFS_WHEEL=$(ls build/tensorfs-*.whl) /usr/bin/python3 -m pytest -q -p no:cacheprovider --durations=0 \
  tests/packaging

scripts/build.sh build-asan -DTENSORFS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
(cd build-asan && ctest --output-on-failure -j"$test_jobs")  # the sanitizers' options: tests/CMakeLists.txt
scripts/fuzz.sh 10  # every libFuzzer target (9) for 10 s, one per core at a time, with ASan + UBSan (clang);
                    # fails on any finding
