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

}  // namespace

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
  } else if (w.world_size > 1 && w.source == "slurm") {
    throw UsageError("under srun, set MASTER_ADDR to the first node's address");
  }
  if (auto port = env("MASTER_PORT")) {
    w.master_port = static_cast<std::uint16_t>(parse_int("MASTER_PORT", *port, 1, kMaxPort));
  }
  return w;
}

}  // namespace hetrain::comm
