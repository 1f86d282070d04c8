#!/usr/bin/env bash
# How the simulator's cost grows with workers x steps: the adaptive policy on
# a three-group cluster (a quarter fast, a quarter medium, half old, 3-5%
# noise, 8 workers per node), about 10 samples per worker per step, on one
# core (taskset -c 0). Prints a markdown table: the command's wall and CPU
# seconds (with hetrain's start-up, which loads libtorch), the simulation
# loop's own seconds, and its microseconds per worker-step (roughly constant =
# linear cost).
# Usage: bench/sim_scale.sh [build/hetrain] [SIZES...]   SIZES as WORKERSxSTEPS
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hetrain=${1:-$root/build/hetrain}
shift || true
sizes=("$@")
((${#sizes[@]})) || sizes=(4x1 1000x100 1000x1000 10000x100 10000x1000 100000x10 100000x100)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cluster() {  # workers -> a cluster file
  local n=$1 q=$(($1 / 4))
  cat <<TOML
global_batch = $((10 * n))
gradient_bytes = 26_000_000
[network]
bandwidth = 1.25e9
latency = 50e-6
workers_per_node = 8
intra_bandwidth = 50e9
intra_latency = 5e-6
[[group]]
name = "new"
count = $q
speed = 1000
overhead = 0.005
noise = 0.03
[[group]]
name = "mid"
count = $q
speed = 600
overhead = 0.005
noise = 0.03
[[group]]
name = "old"
count = $((n - 2 * q))
speed = 250
overhead = 0.008
noise = 0.05
TOML
}

echo "| workers | steps | wall (s) | CPU (s) | simulation loop (s) | loop per worker-step (us) |"
echo "|---|---|---|---|---|---|"
for size in "${sizes[@]}"; do
  n=${size%x*} steps=${size#*x}
  cluster "$n" > "$tmp/c.toml"
  /usr/bin/time -f "%e %U %S" -o "$tmp/time" taskset -c 0 \
    "$hetrain" sim --cluster "$tmp/c.toml" --policy adaptive --steps "$steps" > "$tmp/out"
  read -r wall user sys < "$tmp/time"
  loop=$(sed -n 's/^(simulated in \([0-9.]*\) s.*/\1/p' "$tmp/out")
  python3 -c 'import sys; n,k,w,u,s,l=sys.argv[1:]; n,k=int(n),int(k); cpu=float(u)+float(s);
print(f"| {n} | {k} | {float(w):.2f} | {cpu:.2f} | {float(l):.2f} | {1e6*float(l)/(n*k):.3f} |")' \
    "$n" "$steps" "$wall" "$user" "$sys" "$loop"
done
