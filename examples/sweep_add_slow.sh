#!/usr/bin/env bash
# Scenario (c), swept: where does adding a slow worker stop paying off?
# For each network latency and each speed of the added worker, the change in
# training time (20 epochs) from baseline.toml to add_slow.toml, under equal
# and adaptive allocation, and the change of adaptive's steady-state step (the
# mean step of the second half, after the policy has learnt the speeds).
# Negative = the added worker shortens training.
# Usage: examples/sweep_add_slow.sh [build/hetrain]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
hetrain=${1:-$here/../build/hetrain}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

total() {  # cluster file, policy -> predicted total seconds
  "$hetrain" sim --cluster "$1" --epochs 20 --policy "$2" --json "$tmp/t.json" --quiet
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["policies"][0]["total_seconds"])' "$tmp/t.json"
}
steady() {  # after `total ... adaptive`: mean seconds of the second half's steps
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["policies"][0]["steps"]["seconds"]; h=s[len(s)//2:]; print(sum(h)/len(h))' "$tmp/t.json"
}

echo "| latency (s) | added worker (samples/s) | equal: change | adaptive: change | adaptive steady step: change |"
echo "|---|---|---|---|---|"
for latency in 50e-6 1e-3 5e-3; do
  sed "s/^latency = .*/latency = $latency/" "$here/baseline.toml" > "$tmp/base.toml"
  base_eq=$(total "$tmp/base.toml" equal)
  base_ad=$(total "$tmp/base.toml" adaptive)
  base_st=$(steady)
  for speed in 25 50 100 250 500; do
    sed -e "s/^latency = .*/latency = $latency/" -e "/^name = \"slow\"/,\$ s/^speed = .*/speed = $speed/" \
      "$here/add_slow.toml" > "$tmp/add.toml"
    eq=$(total "$tmp/add.toml" equal)
    ad=$(total "$tmp/add.toml" adaptive)
    st=$(steady)
    python3 -c 'import sys; l,s,be,ba,bs,e,a,st=sys.argv[1:]; be,ba,bs,e,a,st=map(float,(be,ba,bs,e,a,st));
print(f"| {l} | {s} | {100*(e/be-1):+.1f}% | {100*(a/ba-1):+.1f}% | {100*(st/bs-1):+.1f}% |")' \
      "$latency" "$speed" "$base_eq" "$base_ad" "$base_st" "$eq" "$ad" "$st"
  done
done
