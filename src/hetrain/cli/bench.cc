#include "hetrain/cli/bench.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <limits>
#include <thread>

#include "hetrain/cli/launcher.h"
#include "hetrain/comm/allreduce.h"
#include "hetrain/comm/gloo/gloo_group.h"
#include "hetrain/common/error.h"

namespace hetrain::cli {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kReferenceBytes = std::size_t{256} << 20;  // per reference measurement
constexpr int kReferenceRepeats = 3;
constexpr double kGiga = 1e9;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// memcpy bandwidth of one core, GB/s.
double memcpy_gbps() {
  std::vector<char> a(kReferenceBytes, 1), b(kReferenceBytes, 0);
  std::vector<double> t;
  for (int i = 0; i < kReferenceRepeats; ++i) {
    const auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), a.size());
    t.push_back(seconds_since(t0));
  }
  return static_cast<double>(kReferenceBytes) / median(t) / kGiga;
}

// One TCP stream over loopback, GB/s: a thread writes, this one reads.
double loopback_tcp_gbps() {
  const int server = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (server < 0 || ::bind(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(server, 1) != 0 || ::getsockname(server, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (server >= 0) ::close(server);
    throw CommError("cannot open a loopback socket for the TCP reference");
  }
  std::thread writer([addr] {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
      std::vector<char> chunk(1 << 20, 7);
      for (std::size_t sent = 0; sent < kReferenceBytes;) {
        const ssize_t w = ::send(fd, chunk.data(), chunk.size(), 0);
        if (w <= 0) break;
        sent += static_cast<std::size_t>(w);
      }
    }
    ::close(fd);
  });
  const int conn = ::accept(server, nullptr, nullptr);
  std::vector<char> sink(1 << 20);
  std::size_t got = 0;
  const auto t0 = Clock::now();
  while (conn >= 0) {
    const ssize_t r = ::recv(conn, sink.data(), sink.size(), 0);
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  const double secs = seconds_since(t0);
  writer.join();
  if (conn >= 0) ::close(conn);
  ::close(server);
  return static_cast<double>(got) / secs / kGiga;
}

// Lines the ranks up before a timed call: a ring allreduce of one float per
// rank, so no rank leaves before every rank has entered. A peer that dies
// here is then named in the error, as inside the ring itself; c10d's
// barrier names only an address.
void align(comm::Group& group) {
  std::vector<float> token(static_cast<std::size_t>(group.size()), 0.0f);
  comm::allreduce(group, {std::span<float>(token), comm::Algorithm::kRing});
}

}  // namespace

std::size_t parse_bytes(const std::string& text) {
  // std::stoull would take "-1" (as 2^64 - 1) and leading blanks: digits first.
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text.front())) == 0) {
    throw UsageError(fmt::format("size '{}' is not a number of bytes (e.g. 64K, 1M, 256M)", text));
  }
  std::size_t value = 0, pos = 0;
  try {
    value = std::stoull(text, &pos);
  } catch (const std::exception&) {
    throw UsageError(fmt::format("size '{}' is not a number of bytes (e.g. 64K, 1M, 256M)", text));
  }
  const std::string unit = text.substr(pos);
  std::size_t shift = 0;
  if (unit == "K" || unit == "k")
    shift = 10;
  else if (unit == "M" || unit == "m")
    shift = 20;
  else if (unit == "G" || unit == "g")
    shift = 30;
  else if (!unit.empty())
    throw UsageError(fmt::format("size '{}' has an unknown unit (use K, M or G)", text));
  if (value > (std::numeric_limits<std::size_t>::max() >> shift)) {
    throw UsageError(fmt::format("size '{}' is too large", text));
  }
  return value << shift;
}

std::vector<std::size_t> check_bench_options(const BenchOptions& o, int nproc, std::size_t memory_bytes) {
  if (o.iterations < 1) throw UsageError("--iters must be >= 1");
  for (const auto& a : o.algorithms) comm::parse_algorithm(a);
  std::vector<std::size_t> sizes;
  for (const auto& text : o.sizes) {
    const std::size_t bytes = parse_bytes(text);
    if (bytes % sizeof(float) != 0) {
      throw UsageError(fmt::format(
          "size '{}' is not a whole number of float32 values (a multiple of {} bytes)", text, sizeof(float)));
    }
    // Every process holds one buffer of the size at a time.
    if (bytes > memory_bytes / static_cast<std::size_t>(std::max(nproc, 1))) {
      throw UsageError(
          fmt::format("size '{}' on {} processes needs more than this machine's {:.1f} GiB of memory", text,
                      nproc, static_cast<double>(memory_bytes) / kGiB));
    }
    sizes.push_back(bytes);
  }
  return sizes;
}

std::size_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return std::numeric_limits<std::size_t>::max();  // unknown: no cap
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
}

int bench_allreduce_worker(const BenchOptions& o, const comm::WorldInfo& world) {
  const std::vector<std::size_t> sizes = check_bench_options(o, world.world_size, physical_memory_bytes());
  std::vector<comm::Algorithm> algos;
  for (const auto& a : o.algorithms) algos.push_back(comm::parse_algorithm(a));
  const auto timeout = std::chrono::milliseconds(static_cast<long long>(o.timeout_seconds * 1000.0));
  comm::Group group = comm::connect_gloo(world, timeout);
  const int n = group.size();
  const bool talk = group.rank() == 0;
  if (talk) {
    fmt::print("# hetrain bench allreduce: {} processes, float32 sum, median of {} iterations\n", n,
               o.iterations);
    fmt::print("# reference: memcpy {:.2f} GB/s, one loopback TCP stream {:.2f} GB/s\n", memcpy_gbps(),
               loopback_tcp_gbps());
    fmt::print("#{:>6} {:>12} {:>12} {:>10} {:>10} {:>10}\n", "algo", "size(B)", "count", "time(us)", "algbw",
               "busbw");
    std::fflush(stdout);
  }
  // Per size, the algorithms take turns iteration by iteration, so a change
  // in the machine's load hits them alike (this machine is shared), and the
  // turn order rotates with the iteration, so none always follows the same
  // one. Each size's rows are printed as soon as it is done.
  for (std::size_t bytes_asked : sizes) {
    std::vector<float> data(bytes_asked / sizeof(float), 1.0f);
    const std::size_t bytes = data.size() * sizeof(float);
    std::vector<std::vector<double>> times(algos.size());
    for (int i = 0; i <= o.iterations; ++i) {
      for (std::size_t turn = 0; turn < algos.size(); ++turn) {
        const std::size_t a = (turn + static_cast<std::size_t>(i)) % algos.size();
        align(group);
        const auto t0 = Clock::now();
        comm::allreduce(group, {std::span<float>(data), algos[a]});
        if (i > 0) times[a].push_back(seconds_since(t0));  // the first round is a warm-up
      }
    }
    for (std::size_t a = 0; a < algos.size(); ++a) {
      // The slowest rank defines the collective's time.
      std::vector<double> worst(times[a].size());
      for (std::size_t i = 0; i < times[a].size(); ++i) {
        const std::vector<double> all = group.allgather(std::span<const double>(&times[a][i], 1));
        worst[i] = *std::max_element(all.begin(), all.end());
      }
      const double t = median(worst);
      const double algbw = t > 0 ? static_cast<double>(bytes) / t / kGiga : 0.0;
      const double busbw = algbw * 2.0 * (n - 1) / n;
      if (talk) {
        fmt::print("{:>7} {:>12} {:>12} {:>10.1f} {:>10.3f} {:>10.3f}\n", comm::algorithm_name(algos[a]),
                   bytes, data.size(), t * 1e6, algbw, busbw);
      }
    }
    if (talk) std::fflush(stdout);
  }
  return 0;
}

void add_bench_command(CLI::App& app, BenchCommand& out) {
  auto* bench = app.add_subcommand("bench", "Measure the communication layer");
  bench->require_subcommand(1);
  auto* a = bench->add_subcommand(
      "allreduce",
      "Time each allreduce algorithm over message sizes on N local processes (nccl-tests layout)");
  a->add_option("-n,--nproc", out.nproc, "Processes")->check(CLI::Range(1, comm::kMaxWorkers));
  a->add_option("--algo", out.options.algorithms, "Algorithms: gloo,ring,halving-doubling,auto")
      ->delimiter(',');
  a->add_option("--sizes", out.options.sizes, "Message sizes in bytes (K, M, G suffixes)")->delimiter(',');
  a->add_option("--iters", out.options.iterations, "Timed iterations per size")->capture_default_str();
  a->add_option("--timeout", out.options.timeout_seconds, "Seconds any collective may take");
  a->add_flag("--as-worker", out.as_worker, "(internal: one process of the benchmark)")->group("");
  out.allreduce_app = a;
}

std::optional<int> run_bench_command(const BenchCommand& c, int argc, char** argv) {
  if (c.allreduce_app == nullptr || !c.allreduce_app->parsed()) return std::nullopt;
  // A worker checks against its world's size; the launcher before starting any process.
  if (c.as_worker) return bench_allreduce_worker(c.options, comm::world_from_env(comm::process_env()));
  check_bench_options(c.options, c.nproc, physical_memory_bytes());
  LaunchPlan plan;
  plan.nproc = c.nproc;
  for (int i = 1; i < argc; ++i) plan.worker_args.emplace_back(argv[i]);
  plan.worker_args.emplace_back("--as-worker");
  return launch(plan);
}

}  // namespace hetrain::cli
