# Sourced by the network-namespace tests: three nodes on one bridge.
# netns_nodes BRIDGE_NS TAG SUBNET ERRFILE: namespaces TAGn0..TAGn2 with
# addresses SUBNET.1..3 on veth0, joined by a bridge in namespace BRIDGE_NS.
# Calls the caller's skip (namespaces not allowed here) or fail (any other
# error); the caller's cleanup deletes the namespaces.
netns_nodes() {
  local br=$1 tag=$2 subnet=$3 err=$4 i ns
  ip netns add "$br" 2>"$err" || skip "network namespaces not allowed here: $(head -1 "$err")"
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
