// The job spool: one TOML file per job dropped into a folder. Each holds
// one [[job]] in the format of `hetrain plan --jobs` (docs/scheduling.md)
// and a [run] table with what running it needs:
//   flags      = ["--model", "mlp", ...]  hetrain's training flags (not
//                --policy, --shares, --speeds, --checkpoint, --resume: the
//                controller sets those); %g becomes the submission's number
//   checkpoint = "/shared/ck/job07"       a folder every node sees
//   emulate    = { fast = 1, slow = 0.25 } optional: --speeds per rank from
//                its node's type (emulated heterogeneity)
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hetrain/sched/jobs.h"

namespace hetrain::pool {

struct SpoolJob {
  sched::Job job;
  std::vector<std::string> flags;
  std::string checkpoint;
  std::map<std::string, double> emulate;  // type -> emulated speed in (0, 1]
  std::string file;
};

// One job file; throws DataError naming the file, line and key.
SpoolJob load_spool_job(const std::string& path, const sched::Pool& pool);

// The *.toml files in `dir`, by name.
std::vector<std::string> spool_files(const std::string& dir);

}  // namespace hetrain::pool
