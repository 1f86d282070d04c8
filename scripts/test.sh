#!/usr/bin/env bash
# Sets up (packages), builds and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DHETRAIN_BUILD_TESTS=ON >/dev/null
cmake --build build -j"$(nproc)"
# Static checks first, so they fail fast: clang-tidy with the checks in
# .clang-tidy, and no measurement history in src/, README.md or docs/.
scripts/lint.sh build
scripts/check_history.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 900
# The fuzz targets, a bounded time each (HETRAIN_FUZZ_SECONDS, default 60).
scripts/fuzz.sh "${HETRAIN_FUZZ_SECONDS:-60}"
