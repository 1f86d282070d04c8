#!/usr/bin/env bash
# Starts N local workers of any command with torchrun's variables (RANK,
# WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and
# waits for all of them. Used for both hetrain (`hetrain worker`) and the
# PyTorch DDP peer, so both start the same way. (Debian's torchrun 1.13 fails
# on Python 3.11 while setting up its log redirects.)
#
# Usage: bench/launch_local.sh N PORT COMMAND [ARGS...]
# With CGROUP=DIR (a cgroup v1 cpu or v2 directory with a CPU quota) and
# CGROUP_RANK=r, rank r is moved into that cgroup (real heterogeneity) right
# after it starts.
# The first worker to fail stops the others (they would otherwise wait in a
# collective until their timeout) and its exit status is returned.
set -euo pipefail
n=$1 port=$2
shift 2
pids=()
declare -A rank_of=()
for ((r = 0; r < n; r++)); do
  RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    OMP_NUM_THREADS=1 "$@" &
  pids+=($!)
  rank_of[$!]=$r
  if [[ -n "${CGROUP:-}" && "${CGROUP_RANK:-}" == "$r" ]]; then
    echo $! > "$CGROUP/cgroup.procs"
  fi
done
while ((${#pids[@]} > 0)); do
  rc=0
  wait -n -p finished "${pids[@]}" || rc=$?
  left=()
  for p in "${pids[@]}"; do [[ $p != "$finished" ]] && left+=("$p"); done
  pids=("${left[@]+"${left[@]}"}")
  if ((rc != 0)); then
    echo "launch_local.sh: rank ${rank_of[$finished]} exited with status $rc; stopping the other workers" >&2
    if ((${#pids[@]} > 0)); then kill "${pids[@]}" 2>/dev/null || true; fi
    wait || true
    exit "$rc"
  fi
done
