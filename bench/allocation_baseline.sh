#!/usr/bin/env bash
# Builds the hetrain binary of one commit (by default main's 414595a, the baseline of issue 26) outside the
# working tree, for `bench/allocation_bench.py --baseline DIR/build/hetrain`.
#
# Usage: bench/allocation_baseline.sh [COMMIT] [DIR]     (DIR default /work/wt/baseline)
#
# The commit's files are exported with `git archive` (no worktree is registered in the repository) into DIR
# and built in DIR/build with ccache, as a worktree's build: with ccache's base_dir above DIR, the paths are the
# same relative ones as in any worktree's build, so a warm cache serves them. Prints the binary's path.
set -euo pipefail
commit=${1:-414595a}
dir=${2:-/work/wt/baseline}
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
full=$(git -C "$repo" rev-parse --verify -q "$commit^{commit}") ||
  { echo "allocation_baseline.sh: no commit $commit in $repo" >&2; exit 1; }
if [[ -e "$dir" && "$(cat "$dir/.commit" 2>/dev/null)" != "$full" ]]; then
  echo "allocation_baseline.sh: $dir exists and does not hold $full (remove it or pass another DIR)" >&2
  exit 1
fi
if [[ ! -e "$dir" ]]; then
  mkdir -p "$dir"
  git -C "$repo" archive "$full" | tar -x -C "$dir"
  echo "$full" > "$dir/.commit"
fi
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$dir" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHETRAIN_BUILD_TESTS=ON \
  "${launcher[@]}" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON > "$dir/build-configure.log"
nice cmake --build "$dir/build" -j"${JOBS:-2}" --target hetrain
echo "$dir/build/hetrain"
