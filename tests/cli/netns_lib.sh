# Sourced by the network-namespace tests: three nodes on one bridge.

# cannot_run REASON: a prerequisite is missing (root, ip, namespaces). Under
# CI (CI set and non-empty) that is a failure, so the only multi-node tests
# never stop running unnoticed; elsewhere it is a skip (exit 77, CTest's
# SKIP_RETURN_CODE), printed with the reason.
cannot_run() {
  if [ -n "${CI:-}" ]; then
    echo "FAILED: cannot run under CI (CI=$CI): $*"
    exit 1
  fi
  echo "SKIPPED: $* (under CI, with CI set, this fails)"
  exit 77
}

# netns_nodes BRIDGE_NS TAG SUBNET ERRFILE: namespaces TAGn0..TAGn2 with
# addresses SUBNET.1..3 on veth0, joined by a bridge in namespace BRIDGE_NS.
# Calls cannot_run (namespaces not allowed here) or the caller's fail (any
# other error); the caller's cleanup deletes the namespaces.
netns_nodes() {
  local br=$1 tag=$2 subnet=$3 err=$4 i ns
  ip netns add "$br" 2>"$err" || cannot_run "network namespaces not allowed here: $(head -1 "$err")"
  ip -n "$br" link add br0 type bridge && ip -n "$br" link set br0 up || fail "cannot create the bridge"
  for i in 0 1 2; do
    ns="${tag}n$i"
    ip netns add "$ns" || fail "cannot create namespace $ns"
    ip -n "$ns" link add veth0 type veth peer name "p$i" netns "$br" || fail "cannot create a veth pair"
    ip -n "$br" link set "p$i" master br0 up
    ip -n "$ns" addr add "$subnet.$((i + 1))/24" dev veth0
    ip -n "$ns" link set veth0 up
    ip -n "$ns" link set lo up
  done
}

# netns_prerequisites: root and iproute2, or cannot_run says which is missing.
netns_prerequisites() {
  [ "$(id -u)" = 0 ] || cannot_run "needs root to create network namespaces (running as uid $(id -u))"
  command -v ip >/dev/null || cannot_run "iproute2 (ip) is not installed (scripts/setup.sh --test installs it)"
}
