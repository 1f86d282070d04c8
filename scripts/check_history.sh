#!/usr/bin/env bash
# Fails on measurement history outside docs/benchmarks.md: code comments and
# docs state what holds now and name the benchmark that checks a number;
# dated, run-numbered or "was X, now Y" accounts belong in git and in
# docs/benchmarks.md. Prints file:line: text for every hit, exits 1 on any.
#
#   scripts/check_history.sh [PATH...]    (default: src README.md docs)
set -uo pipefail
root=$(realpath -- "$(dirname "$0")/..")
targets=()
for t in "$@"; do targets+=("$(realpath --relative-to="$root" -- "$t")"); done
cd "$root"
if [ ${#targets[@]} -eq 0 ]; then targets=(src README.md docs); fi

# One extended regular expression per kind of history, matched case-insensitively.
patterns=(
  '\bruns? [0-9]+([-,]| and | to |\b)'            # "run 8", "runs 4-6"
  "\\bruns? [A-H]('|\\b)( |,|\\.|\\)|$)"          # "run G'", "runs A-C"
  '\b20[0-9]{2}-[0-9]{2}-[0-9]{2}\b'              # ISO dates
  '\bsessions?\b'                                 # "second session"
  '\bwas [0-9.]+[^.]*\bnow\b'                     # "was 5%, now 2%"
  '\b(was|were) [0-9.]+%? until\b'                # "the band was 5% until ..."
  '\b[0-9.]+ m?s [^.]*\bvs\.? [0-9.]+ m?s\b'      # "8.3 s with 2 MiB vs 11.6 s"
  '\bmeasured (on|in) (the|this) [^.]*(machine|session|run)\b'
  '\bin (most|all|the last) runs\b'               # "ahead in most runs"
  '\binspected on the\b'                          # "in the one run inspected on the ... machine"
  '\bused to\b'
  '\bbefore (this|the) change\b'
  '\buntil now\b'
  '\bfirst version\b'
  '\bin the (two|three|[0-9]+) runs\b'            # "in the two runs recorded in ..."
)

regex=$(IFS='|'; echo "${patterns[*]}")
grep -rnHIiE --exclude=benchmarks.md "$regex" "${targets[@]}"
case $? in
  0) echo "check_history: measurement history found (move it to docs/benchmarks.md or git)" >&2; exit 1 ;;
  1) exit 0 ;;
  *) echo "check_history: grep failed" >&2; exit 2 ;;
esac
