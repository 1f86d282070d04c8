#!/usr/bin/env bash
# Starts N local workers of any command with torchrun's variables (RANK,
# WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and
# waits for all of them. Used for both hetrain (`hetrain worker`) and the
# PyTorch DDP peer, so both start the same way. (Debian's torchrun 1.13 fails
# on Python 3.11 while setting up its log redirects.)
#
# Usage: bench/launch_local.sh N PORT COMMAND [ARGS...]
# With CGROUP=/sys/fs/cgroup/cpu/NAME and CGROUP_RANK=r, rank r is moved into
# that cgroup (a CPU quota: real heterogeneity) right after it starts.
set -euo pipefail
n=$1 port=$2
shift 2
pids=()
for ((r = 0; r < n; r++)); do
  RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    OMP_NUM_THREADS=1 "$@" &
  pids+=($!)
  if [[ -n "${CGROUP:-}" && "${CGROUP_RANK:-}" == "$r" ]]; then
    echo $! > "$CGROUP/cgroup.procs"
  fi
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
