#!/usr/bin/env bash
# clang-tidy (Debian's clang-tidy 14) over every source file under src/ and
# examples/, with the checks in .clang-tidy: functions of at most 80 lines,
# bugprone-*, performance-*. Headers under src/hetrain are checked through
# the files that include them, and each of their findings is printed once.
#
# Prints every finding as file:line:col: message [check] and exits 1 on any;
# exits 2 when it cannot lint at all (no files, a file missing from the
# compilation database, clang-tidy missing or crashing), so a broken lint
# never passes as a clean one.
#
# Usage: scripts/lint.sh [BUILD_DIR] [FILE...]
#   BUILD_DIR  a configured build, for compile_commands.json (default: build)
#   FILE...    only these files (default: all of src/ and examples/)
#   LINT_JOBS  clang-tidy processes at a time (default: nproc)
set -euo pipefail
root=$(realpath -- "$(dirname "$0")/..")
cd "$root"
build="${1:-build}"
shift || true
db="$build/compile_commands.json"

fail() { echo "lint: $*" >&2; exit 2; }
[[ -f "$db" ]] || fail "no $db (configure the build first)"
command -v clang-tidy >/dev/null || fail "clang-tidy is missing (scripts/setup.sh --test installs it)"

if (($# > 0)); then
  files=("$@")
else
  mapfile -t files < <(git ls-files 'src/*.cc' 'examples/*.cc')
fi
((${#files[@]} > 0)) || fail "no source files to lint"
# A file outside the database would be read without its flags (no include
# paths, no -std=c++20), so its findings would be noise.
for f in "${files[@]}"; do
  [[ -f "$f" ]] || fail "$f does not exist"
  grep -qF "\"file\": \"$(realpath -- "$f")\"" "$db" || fail "$f is not in $db (is it in a CMake target?)"
done

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
start=$SECONDS
# One file per process; each leaves its output and its exit status in $logs.
# --quiet keeps only the findings.
export build logs
printf '%s\n' "${files[@]}" | xargs -P "${LINT_JOBS:-$(nproc)}" -I{} bash -c '
  f="$1"; name=${f//\//_}
  clang-tidy --quiet -p "$build" "$f" >"$logs/$name.log" 2>&1
  echo $? >"$logs/$name.rc"' _ {}

# A finding: path:line:col: warning|error: message [check-name,...].
finding='^[^ :]+:[0-9]+:[0-9]+: (warning|error): .*\[[A-Za-z0-9.,_-]+\]$'
broken=0
for f in "${files[@]}"; do
  name=${f//\//_}
  rc=$(cat "$logs/$name.rc" 2>/dev/null || echo missing)
  # clang-tidy exits 1 when it reports findings (WarningsAsErrors); any other
  # status, or 1 with no finding to show for it, means it did not finish.
  if [[ "$rc" == 0 ]] || { [[ "$rc" == 1 ]] && grep -qE "$finding" "$logs/$name.log"; }; then continue; fi
  echo "lint: clang-tidy failed on $f (exit status $rc); its last lines:" >&2
  tail -n 20 "$logs/$name.log" >&2
  broken=1
done
((broken == 0)) || exit 2

# Relative paths, each finding once (a header's come once per includer).
findings=$(cat "$logs"/*.log | grep -E "$finding" | sed "s|^$root/||" | sort -u || true)
seconds=$((SECONDS - start))
if [[ -n "$findings" ]]; then
  echo "$findings"
  echo "lint: $(wc -l <<<"$findings") clang-tidy findings in ${#files[@]} files (${seconds} s); see .clang-tidy" >&2
  exit 1
fi
echo "lint: clang-tidy clean on ${#files[@]} files and the headers they include under src/hetrain (${seconds} s)"
