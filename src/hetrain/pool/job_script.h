// What the controller submits for one job on one allocation: the batch
// script and sbatch's flags. The script resumes from the job's checkpoint
// when there is one, builds --shares (the planner's speed of each node's
// type) and --speeds (emulation) from its nodes' features in rank order, and
// writes srun's exit code next to the checkpoint (exit.GENERATION): how the
// controller learns a job's outcome without sacct.
#pragma once

#include <string>
#include <vector>

#include "hetrain/pool/spool.h"
#include "hetrain/sched/pricing.h"

namespace hetrain::pool {

// The Slurm job name of generation `g` of job `name`: the controller finds
// its jobs in squeue by it, so a restarted controller never submits twice.
inline constexpr const char* kJobPrefix = "hp-";
std::string slurm_name(const std::string& job, int generation);

std::string exit_file(const SpoolJob& s, int generation);

// In a job's flags, this becomes the generation: per-submission file names
// (e.g. "--metrics", "/shared/m/job07.%g.json").
inline constexpr const char* kGenerationMark = "%g";

std::string job_script(const SpoolJob& s, const sched::Pool& pool, const std::string& hetrain,
                       int generation);

// -N, one task per node, the job name, the output file and the nodes'
// features: one type "--constraint=fast", several "--constraint=[fast*2&slow*1]".
std::vector<std::string> sbatch_args(const SpoolJob& s, const sched::Pool& pool, const sched::Allocation& x,
                                     int generation, const std::string& log_dir);

}  // namespace hetrain::pool
