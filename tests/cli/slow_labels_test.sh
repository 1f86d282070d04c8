#!/usr/bin/env bash
# Every GoogleTest case tests/slow_gtests.cmake labels `slow` exists and carries the label: a renamed case
# would otherwise drop silently into the fast tier (scripts/test.sh).
# Usage: slow_labels_test.sh CTEST BUILD_DIR slow_gtests.cmake
set -u
ctest=$1 build=$2 list=$3
names=$(sed -n '/^set(hetrain_slow_gtests/,/^)/p' "$list" | grep -vE '^\s*(#|set\(|\))' | tr -d ' ')
grep -q '^set(hetrain_slow_gtests' "$list" || { echo "FAILED: no list hetrain_slow_gtests in $list"; exit 1; }
all=$("$ctest" --test-dir "$build" -N 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: //p')
slow=$("$ctest" --test-dir "$build" -N -L slow 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: //p')
bad=0
for n in $names; do
  grep -qxF "$n" <<<"$all" || { echo "FAILED: $list names $n, which is no test"; bad=1; continue; }
  grep -qxF "$n" <<<"$slow" || { echo "FAILED: $n is not labelled slow"; bad=1; }
done
[ "$bad" = 0 ] || exit 1
echo "ok: $(wc -w <<<"$names") GoogleTest case(s) labelled slow by name; $(wc -l <<<"$slow") tests in the slow tier"
