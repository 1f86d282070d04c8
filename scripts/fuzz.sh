#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang and runs each for a bounded
# time on a copy of its seed corpus. Exits non-zero on any finding.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 60)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
command -v clang++ >/dev/null || { echo "fuzz: clang++ is missing (scripts/setup.sh installs it)" >&2; exit 1; }
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DHETRAIN_FUZZ=ON -DHETRAIN_BUILD_TESTS=OFF >/dev/null
cmake --build build-fuzz
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for target in idx npy options cluster jobs; do
  mkdir -p "$work/$target"
  cp fuzz/corpus/"$target"/* "$work/$target/"
  echo "fuzz: $target for $seconds s"
  # -rss_limit_mb: the idx reader may legitimately allocate up to its 1 GiB cap.
  (cd "$work" && "$OLDPWD/build-fuzz/fuzz/${target}_fuzz" -max_total_time="$seconds" -rss_limit_mb=2560 \
    -print_final_stats=1 "$work/$target") 2>&1 | tail -n 12
done
echo "fuzz: no findings"
