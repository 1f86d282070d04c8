// Where a worker stands in the world, read from the launcher's environment:
// torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_*), Open
// MPI's mpirun (OMPI_COMM_WORLD_*) or Slurm's srun (SLURM_PROCID, SLURM_NTASKS).
// With none of them set, the worker is a world of one. Where MASTER_ADDR or
// MASTER_PORT is unset, mpirun (one host) and Slurm supply defaults: see
// world_from_env.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace hetrain::comm {

// torchrun's default rendezvous port, used when MASTER_PORT is unset.
inline constexpr std::uint16_t kDefaultMasterPort = 29500;

// Ports derived from a launcher's job id (mpirun, Slurm) fall in
// [kDerivedPortBase, kDerivedPortBase + kDerivedPortSpan): below Linux's
// ephemeral range (32768-60999), so no outgoing connection holds one.
inline constexpr std::uint16_t kDerivedPortBase = 20000;
inline constexpr std::uint16_t kDerivedPortSpan = 12000;

// The largest world hetrain accepts (the split fingerprint in the trainer
// stays exact in float up to this many ranks).
inline constexpr int kMaxWorkers = 4096;

// `hetrain run` sets this to "hetrain run" in its workers' environment.
inline constexpr const char* kLauncherVariable = "HETRAIN_LAUNCHER";
inline constexpr const char* kRunLauncher = "hetrain run";

struct WorldInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = kDefaultMasterPort;
  std::string source = "none";  // torchrun | mpi | slurm | none
  // Who started the workers, for messages: the source, or "hetrain run",
  // which uses torchrun's variables and says so in kLauncherVariable.
  std::string launcher = "none";
  // torchrun's agent hosts the store (TORCHELASTIC_USE_AGENT_STORE=True):
  // every rank connects as a client and keys under /worker/attempt_N.
  bool agent_store = false;
  // Which attempt of the launcher this is (TORCHELASTIC_RESTART_COUNT; 0 for
  // the first): a restarted group resumes from its checkpoint.
  int restart_count = 0;
  // The launcher's name for this job (TORCHELASTIC_RUN_ID, Open MPI's job
  // id, Slurm's job and step); "" when started by hand. Keys in the store
  // live under it, so a second job that reaches this job's store by mistake
  // never reads its keys: it times out with a clear error instead.
  std::string job_id;
};

// Looks a variable up; std::nullopt when unset. Injected so tests need not
// touch the process environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// The real process environment.
EnvLookup process_env();

// The first host of a Slurm node list ("n[01-03,7],gpu2" -> "n01"), for the
// forms Slurm writes: comma-separated names, each with at most one bracketed
// range list. Throws UsageError for anything else.
std::string first_slurm_host(const std::string& nodelist);

// Throws UsageError on malformed or inconsistent values, and when a
// multi-host mpirun or srun leaves the rendezvous address unknown.
WorldInfo world_from_env(const EnvLookup& env);

}  // namespace hetrain::comm
