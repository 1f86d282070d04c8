#!/usr/bin/env bash
# Starts N local PyTorch DDP workers with torchrun's variables (Debian's
# torchrun 1.13 fails on Python 3.11 in its log-redirect set-up, so this
# sets RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT itself).
# Usage: bench/launch_ddp.sh N PORT [ddp_peer.py args...]
# With HETRAIN_CGROUP_RANK=r and HETRAIN_CGROUP=/sys/fs/cgroup/cpu/NAME,
# rank r is moved into that cgroup (a CPU quota) right after it starts.
set -euo pipefail
n=$1 port=$2
shift 2
pids=()
for ((r = 0; r < n; r++)); do
  RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    OMP_NUM_THREADS=1 /usr/bin/python3 "$(dirname "$0")/ddp_peer.py" "$@" &
  pids+=($!)
  if [[ -n "${HETRAIN_CGROUP:-}" && "${HETRAIN_CGROUP_RANK:-}" == "$r" ]]; then
    echo $! > "$HETRAIN_CGROUP/cgroup.procs"
  fi
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
