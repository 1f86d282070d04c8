#include "hetrain/pool/job_script.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

namespace hetrain::pool {
namespace {

// A bash word in single quotes.
std::string bash_word(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// "fast=3 slow=1" as a bash associative array's body.
std::string by_type(const sched::Pool& pool, const std::vector<double>& value) {
  std::string out;
  for (std::size_t t = 0; t < pool.types.size(); ++t) {
    out += fmt::format("[{}]={} ", bash_word(pool.types[t].name), t < value.size() ? value[t] : 0.0);
  }
  return out;
}

// The script's body after its variables: read each node's type, run, record.
constexpr const char* kBody = R"(resume=()
if [ -f "$ck/checkpoint.pt" ]; then resume=(--resume "$ck"); fi
shares=""; speeds=""
for h in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do
  t=$(scontrol show node "$h" | sed -n 's/.*AvailableFeatures=\([^ ,]*\).*/\1/p')
  shares+="${shares:+,}${share[$t]}"; speeds+="${speeds:+,}${emulate[$t]}"
done
emu=(); if [ "$emulated" = 1 ]; then emu=(--speeds "$speeds"); fi
# Node names may not resolve: rank 0 runs on this node, reached by address.
export MASTER_ADDR=$(hostname -I | cut -d' ' -f1)
set +e
# A stop request that comes while a worker is still starting waits, blocked,
# until hetrain notes signals (train/stop.h) instead of killing it. Without
# coreutils 8.31's --block-signal such a request kills the worker, which the
# controller also takes as the stop (pool/state.h).
block=(); if env --block-signal=TERM true 2>/dev/null; then block=(env --block-signal=TERM,USR1,INT); fi
srun --ntasks-per-node=1 "${block[@]}" "$hetrain" worker "${flags[@]}" \
  --policy static --shares "$shares" "${emu[@]}" --checkpoint "$ck" "${resume[@]}"
rc=$?
echo "$rc" > "$exit_file.tmp" && mv "$exit_file.tmp" "$exit_file"
exit "$rc"
)";

}  // namespace

std::string slurm_name(const std::string& job, int generation) {
  return fmt::format("{}{}-{}", kJobPrefix, job, generation);
}

std::string exit_file(const SpoolJob& s, int generation) {
  return (std::filesystem::path(s.checkpoint) / fmt::format("exit.{}", generation)).string();
}

std::string job_script(const SpoolJob& s, const sched::Pool& pool, const std::string& hetrain,
                       int generation) {
  std::vector<double> emulate;
  for (const auto& t : pool.types) emulate.push_back(s.emulate.count(t.name) ? s.emulate.at(t.name) : 1.0);
  std::string flags;
  for (std::string f : s.flags) {
    for (std::size_t at; (at = f.find(kGenerationMark)) != std::string::npos;)
      f.replace(at, std::string_view(kGenerationMark).size(), std::to_string(generation));
    flags += bash_word(f) + " ";
  }
  return fmt::format(
      "#!/bin/bash\n# hetrain pool: job {}, generation {}\nck={}\nexit_file={}\nhetrain={}\nflags=({})\n"
      "declare -A share=({}) emulate=({})\nemulated={}\n{}",
      s.job.name, generation, bash_word(s.checkpoint), bash_word(exit_file(s, generation)),
      bash_word(hetrain), flags, by_type(pool, s.job.speed), by_type(pool, emulate),
      s.emulate.empty() ? 0 : 1, kBody);
}

std::vector<std::string> sbatch_args(const SpoolJob& s, const sched::Pool& pool, const sched::Allocation& x,
                                     int generation, const std::string& log_dir) {
  std::vector<std::string> parts;
  for (std::size_t t = 0; t < x.size(); ++t) {
    if (x[t] > 0) parts.push_back(fmt::format("{}*{}", pool.types[t].name, x[t]));
  }
  const std::string constraint =
      parts.size() == 1 ? parts[0].substr(0, parts[0].find('*')) : fmt::format("[{}]", fmt::join(parts, "&"));
  return {"-N",
          std::to_string(sched::machines_in(x)),
          "--ntasks-per-node=1",
          "--exclusive",
          "--job-name=" + slurm_name(s.job.name, generation),
          "--output=" +
              (std::filesystem::path(log_dir) / fmt::format("{}.{}.out", s.job.name, generation)).string(),
          "--constraint=" + constraint};
}

}  // namespace hetrain::pool
