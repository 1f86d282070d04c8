// Which workers share a host's cores, learned once at the start of a run so
// that the adaptive policy can plan the hosts' CPUs (alloc/hosts.h): every
// rank gathers each rank's host, the CPUs it may use at once, and the CPUs
// of its host.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hetrain/alloc/policy.h"
#include "hetrain/comm/group.h"

namespace hetrain::train {

// What one worker says of itself (four numbers per rank in the gather).
struct WorkerPlace {
  double host_id = 0.0;     // a 52-bit hash of the host's name: exact in a double
  double cpus = 1.0;        // min(compute threads, CPU quota, CPUs in its affinity mask)
  double host_cores = 1.0;  // CPUs online on its host
  double kind_id = 0.0;     // a 52-bit hash of its kind (--kind, a device's model); 0: not said
};

// The kind's id in a WorkerPlace: 0 for "" (not said).
double kind_id(std::string_view kind);

// The CPU quota of the cgroup named in `proc_self_cgroup` (the text of
// /proc/self/cgroup), read under `cgroup_root`: v1's cpu.cfs_quota_us /
// cpu.cfs_period_us, or v2's cpu.max; the tightest of the cgroup's and its
// ancestors' (each level binds). 0 when there is none or it cannot be read.
double cgroup_cpu_quota(const std::string& proc_self_cgroup,
                        const std::string& cgroup_root = "/sys/fs/cgroup");

// This process, computing with `threads` threads, of `kind` ("": not said).
WorkerPlace this_worker(int threads, std::string_view kind = "");

// The placement from every rank's WorkerPlace, gathered in rank order.
alloc::Placement placement_of(std::span<const WorkerPlace> workers);

// Gathers every rank's WorkerPlace (one small allreduce): a collective.
alloc::Placement discover_placement(comm::Group& group, int threads, std::string_view kind = "");

}  // namespace hetrain::train
