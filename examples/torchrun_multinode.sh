#!/bin/bash
# hetrain on several machines with torchrun (Debian's python3-torch 1.13),
# static rendezvous: run this on every node, the same NNODES and MASTER_ADDR
# (node 0's address, reachable from all), each node its own NODE_RANK.
#   node0$ NODE_RANK=0 MASTER_ADDR=10.0.0.1 examples/torchrun_multinode.sh 2 4 --model cnn --epochs 3
#   node1$ NODE_RANK=1 MASTER_ADDR=10.0.0.1 examples/torchrun_multinode.sh 2 4 --model cnn --epochs 3
# Arguments: NNODES NPROC_PER_NODE, then hetrain's training flags. torchrun's
# agent on node 0 hosts the store at MASTER_ADDR:MASTER_PORT; add
# --checkpoint DIR (shared by all nodes) and set MAX_RESTARTS to resume after
# a failure. Pin Gloo to an interface with GLOO_SOCKET_IFNAME where a node
# has several.
set -euo pipefail
usage="usage: NODE_RANK=R MASTER_ADDR=HOST $0 NNODES NPROC_PER_NODE [hetrain flags]"
NNODES=${1:?$usage}
NPROC=${2:?$usage}
shift 2
: "${NODE_RANK:?set NODE_RANK: 0 on the node that hosts the store}"
: "${MASTER_ADDR:?set MASTER_ADDR to the address of node 0}"
HETRAIN=${HETRAIN:-build/hetrain}
# Debian's torchrun 1.13 on Python 3.11 crashes before starting anything
# without --redirects/--tee.
exec /usr/bin/python3 -m torch.distributed.run --nnodes "$NNODES" --node_rank "$NODE_RANK" \
  --nproc_per_node "$NPROC" --master_addr "$MASTER_ADDR" --master_port "${MASTER_PORT:-29500}" \
  --max_restarts "${MAX_RESTARTS:-0}" --redirects 1 --tee 1 --log_dir "${TORCHRUN_LOG_DIR:-torchrun_logs}" \
  --no_python "$HETRAIN" worker "$@"
