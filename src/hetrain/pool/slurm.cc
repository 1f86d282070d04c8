#include "hetrain/pool/slurm.h"

#include <fmt/format.h>

#include <sstream>

#include "hetrain/common/error.h"
#include "hetrain/pool/command.h"

namespace hetrain::pool {

std::string Slurm::submit(const std::vector<std::string>& sbatch_args, const std::string& script) const {
  std::vector<std::string> argv{"sbatch", "--parsable"};
  argv.insert(argv.end(), sbatch_args.begin(), sbatch_args.end());
  argv.push_back(script);
  const CommandResult r = run_command(argv, timeout_);
  std::string id = r.output.substr(0, r.output.find_first_of(";\n"));
  if (r.exit_code != 0 || id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
    throw Error(fmt::format("sbatch failed (exit code {}): {}", r.exit_code, first_line(r.output)));
  }
  return id;
}

std::vector<QueuedJob> Slurm::queue(const std::string& prefix) const {
  const CommandResult r = run_command({"squeue", "-h", "-o", "%i|%j|%T"}, timeout_);
  if (r.exit_code != 0) throw Error(fmt::format("squeue failed: {}", first_line(r.output)));
  std::vector<QueuedJob> out;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    const auto a = line.find('|'), b = line.rfind('|');
    if (a == std::string::npos || a == b) continue;
    QueuedJob j{line.substr(0, a), line.substr(a + 1, b - a - 1), line.substr(b + 1)};
    if (j.name.rfind(prefix, 0) == 0) out.push_back(std::move(j));
  }
  return out;
}

namespace {

void scancel(const std::vector<std::string>& argv, const std::string& id, double timeout) {
  const CommandResult r = run_command(argv, timeout);
  // A job that ended meanwhile is no error: its exit file tells.
  if (r.exit_code != 0 && r.output.find("Invalid job id") == std::string::npos &&
      r.output.find("already completing") == std::string::npos) {
    throw Error(fmt::format("scancel {} failed: {}", id, first_line(r.output)));
  }
}

}  // namespace

void Slurm::stop(const QueuedJob& job) const {
  if (job.state == "PENDING") return cancel(job);
  scancel({"scancel", "--signal=TERM", job.id}, job.id, timeout_);
}

void Slurm::cancel(const QueuedJob& job) const { scancel({"scancel", job.id}, job.id, timeout_); }

}  // namespace hetrain::pool
