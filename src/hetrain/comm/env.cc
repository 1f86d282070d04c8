#include "hetrain/comm/env.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>

#include "hetrain/common/error.h"

namespace hetrain::comm {
namespace {

long parse_int(const std::string& name, const std::string& value, long lo, long hi) {
  long out = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, out);
  if (ec != std::errc() || ptr != end || out < lo || out > hi) {
    throw UsageError(
        fmt::format("environment variable {}='{}' is not an integer in [{}, {}]", name, value, lo, hi));
  }
  return out;
}

// Which variables each launcher sets.
struct Convention {
  const char* source;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};
constexpr Convention kConventions[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"mpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
};
constexpr long kMaxWorld = kMaxWorkers;
constexpr long kMaxPort = 65535;
constexpr long kMaxRestarts = 1'000'000;

// FNV-1a: a job id (a number or Open MPI's namespace string) to a port.
std::uint16_t derived_port(const std::string& job_id) {
  constexpr std::uint64_t kFnvOffset = 14695981039346656037ULL;
  constexpr std::uint64_t kFnvPrime = 1099511628211ULL;
  std::uint64_t h = kFnvOffset;
  for (const char c : job_id) h = (h ^ static_cast<unsigned char>(c)) * kFnvPrime;
  return static_cast<std::uint16_t>(kDerivedPortBase + h % kDerivedPortSpan);
}

// torchrun's elastic agent: who hosts the store, and which attempt this is.
void read_torchelastic(const EnvLookup& env, WorldInfo& w) {
  w.agent_store = env("TORCHELASTIC_USE_AGENT_STORE") == std::optional<std::string>("True");
  w.job_id = env("TORCHELASTIC_RUN_ID").value_or("");
  if (auto count = env("TORCHELASTIC_RESTART_COUNT")) {
    w.restart_count = static_cast<int>(parse_int("TORCHELASTIC_RESTART_COUNT", *count, 0, kMaxRestarts));
  }
}

// mpirun and srun say nothing of a rendezvous address; derive one where
// that is safe: one host for mpirun, the job's first node for Slurm. Both
// take the port from the job id, so two jobs on one host do not collide.
void default_master(const EnvLookup& env, WorldInfo& w) {
  const bool has_addr = env("MASTER_ADDR").has_value(), has_port = env("MASTER_PORT").has_value();
  if (w.source == "mpi") {
    const auto job = env("OMPI_MCA_ess_base_jobid").value_or(env("PMIX_NAMESPACE").value_or(""));
    w.job_id = job;
    if (!has_port && !job.empty()) w.master_port = derived_port(job);
    if (!has_addr && w.local_world_size < w.world_size) {
      throw UsageError(
          "mpirun across several hosts: set MASTER_ADDR to rank 0's host and MASTER_PORT to a free port "
          "(mpirun -x MASTER_ADDR=HOST -x MASTER_PORT=PORT ...)");
    }
  } else if (w.source == "slurm") {
    const auto job = env("SLURM_JOB_ID").value_or(env("SLURM_JOBID").value_or(""));
    if (!job.empty()) w.job_id = job + "." + env("SLURM_STEP_ID").value_or("");
    if (!has_port && !job.empty()) w.master_port = derived_port(w.job_id);
    const auto nodes = env("SLURM_JOB_NODELIST").value_or(env("SLURM_NODELIST").value_or(""));
    if (!has_addr && !nodes.empty()) {
      w.master_addr = first_slurm_host(nodes);
    } else if (!has_addr && w.world_size > 1) {
      throw UsageError("under srun without SLURM_JOB_NODELIST, set MASTER_ADDR to the first node's address");
    }
  }
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  const auto bad = [&] {
    return UsageError(fmt::format("SLURM_JOB_NODELIST='{}' is not a node list hetrain understands (set "
                                  "MASTER_ADDR to the first node's address)",
                                  nodelist));
  };
  const std::size_t open = nodelist.find('['), comma = nodelist.find(',');
  if (open == std::string::npos || (comma != std::string::npos && comma < open)) {
    std::string host = nodelist.substr(0, comma);
    if (host.empty()) throw bad();
    return host;
  }
  // "prefix[a-b,c]suffix": the prefix and the first number, zero-padded as written.
  const std::size_t close = nodelist.find(']', open);
  const std::size_t first_end = nodelist.find_first_of("-,]", open + 1);
  if (open == 0 || close == std::string::npos || first_end == open + 1 ||
      nodelist.find_first_not_of("0123456789", open + 1) != first_end) {
    throw bad();
  }
  const std::string suffix = nodelist.substr(close + 1, nodelist.find(',', close) - close - 1);
  return nodelist.substr(0, open) + nodelist.substr(open + 1, first_end - open - 1) + suffix;
}

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe): read-only
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

WorldInfo world_from_env(const EnvLookup& env) {
  WorldInfo w;
  for (const Convention& c : kConventions) {
    auto rank = env(c.rank);
    auto size = env(c.size);
    if (!rank && !size) continue;
    if (!rank || !size) {
      throw UsageError(
          fmt::format("{} is set but {} is not", rank ? c.rank : c.size, rank ? c.size : c.rank));
    }
    w.source = c.source;
    w.world_size = static_cast<int>(parse_int(c.size, *size, 1, kMaxWorld));
    w.rank = static_cast<int>(parse_int(c.rank, *rank, 0, w.world_size - 1));
    if (auto lr = env(c.local_rank))
      w.local_rank = static_cast<int>(parse_int(c.local_rank, *lr, 0, kMaxWorld));
    // Slurm writes e.g. "4(x2)" here; only a plain number is taken.
    if (auto ls = env(c.local_size); ls && ls->find_first_not_of("0123456789") == std::string::npos) {
      w.local_world_size = static_cast<int>(parse_int(c.local_size, *ls, 1, kMaxWorld));
    } else {
      w.local_world_size = c.source == std::string("torchrun") ? w.world_size : 1;
    }
    break;
  }
  if (auto addr = env("MASTER_ADDR")) {
    if (addr->empty()) throw UsageError("environment variable MASTER_ADDR is empty");
    w.master_addr = *addr;
  }
  if (auto port = env("MASTER_PORT")) {
    w.master_port = static_cast<std::uint16_t>(parse_int("MASTER_PORT", *port, 1, kMaxPort));
  }
  default_master(env, w);
  if (w.source == "torchrun") read_torchelastic(env, w);
  w.launcher = w.source == "torchrun" && env(kLauncherVariable) == std::optional<std::string>(kRunLauncher)
                   ? kRunLauncher
                   : w.source;
  return w;
}

}  // namespace hetrain::comm
