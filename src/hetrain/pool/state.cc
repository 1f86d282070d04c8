#include "hetrain/pool/state.h"

#include <fmt/format.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hetrain/common/error.h"
#include "hetrain/common/file_io.h"

namespace hetrain::pool {
namespace {

constexpr std::array<const char*, 6> kNames = {"waiting",  "submitting", "running",
                                               "stopping", "done",       "failed"};

Status parse_status(const std::string& name, const std::string& path) {
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (name == kNames[i]) return static_cast<Status>(i);
  throw DataError(fmt::format("{}: unknown job status '{}'", path, name));
}

}  // namespace

std::string status_name(Status s) { return kNames.at(static_cast<std::size_t>(s)); }

Status after_exit(int exit_code, bool stopping) {
  // srun's exit code for a task killed by signal N (as a shell reports it).
  constexpr int kKilledBySignal = 128;
  if (exit_code == 0) return Status::kDone;
  if (exit_code < 0 || exit_code == static_cast<int>(ExitCode::kStopped)) return Status::kWaiting;
  const bool caused_by_stop = exit_code == static_cast<int>(ExitCode::kComm) ||
                              exit_code == static_cast<int>(ExitCode::kWorker) || exit_code > kKilledBySignal;
  return stopping && caused_by_stop ? Status::kWaiting : Status::kFailed;
}

PoolState load_state(const std::string& path) {
  PoolState s;
  if (!std::filesystem::exists(path)) return s;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  try {
    const auto doc = nlohmann::json::parse(text.str());
    s.clock_origin = doc.at("clock_origin").get<double>();
    for (const auto& [name, j] : doc.at("jobs").items()) {
      JobState js;
      js.status = parse_status(j.at("status").get<std::string>(), path);
      js.generation = j.at("generation").get<int>();
      js.slurm_id = j.at("slurm_id").get<std::string>();
      js.allocation = j.at("allocation").get<sched::Allocation>();
      js.started = j.at("started").get<bool>();
      js.arrived = j.at("arrived").get<double>();
      js.ended = j.at("ended").get<double>();
      js.exit_code = j.at("exit_code").get<int>();
      s.jobs[name] = js;
    }
  } catch (const nlohmann::json::exception& e) {
    throw DataError(fmt::format("{}: not a hetrain pool state: {}", path, e.what()));
  }
  return s;
}

void save_state(const std::string& path, const PoolState& s) {
  nlohmann::json doc;
  doc["clock_origin"] = s.clock_origin;
  doc["jobs"] = nlohmann::json::object();
  for (const auto& [name, j] : s.jobs) {
    doc["jobs"][name] = {{"status", status_name(j.status)},
                         {"generation", j.generation},
                         {"slurm_id", j.slurm_id},
                         {"allocation", j.allocation},
                         {"started", j.started},
                         {"arrived", j.arrived},
                         {"ended", j.ended},
                         {"exit_code", j.exit_code}};
  }
  write_file_atomic(path, doc.dump(1) + "\n");
}

}  // namespace hetrain::pool
