#!/usr/bin/env bash
# clang-tidy (Debian's clang-tidy 14) over every source file under src/ and
# examples/, with the checks in .clang-tidy: functions of at most 80 lines,
# bugprone-*, performance-*. Each finding is printed as file:line and fails.
# Usage: scripts/lint.sh [BUILD_DIR]   (a configured build, for compile_commands.json)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
[[ -f "$build/compile_commands.json" ]] || { echo "lint: no $build/compile_commands.json (configure the build first)" >&2; exit 2; }
command -v clang-tidy >/dev/null || { echo "lint: clang-tidy is missing (scripts/setup.sh --test installs it)" >&2; exit 2; }
mapfile -t files < <(git ls-files 'src/*.cc' 'examples/*.cc')
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# One file per process, as many processes as cores; --quiet keeps only findings.
if ! printf '%s\n' "${files[@]}" |
    xargs -P "$(nproc)" -n 1 clang-tidy --quiet -p "$build" >"$log" 2>&1; then
  grep -E '(warning|error):' "$log" | sort -u
  echo "lint: clang-tidy found problems (above)" >&2
  exit 1
fi
echo "lint: clang-tidy clean on ${#files[@]} files"
