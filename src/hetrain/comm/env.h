// Where a worker stands in the world, read from the launcher's environment:
// torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), Open MPI's mpirun
// (OMPI_COMM_WORLD_*) or Slurm's srun (SLURM_PROCID, SLURM_NTASKS). With none
// of them set, the worker is a world of one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace hetrain::comm {

// torchrun's default rendezvous port, used when MASTER_PORT is unset.
inline constexpr std::uint16_t kDefaultMasterPort = 29500;

// The largest world hetrain accepts (the split fingerprint in the trainer
// stays exact in float up to this many ranks).
inline constexpr int kMaxWorkers = 4096;

struct WorldInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = kDefaultMasterPort;
  std::string source = "none";  // torchrun | mpi | slurm | none
};

// Looks a variable up; std::nullopt when unset. Injected so tests need not
// touch the process environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// The real process environment.
EnvLookup process_env();

// Throws UsageError on malformed or inconsistent values.
WorldInfo world_from_env(const EnvLookup& env);

}  // namespace hetrain::comm
