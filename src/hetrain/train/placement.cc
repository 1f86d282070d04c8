#include "hetrain/train/placement.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

namespace hetrain::train {
namespace {

// FNV-1a, cut to 52 bits so that it survives a trip through a double.
constexpr std::uint64_t kFnvOffset = 14695981039346656037ULL;
constexpr std::uint64_t kFnvPrime = 1099511628211ULL;
constexpr std::uint64_t kExactInDouble = (std::uint64_t{1} << 52) - 1;
constexpr std::size_t kHostNameBytes = 256;
constexpr std::size_t kFieldsPerWorker = 4;

double hash52(std::string_view name) {
  std::uint64_t h = kFnvOffset;
  for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * kFnvPrime;
  return static_cast<double>(h & kExactInDouble);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return in ? s.str() : std::string();
}

// The first number of `text`, if it parses as one and is positive.
double positive_number(const std::string& text) {
  std::istringstream in(text);
  double x = 0.0;
  return (in >> x) && x > 0.0 ? x : 0.0;
}

double v1_quota(const std::string& dir) {
  const double quota = positive_number(read_file(dir + "/cpu.cfs_quota_us"));  // -1: none
  const double period = positive_number(read_file(dir + "/cpu.cfs_period_us"));
  return quota > 0.0 && period > 0.0 ? quota / period : 0.0;
}

double v2_quota(const std::string& dir) {
  std::istringstream in(read_file(dir + "/cpu.max"));  // "max 100000" or "25000 100000"
  std::string quota;
  double period = 0.0;
  if (!(in >> quota >> period) || quota == "max" || !(period > 0.0)) return 0.0;
  return positive_number(quota) / period;
}

// "/a/b" -> {"/a/b", "/a", "/"}: a cgroup and its ancestors up to the hierarchy's root.
std::vector<std::string> self_and_ancestors(std::string path) {
  std::vector<std::string> out;
  while (!path.empty() && path != "/") {
    out.push_back(path);
    const auto slash = path.find_last_of('/');
    path = slash == std::string::npos ? std::string() : path.substr(0, slash);
  }
  out.emplace_back("/");
  return out;
}

}  // namespace

double cgroup_cpu_quota(const std::string& proc_self_cgroup, const std::string& cgroup_root) {
  std::istringstream lines(proc_self_cgroup);
  double best = 0.0;
  auto take = [&](double q) { best = q > 0.0 && (best == 0.0 || q < best) ? q : best; };
  for (std::string line; std::getline(lines, line);) {
    // "ID:CONTROLLERS:PATH"; v1 names its controllers, v2's line is "0::PATH".
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    // Every level binds (the kernel throttles a cgroup at its own quota and at each ancestor's): a quota
    // set on a parent (a container's, a slice's) limits a process in a child without one of its own.
    for (const std::string& path : self_and_ancestors(line.substr(b + 1))) {
      if (controllers.empty()) {
        for (const char* mount : {"", "/unified"})
          take(v2_quota(std::string(cgroup_root).append(mount).append(path)));
        continue;
      }
      std::istringstream names(controllers);
      for (std::string c; std::getline(names, c, ',');) {
        if (c != "cpu") continue;
        for (const char* mount : {"/cpu", "/cpu,cpuacct"})
          take(v1_quota(std::string(cgroup_root).append(mount).append(path)));
      }
    }
  }
  return best;
}

double kind_id(std::string_view kind) { return kind.empty() ? 0.0 : std::max(1.0, hash52(kind)); }

WorkerPlace this_worker(int threads, std::string_view kind) {
  std::array<char, kHostNameBytes> name{};
  gethostname(name.data(), name.size() - 1);
  WorkerPlace w;
  w.host_id = hash52(name.data());
  w.kind_id = kind_id(kind);
  w.host_cores = std::max(1.0, static_cast<double>(std::thread::hardware_concurrency()));
  w.cpus = std::min(w.host_cores, static_cast<double>(std::max(threads, 1)));
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) w.cpus = std::min(w.cpus, 1.0 * CPU_COUNT(&mask));
  if (const double quota = cgroup_cpu_quota(read_file("/proc/self/cgroup")); quota > 0.0) {
    w.cpus = std::min(w.cpus, quota);
  }
  return w;
}

alloc::Placement placement_of(std::span<const WorkerPlace> workers) {
  alloc::Placement p;
  std::vector<double> kind_ids;
  for (const WorkerPlace& w : workers) kind_ids.push_back(w.kind_id);
  p.kind = alloc::number_kinds(kind_ids, 0.0);
  std::vector<double> ids;  // host ids in order of first appearance
  for (const WorkerPlace& w : workers) {
    auto it = std::find(ids.begin(), ids.end(), w.host_id);
    if (it == ids.end()) {
      ids.push_back(w.host_id);
      p.host_cores.push_back(w.host_cores);
      it = ids.end() - 1;
    }
    const auto h = static_cast<std::size_t>(it - ids.begin());
    p.host_cores[h] = std::max(p.host_cores[h], w.host_cores);
    p.host.push_back(h);
    p.cpus.push_back(w.cpus);
  }
  return p;
}

alloc::Placement discover_placement(comm::Group& group, int threads, std::string_view kind) {
  const WorkerPlace me = this_worker(threads, kind);
  const std::array<double, kFieldsPerWorker> mine{me.host_id, me.cpus, me.host_cores, me.kind_id};
  const std::vector<double> all = group.allgather(std::span<const double>(mine));
  std::vector<WorkerPlace> workers;
  for (std::size_t i = 0; i + kFieldsPerWorker <= all.size(); i += kFieldsPerWorker) {
    workers.push_back({all[i], all[i + 1], all[i + 2], all[i + 3]});
  }
  return placement_of(workers);
}

}  // namespace hetrain::train
