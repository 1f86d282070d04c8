#!/usr/bin/env bash
# The README's test command: sets up (packages), builds, checks the docs for measurement history, lints the
# C++ files changed since main, and runs every test not labelled `slow` (ctest -LE slow). The slow tier, the
# full lint and the fuzzers run in .ci/run after this (README, "Tests", says how long each takes).
#   HETRAIN_LINT=all scripts/test.sh   lint every file instead of the changed ones
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
scripts/setup.sh --test --python
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DHETRAIN_BUILD_TESTS=ON \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
cmake --build build -j"$(nproc)"
echo "test: built in $((SECONDS - start)) s"
# Static checks first, so they fail fast: no measurement history in src/, README.md or docs/; clang-tidy
# (.clang-tidy) on the C++ sources changed since main (all of them: HETRAIN_LINT=all, or .ci/run).
scripts/check_history.sh
if [ "${HETRAIN_LINT:-changed}" = all ]; then
  scripts/lint.sh build
else
  base=$(git merge-base HEAD main 2>/dev/null || true)
  mapfile -t changed < <({ [ -n "$base" ] && git diff --name-only "$base" --; git diff --name-only HEAD --;
                           git ls-files --others --exclude-standard; } 2>/dev/null |
                         grep -E '^(src|examples)/.*\.cc$' | sort -u | while read -r f; do [ -f "$f" ] && echo "$f"; done)
  if ((${#changed[@]} > 0)); then
    scripts/lint.sh build "${changed[@]}"
  else
    echo "test: no C++ file changed since main to lint (the full lint: .ci/run, or HETRAIN_LINT=all)"
  fi
fi
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 900 --no-tests=error -LE slow
echo "test: the fast tier passed in $((SECONDS - start)) s (the slow tier: ctest --test-dir build -L slow)"
