#!/usr/bin/env bash
# Several machines, for real: three network namespaces (three network stacks,
# each with its own address) joined by veth pairs to a bridge in a fourth,
# one `hetrain worker` in each, MASTER_ADDR on the first.
#  1. the three train to completion over the veth links;
#  2. a second run: the worker of the third namespace is killed mid-training,
#     and the other two must fail cleanly (non-zero, one line) within the
#     timeout plus a few seconds.
# Needs root, iproute2 and network namespaces. Where one is missing it says
# why and exits 77 (CTest: skipped), or fails under CI (CI set): netns_lib.sh.
set -u
HETRAIN=${1:?usage: netns_test.sh PATH/TO/hetrain}
TIMEOUT=10        # the workers' --timeout, seconds
GRACE=5           # they must exit within TIMEOUT + GRACE after the kill
SUBNET=10.77.0    # addresses exist only inside the namespaces created here
TAG="ht$$"
BR="${TAG}br"
WORK=$(mktemp -d)
PIDS=()

cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  for i in 0 1 2; do ip netns del "${TAG}n$i" 2>/dev/null; done
  ip netns del "$BR" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

. "$(dirname "$0")/netns_lib.sh"
fail() { echo "FAILED: $*"; for f in "$WORK"/*.err; do echo "--- $f"; cat "$f"; done; exit 1; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }  # integer milliseconds: no bc

netns_prerequisites
netns_nodes "$BR" "$TAG" "$SUBNET" "$WORK/netns.err"
# Reachable: a connection to a closed port is refused (not timed out).
probe=$(ip netns exec "${TAG}n2" timeout 5 bash -c "exec 3<>/dev/tcp/$SUBNET.1/9" 2>&1)
echo "$probe" | grep -q refused || fail "namespace 2 cannot reach namespace 0: $probe"

# start RUN_NAME EXTRA_FLAGS...: one worker per namespace, in the background.
start() {
  local name=$1; shift
  PIDS=()
  for i in 0 1 2; do
    ip netns exec "${TAG}n$i" env RANK=$i LOCAL_RANK=0 WORLD_SIZE=3 LOCAL_WORLD_SIZE=1 \
      MASTER_ADDR="$SUBNET.1" MASTER_PORT=29400 GLOO_SOCKET_IFNAME=veth0 \
      "$HETRAIN" worker --model mlp --data synthetic --synthetic-train 3000 --synthetic-test 300 --threads 1 \
      -b 96 --policy adaptive --timeout "$TIMEOUT" "$@" >"$WORK/$name$i.out" 2>"$WORK/$name$i.err" &
    PIDS+=($!)
  done
}

# 1. Train to completion.
start done --epochs 1
for i in 0 1 2; do wait "${PIDS[$i]}" || fail "worker $i of the complete run failed"; done
grep -q "done:" "$WORK/done0.out" || fail "rank 0 did not report the end of training"
echo "ok: three namespaces trained to completion: $(grep 'done:' "$WORK/done0.out")"

# 2. Kill the third namespace's worker mid-training.
start killed --epochs 20 --sample-cost-ms 2
for _ in $(seq 600); do grep -q "epoch 1/" "$WORK/killed0.out" 2>/dev/null && break; sleep 0.1; done
grep -q "epoch 1/" "$WORK/killed0.out" || fail "the second run did not get through its first epoch"
kill -9 "${PIDS[2]}"
killed_at=$(now_ms)
deadline=$((killed_at + (TIMEOUT + GRACE) * 1000))
for i in 0 1; do
  while kill -0 "${PIDS[$i]}" 2>/dev/null; do
    [ "$(now_ms)" -le "$deadline" ] || fail "worker $i still running $((TIMEOUT + GRACE)) s after its peer died"
    sleep 0.1
  done
  wait "${PIDS[$i]}"; code=$?
  elapsed=$(($(now_ms) - killed_at))
  [ "$elapsed" -le $(((TIMEOUT + GRACE) * 1000)) ] || fail "worker $i exited $elapsed ms after its peer died"
  [ "$code" != 0 ] || fail "worker $i exited 0 after its peer died"
  [ "$(wc -l <"$WORK/killed$i.err")" = 1 ] || fail "worker $i did not print exactly one error line"
  echo "ok: worker $i exited $code after $((elapsed / 1000)).$((elapsed % 1000 / 100)) s: $(cat "$WORK/killed$i.err")"
done
