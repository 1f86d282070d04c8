#!/usr/bin/env bash
# How the simulator's cost grows with workers x steps: a three-group cluster
# (a quarter fast, a quarter medium, half old; log-normal noise, sd of the
# log 0.03-0.05, AR(1) 0.5, a 5-10x spike in 1,000 steps; 8 workers per
# node), about 10 samples per worker per step, on one core (taskset -c 0),
# under each policy given. `equal` costs next to nothing to decide, so its
# row is the simulator's own cost; a policy's rows minus equal's are the
# policy's. Prints a markdown table: the command's wall and CPU seconds (with
# hetrain's start-up, which loads libtorch), the simulation loop's own
# seconds, and its microseconds per worker-step (roughly constant = linear).
# Usage: bench/sim_scale.sh [build/hetrain] [SIZES...]   SIZES as WORKERSxSTEPS
#        POLICIES="equal adaptive" (the default) picks the policies; REPS=N (default 1)
#        repeats each size's policies, interleaved (quote medians).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hetrain=${1:-$root/build/hetrain}
shift || true
sizes=("$@")
((${#sizes[@]})) || sizes=(1000x1000 10000x1000 100000x1000)
read -r -a policies <<< "${POLICIES:-equal adaptive}"
reps=${REPS:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

noise() {  # sd of the log -> a group's noise keys
  printf 'noise = %s\nnoise_kind = "lognormal"\nnoise_correlation = 0.5\nspike_chance = 0.001\n' "$1"
}

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
$(noise 0.03)
[[group]]
name = "mid"
count = $q
speed = 600
overhead = 0.005
$(noise 0.03)
[[group]]
name = "old"
count = $((n - 2 * q))
speed = 250
overhead = 0.008
$(noise 0.05)
TOML
}

echo "| workers | steps | policy | wall (s) | CPU (s) | simulation loop (s) | loop per worker-step (us) |"
echo "|---|---|---|---|---|---|---|"
for size in "${sizes[@]}"; do
  n=${size%x*} steps=${size#*x}
  cluster "$n" > "$tmp/c.toml"
  for ((rep = 0; rep < reps; rep++)); do for policy in "${policies[@]}"; do
    /usr/bin/time -f "%e %U %S" -o "$tmp/time" taskset -c 0 \
      "$hetrain" sim --cluster "$tmp/c.toml" --policy "$policy" --steps "$steps" > "$tmp/out"
    read -r wall user sys < "$tmp/time"
    loop=$(sed -n 's/^(simulated in \([0-9.]*\) s.*/\1/p' "$tmp/out")
    python3 -c 'import sys; n,k,p,w,u,s,l=sys.argv[1:]; n,k=int(n),int(k); cpu=float(u)+float(s);
print(f"| {n} | {k} | {p} | {float(w):.2f} | {cpu:.2f} | {float(l):.2f} | {1e6*float(l)/(n*k):.3f} |")' \
      "$n" "$steps" "$policy" "$wall" "$user" "$sys" "$loop"
  done; done
done
