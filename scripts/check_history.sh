#!/usr/bin/env bash
# Fails on measurement history outside docs/benchmarks.md: code comments and
# docs state what holds now and name the benchmark that checks a number;
# dated, run-numbered, run-tallied ("8 of 28 runs"), seed-by-seed ("fails
# on seed 12") or "was X, now Y" accounts belong in git and in
# docs/benchmarks.md. A current figure stated with its machine and command is
# fine (benchmarks.md's tables, the README's summary of them); source code
# names the benchmark, never the machine. Prints file:line: text for every
# hit, exits 1 on any (2 when grep itself fails).
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
  # Run tallies: "8 of 28 runs", "3 out of 9 repetitions", "5/9 runs", "in 7 of them,"
  '\b[0-9][0-9,]* (of|out of) (the |all )?[0-9][0-9,]* (runs|repetitions|reps|trials|attempts|tries|times)\b'
  '\b[0-9]+/[0-9]+ (runs|repetitions|reps|trials|attempts|tries)\b'
  '\bin [0-9]+ of (them|these|those)([,;.)]| [a-z]|$)'
  # Seed-by-seed failure accounts: "seeds 4 and 7 failed", "fails on seed 12"
  '\bseeds? [0-9]+(( and |, ?|-)[0-9]+)*,? (fail|fails|failed|failing|pass|passes|passed|missed|broke|diverged)\b'
  '\b(fail|fails|failed|failing|passed|passes|missed|broke|diverged) (on|with|for|at|under) seeds? [0-9]+'
)
# Code comments say which benchmark backs a constant, not where it ran.
code_patterns=(
  '\b(development|dev) (machine|host|box)\b'      # "on the 2-core development machine"
  '\b[0-9]+-(core|cpu|vcpu) machine\b'
)

code=()
for t in "${targets[@]}"; do
  case "$t" in src | src/* | *.cc | *.h) code+=("$t") ;; esac
done

# search REGEX PATH...: grep's status (0 hits, 1 none, 2 failed).
search() {
  local regex=$1; shift
  grep -rnHIiE --exclude=benchmarks.md "$regex" "$@"
}
status=1
for run in all code; do
  if [ "$run" = all ]; then
    regex=$(IFS='|'; echo "${patterns[*]}"); paths=("${targets[@]}")
  else
    ((${#code[@]} > 0)) || continue
    regex=$(IFS='|'; echo "${code_patterns[*]}"); paths=("${code[@]}")
  fi
  search "$regex" "${paths[@]}"
  case $? in
    0) status=0 ;;
    1) ;;
    *) echo "check_history: grep failed" >&2; exit 2 ;;
  esac
done
if [ "$status" = 0 ]; then
  echo "check_history: measurement history found (move it to docs/benchmarks.md or git)" >&2
  exit 1
fi
exit 0
